//! Protocol abuse: bytes a broken or hostile client might send. Each is answered as JSON-RPC says
//! (or ignored, for notifications), and a sentinel request right after it is answered: the sidecar
//! never crashes or wedges. Prints `protocol abuse: N frames sent, N survived`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// What the sidecar must answer to an abusive input.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// An error with this code and `id: null`.
    NullIdError(i32),
    /// An error with this code for the request's own id.
    Error(i32),
    /// Nothing (a notification, or a cancel for an unknown id).
    Silence,
    /// Anything, as long as the sidecar keeps serving (the framing itself is ambiguous).
    AnyThenServe,
}

fn framed(body: &str) -> Vec<u8> {
    frame(body.as_bytes())
}

fn cases() -> Vec<(&'static str, Vec<u8>, Expect)> {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let mut not_utf8 = b"Content-Length: 4\r\n\r\n".to_vec();
    not_utf8.extend_from_slice(&[0xff, 0xfe, 0x80, 0x81]);
    let big_string = format!(
        r#"{{"jsonrpc":"2.0","id":77,"method":"chat/send","params":{{"turnId":"x","text":"{}"}}}}"#,
        "a".repeat(8 << 20)
    );
    vec![
        ("invalid JSON", framed("{not json"), Expect::NullIdError(-32700)),
        ("empty body", framed(""), Expect::NullIdError(-32700)),
        ("JSON that is not an object", framed("42"), Expect::NullIdError(-32600)),
        ("batch", framed(r#"[{"jsonrpc":"2.0","id":1,"method":"status"}]"#), Expect::NullIdError(-32600)),
        ("empty batch", framed("[]"), Expect::NullIdError(-32600)),
        ("nesting 10,000 deep", framed(&deep), Expect::NullIdError(-32600)),
        ("body not UTF-8", not_utf8, Expect::NullIdError(-32700)),
        ("header without a colon", b"Content-Length 5\r\n\r\n".to_vec(), Expect::NullIdError(-32700)),
        ("negative Content-Length", b"Content-Length: -4\r\n\r\n".to_vec(), Expect::NullIdError(-32700)),
        ("no Content-Length", b"Content-Type: application/json\r\n\r\n".to_vec(), Expect::NullIdError(-32700)),
        // An oversized length's body is counted off, so a bogus one takes the rest of the stream:
        // those cases have tests of their own below.
        (
            "Content-Length too short",
            b"Content-Length: 5\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"status\"}".to_vec(),
            Expect::AnyThenServe,
        ),
        ("plain text typed at a terminal", b"hello sidecar\n\n".to_vec(), Expect::AnyThenServe),
        ("missing jsonrpc version", framed(r#"{"id":5,"method":"status"}"#), Expect::Error(-32600)),
        ("wrong jsonrpc version", framed(r#"{"jsonrpc":"1.0","id":5,"method":"status"}"#), Expect::Error(-32600)),
        ("object id", framed(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"status"}"#), Expect::NullIdError(-32600)),
        ("method not a string", framed(r#"{"jsonrpc":"2.0","id":6,"method":7}"#), Expect::NullIdError(-32600)),
        ("unknown method", framed(r#"{"jsonrpc":"2.0","id":7,"method":"no/such"}"#), Expect::Error(-32601)),
        (
            "wrong param types",
            framed(
                r#"{"jsonrpc":"2.0","id":8,"method":"chat/send","params":{"turnId":1,"model":[],"mode":"x","messages":"y"}}"#,
            ),
            Expect::Error(-32602),
        ),
        (
            "params as a string",
            framed(r#"{"jsonrpc":"2.0","id":10,"method":"models/list","params":"refresh"}"#),
            Expect::Error(-32602),
        ),
        (
            "unknown option",
            framed(
                r#"{"jsonrpc":"2.0","id":11,"method":"initialize","params":{"protocolVersion":1,"options":{"bogus":1}}}"#,
            ),
            Expect::Error(-32602),
        ),
        (
            "second initialize",
            framed(r#"{"jsonrpc":"2.0","id":12,"method":"initialize","params":{"protocolVersion":1}}"#),
            Expect::Error(-32602),
        ),
        ("a response sent to the server", framed(r#"{"jsonrpc":"2.0","id":13,"result":{}}"#), Expect::Error(-32600)),
        (
            "cancel for an unknown id",
            framed(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":424242}}"#),
            Expect::Silence,
        ),
        ("cancel without params", framed(r#"{"jsonrpc":"2.0","method":"$/cancelRequest"}"#), Expect::Silence),
        (
            "unknown notification",
            framed(r#"{"jsonrpc":"2.0","method":"$/setTrace","params":{"value":"verbose"}}"#),
            Expect::Silence,
        ),
        ("8 MiB frame with bad params", framed(&big_string), Expect::Error(-32602)),
    ]
}

fn check(s: &mut Sidecar, name: &str, bytes: &[u8], expect: Expect, sentinel_id: u64) -> Result<(), String> {
    s.send_raw(bytes);
    let sentinel = json!({"jsonrpc": "2.0", "id": sentinel_id, "method": "sessions/list"});
    s.send(&sentinel);
    let mut seen: Vec<Value> = Vec::new();
    let mut answered = false;
    for attempt in 0..3 {
        while let Some(m) = s.next_message(Duration::from_secs(if attempt == 0 { 10 } else { 2 })) {
            if m["id"] == json!(sentinel_id) && m.get("result").is_some() {
                answered = true;
                break;
            }
            seen.push(m);
        }
        if answered {
            break;
        }
        // An ambiguous frame may have swallowed the sentinel; a second one must get through.
        if matches!(expect, Expect::AnyThenServe) {
            s.send(&sentinel);
        } else {
            break;
        }
    }
    if !answered {
        return Err(format!("{name}: sentinel not answered; saw {seen:?}"));
    }
    let met = |seen: &[Value]| match expect {
        Expect::NullIdError(code) => seen.iter().any(|m| m["error"]["code"] == code && m["id"].is_null()),
        Expect::Error(code) => seen.iter().any(|m| m["error"]["code"] == code && !m["id"].is_null()),
        Expect::Silence => seen.is_empty(),
        Expect::AnyThenServe => seen.iter().all(|m| m.get("error").is_some()),
    };
    // Requests run concurrently, so the answer to the abusive one may come after the sentinel's.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !met(&seen) && !matches!(expect, Expect::Silence) && std::time::Instant::now() < deadline {
        if let Some(m) = s.next_message(Duration::from_millis(200)) {
            seen.push(m);
        }
    }
    if matches!(expect, Expect::Silence) {
        while let Some(m) = s.next_message(Duration::from_millis(200)) {
            seen.push(m);
        }
    }
    let ok = met(&seen);
    if ok {
        Ok(())
    } else {
        Err(format!("{name}: expected {expect:?}, saw {seen:?}"))
    }
}

#[test]
fn abusive_frames_are_answered_and_survived() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    // Before initialize: refused, not crashed.
    let r = s.request("status", json!(null));
    assert_eq!(r["error"]["code"], -32002, "{r}");
    s.initialize(&dir, json!({}));

    let cases = cases();
    let mut failures = Vec::new();
    for (i, (name, bytes, expect)) in cases.iter().enumerate() {
        if let Err(e) = check(&mut s, name, bytes, *expect, 10_000 + i as u64) {
            failures.push(e);
        }
    }
    // Duplicate id while the first request is still running.
    let slow = json!({"turnId": "d", "model": "auto", "mode": "agent", "messages": [user(&directed("x", json!({"startupMs": 800})))]});
    s.send(&json!({"jsonrpc": "2.0", "id": 555, "method": "chat/send", "params": slow}));
    s.send(&json!({"jsonrpc": "2.0", "id": 555, "method": "sessions/list"}));
    // Two answers for id 555, in this order: the refusal of the duplicate, then the turn's result.
    let mut for_555 = Vec::new();
    while for_555.len() < 2 {
        let Some(m) = s.next_message(TIMEOUT) else { break };
        if m["id"] == 555 {
            for_555.push(m);
        }
    }
    let dup_ok = for_555.len() == 2 && for_555[0]["error"]["code"] == -32600 && for_555[1].get("result").is_some();
    if !dup_ok {
        failures.push(format!("duplicate id: answers {for_555:?}"));
    }
    let sent = cases.len() + 2;
    let survived = sent - failures.len();
    let summary = format!("protocol abuse: {sent} frames sent, {survived} survived");
    report("protocol-abuse", &summary);
    assert!(failures.is_empty(), "{summary}\n{}", failures.join("\n"));
    assert!(s.finish().success());
}

#[test]
fn a_truncated_frame_at_end_of_input_ends_cleanly() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    s.send_raw(b"Content-Length: 100\r\n\r\n{\"jsonrpc\":\"2.0\",");
    assert_eq!(s.finish().code(), Some(0));
}

/// The sidecar's frame cap (`stdio/transport.rs`, protocol.md "Framing").
const MAX_FRAME: usize = 64 * 1024 * 1024;

#[test]
fn an_oversized_frame_is_skipped_whole_and_a_frame_inside_it_is_not_run() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    // A body one byte over the cap that starts with a complete, valid request (a pasted log, a
    // hostile client): the request inside must not run, the frame after the body must.
    let inner = framed(r#"{"jsonrpc":"2.0","id":4242,"method":"sessions/list"}"#);
    let mut bytes = format!("Content-Length: {}\r\n\r\n", MAX_FRAME + 1).into_bytes();
    bytes.extend_from_slice(&inner);
    bytes.resize(bytes.len() + MAX_FRAME + 1 - inner.len(), b' ');
    s.send_raw(&bytes);
    let after = s.send_request("sessions/list", json!(null));
    let mut seen = Vec::new();
    while !seen.iter().any(|m: &Value| m["id"] == after) {
        seen.push(s.next_message(TIMEOUT).unwrap_or_else(|| panic!("no answer after the oversized frame: {seen:?}")));
    }
    while let Some(m) = s.next_message(Duration::from_millis(300)) {
        seen.push(m);
    }
    assert!(seen.iter().all(|m| m["id"] != 4242), "the frame inside the skipped body ran: {seen:?}");
    let refused: Vec<&Value> = seen.iter().filter(|m| m["error"]["code"] == -32600 && m["id"].is_null()).collect();
    assert_eq!(refused.len(), 1, "one -32600 for the oversized frame: {seen:?}");
    assert_eq!(s.finish().code(), Some(0));
}

#[test]
fn a_bogus_huge_length_takes_the_rest_of_the_input_and_end_of_input_still_exits_0() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    s.send_raw(b"Content-Length: 18446744073709551615\r\n\r\n{}");
    let refused = s.next_message(TIMEOUT).expect("the oversized frame is answered");
    assert_eq!((refused["error"]["code"].as_i64(), refused["id"].is_null()), (Some(-32600), true), "{refused}");
    // What follows is that frame's body, as LSP framing says: skipped, not run.
    s.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "sessions/list"}));
    assert_eq!(s.next_message(Duration::from_millis(500)), None);
    assert_eq!(s.finish().code(), Some(0));
}

/// A closed terminal (SIGHUP) ends the sidecar like SIGTERM: the turn in flight is answered, every
/// child is stopped, and the exit code is 0.
#[test]
fn sighup_mid_turn_answers_the_turn_stops_every_child_and_exits_0() {
    let dir = TestDir::new();
    let mut s = grandchild_env(Launch::new(&dir), json!({"grandchild": true})).start();
    s.initialize(&dir, json!({}));
    let turn = s.send_request("chat/send", json!({"turnId": "h", "model": "auto", "mode": "agent", "messages": [user(&directed("go", json!({"hang": "midStream", "grandchild": true})))]}));
    let rec = wait_for_process_record(&dir, 1);
    let pid = s.child.id();
    assert!(eventually(Duration::from_secs(5), || !descendants(pid).is_empty()), "the turn's CLI is running");
    let everything = descendants(pid);
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(pid as i32, libc::SIGHUP) };
    let status = wait_with_timeout(&mut s.child, TIMEOUT).expect("SIGHUP ends the sidecar");
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(
        eventually(Duration::from_secs(3), || everything.iter().all(|p| !alive(*p as u64))),
        "children outlived the sidecar"
    );
    assert!(!alive(rec["grandchildPid"].as_u64().unwrap()));
    let answer = s.response_within(&json!(turn), Duration::from_secs(5));
    assert_eq!(
        (answer["error"]["code"].as_i64(), answer["error"]["message"].as_str()),
        (Some(-32800), Some("the sidecar is shutting down")),
        "{answer}"
    );
}

/// Started with SIGHUP ignored (`nohup`), the sidecar keeps it ignored: the person asked for it
/// to outlive the terminal.
#[test]
fn a_sidecar_started_under_nohup_survives_sighup() {
    use std::io::{Read, Write};
    use std::os::unix::process::CommandExt;
    let dir = TestDir::new();
    let mut cmd = launcher(&dir, "debug").command();
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
    // SAFETY: signal(2) is async-signal-safe; this is what `nohup` does before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("start cursor-bridge");
    let mut stdin = child.stdin.take().unwrap();
    // An answer shows the loop (and whatever signal handling it sets up) is running.
    stdin.write_all(&framed(r#"{"jsonrpc":"2.0","id":1,"method":"status"}"#)).unwrap();
    let mut byte = [0u8; 1];
    child.stdout.as_mut().unwrap().read_exact(&mut byte).expect("an answer");
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    // A sidecar that does stop on it takes over half a second to exit (the runtime's wind-down).
    let ended = eventually(Duration::from_secs(2), || child.try_wait().unwrap().is_some());
    assert!(!ended, "a SIGHUP the sidecar was started to ignore ended it");
    drop(stdin);
    let status = wait_with_timeout(&mut child, TIMEOUT).expect("end of input ends it");
    assert_eq!(status.code(), Some(0));
}
