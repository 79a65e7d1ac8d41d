//! What a backend reports about itself (`status`, `doctor`): the agent program it found and which
//! backend serves turns. Plain types: the front doors turn them into their wire's messages.

/// The agent program as found and asked (`--version`, `status`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CliStatus {
    pub found: bool,
    pub path: Option<String>,
    pub version: Option<String>,
    /// From `agent status`; `None` when it could not be told (CLI missing, hung, unreadable).
    pub logged_in: Option<bool>,
    pub account: Option<String>,
    /// An API key was given (it is never echoed).
    pub api_key: bool,
    /// A key the agent will use is in the environment it inherits (for `doctor`: a login is not
    /// needed then).
    pub key_in_environment: bool,
    pub hint: Option<String>,
    /// Why the CLI was not found, when it was not: a configured path names its setting and the
    /// path tried.
    pub problem: Option<String>,
}

/// Which backend serves turns, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendStatus {
    /// What was asked for: `auto`, `acp` or `print`.
    pub configured: String,
    /// What serves the next turn.
    pub active: String,
    /// Why, when it is not what was asked for or a fallback happened.
    pub reason: Option<String>,
    /// The backend that served the last turn, and why that one.
    pub last_turn: Option<ServedTurn>,
    /// Agent processes kept warm (ACP sessions, spares).
    pub warm: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ServedTurn {
    pub backend: String,
    pub reason: String,
}

/// What `doctor --probe` may spend: the questions that need none of the user's requests are
/// always asked; the ones that send a tiny prompt only when the person agreed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbePlan {
    /// The person agreed to spend a few requests of their plan.
    pub spend: bool,
}

/// What a probe of the agent program found: each assumption of the bridge, what this build did,
/// and what the bridge does about it. Nothing private: no prompt of the person's, no path but
/// the probe's own scratch folder (named `<scratch>`), no key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeReport {
    /// The program probed, in the agent's words (`Cursor CLI`).
    pub agent: String,
    /// Its `--version`, when it answered.
    pub version: Option<String>,
    /// Requests of the person's plan the probe spent (prompts sent).
    pub spent: u32,
    pub findings: Vec<ProbeFinding>,
    /// Whether what was learnt is kept for this build (the bridge then acts on it).
    pub kept: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProbeFinding {
    /// Stable: `acpStart`, `catalogue`, `sessionTools`, `promptUsage`, `toolPermission`,
    /// `sessionLoad`, `cancelCommands`, `chatStore`.
    pub id: &'static str,
    /// The assumption, as a question.
    pub question: String,
    pub outcome: ProbeOutcome,
    /// What this build did (or why it was not asked).
    pub observed: String,
    /// What the bridge does about it with this build.
    pub bridge: String,
    /// Figures and shapes seen (times in ms, option kinds, counts), for a bug report.
    pub measured: serde_json::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The build does what the bridge assumes.
    AsAssumed,
    /// It does something else, which the bridge handles (it says how).
    Differs,
    /// The question could not be answered (the build failed at it).
    Failed,
    /// Not asked: the reason is in `observed` (no consent to spend, an earlier step failed).
    NotAsked,
}
