//! When the CLI fails, the client gets a typed error with a hint, text already streamed stays, and
//! the sidecar keeps serving. Also: cancel, timeouts, bad frames, a missing CLI, and the API key.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

fn ask(turn: &str, text: &str) -> Value {
    json!({"turnId": turn, "model": "auto", "mode": "agent", "messages": [user(text)]})
}

/// How the backends differ in this file's tests.
struct Expected {
    /// The faults and what the user sees of each.
    failure_cases: fn() -> Vec<FailureCase>,
    /// `$/cancelRequest` of a running turn (its prompt makes a grandchild and streams slowly).
    cancel: fn(TestDir, Sidecar, &str),
    /// After each idle timeout the hung CLI process is gone (print mode; on ACP the turn is
    /// cancelled and its session stays warm).
    a_silent_turn_ends_its_process: bool,
    /// After the silent turns: what is left, and that the sidecar still serves.
    after_silent_turns: fn(&TestDir, Sidecar),
    /// End of input while a turn runs: the sidecar exits 0 and takes the CLI and its grandchild.
    end_of_input: fn(&TestDir),
    /// A grandchild that left the CLI's process group does not outlive its owner.
    escaped_grandchild: fn(&TestDir),
    /// `(CURSOR_DOUBLE_SCENARIO, the prompt's scenario)` from a grandchild's and a crash's: a print
    /// run takes both from its prompt; an ACP process starts its grandchild from the env scenario,
    /// at its start (cli-double README §8.4).
    grandchild_and_crash: fn(Value, Value) -> (Value, Value),
    /// The record of the process whose turn crashed (with its `grandchildPid`).
    crashed_process: fn(&TestDir) -> Value,
    /// A record per turn, with the turn's own grandchild (print mode; an ACP turn runs on a warm
    /// process, with neither).
    a_record_per_turn: bool,
    /// A CLI process that runs turns, from its argv.
    runs_turns: fn(&str) -> bool,
    /// SIGKILL of the sidecar while one turn hangs and the spares wait: nothing outlives it.
    sigkill: fn(&TestDir, Sidecar, Vec<u32>),
}

const ON_PRINT: Expected = Expected {
    failure_cases: print_failure_cases,
    cancel: cancel_on_print,
    a_silent_turn_ends_its_process: true,
    after_silent_turns: |_, _| {},
    end_of_input: end_of_input_on_print,
    escaped_grandchild: escaped_grandchild_on_print,
    grandchild_and_crash: |gc, crash| {
        let mut both = gc;
        both.as_object_mut().unwrap().extend(crash.as_object().unwrap().clone());
        (json!({}), both)
    },
    crashed_process: |dir| dir.turns().remove(0),
    a_record_per_turn: true,
    runs_turns: |argv| argv.contains("--output-format"),
    sigkill: sigkill_on_print,
};

const ON_ACP: Expected = Expected {
    failure_cases: acp_failure_cases,
    cancel: cancel_on_acp,
    a_silent_turn_ends_its_process: false,
    after_silent_turns: |dir, mut s| {
        let (_, ok) = s.chat(ask("after", "still there?"));
        assert!(ok.get("result").is_some(), "{ok}");
        assert!(s.finish().success());
        assert_eq!(dir.acp_notifications("session/cancel").len(), 2, "each silent turn was cancelled");
        assert!(dir.acp_records("start").iter().all(|r| !alive(r["pid"].as_u64().unwrap())));
    },
    end_of_input: end_of_input_on_acp,
    escaped_grandchild: escaped_grandchild_on_acp,
    grandchild_and_crash: |gc, crash| (gc, crash),
    // The process whose turn crashed has its exit line; its grandchild is on its start line.
    crashed_process: |dir| {
        let exit =
            dir.acp_records("exit").into_iter().find(|e| e["acp"]["exitReason"] == "crash").expect("crash record");
        dir.acp_records("start").into_iter().find(|r| r["pid"] == exit["pid"]).unwrap()
    },
    a_record_per_turn: false,
    runs_turns: |argv| argv.split('\0').any(|a| a == "acp"),
    sigkill: sigkill_on_acp,
};

