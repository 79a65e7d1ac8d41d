//! Conversations resume instead of starting over; when they cannot, context is replayed.

use serde_json::{json, Value};

use crate::support::*;

fn argv(record: &Value) -> Vec<String> {
    serde_json::from_value(record["argv"].clone()).unwrap()
}

/// How the backends differ in this file's tests.
struct Expected {
    /// The chat a turn ran in, from its record.
    chat_of: fn(&Value) -> Option<String>,
    /// New chats' ids come from `create-chat`, fetched ahead (print mode; ACP opens sessions
    /// ahead instead).
    chat_ids_fetched_ahead: bool,
    /// How a utility turn was run: ask mode, the utility model, no chat of a conversation.
    utility_turn: fn(&TestDir, Sidecar, &Value),
    /// Tests that do not apply, and why.
    rejected_resume: Option<&'static str>,
    chat_store_layout: Option<&'static str>,
}

const ON_PRINT: Expected = Expected {
    chat_of: |record| {
        let a = argv(record);
        a.iter().position(|x| x == "--resume").map(|i| a[i + 1].clone())
    },
    chat_ids_fetched_ahead: true,
    utility_turn: utility_turn_on_print,
    rejected_resume: None,
    chat_store_layout: None,
};

const ON_ACP: Expected = Expected {
    chat_of: |record| record["sessionId"].as_str().map(str::to_owned),
    chat_ids_fetched_ahead: false,
    utility_turn: utility_turn_on_acp,
    rejected_resume: Some(
        "`--resume` of a chat the CLI garbage-collected is print mode's; ACP's lost session (load refused) is isolation::a_chat_gone_from_the_cli_store_is_replayed_into_a_new_chat",
    ),
    chat_store_layout: Some("the chat store check is print mode's (ACP asks the agent to load a session)"),
};

fn expected() -> &'static Expected {
    per_backend(&ON_PRINT, &ON_ACP)
}

/// The chat a turn ran in: print mode's `--resume <id>`; on ACP the session of the prompt.
fn resume_id(record: &Value) -> Option<String> {
    (expected().chat_of)(record)
}

fn turn(id: &str, mode: &str, messages: Value, extra: Value) -> Value {
    let mut p = json!({"turnId": id, "model": "auto", "mode": mode, "messages": messages});
    if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
        p.extend(extra.clone());
    }
    p
}

/// Copilot-shaped user message: context plus the typed request.
fn copilot(typed: &str) -> Value {
    user(&format!("<context>today</context>\n<userRequest>\n{typed}\n</userRequest>"))
}

#[test]
fn second_turn_resumes_the_chat_of_the_first() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let (d1, r1) = s.chat(turn("t1", "agent", json!([user("What is 2+2?")]), json!({})));
    assert_eq!(r1["result"]["resumed"], false, "{r1}");
    let answer1 = text_of(&d1);
    let (d2, r2) = s.chat(turn(
        "t2",
        "agent",
        json!([user("What is 2+2?"), assistant(&answer1), user("And times 3?")]),
        json!({}),
    ));
    assert_eq!(r2["result"]["resumed"], true, "{r2}");
    assert_eq!(r2["result"]["sessionId"], r1["result"]["sessionId"]);
    assert_eq!(d2[0]["kind"], "session");
    assert_eq!(d2[0]["resumed"], true);

    let turns = dir.turn_records();
    let first_chat = resume_id(&turns[0]).expect("new chats use a create-chat id");
    assert_eq!(resume_id(&turns[1]).as_deref(), Some(first_chat.as_str()), "the double saw --resume <same id>");
    assert_eq!(turns[1]["stdin"], "And times 3?", "a resumed turn sends only the new message");
    assert_eq!(
        dir.records().iter().any(|r| r["subcommand"] == "create-chat"),
        expected().chat_ids_fetched_ahead,
        "create-chat fetched the chat id ahead"
    );
}

#[test]
fn conversation_id_resumes_even_when_the_mode_changes() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let conv = json!({"conversationId": "9f2c1a7e"});
    let (_, r1) = s.chat(turn("t1", "ask", json!([user("ENV"), copilot("explain x")]), conv.clone()));
    let (_, r2) = s.chat(turn(
        "t2",
        "agent",
        json!([user("ENV"), copilot("explain x"), assistant("x is …"), copilot("now change it")]),
        conv,
    ));
    assert_eq!(r2["result"]["resumed"], true, "{r2}");
    assert_eq!(r2["result"]["sessionId"], r1["result"]["sessionId"]);
    let turns = dir.turn_records();
    assert_eq!(resume_id(&turns[1]), resume_id(&turns[0]));
}

