//! Client-owned tools through the real binary and the CLI double, on the prompt protocol: the
//! double, as the model, answers with a `[TOOL_CALLS: …]` block (docs/client-tools.md); the
//! client sees a `toolCall` delta and `stopReason: "toolCalls"`, never the block; the results
//! continue the same Cursor chat; Cursor works in a private folder that denies its own tools.

use std::time::Duration;

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

/// How the backends differ in this file's tests.
struct Expected {
    /// The double's knobs that put a turn on the prompt protocol: on ACP the double ignores the
    /// MCP servers of a session (as CLI 2026.06.04 did), so the sidecar falls back to describing
    /// the tools in the prompt; print mode always uses it.
    prompt_protocol_env: &'static [(&'static str, &'static str)],
    /// Where the agent worked, from its record: print mode's `--workspace`, ACP's session folder.
    workspace_of: fn(&Value) -> String,
    /// The CLI's own flags say ask mode, no `--force` (print mode; on ACP the mode is the
    /// session's and `--force` is never passed, `turns`/`isolation` check both).
    ask_mode_flags: bool,
    /// A follow-up with the results resumes the chat by `--resume` (print mode; on ACP it is the
    /// same session, which `prompt_of` of the record already shows).
    resumes_by_flag: bool,
    /// Tests that do not apply, and why.
    mcp_round_trip: Option<&'static str>,
    sessions_opened_ahead_with_tools: Option<&'static str>,
    /// The client's tools are the agent's own (ACP, MCP): a result goes into the call still
    /// waiting in the agent's turn, and a tool past the first 39 is reached through the
    /// `call_tool` dispatcher. On the prompt protocol (print mode) a result is a new prompt of
    /// the resumed chat, and every tool is described by its name.
    hosted: bool,
}

const ON_PRINT: Expected = Expected {
    prompt_protocol_env: &[],
    workspace_of: |record| {
        let argv: Vec<String> = serde_json::from_value(record["argv"].clone()).unwrap();
        argv.windows(2).find(|w| w[0] == "--workspace").map(|w| w[1].clone()).unwrap_or_default()
    },
    ask_mode_flags: true,
    resumes_by_flag: true,
    mcp_round_trip: Some("the MCP path needs the ACP backend (print mode uses the prompt protocol)"),
    sessions_opened_ahead_with_tools: Some("sessions opened ahead with our MCP server are ACP's"),
    hosted: false,
};

const ON_ACP: Expected = Expected {
    prompt_protocol_env: &[("CURSOR_DOUBLE_ACP_SESSION_MCP", "ignored")],
    workspace_of: |record| record["cwd"].as_str().unwrap_or_default().to_string(),
    ask_mode_flags: false,
    resumes_by_flag: false,
    mcp_round_trip: None,
    sessions_opened_ahead_with_tools: None,
    hosted: true,
};

fn expected() -> &'static Expected {
    per_backend(&ON_PRINT, &ON_ACP)
}

/// The prompt protocol on either backend.
fn on_the_prompt_protocol(dir: &TestDir) -> Sidecar {
    let mut launch = Launch::new(dir);
    for &(key, value) in expected().prompt_protocol_env {
        launch = launch.env(key, value);
    }
    let mut s = launch.start();
    s.initialize(dir, json!({}));
    s
}

fn prompt_of(record: &Value) -> &str {
    record["stdin"].as_str().or(record["prompt"].as_str()).unwrap_or_default()
}

fn workspace_of(record: &Value) -> String {
    (expected().workspace_of)(record)
}

