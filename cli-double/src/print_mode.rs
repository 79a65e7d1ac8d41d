//! Print mode (`-p`, or inferred when stdin/stdout is not a terminal): read the prompt, run the
//! real CLI's checks in order, then answer in the requested output format as scripted by the
//! scenario.
//!
//! Order of a run, and why:
//! 1. `startupMs` sleep — models Node booting BEFORE it reads stdin, so a parent that writes a big
//!    prompt must not assume the child is already draining the pipe.
//! 2. Prompt: positional words, or all of stdin until EOF. With positional words stdin is still
//!    read to EOF (the hang hazard of docs/cursor-cli.md §3, §10 #1) unless
//!    `CURSOR_DOUBLE_POSITIONAL_IGNORES_STDIN=1`.
//! 3. Directives are removed from the prompt and merged over `CURSOR_DOUBLE_SCENARIO`.
//! 4. Grandchild spawned, then the invocation is recorded (so killed runs are on record).
//! 5. Checks, each ending the run before any stdout: auth → workspace trust → model → `fail`.
//! 6. The answer: `replay`, or a synthesised turn (init, user, thinking, segments and tools, result).

use std::io::BufRead;
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::args::Parsed;
use crate::auth::{self, Auth};
use crate::events::{self, ResultFields, ToolCallInfo};
use crate::json::{obj, Json};
use crate::models::Catalogue;
use crate::output::{stderr_bytes, stderr_line, stdout_bytes, EventStream};
use crate::record::Record;
use crate::scenario::{self, Failure, HangPoint, Outcome, Scenario, ToolSpec};
use crate::tool_script::{self, Builtin, Call};
use crate::tool_state::{ChatTools, List, ToolLog};
use crate::{builtins, chats, ids, permissions, process, prompt_protocol, settings, tool_model, tools};