fn expected() -> &'static Expected {
    per_backend(&ON_PRINT, &ON_ACP)
}

/// (name, scenario for the double, model, expected kind, text the user saw before the error)
type FailureCase = (&'static str, Value, &'static str, &'static str, &'static str);

fn failure_cases() -> Vec<FailureCase> {
    (expected().failure_cases)()
}

fn print_failure_cases() -> Vec<FailureCase> {
    vec![
        ("unknown model", json!({}), "no-such-model", "invalidModel", ""),
        ("usage limit", json!({"fail": "usageLimit"}), "auto", "usageLimit", ""),
        ("rate limit", json!({"fail": "rateLimit"}), "auto", "rateLimited", ""),
        ("network", json!({"fail": "network"}), "auto", "network", ""),
        (
            "crash mid-stream keeps the streamed text",
            json!({"answer": "abcdefghijklmnop", "chunkChars": 2, "crashAfterDeltas": 3}),
            "auto",
            "network",
            "abcdef",
        ),
        ("exit 0 without result", json!({"noResult": true, "answer": "half"}), "auto", "cliFailed", "half"),
        ("error result", json!({"errorResult": true, "answer": "x"}), "auto", "cliFailed", "x"),
        ("empty answer", json!({"answer": ""}), "auto", "emptyResponse", ""),
        ("a line longer than 16 MiB", json!({"hugeLineBytes": 17 * 1024 * 1024}), "auto", "cliFailed", ""),
        (
            "plain exit 1",
            json!({"exitCode": 1, "stderr": "Segmentation fault", "noResult": true, "answer": ""}),
            "auto",
            "cliFailed",
            "",
        ),
    ]
}

/// The same faults on ACP, where a turn is a `session/prompt` and not a process: print mode's
/// result records (`noResult`, `errorResult`, an exit without one) do not exist there; instead
/// Cursor answers some failures as a JSON-RPC error and streams others as answer text.
fn acp_failure_cases() -> Vec<FailureCase> {
    vec![
        ("unknown model", json!({}), "no-such-model", "invalidModel", ""),
        ("usage limit", json!({"fail": "usageLimit"}), "auto", "usageLimit", ""),
        ("plan-gated model", json!({"fail": "planGated"}), "auto", "usageLimit", ""),
        ("rate limit", json!({"fail": "rateLimit"}), "auto", "rateLimited", ""),
        ("network", json!({"fail": "network"}), "auto", "network", ""),
        ("transport drop on every retry", json!({"fail": "ping"}), "auto", "network", ""),
        (
            "crash mid-stream keeps the streamed text",
            json!({"answer": "abcdefghijklmnop", "chunkChars": 2, "crashAfterDeltas": 3}),
            "auto",
            "network",
            "abcdef",
        ),
        ("empty answer", json!({"answer": ""}), "auto", "emptyResponse", ""),
        ("an internal error answer", json!({"rpcError": true}), "auto", "cliFailed", ""),
        (
            "plain crash",
            json!({"exitCode": 1, "stderr": "Segmentation fault", "crashAfterDeltas": 0, "answer": "x"}),
            "auto",
            "cliFailed",
            "",
        ),
    ]
}

#[test]
fn failures_are_typed_with_hints_and_the_sidecar_keeps_serving() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    for (i, (name, scenario, model, kind, streamed)) in failure_cases().into_iter().enumerate() {
        let turn = format!("f{i}");
        let mut params = ask(&turn, &directed("go", scenario));
        params["model"] = json!(model);
        let (deltas, r) = s.chat(params);
        assert_eq!(error_kind(&r), kind, "{name}: {r}");
        assert_eq!(r["error"]["code"], -32000, "{name}");
        let hint = r["error"]["data"]["hint"].as_str().unwrap_or_default();
        assert!(hint.len() > 10, "{name}: a person needs a hint: {r}");
        assert!(!r["error"]["message"].as_str().unwrap().is_empty());
        assert_eq!(text_of(&deltas), streamed, "{name}");
        // The next turn works.
        let (_, ok) = s.chat(ask(&format!("ok{i}"), "still there?"));
        assert!(ok.get("result").is_some(), "after {name}: {ok}");
    }
}

