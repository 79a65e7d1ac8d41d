//! The ACP test client: the built double driven over its pipes by a small line-based JSON-RPC
//! client (shared by `acp_mode.rs` and `acp_tools.rs`).

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

pub const LONG: Duration = Duration::from_secs(10);
pub const SHORT: Duration = Duration::from_millis(400);

/// The `initialize` result Cursor sent (docs/cursor-acp.md §3.1), byte for byte.
pub const INITIALIZE: &str = r#"{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"mcpCapabilities":{"http":true,"sse":true},"promptCapabilities":{"audio":false,"embeddedContext":false,"image":true},"sessionCapabilities":{"list":{}}},"authMethods":[{"id":"cursor_login","name":"Cursor Login","description":"Authenticate using existing Cursor login credentials. Run 'agent login' first if not logged in."}]}"#;

pub fn j(s: &str) -> Json {
    Json::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

pub fn s(v: &Json) -> String {
    v.to_compact()
}

/// How to start one ACP process. Clones share the HOME (so a second process can load a first
/// one's session) and the record file; both are removed when the last clone goes.
#[derive(Clone)]
pub struct Setup {
    pub flags: Vec<String>,
    pub env: Vec<(String, String)>,
    pub home: PathBuf,
    pub record: PathBuf,
    pub cwd: Option<PathBuf>,
    pub _cleanup: Arc<Cleanup>,
}

pub struct Cleanup(pub Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_dir_all(p);
            let _ = std::fs::remove_file(p);
        }
    }
}

pub fn setup() -> Setup {
    let home = temp_path("home");
    std::fs::create_dir_all(&home).unwrap();
    let record = temp_path("record.jsonl");
    Setup {
        flags: vec!["--trust".to_owned()],
        env: Vec::new(),
        _cleanup: Arc::new(Cleanup(vec![home.clone(), record.clone()])),
        home,
        record,
        cwd: None,
    }
}

impl Setup {
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.to_owned(), v.to_owned()));
        self
    }
    pub fn flags(mut self, f: &[&str]) -> Self {
        self.flags = f.iter().map(|s| (*s).to_owned()).collect();
        self
    }
    pub fn cwd(mut self, dir: &Path) -> Self {
        self.cwd = Some(dir.to_owned());
        self
    }
    /// The workspace the sessions use: the (canonical) HOME of the setup.
    pub fn ws(&self) -> String {
        std::fs::canonicalize(&self.home).unwrap().to_string_lossy().into_owned()
    }

    pub fn spawn(&self) -> Acp {
        let mut d = double();
        for (k, v) in &self.env {
            d = d.env(k, v);
        }
        let mut cmd = d.args(&self.flags).args(["acp"]).command();
        cmd.env("HOME", &self.home)
            .env("CURSOR_DOUBLE_RECORD", &self.record)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        let spawned = Instant::now();
        let mut child = cmd.spawn().expect("spawn double");
        let stdout = child.stdout.take().unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let bad = Arc::new(Mutex::new(Vec::new()));
        let bad_lines = Arc::clone(&bad);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).split(b'\n') {
                let Ok(line) = line else { return };
                let text = String::from_utf8_lossy(&line).into_owned();
                match Json::parse(&text) {
                    Ok(v) => {
                        let _ = tx.send((Instant::now(), v));
                    }
                    Err(_) => bad_lines.lock().unwrap().push(text),
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buf) {
                if n == 0 {
                    return;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Acp {
            stdin: child.stdin.take(),
            child,
            rx,
            bad,
            stderr,
            next_id: 1,
            record: self.record.clone(),
            spawned,
            backlog: VecDeque::new(),
            cwd: self.ws(),
            _cleanup: Arc::clone(&self._cleanup),
        }
    }
}

pub struct Acp {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub rx: Receiver<(Instant, Json)>,
    pub bad: Arc<Mutex<Vec<String>>>,
    pub stderr: Arc<Mutex<Vec<u8>>>,
    pub next_id: u64,
    pub record: PathBuf,
    pub spawned: Instant,
    pub backlog: VecDeque<(Instant, Json)>,
    pub cwd: String,
    /// Keeps HOME and the record file until the process is done with them.
    pub _cleanup: Arc<Cleanup>,
}

pub struct Finished {
    pub _cleanup: Arc<Cleanup>,
    pub code: Option<i32>,
    pub stderr: String,
    pub records: Vec<Json>,
    pub rest: Vec<Json>,
}

impl Finished {
    pub fn exit_record(&self) -> &Json {
        self.records.iter().find(|r| str_at(r, &["acp", "phase"]) == Some("exit")).expect("an exit record")
    }
}

pub fn records(path: &Path) -> Vec<Json> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| Json::parse(l).expect("record line is JSON"))
        .collect()
}

impl Acp {
    pub fn send_line(&mut self, line: &str) {
        if let Some(stdin) = &mut self.stdin {
            let _ = stdin.write_all(format!("{line}\n").as_bytes());
            let _ = stdin.flush();
        }
    }

    pub fn request(&mut self, method: &str, params: &str) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send_line(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#));
        id
    }