#[test]
fn history_matching_needs_the_same_mode() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let (deltas, _) = s.chat(turn("t1", "ask", json!([user("q1")]), json!({})));
    let a = text_of(&deltas);
    let (_, r) = s.chat(turn("t2", "plan", json!([user("q1"), assistant(&a), user("q2")]), json!({})));
    assert_eq!(r["result"]["resumed"], false, "another mode is another conversation: {r}");
    let (_, r) = s.chat(turn("t3", "ask", json!([user("q1"), assistant(&a), user("q2")]), json!({})));
    assert_eq!(r["result"]["resumed"], true, "{r}");
}

#[test]
fn a_new_conversation_does_not_resume_an_old_one() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let (_, r1) = s.chat(turn("t1", "agent", json!([user("hello")]), json!({"conversationId": "a"})));
    let (_, r2) = s.chat(turn("t2", "agent", json!([user("hello")]), json!({"conversationId": "b"})));
    assert_eq!(r2["result"]["resumed"], false);
    assert_ne!(r1["result"]["sessionId"], r2["result"]["sessionId"]);
    let turns = dir.turn_records();
    assert_ne!(resume_id(&turns[0]), resume_id(&turns[1]), "each new conversation gets its own chat");
}

#[test]
fn when_nothing_matches_earlier_turns_are_replayed_into_a_new_chat() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let history = json!([user("Remember the number 7."), assistant("Noted: 7."), user("What number did I say?")]);
    let (deltas, r) = s.chat(turn("t1", "agent", history, json!({})));
    assert_eq!(r["result"]["resumed"], false, "{r}");
    assert_eq!(deltas[0]["replayed"], true);
    let stdin = dir.turn_records()[0]["stdin"].as_str().unwrap().to_string();
    assert!(stdin.contains("<conversation_history>"), "{stdin}");
    assert!(stdin.contains("[user]\nRemember the number 7.") && stdin.contains("[assistant]\nNoted: 7."), "{stdin}");
    assert!(stdin.ends_with("What number did I say?"), "{stdin}");
}

#[test]
fn cleared_sessions_replay_instead_of_resuming() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    s.chat(turn("t1", "agent", json!([user("one")]), json!({})));
    let listed = s.request("sessions/list", json!(null));
    assert_eq!(listed["result"]["sessions"].as_array().unwrap().len(), 1, "{listed}");
    let cleared = s.request("sessions/clear", json!({}));
    assert_eq!(cleared["result"]["cleared"], 1);
    let (d, r) = s.chat(turn("t2", "agent", json!([user("one"), assistant("Echo: one"), user("two")]), json!({})));
    assert_eq!(r["result"]["resumed"], false);
    assert_eq!(d[0]["replayed"], true);
}

#[test]
fn sessions_survive_a_sidecar_restart() {
    let dir = TestDir::new();
    let r1 = {
        let mut s = Sidecar::start(&dir);
        s.initialize(&dir, json!({}));
        let (_, r1) = s.chat(turn("t1", "agent", json!([user("first")]), json!({"conversationId": "c1"})));
        assert!(s.finish().success());
        r1
    };
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let (_, r2) = s.chat(turn(
        "t2",
        "agent",
        json!([user("first"), assistant("Echo: first"), user("second")]),
        json!({"conversationId": "c1"}),
    ));
    assert_eq!(r2["result"]["resumed"], true, "{r2}");
    assert_eq!(r2["result"]["sessionId"], r1["result"]["sessionId"]);
}

#[test]
fn session_id_from_history_resumes() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let (_, r1) = s.chat(turn("t1", "agent", json!([user("first")]), json!({})));
    let sid = r1["result"]["sessionId"].clone();
    // The client lost its conversation id but kept our marker; the history text differs a bit.
    let (_, r2) = s.chat(turn(
        "t2",
        "agent",
        json!([user("first"), assistant("(answer)"), user("second")]),
        json!({"sessionId": sid}),
    ));
    assert_eq!(r2["result"]["resumed"], true, "{r2}");
    assert_eq!(r2["result"]["sessionId"], sid);
}

