//! The fault matrix: every way the CLI can misbehave (tests/fixtures/faults.json, plus the cases
//! that need their own set-up below) must end in a typed error or a correct answer, keep the
//! sidecar serving, and leave no CLI process, grandchild or zombie behind (counted through /proc).
//! Prints `fault matrix: N faults tried, N survived, leaked processes = 0`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

struct Tally {
    tried: usize,
    survived: usize,
    leaked: usize,
    failures: Vec<String>,
}

impl Tally {
    fn new() -> Self {
        Tally { tried: 0, survived: 0, leaked: 0, failures: Vec::new() }
    }
    fn record(&mut self, name: &str, problems: Vec<String>, leaked: usize) {
        self.tried += 1;
        self.leaked += leaked;
        if problems.is_empty() && leaked == 0 {
            self.survived += 1;
        } else {
            self.failures.push(format!("{name}: {} (leaked {leaked})", problems.join("; ")));
        }
    }
}

/// Processes under the sidecar (any state, zombies included) once things settle.
fn leftover_processes(sidecar_pid: u32) -> Vec<u32> {
    let mut left = descendants(sidecar_pid);
    let deadline = Instant::now() + Duration::from_secs(3);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        left = descendants(sidecar_pid);
    }
    left
}

/// `pid (argv) state ppid=…` from /proc, for a leak report.
fn describe_process(pid: u64) -> String {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // A zombie has no argv: its name (between the parentheses) still says what it was.
    let name = stat.find('(').zip(stat.rfind(')')).map(|(a, b)| &stat[a + 1..b]).unwrap_or("?");
    let rest = stat.rfind(')').map(|i| &stat[i + 1..]).unwrap_or("");
    let mut fields = rest.split_whitespace();
    let (state, ppid) = (fields.next().unwrap_or("?"), fields.next().unwrap_or("?"));
    format!("{pid} {name} ({}) state {state} ppid={ppid}", String::from_utf8_lossy(&cmd).replace('\0', " ").trim())
}

fn pids_of_turns(dir: &TestDir) -> Vec<u64> {
    dir.turn_processes().iter().flat_map(|t| [t["pid"].as_u64(), t["grandchildPid"].as_u64()]).flatten().collect()
}

/// Does the case apply to the backend under test? `backends` lists them (default: all). Some
/// faults exist on one only: garbage lines on a print-mode stdout, ACP's transport drops.
fn applies(case: &Value) -> bool {
    let here = case["backends"].as_array().is_none_or(|b| b.iter().any(|b| b == test_backend().as_str()));
    if let (true, Some(why)) = (here, case["pending"].as_str()) {
        eprintln!("skipped on {}: fault {:?}: {why}", test_backend(), case["name"].as_str().unwrap_or("?"));
        return false;
    }
    here
}

