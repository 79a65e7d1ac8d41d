//! A running release sidecar and a small JSON-RPC client on its pipes (Content-Length framing, one
//! reader thread that timestamps every frame as it arrives), turns followed to their answers.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use crate::bench::direct::base_env;
use crate::bench::Bins;

/// A frame from the sidecar, stamped with the time its last byte was read from the pipe.
struct Incoming {
    at: Instant,
    bytes: usize,
    kind: Kind,
}

enum Kind {
    /// A `chat/delta` of kind `text`.
    Text { turn: String, text: String },
    /// Any other notification.
    Notification,
    /// A response: its id and its result or error.
    Response { id: Option<u64>, outcome: std::result::Result<Value, Value> },
}

/// A running sidecar and a JSON-RPC client on its pipes.
pub struct Sidecar {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    rx: Receiver<Vec<Incoming>>,
    pending: std::collections::VecDeque<Incoming>,
    next_id: u64,
    pub ws: PathBuf,
    double: PathBuf,
    pub spawned: Instant,
    stderr_file: PathBuf,
}

/// What the client saw of one turn.
pub struct TurnTrace {
    pub sent: Instant,
    pub first_text: Option<Instant>,
    pub last_text: Option<Instant>,
    pub deltas: usize,
    pub delta_frame_bytes: usize,
    pub text: String,
    pub answered: Instant,
    pub result: Value,
}

impl Sidecar {
    /// Start the release sidecar with its folders in `dir` (state in `state` when given) and the
    /// double's settings in its environment (its CLI children inherit them).
    pub fn launch(bins: &Bins, dir: &Path, state: Option<&Path>, env: &[(&str, String)]) -> Result<Sidecar> {
        let ws = dir.join("ws");
        std::fs::create_dir_all(&ws)?;
        let ws = ws.canonicalize()?;
        let stderr_file = dir.join("sidecar.stderr");
        let mut cmd = Command::new(&bins.bridge);
        cmd.env_clear()
            .envs(base_env(dir))
            .env("CURSOR_BRIDGE_STATE_DIR", state.map_or_else(|| dir.join("state"), Path::to_path_buf))
            .env("CURSOR_BRIDGE_LOG_DIR", dir.join("logs"))
            .env("CURSOR_BRIDGE_LOG", "info")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr_file)?);
        let spawned = Instant::now();
        let mut child = cmd.spawn().with_context(|| format!("starting {}", bins.bridge.display()))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || read_frames(stdout, tx));
        Ok(Sidecar {
            stdin: child.stdin.take(),
            child: Some(child),
            rx,
            pending: Default::default(),
            next_id: 1,
            ws,
            double: bins.double.clone(),
            spawned,
            stderr_file,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    pub fn initialize_params(&self, options: Value) -> Value {
        json!({
            "protocolVersion": 1,
            "clientInfo": {"name": "xtask-bench", "version": "1"},
            "workspaceFolders": [self.ws],
            "cliPath": self.double,
            "options": options,
        })
    }

    pub fn initialize(&mut self, options: Value) -> Result<()> {
        let params = self.initialize_params(options);
        let (result, _, _) = self.request("initialize", params, Duration::from_secs(30))?;
        if result["capabilities"]["cli"]["found"] != json!(true) {
            bail!("the sidecar did not find the CLI double: {result}");
        }
        Ok(())
    }

    /// Write frames in one go; returns the time just before the write.
    fn write(&mut self, bodies: &[Value]) -> Result<Instant> {
        let mut buf = Vec::new();
        for body in bodies {
            let bytes = serde_json::to_vec(body)?;
            write!(buf, "Content-Length: {}\r\n\r\n", bytes.len())?;
            buf.extend_from_slice(&bytes);
        }
        let stdin = self.stdin.as_mut().ok_or_else(|| anyhow!("stdin closed"))?;
        let at = Instant::now();
        stdin.write_all(&buf)?;
        stdin.flush()?;
        Ok(at)
    }

    fn recv(&mut self, deadline: Instant) -> Result<Incoming> {
        if let Some(m) = self.pending.pop_front() {
            return Ok(m);
        }
        match self.rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(batch) => {
                self.pending.extend(batch);
                self.pending.pop_front().ok_or_else(|| anyhow!("empty batch"))
            }
            Err(RecvTimeoutError::Timeout) => bail!("the sidecar did not answer in time{}", self.stderr_tail()),
            Err(RecvTimeoutError::Disconnected) => bail!("the sidecar closed its output{}", self.stderr_tail()),
        }
    }

    fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr_file).unwrap_or_default();
        let tail: String = text.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
        if tail.trim().is_empty() { String::new() } else { format!("; its stderr: {tail}") }
    }

    /// A request and its result; notifications that arrive meanwhile are dropped.
    pub fn request(&mut self, method: &str, params: Value, timeout: Duration) -> Result<(Value, Instant, Instant)> {
        let id = self.next_id;
        self.next_id += 1;
        let sent = self.write(&[json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})])?;
        let deadline = sent + timeout;
        loop {
            let m = self.recv(deadline)?;
            if let Kind::Response { id: Some(got), outcome } = m.kind {
                if got == id {
                    return match outcome {
                        Ok(result) => Ok((result, sent, m.at)),
                        Err(e) => bail!("{method} failed: {e}"),
                    };
                }
            }
        }
    }

    pub fn turn(&mut self, turn_id: &str, conversation: &str, messages: Vec<Value>, timeout: Duration) -> Result<TurnTrace> {
        let mut traces = self.turns(&[(turn_id.to_string(), conversation.to_string(), messages)], timeout)?;
        Ok(traces.remove(0))
    }

    /// Send every `(turnId, conversationId, messages)` at once and follow them to their answers.
    pub fn turns(&mut self, specs: &[(String, String, Vec<Value>)], timeout: Duration) -> Result<Vec<TurnTrace>> {
        let first_id = self.next_id;
        self.next_id += specs.len() as u64;
        let bodies: Vec<Value> = specs
            .iter()
            .enumerate()
            .map(|(k, (turn, conv, messages))| {
                json!({"jsonrpc": "2.0", "id": first_id + k as u64, "method": "chat/send", "params": {
                    "turnId": turn, "model": "auto", "mode": "agent", "conversationId": conv, "messages": messages,
                }})
            })
            .collect();
        let sent = self.write(&bodies)?;
        let deadline = sent + timeout;
        let by_turn: HashMap<&str, usize> = specs.iter().enumerate().map(|(k, s)| (s.0.as_str(), k)).collect();
        let mut traces: Vec<TurnTrace> = specs
            .iter()
            .map(|_| TurnTrace {
                sent,
                first_text: None,
                last_text: None,
                deltas: 0,
                delta_frame_bytes: 0,
                text: String::new(),
                answered: sent,
                result: Value::Null,
            })
            .collect();
        let mut open = specs.len();
        while open > 0 {
            let m = self.recv(deadline)?;
            match m.kind {
                Kind::Text { turn, text } => {
                    let Some(&k) = by_turn.get(turn.as_str()) else { continue };
                    let t = &mut traces[k];
                    t.first_text.get_or_insert(m.at);
                    t.last_text = Some(m.at);
                    t.deltas += 1;
                    t.delta_frame_bytes += m.bytes;
                    t.text.push_str(&text);
                }
                Kind::Notification => {}
                Kind::Response { id: Some(id), outcome } if id >= first_id && id < first_id + specs.len() as u64 => {
                    let k = (id - first_id) as usize;
                    let t = &mut traces[k];
                    t.answered = m.at;
                    t.result = match outcome {
                        Ok(result) => result,
                        Err(e) => bail!("chat/send {} failed: {e}", specs[k].0),
                    };
                    open -= 1;
                }
                Kind::Response { .. } => {}
            }
        }
        Ok(traces)
    }
}

