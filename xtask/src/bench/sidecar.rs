//! A running release sidecar, seen the way the figures need it: each frame stamped with its arrival
//! (the shared client, `cursor-bridge-test-client`), deltas read without building a JSON tree, and
//! turns followed to their answers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use cursor_bridge_test_client::{
    initialize_params, request, wait_with_timeout, Connection, Launcher, Process, RecvError, Stamped, Stderr,
};
use serde_json::{json, Value};

use crate::bench::direct::base_env;
use crate::bench::Bins;

/// What the client needs of a frame.
enum Kind {
    /// A `chat/delta` of kind `text`.
    Text { turn: String, text: String },
    /// A `chat/delta` of kind `toolCall` (client-tools mode).
    ToolCall { turn: String, call: Value },
    /// Any other notification.
    Notification,
    /// A response: its id and its result or error.
    Response { id: Option<u64>, outcome: std::result::Result<Value, Value> },
}

/// A running sidecar and a JSON-RPC client on its pipes.
pub struct Sidecar {
    child: Child,
    conn: Connection<Kind>,
    stderr: Stderr,
    pub ws: PathBuf,
    double: PathBuf,
    /// Just before the spawn.
    pub spawned: Instant,
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
    /// The first `toolCall` delta, and every call (`{callId, name, input}`).
    pub first_tool_call: Option<Instant>,
    pub tool_calls: Vec<Value>,
}