#[test]
fn auth_failure_says_how_to_log_in() {
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_LOGGED_IN", "0").start();
    s.initialize(&dir, json!({}));
    let (_, r) = s.chat(ask("t1", "hi"));
    assert_eq!(error_kind(&r), "authRequired", "{r}");
    assert!(r["error"]["data"]["hint"].as_str().unwrap().contains("agent login"), "{r}");
    let status = s.request("status", json!(null));
    assert_eq!(status["result"]["cli"]["loggedIn"], false, "{status}");
    // An API key makes the same CLI work.
    let dir2 = TestDir::new();
    let mut s2 = Launch::new(&dir2).env("CURSOR_DOUBLE_LOGGED_IN", "0").start();
    s2.initialize_with(json!({
        "protocolVersion": 1, "workspaceFolders": [dir2.workspace()], "cliPath": double_exe(), "apiKey": "key_live_123"
    }));
    let (_, r) = s2.chat(ask("t1", "hi"));
    assert!(r.get("result").is_some(), "{r}");
}

#[test]
fn missing_cli_is_cli_not_found_with_an_install_hint() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    let init = s.initialize_with(json!({"protocolVersion": 1, "workspaceFolders": [dir.workspace()]}));
    assert_eq!(init["result"]["capabilities"]["cli"]["found"], false, "{init}");
    let (_, r) = s.chat(ask("t1", "hi"));
    assert_eq!(error_kind(&r), "cliNotFound", "{r}");
    assert!(r["error"]["data"]["hint"].as_str().unwrap().to_lowercase().contains("install"), "{r}");
    let m = s.request("models/list", json!({}));
    assert_eq!(error_kind(&m), "cliNotFound");

    // A configured path that does not exist is an error about the setting, not a silent fallback.
    let dir2 = TestDir::new();
    let mut s2 = Sidecar::start(&dir2);
    s2.initialize_with(
        json!({"protocolVersion": 1, "workspaceFolders": [dir2.workspace()], "cliPath": "/nope/cursor-agent"}),
    );
    let (_, r) = s2.chat(ask("t1", "hi"));
    assert_eq!(error_kind(&r), "cliNotFound");
    assert!(r["error"]["data"]["hint"].as_str().unwrap().contains("cliPath"), "{r}");
}

#[test]
fn cli_path_from_the_environment_is_used() {
    let dir = TestDir::new();
    let mut s = Launch { cli_via_env: true, ..Launch::new(&dir) }.start();
    s.initialize_with(json!({"protocolVersion": 1, "workspaceFolders": [dir.workspace()]}));
    let (d, r) = s.chat(ask("t1", "hi"));
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(text_of(&d), "Echo: hi");
}

#[test]
fn cancel_answers_minus_32800_and_kills_the_cli_and_its_grandchild_within_a_second() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let prompt = directed(
        "long job",
        json!({"grandchild": true, "answer": "x".repeat(200), "chunkChars": 1, "deltaDelayMs": 50}),
    );
    (expected().cancel)(dir, s, &prompt);
}

