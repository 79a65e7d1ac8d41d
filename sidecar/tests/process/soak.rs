//! Soak: 1,000 turns through one sidecar, 8 at a time, mixing answers, cancels, crashes and
//! timeouts. Afterwards every turn was answered exactly once, no process is left, and the
//! sidecar's open file descriptors (beyond those of its live children) and RSS are back near where
//! they started. Prints `soak: N turns, N answered, leaked processes = 0, fds a → b (…), rss a → b KiB`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

const TURNS: usize = 1000;
const AT_ONCE: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Answer,
    Cancel,
    Crash,
    Timeout,
}

fn kind_of(i: usize) -> Kind {
    match i % 20 {
        0 | 7 | 13 => Kind::Cancel,
        3 | 11 => Kind::Crash,
        17 => Kind::Timeout,
        _ => Kind::Answer,
    }
}

fn prompt(i: usize, kind: Kind) -> String {
    match kind {
        Kind::Answer => directed("go", json!({"answer": format!("answer {i} ✓"), "chunkChars": 4})),
        Kind::Cancel => directed(
            "go",
            json!({"answer": "z".repeat(100), "chunkChars": 1, "deltaDelayMs": 20, "grandchild": i.is_multiple_of(2)}),
        ),
        Kind::Crash => directed("go", json!({"answer": "crash soon", "chunkChars": 2, "crashAfterDeltas": 2})),
        Kind::Timeout => directed("go", json!({"hang": "midStream", "answer": "then silence"})),
    }
}

fn fd_targets(pid: u32) -> Vec<(String, String)> {
    let dir = format!("/proc/{pid}/fd");
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let target = std::fs::read_link(e.path()).ok()?.to_string_lossy().into_owned();
            Some((e.file_name().to_string_lossy().into_owned(), target))
        })
        .collect()
}

/// `(all, own)`: the sidecar's open file descriptors, and those that are not a live child's. A
/// warm agent or spare holds its pipes and pidfd for as long as it lives, and how many are alive
/// at a given moment depends on timing (on ACP every conversation keeps one warm), so a leak is
/// what is left beyond them: a pipe no descendant holds the other end of, a pidfd of a process
/// that is not a descendant, anything else.
fn fd_counts(pid: u32) -> (usize, usize) {
    let kids = descendants(pid);
    let kid_pipes: std::collections::HashSet<String> =
        kids.iter().flat_map(|k| fd_targets(*k)).map(|(_, target)| target).filter(|t| t.starts_with("pipe:")).collect();
    let mine = fd_targets(pid);
    let theirs = mine
        .iter()
        .filter(|(fd, target)| {
            if target.starts_with("pipe:") {
                return kid_pipes.contains(target);
            }
            if target == "anon_inode:[pidfd]" {
                let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap_or_default();
                let of = info.lines().find_map(|l| l.strip_prefix("Pid:")).and_then(|p| p.trim().parse::<u32>().ok());
                return of.is_some_and(|p| kids.contains(&p));
            }
            false
        })
        .count();
    (mine.len(), mine.len() - theirs)
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(str::to_string))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

#[test]
#[ignore = "heavy tier (1,000 turns, over a minute): `cargo xtask test` runs it; alone: `cargo test -p cursor-bridge --test process -- --ignored soak_1000_turns`"]
fn soak_1000_turns() {
    let dir = TestDir::new();
    // Debug logging would make the log file the thing under test; keep the default level.
    let mut s = Launch { log_level: "", ..Launch::new(&dir) }.start();
    s.initialize(&dir, json!({"idleTimeoutSeconds": 1, "maxConcurrent": AT_ONCE}));
    let pid = s.child.id();
    let started = Instant::now();

    let mut next = 0usize;
    let mut in_flight: HashMap<u64, (usize, Kind)> = HashMap::new();
    let mut answers: HashMap<u64, usize> = HashMap::new();
    let mut wrong = Vec::new();
    let mut baseline = None;
    let deadline = Instant::now() + Duration::from_secs(600);

    while (next < TURNS || !in_flight.is_empty()) && Instant::now() < deadline {
        while next < TURNS && in_flight.len() < AT_ONCE {
            let kind = kind_of(next);
            let params = json!({"turnId": format!("s{next}"), "model": "auto", "mode": "agent", "messages": [user(&prompt(next, kind))]});
            let id = s.send_request("chat/send", params);
            if kind == Kind::Cancel {
                s.notify("$/cancelRequest", json!({"id": id}));
            }
            in_flight.insert(id, (next, kind));
            next += 1;
        }
        let Some(m) = s.next_message(Duration::from_secs(5)) else { continue };
        let Some(id) = m["id"].as_u64() else { continue }; // a delta
        *answers.entry(id).or_insert(0) += 1;
        let Some((i, kind)) = in_flight.remove(&id) else {
            wrong.push(format!("answer for an unknown or finished request: {m}"));
            continue;
        };
        let got = if m.get("result").is_some() {
            "ok".to_string()
        } else {
            m["error"]["data"]["kind"].as_str().unwrap_or("?").to_string()
        };
        let fine = match kind {
            Kind::Answer => got == "ok",
            // A cancel may lose the race against a quick turn; either single answer is right.
            Kind::Cancel => got == "cancelled" || got == "ok",
            Kind::Crash => got == "network",
            Kind::Timeout => got == "timeout",
        };
        if !fine {
            wrong.push(format!("turn {i} ({kind:?}) answered {got}: {m}"));
        }
        if i == 100 && baseline.is_none() {
            // After warm-up (allocator arenas, caches), not at a cold start.
            baseline = Some((fd_counts(pid), rss_kib(pid)));
        }
    }
    // Stragglers: a second answer to anything would show up here.
    while let Some(m) = s.next_message(Duration::from_millis(500)) {
        if let Some(id) = m["id"].as_u64() {
            *answers.entry(id).or_insert(0) += 1;
        }
    }
    s.notifications.clear();

    let answered_once = answers.values().filter(|n| **n == 1).count();
    let twice: Vec<_> = answers.iter().filter(|(_, n)| **n > 1).collect();
    // Measure before shutdown (spares are part of a running sidecar), count leftovers after it.
    std::thread::sleep(Duration::from_millis(300));
    let ((all1, fd1), rss1) = (fd_counts(pid), rss_kib(pid));
    assert!(s.request("shutdown", json!(null)).get("result").is_some());
    let leftover = {
        let mut left = descendants(pid);
        let until = Instant::now() + Duration::from_secs(5);
        while !left.is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
            left = descendants(pid);
        }
        left
    };
    let ((all0, fd0), rss0) = baseline.unwrap_or(((0, 0), 0));
    let summary = format!(
        "soak: {TURNS} turns, {answered_once} answered, leaked processes = {}, fds {fd0} → {fd1} (with live children's {all0} → {all1}), rss {rss0} → {rss1} KiB, {:.1} s",
        leftover.len(),
        started.elapsed().as_secs_f64()
    );
    report("soak", &summary);

    assert!(wrong.is_empty(), "{summary}\n{}", wrong.join("\n"));
    assert!(twice.is_empty(), "answered more than once: {twice:?}");
    assert_eq!(answered_once, TURNS, "{summary}");
    assert!(leftover.is_empty(), "processes left: {leftover:?}");
    assert!(fd1 <= fd0 + 4, "file descriptors grew: {summary}");
    assert!(rss1 <= rss0 + rss0 / 2 + 4096, "RSS grew: {summary}");
    assert!(s.finish().success());
}
