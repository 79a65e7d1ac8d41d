//! `sessions/list` and `sessions/clear`.

use serde::{Deserialize, Serialize};

use super::Mode;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsListResult {
    pub sessions: Vec<SessionSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    pub mode: Mode,
    pub model: String,
    pub workspace: String,
    pub turns: u32,
    /// Milliseconds since the Unix epoch.
    pub last_used_ms: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionsClearParams {
    /// Clear just this session.
    pub session_id: Option<String>,
    /// Without `sessionId`: clear every sidecar's sessions (the session file is shared by the
    /// user's windows and `serve`), not only the ones this sidecar used.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionsClearResult {
    pub cleared: usize,
}