fn cancel_on_print(dir: TestDir, mut s: Sidecar, prompt: &str) {
    let id = s.send_request("chat/send", ask("c1", prompt));
    let rec = wait_for_turn_record(&dir, 1).remove(0);
    let cli = rec["pid"].as_u64().unwrap();
    let grandchild = rec["grandchildPid"].as_u64().expect("double started a grandchild");
    assert!(eventually(Duration::from_secs(5), || alive(grandchild)));
    // Let some text stream first.
    assert!(eventually(Duration::from_secs(10), || {
        while let Some(m) = s.next_message(Duration::from_millis(10)) {
            s.notifications.push(m);
        }
        s.notifications.iter().any(|n| n["params"]["kind"] == "text")
    }));
    let cancelled_at = Instant::now();
    s.notify("$/cancelRequest", json!({"id": id}));
    let r = s.response(&json!(id));
    assert_eq!(r["error"]["code"], -32800, "{r}");
    assert_eq!(error_kind(&r), "cancelled");
    assert!(
        eventually(Duration::from_secs(1), || !alive(cli) && !alive(grandchild)),
        "CLI or grandchild still running 1 s after cancel"
    );
    eprintln!("cancel to dead CLI: {:?}", cancelled_at.elapsed());
    // Exactly one answer: nothing else arrives for that id.
    std::thread::sleep(Duration::from_millis(300));
    while let Some(m) = s.next_message(Duration::from_millis(50)) {
        assert_ne!(m["id"], json!(id), "second answer to a cancelled request: {m}");
    }
    let (_, ok) = s.chat(ask("after", "still there?"));
    assert!(ok.get("result").is_some());
    // A cancel for an unknown id is ignored.
    s.notify("$/cancelRequest", json!({"id": 999_999}));
    let (_, ok) = s.chat(ask("after2", "still there?"));
    assert!(ok.get("result").is_some());
}

/// On ACP a cancel stops the turn, not the process: the agent gets `session/cancel` for the
/// session, answers `cancelled`, and the conversation's session stays warm for the next turn.
fn cancel_on_acp(dir: TestDir, mut s: Sidecar, prompt: &str) {
    let id = s.send_request("chat/send", ask("c1", prompt));
    assert!(eventually(Duration::from_secs(10), || {
        while let Some(m) = s.next_message(Duration::from_millis(10)) {
            s.notifications.push(m);
        }
        s.notifications.iter().any(|n| n["params"]["kind"] == "text")
    }));
    let session = s.notifications.iter().find(|n| n["params"]["kind"] == "session").map(|n| n["params"].clone());
    s.notify("$/cancelRequest", json!({"id": id}));
    let r = s.response(&json!(id));
    assert_eq!(r["error"]["code"], -32800, "{r}");
    assert_eq!(error_kind(&r), "cancelled");
    std::thread::sleep(Duration::from_millis(300));
    while let Some(m) = s.next_message(Duration::from_millis(50)) {
        assert_ne!(m["id"], json!(id), "second answer to a cancelled request: {m}");
    }
    let (_, ok) = s.chat(ask("after", "still there?"));
    assert!(ok.get("result").is_some(), "{ok}");
    s.notify("$/cancelRequest", json!({"id": 999_999}));
    let (_, ok) = s.chat(ask("after2", "still there?"));
    assert!(ok.get("result").is_some());
    assert!(s.finish().success());
    // The agent was told, for the session the turn ran in, and stopped the prompt itself.
    let cancels = dir.acp_notifications("session/cancel");
    assert_eq!(cancels.len(), 1, "one session/cancel: {cancels:?} (session delta {session:?})");
    let prompts = dir.acp_requests("session/prompt");
    let cancelled = prompts.iter().find(|p| p["sessionId"] == cancels[0]["sessionId"]).expect("the cancelled prompt");
    assert_eq!(cancelled["answer"], "result", "the agent answered the cancelled prompt: {cancelled}");
    assert!(dir.acp_records("start").iter().all(|r| !alive(r["pid"].as_u64().unwrap())));
}

