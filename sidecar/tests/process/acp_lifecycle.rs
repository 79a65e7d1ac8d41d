//! What the ACP backend's warm agents leave behind (issue 21, items 6, 7 and 12): an agent that is
//! evicted gets end of input and a moment to save before it dies, as at shutdown; Stop and the end
//! of a turn stop what the turn started while the agent stays warm; a new session whose first turn
//! failed is not kept warm at the expense of real conversations. These pin `backend: "acp"`.

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
fn a_warm_agent_in_use_outlives_the_idle_sweep() {
    let dir = TestDir::new();
    let mut s = start(&dir, &[], json!({"spares": 0}));
    let (_, r1) = s.chat(send("t1", "c1", json!([user("still warm later")])));
    assert!(r1.get("result").is_some(), "{r1}");
    let (_, pid, _) = session_with_prompt(&dir, "still warm later");
    // Idle sessions are looked at every 5 s: one sweep passes, well inside `warmIdleSeconds`.
    std::thread::sleep(Duration::from_secs(6));
    let history = json!([user("still warm later"), assistant("Echo: still warm later"), user("and now?")]);
    let (d, r2) = s.chat(send("t2", "c1", history));
    assert_eq!(text_of(&d), "Echo: and now?", "{r2}");
    assert!(alive(pid), "the sweep stopped an agent that was not idle");
    assert_eq!(dir.acp_records("start").len(), 1, "the follow-up needed a new agent");
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

/// The grandchild the double's `turn`th turn started (cli-double README §8.4 `turnGrandchild`).
fn turn_grandchild(dir: &TestDir, turn: usize) -> u64 {
    let mut pid = None;
    let found = eventually(Duration::from_secs(10), || {
        pid = dir.acp_records("grandchild").get(turn).and_then(|r| r["grandchildPid"].as_u64());
        pid.is_some()
    });
    assert!(found, "the double's turn {turn} started no grandchild");
    pid.unwrap()
}

/// Stop (`$/cancelRequest`) during a turn that left a background process running: the process is
/// gone, the agent is not (the next turn runs in the same process and session). Both shapes of
/// a background job: a child of the agent, and one whose shell exited (re-parented to the sidecar,
/// still in the agent's process group).
#[test]
fn stop_ends_what_the_acp_turn_started_and_the_agent_stays_warm() {
    for via_shell in [false, true] {
        let dir = TestDir::new();
        // Every turn starts a background process and streams slowly (from the env scenario: the
        // interrupted message is sent again with the next one, so no directive may be in it).
        let scenario = json!({"turnGrandchild": true, "chunkChars": 1, "deltaDelayMs": 30}).to_string();
        let mut env = vec![("CURSOR_DOUBLE_SCENARIO", scenario.as_str())];
        if via_shell {
            env.push(("CURSOR_DOUBLE_GRANDCHILD_VIA_SHELL", "1"));
        }
        let mut s = start(&dir, &env, json!({"spares": 0}));
        let (_, r1) = s.chat(send("t1", "c1", json!([user("hello")])));
        assert!(r1.get("result").is_some(), "{r1}");
        let (_, agent, _) = session_with_prompt(&dir, "hello");
        let slow = format!("start the dev server and tell me a story: {}", "once upon a time ".repeat(20));
        let history = json!([user("hello"), assistant("Echo: hello"), user(&slow)]);
        let id = s.send_request("chat/send", send("t2", "c1", history.clone()));
        let mut saw_text = false;
        while !saw_text {
            let m = s.next_message(Duration::from_secs(10)).expect("the turn streams");
            saw_text = m["params"]["kind"] == "text";
        }
        let server = turn_grandchild(&dir, 1);
        assert!(alive(server), "the background process runs");
        s.notify("$/cancelRequest", json!({"id": id}));
        let r = s.response_within(&json!(id), Duration::from_secs(5));
        assert_eq!(r["error"]["code"], -32800, "{r}");
        assert!(
            eventually(Duration::from_secs(4), || !alive(server)),
            "the process the turn started outlived Stop (via shell: {via_shell})"
        );
        assert!(alive(agent), "Stop killed the warm agent itself (via shell: {via_shell})");
        // What the first turn left under the agent (kept when that turn ended normally) ends
        // with Stop too.
        let first = turn_grandchild(&dir, 0);
        assert!(
            eventually(Duration::from_secs(4), || !alive(first)),
            "what an earlier turn left under the agent outlived Stop (via shell: {via_shell})"
        );
        let mut next = history.as_array().unwrap().clone();
        next.extend([assistant("xxx"), user("are you still there?")]);
        let (d, r3) = s.chat(send("t3", "c1", json!(next)));
        assert_eq!(r3["result"]["resumed"], true, "{r3}");
        assert_eq!(text_of(&d), "Echo: are you still there?");
        assert!(alive(agent), "the next turn ran elsewhere");
        assert_eq!(dir.acp_records("start").len(), 1, "the next turn needed a new agent (via shell: {via_shell})");
    }
}

/// A turn that ends normally (Cursor's own tools, `tools: "cursor"`) leaves no job its shell
/// tools put in the background running (a shell that exited), as a print-mode turn does not; the
/// agent stays warm, and so does what still runs under it (an MCP server of the user's
/// configuration, connected after the session opened: here a child of the double).
#[test]
fn what_an_acp_turn_left_running_ends_with_the_turn() {
    for via_shell in [true, false] {
        let dir = TestDir::new();
        let env: &[(&str, &str)] = if via_shell { &[("CURSOR_DOUBLE_GRANDCHILD_VIA_SHELL", "1")] } else { &[] };
        let mut s = start(&dir, env, json!({"spares": 0}));
        let prompt = directed("start the watcher", json!({"turnGrandchild": true}));
        let (d, r1) = s.chat(send("t1", "c1", json!([user(&prompt)])));
        assert!(r1.get("result").is_some(), "{r1}");
        assert_eq!(text_of(&d), "Echo: start the watcher");
        let started = turn_grandchild(&dir, 0);
        let (_, agent, _) = session_with_prompt(&dir, &prompt);
        assert!(alive(agent), "the agent stays warm");
        if via_shell {
            assert!(eventually(Duration::from_secs(2), || !alive(started)), "the job the turn left outlived it");
        } else {
            std::thread::sleep(Duration::from_millis(300));
            assert!(alive(started), "the agent's own helper was killed at the end of a turn");
        }
    }
}