pub const TRUST_REQUIRED_HEAD: &str = "⚠ Workspace Trust Required";
pub const TRUST_REQUIRED_TAIL: &str = "Pass --trust, --yolo, or -f if you trust this directory";
pub const CONNECTION_LOST: &str = "Error: Connection lost: ECONNRESET";
pub const RATE_LIMIT: &str = "Error: rate limit exceeded (429). Please try again later.";
pub const NETWORK: &str = "Error: getaddrinfo EAI_AGAIN api2.cursor.sh";
/// ACP transport drops (docs/cursor-acp.md §6, reported 2026.09.18); the text after the
/// reported prefixes is *invented*.
pub const PING_TIMEOUT: &str = "ConnectError: [unavailable] PING timed out";
pub const STREAM_CLOSED: &str = "ConnectError: [canceled] http/2 stream closed with error code CANCEL (0x8)";
pub const MAX_RETRIES: &str = "RetriableError: [unavailable] exceeded max retries";
/// Streamed by a plan-gated model (2026.07.01 probe).
pub const PLAN_GATED: &str = "\n\nUpgrade your plan to continue";
/// The usage-limit block of docs/cursor-cli.md §5.2, verbatim (note the trailing space after
/// `fallbackModel:`).
pub const USAGE_LIMIT: &str = "Error: You've hit your usage limit
Get Cursor Pro for more Agent usage, unlimited Tab, and more.
fallbackModel: 
spendLimitHit: false
chatMessage: *You've hit your free requests limit. Your usage limits will reset when your monthly cycle ends on 10/2/2026.*
spendLimits: [50,100,200]";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    StreamJson,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Entry point; returns the exit status.
pub fn run(parsed: &Parsed, argv: Vec<String>, started: Instant) -> i32 {
    // Only the env scenario is known before stdin is read, so only it can shape startup.
    let env_source = scenario::from_env();
    let early = match &env_source {
        Ok(Some(j)) => scenario::build(std::slice::from_ref(j)).unwrap_or_default(),
        _ => Scenario::default(),
    };
    if early.ignore_sigterm {
        process::ignore_sigterm();
    }
    let startup = early.startup_ms.map(std::time::Duration::from_millis);
    process::sleep(startup.unwrap_or_else(|| settings::millis("CURSOR_DOUBLE_STARTUP_MS")));

    // The prompt.
    let positional = parsed.operands.join(" ");
    let has_positional = parsed.operands.iter().any(|w| !w.is_empty());
    let mut stdin: Option<Vec<u8>> = None;
    let mut stdin_open = false;
    if early.close_stdin_early {
        process::close_stdin();
    } else if has_positional && settings::enabled("CURSOR_DOUBLE_POSITIONAL_IGNORES_STDIN") {
        stdin_open = true; // left open: permission answers may arrive there
    } else {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut buf);
        stdin = Some(buf);
    }
    let raw_prompt = if has_positional {
        positional
    } else {
        stdin.as_deref().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default()
    };

    let session_id = parsed
        .value("resume")
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .or_else(|| settings::non_empty("CURSOR_CONVERSATION_ID"))
        .unwrap_or_else(ids::uuid_v4);
    let workspace = workspace_of(parsed);
    // The chat's tool model: what earlier prompts of this chat left (a `--resume` run).
    let mut tool_state = chats::chat_dir(&session_id, &workspace).and_then(|d| ChatTools::load(&d)).unwrap_or_default();

    // The scenario: env first, then the chat's stored tool fields, then directives in prompt order.
    let built = env_source.and_then(|env| {
        let (prompt, directives) = scenario::extract_directives(&raw_prompt)?;
        if tool_state.stored.is_none() {
            tool_state.stored = Some(tool_script::chat_fields(&directives));
        }
        let mut sources: Vec<Json> = env.into_iter().collect();
        sources.extend(tool_state.stored.clone());
        sources.extend(directives);
        let sc = scenario::build(&sources)?.for_prompt(&prompt);
        Ok((prompt, sc))
    });

    let mut record =
        Record { argv, subcommand: "print".to_owned(), stdin, prompt: Some(raw_prompt.clone()), ..Record::default() };
    let (prompt, sc) = match built {
        Ok(ok) => ok,
        Err(e) => {
            record.append();
            stderr_line(&format!("cursor-agent-double: {e}"));
            return 2;
        }
    };
    if sc.ignore_sigterm {
        process::ignore_sigterm();
    }
    if sc.grandchild || sc.grandchild_escapes {
        record.grandchild_pid = process::spawn_grandchild(sc.grandchild_escapes, sc.grandchild_stdio_inherit);
    }
    let force = parsed.has("force") || parsed.has("yolo");
    let (tool_items, tool_log) = tool_turn(&sc, &prompt, &mut tool_state, &session_id, &workspace, force);
    if tool_items.is_some() || !tool_log.is_empty() {
        record.tools = Some(tool_log.to_json());
    }
    record.session_id = Some(session_id.clone());
    record.append();
    // A directive's `startupMs` arrives with the prompt, too late to delay reading stdin; it is
    // slept here instead, after the record, so the process is visibly alive for that long.
    if let Some(ms) = directive_startup_ms(&raw_prompt) {
        process::sleep(std::time::Duration::from_millis(ms));
    }

    if sc.hang == Some(HangPoint::BeforeOutput) {
        process::hang_forever();
    }
    let mut run = Run { parsed, sc: &sc, prompt, session_id, started, stdin_open, tool_items, tool_state };
    run.answer()
}

fn workspace_of(parsed: &Parsed) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let path = match parsed.value("workspace") {
        Some(w) => cwd.join(w),
        None => cwd,
    };
    dunce::canonicalize(&path).unwrap_or(path).to_string_lossy().into_owned()
}

