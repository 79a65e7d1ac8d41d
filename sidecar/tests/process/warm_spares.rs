//! Warm spares: after a turn, a CLI process for the likely follow-up is already started (its boot
//! done) and waiting for the prompt; the follow-up uses it, anything else does not, and spares
//! never outlive the sidecar.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// How the backends differ in this file's tests.
struct Expected {
    /// These are print mode's spares (`-p` processes waiting for a prompt on stdin); ACP keeps the
    /// conversation's own process and opens sessions ahead instead, tested in `acp_backend`.
    spares_of_print_mode: Option<&'static str>,
}

const ON_PRINT: Expected = Expected { spares_of_print_mode: None };

const ON_ACP: Expected = Expected {
    spares_of_print_mode: Some(
        "print-mode spares (`-p` processes started ahead); ACP's warm sessions and sessions opened ahead are acp_backend::a_follow_up_runs_in_the_same_warm_session_and_sends_only_the_new_message and acp_backend::a_new_conversation_uses_the_session_opened_ahead",
    ),
};

fn expected() -> &'static Expected {
    per_backend(&ON_PRINT, &ON_ACP)
}

fn turn(id: &str, model: &str, messages: Value) -> Value {
    json!({"turnId": id, "model": model, "mode": "agent", "conversationId": "conv", "messages": messages})
}

/// CLI processes under the sidecar once the background work (prefetch, spare start) settled.
/// The CLI processes started for turns (`-p`), after a moment to settle. A `create-chat` that a
/// chat-id refill has running at that moment is not a spare, so it is not counted.
fn settled_children(s: &Sidecar) -> BTreeSet<u32> {
    std::thread::sleep(Duration::from_millis(500));
    descendants(s.child.id())
        .into_iter()
        .filter(|pid| {
            let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            argv.split(|b| *b == 0).any(|arg| arg == b"-p")
        })
        .collect()
}

#[test]
fn the_follow_up_turn_runs_on_the_spare_started_after_the_first() {
    if skipped(expected().spares_of_print_mode) {
        return;
    }
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_STARTUP_MS", "300").start();
    s.initialize(&dir, json!({}));
    let (_, r1) = s.chat(turn("t1", "auto", json!([user("first")])));
    assert!(r1.get("result").is_some(), "{r1}");
    let spares = settled_children(&s);
    assert_eq!(spares.len(), 1, "one spare by default: {spares:?}");

    let (d2, r2) = s.chat(turn("t2", "auto", json!([user("first"), assistant("Echo: first"), user("second")])));
    assert_eq!(r2["result"]["resumed"], true, "{r2}");
    assert_eq!(text_of(&d2), "Echo: second");
    let used = dir.turns()[1]["pid"].as_u64().unwrap() as u32;
    assert!(spares.contains(&used), "turn 2 ran on pid {used}, spares were {spares:?}");
    assert_eq!(dir.turns()[1]["stdin"], "second", "the spare got the prompt on stdin");

    // Another model is another command line: the spare is not used for it.
    let before = settled_children(&s);
    let (_, r3) = s.chat(turn(
        "t3",
        "gpt-5.6-sol",
        json!([user("first"), assistant("Echo: first"), user("second"), assistant("Echo: second"), user("third")]),
    ));
    assert!(r3.get("result").is_some(), "{r3}");
    let used3 = dir.turns()[2]["pid"].as_u64().unwrap() as u32;
    assert!(!before.contains(&used3), "a spare for another model was used");
    assert!(settled_children(&s).len() <= 1, "spares are bounded by the limit");

    assert!(s.request("shutdown", json!(null)).get("result").is_some());
    assert!(eventually(Duration::from_secs(3), || descendants(s.child.id()).is_empty()), "spare survived shutdown");
}

#[test]
fn spares_can_be_turned_off() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({"spares": 0}));
    s.chat(turn("t1", "auto", json!([user("first")])));
    assert!(settled_children(&s).is_empty());
}

#[test]
fn a_new_conversation_can_use_a_fresh_spare_with_its_own_chat() {
    if skipped(expected().spares_of_print_mode) {
        return;
    }
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_STARTUP_MS", "300").start();
    s.initialize(&dir, json!({"spares": 2}));
    s.chat(turn("t1", "auto", json!([user("first")])));
    let spares = settled_children(&s);
    assert_eq!(spares.len(), 2, "a follow-up spare and a fresh one: {spares:?}");
    let (_, r) = s.chat(json!({"turnId": "n", "model": "auto", "mode": "agent", "conversationId": "other", "messages": [user("new chat")]}));
    assert_eq!(r["result"]["resumed"], false, "{r}");
    let rec = &dir.turns()[1];
    assert!(spares.contains(&(rec["pid"].as_u64().unwrap() as u32)), "the new conversation used the fresh spare");
    let chats: BTreeSet<String> =
        dir.turns().iter().map(|t| t["sessionId"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(chats.len(), 2, "two conversations, two chats: {chats:?}");
}
