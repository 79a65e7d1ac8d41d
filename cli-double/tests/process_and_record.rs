//! The invocation record and process-level behaviour (hangs, SIGTERM, grandchildren).

mod common;

use std::time::{Duration, Instant};

use common::*;

fn records(path: &std::path::Path) -> Vec<Json> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| Json::parse(l).expect("record line is JSON"))
        .collect()
}

#[test]
fn records_a_one_mebibyte_stdin_intact() {
    let path = temp_path("record.jsonl");
    let mut prompt = String::new();
    let mut i = 0;
    while prompt.len() < (1 << 20) + 100 {
        prompt.push_str(&format!("line {i}: naïve 👩\u{200d}💻 \"quoted\" \\ tab\t\r\n"));
        i += 1;
    }
    let out = double()
        .args(["-p", "--trust", "--output-format", "json"])
        .env("CURSOR_DOUBLE_RECORD", path.to_str().unwrap())
        .env("CURSOR_API_KEY", "sekrit")
        .env("NO_COLOR", "1")
        .stdin(prompt.clone())
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr());
    let recs = records(&path);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(str_at(r, &["stdin"]), Some(prompt.as_str()));
    assert_eq!(r.get("stdinBytes"), Some(&Json::from(prompt.len())));
    assert_eq!(str_at(r, &["subcommand"]), Some("print"));
    assert_eq!(r.get("argv"), Some(&Json::Arr(["-p", "--trust", "--output-format", "json"].map(Json::from).to_vec())));
    assert_eq!(str_at(r, &["env", "CURSOR_API_KEY"]), Some("sekrit"));
    assert_eq!(str_at(r, &["env", "NO_COLOR"]), Some("1"));
    assert!(r.get("env").unwrap().get("FORCE_COLOR").is_none());
    assert_eq!(r.get("grandchildPid"), Some(&Json::Null));
    // Names only: the key's name is there, its value is not.
    let Some(Json::Arr(names)) = r.get("envNames") else { panic!("envNames: {r:?}") };
    assert!(names.iter().any(|n| n.as_str() == Some("CURSOR_API_KEY")));
    assert!(!names.iter().any(|n| n.as_str() == Some("sekrit")));
    let keys: Vec<&str> = r.as_object().unwrap().iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(&keys[..8], ["pid", "ppid", "pgid", "argv", "cwd", "subcommand", "stdin", "stdinBytes"]);
    let _ = std::fs::remove_file(path);
}

#[test]
fn concurrent_records_never_interleave() {
    let path = temp_path("concurrent.jsonl");
    let handles: Vec<_> = (0..8)
        .map(|n| {
            let path = path.clone();
            std::thread::spawn(move || {
                double()
                    .args(["-p", "--trust"])
                    .env("CURSOR_DOUBLE_RECORD", path.to_str().unwrap())
                    .stdin(format!("{n}").repeat(300_000))
                    .run()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().code, Some(0));
    }
    let recs = records(&path);
    assert_eq!(recs.len(), 8);
    assert!(recs.iter().all(|r| r.get("stdinBytes") == Some(&Json::from(300_000u64))));
    // Other subcommands are recorded too, with stdin null.
    double().args(["models"]).env("CURSOR_DOUBLE_RECORD", path.to_str().unwrap()).run();
    let last = records(&path).pop().unwrap();
    assert_eq!((str_at(&last, &["subcommand"]), last.get("stdin")), (Some("models"), Some(&Json::Null)));
    let _ = std::fs::remove_file(path);
}

/// Waits until the double has written its record (it is then past startup and stdin).
#[cfg(unix)] // its callers signal the double
fn wait_for_record(path: &std::path::Path) -> Json {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(r) = records(path).pop() {
            return r;
        }
        assert!(Instant::now() < deadline, "no record written");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(target_os = "linux")] // its one caller reads /proc
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[cfg(unix)]
#[test]
fn hang_and_ignored_sigterm() {
    use std::process::Stdio;
    let path = temp_path("hang.jsonl");
    let mut child = double()
        .args(["-p", "--trust", "hi"])
        .env("CURSOR_DOUBLE_RECORD", path.to_str().unwrap())
        .env("CURSOR_DOUBLE_SCENARIO", r#"{"hang":"beforeOutput","ignoreSigterm":true}"#)
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_record(&path);
    let pid = child.id() as i32;
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "SIGTERM must be ignored");
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_file(path);
}

#[cfg(target_os = "linux")]
fn pgid_and_sid(pid: i32) -> (i32, i32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the `(comm)`: state ppid pgrp session ...
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    (f[2].parse().unwrap(), f[3].parse().unwrap())
}

#[cfg(target_os = "linux")]
#[test]
fn grandchild_stays_in_or_escapes_the_process_group() {
    for (escapes, scenario) in [(false, r#"{"grandchild":true}"#), (true, r#"{"grandchildEscapes":true}"#)] {
        let path = temp_path("gc.jsonl");
        let out = double()
            .args(["-p", "--trust"])
            .env("CURSOR_DOUBLE_RECORD", path.to_str().unwrap())
            .env("CURSOR_DOUBLE_SCENARIO", scenario)
            .stdin("x")
            .run();
        assert_eq!(out.code, Some(0));
        let r = records(&path).pop().unwrap();
        let gc = match r.get("grandchildPid") {
            Some(Json::Num(n)) => n.as_i64().unwrap() as i32,
            other => panic!("no grandchild pid: {other:?}"),
        };
        let double_pgid = match r.get("pgid") {
            Some(Json::Num(n)) => n.as_i64().unwrap() as i32,
            _ => unreachable!(),
        };
        assert!(alive(gc), "grandchild outlives the double");
        let (pgid, sid) = pgid_and_sid(gc);
        if escapes {
            assert_eq!((pgid, sid), (gc, gc), "setsid() makes it a session and group leader");
        } else {
            assert_eq!(pgid, double_pgid);
        }
        // SAFETY: kill(2) on the grandchild we just started.
        unsafe { libc::kill(gc, libc::SIGKILL) };
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn startup_delay_happens_before_stdin_is_read() {
    let start = Instant::now();
    let out = double().args(["-p", "--trust"]).env("CURSOR_DOUBLE_STARTUP_MS", "300").stdin("x").run();
    assert_eq!(out.code, Some(0));
    assert!(start.elapsed() >= Duration::from_millis(300));
}

#[test]
fn close_stdin_early_answers_from_positional_prompt() {
    let out = double()
        .args(["-p", "--trust", "from argv"])
        .env("CURSOR_DOUBLE_SCENARIO", r#"{"closeStdinEarly":true}"#)
        .stdin(vec![b'z'; 4 << 20])
        .run();
    assert_eq!((out.code, out.stdout()), (Some(0), "Echo: from argv\n".to_owned()));
}

#[test]
fn stderr_flood_does_not_block_a_draining_parent() {
    let out = double().args(["-p", "--trust"]).stdin("x [[double:{\"stderrBytes\":1000000}]]").run();
    assert_eq!(out.code, Some(0));
    assert_eq!(out.stderr.len(), 1_000_000);
    assert_eq!(out.stdout(), "Echo: x\n");
}

#[test]
fn directive_startup_delay_keeps_the_recorded_process_alive() {
    let path = temp_path("startup.jsonl");
    let start = Instant::now();
    let out = double()
        .args(["-p", "--trust"])
        .env("CURSOR_DOUBLE_RECORD", path.to_str().unwrap())
        .stdin("go [[double:{\"startupMs\":300}]]")
        .run();
    assert_eq!(out.stdout(), "Echo: go\n");
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(records(&path).len(), 1);
    let _ = std::fs::remove_file(path);
}