/// The tool model's part of a print-mode turn: `Some(items)` when it answers this prompt, and
/// what it saw (for the record). Nothing is written to disk here: the state is saved, and files are
/// written, only once the run passed its checks.
fn tool_turn(
    sc: &Scenario,
    prompt: &str,
    state: &mut ChatTools,
    session_id: &str,
    workspace: &str,
    force: bool,
) -> (Option<Vec<Item>>, ToolLog) {
    let parsed = prompt_protocol::parse(prompt);
    let mut host = PrintHost {
        items: Vec::new(),
        log: ToolLog::default(),
        sid: session_id,
        workspace,
        config: permissions::load(workspace),
        bypass: sc.tools_model.builtin_bypass,
        force,
        chunk: sc.chunk_chars,
    };
    tool_model::absorb(&mut host, state, &parsed);
    if !tool_model::active(&sc.tools_model, &parsed) {
        return (None, host.log);
    }
    let Ok(()) = tool_model::play(&mut host, &sc.tools_model, state, &parsed);
    (Some(host.items), host.log)
}

/// Print mode's side of the tool model: everything becomes items of the turn; there is no MCP.
struct PrintHost<'a> {
    items: Vec<Item>,
    log: ToolLog,
    sid: &'a str,
    workspace: &'a str,
    config: permissions::Config,
    bypass: bool,
    force: bool,
    chunk: usize,
}

impl tool_model::Host for PrintHost<'_> {
    type Stop = std::convert::Infallible;

    fn say(&mut self, pieces: Vec<String>) -> Result<(), Self::Stop> {
        match self.items.last_mut() {
            Some(Item::Pieces(p)) => p.extend(pieces),
            _ => self.items.push(Item::Pieces(pieces)),
        }
        Ok(())
    }

    fn builtin(&mut self, step: usize, b: &Builtin) -> Result<(), Self::Stop> {
        let plan = builtins::plan(b, self.workspace, &self.config, self.bypass, self.force);
        self.log.push(List::Builtins, self.sid, builtins::entry(b, &plan, step));
        if let Some((path, content)) = plan.write.clone() {
            self.items.push(Item::WriteFile(path, content));
        }
        self.items.push(Item::Tool { spec: plan.spec, gated: plan.gated });
        Ok(())
    }

    fn mcp_server_for(&self, _: &Call) -> Option<String> {
        None
    }

    fn call_mcp(
        &mut self,
        _: usize,
        _: &[(String, Call)],
        _: &mut ChatTools,
    ) -> Result<tool_model::McpRound, Self::Stop> {
        Ok(tool_model::McpRound::Ended(String::new())) // never called: print mode has no MCP servers
    }

    fn record(&mut self, list: List, entry: Json) {
        self.log.push(list, self.sid, entry);
    }

    fn chunk_chars(&self) -> usize {
        self.chunk
    }
}

struct Run<'a> {
    parsed: &'a Parsed,
    sc: &'a Scenario,
    /// Directive-free prompt.
    prompt: String,
    session_id: String,
    started: Instant,
    stdin_open: bool,
    /// The tool model's answer, when it answers this prompt.
    tool_items: Option<Vec<Item>>,
    tool_state: ChatTools,
}