impl Drop for Sidecar {
    /// End of input makes the sidecar stop every CLI process and exit; kill it if it does not.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let Some(mut child) = self.child.take() else { return };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        eprintln!("bench: the sidecar (pid {}) did not exit after end of input; killing it", child.id());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Reader thread: Content-Length frames from the sidecar's stdout. Everything read in one `read`
/// is parsed and handed over as one batch, each frame stamped with the time of that read, so the
/// client keeps up with hundreds of thousands of frames per second on a small machine.
fn read_frames(mut stdout: impl Read, tx: mpsc::Sender<Vec<Incoming>>) {
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
    let mut chunk = vec![0u8; 256 * 1024];
    let mut start = 0; // first unconsumed byte of `buf`
    loop {
        let n = match stdout.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let at = Instant::now();
        if start > 0 && start == buf.len() {
            buf.clear();
            start = 0;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut batch = Vec::new();
        while let Some((body, next)) = next_frame(&buf[start..]) {
            let len = body.len();
            if let Some(kind) = classify(body) {
                batch.push(Incoming { at, bytes: len, kind });
            }
            start += next;
        }
        if start > buf.len() / 2 {
            buf.drain(..start);
            start = 0;
        }
        if !batch.is_empty() && tx.send(batch).is_err() {
            return;
        }
    }
}

/// The body of the first whole frame in `data` and the offset just past it.
fn next_frame(data: &[u8]) -> Option<(&[u8], usize)> {
    let end = data.windows(4).position(|w| w == b"\r\n\r\n")?;
    let header = std::str::from_utf8(&data[..end]).ok()?;
    let len: usize = header.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim().eq_ignore_ascii_case("content-length").then(|| value.trim().parse().ok())?
    })?;
    let body_start = end + 4;
    (data.len() >= body_start + len).then(|| (&data[body_start..body_start + len], body_start + len))
}

/// What the client needs of a frame, read without building a whole JSON tree for deltas.
fn classify(body: &[u8]) -> Option<Kind> {
    #[derive(serde::Deserialize)]
    struct Frame<'a> {
        #[serde(default)]
        id: Option<u64>,
        #[serde(default, borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        #[serde(default, borrow)]
        params: Option<&'a serde_json::value::RawValue>,
        #[serde(default)]
        result: Option<Value>,
        #[serde(default)]
        error: Option<Value>,
    }
    #[derive(serde::Deserialize)]
    struct Delta<'a> {
        #[serde(rename = "turnId", borrow)]
        turn_id: std::borrow::Cow<'a, str>,
        #[serde(borrow)]
        kind: std::borrow::Cow<'a, str>,
        #[serde(default)]
        text: Option<String>,
    }
    let frame: Frame<'_> = serde_json::from_slice(body).ok()?;
    match frame.method.as_deref() {
        Some("chat/delta") => {
            let delta: Delta<'_> = serde_json::from_str(frame.params?.get()).ok()?;
            Some(match (delta.kind.as_ref(), delta.text) {
                ("text", Some(text)) => Kind::Text { turn: delta.turn_id.into_owned(), text },
                _ => Kind::Notification,
            })
        }
        Some(_) => Some(Kind::Notification),
        None => Some(Kind::Response {
            id: frame.id,
            outcome: match frame.error {
                Some(e) => Err(e),
                None => Ok(frame.result.unwrap_or(Value::Null)),
            },
        }),
    }
}
