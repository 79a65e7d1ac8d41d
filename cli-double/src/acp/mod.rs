//! `agent acp`: the Agent Client Protocol server of the real CLI — JSON-RPC 2.0, one message per
//! line on stdin/stdout (logs only on stderr), until stdin reaches EOF. README.md ("ACP mode") has
//! the contract; docs/cursor-acp.md has the facts it follows.
//!
//! Shape of the process:
//! * a reader thread turns stdin lines into messages for the dispatcher (the main thread), which
//!   answers quick requests itself and hands slow ones (`session/new`, `session/load`) and every
//!   `session/prompt` to threads of their own, so `session/cancel` and the client's answers to the
//!   double's own requests are read while a turn runs;
//! * every line goes out through [`Server::send`] (one locked write per line);
//! * the record file gets a line when the process starts and one when it ends (stdin EOF, a crash
//!   knob, a signal, a start-up failure) with every method received and every request sent to the
//!   client, answered or not.

mod catalogue;
mod knobs;
mod mcp;
mod store;
mod tool_turn;
mod turn;

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::args::Parsed;
use crate::auth::{self, Auth};
use crate::json::{arr, obj, Json};
use crate::models::Catalogue;
use crate::output::stderr_line;
use crate::record::Record;
use crate::scenario::{self, Scenario};
use crate::tool_state::{ChatTools, ToolLog};
use crate::{ids, process, settings};

use catalogue::{AcpCatalogue, ExtraError, ModelState};
use knobs::{AuthAnswer, CommandsTiming, Knobs, ListModels, LoadAnswer, LoadPolicy, StartFail};

/// The `initialize` answer's fixed part (docs/cursor-acp.md §3.1, observed 2026.07.01 and
/// 2026.08.31).
const AUTH_METHOD_DESCRIPTION: &str =
    "Authenticate using existing Cursor login credentials. Run 'agent login' first if not logged in.";
/// Text of the -32000 errors of a process without credentials (the print-mode text without its
/// `Error: ` prefix; the real error of an unauthenticated `session/new` is unknown).
const AUTH_REQUIRED: &str =
    "Authentication required. Please run 'agent login' first, or set CURSOR_API_KEY environment variable.";
const SESSION_SERVICES: &str = "Failed to initialize session services";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A JSON-RPC error object.
#[derive(Clone, Debug)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Json>,
}

impl RpcError {
    pub fn new(code: i64, message: &str) -> RpcError {
        RpcError { code, message: message.to_owned(), data: None }
    }

    pub fn with_data(mut self, data: Json) -> RpcError {
        self.data = Some(data);
        self
    }

    pub fn to_json(&self) -> Json {
        let mut e = obj([("code", self.code.into()), ("message", self.message.as_str().into())]);
        if let Some(d) = &self.data {
            e.set("data", d.clone());
        }
        e
    }

    fn method_not_found(method: &str) -> RpcError {
        RpcError::new(-32601, "Method not found").with_data(obj([("method", method.into())]))
    }

    fn invalid_params(details: &str) -> RpcError {
        RpcError::new(-32602, "Invalid params").with_data(obj([("details", details.into())]))
    }

    fn session_not_found(id: &str) -> RpcError {
        RpcError::new(-32602, &format!("Session \"{id}\" not found"))
    }

    /// A parameter missing or of the wrong type: -32603 with zod's issue list as data, the shape
    /// the real CLI answered to a string `protocolVersion` (acpx #140, 2026.03.11) and, per
    /// docs/cursor-acp.md §5, to `id` sent instead of `configId`.
    fn zod(path: &str, expected: &str) -> RpcError {
        RpcError::new(-32603, "Internal error").with_data(arr([obj([
            ("expected", expected.into()),
            ("code", "invalid_type".into()),
            ("path", arr([path.into()])),
            ("message", "Invalid input".into()),
        ])]))
    }
}

/// A request received from the client.
pub struct Req {
    pub id: Json,
    pub method: String,
    log: usize,
}

/// Cancellation of one turn: set by `session/cancel`, waited on by the turn's sleeps.
#[derive(Default)]
pub struct TurnCtl {
    cancelled: Mutex<bool>,
    cv: Condvar,
}

impl TurnCtl {
    pub fn cancel(&self) {
        *lock(&self.cancelled) = true;
        self.cv.notify_all();
    }

    pub fn is_cancelled(&self) -> bool {
        *lock(&self.cancelled)
    }

