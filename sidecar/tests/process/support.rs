//! Test harness: runs the real `cursor-bridge` binary over pipes, with the CLI test double
//! (`cli-double`) as its Cursor CLI, and speaks JSON-RPC to it like an editor would (the framing,
//! the launch and the connection are `cursor-bridge-test-client`'s, shared with the benchmark).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use cursor_bridge_test_client::{assistant, frame, user, wait_with_timeout};
use cursor_bridge_test_client::{initialize_params, Connection, Launcher, Process, Stderr};
use serde_json::{json, Value};

pub const TIMEOUT: Duration = Duration::from_secs(30);

pub fn sidecar_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cursor-bridge"))
}

/// The CLI double, built next to the sidecar (`cargo xtask test` builds the whole workspace; a
/// lone `cargo test -p cursor-bridge` builds it here once).
pub fn double_exe() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let path = sidecar_exe().with_file_name(format!("cursor-agent-double{}", std::env::consts::EXE_SUFFIX));
            if !path.is_file() {
                let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                    .args(["build", "-p", "cli-double", "--bin", "cursor-agent-double"])
                    .status()
                    .expect("run cargo to build the CLI double");
                assert!(status.success(), "building the CLI double failed");
            }
            path
        })
        .clone()
}

/// A folder for one test: state, logs, the double's record, a workspace.
pub struct TestDir {
    pub dir: tempfile::TempDir,
}

impl TestDir {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
        TestDir { dir }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn workspace(&self) -> PathBuf {
        dunce::canonicalize(self.dir.path().join("workspace")).unwrap()
    }
    pub fn record_file(&self) -> PathBuf {
        self.dir.path().join("record.jsonl")
    }
    pub fn log_dir(&self) -> PathBuf {
        self.dir.path().join("logs")
    }
    /// What the double recorded, one entry per CLI invocation.
    pub fn records(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.record_file()).unwrap_or_default();
        // A double may be appending right now: a line without its newline is not written yet
        // (an append is one write(), but a reader may see part of it), every other must parse.
        let complete = match text.rfind('\n') {
            Some(end) => &text[..=end],
            None => "",
        };
        complete.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
    }
    /// Records of chat turns (print mode).
    pub fn turns(&self) -> Vec<Value> {
        self.records().into_iter().filter(|r| r["subcommand"] == "print").collect()
    }
    /// The lines of the ACP processes' records in `phase` (`start`, `exit`; cli-double README §8.8).
    pub fn acp_records(&self, phase: &str) -> Vec<Value> {
        self.records().into_iter().filter(|r| r["subcommand"] == "acp" && r["acp"]["phase"] == phase).collect()
    }
    /// Every request of `method` the ACP processes received, each with its process's `pid` added.
    /// Only processes that ended are on record (the exit line lists what a process received).
    pub fn acp_requests(&self, method: &str) -> Vec<Value> {
        self.acp_received(method, "request")
    }
    pub fn acp_notifications(&self, method: &str) -> Vec<Value> {
        self.acp_received(method, "notification")
    }
    fn acp_received(&self, method: &str, kind: &str) -> Vec<Value> {
        let mut out = Vec::new();
        for exit in self.acp_records("exit") {
            for r in exit["acp"]["received"].as_array().into_iter().flatten() {
                if r["kind"] == kind && r["method"] == method {
                    let mut r = r.clone();
                    r["pid"] = exit["pid"].clone();
                    out.push(r);
                }
            }
        }
        out
    }
    /// The sessions in the double's ACP store (cli-double README §8.6), each
    /// `{sessionId, cwd, createdByPid, turns:[{user, agent, pid, atMs}]}`; saved at creation and
    /// after every answered turn, so readable while the processes run.
    pub fn acp_sessions(&self) -> Vec<Value> {
        let root = self.path().join("home/.cursor/acp-sessions");
        let mut out = Vec::new();
        for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(e.path().join("cursor-agent-double.json")).unwrap_or_default();
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                out.push(v);
            }
        }
        out
    }
    /// The answered turns, oldest first, in print-mode records' terms: on print mode the `print`
    /// records; on ACP one entry per turn in the session store, with `sessionId`, `cwd`,
    /// `stdin`/`prompt` (the prompt text as sent) and, from its process's start line, `pid`,
    /// `grandchildPid`, `argv`, `env` and `bridgeEnv`. (A failed turn is in neither's store.)
    pub fn turn_records(&self) -> Vec<Value> {
        if !acp() {
            return self.turns();
        }
        let starts = self.acp_records("start");
        let mut out = Vec::new();
        for session in self.acp_sessions() {
            for t in session["turns"].as_array().into_iter().flatten() {
                let mut r = json!({
                    "sessionId": session["sessionId"], "cwd": session["cwd"], "stdin": t["user"],
                    "prompt": t["user"], "answer": t["agent"], "pid": t["pid"], "atMs": t["atMs"],
                });
                if let Some(start) = starts.iter().find(|s| s["pid"] == t["pid"]) {
                    for key in ["grandchildPid", "argv", "env", "bridgeEnv", "ppid"] {
                        r[key] = start[key].clone();
                    }
                }
                out.push(r);
            }
        }
        out.sort_by_key(|r| r["atMs"].as_u64());
        out
    }
    /// Records of the CLI processes that ran turns: print-mode runs, or ACP processes (start lines).
    pub fn turn_processes(&self) -> Vec<Value> {
        if acp() {
            self.acp_records("start")
        } else {
            self.turns()
        }
    }
    pub fn log_text(&self) -> String {
        let mut all = String::new();
        if let Ok(entries) = std::fs::read_dir(self.log_dir()) {
            for e in entries.flatten() {
                all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
        all
    }
}

pub struct Sidecar {
    pub child: Child,
    conn: Connection<Value>,
    stderr: Stderr,
    /// Notifications seen so far (in order).
    pub notifications: Vec<Value>,
    /// Responses read while waiting for another id.
    pending: Vec<Value>,
}

pub struct Launch<'a> {
    pub dir: &'a TestDir,
    pub env: Vec<(String, String)>,
    /// Put the double on the sidecar's env as `CURSOR_BRIDGE_CLI_PATH` (else: `initialize.cliPath`).
    pub cli_via_env: bool,
    pub log_level: &'a str,
    /// The sidecar's current folder (else the test's).
    pub cwd: Option<PathBuf>,
}