/// One round trip: the model calls `create_file`, the client runs it, the result reaches the
/// model, which answers. Returns the sidecar and the call's id.
fn round_trip(dir: &TestDir, mut s: Sidecar) -> (Sidecar, String) {
    let target = dir.workspace().join("hello.txt");
    let call = json!({"name": "create_file", "arguments": {"filePath": target.to_str().unwrap(), "content": "hi"}});
    let prompt =
        directed("create hello.txt saying hi", json!({"toolScript": [{"say": "Creating it.", "call": [call]}]}));
    let (deltas, r) = s.chat(tools_turn("t1", json!([user(&prompt)])));
    assert_eq!(r["result"]["stopReason"], "toolCalls", "{r}");
    assert!(text_of(&deltas).starts_with("Creating it."), "{}", text_of(&deltas));
    assert!(!text_of(&deltas).contains("TOOL_CALLS"), "the block never reaches the client");
    let calls: Vec<&Value> = deltas.iter().filter(|d| d["kind"] == "toolCall").collect();
    assert_eq!(calls.len(), 1, "{deltas:?}");
    assert_eq!(calls[0]["name"], "create_file");
    assert_eq!(calls[0]["input"], json!({"filePath": target.to_str().unwrap(), "content": "hi"}));
    let call_id = calls[0]["callId"].as_str().unwrap().to_string();
    assert!(call_id.starts_with("call_"), "{call_id}");
    assert!(!deltas.iter().any(|d| d["kind"] == "toolStarted"), "Cursor's own tool activity is not the client's");
    assert!(!target.exists(), "only the client's tool writes the user's files");

    // The client ran the tool; its result continues the turn.
    let said = text_of(&deltas);
    let messages = json!([
        user(&prompt),
        {"role": "assistant", "text": said, "toolCalls": [{"callId": call_id, "name": "create_file", "input": calls[0]["input"]}]},
        {"role": "user", "text": "", "toolResults": [{"callId": call_id, "content": "The following files were successfully edited: hello.txt"}]}
    ]);
    let (deltas, r) = s.chat(tools_turn("t2", messages));
    assert_eq!(r["result"]["stopReason"], "end", "{r}");
    assert!(
        text_of(&deltas).contains("create_file: The following files were successfully edited: hello.txt"),
        "the model got the result: {}",
        text_of(&deltas)
    );
    (s, call_id)
}

/// Where the agent ran: a private folder that denies Cursor's own tools, never the user's.
fn assert_isolated(dir: &TestDir, record: &Value) {
    let folder = workspace_of(record);
    assert_ne!(folder, dir.workspace().to_str().unwrap(), "not the user's folder");
    let permissions = std::fs::read_to_string(std::path::Path::new(&folder).join(".cursor/cli.json")).unwrap();
    assert!(permissions.contains("\"Shell(*)\"") && permissions.contains("\"Write(**)\""), "{permissions}");
    if expected().ask_mode_flags {
        let argv: Vec<String> = serde_json::from_value(record["argv"].clone()).unwrap();
        assert!(argv.windows(2).any(|w| w == ["--mode", "ask"]), "{argv:?}");
        assert!(!argv.contains(&"--force".to_string()), "{argv:?}");
    }
}

#[test]
fn a_tool_round_trip_on_the_prompt_protocol_continues_the_same_chat_with_the_results() {
    let dir = TestDir::new();
    let s = on_the_prompt_protocol(&dir);
    let (_s, call_id) = round_trip(&dir, s);
    let records = dir.turn_records();
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(prompt_of(&records[0]).starts_with("<client_tools>"), "{}", prompt_of(&records[0]));
    assert_isolated(&dir, &records[0]);
    assert_eq!(
        prompt_of(&records[1]),
        format!(
            "TOOL_RESULT (call_id={call_id}, name=create_file):\n\
             The following files were successfully edited: hello.txt\nEND_TOOL_RESULT"
        ),
        "only the result goes to the chat that made the call"
    );
    if expected().resumes_by_flag {
        let argv: Vec<String> = serde_json::from_value(records[1]["argv"].clone()).unwrap();
        assert!(argv.contains(&"--resume".to_string()), "{argv:?}");
    }
}

#[test]
fn a_tool_round_trip_over_mcp_answers_the_parked_call_in_the_same_turn() {
    if skipped(expected().mcp_round_trip) {
        return;
    }
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    let init = s.initialize(&dir, json!({}));
    assert_eq!(init["result"]["capabilities"]["clientTools"], 1, "{init}");
    let (s, _) = round_trip(&dir, s);
    let records = dir.turn_records();
    assert_eq!(records.len(), 1, "one prompt: the result went into the waiting call, not a new prompt");
    assert!(!prompt_of(&records[0]).contains("<client_tools>"), "hosted tools are not described in the prompt");
    assert_isolated(&dir, &records[0]);
    s.finish();
    let exit = dir.acp_records("exit");
    // (The agent that ran the turn; the one opened ahead for the next tools chat made no call.)
    let tools = exit
        .iter()
        .find(|r| r["tools"]["calls"].as_array().is_some_and(|c| !c.is_empty()))
        .map(|r| r["tools"].clone())
        .expect("the double saw the call");
    assert_eq!(tools["calls"][0]["path"], "mcp", "{tools}");
    assert_eq!(tools["mcpServers"][0]["connected"], true, "{tools}");
    let permission = &tools["permissions"][0];
    assert!(
        permission["answer"].as_str().is_some_and(|a| a.contains("allow")),
        "our server's call is allowed: {tools}"
    );
}

