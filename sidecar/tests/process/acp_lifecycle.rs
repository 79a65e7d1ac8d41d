//! What the ACP backend's warm agents leave behind (issue 21, items 6 and 12): an agent that is
//! evicted gets end of input and a moment to save before it dies, as at shutdown; a new session
//! whose first turn failed is not kept warm at the expense of real conversations. These pin
//! `backend: "acp"`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

fn start(dir: &TestDir, env: &[(&str, &str)], options: Value) -> Sidecar {
    let mut launch = Launch::new(dir);
    for (k, v) in env {
        launch = launch.env(k, *v);
    }
    let mut s = launch.start();
    let mut options = options;
    options["backend"] = json!("acp");
    s.initialize(dir, options);
    s
}

fn send(turn: &str, conversation: &str, messages: Value) -> Value {
    json!({"turnId": turn, "model": "auto", "mode": "ask", "conversationId": conversation, "messages": messages})
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "text": text})
}

/// How the ACP process `pid` ended, once its exit line is on record (`eof`: it read end of input
/// and exited; a process killed outright writes no exit line).
fn exit_reason(dir: &TestDir, pid: u64) -> Option<String> {
    dir.acp_records("exit")
        .iter()
        .find(|r| r["pid"].as_u64() == Some(pid))
        .map(|r| r["acp"]["exitReason"].as_str().unwrap_or("").to_owned())
}

fn ended_on_end_of_input(dir: &TestDir, pid: u64, within: Duration) -> bool {
    eventually(within, || exit_reason(dir, pid).is_some()) && exit_reason(dir, pid).as_deref() == Some("eof")
}

#[test]
fn an_agent_pushed_out_by_the_warm_limit_gets_end_of_input_before_it_dies() {
    let dir = TestDir::new();
    let mut s = start(&dir, &[], json!({"warmSessions": 1, "spares": 0}));
    let (_, r1) = s.chat(send("t1", "c1", json!([user("first conversation")])));
    assert!(r1.get("result").is_some(), "{r1}");
    let (_, first, _) = session_with_prompt(&dir, "first conversation");
    let (_, r2) = s.chat(send("t2", "c2", json!([user("second conversation")])));
    assert!(r2.get("result").is_some(), "{r2}");
    let (_, second, _) = session_with_prompt(&dir, "second conversation");
    assert_ne!(first, second, "one agent per conversation");
    assert!(
        ended_on_end_of_input(&dir, first, Duration::from_secs(5)),
        "the evicted agent {first} was not stopped through end of input: {:?}",
        exit_reason(&dir, first)
    );
    assert!(alive(second), "the conversation that pushed it out keeps its agent");
}

#[test]
fn an_idle_agent_gets_end_of_input_before_it_dies() {
    let dir = TestDir::new();
    let mut s = start(&dir, &[], json!({"warmIdleSeconds": 1, "spares": 0}));
    let (_, r1) = s.chat(send("t1", "c1", json!([user("soon idle")])));
    assert!(r1.get("result").is_some(), "{r1}");
    let (_, pid, _) = session_with_prompt(&dir, "soon idle");
    // Idle sessions are looked at every 5 s.
    assert!(
        ended_on_end_of_input(&dir, pid, Duration::from_secs(12)),
        "the idle agent {pid} was not stopped through end of input: {:?}",
        exit_reason(&dir, pid)
    );
}

#[test]
fn a_new_conversation_whose_first_turn_failed_does_not_push_a_warm_one_out() {
    let dir = TestDir::new();
    let mut s = start(&dir, &[], json!({"warmSessions": 1, "spares": 0}));
    let (_, r1) = s.chat(send("t1", "c1", json!([user("the real conversation")])));
    assert!(r1.get("result").is_some(), "{r1}");
    let (_, warm, _) = session_with_prompt(&dir, "the real conversation");
    let failing = directed("this one fails", json!({"fail": "rateLimit"}));
    let (_, r2) = s.chat(send("t2", "c2", json!([user(&failing)])));
    assert_eq!(error_kind(&r2), "rateLimited", "{r2}");
    // The failed session's agent is stopped (through end of input) rather than kept warm.
    let failed: Vec<u64> =
        dir.acp_records("start").iter().filter_map(|r| r["pid"].as_u64()).filter(|p| *p != warm).collect();
    assert_eq!(failed.len(), 1, "one agent for the failed conversation: {failed:?}");
    assert!(
        ended_on_end_of_input(&dir, failed[0], Duration::from_secs(5)),
        "the failed session's agent stayed warm: {:?}",
        exit_reason(&dir, failed[0])
    );
    // The real conversation continues in its warm agent: no new process, no `session/load`.
    let (d, r3) = s.chat(send(
        "t3",
        "c1",
        json!([user("the real conversation"), assistant("Echo: the real conversation"), user("still there?")]),
    ));
    assert_eq!(r3["result"]["resumed"], true, "{r3}");
    assert_eq!(text_of(&d), "Echo: still there?");
    let (_, pid, prompts) = session_with_prompt(&dir, "the real conversation");
    assert_eq!(pid, warm);
    assert_eq!(prompts, ["the real conversation", "still there?"]);
    assert!(alive(warm), "the warm agent was pushed out");
    assert_eq!(dir.acp_records("start").len(), 2, "no agent was started to load the conversation");
}