impl Run<'_> {
    fn force(&self) -> bool {
        self.parsed.has("force") || self.parsed.has("yolo")
    }

    fn format(&self) -> Format {
        match self.parsed.value("output-format") {
            Some("json") => Format::Json,
            Some("stream-json") => Format::StreamJson,
            _ => Format::Text,
        }
    }

    /// `stderr` replaces a failure's built-in message; `exitCode` replaces its status.
    fn fail_with(&self, message: &str, default_code: i32) -> i32 {
        stderr_line(self.sc.stderr.as_deref().unwrap_or(message));
        self.sc.exit_code.unwrap_or(default_code)
    }

    fn workspace(&self) -> String {
        workspace_of(self.parsed)
    }

    fn answer(&mut self) -> i32 {
        // The project's `.cursor/cli.json` is read first: a file the CLI rejects stops everything
        // (order *invented*; the research reports exit 1).
        if let Some(message) = permissions::project_error(&self.workspace(), false) {
            return self.fail_with(&message, 1);
        }
        let api_key_source = match (self.sc.fail, auth::resolve(self.parsed)) {
            (Some(Failure::Auth), _) | (_, Auth::Missing) => return self.fail_with(auth::PRINT_AUTH_REQUIRED, 1),
            (Some(Failure::InvalidKey), _) | (_, Auth::InvalidKey) => return self.fail_with(auth::INVALID_KEY, 1),
            (_, Auth::Ok(source)) => source,
        };
        let workspace = self.workspace();
        let trusted = ["trust", "force", "yolo"].iter().any(|o| self.parsed.has(o))
            || matches!(settings::var("CURSOR_DOUBLE_TRUST_REQUIRED").as_deref(), Some("0") | Some("false"));
        if !trusted {
            if settings::enabled("CURSOR_DOUBLE_TRUST_HANG") {
                process::hang_forever();
            }
            stderr_line(&format!(
                "{TRUST_REQUIRED_HEAD}\n\nThe agent can read, modify and run code in this directory:\n  {workspace}\n\nOnly continue if you trust its contents. Headless runs cannot ask interactively.\n\n{TRUST_REQUIRED_TAIL}"
            ));
            return settings::var("CURSOR_DOUBLE_TRUST_EXIT").and_then(|v| v.trim().parse().ok()).unwrap_or(0);
        }
        let catalogue = match Catalogue::load() {
            Ok(c) => c,
            Err(e) => {
                stderr_line(&format!("cursor-agent-double: {e}"));
                return 2;
            }
        };
        let requested = self.parsed.value("model");
        if self.sc.fail == Some(Failure::Model) || requested.is_some_and(|m| !catalogue.accepts(m)) {
            let message = format!(
                "Cannot use this model: {}. Available models: {}",
                requested.unwrap_or("auto"),
                catalogue.ids().join(", ")
            );
            return self.fail_with(&message, 1);
        }
        let resume = self.parsed.value("resume").filter(|id| !id.is_empty());
        if let Some(id) = resume {
            // What the real CLI does with a chat it no longer has is unknown: fail, or silently
            // start a fresh chat under a new id (`fresh`), or (the default) carry on with the
            // requested id and an empty history.
            let unknown = settings::var("CURSOR_DOUBLE_UNKNOWN_RESUME");
            if !chats::exists(id, &workspace) {
                match unknown.as_deref() {
                    Some("fail") => return self.fail_with(&format!("Error: Chat not found: {id}"), 1),
                    Some("fresh") => self.session_id = ids::uuid_v4(),
                    _ => {}
                }
            }
        }
        match self.sc.fail {
            Some(Failure::UsageLimit) => return self.fail_with(USAGE_LIMIT, 1),
            Some(Failure::RateLimit) => return self.fail_with(RATE_LIMIT, 1),
            Some(Failure::Network) => return self.fail_with(NETWORK, 1),
            Some(Failure::Ping) => return self.fail_with(PING_TIMEOUT, 1),
            Some(Failure::StreamClosed) => return self.fail_with(STREAM_CLOSED, 1),
            Some(Failure::MaxRetries) => return self.fail_with(MAX_RETRIES, 1),
            _ => {}
        }
        chats::touch(&self.session_id, &workspace, &self.prompt);
        if let Some(dir) = chats::chat_dir(&self.session_id, &workspace) {
            self.tool_state.save(&dir);
        }
        if let Some(n) = self.sc.stderr_bytes {
            stderr_bytes(&junk(n));
        }
        let mut stream = EventStream::new(
            self.format() == Format::StreamJson,
            std::time::Duration::from_millis(self.sc.delta_delay_ms),
            self.sc.garbage,
        );
        if let Some(path) = &self.sc.replay {
            return self.replay(path, &mut stream);
        }
        let permission_mode = if self.force() { "bypassPermissions" } else { "default" };
        let model = catalogue.display_name(requested);
        let tool_items = self.tool_items.take();
        Turn::new(self, &workspace, stream).play(api_key_source, &model, permission_mode, tool_items)
    }

    /// Prints a transcript file's lines verbatim, re-keyed to the `--resume` id when given.
    fn replay(&self, path: &str, stream: &mut EventStream) -> i32 {
        let bytes = match std::fs::read(Path::new(path)) {
            Ok(b) => b,
            Err(e) => {
                stderr_line(&format!("cursor-agent-double: cannot read replay file {path}: {e}"));
                return 2;
            }
        };
        let resume = self.parsed.value("resume").filter(|id| !id.is_empty());
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            match resume {
                Some(id) => stream.emit_raw(&replace_session_ids(line, id)),
                None => stream.emit_raw(line),
            }
        }
        self.finish(self.sc.exit_code.unwrap_or(0))
    }

    /// Trailing `stderr` text and the exit status of a run that completed its answer.
    fn finish(&self, code: i32) -> i32 {
        if let Some(text) = &self.sc.stderr {
            stderr_line(text);
        }
        code
    }
}

