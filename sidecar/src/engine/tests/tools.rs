//! Client-owned tools through the prompt protocol: the model's calls reach the client as
//! `ToolCall` events (never as text), the results continue the same chat, a lost chat is rebuilt
//! from the client's transcript, a broken call gets one repair, and Cursor's own tools stop the
//! turn.

use serde_json::json;

use super::*;
use crate::backend::Chat;
use crate::engine::tools::ToolSet;
use crate::protocol::{ErrorKind, ToolCall, ToolChoice, ToolDefinition, ToolResult};

fn create_file() -> ToolDefinition {
    ToolDefinition {
        name: "create_file".into(),
        description: "Create a file with the given content".into(),
        input_schema: json!({"type": "object", "properties": {"filePath": {"type": "string"},
            "content": {"type": "string"}}, "required": ["filePath", "content"]}),
    }
}

fn with_tools(req: TurnRequest, choice: ToolChoice, parallel: bool) -> TurnRequest {
    TurnRequest { tools: Some(ToolSet { tools: vec![create_file()], choice, parallel }), ..req }
}

fn tools_request(id: &str, messages: Vec<ChatMessage>) -> TurnRequest {
    with_tools(in_conversation(id, messages), ToolChoice::Auto, true)
}

const CREATE: &str = r#"[[text:Creating it. |call:create_file:{"filePath": "/w/a.txt", "content": "hi"}]]"#;

fn calls_of(events: &[Event]) -> Vec<ToolCall> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { call_id, name, input } => {
                Some(ToolCall { call_id: call_id.clone(), name: name.clone(), input: input.clone() })
            }
            _ => None,
        })
        .collect()
}

/// The client's next request after running `calls`: its history with the calls and results.
fn after_calls(first: &str, said: &str, calls: Vec<ToolCall>, result: &str) -> Vec<ChatMessage> {
    let mut reply = assistant(said);
    let results = calls
        .iter()
        .map(|c| ToolResult { call_id: c.call_id.clone(), name: None, content: result.into(), is_error: false })
        .collect();
    reply.tool_calls = calls;
    let mut results_message = user("");
    results_message.tool_results = results;
    vec![user(first), reply, results_message]
}

#[tokio::test(start_paused = true)]
async fn the_models_call_reaches_the_client_as_a_call_not_as_text() {
    let h = Harness::new(Options::default());
    let (events, outcome) = h.send(tools_request("c1", vec![user(CREATE)])).await;
    let outcome = outcome.unwrap();
    assert!(outcome.tool_calls, "the turn ends with tool calls");
    assert_eq!(text_of(&events), "Creating it. ", "the block is never shown");
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "create_file");
    assert_eq!(calls[0].input, json!({"filePath": "/w/a.txt", "content": "hi"}));
    assert!(calls[0].call_id.starts_with("call_") && calls[0].call_id.len() == 29, "{}", calls[0].call_id);

    // What the agent was given: the tools first, in ask mode, in a private folder that denies
    // Cursor's own tools.
    let t = h.backend.turn(0);
    assert!(t.prompt.starts_with("<client_tools>") && t.prompt.contains("\"name\":\"create_file\""), "{}", t.prompt);
    assert_eq!(t.mode, Mode::Ask);
    assert!(!t.unattended);
    let workspace = h.engine.config().workspaces[0].clone();
    assert_ne!(t.workspace, workspace, "not the user's folder");
    let permissions = std::fs::read_to_string(t.workspace.join(".cursor/cli.json")).unwrap();
    assert!(permissions.contains("Shell(*)") && permissions.contains("Mcp(cb:*)"), "{permissions}");
}

#[tokio::test(start_paused = true)]
async fn results_continue_the_same_chat_with_only_the_results() {
    let h = Harness::new(Options::default());
    let (events, first) = h.send(tools_request("c1", vec![user(CREATE)])).await;
    let first = first.unwrap();
    let calls = calls_of(&events);
    let call_id = calls[0].call_id.clone();
    let next = after_calls(CREATE, "Creating it. ", calls, "The following files were successfully edited: /w/a.txt");
    let (events, second) = h.send(tools_request("c1", next)).await;
    let second = second.unwrap();
    assert!(!second.tool_calls);
    assert!(second.resumed);
    assert_eq!(second.session_id, first.session_id);
    let t = h.backend.turn(1);
    assert_eq!(t.chat, Chat::Resume("chat-1".into()));
    assert_eq!(
        t.prompt,
        format!(
            "TOOL_RESULT (call_id={call_id}, name=create_file):\n\
             The following files were successfully edited: /w/a.txt\nEND_TOOL_RESULT"
        ),
        "only the results: the chat already knows the tools"
    );
    assert!(text_of(&events).contains("successfully edited"), "the model saw the result");
}