#[test]
fn a_tool_round_trip_works_in_the_chat_view_shape() {
    // The same round trip with VS Code's messages: a system prompt and the typed text inside
    // `<userRequest>`, as the Chat view sends them.
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let call = json!({"name": "create_file", "arguments": {"filePath": "/w/a.txt", "content": "x"}});
    let typed = directed("make a.txt", json!({"toolScript": [{"call": [call]}]}));
    let request = format!("<context>today</context>\n<userRequest>\n{typed}\n</userRequest>");
    let system = json!({"role": "system", "text": "You are Copilot. Use the tools."});
    let (deltas, r) = s.chat(tools_turn("t1", json!([system, user(&request)])));
    assert_eq!(r["result"]["stopReason"], "toolCalls", "{r}");
    let call_id = deltas.iter().find(|d| d["kind"] == "toolCall").unwrap()["callId"].clone();
    let messages = json!([system, user(&request),
        {"role": "assistant", "text": text_of(&deltas), "toolCalls": [{"callId": call_id, "name": "create_file", "input": call["arguments"]}]},
        {"role": "user", "text": "", "toolResults": [{"callId": call_id, "content": "done"}]}]);
    let (deltas, r) = s.chat(tools_turn("t2", messages));
    assert_eq!(r["result"]["stopReason"], "end", "{r}");
    assert!(text_of(&deltas).contains("create_file: done"), "{}", text_of(&deltas));
    // (Read after the round trip: over ACP the double stores a turn once it is answered.)
    let first = &dir.turn_records()[0];
    assert!(prompt_of(first).contains("You are Copilot. Use the tools."), "the client's system prompt goes in");
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
fn a_broken_block_is_sent_back_once_and_the_corrected_call_goes_through() {
    let dir = TestDir::new();
    let mut s = on_the_prompt_protocol(&dir);
    let call = json!({"name": "create_file", "arguments": {"filePath": "/tmp/x", "content": "y"}});
    let prompt = directed("make a file", json!({"toolScript": [{"call": [call]}], "malformedToolCallsOnce": true}));
    let (deltas, r) = s.chat(tools_turn("t1", json!([user(&prompt)])));
    assert_eq!(r["result"]["stopReason"], "toolCalls", "{r}");
    let calls: Vec<&Value> = deltas.iter().filter(|d| d["kind"] == "toolCall").collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["input"], json!({"filePath": "/tmp/x", "content": "y"}));
    assert!(!text_of(&deltas).contains("TOOL_CALLS"), "{}", text_of(&deltas));
    let records = dir.turn_records();
    assert_eq!(records.len(), 2, "one repair prompt");
    let repair = prompt_of(&records[1]);
    assert!(repair.starts_with("Your [TOOL_CALLS] block was invalid: the block is not valid JSON"), "{repair}");
}

#[test]
fn a_call_that_does_not_fit_the_tool_is_sent_back_once_then_fails_clearly() {
    let dir = TestDir::new();
    let mut s = on_the_prompt_protocol(&dir);
    // The scripted model makes the same call again when asked to correct it.
    let call = json!({"name": "create_file", "arguments": {"filePath": "/tmp/x"}});
    let prompt = directed("make a file", json!({"toolScript": [{"call": [call]}]}));
    let (deltas, r) = s.chat(tools_turn("t1", json!([user(&prompt)])));
    assert!(!deltas.iter().any(|d| d["kind"] == "toolCall"), "a call the client would reject never reaches it");
    let records = dir.turn_records();
    assert_eq!(records.len(), 2, "one repair prompt: {r}");
    let repair = prompt_of(&records[1]);
    assert!(
        repair.starts_with("Your [TOOL_CALLS] block was invalid: `create_file` needs the argument `content`"),
        "{repair}"
    );
    assert_eq!(error_kind(&r), "badToolCall", "{r}");
    assert!(r["error"]["data"]["hint"].as_str().is_some_and(|h| h.contains("pick another model")), "{r}");
}