    /// Sleeps `d`, returning early (true) when the turn is cancelled.
    pub fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        let mut c = lock(&self.cancelled);
        while !*c {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            c = self.cv.wait_timeout(c, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
        true
    }

    /// Waits until the turn is cancelled (the `hang` knobs: only a cancel or EOF ends them).
    pub fn wait_for_cancel(&self) {
        let mut c = lock(&self.cancelled);
        while !*c {
            c = self.cv.wait(c).unwrap_or_else(|e| e.into_inner());
        }
    }
}

pub struct Session {
    pub id: String,
    pub cwd: String,
    pub title: String,
    pub mode: String,
    pub model: ModelState,
    pub turn: Option<Arc<TurnCtl>>,
    pub turns: Vec<store::Turn>,
    pub created_by_pid: u32,
    pub created_at_ms: u64,
    /// Commands an `allow-always` answer approved for the rest of the session.
    pub allowed_commands: Vec<String>,
    /// MCP tools (`server:tool`) an `allow-always` answer approved.
    pub allowed_mcp: Vec<String>,
    /// The tool model's memory of this chat (stored with the session).
    pub tools: ChatTools,
    /// The session's MCP servers.
    pub link: Arc<mcp::Link>,
    pub prompts: u64,
    pub commands_sent: bool,
}

impl Session {
    fn stored(&self) -> store::Stored {
        store::Stored {
            id: self.id.clone(),
            cwd: self.cwd.clone(),
            title: self.title.clone(),
            created_by_pid: self.created_by_pid,
            created_at_ms: self.created_at_ms,
            updated_at_ms: now_ms(),
            turns: self.turns.clone(),
            tools: Some(self.tools.to_json()),
        }
    }
}

#[derive(Default)]
pub struct State {
    pub parameterized: bool,
    pub authenticated: bool,
    pub new_session_failures_left: u64,
    pub sessions: HashMap<String, Session>,
    /// How often each scripted failure has been applied (`failTimes`).
    pub fail_counts: HashMap<String, u64>,
    next_request_id: u64,
    /// Requests sent to the client and not answered yet: id (compact JSON) → (index in `sent`,
    /// the waiting turn's channel).
    pending: HashMap<String, (usize, mpsc::Sender<Json>)>,
    received: Vec<Json>,
    sent: Vec<Json>,
    session_log: Vec<String>,
    stdin_bytes: u64,
    /// `session/new`/`load` threads still running: EOF waits for them (not for turns).
    session_threads: Vec<std::thread::JoinHandle<()>>,
    /// Client-owned tools: offered, MCP servers, calls, results, permissions (the record's `tools`).
    pub tool_log: ToolLog,
}

/// What the launch command line says.
pub struct Launch {
    pub force: bool,
    pub model: Option<String>,
    pub mode: String,
    pub auth: Auth,
    pub logged_in: bool,
    pub has_credential: bool,
    pub workspace: String,
}

pub struct Server {
    pub knobs: Knobs,
    pub catalogue: AcpCatalogue,
    pub env_scenario: Option<Json>,
    pub launch: Launch,
    t0: Instant,
    argv: Vec<String>,
    grandchild_pid: Option<u32>,
    out: Mutex<()>,
    pub state: Mutex<State>,
    finished: AtomicBool,
    pub ignore_sigterm: AtomicBool,
}

/// The answer of the client to one of the double's requests.
pub enum Answer {
    Reply(Json),
    /// The turn was cancelled while waiting; the request stays pending (and on record).
    Cancelled,
}

impl Server {
    pub fn ms(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Writes one message as one line. A closed stdout ends the process (like Node on EPIPE).
    pub fn send(&self, msg: &Json) {
        self.send_all(std::slice::from_ref(msg));
    }

    /// Writes messages as consecutive lines, nothing of another thread in between.
    pub fn send_all(&self, msgs: &[Json]) {
        let mut bytes = Vec::new();
        for m in msgs {
            bytes.extend_from_slice(m.to_compact().as_bytes());
            bytes.push(b'\n');
        }
        let ok = {
            let _guard = lock(&self.out);
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes).and_then(|()| out.flush()).is_ok()
        };
        if !ok {
            self.finish("stdout closed", 1);
        }
    }

    pub fn notify(&self, method: &str, params: Json) {
        self.send(&obj([("jsonrpc", "2.0".into()), ("method", method.into()), ("params", params)]));
    }

    pub fn update(&self, session_id: &str, update: Json) {
        self.send(&update_message(session_id, update));
    }

    pub fn reply(&self, req: &Req, outcome: Result<Json, RpcError>) {
        self.reply_then(req, outcome, Vec::new());
    }

    /// The answer to `req`, then `after` (notifications) right behind it on the wire.
    pub fn reply_then(&self, req: &Req, outcome: Result<Json, RpcError>, after: Vec<Json>) {
        let at = self.ms();
        {
            let mut st = self.state();
            if let Some(entry) = st.received.get_mut(req.log) {
                match &outcome {
                    Ok(_) => entry.set("answer", "result".into()),
                    Err(e) => {
                        entry.set("answer", "error".into());
                        entry.set("errorCode", e.code.into());
                    }
                }
                entry.set("answeredAtMs", at.into());
            }
        }
        let body = match outcome {
            Ok(result) => ("result", result),
            Err(e) => ("error", e.to_json()),
        };
        let mut msgs = vec![obj([("jsonrpc", "2.0".into()), ("id", req.id.clone()), body])];
        msgs.extend(after);
        self.send_all(&msgs);
    }

    /// Sends a request to the client and waits for its answer. The wait has no end (the real
    /// agent blocks the turn) except a cancel of `ctl`; once the timeout passes the request is
    /// marked `timedOut` in the record and a line goes to stderr.
    pub fn request(&self, method: &str, params: Json, session_id: Option<&str>, ctl: &TurnCtl) -> Answer {
        let (tx, rx) = mpsc::channel();
        let (id, idx) = {
            let mut st = self.state();
            let n = st.next_request_id;
            st.next_request_id += 1;
            let id: Json = if self.knobs.string_request_ids { format!("cursor-{n}").into() } else { n.into() };
            let entry = obj([
                ("id", id.clone()),
                ("method", method.into()),
                ("sessionId", session_id.into()),
                ("sentAtMs", self.ms().into()),
                ("answered", false.into()),
                ("answeredAtMs", Json::Null),
                ("waitedMs", Json::Null),
                ("timedOut", false.into()),
                ("reply", Json::Null),
            ]);
            st.sent.push(entry);
            let idx = st.sent.len() - 1;
            st.pending.insert(id.to_compact(), (idx, tx));
            (id, idx)
        };
        self.send(&obj([("jsonrpc", "2.0".into()), ("id", id.clone()), ("method", method.into()), ("params", params)]));
        let sent = Instant::now();
        let mut timed_out = false;
        loop {
            match rx.recv_timeout(Duration::from_millis(10)) {
                Ok(msg) => return Answer::Reply(msg),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return Answer::Cancelled,
            }
            if ctl.is_cancelled() {
                return Answer::Cancelled;
            }
            if !timed_out && sent.elapsed() >= self.knobs.request_timeout {
                timed_out = true;
                if let Some(e) = self.state().sent.get_mut(idx) {
                    e.set("timedOut", true.into());
                }
                stderr_line(&format!(
                    "cursor-agent-double: the client has not answered request {} ({method}) within {} ms",
                    id.to_compact(),
                    self.knobs.request_timeout.as_millis()
                ));
            }
        }
    }