/// The last `startupMs` given by a directive in the prompt, if any.
fn directive_startup_ms(raw_prompt: &str) -> Option<u64> {
    let (_, directives) = scenario::extract_directives(raw_prompt).ok()?;
    directives.iter().rev().find_map(|d| match d.get("startupMs") {
        Some(Json::Num(n)) => n.as_u64(),
        _ => None,
    })
}

/// `"session_id":"<anything>"` → `"session_id":"<id>"`, bytes elsewhere untouched.
fn replace_session_ids(line: &[u8], id: &str) -> Vec<u8> {
    const KEY: &[u8] = b"\"session_id\":\"";
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line[i..].starts_with(KEY) {
            out.extend_from_slice(KEY);
            out.extend_from_slice(id.as_bytes());
            i += KEY.len();
            while i < line.len() && line[i] != b'"' {
                i += 1;
            }
        } else {
            out.push(line[i]);
            i += 1;
        }
    }
    out
}

/// `stderrBytes` filler: readable numbered lines, cut to exactly `n` bytes.
pub fn junk(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 64);
    let mut i = 0;
    while out.len() < n {
        out.extend_from_slice(format!("[double] stderr filler line {i:08}\n").as_bytes());
        i += 1;
    }
    out.truncate(n);
    out
}

/// `Echo: ` + the last non-blank line of the prompt (trimmed), at most 200 characters.
pub fn default_answer(prompt: &str) -> String {
    let line = prompt.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    format!("Echo: {}", line.chars().take(200).collect::<String>())
}

/// Splits into pieces of `n` Unicode scalar values (never inside a UTF-8 sequence).
fn chunks(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

pub enum Item {
    Segment(String),
    /// A segment whose deltas are given (the tool model splits its `[TOOL_CALLS:` marker).
    Pieces(Vec<String>),
    Tool {
        spec: ToolSpec,
        gated: bool,
    },
    /// A built-in tool writes a file (before its events: the race the policy monitor catches).
    WriteFile(std::path::PathBuf, String),
}

impl Item {
    /// The text of a segment item.
    pub fn text(&self) -> Option<String> {
        match self {
            Item::Segment(s) => Some(s.clone()),
            Item::Pieces(p) => Some(p.concat()),
            _ => None,
        }
    }
}

/// Turns the scenario into the sequence of segments and tool calls of the turn (print mode and
/// ACP turns alike). `fail: "planGated"` makes the whole turn the plan-gate text.
pub fn plan(sc: &Scenario, prompt: &str, force: bool) -> Vec<Item> {
    if sc.fail == Some(Failure::PlanGated) {
        return vec![Item::Segment(PLAN_GATED.to_owned())];
    }
    let answer = sc.answer.clone().unwrap_or_else(|| default_answer(prompt));
    let gate = |spec: ToolSpec| {
        let gated = sc.permission_query && !force && spec.kind == "shell";
        Item::Tool { spec, gated }
    };
    let mut items = Vec::new();
    match &sc.segments {
        // segments[0], tools[0], segments[1], tools[1], ... then whatever is left of either.
        Some(segments) => {
            for i in 0..segments.len().max(sc.tools.len()) {
                if let Some(s) = segments.get(i) {
                    items.push(Item::Segment(s.clone()));
                }
                if let Some(t) = sc.tools.get(i) {
                    items.push(gate(t.clone()));
                }
            }
        }
        None if sc.tools.is_empty() && sc.permission_query => {
            let spec = ToolSpec {
                kind: "shell".to_owned(),
                args: Some(obj([("command", "rm -rf build".into())])),
                ..ToolSpec::default()
            };
            items.push(Item::Segment("I'll run `rm -rf build`.".to_owned()));
            items.push(gate(spec));
            items.push(Item::Segment(answer));
        }
        // Tools first, then the answer as the final segment.
        None => {
            items.extend(sc.tools.iter().cloned().map(gate));
            items.push(Item::Segment(answer));
        }
    }
    if let Some(n) = sc.huge_line_bytes {
        match items.iter_mut().find_map(|i| if let Item::Segment(s) = i { Some(s) } else { None }) {
            Some(s) => s.insert_str(0, &"x".repeat(n)),
            None => items.insert(0, Item::Segment("x".repeat(n))),
        }
    }
    items
}

/// One synthesised turn.
struct Turn<'r> {
    run: &'r Run<'r>,
    workspace: &'r str,
    stream: EventStream,
    partial: bool,
    request_id: String,
    model_calls: usize,
    current_model_call: Option<String>,
    queries: u64,
    /// Text events emitted so far (deltas in partial mode, segments otherwise).
    text_events: u64,
}