#[test]
fn cursors_own_tool_running_in_client_tools_mode_stops_the_turn() {
    // A build that ignores the permissions: its edit tool writes the file anyway (the double's
    // `builtinBypass`). The policy monitor stops the turn with a clear error.
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let step =
        json!({"say": "Editing it myself.", "builtin": {"kind": "write", "path": "notes.txt", "content": "mine"}});
    let prompt = directed("edit notes", json!({"toolScript": [step], "builtinBypass": true}));
    let (deltas, r) = s.chat(tools_turn("t1", json!([user(&prompt)])));
    assert_eq!(error_kind(&r), "toolPolicy", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("own tools"), "{r}");
    assert!(!deltas.iter().any(|d| d["kind"] == "toolStarted" || d["kind"] == "toolCompleted"), "{deltas:?}");
    assert!(!dir.workspace().join("notes.txt").exists(), "the user's folder was never the agent's");
}

#[test]
fn cursors_own_tool_that_ran_and_failed_in_client_tools_mode_stops_the_turn_too() {
    // A build that ignores the permissions reads a file that is not there: the read ran (and
    // failed), which the policy stops as it stops one that succeeded.
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let step = json!({"say": "Looking myself.", "builtin": {"kind": "read", "path": "missing.txt"}});
    let prompt = directed("read it", json!({"toolScript": [step], "builtinBypass": true}));
    let (deltas, r) = s.chat(tools_turn("t1", json!([user(&prompt)])));
    assert_eq!(error_kind(&r), "toolPolicy", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("missing.txt"), "{r}");
    assert!(!deltas.iter().any(|d| d["kind"] == "toolStarted" || d["kind"] == "toolCompleted"), "{deltas:?}");
}

#[test]
fn a_denied_tool_of_cursors_is_no_violation_and_the_turn_goes_on() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let steps = json!([{"builtin": {"kind": "shell", "command": "rm -rf /"}, "say": "That was refused, so: hello."}]);
    let prompt = directed("clean up", json!({"toolScript": steps}));
    let (deltas, r) = s.chat(tools_turn("t1", json!([user(&prompt)])));
    assert_eq!(r["result"]["stopReason"], "end", "{r}");
    assert!(text_of(&deltas).contains("hello"), "{}", text_of(&deltas));
    assert!(
        !deltas.iter().any(|d| d["kind"] == "permissionDenied"),
        "Cursor's own tools are not the client's business"
    );
}

#[test]
fn the_users_login_and_config_stay_untouched_in_client_tools_mode() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let (_, plain) = s.chat(json!({"turnId": "t0", "model": "auto", "mode": "agent", "messages": [user("hi")]}));
    assert!(plain.get("result").is_some(), "{plain}");
    let (_, r) = s.chat(tools_turn("t1", json!([user("hello with tools")])));
    assert_eq!(r["result"]["stopReason"], "end", "the stored login works in the private folder: {r}");
    let records = dir.turn_records();
    let (without, with) = (&records[0], &records[1]);
    for key in ["HOME", "CURSOR_CONFIG_DIR", "CURSOR_DATA_DIR", "XDG_CONFIG_HOME"] {
        assert_eq!(with["env"][key], without["env"][key], "{key} is the same with and without client tools");
    }
}