    pub(super) fn record(&self, acp: Json) -> Record {
        Record {
            argv: self.argv.clone(),
            subcommand: "acp".to_owned(),
            grandchild_pid: self.grandchild_pid,
            acp: Some(acp),
            ..Record::default()
        }
    }

    fn exit_tools(&self) -> Option<Json> {
        let st = self.state();
        (!st.tool_log.is_empty()).then(|| st.tool_log.to_json())
    }

    /// Appends the exit line of the record (once).
    pub fn write_exit_record(&self, reason: &str, code: Option<i32>) {
        if self.finished.swap(true, Ordering::SeqCst) {
            return;
        }
        let acp = {
            let st = self.state();
            obj([
                ("phase", "exit".into()),
                ("exitReason", reason.into()),
                ("exitCode", code.into()),
                ("atMs", self.ms().into()),
                ("parameterizedModelPicker", st.parameterized.into()),
                ("stdinBytes", st.stdin_bytes.into()),
                ("received", Json::Arr(st.received.clone())),
                ("sentRequests", Json::Arr(st.sent.clone())),
                ("sessions", arr(st.session_log.iter().map(|s| s.as_str().into()))),
            ])
        };
        let mut record = self.record(acp);
        record.tools = self.exit_tools();
        record.append();
    }

    /// Writes the exit record and exits.
    pub fn finish(&self, reason: &str, code: i32) -> ! {
        self.write_exit_record(reason, Some(code));
        std::process::exit(code)
    }

    fn log_received(&self, entry: Json) -> usize {
        let mut st = self.state();
        st.received.push(entry);
        st.received.len() - 1
    }
}

// ---------------------------------------------------------------------------------------------
// Start-up

fn workspace(parsed: &Parsed) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let path = match parsed.value("workspace") {
        Some(w) => cwd.join(w),
        None => cwd,
    };
    dunce::canonicalize(&path).unwrap_or(path).to_string_lossy().into_owned()
}

/// `<CURSOR_CONFIG_DIR or $HOME/.cursor>/projects/<slug>/`, slug = the workspace path with each
/// run of non-alphanumerics turned into `-`, trimmed (the candidate fix of CAP #45/PR #43).
fn project_dir(workspace: &str) -> Option<PathBuf> {
    let root = settings::non_empty("CURSOR_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| settings::non_empty("HOME").map(|h| PathBuf::from(h).join(".cursor")))?;
    Some(root.join("projects").join(mcp::approvals::slug(workspace)))
}

#[cfg(unix)]
fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise the set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// SIGTERM/SIGINT/SIGHUP are blocked in every thread and taken by one thread with `sigwait`, which
/// writes the exit record and then lets the signal kill the process as it would have.
#[cfg(unix)]
fn watch_signals(server: Arc<Server>) {
    let set = signal_set();
    // SAFETY: blocking signals in the calling thread; threads spawned later inherit the mask.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    std::thread::spawn(move || loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` is a valid set; sigwait writes the signal number.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        if sig == libc::SIGTERM && server.ignore_sigterm.load(Ordering::SeqCst) {
            continue;
        }
        server.write_exit_record(&format!("signal {sig}"), None);
        // SAFETY: restore the default action and deliver the signal to this thread.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            let mut one: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut one);
            libc::sigaddset(&mut one, sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
            libc::raise(sig);
        }
    });
}

#[cfg(not(unix))]
fn watch_signals(_server: Arc<Server>) {}

