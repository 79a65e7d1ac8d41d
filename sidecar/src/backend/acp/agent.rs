//! One ACP agent's process holding (at most) one session: its start and handshake (`initialize`,
//! `authenticate` unless a key is set), `session/new` and `session/load`, and the routing of
//! what it sends. The agent's own words and readings (its error texts, its auth policy, which
//! failures are retried) are its [`AgentQuirks`]; what its sessions configure (modes, models)
//! is its [`SessionConfig`]. One process per conversation, not one process multiplexing
//! sessions: an agent may send requests without a `sessionId` (Cursor's `cursor/*`,
//! docs/cursor-acp.md §9, §11), so with two sessions in one process a blocking question could
//! not be told apart, and one conversation's turn could be answered
//! on another's behalf. With one session per process every message is unambiguous, a crash loses
//! one conversation's warmth only, and killing the tree on cancel touches nobody else.
//!
//! What the agent sends is routed by `router.rs`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::connection::{Connection, Incoming, RpcError};
pub use super::quirks::StartFailure;
use super::quirks::{AgentQuirks, StartError, TurnError};
use super::router::{self, cancelled_outcome, forget, Shared};
use super::tools::ToolHost;
use crate::backend::mcp::McpLimits;
use crate::backend::process::{self, ChildProcess, SpawnSpec};
use crate::error::BridgeError;
use crate::util::sync::{lock, AbortOnDrop};

/// Start-up and `initialize` (0.7 s observed; a CLI that updates itself takes longer).
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(30);
/// `authenticate` hangs when signed out (Cursor's does, docs/cursor-acp.md §3.2), and may when
/// the agent's service is slow: bounded, then a timeout (only the agent's own answer says "not
/// signed in", [`AgentQuirks::is_not_signed_in`]).
const AUTHENTICATE_TIMEOUT: Duration = Duration::from_secs(10);
/// `session/new` fetches models and config from the agent's servers (Cursor: ~2 s observed).
const SESSION_TIMEOUT: Duration = Duration::from_secs(30);
/// A `session/load` whose replay keeps coming may take this long in all.
const LOAD_LIMIT: Duration = Duration::from_secs(300);
/// A `session/new` failure the agent says is passing ([`AgentQuirks::retries_session_new`]) is
/// retried this often on the same connection.
const SESSION_RETRIES: usize = 2;
/// Short requests inside a session (mode, model).
pub const CONFIG_TIMEOUT: Duration = Duration::from_secs(15);
const STDERR_KEEP: usize = 16 * 1024;
/// Messages of the agent queued for the running turn.
const TURN_INBOX: usize = 256;

/// How to start one agent: the agent's own launch (its program, arguments and environment), in
/// `workspace`.
pub struct Launch<'a> {
    /// The agent's program in its ACP mode, its working folder `workspace`.
    pub spec: SpawnSpec,
    /// What a failed spawn says (where the program was looked for, how to install it).
    pub spawn_error: &'a (dyn Fn(&std::io::Error) -> BridgeError + Sync),
    pub workspace: &'a Path,
    /// A key is in the environment: `authenticate` is skipped (Cursor's tries to open a browser
    /// then).
    pub api_key: bool,
    pub quirks: &'static dyn AgentQuirks,
}

/// What an agent's sessions configure (modes, models, their options), read from its answer to
/// `session/new` or `session/load` the agent's way.
pub trait SessionConfig: Default + Send + Sync {
    fn from_opened(result: &Value) -> Self;

    /// The session's current mode (ACP's `modes`), as far as it is known (`None`: set it).
    fn current_mode(&self) -> Option<&str> {
        None
    }

    /// `session/set_mode` set the session's mode to `mode`.
    fn mode_was_set(&mut self, _mode: &str) {}
}

/// An agent whose sessions configure nothing the bridge sets per turn.
impl SessionConfig for () {
    fn from_opened(_result: &Value) -> Self {}
}