#[test]
fn utility_requests_never_touch_sessions() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({"utilityModel": "composer-2.5-fast"}));
    let (deltas, r) = s.chat(json!({
        "turnId": "u1", "model": "auto", "mode": "agent", "utility": true,
        "messages": [{"role": "system", "text": "Write a brief title for this chat."}, user("how do I sort a list?")]
    }));
    assert!(r["result"]["sessionId"].is_null(), "{r}");
    assert!(deltas.iter().all(|d| d["kind"] != "session"));
    let listed = s.request("sessions/list", json!(null));
    assert_eq!(listed["result"]["sessions"], json!([]));
    let rec = &dir.turn_records()[0];
    assert!(rec["stdin"].as_str().unwrap().starts_with("Write a brief title"));
    (expected().utility_turn)(&dir, s, rec);
}

/// ACP: a one-shot session of its own, set to ask mode and the utility model.
fn utility_turn_on_acp(dir: &TestDir, s: Sidecar, rec: &Value) {
    let session = rec["sessionId"].clone();
    assert!(s.finish().success());
    let of =
        |m: &str| -> Vec<Value> { dir.acp_requests(m).into_iter().filter(|r| r["sessionId"] == session).collect() };
    assert_eq!(of("session/set_mode").iter().map(|r| r["modeId"].clone()).collect::<Vec<_>>(), [json!("ask")]);
    let models: Vec<Value> = of("session/set_config_option").into_iter().filter(|r| r["configId"] == "model").collect();
    assert!(
        models.iter().any(|r| r["value"].as_str().unwrap_or("").starts_with("composer-2.5[fast=true")),
        "{models:?}"
    );
}

fn utility_turn_on_print(_dir: &TestDir, _s: Sidecar, rec: &Value) {
    let a = argv(rec);
    assert!(a.windows(2).any(|w| w == ["--mode", "ask"]), "{a:?}");
    assert!(a.windows(2).any(|w| w == ["--model", "composer-2.5-fast"]), "{a:?}");
    assert!(resume_id(rec).is_none());
    assert!(rec["stdin"].as_str().unwrap().starts_with("Write a brief title"));
}

#[test]
fn a_resume_the_cli_rejects_falls_back_to_a_replayed_new_chat() {
    if skipped(expected().rejected_resume) {
        return;
    }
    let dir = TestDir::new();
    // The double keeps chats under $HOME/.cursor/chats like the real CLI and, told so, fails to
    // resume a chat it does not have (docs/cursor-cli.md §10 #8 leaves the real behaviour open).
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_UNKNOWN_RESUME", "fail").start();
    s.initialize(&dir, json!({}));
    let (_, r1) = s.chat(turn("t1", "agent", json!([user("first")]), json!({"conversationId": "c"})));
    assert!(r1.get("result").is_some(), "{r1}");
    // Cursor garbage-collects old chat stores.
    std::fs::remove_dir_all(dir.path().join("home/.cursor/chats")).expect("the double stored its chat");
    let (deltas, r) = s.chat(turn(
        "t2",
        "agent",
        json!([user("first"), assistant("Echo: first"), user("second")]),
        json!({"conversationId": "c"}),
    ));
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(r["result"]["resumed"], false);
    assert_eq!(r["result"]["sessionId"], r1["result"]["sessionId"], "same conversation, new chat");
    assert_eq!(text_of(&deltas), "Echo: second");
    let turns = dir.turn_records();
    assert_eq!(turns.len(), 3, "first turn, failed resume, replayed new chat");
    let last = turns.last().unwrap();
    assert!(last["stdin"].as_str().unwrap().contains("<conversation_history>"));
    assert_ne!(resume_id(last), resume_id(&turns[0]));
}