#[test]
fn silence_ends_the_turn_with_a_timeout() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({"idleTimeoutSeconds": 1}));
    for hang in ["beforeOutput", "midStream"] {
        let started = Instant::now();
        let (_, r) = s.chat(ask(hang, &directed("go", json!({"hang": hang, "answer": "some text here"}))));
        assert_eq!(error_kind(&r), "timeout", "{hang}: {r}");
        assert!(r["error"]["data"]["hint"].as_str().unwrap().contains("idleTimeoutSeconds"));
        assert!(started.elapsed() < Duration::from_secs(10), "{hang}");
        if !expected().a_silent_turn_ends_its_process {
            continue; // the turn is cancelled, its session stays warm: checked below
        }
        let pid = dir.turns().last().unwrap()["pid"].as_u64().unwrap();
        assert!(eventually(Duration::from_secs(2), || !alive(pid)), "{hang}: hung CLI left running");
    }
    (expected().after_silent_turns)(&dir, s);
}

#[test]
fn overall_timeout_stops_a_turn_that_keeps_talking() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({"requestTimeoutSeconds": 1, "idleTimeoutSeconds": 30}));
    let (deltas, r) =
        s.chat(ask("t", &directed("go", json!({"answer": "y".repeat(400), "chunkChars": 1, "deltaDelayMs": 20}))));
    assert_eq!(error_kind(&r), "timeout", "{r}");
    assert!(r["error"]["data"]["hint"].as_str().unwrap().contains("requestTimeoutSeconds"));
    assert!(!text_of(&deltas).is_empty(), "text streamed before the timeout stays");
}

#[test]
fn garbage_frames_get_parse_errors_and_the_next_request_works() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.send_raw(b"this is not a frame\r\n\r\n");
    let r = s.next_message(TIMEOUT).unwrap();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert_eq!(r["id"], Value::Null);
    s.send_raw(&frame(b"{not json"));
    assert_eq!(s.next_message(TIMEOUT).unwrap()["error"]["code"], -32700);
    s.send_raw(&frame(b"[1,2]"));
    assert_eq!(s.next_message(TIMEOUT).unwrap()["error"]["code"], -32600);
    // Before initialize, requests are refused politely.
    let r = s.request("sessions/list", json!(null));
    assert_eq!(r["error"]["code"], -32002);
    s.initialize(&dir, json!({}));
    let r = s.request("no/such/method", json!({}));
    assert_eq!(r["error"]["code"], -32601);
    let r = s.request("chat/send", json!({"turnId": 5}));
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(error_kind(&r), "invalidParams");
    let (_, r) = s.chat(ask("t", "works"));
    assert!(r.get("result").is_some(), "{r}");
}

#[test]
fn workspace_outside_the_initialized_folders_is_refused() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let mut p = ask("t", "hi");
    p["workspace"] = json!("/");
    let (_, r) = s.chat(p);
    assert_eq!(error_kind(&r), "invalidParams", "{r}");
    assert!(dir.turns().is_empty(), "no CLI was started");
}

#[test]
fn the_api_key_reaches_the_cli_env_and_nowhere_else() {
    let dir = TestDir::new();
    let key = "key_live_SECRET_7f3a9c";
    // Most verbose logging, including prompt content: the key must still not appear.
    let mut s = Launch { log_level: "trace,cursor_bridge::content=trace", ..Launch::new(&dir) }.start();
    s.initialize_with(json!({
        "protocolVersion": 1, "workspaceFolders": [dir.workspace()], "cliPath": double_exe(), "apiKey": key
    }));
    let (_, r) = s.chat(ask("t1", &directed("hi", json!({"grandchild": true}))));
    assert!(r.get("result").is_some(), "{r}");
    let (_, bad) = s.chat(ask("t2", &directed("hi", json!({"fail": "invalidKey"}))));
    s.request("status", json!(null));
    s.request("models/list", json!({}));

    for rec in dir.records() {
        assert!(!rec["argv"].to_string().contains(key), "key on argv: {rec}");
    }
    let turn = &dir.turn_processes()[0];
    assert_eq!(turn["env"]["CURSOR_API_KEY"], key, "key in the child's environment");
    // The live process table, too: nothing of ours carries the key on its command line.
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            assert!(!String::from_utf8_lossy(&cmdline).contains(key), "key in /proc/{:?}/cmdline", entry.file_name());
        }
    }
    assert!(!bad.to_string().contains(key), "key in an error: {bad}");
    let pid = s.child.id();
    assert!(s.finish().success());
    let log = dir.log_text();
    assert!(log.contains(&format!("pid={pid}")) || log.contains("cursor-bridge starting"), "log written");
    assert!(!log.contains(key), "key in the log");
}