pub struct Agent<C: SessionConfig> {
    pub conn: Arc<Connection>,
    child: ChildProcess,
    shared: Arc<Shared>,
    stderr: Arc<Mutex<Vec<u8>>>,
    _router: AbortOnDrop,
    _stderr_reader: AbortOnDrop,
    pub session_id: String,
    pub config: C,
    pub load_session: bool,
    /// `initialize` advertised `promptCapabilities.image`: prompts may carry image blocks.
    pub prompt_images: bool,
    pub workspace: PathBuf,
    /// Last used (taken by a turn or created), for idle expiry and eviction.
    pub used: Instant,
    /// The client's tools, hosted for this agent's session (client-tools mode).
    pub tools: Option<ToolHost>,
    /// What ran under the agent when the running turn began: what starts after it is the
    /// turn's ([`Agent::end_what_the_turn_started`]).
    turn_mark: Option<process::TreeMark>,
    /// What ran under the agent when its first turn began (its session open, its own helpers
    /// up): Stop ends everything else, also what an earlier turn left under the agent.
    session_mark: Option<process::TreeMark>,
    quirks: &'static dyn AgentQuirks,
}

impl<C: SessionConfig> Agent<C> {
    /// Start the process and complete the handshake (`initialize`, `authenticate` when no key).
    pub async fn start(launch: &Launch<'_>) -> Result<Agent<C>, StartFailure> {
        let mut child = process::spawn(&launch.spec).map_err(|e| StartFailure::shared((launch.spawn_error)(&e)))?;
        let (stdin, stdout) = match (child.take_stdin(), child.take_stdout()) {
            (Some(i), Some(o)) => (i, o),
            _ => return Err(StartFailure::broken(BridgeError::internal("the ACP agent has no pipes"))),
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_reader = tokio::spawn(keep_stderr(child.take_stderr(), stderr.clone()));
        let (conn, incoming) = Connection::start(stdout, stdin);
        let conn = Arc::new(conn);
        let shared = Arc::new(Shared {
            session: Mutex::default(),
            turn: Mutex::default(),
            pending: Mutex::default(),
            dead: AtomicBool::new(false),
            routed: tokio::sync::watch::channel(0).0,
        });
        let router = tokio::spawn(router::route(incoming, conn.clone(), shared.clone()));
        let mut agent = Agent {
            conn,
            child,
            shared,
            stderr,
            _router: AbortOnDrop(router.abort_handle()),
            _stderr_reader: AbortOnDrop(stderr_reader.abort_handle()),
            session_id: String::new(),
            config: C::default(),
            load_session: false,
            prompt_images: false,
            workspace: launch.workspace.to_path_buf(),
            used: Instant::now(),
            tools: None,
            turn_mark: None,
            session_mark: None,
            quirks: launch.quirks,
        };
        agent.child.set_standby(true);
        agent.handshake(launch).await?;
        Ok(agent)
    }

    async fn handshake(&mut self, launch: &Launch<'_>) -> Result<(), StartFailure> {
        let params = json!({
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
            "clientInfo": {"name": "cursor-bridge", "version": env!("CARGO_PKG_VERSION")},
        });
        let quirks = self.quirks;
        let init = match tokio::time::timeout(INITIALIZE_TIMEOUT, self.conn.request("initialize", params)).await {
            Ok(Ok(result)) => result,
            Ok(Err(RpcError::Closed)) => return Err(self.exited_at_start().await),
            Ok(Err(e)) => return Err(StartFailure::broken(quirks.start_error(StartError::InitializeRefused(&e)))),
            Err(_) => {
                return Err(StartFailure::broken(quirks.start_error(StartError::InitializeTimeout(INITIALIZE_TIMEOUT))))
            }
        };
        if init.get("protocolVersion").and_then(Value::as_u64) != Some(1) {
            return Err(StartFailure::broken(quirks.start_error(StartError::ProtocolVersion(&init))));
        }
        self.load_session = init.pointer("/agentCapabilities/loadSession").and_then(Value::as_bool).unwrap_or(false);
        self.prompt_images =
            init.pointer("/agentCapabilities/promptCapabilities/image").and_then(Value::as_bool).unwrap_or(false);
        if launch.api_key {
            return Ok(());
        }
        let method = init
            .get("authMethods")
            .and_then(Value::as_array)
            .and_then(|m| m.first())
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .unwrap_or(quirks.fallback_auth_method())
            .to_owned();
        let auth = self.conn.request("authenticate", json!({"methodId": method}));
        match tokio::time::timeout(AUTHENTICATE_TIMEOUT, auth).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(RpcError::Remote { code, message, .. })) if quirks.is_not_signed_in(code, &message) => {
                Err(StartFailure::shared(quirks.start_error(StartError::NotSignedIn(&message))))
            }
            // Another refusal (no such method, bad params): a stored login may still serve
            // `session/new`, which says itself if it needs a login.
            Ok(Err(RpcError::Remote { code, message, .. })) => {
                tracing::debug!(code, %message, "authenticate refused; going on");
                Ok(())
            }
            Ok(Err(RpcError::Closed)) => Err(self.exited_at_start().await),
            // No answer is no evidence of a missing login (a slow service also hangs here): a
            // timeout, which the other way of driving the program would not repeat; it says
            // whether it is signed in.
            Err(_) => Err(StartFailure {
                auth_unanswered: true,
                ..StartFailure::shared(quirks.start_error(StartError::AuthenticateTimeout(AUTHENTICATE_TIMEOUT)))
            }),
        }
    }

    /// A new session in the agent's workspace.
    pub async fn new_session(&mut self) -> Result<(), StartFailure> {
        let cwd = self.workspace.to_string_lossy().into_owned();
        let mut attempt = 0;
        loop {
            let request = self.conn.request("session/new", json!({"cwd": cwd, "mcpServers": self.mcp_servers()}));
            match tokio::time::timeout(SESSION_TIMEOUT, request).await {
                Ok(Ok(result)) => {
                    let Some(id) = result.get("sessionId").and_then(Value::as_str) else {
                        return Err(StartFailure::broken(self.quirks.start_error(StartError::SessionWithoutId)));
                    };
                    self.adopt(id, &result);
                    return Ok(());
                }
                Ok(Err(RpcError::Remote { code, message, .. }))
                    if attempt < SESSION_RETRIES && self.quirks.retries_session_new(code, &message) =>
                {
                    attempt += 1;
                    tracing::debug!(attempt, code, "session/new failed in a way the agent retries; retrying");
                    tokio::time::sleep(Duration::from_millis(200 * attempt as u64)).await;
                }
                Ok(Err(e)) => return Err(self.session_failure("session/new", e).await),
                Err(_) => {
                    return Err(StartFailure::shared(
                        self.quirks.start_error(StartError::SessionTimeout(SESSION_TIMEOUT)),
                    ))
                }
            }
        }
    }

    /// Continue `id`, a session an earlier process of this CLI created. `Ok(false)`: the agent
    /// says it does not have it (or cannot load sessions); no answer is a `timeout`, not that.
    pub async fn load(&mut self, id: &str) -> Result<bool, StartFailure> {
        if !self.load_session {
            return Ok(false);
        }
        let cwd = self.workspace.to_string_lossy().into_owned();
        let params = json!({"sessionId": id, "cwd": cwd, "mcpServers": self.mcp_servers()});
        // The replay arrives before the answer, while our session is not set: the router drops
        // it, so none of it can show as a new answer. A long conversation replays for a while:
        // the deadline is `SESSION_TIMEOUT` of silence, each message of the agent's extends it
        // (up to `LOAD_LIMIT` in all).
        let mut heard = self.shared.routed.subscribe();
        let started = Instant::now();
        let conn = self.conn.clone();
        let request = conn.request("session/load", params);
        tokio::pin!(request);
        let answer = loop {
            tokio::select! {
                answer = &mut request => break Some(answer),
                changed = heard.changed(), if started.elapsed() < LOAD_LIMIT => {
                    if changed.is_err() {
                        break tokio::time::timeout(SESSION_TIMEOUT, &mut request).await.ok();
                    }
                }
                () = tokio::time::sleep(SESSION_TIMEOUT) => break None,
            }
        };
        match answer {
            Some(Ok(result)) => {
                self.adopt(id, &result);
                Ok(true)
            }
            Some(Err(RpcError::Remote { code: -32602 | -32002, .. })) => Ok(false),
            Some(Err(e)) => Err(self.session_failure("session/load", e).await),
            // Slow is not gone: the session is kept, and the next turn tries again.
            None => Err(StartFailure::shared(self.quirks.start_error(StartError::LoadTimeout(SESSION_TIMEOUT)))),
        }
    }

    /// Host the client's tools for the session this agent opens next (before `new_session` or
    /// `load`), within the agent's limits.
    pub async fn attach_tools(&mut self, tools: &[crate::vocab::ToolDefinition]) -> Result<(), BridgeError> {
        let limits: McpLimits = self.quirks.mcp_limits();
        match ToolHost::start(tools, limits).await {
            Ok(host) => {
                self.tools = Some(host);
                Ok(())
            }
            Err(e) => Err(BridgeError::internal(format!("cannot start the server for the client's tools: {e}"))),
        }
    }

    /// The session's mode set to `mode` (standard ACP `session/set_mode`), unless it is that
    /// already: ask mode means no permission prompts.
    pub async fn set_mode(&mut self, mode: crate::vocab::Mode) -> Result<(), crate::backend::contract::TurnFailure> {
        if self.config.current_mode() == Some(mode.as_str()) {
            return Ok(());
        }
        let params = json!({"sessionId": self.session_id, "modeId": mode.as_str()});
        self.config_request("session/set_mode", params).await?;
        self.config.mode_was_set(mode.as_str());
        Ok(())
    }

    /// A short request inside the session (its mode, its model), bounded by [`CONFIG_TIMEOUT`];
    /// a failure in the agent's words ([`TurnError::ConfigRefused`]).
    pub async fn config_request(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, crate::backend::contract::TurnFailure> {
        match tokio::time::timeout(CONFIG_TIMEOUT, self.conn.request(method, params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(self.quirks.turn_error(TurnError::ConfigRefused { method, error: &error }).into()),
            Err(_) => Err(self.quirks.turn_error(TurnError::ConfigTimeout { method, within: CONFIG_TIMEOUT }).into()),
        }
    }

    fn mcp_servers(&self) -> Value {
        self.tools.as_ref().map(ToolHost::servers).unwrap_or_else(|| json!([]))
    }

    fn adopt(&mut self, id: &str, result: &Value) {
        self.session_id = id.to_owned();
        self.config = C::from_opened(result);
        *lock(&self.shared.session) = Some(id.to_owned());
    }

    async fn session_failure(&mut self, method: &str, e: RpcError) -> StartFailure {
        match e {
            RpcError::Remote { code, message, data } => {
                StartFailure::shared(self.quirks.refused(method, code, &message, data.as_ref()))
            }
            RpcError::Closed => self.exited_at_start().await,
        }
    }

    /// The agent's stdout ended during start-up: its exit status and stderr say why, in the
    /// agent's words ([`AgentQuirks::exited_at_start`]).
    async fn exited_at_start(&mut self) -> StartFailure {
        let status = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await.ok().and_then(Result::ok);
        // Let the stderr reader catch up with what the process wrote before it exited.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let stderr = self.stderr_tail();
        self.quirks.exited_at_start(status.and_then(|s| s.code()), &stderr, &self.workspace)
    }

    pub fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr)).into_owned()
    }

    /// Still serving: the process runs and its output has not ended.
    pub fn alive(&mut self) -> bool {
        !self.shared.dead.load(Ordering::SeqCst) && self.child.is_running()
    }

    /// Route the agent's messages to a turn until [`Agent::end_turn`]. The process is busy while
    /// it runs a turn (its tools' orphans are its own) and standby between turns.
    pub fn begin_turn(&mut self) -> mpsc::Receiver<Incoming> {
        let (tx, rx) = mpsc::channel(TURN_INBOX);
        *lock(&self.shared.turn) = Some(tx);
        self.child.set_standby(false);
        self.used = Instant::now();
        let mark = self.child.mark_tree();
        if self.session_mark.is_none() {
            self.session_mark = Some(self.child.mark_tree());
        }
        self.turn_mark = Some(mark);
        rx
    }

    /// Kill what the last turn started and left running (a dev server, a watcher a shell tool
    /// put in the background), the agent itself and what ran before the turn left alone: Stop,
    /// and the end of a turn, leave none of the turn's processes behind, as in print mode, while
    /// the session stays warm. A turn that ended (not `stopped`) ends only what left the agent's
    /// tree (a job whose shell exited); what still runs under the agent then is left to it (an
    /// MCP server of the user's, connected after the session opened; a background terminal) —
    /// until Stop, which ends everything that was not there when the session's first turn
    /// began, whichever turn started it (`end_started_since`).
    pub fn end_what_the_turn_started(&mut self, stopped: bool) {
        let Some(mark) = self.turn_mark.take() else { return };
        let mark = if stopped { self.session_mark.as_ref().unwrap_or(&mark) } else { &mark };
        let ended = self.child.end_started_since(mark, !stopped);
        if ended > 0 {
            tracing::info!(pid = self.pid(), ended, "stopped the processes the ACP turn left running");
        }
    }

    pub async fn end_turn(&mut self) {
        lock(&self.shared.turn).take();
        self.answer_pending_cancelled().await;
        self.child.set_standby(true);
        self.used = Instant::now();
    }

    /// Answer a request of the agent that a turn handled.
    pub async fn answer(&self, id: Value, result: Value) {
        forget(&self.shared, &id);
        let _ = self.conn.respond(id, result).await;
    }

    pub async fn refuse(&self, id: Value, code: i64, message: &str) {
        forget(&self.shared, &id);
        let _ = self.conn.refuse(id, code, message).await;
    }

    /// Every request handed to a turn and not answered gets "cancelled" (a cancelled turn, or a
    /// turn that ended while one was still queued).
    pub async fn answer_pending_cancelled(&self) {
        let pending = std::mem::take(&mut *lock(&self.shared.pending));
        for id in pending {
            let _ = self.conn.respond(id, cancelled_outcome()).await;
        }
    }

    /// Until the router has handled the agent's first `mark` messages (bounded: a router stuck
    /// on a full turn inbox must not stall the turn that drains it).
    pub async fn routed(&self, mark: u64) {
        let mut seen = self.shared.routed.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(2), seen.wait_for(|n| *n >= mark)).await;
    }

    /// Ask the agent to finish: its stdin closes, and it exits on end of input (a real CLI
    /// saves its session store then).
    pub fn close_input(&self) {
        self.conn.close_input();
    }

    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// The agent's own readings and words.
    pub fn quirks(&self) -> &'static dyn AgentQuirks {
        self.quirks
    }
}

async fn keep_stderr(stderr: Option<tokio::process::ChildStderr>, into: Arc<Mutex<Vec<u8>>>) {
    let Some(mut stderr) = stderr else { return };
    let mut buf = vec![0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut kept = lock(&into);
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > STDERR_KEEP {
            let cut = kept.len() - STDERR_KEEP;
            kept.drain(..cut);
        }
    }
}
