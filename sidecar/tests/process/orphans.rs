//! Orphans: a process a turn's tool left behind whose parent exited is re-parented to the sidecar
//! (a child subreaper). It belongs to the turn that is still running it, so another turn's end
//! must not kill it; its own turn's end must.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

fn turn(id: &str, conversation: &str, text: &str) -> Value {
    json!({"turnId": id, "model": "auto", "mode": "ask", "conversationId": conversation, "messages": [user(text)]})
}

/// How the backends differ in this file's tests.
struct Expected {
    /// After its own turn ended: what becomes of the job the turn left behind.
    job_after_its_turn: fn(&mut Sidecar, u64),
}

const ON_PRINT: Expected = Expected {
    job_after_its_turn: |_, job| {
        assert!(eventually(Duration::from_secs(2), || !alive(job)), "turn A's background job {job} outlived turn A");
    },
};

/// On ACP the job is the long-lived process's, not the turn's: it lives while its process is kept
/// warm for the conversation, and dies with it.
const ON_ACP: Expected = Expected {
    job_after_its_turn: |s, job| {
        assert!(alive(job), "the end of A's turn killed its warm process's job {job}");
        assert!(s.request("shutdown", json!(null)).get("result").is_some());
        assert!(eventually(Duration::from_secs(3), || !alive(job)), "the job {job} outlived its ACP process");
    },
};

fn expected() -> &'static Expected {
    per_backend(&ON_PRINT, &ON_ACP)
}

fn ppid(pid: u64) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_running_turns_background_job_survives_another_turns_end_and_dies_with_its_own() {
    let dir = TestDir::new();
    // Grandchildren start through a shell that exits at once, like a tool leaving `cmd &` behind.
    let launch = Launch::new(&dir).env("CURSOR_DOUBLE_GRANDCHILD_VIA_SHELL", "1");
    let mut s = grandchild_env(launch, json!({"grandchild": true})).start();
    s.initialize(&dir, json!({"spares": 0, "maxConcurrent": 4}));
    let sidecar = s.child.id();

    // Turn A streams for ~8 s and leaves a background job in its process group.
    let slow = json!({"grandchild": true, "answer": "a".repeat(80), "chunkChars": 1, "deltaDelayMs": 100});
    let a = s.send_request("chat/send", turn("a", "conv-a", &directed("long job", slow)));
    let rec = wait_for_process_record(&dir, 1);
    let (cli_a, job) =
        (rec["pid"].as_u64().unwrap(), rec["grandchildPid"].as_u64().expect("the double started the job"));
    assert!(
        eventually(Duration::from_secs(5), || ppid(job) == Some(sidecar)),
        "the job's shell exited, so the job should be the sidecar's (subreaper) child: ppid {:?}",
        ppid(job)
    );

    // Turn B runs and ends while A still runs; its end sweeps for orphans.
    let (_, rb) = s.chat(turn("b", "conv-b", "quick"));
    assert!(rb.get("result").is_some(), "{rb}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(alive(cli_a), "turn A ended too early for this test (the machine is too slow?)");
    assert!(alive(job), "turn B's end killed turn A's background job {job}");

    let ra = s.response(&json!(a));
    assert!(ra.get("result").is_some(), "{ra}");
    (expected().job_after_its_turn)(&mut s, job);
}
