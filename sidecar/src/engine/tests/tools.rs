//! Client-owned tools through the prompt protocol: the model's calls reach the client as
//! `ToolCall` events (never as text), the results continue the same chat, a lost chat is rebuilt
//! from the client's transcript, a broken call gets one repair, and Cursor's own tools stop the
//! turn.

use serde_json::json;

use super::*;
use crate::backend::Chat;
use crate::engine::tools::ToolSet;
use crate::vocab::{ErrorKind, ToolCall, ToolChoice, ToolDefinition, ToolResult};

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
    let h = Harness::new(Settings::default());
    let (events, outcome) = h.send(tools_request("c1", vec![user(CREATE)])).await;
    let outcome = outcome.unwrap();
    assert!(outcome.tool_calls, "the turn ends with tool calls");
    assert_eq!(text_of(&events), "Creating it.", "the block is never shown (nor the space before it)");
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
    let h = Harness::new(Settings::default());
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

/// VS Code's Copilot harness continues a tool round with the marker of the reply that made the
/// calls and the results alone: no conversation id, no request, no calls.
#[tokio::test(start_paused = true)]
async fn results_alone_under_a_marker_continue_the_chat_that_made_the_calls() {
    let h = Harness::new(Settings::default());
    let system = || ChatMessage::new(crate::vocab::Role::System, "You are the harness's agent.");
    let no_id = |messages| with_tools(request(messages), ToolChoice::Auto, true);
    // (The scripted model reads its script at the start of the prompt: no system message here.)
    let (events, first) = h.send(no_id(vec![user(CREATE)])).await;
    let first = first.unwrap();
    assert!(first.tool_calls);
    let call_id = calls_of(&events)[0].call_id.clone();
    let mut results = user("");
    results.tool_results =
        vec![ToolResult { call_id: call_id.clone(), name: None, content: "created /w/a.txt".into(), is_error: false }];
    let marked = |messages| TurnRequest { session_id: first.session_id.clone(), ..no_id(messages) };
    let (events, second) = h.send(marked(vec![system(), results])).await;
    let second = second.unwrap();
    assert!(second.resumed && !second.replayed && second.session_id == first.session_id, "{second:?}");
    let t = h.backend.turn(1);
    assert_eq!(t.chat, Chat::Resume("chat-1".into()));
    assert!(t.prompt.starts_with(&format!("TOOL_RESULT (call_id={call_id}")), "only the results: {}", t.prompt);
    assert!(text_of(&events).contains("created /w/a.txt"), "the model saw the result");
    // The next request, marker and new message only, continues the same chat.
    let third = h.send(marked(vec![system(), user("and now?")])).await.1.unwrap();
    assert!(third.resumed && third.session_id == first.session_id, "{third:?}");
    assert_eq!(h.backend.turn(2).prompt, "and now?");
    // Results alone are a tool round's and nothing else's.
    let mut stray = user("");
    stray.tool_results = vec![ToolResult { call_id, name: None, content: "x".into(), is_error: false }];
    let e = h.send(TurnRequest { session_id: first.session_id.clone(), ..request(vec![stray]) }).await.1.unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidParams);
}