#[test]
fn a_new_conversation_with_tools_on_acp_takes_a_session_opened_ahead_with_those_tools() {
    if skipped(expected().sessions_opened_ahead_with_tools) {
        return;
    }
    // What a new Copilot Agent-mode chat pays: without a session opened ahead that already hosts
    // the tools, its first word waits for `session/new` with our server and its listing.
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_ACP_NEW_SESSION_MS", "300").start();
    s.initialize(&dir, json!({}));
    let first = |conversation: &str, text: &str| {
        let mut turn = tools_turn(&format!("t-{conversation}"), json!([user(text)]));
        turn["conversationId"] = json!(conversation);
        turn
    };
    let (d, r) = s.chat(first("conv-a", "first chat"));
    assert_eq!(r["result"]["stopReason"], "end", "{r}");
    assert_eq!(text_of(&d), "Echo: first chat");
    // The session opened ahead for the next tools conversation is kept once the double saved it
    // and `status` counts it beside conv-a's and the plain one opened ahead at `initialize`.
    let ahead = |s: &mut Sidecar| {
        s.request("status", json!({}))["result"]["backend"]["warm"].as_u64().unwrap_or(0) >= 3
            && saved_sessions(&dir).iter().any(|(_, _, prompts)| prompts.is_empty())
    };
    assert!(eventually(Duration::from_secs(10), || ahead(&mut s)), "no session with tools opened ahead");
    let before: Vec<(String, u64)> = saved_sessions(&dir).into_iter().map(|(id, pid, _)| (id, pid)).collect();
    let (d, r) = s.chat(first("conv-b", "second chat"));
    assert_eq!(r["result"]["stopReason"], "end", "{r}");
    assert_eq!(text_of(&d), "Echo: second chat");
    let (used, pid, _) = session_with_prompt(&dir, "second chat");
    assert!(
        before.contains(&(used.clone(), pid)),
        "the second chat ran in a session opened before it: {used} {before:?}"
    );
    // And that session hosted the tools: the double listed them from our server, nothing was
    // described in the prompt.
    let record = dir.turn_records().into_iter().find(|r| prompt_of(r) == "second chat");
    assert!(record.is_some(), "the prompt went in as typed, no <client_tools> block: {:?}", dir.turn_records());
    s.finish();
    let exit = dir.acp_records("exit");
    let hosted = exit.iter().any(|r| r["tools"]["mcpServers"][0]["connected"] == true && r["pid"] == json!(pid));
    assert!(hosted, "the spare's agent connected to our server: {exit:?}");
}

#[test]
fn a_connection_drop_after_the_client_ran_a_tool_fails_the_turn_and_never_sends_the_prompt_again() {
    drop_after_a_client_tool_call("on");
}

/// The same when no update of the agent's announced the call: the call reaching our MCP host is
/// what makes it output (neither the transport retry nor a second attempt may run it again).
#[test]
fn a_connection_drop_after_an_unannounced_client_tool_call_never_sends_the_prompt_again() {
    drop_after_a_client_tool_call("off");
}