/// The sidecar with its folders in `dir` and nothing of this machine's Cursor set-up in reach.
pub fn launcher(dir: &TestDir, log_level: &str) -> Launcher {
    Launcher::new(sidecar_exe(), dir.path())
        .log_level(log_level)
        // An empty PATH (plus sh for the double's grandchildren): nothing real is found by accident.
        .env("PATH", "/usr/bin:/bin")
        .env("CURSOR_DOUBLE_RECORD", dir.record_file())
        .env_remove("CURSOR_API_KEY")
        .env_remove("CURSOR_BRIDGE_CLI_PATH")
        .env_remove("CURSOR_DOUBLE_SCENARIO")
        .env("CURSOR_BRIDGE_BACKEND", test_backend())
        // `cargo xtask dist` ships the token estimates' vocabulary beside the binary; here it is
        // the repository's copy.
        .env("CURSOR_BRIDGE_TOKENIZER", Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/o200k_base.tiktoken"))
}

/// The backend the suite runs on: `CURSOR_BRIDGE_TEST_BACKEND` (`print`, `acp`, `auto`), else
/// print mode. `cargo xtask test` runs the suite on print mode and again on ACP.
pub fn test_backend() -> String {
    std::env::var("CURSOR_BRIDGE_TEST_BACKEND").unwrap_or_else(|_| "print".into())
}

/// The suite runs on the ACP backend: tests that read print-mode records read the ACP ones.
pub fn acp() -> bool {
    test_backend() == "acp"
}

/// This backend's row of a file's expectation table. A test file states how the backends differ
/// for its tests once, as an `ON_PRINT` and an `ON_ACP` value of its own `Expected` type (values,
/// cases, a check to run, a reason a test does not apply), so the differences read side by side
/// instead of in branches through the tests.
pub fn per_backend<T>(on_print: T, on_acp: T) -> T {
    if acp() {
        on_acp
    } else {
        on_print
    }
}

/// `Some(why)`: the test does not apply to this backend; says why and tells the test to return.
pub fn skipped(why_not: Option<&str>) -> bool {
    match why_not {
        Some(why) => {
            eprintln!("skipped on {}: {why}", test_backend());
            true
        }
        None => false,
    }
}

impl<'a> Launch<'a> {
    pub fn new(dir: &'a TestDir) -> Self {
        Launch { dir, env: Vec::new(), cli_via_env: false, log_level: "debug", cwd: None }
    }
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
    pub fn start(self) -> Sidecar {
        let mut launcher = launcher(self.dir, self.log_level).first_id(101);
        if self.cli_via_env {
            launcher = launcher.env("CURSOR_BRIDGE_CLI_PATH", double_exe());
        }
        if let Some(cwd) = self.cwd {
            launcher = launcher.cwd(cwd);
        }
        let Process { child, conn, stderr, .. } =
            launcher.envs(self.env).start(json_frame).expect("start cursor-bridge");
        Sidecar { child, conn, stderr, notifications: Vec::new(), pending: Vec::new() }
    }
}

/// Every frame on the sidecar's stdout is JSON.
fn json_frame(body: &[u8]) -> Option<Value> {
    Some(serde_json::from_slice(body).expect("stdout carries JSON frames only"))
}

impl Sidecar {
    pub fn start(dir: &TestDir) -> Self {
        Launch::new(dir).start()
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.conn.send_raw(bytes).expect("write to the sidecar's stdin");
    }

    pub fn send(&mut self, message: &Value) {
        self.conn.send(std::slice::from_ref(message)).expect("write to the sidecar's stdin");
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.conn.notify(method, params).expect("write to the sidecar's stdin");
    }

    /// Send a request; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.conn.request(method, params).expect("write to the sidecar's stdin").0
    }

    /// The next message from the sidecar (notification or response).
    pub fn next_message(&mut self, timeout: Duration) -> Option<Value> {
        self.conn.recv(timeout).ok().map(|m| m.message)
    }

    /// Wait for the response to `id`, collecting notifications.
    pub fn response(&mut self, id: &Value) -> Value {
        self.response_within(id, TIMEOUT)
    }

    pub fn response_within(&mut self, id: &Value, timeout: Duration) -> Value {
        if let Some(i) = self.pending.iter().position(|r| &r["id"] == id) {
            return self.pending.remove(i);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(msg) = self.next_message(left) else {
                panic!("no response to id {id} within {timeout:?}; stderr:\n{}", self.stderr.text());
            };
            if msg.get("method").is_some() && msg.get("id").is_none() {
                self.notifications.push(msg);
            } else if &msg["id"] == id {
                return msg;
            } else {
                self.pending.push(msg);
            }
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(&json!(id))
    }

    pub fn initialize(&mut self, dir: &TestDir, options: Value) -> Value {
        self.initialize_with(initialize_params(("tests", "0"), &dir.workspace(), &double_exe(), options))
    }

    pub fn initialize_with(&mut self, params: Value) -> Value {
        let r = self.request("initialize", params);
        assert!(r.get("result").is_some(), "initialize failed: {r}");
        r
    }

    /// Run a turn to its end: (deltas of this turn, the response).
    pub fn chat(&mut self, params: Value) -> (Vec<Value>, Value) {
        let turn = params["turnId"].clone();
        let id = self.send_request("chat/send", params);
        let response = self.response(&json!(id));
        (self.take_deltas(&turn), response)
    }

    /// Remove and return the deltas of `turn` received so far.
    pub fn take_deltas(&mut self, turn: &Value) -> Vec<Value> {
        let (mine, rest): (Vec<Value>, Vec<Value>) = std::mem::take(&mut self.notifications)
            .into_iter()
            .partition(|n| n["method"] == "chat/delta" && &n["params"]["turnId"] == turn);
        self.notifications = rest;
        mine.into_iter().map(|n| n["params"].clone()).collect()
    }

    pub fn close_stdin(&mut self) {
        self.conn.close_stdin();
    }

    /// Close stdin and wait for the process to exit.
    pub fn finish(mut self) -> std::process::ExitStatus {
        self.close_stdin();
        wait_with_timeout(&mut self.child, TIMEOUT).expect("sidecar did not exit after stdin closed")
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The concatenated `text` deltas.
pub fn text_of(deltas: &[Value]) -> String {
    deltas.iter().filter(|d| d["kind"] == "text").map(|d| d["text"].as_str().unwrap()).collect()
}

pub fn kinds_of(deltas: &[Value]) -> Vec<String> {
    deltas.iter().map(|d| d["kind"].as_str().unwrap().to_string()).collect()
}

/// A user message carrying a scenario directive for the double.
pub fn directed(text: &str, scenario: Value) -> String {
    format!("[[double:{scenario}]]\n{text}")
}

pub fn error_kind(response: &Value) -> &str {
    response["error"]["data"]["kind"].as_str().unwrap_or_else(|| panic!("not an error with a kind: {response}"))
}

/// Is `pid` still running, or still exiting? Its main thread shows as a zombie in `/proc` as soon
/// as it is done, while the process's other threads may still be exiting and its pipes still
/// open (seen under load: a killed multi-threaded agent the sidecar then rightly took for alive).
/// Over only once the whole process has exited, which is when a pidfd of it becomes readable:
/// the sidecar's own test of a child ([`cursor_bridge`]'s `process.rs`).
pub fn alive(pid: u64) -> bool {
    let zombie_or_gone = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rfind(')').and_then(|i| s[i + 1..].split_whitespace().next()) == Some("Z"))
        .unwrap_or(true);
    !zombie_or_gone || !whole_process_exited(pid)
}

/// A pidfd of `pid` is readable (or there is no such process).
fn whole_process_exited(pid: u64) -> bool {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1; the
    // descriptor is ours, polled without blocking and closed here.
    unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) as libc::c_int;
        if fd < 0 {
            return true; // ESRCH: gone (reaped)
        }
        let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let ready = libc::poll(&mut poll, 1, 0) == 1 && poll.revents & libc::POLLIN != 0;
        libc::close(fd);
        ready
    }
}

