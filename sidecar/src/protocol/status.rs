//! `status`: the CLI found, the backend serving, sessions and turns in flight.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusResult {
    pub version: String,
    pub cli: CliStatus,
    pub backend: BackendStatus,
    pub sessions: usize,
    pub in_flight: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_file: Option<String>,
}

/// Which backend serves turns, and why (`status`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendStatus {
    /// What was asked for: `auto`, `acp` or `print`.
    pub configured: String,
    /// What serves the next turn.
    pub active: String,
    /// Why, when it is not what was asked for or a fallback happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The backend that served the last turn, and why that one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_turn: Option<ServedTurn>,
    /// Agent processes kept warm (ACP sessions, spares).
    pub warm: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServedTurn {
    pub backend: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CliStatus {
    pub found: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// From `agent status`; `null` when it could not be told (CLI missing, hung, unreadable).
    pub logged_in: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// An API key was given in `initialize` (it is never echoed).
    pub api_key: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Why the CLI was not found, when it was not: a configured path names its setting and the
    /// path tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}