impl Sidecar {
    /// Start the release sidecar with its folders in `dir` (state in `state` when given) and the
    /// double's settings in its environment (its CLI children inherit them).
    pub fn launch(bins: &Bins, dir: &Path, state: Option<&Path>, env: &[(&str, String)]) -> Result<Sidecar> {
        let ws = dir.join("ws");
        std::fs::create_dir_all(&ws)?;
        let ws = ws.canonicalize()?;
        let mut launcher = Launcher::new(&bins.bridge, dir)
            .clear_env()
            .envs(base_env(dir))
            .log_level("info")
            // The figures of print mode, unless a scenario asks for another backend.
            .env("CURSOR_BRIDGE_BACKEND", "print")
            .stderr_file(dir.join("sidecar.stderr"));
        if let Some(state) = state {
            launcher = launcher.state_dir(state);
        }
        let Process { child, conn, spawned, stderr } =
            launcher.envs(env.iter().map(|(k, v)| (k, v))).start(classify)?;
        Ok(Sidecar { child, conn, stderr, ws, double: bins.double.clone(), spawned })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn initialize_params(&self, options: Value) -> Value {
        initialize_params(("xtask-bench", "1"), &self.ws, &self.double, options)
    }

    pub fn initialize(&mut self, options: Value) -> Result<()> {
        let params = self.initialize_params(options);
        let (result, _, _) = self.request("initialize", params, Duration::from_secs(30))?;
        if result["capabilities"]["cli"]["found"] != json!(true) {
            bail!("the sidecar did not find the CLI double: {result}");
        }
        Ok(())
    }

    fn recv(&mut self, deadline: Instant) -> Result<Stamped<Kind>> {
        match self.conn.recv(deadline.saturating_duration_since(Instant::now())) {
            Ok(m) => Ok(m),
            Err(RecvError::Timeout) => bail!("the sidecar did not answer in time{}", self.stderr_tail()),
            Err(RecvError::Closed) => bail!("the sidecar closed its output{}", self.stderr_tail()),
        }
    }

    fn stderr_tail(&self) -> String {
        let text = self.stderr.text();
        let tail: String = text.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
        if tail.trim().is_empty() {
            String::new()
        } else {
            format!("; its stderr: {tail}")
        }
    }

    /// A request and its result; notifications that arrive meanwhile are dropped.
    pub fn request(&mut self, method: &str, params: Value, timeout: Duration) -> Result<(Value, Instant, Instant)> {
        let (id, sent) = self.conn.request(method, params)?;
        let deadline = sent + timeout;
        loop {
            let m = self.recv(deadline)?;
            if let Kind::Response { id: Some(got), outcome } = m.message {
                if got == id {
                    return match outcome {
                        Ok(result) => Ok((result, sent, m.at)),
                        Err(e) => bail!("{method} failed: {e}"),
                    };
                }
            }
        }
    }

    pub fn turn(
        &mut self,
        turn_id: &str,
        conversation: &str,
        messages: Vec<Value>,
        timeout: Duration,
    ) -> Result<TurnTrace> {
        self.turn_with(turn_id, conversation, messages, &json!({}), timeout)
    }

    /// A turn whose `chat/send` params also carry the fields of `extra` (e.g. `tools`).
    pub fn turn_with(
        &mut self,
        turn_id: &str,
        conversation: &str,
        messages: Vec<Value>,
        extra: &Value,
        timeout: Duration,
    ) -> Result<TurnTrace> {
        let spec = [(turn_id.to_string(), conversation.to_string(), messages)];
        let mut traces = self.turns_with(&spec, extra, timeout)?;
        Ok(traces.remove(0))
    }

    /// Send every `(turnId, conversationId, messages)` at once and follow them to their answers.
    pub fn turns(&mut self, specs: &[(String, String, Vec<Value>)], timeout: Duration) -> Result<Vec<TurnTrace>> {
        self.turns_with(specs, &json!({}), timeout)
    }

    fn turns_with(
        &mut self,
        specs: &[(String, String, Vec<Value>)],
        extra: &Value,
        timeout: Duration,
    ) -> Result<Vec<TurnTrace>> {
        let first_id = self.conn.take_ids(specs.len() as u64);
        let bodies: Vec<Value> = specs
            .iter()
            .enumerate()
            .map(|(k, (turn, conv, messages))| {
                let mut params = json!({
                    "turnId": turn, "model": "auto", "mode": "agent", "conversationId": conv, "messages": messages,
                });
                if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
                    params.extend(extra.clone());
                }
                request(first_id + k as u64, "chat/send", params)
            })
            .collect();
        let sent = self.conn.send(&bodies)?;
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
                first_tool_call: None,
                tool_calls: Vec::new(),
            })
            .collect();
        let mut open = specs.len();
        while open > 0 {
            let m = self.recv(deadline)?;
            match m.message {
                Kind::Text { turn, text } => {
                    let Some(&k) = by_turn.get(turn.as_str()) else { continue };
                    let t = &mut traces[k];
                    t.first_text.get_or_insert(m.at);
                    t.last_text = Some(m.at);
                    t.deltas += 1;
                    t.delta_frame_bytes += m.bytes;
                    t.text.push_str(&text);
                }
                Kind::ToolCall { turn, call } => {
                    let Some(&k) = by_turn.get(turn.as_str()) else { continue };
                    traces[k].first_tool_call.get_or_insert(m.at);
                    traces[k].tool_calls.push(call);
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

impl Sidecar {
    /// Start a turn, press Stop once its first text arrived: (first text, cancel sent, the
    /// turn's answer (-32800) received).
    pub fn cancel_after_first_text(
        &mut self,
        turn_id: &str,
        conversation: &str,
        messages: Vec<Value>,
        timeout: Duration,
    ) -> Result<(Instant, Instant, Instant)> {
        let params = json!({"turnId": turn_id, "model": "auto", "mode": "agent", "conversationId": conversation, "messages": messages});
        let (id, sent) = self.conn.request("chat/send", params)?;
        let deadline = sent + timeout;
        let mut first = None;
        let mut cancelled = None;
        loop {
            let m = self.recv(deadline)?;
            match m.message {
                Kind::Text { turn, .. } if turn == turn_id && first.is_none() => {
                    first = Some(m.at);
                    cancelled = Some(self.conn.notify("$/cancelRequest", json!({"id": id}))?);
                }
                Kind::Response { id: Some(got), outcome } if got == id => {
                    let (Some(first), Some(cancelled)) = (first, cancelled) else {
                        bail!("the turn ended before any text: {outcome:?}");
                    };
                    match outcome {
                        Err(e) if e["code"] == json!(-32800) => return Ok((first, cancelled, m.at)),
                        other => bail!("the cancelled turn was not answered -32800: {other:?}"),
                    }
                }
                _ => {}
            }
        }
    }
}

impl Sidecar {
    /// Start `streaming` (a long answer), and once its first text arrived send `new`: the trace of
    /// `new` (its `sent` is when it was sent), with `streaming` still going when `new`'s first text
    /// came (an error otherwise: the figure would not be what it says).
    pub fn turn_while_streaming(
        &mut self,
        streaming: (&str, &str, Vec<Value>),
        new: (&str, &str, Vec<Value>),
        timeout: Duration,
    ) -> Result<TurnTrace> {
        let body = |(turn, conv, messages): (&str, &str, Vec<Value>)| json!({"turnId": turn, "model": "auto", "mode": "agent", "conversationId": conv, "messages": messages});
        let (a_turn, b_turn) = (streaming.0.to_string(), new.0.to_string());
        let (a_id, a_sent) = self.conn.request("chat/send", body(streaming))?;
        let deadline = a_sent + timeout;
        let mut b_body = Some(body(new));
        let mut b_id = None;
        let mut a_done = false;
        let mut trace: Option<TurnTrace> = None;
        loop {
            let m = self.recv(deadline)?;
            match m.message {
                Kind::Text { turn, .. } if turn == a_turn && b_body.is_some() => {
                    let (id, sent) = self.conn.request("chat/send", b_body.take().unwrap_or_default())?;
                    b_id = Some(id);
                    trace = Some(TurnTrace {
                        sent,
                        first_text: None,
                        last_text: None,
                        deltas: 0,
                        delta_frame_bytes: 0,
                        text: String::new(),
                        answered: sent,
                        result: Value::Null,
                        first_tool_call: None,
                        tool_calls: Vec::new(),
                    });
                }
                Kind::Text { turn, text } if turn == b_turn => {
                    if let Some(t) = trace.as_mut() {
                        if t.first_text.is_none() && a_done {
                            bail!("the streaming turn ended before the new conversation's first text");
                        }
                        t.first_text.get_or_insert(m.at);
                        t.last_text = Some(m.at);
                        t.deltas += 1;
                        t.text.push_str(&text);
                    }
                }
                Kind::Response { id: Some(got), outcome } if got == a_id => {
                    if let Err(e) = outcome {
                        bail!("chat/send {a_turn} failed: {e}");
                    }
                    if b_id.is_none() {
                        bail!("the streaming turn ended before any text");
                    }
                    a_done = true;
                }
                Kind::Response { id: Some(got), outcome } if Some(got) == b_id => {
                    let mut t = trace.take().unwrap_or_else(|| unreachable!("b was sent"));
                    t.answered = m.at;
                    t.result = match outcome {
                        Ok(result) => result,
                        Err(e) => bail!("chat/send {b_turn} failed: {e}"),
                    };
                    if t.first_text.is_some() && !a_done {
                        // Let the stream finish so the next iteration starts quiet.
                        loop {
                            let m = self.recv(deadline)?;
                            if let Kind::Response { id: Some(got), .. } = m.message {
                                if got == a_id {
                                    break;
                                }
                            }
                        }
                    }
                    return Ok(t);
                }
                _ => {}
            }
        }
    }
}

impl Drop for Sidecar {
    /// End of input makes the sidecar stop every CLI process and exit; kill it if it does not.
    fn drop(&mut self) {
        self.conn.close_stdin();
        if wait_with_timeout(&mut self.child, Duration::from_secs(5)).is_none() {
            eprintln!("bench: the sidecar (pid {}) did not exit after end of input; killing it", self.child.id());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
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
        #[serde(rename = "callId", default)]
        call_id: Option<String>,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        input: Option<Value>,
    }
    let frame: Frame<'_> = serde_json::from_slice(body).ok()?;
    match frame.method.as_deref() {
        Some("chat/delta") => {
            let delta: Delta<'_> = serde_json::from_str(frame.params?.get()).ok()?;
            Some(match (delta.kind.as_ref(), delta.text) {
                ("text", Some(text)) => Kind::Text { turn: delta.turn_id.into_owned(), text },
                ("toolCall", _) => Kind::ToolCall {
                    turn: delta.turn_id.into_owned(),
                    call: json!({"callId": delta.call_id, "name": delta.name, "input": delta.input}),
                },
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