#[test]
fn prompts_are_not_logged_at_the_default_level() {
    let dir = TestDir::new();
    let mut s = Launch { log_level: "", ..Launch::new(&dir) }.start();
    s.initialize(&dir, json!({}));
    let (_, r) = s.chat(ask("t1", "my very private prompt text"));
    assert!(r.get("result").is_some());
    assert!(s.finish().success());
    let log = dir.log_text();
    assert!(log.contains("turn starts"), "info logging works: {log}");
    assert!(!log.contains("my very private prompt text"), "{log}");
    assert!(!log.contains("Echo: my very private"), "answers are content too: {log}");
}

#[test]
fn end_of_input_kills_running_turns_and_exits_zero() {
    let dir = TestDir::new();
    (expected().end_of_input)(&dir);
}

/// ACP processes start their grandchild at start (cli-double README §8.4), not per turn.
fn end_of_input_on_acp(dir: &TestDir) {
    let mut s = Launch::new(dir).env("CURSOR_DOUBLE_SCENARIO", json!({"grandchild": true}).to_string()).start();
    s.initialize(dir, json!({}));
    s.send_request("chat/send", ask("t", &directed("go", json!({"hang": "midStream"}))));
    // Mid-stream: some text came, then silence.
    assert!(eventually(TIMEOUT, || {
        while let Some(m) = s.next_message(Duration::from_millis(10)) {
            s.notifications.push(m);
        }
        s.notifications.iter().any(|n| n["params"]["kind"] == "text")
    }));
    let started = dir.acp_records("start");
    assert!(!started.is_empty());
    let status = s.finish();
    assert_eq!(status.code(), Some(0));
    let pids: Vec<u64> =
        started.iter().flat_map(|r| [r["pid"].as_u64(), r["grandchildPid"].as_u64()]).flatten().collect();
    assert!(pids.len() >= 2, "a process and its grandchild: {started:?}");
    assert!(eventually(Duration::from_secs(2), || pids.iter().all(|p| !alive(*p))), "{pids:?}");
}

fn end_of_input_on_print(dir: &TestDir) {
    let mut s = Sidecar::start(dir);
    s.initialize(dir, json!({}));
    s.send_request("chat/send", ask("t", &directed("go", json!({"hang": "midStream", "grandchild": true}))));
    let rec = wait_for_turn_record(dir, 1).remove(0);
    let (cli, gc) = (rec["pid"].as_u64().unwrap(), rec["grandchildPid"].as_u64().unwrap());
    assert!(eventually(Duration::from_secs(5), || alive(gc)));
    let status = s.finish();
    assert_eq!(status.code(), Some(0));
    assert!(eventually(Duration::from_secs(2), || !alive(cli) && !alive(gc)));
}

#[test]
fn shutdown_then_exit() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let r = s.request("shutdown", json!(null));
    assert_eq!(r["result"], Value::Null, "{r}");
    assert!(r.get("error").is_none());
    let after = s.request("sessions/list", json!(null));
    assert_eq!(after["error"]["code"], -32600);
    s.notify("exit", json!(null));
    let status = wait_with_timeout(&mut s.child, TIMEOUT).expect("exit ends the process");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_grandchild_that_left_the_group_does_not_outlive_its_turn() {
    let dir = TestDir::new();
    (expected().escaped_grandchild)(&dir);
}