/// Wait until `pred` holds or `timeout` passes; returns whether it held.
pub fn eventually(timeout: Duration, mut pred: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if pred() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Wait for the double to record a print-mode invocation (it records before answering).
pub fn wait_for_turn_record(dir: &TestDir, count: usize) -> Vec<Value> {
    assert!(eventually(TIMEOUT, || dir.turns().len() >= count), "the double never recorded turn {count}");
    dir.turns()
}

/// The record of the `count`th CLI process that runs turns, once it is running: a print-mode
/// run (recorded before it answers) or an ACP process (its start line, after its boot).
pub fn wait_for_process_record(dir: &TestDir, count: usize) -> Value {
    if !acp() {
        return wait_for_turn_record(dir, count).remove(count - 1);
    }
    let ok = eventually(TIMEOUT, || dir.acp_records("start").len() >= count);
    assert!(ok, "the double never recorded ACP process {count}");
    dir.acp_records("start").remove(count - 1)
}

/// The env scenario that gives each CLI process a grandchild: on print mode a directive does it
/// per turn, but an ACP process starts its grandchild from the env scenario only, at its start
/// (cli-double README §8.4), so on ACP the launch carries it.
pub fn grandchild_env(launch: Launch<'_>, scenario: Value) -> Launch<'_> {
    if acp() {
        launch.env("CURSOR_DOUBLE_SCENARIO", scenario.to_string())
    } else {
        launch
    }
}

/// All processes whose parent chain leads to `ancestor`.
pub fn descendants(ancestor: u32) -> Vec<u32> {
    let mut table = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let mut f = rest.split_whitespace();
        let _state = f.next();
        let Some(ppid) = f.next().and_then(|s| s.parse::<u32>().ok()) else { continue };
        table.push((pid, ppid));
    }
    let mut out = Vec::new();
    let mut stack = vec![ancestor];
    while let Some(p) = stack.pop() {
        for (pid, ppid) in &table {
            if *ppid == p {
                out.push(*pid);
                stack.push(*pid);
            }
        }
    }
    out
}

/// Summary lines go to target/reliability/<name>.txt (`<name>-acp.txt` on the ACP pass) so
/// `cargo xtask test` can print them last; the line itself names the backend on ACP.
pub fn report(name: &str, line: &str) {
    let (file, line) =
        if acp() { (format!("{name}-acp"), format!("{line} (ACP)")) } else { (name.to_string(), line.to_string()) };
    println!("{line}");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../reliability");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("{file}.txt")), format!("{line}\n"));
}

/// Sessions the double saved (cli-double README §8.6): (id, createdByPid, the prompts as sent).
pub fn saved_sessions(dir: &TestDir) -> Vec<(String, u64, Vec<String>)> {
    let root: PathBuf = dir.path().join("home/.cursor/acp-sessions");
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path().join("cursor-agent-double.json")) else { continue };
        let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
        let prompts = v["turns"].as_array().into_iter().flatten().filter_map(|t| t["user"].as_str()).map(str::to_owned);
        out.push((
            v["sessionId"].as_str().unwrap_or("").to_owned(),
            v["createdByPid"].as_u64().unwrap_or(0),
            prompts.collect(),
        ));
    }
    out
}

pub fn session_with_prompt(dir: &TestDir, prompt: &str) -> (String, u64, Vec<String>) {
    saved_sessions(dir)
        .into_iter()
        .find(|(_, _, prompts)| prompts.iter().any(|p| p == prompt))
        .unwrap_or_else(|| panic!("no saved session got the prompt {prompt:?}: {:?}", saved_sessions(dir)))
}
