//! A real ACP agent under test, driven by the sidecar's own client: started through
//! `backend::process::spawn` (own process group, killed as a tree), spoken to through
//! `backend::acp::connection::Connection`, its `session/update`s turned into events by
//! `backend::acp::updates::Updates`. Every wait is bounded; everything that happened is kept in a
//! transcript for the failure message.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use cursor_bridge::backend::acp::connection::{Connection, Incoming, RpcError};
use cursor_bridge::backend::acp::updates::Updates;
use cursor_bridge::backend::process::{self, ChildProcess, SpawnSpec};
use cursor_bridge::backend::Event;
use cursor_bridge::util::sync::AbortOnDrop;
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The agent's stderr kept for the failure message.
const STDERR_TAIL: usize = 16 * 1024;
/// After `session/cancel`, how long the prompt may take to answer.
pub const CANCEL_BOUND: Duration = Duration::from_secs(10);
/// After its stdin closes, how long the agent may take to exit.
const EXIT_BOUND: Duration = Duration::from_secs(10);

/// How to start the agent: the program, its arguments and its whole environment (nothing is
/// inherited: a `GH_TOKEN` or `OPENAI_API_KEY` of the machine must not reach it).
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

/// One agent→client request and what we answered.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    pub method: String,
    pub params: Value,
    pub answer: Value,
}

/// What a client saw of one `session/prompt`.
#[derive(Debug, Default)]
pub struct Turn {
    /// `None` when the prompt failed (`error`).
    pub stop_reason: Option<String>,
    pub error: Option<String>,
    pub events: Vec<Event>,
    /// `session/update` kinds for this session, counted.
    pub update_kinds: BTreeMap<String, usize>,
    pub requests: Vec<AgentRequest>,
    /// From `session/cancel` to the prompt's answer.
    pub cancel_to_answer: Option<Duration>,
    pub elapsed: Duration,
}

impl Turn {
    pub fn text(&self) -> String {
        self.events.iter().filter_map(|e| if let Event::Text(t) = e { Some(t.as_str()) } else { None }).collect()
    }
    pub fn text_events(&self) -> usize {
        self.events.iter().filter(|e| matches!(e, Event::Text(_))).count()
    }
    pub fn thinking(&self) -> String {
        self.events.iter().filter_map(|e| if let Event::Thinking(t) = e { Some(t.as_str()) } else { None }).collect()
    }
}

pub struct Agent {
    child: Option<ChildProcess>,
    conn: Option<Arc<Connection>>,
    incoming: mpsc::Receiver<Incoming>,
    incoming_open: bool,
    stderr: Arc<Mutex<Vec<u8>>>,
    _stderr_reader: AbortOnDrop,
    started: Instant,
    transcript: Vec<String>,
}