/// An ACP process's grandchild is the process's (started at start, README §8.4), and the process
/// outlives its turns: it must not outlive the process.
fn escaped_grandchild_on_acp(dir: &TestDir) {
    let scenario = json!({"grandchild": true, "grandchildEscapes": true});
    let mut s = Launch::new(dir).env("CURSOR_DOUBLE_SCENARIO", scenario.to_string()).start();
    s.initialize(dir, json!({}));
    let (_, r) = s.chat(ask("t", "go"));
    assert!(r.get("result").is_some(), "{r}");
    assert!(s.request("shutdown", json!(null)).get("result").is_some());
    let gcs: Vec<u64> = dir.acp_records("start").iter().filter_map(|r| r["grandchildPid"].as_u64()).collect();
    assert!(!gcs.is_empty(), "grandchild started");
    assert!(
        eventually(Duration::from_secs(2), || gcs.iter().all(|g| !alive(*g))),
        "escaped grandchild still running: {gcs:?}"
    );
}

fn escaped_grandchild_on_print(dir: &TestDir) {
    let mut s = Sidecar::start(dir);
    s.initialize(dir, json!({}));
    let (_, r) = s.chat(ask("t", &directed("go", json!({"grandchild": true, "grandchildEscapes": true}))));
    assert!(r.get("result").is_some(), "{r}");
    let rec = &dir.turns()[0];
    let gc = rec["grandchildPid"].as_u64().expect("grandchild started");
    assert!(eventually(Duration::from_secs(2), || !alive(gc)), "escaped grandchild {gc} still running");
}

#[test]
fn a_grandchild_holding_stdout_open_does_not_stall_a_failed_turn() {
    let dir = TestDir::new();
    let crash = json!({"crashAfterDeltas": 2, "answer": "partial answer"});
    let gc = json!({"grandchild": true, "grandchildStdio": "inherit"});
    let (env, scenario) = (expected().grandchild_and_crash)(gc, crash);
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_SCENARIO", env.to_string()).start();
    s.initialize(&dir, json!({"idleTimeoutSeconds": 20}));
    let started = Instant::now();
    let (_, r) = s.chat(ask("t", &directed("go", scenario)));
    assert_eq!(error_kind(&r), "network", "{r}");
    assert!(started.elapsed() < Duration::from_secs(5), "waited {:?} for a pipe an orphan held", started.elapsed());
    let crashed = (expected().crashed_process)(&dir);
    let gc = crashed["grandchildPid"].as_u64().unwrap();
    assert!(eventually(Duration::from_secs(2), || !alive(gc)));
}

#[test]
fn garbage_and_invalid_utf8_on_the_cli_stdout_are_skipped() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let (d, r) =
        s.chat(ask("t", &directed("go", json!({"garbage": true, "answer": "clean answer ✓", "stderrBytes": 200000}))));
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(text_of(&d), "clean answer ✓");
}

#[test]
fn sigterm_stops_every_child_and_no_spare_runs_an_empty_prompt() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({"spares": 2}));
    let (_, r) = s.chat(ask("t", "first"));
    assert!(r.get("result").is_some(), "{r}");
    // A running turn, and spares waiting for their prompts.
    s.send_request("chat/send", ask("t2", &directed("go", json!({"hang": "midStream", "grandchild": true}))));
    let rec = expected().a_record_per_turn.then(|| wait_for_turn_record(&dir, 2).remove(1));
    let pid = s.child.id();
    assert!(eventually(Duration::from_secs(5), || descendants(pid).len() >= 3), "turn + spares running");
    let everything = descendants(pid);
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = wait_with_timeout(&mut s.child, TIMEOUT).expect("SIGTERM ends the sidecar");
    assert_eq!(status.code(), Some(0));
    assert!(
        eventually(Duration::from_secs(3), || everything.iter().all(|p| !alive(*p as u64))),
        "children outlived the sidecar"
    );
    if let Some(rec) = rec {
        assert!(!alive(rec["grandchildPid"].as_u64().unwrap()));
    }
    std::thread::sleep(Duration::from_millis(300));
    // The kernel closes a dying process's files a moment before it sends its children the death
    // signal, so a spare may just see end of input while the sidecar is still exiting (its record
    // then names the sidecar as parent). What must never happen is a spare running on as an orphan.
    // (Print mode only: an ACP spare has no prompt of its own to run.)
    let orphaned: Vec<_> = dir.turns().into_iter().filter(|t| t["stdin"] == "" && t["ppid"] != json!(pid)).collect();
    assert!(orphaned.is_empty(), "a spare ran an empty prompt after the sidecar was gone: {orphaned:?}");
}