impl<'r> Turn<'r> {
    fn new(run: &'r Run<'r>, workspace: &'r str, stream: EventStream) -> Turn<'r> {
        let partial = run.parsed.has("stream-partial-output") && run.format() == Format::StreamJson;
        Turn {
            run,
            workspace,
            stream,
            partial,
            request_id: ids::uuid_v4(),
            model_calls: 0,
            current_model_call: None,
            queries: 0,
            text_events: 0,
        }
    }

    fn sid(&self) -> &str {
        &self.run.session_id
    }

    fn new_model_call(&mut self) -> String {
        let id = ids::model_call_id(&self.request_id, self.model_calls);
        self.model_calls += 1;
        self.current_model_call = Some(id.clone());
        id
    }

    /// Called before every counted text event: applies `crashAfterDeltas` and `hang: midStream`.
    fn before_text_event(&mut self) {
        if self.run.sc.crash_after_deltas == Some(self.text_events) {
            let code = self.run.fail_with(CONNECTION_LOST, 1);
            std::process::exit(code);
        }
        if self.text_events == 1 && self.run.sc.hang == Some(HangPoint::MidStream) {
            process::hang_forever();
        }
        self.text_events += 1;
    }

    fn play(mut self, api_key_source: &str, model: &str, permission_mode: &str, tool_items: Option<Vec<Item>>) -> i32 {
        let sc = self.run.sc;
        let sid = self.sid().to_owned();
        self.stream.emit(&events::init(api_key_source, self.workspace, &sid, model, permission_mode));
        if sc.hang == Some(HangPoint::AfterInit) {
            process::hang_forever();
        }
        self.stream.emit(&events::user(&self.run.prompt, &sid));
        if let Some(message) = &sc.error_envelope {
            let envelope = events::error_envelope(message);
            if self.stream.print_events {
                self.stream.emit(&envelope);
            } else {
                stdout_bytes(format!("{envelope}\n").as_bytes());
            }
            return self.run.finish(sc.exit_code.unwrap_or(1));
        }
        if let Some(thinking) = &sc.thinking {
            for piece in chunks(thinking, sc.chunk_chars) {
                self.stream.emit(&events::thinking_delta(&piece, &sid, now_ms()));
            }
            self.stream.emit(&events::thinking_completed(&sid, now_ms()));
        }

        let items = tool_items.unwrap_or_else(|| plan(sc, &self.run.prompt, self.run.force()));
        let last_tool = items.iter().rposition(|i| matches!(i, Item::Tool { .. }));
        let mut all_text = String::new();
        let mut final_text = String::new();
        for (idx, item) in items.iter().enumerate() {
            match item {
                Item::Segment(_) | Item::Pieces(_) => {
                    let text = item.text().unwrap_or_default();
                    let trailing = last_tool.is_none_or(|t| idx > t);
                    all_text.push_str(&text);
                    if trailing {
                        final_text.push_str(&text);
                    }
                    if !text.is_empty() {
                        let pieces = if let Item::Pieces(p) = item { Some(p.as_slice()) } else { None };
                        self.segment(&text, pieces, trailing, idx == first_segment(&items));
                    }
                }
                Item::Tool { spec, gated } => self.tool(spec, *gated),
                Item::WriteFile(path, content) => {
                    builtins::perform(&Some((path.clone(), content.clone())));
                }
            }
        }
        if self.partial && !final_text.is_empty() {
            // End-of-turn flush: the final text again, neither timestamp nor model_call_id.
            self.stream.emit(&events::assistant(&final_text, &sid, None, None));
        }
        if sc.crash_after_deltas.is_some() {
            // Fewer text events than requested: crash where the result would have been.
            let code = self.run.fail_with(CONNECTION_LOST, 1);
            std::process::exit(code);
        }
        if sc.hang == Some(HangPoint::MidStream) {
            process::hang_forever();
        }
        let default_code = if sc.error_result { 1 } else { 0 };
        if sc.no_result {
            return self.run.finish(sc.exit_code.unwrap_or(default_code));
        }
        let mut usage = obj([
            ("inputTokens", (1000 + self.run.prompt.chars().count() / 4).into()),
            ("outputTokens", (all_text.chars().count() / 4).max(1).into()),
            ("cacheReadTokens", 17920u64.into()),
            ("cacheWriteTokens", 0u64.into()),
        ]);
        if let Some(over) = &sc.usage {
            usage.merge_from(over);
        }
        let result = events::result(&ResultFields {
            is_error: sc.error_result,
            duration_ms: sc.duration_ms.unwrap_or_else(|| self.run.started.elapsed().as_millis().max(1) as u64),
            text: &all_text,
            session_id: &sid,
            request_id: &self.request_id,
            usage,
        });
        match self.run.format() {
            Format::StreamJson => self.stream.emit(&result),
            Format::Json => stdout_bytes(format!("{result}\n").as_bytes()),
            Format::Text => stdout_bytes(format!("{final_text}\n").as_bytes()),
        }
        self.run.finish(sc.exit_code.unwrap_or(default_code))
    }

    /// One assistant segment. Partial mode: deltas, then (before tools) the segment flush.
    /// Otherwise one event; segments before tools carry `model_call_id` + `timestamp_ms`.
    fn segment(&mut self, text: &str, pieces: Option<&[String]>, trailing: bool, first: bool) {
        let sid = self.sid().to_owned();
        if let (true, Some(pieces)) = (self.partial, pieces) {
            for piece in pieces.iter().filter(|p| !p.is_empty()) {
                self.before_text_event();
                self.stream.emit(&events::assistant(piece, &sid, None, Some(now_ms())));
            }
            if !trailing {
                let mc = self.new_model_call();
                self.stream.emit(&events::assistant(text, &sid, Some(&mc), Some(now_ms())));
            }
            return;
        }
        if self.partial {
            let mut rest = text;
            if first {
                if let Some(n) = self.run.sc.huge_line_bytes.filter(|n| *n > 0) {
                    // The whole `hugeLineBytes` prefix as ONE delta: one giant line.
                    self.before_text_event();
                    self.stream.emit(&events::assistant(&text[..n], &sid, None, Some(now_ms())));
                    rest = &text[n..];
                }
            }
            for piece in chunks(rest, self.run.sc.chunk_chars) {
                self.before_text_event();
                self.stream.emit(&events::assistant(&piece, &sid, None, Some(now_ms())));
            }
            if !trailing {
                let mc = self.new_model_call();
                self.stream.emit(&events::assistant(text, &sid, Some(&mc), Some(now_ms())));
            }
        } else {
            self.before_text_event();
            if trailing {
                self.stream.emit(&events::assistant(text, &sid, None, None));
            } else {
                let mc = self.new_model_call();
                self.stream.emit(&events::assistant(text, &sid, Some(&mc), Some(now_ms())));
            }
        }
    }

    fn tool(&mut self, spec: &ToolSpec, gated: bool) {
        let sid = self.sid().to_owned();
        let mc = match self.current_model_call.clone() {
            Some(mc) => mc,
            None => self.new_model_call(),
        };
        let call_id = ids::tool_call_id();
        let args = tools::args(spec, self.workspace, &call_id);
        let started_at = now_ms();
        let info =
            ToolCallInfo { call_id: &call_id, key: &tools::key(&spec.kind), args: &args, started_at_ms: started_at };
        self.stream.emit(&events::tool_started(&info, &mc, &sid, started_at));
        let mut effective = spec.clone();
        let mut outcome = spec.outcome;
        if gated {
            self.queries += 1;
            let command = args.get("command").cloned().unwrap_or(Json::Null);
            let query_args = obj([("command", command), ("toolCallId", call_id.as_str().into())]);
            self.stream.emit(&events::interaction_query(self.queries, "shellRequestQuery", query_args));
            match self.permission_answer() {
                Ok(()) => {}
                Err(reason) => {
                    outcome = Outcome::Rejected;
                    effective.result = None;
                    effective.reason = Some(reason);
                }
            }
        }
        let completed_at = now_ms();
        let result = tools::result(&effective, outcome, &args, completed_at.saturating_sub(started_at));
        self.stream.emit(&events::tool_completed(&info, &result, completed_at, &sid, now_ms()));
    }

    /// Waits for the parent's answer to a permission query. Stdin is normally already at EOF (the
    /// prompt came from it), which the real CLI treats as an automatic rejection.
    fn permission_answer(&self) -> Result<(), String> {
        if !self.run.stdin_open {
            return Err(tools::AUTO_REJECT_REASON.to_owned());
        }
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
            return Err(tools::AUTO_REJECT_REASON.to_owned());
        }
        let reply = Json::parse(line.trim()).unwrap_or(Json::Null);
        let decision = reply
            .get("response")
            .and_then(Json::as_object)
            .and_then(|pairs| pairs.iter().find(|(k, _)| k.ends_with("Response")).map(|(_, v)| v.clone()));
        match decision {
            Some(d) if d.get("approved").is_some() => Ok(()),
            Some(d) => Err(d
                .get("rejected")
                .and_then(|r| r.get("reason"))
                .and_then(Json::as_str)
                .unwrap_or("User rejected the request")
                .to_owned()),
            None => Err(tools::AUTO_REJECT_REASON.to_owned()),
        }
    }
}

fn first_segment(items: &[Item]) -> usize {
    items.iter().position(|i| matches!(i, Item::Segment(_) | Item::Pieces(_))).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_answer_uses_last_non_blank_line() {
        assert_eq!(default_answer("first\n  second  \n\n  \n"), "Echo: second");
        assert_eq!(default_answer(""), "Echo: ");
        assert_eq!(default_answer(&"é".repeat(300)).chars().count(), 206);
    }

    #[test]
    fn chunks_respect_scalar_values() {
        assert_eq!(chunks("👩‍💻ab", 2), ["👩\u{200d}", "💻a", "b"]);
    }

    #[test]
    fn session_ids_are_rekeyed() {
        let line = br#"{"type":"user","session_id":"old-id","x":1}"#;
        assert_eq!(replace_session_ids(line, "new"), br#"{"type":"user","session_id":"new","x":1}"#.to_vec());
    }

    #[test]
    fn junk_is_exact_length() {
        assert_eq!(junk(1000).len(), 1000);
        assert_eq!(junk(0).len(), 0);
    }
}