/// Entry point of `acp`; returns the exit status (most exits go through [`Server::finish`]).
pub fn run(parsed: &Parsed, argv: Vec<String>) -> i32 {
    let t0 = Instant::now();
    let early_record = |why: &str| {
        Record {
            argv: argv.clone(),
            subcommand: "acp".to_owned(),
            acp: Some(obj([("phase", "start".into()), ("error", why.into())])),
            ..Record::default()
        }
        .append();
        stderr_line(&format!("cursor-agent-double: {why}"));
        2
    };
    let knobs = match Knobs::from_env() {
        Ok(k) => k,
        Err(e) => return early_record(&e),
    };
    let env_scenario = match scenario::from_env() {
        Ok(s) => s,
        Err(e) => return early_record(&e),
    };
    let early = match scenario::build(env_scenario.as_slice()) {
        Ok(s) => s,
        Err(e) => return early_record(&e),
    };
    let print_catalogue = match Catalogue::load() {
        Ok(c) => c,
        Err(e) => return early_record(&e),
    };
    let creds = auth::resolve(parsed);
    let has_credential = parsed.value("api-key").is_some_and(|k| !k.is_empty())
        || parsed.value("auth-token").is_some_and(|k| !k.is_empty())
        || settings::non_empty("CURSOR_API_KEY").is_some()
        || settings::non_empty("CURSOR_AUTH_TOKEN").is_some();
    let mode = match parsed.value("mode") {
        Some(m) => m.to_owned(),
        None if parsed.has("plan") => "plan".to_owned(),
        None => "agent".to_owned(),
    };
    let launch = Launch {
        force: parsed.has("force") || parsed.has("yolo"),
        model: parsed.value("model").map(str::to_owned),
        mode,
        auth: creds,
        logged_in: settings::logged_in(),
        has_credential,
        workspace: workspace(parsed),
    };

    // Node boot: before stdin is read. The env scenario's grandchild starts here.
    let startup = knobs
        .startup
        .or(early.startup_ms.map(Duration::from_millis))
        .unwrap_or_else(|| settings::millis("CURSOR_DOUBLE_STARTUP_MS"));
    let ignore = early.ignore_sigterm;
    let mut server = Server {
        catalogue: AcpCatalogue::from_print(&print_catalogue),
        knobs,
        env_scenario,
        launch,
        t0,
        argv,
        grandchild_pid: None,
        out: Mutex::new(()),
        state: Mutex::new(State::default()),
        finished: AtomicBool::new(false),
        ignore_sigterm: AtomicBool::new(ignore),
    };
    server.state.get_mut().unwrap_or_else(|e| e.into_inner()).new_session_failures_left =
        server.knobs.new_session_failures;
    if early.grandchild || early.grandchild_escapes {
        server.grandchild_pid = process::spawn_grandchild(early.grandchild_escapes, early.grandchild_stdio_inherit);
    }
    let server = Arc::new(server);
    watch_signals(Arc::clone(&server));
    process::sleep(startup);
    server.record(obj([("phase", "start".into())])).append();

    if let Err((reason, message)) = start_checks(&server, parsed, &print_catalogue) {
        if !message.is_empty() {
            stderr_line(&message);
        }
        server.finish(&format!("startup: {reason}"), 1);
    }
    serve(server)
}

