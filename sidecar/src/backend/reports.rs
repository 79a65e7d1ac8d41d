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