    pub fn notify(&mut self, method: &str, params: &str) {
        self.send_line(&format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{params}}}"#));
    }

    pub fn reply(&mut self, id: &Json, result: &str) {
        self.send_line(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, id.to_compact()));
    }

    pub fn next_timed(&mut self, timeout: Duration) -> Option<(Instant, Json)> {
        if let Some(m) = self.backlog.pop_front() {
            return Some(m);
        }
        match self.rx.recv_timeout(timeout) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    pub fn next(&mut self, timeout: Duration) -> Option<Json> {
        self.next_timed(timeout).map(|(_, m)| m)
    }

    /// Everything up to the response to `id` (exclusive), and the response.
    pub fn until_response(&mut self, id: u64, timeout: Duration) -> (Vec<Json>, Json) {
        let deadline = Instant::now() + timeout;
        let mut before = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(m) = self.next(left) else {
                panic!(
                    "no response to request {id} within {timeout:?}; got {:?}; stderr {}",
                    before.iter().map(s).collect::<Vec<_>>(),
                    self.stderr_text()
                );
            };
            let is_response = m.get("method").is_none() && m.get("id") == Some(&Json::from(id));
            if is_response {
                return (before, m);
            }
            before.push(m);
        }
    }

    pub fn call(&mut self, method: &str, params: &str) -> (Vec<Json>, Json) {
        let id = self.request(method, params);
        self.until_response(id, LONG)
    }

    pub fn result(&mut self, method: &str, params: &str) -> Json {
        let (_, r) = self.call(method, params);
        r.get("result").cloned().unwrap_or_else(|| panic!("{method}: expected a result, got {}", s(&r)))
    }

    pub fn error(&mut self, method: &str, params: &str) -> Json {
        let (_, r) = self.call(method, params);
        r.get("error").cloned().unwrap_or_else(|| panic!("{method}: expected an error, got {}", s(&r)))
    }

    pub fn init(&mut self) -> Json {
        self.result("initialize", r#"{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false},"clientInfo":{"name":"test","version":"0"}}"#)
    }

    pub fn new_session_params(&self) -> String {
        format!(r#"{{"cwd":"{}","mcpServers":[]}}"#, self.cwd)
    }

    /// `session/new`, returning the session id (the commands update that follows is left queued).
    pub fn new_session(&mut self) -> String {
        let params = self.new_session_params();
        let r = self.result("session/new", &params);
        str_at(&r, &["sessionId"]).unwrap().to_owned()
    }

    pub fn prompt(&mut self, sid: &str, text: &str) -> u64 {
        let params = obj_text(&[("sessionId", sid)], text);
        self.request("session/prompt", &params)
    }

    /// A whole turn: its messages and the response.
    pub fn turn(&mut self, sid: &str, text: &str) -> (Vec<Json>, Json) {
        let id = self.prompt(sid, text);
        self.until_response(id, LONG)
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub fn wait_exit(mut self) -> Finished {
        let deadline = Instant::now() + LONG;
        let status = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the double did not exit; stderr {}", self.stderr_text());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        std::thread::sleep(Duration::from_millis(50)); // let the pipe readers finish
        let mut rest: Vec<Json> = self.backlog.drain(..).map(|(_, m)| m).collect();
        while let Ok((_, m)) = self.rx.recv_timeout(Duration::from_millis(50)) {
            rest.push(m);
        }
        let bad = self.bad.lock().unwrap().clone();
        assert!(bad.is_empty(), "non-JSON lines on stdout: {bad:?}");
        Finished {
            _cleanup: Arc::clone(&self._cleanup),
            code: status.code(),
            stderr: self.stderr_text(),
            records: records(&self.record),
            rest,
        }
    }

    pub fn close(mut self) -> Finished {
        drop(self.stdin.take());
        self.wait_exit()
    }
}

/// `{"sessionId":…, "prompt":[{"type":"text","text":…}]}` with proper escaping.
pub fn obj_text(fields: &[(&str, &str)], text: &str) -> String {
    let mut o = Json::Obj(Vec::new());
    for (k, v) in fields {
        o.set(k, Json::from(*v));
    }
    o.set("prompt", Json::Arr(vec![j(&format!(r#"{{"type":"text","text":{}}}"#, Json::from(text).to_compact()))]));
    o.to_compact()
}

/// `session/update` → its `sessionUpdate`; other messages → their method (or `response`).
pub fn kind_of(m: &Json) -> String {
    match str_at(m, &["method"]) {
        Some("session/update") => str_at(m, &["params", "update", "sessionUpdate"]).unwrap_or("?").to_owned(),
        Some(other) => other.to_owned(),
        None => "response".to_owned(),
    }
}

pub fn kinds(ms: &[Json]) -> Vec<String> {
    let mut k: Vec<String> = ms.iter().map(kind_of).collect();
    k.dedup();
    k
}

pub fn message_text(ms: &[Json]) -> String {
    ms.iter()
        .filter(|m| kind_of(m) == "agent_message_chunk")
        .map(|m| str_at(m, &["params", "update", "content", "text"]).unwrap_or(""))
        .collect()
}

pub fn stop_reason(r: &Json) -> &str {
    str_at(r, &["result", "stopReason"]).unwrap_or_else(|| panic!("no stopReason in {}", s(r)))
}

pub fn values(v: &Json, key: &str) -> Vec<String> {
    match v {
        Json::Arr(items) => items.iter().filter_map(|i| i.get(key).and_then(Json::as_str).map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

pub fn config<'a>(options: &'a Json, id: &str) -> &'a Json {
    match options {
        Json::Arr(items) => {
            items.iter().find(|o| str_at(o, &["id"]) == Some(id)).unwrap_or_else(|| panic!("no config option {id}"))
        }
        _ => panic!("configOptions is not an array"),
    }
}