fn drop_after_a_client_tool_call(mcp_updates: &str) {
    if skipped(expected().mcp_round_trip) {
        return;
    }
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_ACP_MCP_UPDATES", mcp_updates).start();
    s.initialize(&dir, json!({}));
    let target = dir.workspace().join("run.txt");
    let call = json!({"name": "create_file", "arguments": {"filePath": target.to_str().unwrap(), "content": "once"}});
    let script = json!({"toolScript": [{"call": [call]}, {"say": "Ran it."}], "dropAfterCalls": true});
    let prompt = directed("run it once", script);
    // A conversation with a turn before (its session recorded), whose next turn calls the tool.
    let (hello, r) = s.chat(tools_turn("t0", json!([user("hello")])));
    assert!(r.get("result").is_some(), "{r}");
    let hello = text_of(&hello);
    let (deltas, r) =
        s.chat(tools_turn("t1", json!([user("hello"), {"role": "assistant", "text": hello}, user(&prompt)])));
    assert_eq!(r["result"]["stopReason"], "toolCalls", "{r}");
    let call = deltas.iter().find(|d| d["kind"] == "toolCall").expect("the call").clone();
    let messages = json!([
        user("hello"),
        {"role": "assistant", "text": hello},
        user(&prompt),
        {"role": "assistant", "text": text_of(&deltas), "toolCalls": [{"callId": call["callId"], "name": "create_file", "input": call["input"]}]},
        {"role": "user", "text": "", "toolResults": [{"callId": call["callId"], "content": "created run.txt"}]}
    ]);
    // The client ran the tool; then the agent's connection to Cursor drops.
    let (deltas, r) = s.chat(tools_turn("t2", messages.clone()));
    assert_eq!(error_kind(&r), "network", "the drop is said as it is: {r}");
    assert!(!deltas.iter().any(|d| d["kind"] == "toolCall"), "the tool is not called again: {deltas:?}");
    // The client's next request brings the results to the same session.
    let (deltas, r) = s.chat(tools_turn("t3", messages));
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(r["result"]["resumed"], true, "{r}");
    assert!(!deltas.iter().any(|d| d["kind"] == "toolCall"), "the tool is not called a second time: {deltas:?}");
    assert_eq!(
        text_of(&deltas),
        "Done. Results: create_file: created run.txt",
        "the results reached the session: {deltas:?}"
    );
    s.finish();
    let prompts: Vec<Value> = dir
        .acp_records("exit")
        .iter()
        .flat_map(|r| r["acp"]["received"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["method"] == "session/prompt")
        .collect();
    let dropped = prompts.iter().filter(|m| m["answer"] == "error").count();
    assert_eq!((prompts.len(), dropped), (3, 1), "hello, the tool's prompt once, the results: {prompts:?}");
}

/// VS Code's Copilot harness: no conversation id, and the tool round's follow-up is the marker of
/// the reply that made the call (the session id), the system instructions and the result alone.
/// It continues the same turn (ACP: the parked MCP call) or chat (print: `--resume`, the results
/// only), and the next request, marker and new message only, the same chat again.
#[test]
fn a_tool_round_under_a_marker_alone_continues_the_chat_that_made_the_call() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let target = dir.workspace().join("hello.txt");
    let call = json!({"name": "create_file", "arguments": {"filePath": target.to_str().unwrap(), "content": "hi"}});
    let prompt = directed("create hello.txt", json!({"toolScript": [{"say": "Creating it.", "call": [call]}]}));
    let system = json!({"role": "system", "text": "You are the harness's agent."});
    let harness_turn = |turn: &str, messages: Value, session: &Value| {
        let mut p = json!({"turnId": turn, "model": "auto", "mode": "agent", "messages": messages,
            "tools": [create_file_tool()]});
        if !session.is_null() {
            p["sessionId"] = session.clone();
        }
        p
    };
    let (deltas, r1) = s.chat(harness_turn("t1", json!([system, user(&prompt)]), &Value::Null));
    assert_eq!(r1["result"]["stopReason"], "toolCalls", "{r1}");
    let session = r1["result"]["sessionId"].clone();
    let call_id = deltas.iter().find(|d| d["kind"] == "toolCall").expect("a call")["callId"].clone();
    let result =
        json!({"role": "user", "text": "", "toolResults": [{"callId": call_id, "content": "created hello.txt"}]});
    let (deltas, r2) = s.chat(harness_turn("t2", json!([system, result]), &session));
    assert_eq!((r2["result"]["stopReason"].as_str(), &r2["result"]["sessionId"]), (Some("end"), &session), "{r2}");
    assert!(text_of(&deltas).contains("created hello.txt"), "the model got the result: {}", text_of(&deltas));
    let answer2 = text_of(&deltas);
    let (d3, r3) = s.chat(harness_turn("t3", json!([system, user("thanks")]), &session));
    assert_eq!((r3["result"]["resumed"].as_bool(), &r3["result"]["sessionId"]), (Some(true), &session), "{r3}");
    // The chat kept the turns those requests left out: the whole transcript, without the marker,
    // still finds it.
    let full = json!([system, user(&prompt),
        {"role": "assistant", "text": "Creating it.", "toolCalls": [{"callId": call_id, "name": "create_file", "input": call["arguments"]}]},
        {"role": "user", "text": "", "toolResults": [{"callId": call_id, "content": "created hello.txt"}]},
        {"role": "assistant", "text": answer2}, user("thanks"), {"role": "assistant", "text": text_of(&d3)}, user("bye")]);
    let (_, r4) = s.chat(harness_turn("t4", full, &Value::Null));
    assert_eq!((r4["result"]["resumed"].as_bool(), &r4["result"]["sessionId"]), (Some(true), &session), "{r4}");

    let records = dir.turn_records();
    let last = records.last().expect("records");
    assert_eq!(prompt_of(last), "bye", "only the new message: {last}");
    assert_eq!(prompt_of(&records[records.len() - 2]), "thanks", "only the new message");
    if expected().hosted {
        assert_eq!(records.len(), 3, "the result went into the waiting call, then one prompt each: {records:?}");
        assert_eq!(records[0]["sessionId"], records[1]["sessionId"], "the same ACP session");
    } else {
        assert_eq!(records.len(), 4, "{records:?}");
        // The results came alone, yet the chat is told which tool each answers (the call it made).
        let head = format!("TOOL_RESULT (call_id={}, name=create_file)", call_id.as_str().unwrap());
        assert!(prompt_of(&records[1]).starts_with(&head), "{}", prompt_of(&records[1]));
        let chat = |r: &Value| {
            let argv: Vec<String> = serde_json::from_value(r["argv"].clone()).unwrap();
            argv.windows(2).find(|w| w[0] == "--resume").map(|w| w[1].clone())
        };
        assert!(chat(&records[1]).is_some() && chat(&records[1]) == chat(&records[2]), "{records:?}");
    }
}