/// The failures the CLI shows before it reads stdin: `(reason, stderr text)`.
fn start_checks(server: &Server, parsed: &Parsed, print: &Catalogue) -> Result<(), (&'static str, String)> {
    let k = &server.knobs;
    if k.start_fail == Some(StartFail::Exit) {
        return Err(("exit", String::new()));
    }
    if let Some(text) =
        crate::permissions::project_error(&server.launch.workspace, k.start_fail == Some(StartFail::CliJson))
    {
        return Err(("cli.json", text));
    }
    if let Some(m) = parsed.value("model") {
        if !print.accepts(m) {
            return Err(("model", format!("Cannot use this model: {m}. Available models: {}", print.ids().join(", "))));
        }
    }
    let trusted = ["trust", "force", "yolo"].iter().any(|o| parsed.has(o));
    if k.trust_required && !trusted {
        return Err(("trust", String::new()));
    }
    if k.project_dir_required && !project_dir(&server.launch.workspace).is_some_and(|d| d.is_dir()) {
        return Err(("project dir", String::new()));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The dispatcher

fn serve(server: Arc<Server>) -> ! {
    let (tx, rx) = mpsc::channel::<Option<Vec<u8>>>();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        loop {
            let mut buf = Vec::new();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(None);
                    return;
                }
                Ok(_) => {
                    if tx.send(Some(buf)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    while let Ok(Some(line)) = rx.recv() {
        handle_line(&server, &line);
    }
    // EOF: session requests already read are still answered (they take at most their delay);
    // a running turn is abandoned with the process.
    let pending = std::mem::take(&mut server.state().session_threads);
    for h in pending {
        let _ = h.join();
    }
    // MCP servers being connected get a moment to finish, so the record has them (a server that
    // does not answer must not keep a closing agent alive).
    let links: Vec<Arc<mcp::Link>> = server.state().sessions.values().map(|s| Arc::clone(&s.link)).collect();
    let deadline = Instant::now() + Duration::from_secs(2);
    for link in links {
        link.settle(deadline.saturating_duration_since(Instant::now()));
    }
    server.finish("eof", 0)
}

fn handle_line(server: &Arc<Server>, bytes: &[u8]) {
    server.state().stdin_bytes += bytes.len() as u64;
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let at = server.ms();
    let msg = match Json::parse(text) {
        Ok(m) => m,
        Err(_) => {
            server.log_received(obj([("atMs", at.into()), ("kind", "invalid".into())]));
            server.send(&obj([
                ("jsonrpc", "2.0".into()),
                ("id", Json::Null),
                ("error", RpcError::new(-32700, "Parse error").to_json()),
            ]));
            return;
        }
    };
    let method = msg.get("method").and_then(Json::as_str).map(str::to_owned);
    let id = msg.get("id").cloned();
    let params = msg.get("params").cloned().unwrap_or(Json::Obj(Vec::new()));
    let session_id = params.get("sessionId").cloned().unwrap_or(Json::Null);
    match (method, id) {
        (Some(method), Some(id)) => {
            let mut entry = obj([
                ("atMs", at.into()),
                ("kind", "request".into()),
                ("method", method.as_str().into()),
                ("id", id.clone()),
                ("sessionId", session_id),
                ("answer", Json::Null),
            ]);
            // What a mode or model change asked for, so a test can tell which one the client chose.
            for key in ["modeId", "configId", "value"] {
                if let Some(v) = params.get(key) {
                    entry.set(key, v.clone());
                }
            }
            let log = server.log_received(entry);
            on_request(server, Req { id, method, log }, params);
        }
        (Some(method), None) => {
            server.log_received(obj([
                ("atMs", at.into()),
                ("kind", "notification".into()),
                ("method", method.as_str().into()),
                ("sessionId", session_id),
            ]));
            on_notification(server, &method, &params);
        }
        (None, Some(id)) if msg.get("result").is_some() || msg.get("error").is_some() => {
            on_response(server, at, id, &msg);
        }
        (_, id) => {
            server.log_received(obj([("atMs", at.into()), ("kind", "invalid".into())]));
            server.send(&obj([
                ("jsonrpc", "2.0".into()),
                ("id", id.unwrap_or(Json::Null)),
                ("error", RpcError::new(-32600, "Invalid Request").to_json()),
            ]));
        }
    }
}

fn on_response(server: &Server, at: u64, id: Json, msg: &Json) {
    let waiter = {
        let mut st = server.state();
        let found = st.pending.remove(&id.to_compact());
        let to = found
            .as_ref()
            .and_then(|(idx, _)| st.sent.get(*idx))
            .and_then(|e| e.get("method").cloned())
            .unwrap_or(Json::Null);
        st.received.push(obj([("atMs", at.into()), ("kind", "response".into()), ("id", id.clone()), ("to", to)]));
        found.map(|(idx, tx)| {
            if let Some(e) = st.sent.get_mut(idx) {
                let sent_at = match e.get("sentAtMs") {
                    Some(Json::Num(n)) => n.as_u64().unwrap_or(0),
                    _ => 0,
                };
                e.set("answered", true.into());
                e.set("answeredAtMs", at.into());
                e.set("waitedMs", at.saturating_sub(sent_at).into());
                let reply = match (msg.get("result"), msg.get("error")) {
                    (Some(r), _) => obj([("result", r.clone())]),
                    (None, Some(err)) => obj([("error", err.clone())]),
                    _ => Json::Null,
                };
                e.set("reply", reply);
            }
            tx
        })
    };
    if let Some(tx) = waiter {
        let _ = tx.send(msg.clone());
    }
}

fn on_notification(server: &Server, method: &str, params: &Json) {
    if method == "session/cancel" {
        let sid = params.get("sessionId").and_then(Json::as_str).unwrap_or("");
        let ctl = server.state().sessions.get(sid).and_then(|s| s.turn.clone());
        if let Some(ctl) = ctl {
            ctl.cancel();
        }
    }
    // `$/cancel_request` and anything else: on record only (whether Cursor honours
    // `$/cancel_request` is unknown).
}

fn str_param<'a>(params: &'a Json, key: &str) -> Result<&'a str, RpcError> {
    params.get(key).and_then(Json::as_str).ok_or_else(|| RpcError::zod(key, "string"))
}

fn on_request(server: &Arc<Server>, req: Req, params: Json) {
    let k = &server.knobs;
    let outcome = match req.method.as_str() {
        "initialize" => initialize(server, &params),
        "authenticate" => match authenticate(server, &params) {
            Some(o) => o,
            None => return, // hangs: never answered
        },
        "session/new" | "session/load" => return spawn_session_request(server, req, params),
        "session/resume" if k.has_cap("resume") => return spawn_session_request(server, req, params),
        "session/close" if k.has_cap("close") => close_session(server, &params),
        "session/list" if k.has_cap("list") => list_sessions(server, &params),
        "session/prompt" => match turn::start(server, &req, &params) {
            Ok(()) => return, // the turn thread answers
            Err(e) => Err(e),
        },
        "session/set_mode" => {
            match set_mode(server, &params) {
                Ok((sid, mode)) => {
                    server.reply_then(&req, Ok(obj([])), vec![update_message(&sid, current_mode_update(&mode))])
                }
                Err(e) => server.reply(&req, Err(e)),
            }
            return;
        }
        "session/set_config_option" => {
            match set_config_option(server, &params) {
                Ok((result, changed)) => {
                    let after = changed
                        .map(|(sid, mode)| update_message(&sid, current_mode_update(&mode)))
                        .into_iter()
                        .collect();
                    server.reply_then(&req, Ok(result), after)
                }
                Err(e) => server.reply(&req, Err(e)),
            }
            return;
        }
        "session/set_model" if k.set_model => set_model(server, &params),
        "cursor/list_available_models" => match k.list_models {
            ListModels::Unsupported => Err(RpcError::method_not_found(&req.method)),
            ListModels::Empty => Ok(obj([("models", arr([]))])),
            ListModels::Ok => {
                let p = server.state().parameterized;
                Ok(obj([("models", server.catalogue.list(p))]))
            }
        },
        other => Err(RpcError::method_not_found(other)),
    };
    server.reply(&req, outcome);
}

pub fn update_message(session_id: &str, update: Json) -> Json {
    obj([
        ("jsonrpc", "2.0".into()),
        ("method", "session/update".into()),
        ("params", obj([("sessionId", session_id.into()), ("update", update)])),
    ])
}

/// `session/new`, `load` and `resume` run on a thread (they sleep `CURSOR_DOUBLE_ACP_NEW_SESSION_MS`)
/// so the dispatcher keeps reading; EOF waits for them.
fn spawn_session_request(server: &Arc<Server>, req: Req, params: Json) {
    let worker = Arc::clone(server);
    let handle = std::thread::spawn(move || {
        let outcome = match req.method.as_str() {
            "session/new" => new_session(&worker, &params),
            "session/load" => load_session(&worker, &params, true),
            _ => load_session(&worker, &params, false),
        };
        let sid = outcome.as_ref().ok().map(|(sid, _)| sid.clone());
        let outcome = match (req.method.as_str(), worker.knobs.load_answer) {
            ("session/load", LoadAnswer::None) if outcome.is_ok() => None,
            ("session/load", LoadAnswer::Empty) => Some(outcome.map(|(sid, _)| (sid, obj([])))),
            _ => Some(outcome),
        };
        if let Some(outcome) = outcome {
            finish_session_request(&worker, &req, outcome);
        }
        if let Some(sid) = sid.filter(|_| !worker.knobs.mcp_connect_at_prompt) {
            let found = worker.state().sessions.get(&sid).map(|s| (Arc::clone(&s.link), s.cwd.clone()));
            if let Some((link, cwd)) = found {
                link.start(&worker, &sid, &cwd);
            }
        }
    });
    server.state().session_threads.push(handle);
}

fn current_mode_update(mode: &str) -> Json {
    obj([("sessionUpdate", "current_mode_update".into()), ("currentModeId", mode.into())])
}

fn initialize(server: &Server, params: &Json) -> Result<Json, RpcError> {
    match params.get("protocolVersion") {
        Some(Json::Num(n)) if n.as_u64().is_some() => {}
        _ => return Err(RpcError::zod("protocolVersion", "number")),
    }
    let flag = matches!(
        params.get("clientCapabilities").and_then(|c| c.get("_meta")).and_then(|m| m.get("parameterizedModelPicker")),
        Some(Json::Bool(true))
    );
    server.state().parameterized = server.knobs.parameterized.unwrap_or(flag);
    let mut caps = Json::Obj(Vec::new());
    for cap in ["list", "resume", "close"] {
        if server.knobs.has_cap(cap) {
            caps.set(cap, obj([]));
        }
    }
    // Only version 1 exists: the client's 1 is echoed, any other number gets our 1.
    Ok(obj([
        ("protocolVersion", 1u64.into()),
        (
            "agentCapabilities",
            obj([
                ("loadSession", true.into()),
                (
                    "mcpCapabilities",
                    obj([("http", server.knobs.mcp_caps.0.into()), ("sse", server.knobs.mcp_caps.1.into())]),
                ),
                (
                    "promptCapabilities",
                    obj([
                        ("audio", false.into()),
                        ("embeddedContext", false.into()),
                        ("image", server.knobs.prompt_image.into()),
                    ]),
                ),
                ("sessionCapabilities", caps),
            ]),
        ),
        (
            "authMethods",
            arr([obj([
                ("id", "cursor_login".into()),
                ("name", "Cursor Login".into()),
                ("description", AUTH_METHOD_DESCRIPTION.into()),
            ])]),
        ),
    ]))
}

/// `None`: the request hangs (never answered).
fn authenticate(server: &Server, params: &Json) -> Option<Result<Json, RpcError>> {
    let method_id = match str_param(params, "methodId") {
        Ok(m) => m,
        Err(e) => return Some(Err(e)),
    };
    if method_id != "cursor_login" {
        return Some(Err(RpcError::invalid_params(&format!("unknown auth method: {method_id}"))));
    }
    let l = &server.launch;
    let answer = match server.knobs.auth {
        AuthAnswer::Auto if l.logged_in => AuthAnswer::Ok,
        AuthAnswer::Auto if l.has_credential => server.knobs.auth_key_only,
        AuthAnswer::Auto => AuthAnswer::Hang,
        other => other,
    };
    match answer {
        AuthAnswer::Ok | AuthAnswer::Auto => {
            server.state().authenticated = true;
            Some(Ok(obj([])))
        }
        AuthAnswer::Hang => None,
        AuthAnswer::Error => Some(Err(RpcError::new(-32000, "Authentication required"))),
        AuthAnswer::InvalidParams => Some(Err(RpcError::invalid_params("could not open a browser to log in"))),
    }
}

/// Credentials are checked when a session is served (`session/new`, `load`, `resume`, `list`).
fn check_auth(server: &Server) -> Result<(), RpcError> {
    let authenticated = server.state().authenticated;
    if server.knobs.require_authenticate && !authenticated {
        return Err(RpcError::new(-32000, "Authentication required"));
    }
    match server.launch.auth {
        Auth::Missing if !authenticated => Err(RpcError::new(-32000, AUTH_REQUIRED)),
        Auth::InvalidKey => Err(RpcError::new(-32000, "The provided API key is invalid.")),
        _ => Ok(()),
    }
}

fn session_params(params: &Json, with_id: bool) -> Result<(Option<String>, String), RpcError> {
    let id = if with_id { Some(str_param(params, "sessionId")?.to_owned()) } else { None };
    let cwd = str_param(params, "cwd")?;
    if !matches!(params.get("mcpServers"), Some(Json::Arr(_))) {
        return Err(RpcError::zod("mcpServers", "array"));
    }
    if !Path::new(cwd).is_absolute() {
        return Err(RpcError::invalid_params("cwd must be an absolute path"));
    }
    // The session folder's project file is read like the launch workspace's (what the real CLI
    // does with a bad one in a session cwd is unknown: -32603 with the start-up text, *invented*).
    if let Some(text) = crate::permissions::project_error(cwd, false) {
        return Err(RpcError::new(-32603, &text));
    }
    Ok((id, cwd.to_owned()))
}

/// The session's MCP servers; entries the double does not connect go on record at once.
fn session_link(server: &Server, sid: &str, params: &Json) -> Arc<mcp::Link> {
    let (entries, skipped) = mcp::client::Entry::parse_all(params.get("mcpServers").unwrap_or(&Json::Null));
    let mut st = server.state();
    for note in skipped {
        let mut n = note;
        n.set("connected", false.into());
        st.tool_log.push(crate::tool_state::List::McpServers, sid, n);
    }
    mcp::Link::new(entries)
}

/// The result of `session/new` / `session/load` for a session, plus its id.
fn session_result(server: &Server, sid: &str, with_id: bool) -> Result<Json, RpcError> {
    let st = server.state();
    // Gone only if a `session/close` raced the request.
    let s = st.sessions.get(sid).ok_or_else(|| RpcError::session_not_found(sid))?;
    let p = st.parameterized;
    let mut r = Json::Obj(Vec::new());
    if with_id {
        r.set("sessionId", sid.into());
    }
    r.set("modes", catalogue::modes(&s.mode));
    r.set("models", server.catalogue.legacy_models(&s.model, p));
    r.set("configOptions", server.catalogue.config_options(&s.mode, &s.model, p));
    Ok(r)
}

fn new_session(server: &Server, params: &Json) -> Result<(String, Json), RpcError> {
    check_auth(server)?;
    let (_, cwd) = session_params(params, false)?;
    if let Some(marker) = &server.knobs.new_session_exit {
        // One process (per marker written) closes the connection instead of answering.
        if std::fs::remove_file(marker).is_ok() {
            server.finish("session-new-exit", 1);
        }
    }
    process::sleep(server.knobs.new_session_delay);
    {
        let mut st = server.state();
        if st.new_session_failures_left > 0 {
            st.new_session_failures_left -= 1;
            return Err(RpcError::new(-32603, SESSION_SERVICES));
        }
    }
    let sid = ids::uuid_v4();
    let link = session_link(server, &sid, params);
    let session = {
        let mut st = server.state();
        let model = server.catalogue.initial(server.launch.model.as_deref(), st.parameterized);
        let s = Session {
            id: sid.clone(),
            cwd,
            title: String::new(),
            mode: server.launch.mode.clone(),
            model,
            turn: None,
            turns: Vec::new(),
            created_by_pid: std::process::id(),
            created_at_ms: now_ms(),
            allowed_commands: Vec::new(),
            allowed_mcp: Vec::new(),
            tools: ChatTools::default(),
            link,
            prompts: 0,
            commands_sent: false,
        };
        let stored = s.stored();
        st.sessions.insert(sid.clone(), s);
        st.session_log.push(sid.clone());
        stored
    };
    store::save(&session);
    Ok((sid.clone(), session_result(server, &sid, true)?))
}

fn load_session(server: &Server, params: &Json, replay: bool) -> Result<(String, Json), RpcError> {
    check_auth(server)?;
    let (id, cwd) = session_params(params, true)?;
    let sid = id.unwrap_or_default();
    if let Some(marker) = &server.knobs.load_exit {
        // Every process dies loading a session while the marker is there.
        if marker.exists() {
            server.finish("session-load-exit", 1);
        }
    }
    let policy = server.knobs.load;
    if policy == LoadPolicy::NotFound {
        return Err(RpcError::session_not_found(&sid));
    }
    process::sleep(server.knobs.new_session_delay);
    let local = server.state().sessions.contains_key(&sid);
    if !local {
        if policy == LoadPolicy::ForeignNotFound {
            return Err(RpcError::session_not_found(&sid));
        }
        let Some(stored) = store::load(&sid) else {
            return Err(RpcError::session_not_found(&sid));
        };
        let link = session_link(server, &sid, params);
        let mut st = server.state();
        let model = server.catalogue.initial(server.launch.model.as_deref(), st.parameterized);
        st.sessions.insert(
            sid.clone(),
            Session {
                id: sid.clone(),
                cwd,
                title: stored.title,
                mode: server.launch.mode.clone(),
                model,
                turn: None,
                turns: stored.turns,
                created_by_pid: stored.created_by_pid,
                created_at_ms: stored.created_at_ms,
                allowed_commands: Vec::new(),
                allowed_mcp: Vec::new(),
                tools: stored.tools.as_ref().map(ChatTools::from_json).unwrap_or_default(),
                link,
                prompts: 0,
                commands_sent: false,
            },
        );
    } else {
        // A reload connects the servers it names afresh.
        let link = session_link(server, &sid, params);
        if let Some(s) = server.state().sessions.get_mut(&sid) {
            s.link = link;
        }
    }
    server.state().session_log.push(sid.clone());
    if replay && policy != LoadPolicy::NoReplay {
        let turns = server.state().sessions.get(&sid).map(|s| s.turns.clone()).unwrap_or_default();
        for t in turns {
            for (kind, text) in [("user_message_chunk", t.user), ("agent_message_chunk", t.agent)] {
                process::sleep(server.knobs.replay_delay);
                server.update(
                    &sid,
                    obj([
                        ("sessionUpdate", kind.into()),
                        ("content", obj([("type", "text".into()), ("text", text.into())])),
                    ]),
                );
            }
        }
    }
    Ok((sid.clone(), session_result(server, &sid, false)?))
}

/// Answers `session/new`/`load`/`resume`, with `available_commands_update` around the answer as
/// the knob says.
fn finish_session_request(server: &Server, req: &Req, outcome: Result<(String, Json), RpcError>) {
    let timing = server.knobs.commands;
    match outcome {
        Ok((sid, result)) => {
            if timing == CommandsTiming::BeforeResponse {
                send_commands(server, &sid);
            }
            let after = match timing {
                CommandsTiming::AfterResponse => commands_update(server, &sid).into_iter().collect(),
                _ => Vec::new(),
            };
            server.reply_then(req, Ok(result), after);
        }
        Err(e) => server.reply(req, Err(e)),
    }
}

/// `available_commands_update` (*invented* command list), once per session.
pub fn send_commands(server: &Server, sid: &str) {
    if let Some(m) = commands_update(server, sid) {
        server.send(&m);
    }
}

/// The commands update of the session, unless it has had it.
fn commands_update(server: &Server, sid: &str) -> Option<Json> {
    {
        let mut st = server.state();
        match st.sessions.get_mut(sid) {
            Some(s) if !s.commands_sent => s.commands_sent = true,
            _ => return None,
        }
    }
    let command = |name: &str, description: &str| obj([("name", name.into()), ("description", description.into())]);
    Some(update_message(
        sid,
        obj([
            ("sessionUpdate", "available_commands_update".into()),
            (
                "availableCommands",
                arr([
                    command("plan", "Switch to Plan mode"),
                    command("ask", "Switch to Ask mode"),
                    command("compress", "Summarize the conversation to free context"),
                ]),
            ),
        ]),
    ))
}

fn close_session(server: &Server, params: &Json) -> Result<Json, RpcError> {
    let sid = str_param(params, "sessionId")?;
    let removed = server.state().sessions.remove(sid);
    match removed {
        Some(s) => {
            if let Some(ctl) = s.turn {
                ctl.cancel();
            }
            Ok(obj([]))
        }
        None => Err(RpcError::session_not_found(sid)),
    }
}

fn list_sessions(server: &Server, params: &Json) -> Result<Json, RpcError> {
    check_auth(server)?;
    let cwd = params.get("cwd").and_then(Json::as_str);
    let sessions = store::all()
        .into_iter()
        .filter(|s| cwd.is_none_or(|c| c == s.cwd))
        .map(|s| obj([("sessionId", s.id.into()), ("cwd", s.cwd.into()), ("title", s.title.into())]));
    Ok(obj([("sessions", arr(sessions))]))
}

fn with_session<T>(
    server: &Server,
    sid: &str,
    f: impl FnOnce(&mut Session, bool) -> Result<T, RpcError>,
) -> Result<T, RpcError> {
    let mut st = server.state();
    let p = st.parameterized;
    match st.sessions.get_mut(sid) {
        Some(s) => f(s, p),
        None => Err(RpcError::session_not_found(sid)),
    }
}

fn set_mode(server: &Server, params: &Json) -> Result<(String, String), RpcError> {
    let sid = str_param(params, "sessionId")?;
    let mode = str_param(params, "modeId")?;
    if !catalogue::is_mode(mode) {
        with_session(server, sid, |_, _| Ok(()))?;
        return Err(RpcError::new(-32602, &format!("Invalid mode value: {mode}")));
    }
    with_session(server, sid, |s, _| {
        s.mode = mode.to_owned();
        Ok((sid.to_owned(), mode.to_owned()))
    })
}

fn accepts_model(server: &Server, value: &str, parameterized: bool) -> bool {
    server.catalogue.is_value(value, parameterized) || server.knobs.unroutable.iter().any(|u| u == value)
}

/// Result, plus `(sessionId, mode)` when the mode changed.
fn set_config_option(server: &Server, params: &Json) -> Result<(Json, Option<(String, String)>), RpcError> {
    let sid = str_param(params, "sessionId")?;
    let config_id = str_param(params, "configId")?;
    let value = str_param(params, "value")?;
    with_session(server, sid, |s, p| {
        let mut mode_changed = None;
        match config_id {
            "mode" => {
                if !catalogue::is_mode(value) {
                    return Err(RpcError::new(-32602, &format!("Invalid mode value: {value}")));
                }
                s.mode = value.to_owned();
                mode_changed = Some((sid.to_owned(), value.to_owned()));
            }
            "model" => {
                if !accepts_model(server, value, p) {
                    return Err(RpcError::new(-32602, &format!("Invalid model value: {value}")));
                }
                s.model = server.catalogue.state_for(value, p);
            }
            other if p => match server.catalogue.set_extra(&mut s.model, other, value) {
                Ok(()) => {}
                Err(ExtraError::UnknownOption) => {
                    return Err(RpcError::new(-32602, &format!("Unknown config option: {other}")))
                }
                Err(ExtraError::BadValue) => {
                    return Err(RpcError::new(-32602, &format!("Invalid value for {other}: {value}")))
                }
            },
            other => return Err(RpcError::new(-32602, &format!("Unknown config option: {other}"))),
        }
        let options = server.catalogue.config_options(&s.mode, &s.model, p);
        Ok((obj([("configOptions", options)]), mode_changed))
    })
}

fn set_model(server: &Server, params: &Json) -> Result<Json, RpcError> {
    let sid = str_param(params, "sessionId")?;
    let value = str_param(params, "modelId")?;
    with_session(server, sid, |s, p| {
        if !accepts_model(server, value, p) {
            return Err(RpcError::new(-32602, &format!("Invalid model value: {value}")));
        }
        s.model = server.catalogue.state_for(value, p);
        Ok(obj([]))
    })
}

/// The scenario of one prompt: `CURSOR_DOUBLE_SCENARIO`, then the tool fields the chat's first
/// prompt stored (`stored`), then the prompt's directives.
pub fn prompt_scenario(
    server: &Server,
    text: &str,
    stored: Option<&Json>,
) -> Result<(String, Scenario, Vec<Json>), String> {
    let (clean, directives) = scenario::extract_directives(text)?;
    let mut sources: Vec<Json> = server.env_scenario.iter().cloned().collect();
    sources.extend(stored.cloned());
    sources.extend(directives.iter().cloned());
    let sc = scenario::build(&sources)?.for_prompt(&clean);
    Ok((clean, sc, directives))
}