#[tokio::test(start_paused = true)]
async fn a_tool_round_whose_chat_is_gone_is_rebuilt_from_the_transcript() {
    let h = Harness::new(Options::default());
    let (events, _) = h.send(tools_request("c1", vec![user(CREATE)])).await;
    let next = after_calls(CREATE, "Creating it. ", calls_of(&events), "done: /w/a.txt");
    // A restarted sidecar without a session store knows nothing of the chat.
    let restarted = h.restart();
    let (events, outcome) = send_to(&restarted, tools_request("c1", next)).await;
    let outcome = outcome.unwrap();
    assert!(outcome.replayed && !outcome.resumed, "never a 409: a new chat with the history");
    let t = h.backend.turn(1);
    assert_eq!(t.chat, Chat::New);
    assert!(t.prompt.starts_with("<client_tools>"), "the new chat is told about the tools");
    assert!(
        t.prompt.contains("<conversation_history>") && t.prompt.contains("[TOOL_CALLS: [{\"name\": \"create_file\"")
    );
    assert!(t.prompt.trim_end().ends_with("done: /w/a.txt\nEND_TOOL_RESULT"), "{}", t.prompt);
    assert!(text_of(&events).contains("done: /w/a.txt"));
}

#[tokio::test(start_paused = true)]
async fn a_plain_answer_streams_as_without_tools() {
    let h = Harness::new(Options::default());
    let (events, outcome) =
        h.send(tools_request("c1", vec![user("[[text:Hello |text:[1] and [TOOL|text:S] fine]]")])).await;
    assert!(!outcome.unwrap().tool_calls);
    assert_eq!(text_of(&events), "Hello [1] and [TOOLS] fine");
    assert!(calls_of(&events).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_broken_call_gets_one_repair_prompt_in_the_same_chat() {
    let h = Harness::new(Options::default());
    let (events, outcome) = h.send(tools_request("c1", vec![user("[[call:delete_everything:{}]]")])).await;
    // The scripted model answers the repair prompt in text (an echo): that answer stands.
    assert!(!outcome.unwrap().tool_calls);
    assert!(calls_of(&events).is_empty(), "nothing the client cannot run reaches it");
    assert!(text_of(&events).starts_with("Echo: Your [TOOL_CALLS] block was invalid"), "{}", text_of(&events));
    assert_eq!(h.backend.turn_count(), 2, "one repair, no more");
    let repair = h.backend.turn(1);
    assert_eq!(repair.chat, Chat::Resume("chat-1".into()));
    assert!(repair.prompt.starts_with("Your [TOOL_CALLS] block was invalid: there is no tool `delete_everything`"));
}

#[tokio::test(start_paused = true)]
async fn without_parallel_calls_only_the_first_call_is_kept() {
    let h = Harness::new(Options::default());
    let two = r#"[[call:create_file:{"filePath": "/a", "content": "1"}|call:create_file:{"filePath": "/b", "content": "2"}]]"#;
    // The scripted model writes two blocks; the first block's array has one call, the second block
    // follows it and is ignored: what counts is the first block.
    let (events, _) = h.send(with_tools(in_conversation("c1", vec![user(two)]), ToolChoice::Auto, false)).await;
    assert_eq!(calls_of(&events).len(), 1);
    assert!(h.backend.turn(0).prompt.contains("Call one tool at a time"));
}

#[tokio::test(start_paused = true)]
async fn a_required_call_that_does_not_come_is_asked_for() {
    let h = Harness::new(Options::default());
    let (_, _) =
        h.send(with_tools(in_conversation("c1", vec![user("[[text:I think not]]")]), ToolChoice::Required, true)).await;
    assert!(h.backend.turn(0).prompt.contains("You must call a tool in this reply."));
    assert!(
        h.backend.turn(1).prompt.starts_with("You must call one of the tools now."),
        "{}",
        h.backend.turn(1).prompt
    );
}

#[tokio::test(start_paused = true)]
async fn cursors_own_tool_running_stops_the_turn() {
    let h = Harness::new(Options::default());
    let (events, outcome) = h.send(tools_request("c1", vec![user("[[tool|text:I edited it myself]]")])).await;
    let e = outcome.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ToolPolicy);
    assert!(e.message.contains("read (Read a.rs)"), "{}", e.message);
    assert!(
        !events.iter().any(|e| matches!(e, Event::ToolStarted { .. } | Event::ToolCompleted { .. })),
        "Cursor's own tool activity is not shown as the client's: {events:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_turn_without_tools_is_untouched() {
    let h = Harness::new(Options::default());
    let (events, outcome) = h.send(in_conversation("c1", vec![user("[[tool|text:done]]")])).await;
    assert!(!outcome.unwrap().tool_calls);
    assert!(events.iter().any(|e| matches!(e, Event::ToolStarted { .. })));
    let t = h.backend.turn(0);
    assert_eq!(t.prompt, "[[tool|text:done]]");
    assert_eq!(t.workspace, h.engine.config().workspaces[0]);
}