#[test]
fn sigkill_of_the_sidecar_takes_its_cli_children_along() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    let (_, r) = s.chat(ask("t", "first"));
    assert!(r.get("result").is_some(), "{r}");
    let pid = s.child.id();
    // The warm spare: a print-mode CLI waiting for its prompt (a create-chat prefetch may also be
    // running; it ends by itself).
    let is_turn = |p: &u32| {
        std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| (expected().runs_turns)(&String::from_utf8_lossy(&c)))
    };
    assert!(eventually(Duration::from_secs(5), || descendants(pid).iter().any(is_turn)), "the spare is up");
    let spares: Vec<u32> = descendants(pid).into_iter().filter(is_turn).collect();
    (expected().sigkill)(&dir, s, spares);
}

/// ACP: a new conversation's turn takes the spare session (whatever its model) and another is
/// opened ahead; a hanging turn, then the sidecar is killed.
fn sigkill_on_acp(_dir: &TestDir, mut s: Sidecar, spares: Vec<u32>) {
    let pid = s.child.id();
    let is_turn = |p: &u32| {
        std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| (expected().runs_turns)(&String::from_utf8_lossy(&c)))
    };
    let mut hang = ask("t2", &directed("go", json!({"hang": "midStream"})));
    hang["model"] = json!("gpt-5.6-sol");
    s.send_request("chat/send", hang);
    assert!(eventually(TIMEOUT, || {
        while let Some(m) = s.next_message(Duration::from_millis(10)) {
            s.notifications.push(m);
        }
        s.notifications.iter().any(|n| n["params"]["turnId"] == "t2" && n["params"]["kind"] == "text")
    }));
    let all: Vec<u32> = descendants(pid).into_iter().filter(is_turn).chain(spares).collect();
    s.child.kill().unwrap();
    let _ = s.child.wait();
    assert!(
        eventually(Duration::from_secs(2), || all.iter().all(|p| !alive(*p as u64))),
        "an ACP process outlived a killed sidecar: {all:?}"
    );
}

fn sigkill_on_print(dir: &TestDir, mut s: Sidecar, spares: Vec<u32>) {
    let pid = s.child.id();
    // And a turn that hangs mid-answer (another model: it cannot run on the spare).
    let mut hang = ask("t2", &directed("go", json!({"hang": "midStream"})));
    hang["model"] = json!("gpt-5.6-sol");
    s.send_request("chat/send", hang);
    let cli = wait_for_turn_record(dir, 2)[1]["pid"].as_u64().unwrap();
    assert!(!spares.contains(&(cli as u32)), "the hanging turn must run on its own process");
    assert!(eventually(Duration::from_secs(5), || alive(cli)));
    s.child.kill().unwrap();
    let _ = s.child.wait();
    assert!(
        eventually(Duration::from_secs(2), || !alive(cli)),
        "the CLI of a running turn ({cli}) outlived a killed sidecar"
    );
    assert!(
        eventually(Duration::from_secs(2), || spares.iter().all(|p| !alive(*p as u64))),
        "a spare outlived a killed sidecar: {spares:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    // The kernel closes a dying process's files a moment before it sends its children the death
    // signal, so a spare may just see end of input while the sidecar is still exiting (its record
    // then names the sidecar as parent). What must never happen is a spare running on as an orphan.
    let orphaned: Vec<_> = dir.turns().into_iter().filter(|t| t["stdin"] == "" && t["ppid"] != json!(pid)).collect();
    assert!(orphaned.is_empty(), "a spare ran an empty prompt after the sidecar was gone: {orphaned:?}");
}