#[tokio::test(start_paused = true)]
async fn a_tool_round_whose_chat_is_gone_is_rebuilt_from_the_transcript() {
    let h = Harness::new(Settings::default());
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
    let h = Harness::new(Settings::default());
    let (events, outcome) =
        h.send(tools_request("c1", vec![user("[[text:Hello |text:[1] and [TOOL|text:S] fine]]")])).await;
    assert!(!outcome.unwrap().tool_calls);
    assert_eq!(text_of(&events), "Hello [1] and [TOOLS] fine");
    assert!(calls_of(&events).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_broken_call_gets_one_repair_prompt_in_the_same_chat() {
    let h = Harness::new(Settings::default());
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
    let h = Harness::new(Settings::default());
    let two = r#"[[call:create_file:{"filePath": "/a", "content": "1"}|call:create_file:{"filePath": "/b", "content": "2"}]]"#;
    // The scripted model writes two blocks; the first block's array has one call, the second block
    // follows it and is ignored: what counts is the first block.
    let (events, _) = h.send(with_tools(in_conversation("c1", vec![user(two)]), ToolChoice::Auto, false)).await;
    assert_eq!(calls_of(&events).len(), 1);
    assert!(h.backend.turn(0).prompt.contains("Call one tool at a time"));
}

#[tokio::test(start_paused = true)]
async fn a_required_call_that_does_not_come_is_asked_for() {
    let h = Harness::new(Settings::default());
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
    let h = Harness::new(Settings::default());
    let (events, outcome) = h.send(tools_request("c1", vec![user("[[tool|text:I edited it myself]]")])).await;
    let e = outcome.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ToolPolicy);
    assert!(e.message.contains("read (Read a.rs)"), "{}", e.message);
    assert!(
        !events.iter().any(|e| matches!(e, Event::ToolStarted { .. } | Event::ToolCompleted { .. })),
        "Cursor's own tool activity is not shown as the client's: {events:?}"
    );
}

/// The stop is worded in the agent's own terms (its backend's words), the same for Cursor as ever.
#[tokio::test(start_paused = true)]
async fn an_agents_own_tool_that_ran_is_named_in_its_backends_words() {
    let cursor = Harness::new(Settings::default());
    let e = cursor.send(tools_request("c1", vec![user("[[tool|text:mine]]")])).await.1.unwrap_err();
    assert!(e.message.starts_with("Cursor ran one of its own tools"), "{}", e.message);
    let hint = e.hint.clone().unwrap_or_default();
    assert!(hint.contains("this Cursor CLI build") && hint.contains("let Cursor's agent work"), "{hint}");
    let other = Harness::new(Settings::default());
    *crate::util::sync::lock(&other.backend.words) = Some(&super::doctor::OTHER);
    let e = other.send(tools_request("c1", vec![user("[[tool|text:mine]]")])).await.1.unwrap_err();
    assert!(e.message.starts_with("Other ran one of its own tools"), "{}", e.message);
    let hint = e.hint.clone().unwrap_or_default();
    assert!(hint.contains("this Other CLI build") && hint.contains("let Other's agent work"), "{hint}");
    assert!(!hint.contains("Cursor") && !e.message.contains("Cursor"), "{e:?}");
}

/// protocol.md: "If Cursor ever runs one of its own tools in this mode, the turn stops" — any that
/// ran, whether it succeeded or not, and one whose start no rejection followed; a tool that was
/// rejected (by its own completion, or by a refused permission request Cursor then reports
/// `completed`) did not run, and the turn goes on.
#[tokio::test(start_paused = true)]
async fn a_built_in_tool_that_ran_stops_the_turn_whether_it_succeeded_or_not() {
    let cases = [
        ("tool", Some("read (Read a.rs)")),
        ("builtin:failed", Some("shell (npm test)")),
        ("builtin:open", Some("shell (npm test)")),
        ("builtin:rejected", None),
        ("builtin:refused", None),
    ];
    for (step, stopped) in cases {
        let h = Harness::new(Settings::default());
        let prompt = format!("[[{step}|text:I answered myself]]");
        let (events, outcome) = h.send(tools_request("c1", vec![user(&prompt)])).await;
        match (stopped, outcome) {
            (Some(what), Err(e)) => {
                assert_eq!(e.kind, ErrorKind::ToolPolicy, "{step}: {e:?}");
                assert!(e.message.contains(what), "{step}: {}", e.message);
            }
            (None, Ok(outcome)) => {
                assert!(!outcome.tool_calls, "{step}");
                assert_eq!(text_of(&events), "I answered myself", "{step}");
            }
            (stopped, outcome) => panic!("{step}: expected stopped={stopped:?}, got {outcome:?}"),
        }
        assert!(
            !events.iter().any(|e| matches!(e, Event::ToolStarted { .. } | Event::ToolCompleted { .. })),
            "{step}: Cursor's own tool activity is not shown as the client's: {events:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_turn_without_tools_is_untouched() {
    let h = Harness::new(Settings::default());
    let (events, outcome) = h.send(in_conversation("c1", vec![user("[[tool|text:done]]")])).await;
    assert!(!outcome.unwrap().tool_calls);
    assert!(events.iter().any(|e| matches!(e, Event::ToolStarted { .. })));
    let t = h.backend.turn(0);
    assert_eq!(t.prompt, "[[tool|text:done]]");
    assert_eq!(t.workspace, h.engine.config().workspaces[0]);
}

// ---------------------------------------------------------------------------------------------
// Hosted tools (the MCP path): the agent's turn waits inside the call while the client runs it.

fn hosting() -> Harness {
    let h = Harness::new(Settings::default());
    h.backend.hosts.store(true, std::sync::atomic::Ordering::SeqCst);
    h
}

const HOSTED: &str = r#"[[text:Creating it. |host:create_file:{"filePath": "/w/a.txt", "content": "hi"}|text: Done.]]"#;

fn results_for(first: &str, said: &str, calls: Vec<ToolCall>, result: &str) -> TurnRequest {
    tools_request("c1", after_calls(first, said, calls, result))
}

#[tokio::test(start_paused = true)]
async fn a_hosted_call_parks_the_turn_and_its_result_continues_the_same_turn() {
    let h = hosting();
    let (events, first) = h.send(tools_request("c1", vec![user(HOSTED)])).await;
    let first = first.unwrap();
    assert!(first.tool_calls);
    assert_eq!(text_of(&events), "Creating it. ");
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].input, json!({"filePath": "/w/a.txt", "content": "hi"}));
    let t = h.backend.turn(0);
    assert!(!t.prompt.contains("<client_tools>"), "hosted tools are not described in the prompt");
    let hosted = t.hosted_tools.as_ref().expect("the backend was given the tools");
    assert_eq!(hosted.tools[0].name, "create_file");
    assert_eq!(h.backend.running.load(std::sync::atomic::Ordering::SeqCst), 1, "the agent's turn waits");

    let (events, second) = h.send(results_for(HOSTED, "Creating it. ", calls, "created /w/a.txt")).await;
    let second = second.unwrap();
    assert!(!second.tool_calls);
    assert_eq!(second.session_id, first.session_id);
    assert_eq!(text_of(&events), "Got: created /w/a.txt Done.", "the same turn went on with the result");
    assert_eq!(h.backend.turn_count(), 1, "no new turn was started");

    // The next request continues the chat as usual.
    let mut history = after_calls(HOSTED, "Creating it. ", calls_of(&[]), "");
    history.truncate(1);
    let mut reply = assistant("Creating it. ");
    reply.tool_calls = vec![ToolCall { call_id: "x".into(), name: "create_file".into(), input: json!({}) }];
    let mut results = user("");
    results.tool_results = vec![ToolResult { call_id: "x".into(), name: None, content: "ok".into(), is_error: false }];
    history.extend([reply, results, assistant("Got: created /w/a.txt Done."), user("thanks")]);
    let (_, third) = h.send(tools_request("c1", history)).await;
    let third = third.unwrap();
    assert!(third.resumed, "{third:?} {:?}", h.backend.turn(2).chat);
    assert_eq!(h.backend.turn(1).chat, Chat::Resume("chat-1".into()));
    assert_eq!(h.backend.turn(1).prompt, "thanks");
}

#[tokio::test(start_paused = true)]
async fn a_turn_that_fails_after_the_client_ran_its_tools_is_not_run_again() {
    let h = hosting();
    h.send(tools_request("c1", vec![user("hello")])).await.1.unwrap();
    // A resumed chat's turn calls a tool, and after the client ran it the agent fails before
    // saying anything (a dropped connection, "not found"): no replay, no second run.
    let failing = r#"[[host:create_file:{"filePath": "/w/a.txt", "content": "hi"}|fail:cliFailed]]"#;
    let opening = vec![user("hello"), assistant("Echo: hello"), user(failing)];
    let (events, first) = h.send(tools_request("c1", opening.clone())).await;
    assert!(first.unwrap().tool_calls);
    let calls = calls_of(&events);
    let mut reply = assistant("");
    reply.tool_calls = calls.clone();
    let mut results = user("");
    results.tool_results = calls
        .iter()
        .map(|c| ToolResult { call_id: c.call_id.clone(), name: None, content: "created".into(), is_error: false })
        .collect();
    let mut history = opening;
    history.extend([reply, results]);
    let (events, second) = h.send(tools_request("c1", history.clone())).await;
    let e = second.unwrap_err();
    assert_eq!((e.kind, e.message.as_str()), (ErrorKind::CliFailed, "scripted cliFailed"), "the failure as it is");
    assert!(calls_of(&events).is_empty(), "{events:?}");
    assert_eq!(h.backend.turn_count(), 2, "the prompt was not sent again, nor replayed into a new chat");
    // The client's next request (a retry) brings the results to the same chat.
    let (_, third) = h.send(tools_request("c1", history)).await;
    let third = third.unwrap();
    assert!(third.resumed, "{third:?} {:?}", h.backend.turn(2).chat);
    let t = h.backend.turn(2);
    assert_eq!(t.chat, Chat::Resume("chat-1".into()));
    assert!(t.prompt.contains("created"), "{}", t.prompt);
}

/// On the MCP path the tool choice is what the agent's server lists: a named tool alone, or all
/// of them when a call is required; and a required call is said before the prompt, in the prompt
/// protocol's words (the tools themselves are not described there).
#[tokio::test(start_paused = true)]
async fn a_hosted_session_lists_only_what_the_tool_choice_allows() {
    let other = ToolDefinition {
        name: "get_time".into(),
        description: "The time".into(),
        input_schema: json!({"type": "object"}),
    };
    for (choice, listed, said) in [
        (
            ToolChoice::Named("create_file".into()),
            vec!["create_file"],
            Some("You must call `create_file` in this reply."),
        ),
        (ToolChoice::Required, vec!["create_file", "get_time"], Some("You must call a tool in this reply.")),
        (ToolChoice::Auto, vec!["create_file", "get_time"], None),
    ] {
        let h = hosting();
        let req = in_conversation("c1", vec![user(HOSTED)]);
        let set = ToolSet { tools: vec![create_file(), other.clone()], choice: choice.clone(), parallel: true };
        let (_, first) = h.send(TurnRequest { tools: Some(set), ..req }).await;
        assert!(first.unwrap().tool_calls, "{choice:?}");
        let t = h.backend.turn(0);
        let hosted = t.hosted_tools.as_ref().expect("the backend was given the tools");
        let names: Vec<&str> = hosted.tools.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, listed, "{choice:?}");
        assert!(!t.prompt.contains("<client_tools>"), "{choice:?}: hosted tools are not described in the prompt");
        match said {
            Some(line) => assert!(t.prompt.starts_with(&format!("{line}\n\n")), "{choice:?}: {}", t.prompt),
            None => assert!(!t.prompt.contains("You must call"), "{choice:?}: {}", t.prompt),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn parallel_hosted_calls_reach_the_client_in_one_response() {
    let h = hosting();
    let script = r#"[[host2:create_file:{"filePath": "/w/a.txt", "content": "hi"}]]"#;
    let (events, outcome) = h.send(tools_request("c1", vec![user(script)])).await;
    assert!(outcome.unwrap().tool_calls);
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 2, "{events:?}");
    assert_ne!(calls[0].call_id, calls[1].call_id);
    let mut next = after_calls(script, "", calls.clone(), "");
    next[2].tool_results[0].content = "first".into();
    next[2].tool_results[1].content = "second".into();
    let (events, _) = h.send(tools_request("c1", next)).await;
    assert_eq!(text_of(&events), "Got: firstGot: second");

    // One at a time when the client asks for that: the second call waits for the first result.
    let h = hosting();
    let (events, _) = h.send(with_tools(in_conversation("c1", vec![user(script)]), ToolChoice::Auto, false)).await;
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 1);
    let (events, outcome) = h
        .send(with_tools(in_conversation("c1", after_calls(script, "", calls, "first")), ToolChoice::Auto, false))
        .await;
    assert!(outcome.unwrap().tool_calls);
    assert_eq!(calls_of(&events).len(), 1, "the second call comes in its own response");
}

#[tokio::test(start_paused = true)]
async fn a_slow_client_gets_the_call_answered_pending_and_its_result_comes_as_a_prompt() {
    let h = hosting();
    let (events, _) = h.send(tools_request("c1", vec![user(HOSTED)])).await;
    let calls = calls_of(&events);
    // The person takes a minute to confirm: the agent is told the result comes later, ends its
    // turn, and the chat is kept.
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    assert_eq!(h.backend.running.load(std::sync::atomic::Ordering::SeqCst), 0, "the agent's turn ended");
    assert_eq!(h.engine.session_count(), 1);
    let call_id = calls[0].call_id.clone();
    let (events, outcome) = h.send(results_for(HOSTED, "Creating it. ", calls, "created after 60 s")).await;
    let outcome = outcome.unwrap();
    assert!(outcome.resumed, "the same chat continues");
    let t = h.backend.turn(1);
    assert_eq!(t.chat, Chat::Resume("chat-1".into()));
    assert_eq!(
        t.prompt,
        format!("TOOL_RESULT (call_id={call_id}, name=create_file):\ncreated after 60 s\nEND_TOOL_RESULT")
    );
    assert!(t.hosted_tools.is_some(), "the tools stay hosted");
    assert!(text_of(&events).contains("created after 60 s"));
}

#[tokio::test(start_paused = true)]
async fn another_clients_results_never_continue_a_parked_turn() {
    let h = hosting();
    let (events, _) = h.send(tools_request("c1", vec![user(HOSTED)])).await;
    let calls = calls_of(&events);
    let stranger = TurnRequest { owner: Some("someone-else".into()), ..results_for(HOSTED, "", calls, "forged") };
    let (events, _) = h.send(stranger).await;
    assert!(!text_of(&events).contains("Got: forged"), "{events:?}");
    assert_eq!(h.engine.parking.len(), 1, "the turn still waits for its own client");
}

#[tokio::test(start_paused = true)]
async fn a_new_request_while_tools_are_out_stops_the_waiting_turn() {
    let h = hosting();
    h.send(tools_request("c1", vec![user(HOSTED)])).await.1.unwrap();
    assert_eq!(h.engine.parking.len(), 1);
    // The person stopped and typed something else: the turn that waited is not coming back.
    let (events, outcome) = h.send(tools_request("c1", vec![user("never mind, just say hi")])).await;
    assert!(!outcome.unwrap().tool_calls);
    assert!(text_of(&events).contains("never mind"));
    assert_eq!(h.engine.parking.len(), 0);
    assert!(eventually_zero(&h.backend.running).await);
    assert_eq!(h.backend.dropped.load(std::sync::atomic::Ordering::SeqCst), 1, "the waiting turn was stopped");
}

#[tokio::test(start_paused = true)]
async fn a_build_that_cannot_host_the_tools_gets_them_in_the_prompt() {
    let h = hosting();
    h.backend.refuse_hosting.store(true, std::sync::atomic::Ordering::SeqCst);
    let (events, outcome) = h.send(tools_request("c1", vec![user(CREATE)])).await;
    assert!(outcome.unwrap().tool_calls);
    assert_eq!(calls_of(&events).len(), 1);
    assert_eq!(h.backend.turn_count(), 2);
    assert!(h.backend.turn(1).prompt.starts_with("<client_tools>"));
}

#[tokio::test(start_paused = true)]
async fn stopping_the_engine_stops_a_parked_turn() {
    let h = hosting();
    h.send(tools_request("c1", vec![user(HOSTED)])).await.1.unwrap();
    h.engine.shutdown();
    tokio::task::yield_now().await;
    assert!(eventually_zero(&h.backend.running).await, "the agent's turn was stopped with the engine");
    assert_eq!(h.backend.dropped.load(std::sync::atomic::Ordering::SeqCst), 1);
}

async fn eventually_zero(n: &std::sync::atomic::AtomicUsize) -> bool {
    for _ in 0..100 {
        if n.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    false
}

/// Item 10 of issue 21: the results come while the detach at 45 s is still ending the agent's
/// turn (the agent works 10 s more after "result pending"). They wait for the chat to be
/// recorded and continue it: one agent on it at a time, no replay into a new chat.
#[tokio::test(start_paused = true)]
async fn results_that_come_while_the_detach_ends_the_agents_turn_continue_the_same_chat() {
    let h = hosting();
    let slow =
        r#"[[text:Creating it. |host:create_file:{"filePath": "/w/a.txt", "content": "hi"}|busy:10|text: Done.]]"#;
    let (events, first) = h.send(tools_request("c1", vec![user(slow)])).await;
    let first = first.unwrap();
    let calls = calls_of(&events);
    let call_id = calls[0].call_id.clone();
    tokio::time::sleep(std::time::Duration::from_secs(50)).await;
    assert_eq!(h.backend.running.load(std::sync::atomic::Ordering::SeqCst), 1, "the detach is still ending the turn");
    let (events, outcome) = h.send(results_for(slow, "Creating it. ", calls, "created after 50 s")).await;
    let outcome = outcome.unwrap();
    assert!(outcome.resumed && !outcome.replayed, "{outcome:?}");
    assert_eq!(outcome.session_id, first.session_id);
    assert_eq!(h.backend.turn_count(), 2);
    let t = h.backend.turn(1);
    assert_eq!(t.chat, Chat::Resume("chat-1".into()), "the same chat, not a new one with the history");
    assert_eq!(
        t.prompt,
        format!("TOOL_RESULT (call_id={call_id}, name=create_file):\ncreated after 50 s\nEND_TOOL_RESULT")
    );
    assert_eq!(h.backend.most_running.load(std::sync::atomic::Ordering::SeqCst), 1, "never two agents on it");
    assert!(text_of(&events).contains("created after 50 s"));
}

/// Item 11 of issue 21: with one slot, a turn parked on the client's tools lets another
/// conversation run at once, and its results wait their turn for a slot.
#[tokio::test(start_paused = true)]
async fn a_parked_turn_gives_its_slot_back_and_its_results_never_wait_for_one() {
    let h = Harness::new(Settings { max_concurrent: 1, ..Settings::default() });
    h.backend.hosts.store(true, std::sync::atomic::Ordering::SeqCst);
    let (events, _) = h.send(tools_request("c1", vec![user(HOSTED)])).await;
    let calls = calls_of(&events);
    assert_eq!(h.engine.parking.len(), 1);

    let started = tokio::time::Instant::now();
    let (_, other) = h.send(in_conversation("c2", vec![user("hello")])).await;
    other.unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "the other conversation did not wait");

    // A busy conversation holds the one slot for 10 s; the results come meanwhile.
    let started = tokio::time::Instant::now();
    let busy = async {
        h.send(in_conversation("c3", vec![user("[[busy:10|text:busy done]]")])).await.1.unwrap();
        started.elapsed()
    };
    let results = async {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let (events, outcome) = h.send(results_for(HOSTED, "Creating it. ", calls, "created")).await;
        outcome.unwrap();
        (text_of(&events), started.elapsed())
    };
    let (busy_took, (text, results_took)) = tokio::join!(busy, results);
    assert_eq!(text, "Got: created Done.", "the same agent turn went on");
    // The agent waits inside its tool call against a deadline of its own: the results reach it
    // at once, even with every slot taken.
    assert!(results_took < busy_took, "the results waited for a slot: {results_took:?} {busy_took:?}");
    assert!(results_took < std::time::Duration::from_secs(3), "{results_took:?}");
}

/// Item 11 of issue 21: an HTTP client (its key's hash as owner, no conversation id) that moves
/// on without the results stops the turn that waited for them; its other conversation does not.
/// Two shapes of moving on: the calls without results, and (as the OpenAI wire wants a result
/// for every call) the client's own "aborted" results followed by new text.
#[tokio::test(start_paused = true)]
async fn an_http_client_that_moves_on_without_the_results_stops_the_waiting_turn() {
    for aborted in [false, true] {
        let h = hosting();
        let http = |messages| TurnRequest {
            owner: Some("key-hash".into()),
            ..with_tools(request(messages), ToolChoice::Auto, true)
        };
        let (events, _) = h.send(http(vec![user(HOSTED)])).await;
        let calls = calls_of(&events);
        assert_eq!(h.engine.parking.len(), 1);

        // The same client's unrelated conversation, alongside: the waiting turn stays.
        let (_, other) = h.send(http(vec![user("another task"), assistant("Echo: another task"), user("more")])).await;
        other.unwrap();
        assert_eq!(h.engine.parking.len(), 1, "another conversation of the same client leaves it alone");
        assert_eq!(h.backend.dropped.load(std::sync::atomic::Ordering::SeqCst), 0);

        // The person interrupted the tool and typed something else in that conversation.
        let mut history = after_calls(HOSTED, "Creating it. ", calls, "aborted");
        if !aborted {
            history.pop();
        }
        history.push(user("never mind, just say hi"));
        let (events, outcome) = h.send(http(history)).await;
        outcome.unwrap();
        assert!(text_of(&events).contains("never mind"), "aborted: {aborted}");
        assert_eq!(h.engine.parking.len(), 0, "aborted: {aborted}");
        assert!(eventually_zero(&h.backend.running).await);
        assert_eq!(
            h.backend.dropped.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "aborted: {aborted}: the waiting turn was stopped"
        );
    }
}
