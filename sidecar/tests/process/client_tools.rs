//! Client-owned tools through the real binary and the CLI double, on the prompt protocol: the
//! double, as the model, answers with a `[TOOL_CALLS: …]` block (docs/client-tools.md); the
//! client sees a `toolCall` delta and `stopReason: "toolCalls"`, never the block; the results
//! continue the same Cursor chat; Cursor works in a private folder that denies its own tools.

use serde_json::{json, Value};

use crate::support::*;

fn create_file_tool() -> Value {
    json!({"name": "create_file", "description": "Create a file with the given content",
        "inputSchema": {"type": "object", "properties": {"filePath": {"type": "string"}, "content": {"type": "string"}},
            "required": ["filePath", "content"]}})
}

fn tools_turn(turn: &str, messages: Value) -> Value {
    json!({"turnId": turn, "model": "auto", "mode": "agent", "conversationId": "conv-tools",
        "messages": messages, "tools": [create_file_tool()]})
}

/// Where the agent worked: print mode's `--workspace`, ACP's session folder.
fn workspace_of(record: &Value) -> String {
    if acp() {
        return record["cwd"].as_str().unwrap_or_default().to_string();
    }
    let argv: Vec<String> = serde_json::from_value(record["argv"].clone()).unwrap();
    argv.windows(2).find(|w| w[0] == "--workspace").map(|w| w[1].clone()).unwrap_or_default()
}

#[test]
fn a_tool_round_trip_runs_the_clients_tool_and_continues_the_same_chat() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    let init = s.initialize(&dir, json!({}));
    assert_eq!(init["result"]["capabilities"]["clientTools"], 1, "{init}");
    assert!(init["result"]["capabilities"]["deltaKinds"].as_array().unwrap().contains(&json!("toolCall")));

    let target = dir.workspace().join("hello.txt");
    let block = format!(
        "Creating it. [TOOL_CALLS: [{{\"name\": \"create_file\", \"arguments\": {{\"filePath\": {}, \"content\": \"hi\"}}}}]]",
        json!(target.to_str().unwrap())
    );
    let prompt = directed("create hello.txt saying hi", json!({"answer": block, "chunkChars": 5}));
    let (deltas, r) = s.chat(tools_turn("t1", json!([user(&prompt)])));
    assert_eq!(r["result"]["stopReason"], "toolCalls", "{r}");
    assert_eq!(text_of(&deltas), "Creating it. ", "the block never reaches the client");
    let calls: Vec<&Value> = deltas.iter().filter(|d| d["kind"] == "toolCall").collect();
    assert_eq!(calls.len(), 1, "{deltas:?}");
    assert_eq!(calls[0]["name"], "create_file");
    assert_eq!(calls[0]["input"], json!({"filePath": target.to_str().unwrap(), "content": "hi"}));
    let call_id = calls[0]["callId"].as_str().unwrap().to_string();
    assert!(call_id.starts_with("call_"), "{call_id}");
    assert!(!target.exists(), "only the client's tool writes the user's files");

    // What the agent was given: the tools, in ask mode, in a private folder denying its own tools.
    let first = &dir.turn_records()[0];
    let prompt_sent = first["stdin"].as_str().or(first["prompt"].as_str()).unwrap_or_default();
    assert!(prompt_sent.starts_with("<client_tools>"), "{prompt_sent}");
    let folder = workspace_of(first);
    assert_ne!(folder, dir.workspace().to_str().unwrap(), "not the user's folder");
    let permissions = std::fs::read_to_string(std::path::Path::new(&folder).join(".cursor/cli.json")).unwrap();
    assert!(permissions.contains("\"Shell(*)\"") && permissions.contains("\"Write(**)\""), "{permissions}");
    if !acp() {
        let argv: Vec<String> = serde_json::from_value(first["argv"].clone()).unwrap();
        assert!(argv.windows(2).any(|w| w == ["--mode", "ask"]), "{argv:?}");
        assert!(!argv.contains(&"--force".to_string()), "{argv:?}");
    }

    // The client ran the tool; its result continues the chat.
    let messages = json!([
        user(&prompt),
        {"role": "assistant", "text": "Creating it. ", "toolCalls": [calls[0].clone()
            .as_object().map(|c| json!({"callId": c["callId"], "name": c["name"], "input": c["input"]})).unwrap()]},
        {"role": "user", "text": "", "toolResults": [{"callId": call_id, "content": "The following files were successfully edited: hello.txt"}]}
    ]);
    let (deltas, r) = s.chat(tools_turn("t2", messages));
    assert_eq!(r["result"]["stopReason"], "end", "{r}");
    assert_eq!(r["result"]["resumed"], true, "{r}");
    assert!(!text_of(&deltas).is_empty());
    let records = dir.turn_records();
    assert_eq!(records.len(), 2);
    let second = records[1]["stdin"].as_str().or(records[1]["prompt"].as_str()).unwrap_or_default();
    assert_eq!(
        second,
        format!(
            "TOOL_RESULT (call_id={call_id}, name=create_file):\n\
             The following files were successfully edited: hello.txt\nEND_TOOL_RESULT"
        ),
        "only the result goes to the chat that made the call"
    );
    if !acp() {
        let argv: Vec<String> = serde_json::from_value(records[1]["argv"].clone()).unwrap();
        assert!(argv.contains(&"--resume".to_string()), "{argv:?}");
    }
}

#[test]
fn a_turn_with_tools_that_answers_in_text_streams_as_usual() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let prompt = directed("just say hi", json!({"answer": "Hi [there]! No tools needed.", "chunkChars": 2}));
    let (deltas, r) = s.chat(tools_turn("t1", json!([user(&prompt)])));
    assert_eq!(r["result"]["stopReason"], "end", "{r}");
    assert_eq!(text_of(&deltas), "Hi [there]! No tools needed.");
    assert!(!deltas.iter().any(|d| d["kind"] == "toolCall"));
}

#[test]
fn a_call_that_does_not_fit_the_tool_is_sent_back_once_then_fails_clearly() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    // Every reply of this chat is the same broken call (the double keeps a chat's directive for
    // its resumed turns, cli-double README), so the repair is answered with it too.
    let block = "[TOOL_CALLS: [{\"name\": \"create_file\", \"arguments\": {\"filePath\": \"/tmp/x\"}}]]";
    let prompt = directed("make a file", json!({"answer": block}));
    let (deltas, r) = s.chat(tools_turn("t1", json!([user(&prompt)])));
    assert!(!deltas.iter().any(|d| d["kind"] == "toolCall"), "a call the client would reject never reaches it");
    let records = dir.turn_records();
    assert_eq!(records.len(), 2, "one repair prompt: {r}");
    let repair = records[1]["stdin"].as_str().or(records[1]["prompt"].as_str()).unwrap_or_default();
    assert!(
        repair.starts_with("Your [TOOL_CALLS] block was invalid: `create_file` needs the argument `content`"),
        "{repair}"
    );
    assert_eq!(error_kind(&r), "badToolCall", "{r}");
    assert!(r["error"]["data"]["hint"].as_str().is_some_and(|h| h.contains("pick another model")), "{r}");
}