fn run_case(case: &Value, tally: &mut Tally) {
    let name = case["name"].as_str().unwrap();
    eprintln!("fault: {name}");
    let dir = TestDir::new();
    let mut launch = Launch::new(&dir);
    if let Some(env) = case["env"].as_object() {
        for (k, v) in env {
            launch = launch.env(k, v.as_str().unwrap());
        }
    }
    if let Some(s) = case.get("envScenario") {
        launch = launch.env("CURSOR_DOUBLE_SCENARIO", s.to_string());
    }
    let mut s = launch.start();
    s.initialize(&dir, case.get("options").cloned().unwrap_or(json!({})));
    let text = match case["prompt"].as_str() {
        // Larger than a pipe buffer, so a CLI that stops reading makes our write fail.
        Some("large") => "fill the pipe ".repeat(40_000),
        _ => "go".to_string(),
    };
    let prompt = match case.get("scenario") {
        Some(scenario) => directed(&text, scenario.clone()),
        None => text,
    };
    let model = case["model"].as_str().unwrap_or("auto");
    let (deltas, r) = s.chat(json!({"turnId": "f", "model": model, "mode": "agent", "messages": [user(&prompt)]}));

    let mut problems = Vec::new();
    let expect = case["expect"].as_str().unwrap();
    if expect == "ok" {
        if r.get("result").is_none() {
            problems.push(format!("expected an answer, got {r}"));
        }
    } else {
        let kind = r["error"]["data"]["kind"].as_str().unwrap_or("<none>");
        if kind != expect {
            problems.push(format!("expected kind {expect}, got {r}"));
        }
        if r["error"]["data"]["hint"].as_str().unwrap_or("").is_empty() {
            problems.push("error without a hint".into());
        }
    }
    if let Some(streamed) = case["streamed"].as_str() {
        if text_of(&deltas) != streamed {
            problems.push(format!("streamed {:?}, expected {streamed:?}", text_of(&deltas)));
        }
    }
    // Still serving: the next turn works (unless the whole environment is broken, as when logged
    // out; then the next request must still be answered).
    if case.get("env").is_none() {
        let (_, next) =
            s.chat(json!({"turnId": "next", "model": "auto", "mode": "agent", "messages": [user("still there?")]}));
        if next.get("result").is_none() {
            problems.push(format!("the next turn failed: {next}"));
        }
    } else if s.request("sessions/list", json!(null)).get("result").is_none() {
        problems.push("not serving after the failure".into());
    }
    // Warm spares are kept on purpose; `shutdown` ends them, and then nothing may be left.
    let sidecar = s.child.id();
    if s.request("shutdown", json!(null)).get("result").is_none() {
        problems.push("shutdown failed".into());
    }
    let left = leftover_processes(sidecar);
    // Described now: once the sidecar exits they are gone (a zombie of ours is reaped by init).
    let left_described: Vec<String> = left.iter().map(|p| describe_process(u64::from(*p))).collect();
    // A CLI ended at shutdown may still be exiting (under load, a moment after its tree is
    // killed); one alive after the same 3 s the descendants get is a leak.
    let pids = pids_of_turns(&dir);
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut still_running: Vec<u64> = pids.iter().copied().filter(|p| alive(*p)).collect();
    while !still_running.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        still_running.retain(|p| alive(*p));
    }
    if !still_running.is_empty() {
        // Described now, while they run (after the sidecar exits they are gone).
        let described: Vec<String> = still_running.iter().map(|p| describe_process(*p)).collect();
        // What the sidecar logged of them says which path kept them.
        let log = dir.log_text();
        let said: Vec<&str> = log
            .lines()
            .filter(|l| {
                still_running.iter().any(|p| l.contains(&format!("pid={p}")) || l.contains(&format!("pid: {p}")))
            })
            .collect();
        problems.push(format!(
            "CLI processes still running: {}\nlog lines naming them:\n{}",
            described.join("; "),
            said.join("\n")
        ));
    }
    if !s.finish().success() {
        problems.push("sidecar did not exit 0".into());
    }
    for described in left_described {
        problems.push(format!("left: {described}"));
    }
    tally.record(name, problems, left.len());
}

fn script(dir: &TestDir, name: &str, body: &str, executable: bool) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(if executable { 0o755 } else { 0o644 })).unwrap();
    path
}

/// Cases with a broken CLI binary instead of a scripted double.
fn run_binary_case(
    name: &str,
    cli: Option<&str>,
    make: impl FnOnce(&TestDir) -> Option<std::path::PathBuf>,
    expect: &str,
    tally: &mut Tally,
) {
    let dir = TestDir::new();
    let path = make(&dir);
    let mut s = Sidecar::start(&dir);
    let mut init = json!({"protocolVersion": 1, "workspaceFolders": [dir.workspace()]});
    if let Some(p) = path.as_ref().map(|p| p.to_string_lossy().into_owned()).or(cli.map(String::from)) {
        init["cliPath"] = json!(p);
    }
    s.initialize_with(init);
    let (_, r) = s.chat(json!({"turnId": "f", "model": "auto", "mode": "agent", "messages": [user("hi")]}));
    let mut problems = Vec::new();
    if r["error"]["data"]["kind"] != expect {
        problems.push(format!("expected {expect}, got {r}"));
    }
    let again = s.request("sessions/list", json!(null));
    if again.get("result").is_none() {
        problems.push("not serving after the failure".into());
    }
    s.request("shutdown", json!(null));
    let left = leftover_processes(s.child.id());
    if !s.finish().success() {
        problems.push("sidecar did not exit 0".into());
    }
    tally.record(name, problems, left.len());
}

