//! The `CURSOR_DOUBLE_ACP_*` switches, read once at start. A value the double does not know is an
//! error (exit 2), like a bad scenario, so a typo in a test cannot silently become the default.
//! Every switch stands for something docs/cursor-acp.md leaves open (§13) or for a failure seen in
//! reports; README.md ("ACP mode") lists them with their sources.

use std::time::Duration;

use crate::settings;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartFail {
    /// Exit 1 with nothing on stderr (cursor-api-proxy #45, 2026.09.02).
    Exit,
    /// The `.cursor/cli.json` schema error, whatever the file says.
    CliJson,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthAnswer {
    /// Decide from the credentials (stored login → `{}`; key only → `auth_key_only`; none → hang).
    Auto,
    Ok,
    Hang,
    /// -32000 "Authentication required".
    Error,
    /// -32602 (the headless browser failure of t3code #7244).
    InvalidParams,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandsTiming {
    BeforeResponse,
    AfterResponse,
    AfterPrompt,
    AfterTurn,
    Never,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadPolicy {
    /// Known sessions (this process or the store on disk) replay, then answer.
    Replay,
    /// Known sessions answer without replaying (forum report).
    NoReplay,
    /// Only sessions of this process load; others are "not found" (openab #493, 2026.04.15).
    ForeignNotFound,
    NotFound,
}

/// What a successful `session/load` answers (ACP v1 makes `modes` and `configOptions` optional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadAnswer {
    /// `{modes, models, configOptions}`, as captured.
    Full,
    /// `{}`.
    Empty,
    /// Never answered (the process goes on serving).
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListModels {
    Ok,
    /// -32601 (builds before about 2026.03.20).
    Unsupported,
    /// `{"models":[]}` (paseo #925, 2026.05.09).
    Empty,
}

/// What a build does with `session/new`'s `mcpServers` (the research saw all three).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionMcp {
    /// Connects and offers the servers' tools (live probes from 2026.07.23 on).
    Honoured,
    /// Never connects (2026.06.04).
    Ignored,
    /// Connects only servers the project approval file lists; the others stay silent (later builds).
    Gated,
}

/// When an MCP tool call asks `session/request_permission`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpAsk {
    /// Whenever `approvalMode` is `allowlist`, even if an `Mcp(…)` entry allows the tool (the one
    /// harness that emulates the sequence asks so, with `Mcp(<its server>:*)` allowed).
    AllowlistMode,
    /// In allowlist mode, only when no allow entry names the tool.
    UnlessAllowed,
    Never,
}

#[derive(Clone, Debug)]
pub struct Knobs {
    pub startup: Option<Duration>,
    pub start_fail: Option<StartFail>,
    pub trust_required: bool,
    pub project_dir_required: bool,
    pub auth: AuthAnswer,
    pub auth_key_only: AuthAnswer,
    pub require_authenticate: bool,
    pub session_caps: Vec<String>,
    pub new_session_delay: Duration,
    pub new_session_failures: u64,
    /// Pause before each update of a `session/load` replay (a long conversation replays slowly).
    pub replay_delay: Duration,
    /// While this file exists, `session/new` removes it and the process exits (1, empty stderr).
    pub new_session_exit: Option<std::path::PathBuf>,
    /// While this file exists, `session/load` makes the process exit (a stored session that
    /// crashes every agent that loads it).
    pub load_exit: Option<std::path::PathBuf>,
    pub commands: CommandsTiming,
    pub parameterized: Option<bool>,
    pub unroutable: Vec<String>,
    pub list_models: ListModels,
    pub set_model: bool,
    pub load: LoadPolicy,
    pub load_answer: LoadAnswer,
    pub force_skips_permission: bool,
    pub rejected_status: String,
    pub request_timeout: Duration,
    pub string_request_ids: bool,
    /// `initialize`'s `mcpCapabilities` (`http`, `sse`).
    pub mcp_caps: (bool, bool),
    pub session_mcp: SessionMcp,
    /// Connect the session's servers at its first prompt instead of when it is created.
    pub mcp_connect_at_prompt: bool,
    pub mcp_connect_timeout: Duration,
    /// The 40-tool and 60-character limits on what the model sees.
    pub mcp_tool_limits: bool,
    pub mcp_ask: McpAsk,
    /// A `tools/call` result with `structuredContent` or non-text content never completes.
    pub mcp_structured_hangs: bool,
    /// MCP calls are announced with `tool_call` updates (off: the call reaches the server unannounced).
    pub mcp_updates: bool,
    /// The prompt answer carries token counts (`usage`, ACP's unstable end-of-turn usage).
    pub prompt_usage: bool,
    /// `session/cancel` also kills the commands the turn started (`turnGrandchild`); whether
    /// Cursor's does is unknown (`doctor --probe` asks it).
    pub cancel_stops_commands: bool,
}

fn pick<T: Copy>(name: &str, default: T, table: &[(&str, T)]) -> Result<T, String> {
    let Some(raw) = settings::non_empty(name) else {
        return Ok(default);
    };
    table.iter().find(|(word, _)| *word == raw).map(|(_, v)| *v).ok_or_else(|| {
        let words: Vec<&str> = table.iter().map(|(w, _)| *w).collect();
        format!("{name}={raw}: expected one of {}", words.join(", "))
    })
}

fn number(name: &str) -> Result<Option<u64>, String> {
    match settings::non_empty(name) {
        None => Ok(None),
        Some(raw) => raw.trim().parse().map(Some).map_err(|_| format!("{name}={raw}: expected a non-negative integer")),
    }
}

fn list(name: &str) -> Vec<String> {
    settings::var(name)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn auth_table() -> [(&'static str, AuthAnswer); 4] {
    [
        ("ok", AuthAnswer::Ok),
        ("hang", AuthAnswer::Hang),
        ("error", AuthAnswer::Error),
        ("invalid-params", AuthAnswer::InvalidParams),
    ]
}

impl Knobs {
    pub fn from_env() -> Result<Knobs, String> {
        let mut auth: Vec<(&str, AuthAnswer)> = vec![("auto", AuthAnswer::Auto)];
        auth.extend(auth_table());
        let caps = match settings::var("CURSOR_DOUBLE_ACP_SESSION_CAPS") {
            None => vec!["list".to_owned()],
            Some(_) => list("CURSOR_DOUBLE_ACP_SESSION_CAPS"),
        };
        if let Some(bad) = caps.iter().find(|c| !["list", "resume", "close"].contains(&c.as_str())) {
            return Err(format!("CURSOR_DOUBLE_ACP_SESSION_CAPS: unknown capability '{bad}' (list, resume, close)"));
        }
        let mcp_caps = match settings::var("CURSOR_DOUBLE_ACP_MCP_CAPS") {
            None => vec!["http".to_owned(), "sse".to_owned()],
            Some(_) => list("CURSOR_DOUBLE_ACP_MCP_CAPS"),
        };
        if let Some(bad) = mcp_caps.iter().find(|c| !["http", "sse", "none"].contains(&c.as_str())) {
            return Err(format!("CURSOR_DOUBLE_ACP_MCP_CAPS: unknown transport '{bad}' (http, sse, none)"));
        }
        Ok(Knobs {
            mcp_caps: (mcp_caps.iter().any(|c| c == "http"), mcp_caps.iter().any(|c| c == "sse")),
            session_mcp: pick(
                "CURSOR_DOUBLE_ACP_SESSION_MCP",
                SessionMcp::Honoured,
                &[("honoured", SessionMcp::Honoured), ("ignored", SessionMcp::Ignored), ("gated", SessionMcp::Gated)],
            )?,
            mcp_connect_at_prompt: pick(
                "CURSOR_DOUBLE_ACP_MCP_CONNECT",
                false,
                &[("session", false), ("prompt", true)],
            )?,
            mcp_connect_timeout: Duration::from_millis(
                number("CURSOR_DOUBLE_ACP_MCP_CONNECT_TIMEOUT_MS")?.unwrap_or(10_000),
            ),
            mcp_tool_limits: pick("CURSOR_DOUBLE_ACP_MCP_TOOL_LIMITS", true, &[("on", true), ("off", false)])?,
            mcp_ask: pick(
                "CURSOR_DOUBLE_ACP_MCP_ASK",
                McpAsk::AllowlistMode,
                &[
                    ("allowlist", McpAsk::AllowlistMode),
                    ("unless-allowed", McpAsk::UnlessAllowed),
                    ("never", McpAsk::Never),
                ],
            )?,
            mcp_structured_hangs: pick("CURSOR_DOUBLE_ACP_MCP_STRUCTURED", false, &[("ok", false), ("hang", true)])?,
            mcp_updates: pick("CURSOR_DOUBLE_ACP_MCP_UPDATES", true, &[("on", true), ("off", false)])?,
            startup: number("CURSOR_DOUBLE_ACP_STARTUP_MS")?.map(Duration::from_millis),
            start_fail: pick(
                "CURSOR_DOUBLE_ACP_START_FAIL",
                None,
                &[("exit", Some(StartFail::Exit)), ("cli-json", Some(StartFail::CliJson))],
            )?,
            trust_required: pick("CURSOR_DOUBLE_ACP_TRUST", true, &[("require", true), ("ignore", false)])?
                && !matches!(settings::var("CURSOR_DOUBLE_TRUST_REQUIRED").as_deref(), Some("0") | Some("false")),
            project_dir_required: settings::enabled("CURSOR_DOUBLE_ACP_PROJECT_DIR_REQUIRED"),
            auth: pick("CURSOR_DOUBLE_ACP_AUTH", AuthAnswer::Auto, &auth)?,
            auth_key_only: pick("CURSOR_DOUBLE_ACP_AUTH_KEY_ONLY", AuthAnswer::Hang, &auth_table())?,
            require_authenticate: settings::enabled("CURSOR_DOUBLE_ACP_REQUIRE_AUTH"),
            session_caps: caps,
            new_session_delay: Duration::from_millis(number("CURSOR_DOUBLE_ACP_NEW_SESSION_MS")?.unwrap_or(0)),
            new_session_failures: number("CURSOR_DOUBLE_ACP_NEW_SESSION_FAILURES")?.unwrap_or(0),
            replay_delay: Duration::from_millis(number("CURSOR_DOUBLE_ACP_REPLAY_DELAY_MS")?.unwrap_or(0)),
            new_session_exit: settings::var("CURSOR_DOUBLE_ACP_NEW_SESSION_EXIT")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from),
            load_exit: settings::var("CURSOR_DOUBLE_ACP_LOAD_EXIT")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from),
            commands: pick(
                "CURSOR_DOUBLE_ACP_COMMANDS_UPDATE",
                CommandsTiming::AfterResponse,
                &[
                    ("before-response", CommandsTiming::BeforeResponse),
                    ("after-response", CommandsTiming::AfterResponse),
                    ("after-prompt", CommandsTiming::AfterPrompt),
                    ("after-turn", CommandsTiming::AfterTurn),
                    ("never", CommandsTiming::Never),
                ],
            )?,
            parameterized: pick(
                "CURSOR_DOUBLE_ACP_PARAMETERIZED",
                None,
                &[("auto", None), ("on", Some(true)), ("off", Some(false))],
            )?,
            unroutable: list("CURSOR_DOUBLE_ACP_UNROUTABLE_MODELS"),
            list_models: pick(
                "CURSOR_DOUBLE_ACP_LIST_MODELS",
                ListModels::Ok,
                &[("ok", ListModels::Ok), ("unsupported", ListModels::Unsupported), ("empty", ListModels::Empty)],
            )?,
            set_model: pick("CURSOR_DOUBLE_ACP_SET_MODEL", false, &[("unsupported", false), ("ok", true)])?,
            prompt_usage: pick("CURSOR_DOUBLE_ACP_PROMPT_USAGE", false, &[("none", false), ("tokens", true)])?,
            cancel_stops_commands: pick(
                "CURSOR_DOUBLE_ACP_CANCEL_COMMANDS",
                false,
                &[("leave", false), ("stop", true)],
            )?,
            load: pick(
                "CURSOR_DOUBLE_ACP_LOAD",
                LoadPolicy::Replay,
                &[
                    ("replay", LoadPolicy::Replay),
                    ("no-replay", LoadPolicy::NoReplay),
                    ("foreign-not-found", LoadPolicy::ForeignNotFound),
                    ("not-found", LoadPolicy::NotFound),
                ],
            )?,
            load_answer: pick(
                "CURSOR_DOUBLE_ACP_LOAD_ANSWER",
                LoadAnswer::Full,
                &[("full", LoadAnswer::Full), ("empty", LoadAnswer::Empty), ("none", LoadAnswer::None)],
            )?,
            force_skips_permission: pick(
                "CURSOR_DOUBLE_ACP_FORCE_PERMISSIONS",
                false,
                &[("ask", false), ("skip", true)],
            )?,
            rejected_status: pick(
                "CURSOR_DOUBLE_ACP_REJECTED_STATUS",
                "completed",
                &[("completed", "completed"), ("failed", "failed")],
            )?
            .to_owned(),
            request_timeout: Duration::from_millis(number("CURSOR_DOUBLE_ACP_REQUEST_TIMEOUT_MS")?.unwrap_or(5000)),
            string_request_ids: pick("CURSOR_DOUBLE_ACP_REQUEST_IDS", false, &[("number", false), ("string", true)])?,
        })
    }

    pub fn has_cap(&self, cap: &str) -> bool {
        self.session_caps.iter().any(|c| c == cap)
    }
}