impl Agent {
    pub fn start(launch: &Launch) -> Result<Agent> {
        // Grandchildren that outlive their parent come to us, where the sweep at the end finds them.
        process::become_subreaper();
        let inherited: Vec<_> = std::env::vars_os().map(|(k, _)| k).collect();
        let spec = SpawnSpec {
            program: launch.program.clone(),
            args: launch.args.iter().map(Into::into).collect(),
            cwd: Some(launch.cwd.clone()),
            env: launch.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
            env_remove: inherited,
        };
        let mut child = process::spawn(&spec).with_context(|| format!("starting {}", launch.program.display()))?;
        let (stdin, stdout) = (child.take_stdin().expect("piped"), child.take_stdout().expect("piped"));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let reader = {
            let (tail, pipe) = (stderr.clone(), child.take_stderr());
            tokio::spawn(async move {
                let Some(mut pipe) = pipe else { return };
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
                    let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                    tail.extend_from_slice(&chunk[..n]);
                    let excess = tail.len().saturating_sub(STDERR_TAIL);
                    tail.drain(..excess);
                }
            })
        };
        let (conn, incoming) = Connection::start(stdout, stdin);
        Ok(Agent {
            child: Some(child),
            conn: Some(Arc::new(conn)),
            incoming,
            incoming_open: true,
            stderr,
            _stderr_reader: AbortOnDrop(reader.abort_handle()),
            started: Instant::now(),
            transcript: Vec::new(),
        })
    }

    fn conn(&self) -> Arc<Connection> {
        self.conn.clone().expect("open until shut_down")
    }

    fn note(&mut self, line: String) {
        let ms = self.started.elapsed().as_millis();
        self.transcript.push(format!("{ms:>7} ms  {line}"));
    }

    /// A request of ours, answered within `bound`.
    pub async fn request(&mut self, method: &str, params: Value, bound: Duration) -> Result<Value> {
        self.note(format!("→ {method} {}", cut(&params.to_string(), 300)));
        let conn = self.conn();
        let call = conn.request(method, params);
        tokio::pin!(call);
        let deadline = Instant::now() + bound;
        let outcome = loop {
            tokio::select! {
                r = &mut call => break r,
                // The agent may ask something before it answers (and would wait for us).
                m = self.incoming.recv(), if self.incoming_open => match m {
                    Some(m) => self.between_turns(m).await,
                    None => self.incoming_open = false,
                },
                _ = tokio::time::sleep_until(deadline) => {
                    self.note(format!("✗ {method}: no answer within {bound:?}"));
                    bail!("{method}: no answer within {bound:?}");
                }
            }
        };
        match outcome {
            Ok(result) => {
                self.note(format!("← {method} result {}", cut(&result.to_string(), 600)));
                Ok(result)
            }
            Err(e) => {
                self.note(format!("← {method} error {e}"));
                Err(anyhow!("{method} failed: {}", describe(&e)))
            }
        }
    }

    /// Send a prompt and follow its turn to the answer: updates become events, the agent's
    /// requests are answered. `cancel_after`: send `session/cancel` once that many text events
    /// have arrived (then the answer is due within [`CANCEL_BOUND`]).
    pub async fn prompt(
        &mut self,
        session: &str,
        text: &str,
        cancel_after: Option<usize>,
        bound: Duration,
    ) -> Result<Turn> {
        // What arrived between turns (commands, config updates) belongs to no turn.
        while let Ok(m) = self.incoming.try_recv() {
            self.between_turns(m).await;
        }
        let started = Instant::now();
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        self.note(format!("→ session/prompt {text:?}"));
        let conn = self.conn();
        let call = tokio::spawn(async move { conn.request("session/prompt", params).await });
        let _abort = AbortOnDrop(call.abort_handle());
        let mut call = call;
        let mut deadline = started + bound;
        let mut turn = Turn::default();
        let mut updates = Updates::new(&cursor_bridge::backend::acp::quirks::PLAIN);
        let mut cancel_sent: Option<Instant> = None;
        let outcome = loop {
            if let (Some(n), None) = (cancel_after, cancel_sent) {
                if turn.text_events() >= n {
                    self.note("→ session/cancel".into());
                    self.conn().notify("session/cancel", json!({"sessionId": session})).await.ok();
                    let now = Instant::now();
                    cancel_sent = Some(now);
                    deadline = deadline.min(now + CANCEL_BOUND);
                }
            }
            tokio::select! {
                r = &mut call => break r.unwrap_or(Err(RpcError::Closed)),
                m = self.incoming.recv(), if self.incoming_open => match m {
                    Some(m) => self.in_turn(m, session, &mut updates, &mut turn, cancel_sent.is_some()).await,
                    None => self.incoming_open = false,
                },
                _ = tokio::time::sleep_until(deadline) => {
                    let what = if cancel_sent.is_some() { format!("within {CANCEL_BOUND:?} of session/cancel") } else { format!("within {bound:?}") };
                    self.note(format!("✗ session/prompt: no answer {what}"));
                    bail!("session/prompt {text:?}: no answer {what} ({} text events so far: {:?})", turn.text_events(), turn.text());
                }
            }
        };
        // Updates sent before the answer are queued before it: take them too.
        while let Ok(m) = self.incoming.try_recv() {
            self.in_turn(m, session, &mut updates, &mut turn, cancel_sent.is_some()).await;
        }
        turn.events.extend(updates.finish());
        turn.elapsed = started.elapsed();
        turn.cancel_to_answer = cancel_sent.map(|at| at.elapsed());
        match outcome {
            Ok(result) => {
                self.note(format!("← session/prompt result {}", cut(&result.to_string(), 300)));
                turn.stop_reason = result.get("stopReason").and_then(Value::as_str).map(str::to_string);
            }
            Err(e) => {
                self.note(format!("← session/prompt error {e}"));
                turn.error = Some(describe(&e));
            }
        }
        Ok(turn)
    }

    async fn in_turn(&mut self, m: Incoming, session: &str, updates: &mut Updates, turn: &mut Turn, cancelled: bool) {
        match m {
            Incoming::Notification { method, params } if method == "session/update" => {
                let update = params.get("update").cloned().unwrap_or(Value::Null);
                let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("?").to_string();
                if params.get("sessionId").and_then(Value::as_str) != Some(session) {
                    self.note(format!(
                        "← session/update {kind} for another session: {}",
                        cut(&params.to_string(), 200)
                    ));
                    return;
                }
                let events = updates.events(&update);
                self.note(format!("← update {kind} {} → {events:?}", cut(&update.to_string(), 200)));
                *turn.update_kinds.entry(kind).or_default() += 1;
                turn.events.extend(events);
            }
            Incoming::Request { id, method, params } => {
                let answer = self.answer(id, &method, &params, cancelled).await;
                turn.requests.push(AgentRequest { method, params, answer });
            }
            other => self.between_turns(other).await,
        }
    }

    async fn between_turns(&mut self, m: Incoming) {
        match m {
            Incoming::Notification { method, params } => {
                self.note(format!("← {method} {}", cut(&params.to_string(), 200)));
            }
            Incoming::Request { id, method, params } => {
                self.answer(id, &method, &params, false).await;
            }
        }
    }

    /// Every request of the agent gets an answer (it would wait forever otherwise): a permission
    /// is refused once (cancelled after `session/cancel`, as the protocol asks), anything else
    /// is a method we do not serve (we advertised no file system and no terminal).
    async fn answer(&mut self, id: Value, method: &str, params: &Value, cancelled: bool) -> Value {
        self.note(format!("← request {method} (id {id}) {}", cut(&params.to_string(), 400)));
        let conn = self.conn();
        let answer = if method == "session/request_permission" {
            let options = params.get("options").and_then(Value::as_array).cloned().unwrap_or_default();
            let reject = options.iter().find(|o| o.get("kind") == Some(&json!("reject_once")));
            let outcome = match reject.and_then(|o| o.get("optionId")) {
                Some(option) if !cancelled => json!({"outcome": {"outcome": "selected", "optionId": option}}),
                _ => json!({"outcome": {"outcome": "cancelled"}}),
            };
            let _ = conn.respond(id, outcome.clone()).await;
            outcome
        } else {
            let _ = conn.refuse(id, -32601, "method not supported by this client").await;
            json!({"error": -32601})
        };
        self.note(format!("→ answer {answer}"));
        answer
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.note(format!("→ {method} {}", cut(&params.to_string(), 200)));
        let _ = self.conn().notify(method, params).await;
    }

    /// Close the agent's stdin and wait for it to exit; then make sure nothing it started is left:
    /// its group is killed, and orphans adopted by this (subreaper) process are swept. Returns a
    /// line for the report; fails only when a process survives all that.
    pub async fn shut_down(&mut self) -> Result<String> {
        let Some(mut child) = self.child.take() else { return Ok("already stopped".into()) };
        let running = process::descendants_of(child.pid());
        let gone_before = !child.is_running();
        self.conn = None; // its writer owned the stdin: closing it is the agent's signal to go
        self.note("→ (stdin closed)".into());
        let exit = match tokio::time::timeout(EXIT_BOUND, child.wait()).await {
            Ok(status) => {
                let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                let when = if gone_before { "before its input ended" } else { "on end of input" };
                format!("exited {when} ({status})")
            }
            Err(_) => {
                child.terminate(Duration::from_secs(2)).await;
                format!("did not exit within {EXIT_BOUND:?} of end of input; killed")
            }
        };
        drop(child);
        let left: Vec<u32> = running.iter().copied().filter(|pid| alive(*pid)).collect();
        process::sweep_orphans();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut ours = process::descendants_of(std::process::id());
        while !ours.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            process::sweep_orphans();
            ours = process::descendants_of(std::process::id());
        }
        self.note(format!("agent {exit}"));
        if !ours.is_empty() {
            let listed: Vec<String> = ours.iter().map(|pid| format!("{pid} {}", cmdline(*pid))).collect();
            bail!("processes of the agent survived its shutdown: {listed:?}");
        }
        Ok(format!("{exit}; of the {} process(es) it had started, {} outlived it (killed)", running.len(), left.len()))
    }

    /// The agent's stderr so far (its tail).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }

    pub fn transcript(&self) -> &[String] {
        &self.transcript
    }
}

fn describe(e: &RpcError) -> String {
    match e {
        RpcError::Remote { code, message, data } => {
            format!("{message} ({code}){}", data.as_ref().map(|d| format!(" data: {d}")).unwrap_or_default())
        }
        RpcError::Closed => "the agent closed the connection (it exited?)".into(),
    }
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " ").trim().to_string())
        .unwrap_or_default()
}