/// The Copilot harness offers up to 128 tools, `apply_patch` among them as a Responses custom tool
/// (`{input: string}`). On ACP Cursor's model sees 40 of a server's tools: the 39 first and the
/// `call_tool` dispatcher, which reaches the rest; on the prompt protocol every tool is described.
/// Either way the client gets its own tool names, and `input` stays a string.
#[test]
fn a_hundred_and_twenty_eight_tools_with_a_custom_one_reach_the_client_by_their_names() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let patch = "*** Begin Patch\n*** Add File: NOTES.md\n+hi\n*** End Patch\n";
    let mut tools = vec![json!({"name": "apply_patch", "description": "Apply a V4A patch",
        "inputSchema": {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}})];
    tools.extend((1..128).map(|i| {
        json!({"name": format!("tool_{i}"), "description": format!("Tool number {i}"),
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}})
    }));
    assert_eq!(tools.len(), 128);
    let far = if expected().hosted {
        json!({"name": "call_tool", "arguments": {"name": "tool_100", "arguments": {"q": "far"}}})
    } else {
        json!({"name": "tool_100", "arguments": {"q": "far"}})
    };
    let patch_call = json!({"name": "apply_patch", "arguments": {"input": patch}});
    let prompt = directed("add NOTES.md", json!({"toolScript": [{"say": "On it.", "call": [patch_call, far]}]}));
    let send = |s: &mut Sidecar, turn: &str, messages: Value| {
        s.chat(json!({"turnId": turn, "model": "auto", "mode": "agent", "conversationId": "conv-128",
            "messages": messages, "tools": tools}))
    };
    let (deltas, r) = send(&mut s, "t1", json!([user(&prompt)]));
    assert_eq!(r["result"]["stopReason"], "toolCalls", "{r}");
    let calls: Vec<&Value> = deltas.iter().filter(|d| d["kind"] == "toolCall").collect();
    // Parallel MCP calls reach the sidecar in either order.
    let mut seen: Vec<(&str, &Value)> = calls.iter().map(|c| (c["name"].as_str().unwrap(), &c["input"])).collect();
    seen.sort_by_key(|(name, _)| *name);
    assert_eq!(
        seen,
        [("apply_patch", &json!({"input": patch})), ("tool_100", &json!({"q": "far"}))],
        "the client's names, the custom tool's input a string: {deltas:?}"
    );
    let results: Vec<Value> = calls
        .iter()
        .map(|c| json!({"callId": c["callId"], "content": format!("{} ran", c["name"].as_str().unwrap())}))
        .collect();
    let tool_calls: Vec<Value> =
        calls.iter().map(|c| json!({"callId": c["callId"], "name": c["name"], "input": c["input"]})).collect();
    let history = json!([user(&prompt), {"role": "assistant", "text": text_of(&deltas), "toolCalls": tool_calls},
        {"role": "user", "text": "", "toolResults": results}]);
    let (deltas, r) = send(&mut s, "t2", history);
    assert_eq!(r["result"]["stopReason"], "end", "{r}");
    let answer = text_of(&deltas);
    assert!(
        answer.contains("apply_patch ran") && answer.contains("tool_100 ran"),
        "the model got both results: {answer}"
    );
}