#[test]
#[ignore = "heavy tier (every fault case, tens of seconds): `cargo xtask test` runs it; alone: `cargo test -p cursor-bridge --test process -- --ignored fault_matrix`"]
fn fault_matrix() {
    let cases: Value = serde_json::from_str(include_str!("../fixtures/faults.json")).unwrap();
    let mut tally = Tally::new();
    let cases: Vec<&Value> = cases["cases"].as_array().unwrap().iter().filter(|c| applies(c)).collect();
    for case in &cases {
        run_case(case, &mut tally);
    }
    run_binary_case("CLI missing", None, |_| None, "cliNotFound", &mut tally);
    run_binary_case(
        "CLI not executable",
        None,
        |d| Some(script(d, "cursor-agent", "#!/bin/sh\necho hi\n", false)),
        "cliNotFound",
        &mut tally,
    );
    run_binary_case(
        "CLI exits at once",
        None,
        |d| Some(script(d, "cursor-agent", "#!/bin/sh\nexit 3\n", true)),
        "cliFailed",
        &mut tally,
    );
    run_binary_case(
        "CLI prints only garbage",
        None,
        |d| Some(script(d, "cursor-agent", "#!/bin/sh\nhead -c 100000 /dev/urandom\nexit 0\n", true)),
        "cliFailed",
        &mut tally,
    );

    let summary = format!(
        "fault matrix: {} faults tried, {} survived, leaked processes = {}",
        tally.tried, tally.survived, tally.leaked
    );
    report("fault-matrix", &summary);
    assert!(tally.failures.is_empty(), "{summary}\n{}", tally.failures.join("\n"));
    assert_eq!(tally.tried, cases.len() + 4);
}

#[test]
fn cancel_racing_with_completion_answers_exactly_once() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let mut ids = Vec::new();
    for i in 0..30 {
        let id = s.send_request(
            "chat/send",
            json!({"turnId": format!("r{i}"), "model": "auto", "mode": "agent", "messages": [user("quick")]}),
        );
        // Cancel at staggered moments: before, during and after the (fast) turn completes.
        if i % 3 != 0 {
            std::thread::sleep(Duration::from_millis((i % 7) as u64 * 3));
        }
        s.notify("$/cancelRequest", json!({"id": id}));
        ids.push(id);
    }
    let mut answers = std::collections::HashMap::new();
    let deadline = Instant::now() + TIMEOUT;
    while answers.len() < ids.len() && Instant::now() < deadline {
        if let Some(m) = s.next_message(Duration::from_millis(200)) {
            if let Some(id) = m["id"].as_u64() {
                *answers.entry(id).or_insert(0) += 1;
                let ok = m.get("result").is_some() || m["error"]["code"] == -32800;
                assert!(ok, "unexpected answer {m}");
            }
        }
    }
    // Drain for stragglers (a second answer would show up here).
    while let Some(m) = s.next_message(Duration::from_millis(300)) {
        if let Some(id) = m["id"].as_u64() {
            *answers.entry(id).or_insert(0) += 1;
        }
    }
    for id in &ids {
        assert_eq!(answers.get(id), Some(&1), "request {id} answered {:?} times", answers.get(id));
    }
    let r = s.request("sessions/list", json!(null));
    assert!(r.get("result").is_some());
    assert!(s.request("shutdown", json!(null)).get("result").is_some());
    assert!(leftover_processes(s.child.id()).is_empty());
}