/// Two editor windows (two sidecars) share the session file: Clear Sessions in one forgets that
/// window's conversations only; `all: true` forgets every window's.
#[test]
fn clear_sessions_clears_this_windows_sessions_unless_asked_for_all() {
    let dir = TestDir::new();
    let mut window_a = Sidecar::start(&dir);
    window_a.initialize(&dir, json!({}));
    let mut window_b = Sidecar::start(&dir);
    window_b.initialize(&dir, json!({}));
    let (_, a) = window_a.chat(turn("a1", "ask", json!([user("window a")]), json!({"conversationId": "conv-a"})));
    let (_, b) = window_b.chat(turn("b1", "ask", json!([user("window b")]), json!({"conversationId": "conv-b"})));
    let (a, b) = (a["result"]["sessionId"].clone(), b["result"]["sessionId"].clone());
    let listed = |s: &mut Sidecar| -> Vec<Value> {
        let r = s.request("sessions/list", json!({}));
        r["result"]["sessions"].as_array().unwrap().iter().map(|x| x["sessionId"].clone()).collect()
    };
    assert_eq!(listed(&mut window_a).len(), 2, "each window sees the shared file");
    let cleared = window_a.request("sessions/clear", json!({}));
    assert_eq!(cleared["result"]["cleared"], 1, "{cleared}");
    assert_eq!(listed(&mut window_b), std::slice::from_ref(&b), "window b's conversation is still there");
    assert_eq!(listed(&mut window_a), std::slice::from_ref(&b));
    // Window b's conversation continues its chat; window a's starts over with a replay.
    let (_, again) = window_b.chat(turn(
        "b2",
        "ask",
        json!([user("window b"), assistant("Echo: window b"), user("more")]),
        json!({"conversationId": "conv-b"}),
    ));
    assert_eq!((again["result"]["resumed"].clone(), again["result"]["sessionId"].clone()), (json!(true), b.clone()));
    let all = window_a.request("sessions/clear", json!({"all": true}));
    assert_eq!(all["result"]["cleared"], 1, "{all}");
    assert!(listed(&mut window_b).is_empty());
    assert_ne!(a, b);
}

/// A CLI build that keeps its chats elsewhere than the bridge's "is this chat gone?" check looks
/// (the double's `CURSOR_DOUBLE_CHAT_STORE=sha256`): the check is calibrated after the first turn
/// and not used for that build, so every follow-up resumes its chat instead of being replayed.
#[test]
fn another_chat_store_layout_never_makes_a_follow_up_a_replay() {
    if skipped(expected().chat_store_layout) {
        return;
    }
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_CHAT_STORE", "sha256").start();
    s.initialize(&dir, json!({}));
    let mut history = vec![];
    for (i, said) in ["first", "second", "third"].iter().enumerate() {
        history.push(user(said));
        let (_, r) = s.chat(turn(&format!("t{i}"), "ask", json!(history), json!({"conversationId": "c"})));
        assert_eq!(r["result"]["resumed"], i > 0, "turn {i}: {r}");
        history.push(assistant(&format!("Echo: {said}")));
    }
    let turns = dir.turn_records();
    assert_eq!(turns.len(), 3, "no turn was tried twice or replayed");
    let first = resume_id(&turns[0]);
    assert!(turns.iter().all(|t| resume_id(t) == first), "one chat throughout");
    assert!(!turns[2]["stdin"].as_str().unwrap().contains("<conversation_history>"), "{}", turns[2]["stdin"]);
    let log = dir.log_text();
    assert_eq!(log.matches("does not keep its chats where the bridge looks").count(), 1, "said once:\n{log}");
}

/// VS Code's Copilot harness has no conversation id: a follow-up is the marker of the previous
/// answer (the session id), the system instructions and only the new message, or a trimmed
/// transcript. Either continues the same chat, and only the new message reaches the CLI.
#[test]
fn a_marker_alone_or_with_a_trimmed_transcript_continues_the_same_chat() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let system = json!({"role": "system", "text": "You are the harness's agent."});
    let (_, r1) = s.chat(turn("t1", "agent", json!([system, user("Remember the number 7.")]), json!({})));
    let session = r1["result"]["sessionId"].clone();
    let marked = json!({"sessionId": session});
    let (d2, r2) = s.chat(turn("t2", "agent", json!([system, user("What number did I say?")]), marked.clone()));
    assert_eq!(r2["result"]["resumed"], true, "{r2}");
    assert_eq!(r2["result"]["sessionId"], session);
    assert_eq!((d2[0]["kind"].as_str(), d2[0]["replayed"].as_bool()), (Some("session"), Some(false)), "{d2:?}");
    let answer2 = text_of(&d2);
    let trimmed = json!([system, user("What number did I say?"), assistant(&answer2), user("Doubled?")]);
    let (_, r3) = s.chat(turn("t3", "agent", trimmed, marked));
    assert_eq!(r3["result"]["resumed"], true, "{r3}");
    assert_eq!(r3["result"]["sessionId"], session);

    let turns = dir.turn_records();
    assert_eq!(turns.len(), 3);
    let chat = resume_id(&turns[0]).expect("a chat id");
    for (i, stdin) in [(1, "What number did I say?"), (2, "Doubled?")] {
        assert_eq!(resume_id(&turns[i]).as_deref(), Some(chat.as_str()), "turn {i} continued the same chat");
        assert_eq!(turns[i]["stdin"], stdin, "only the new message: {}", turns[i]);
    }
}
