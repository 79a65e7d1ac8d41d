//! `doctor`: what stands between this set-up and a working Cursor model, check by check.

use serde::{Deserialize, Serialize};

/// `doctor`: what stands between this set-up and a working Cursor model, check by check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorResult {
    /// No check failed.
    pub ok: bool,
    pub checks: Vec<Check>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// Stable: `cli`, `cliVersion`, `login`, `models`, `workspaceTrust`, `backend`, `stateFolder`.
    pub id: String,
    pub title: String,
    pub status: CheckStatus,
    /// One line: what was found.
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What to do about it (absent when nothing needs doing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CheckStatus {
    Ok,
    /// Works, but not as well as it could.
    Warn,
    /// Cursor models will not answer until this is fixed.
    Fail,
    /// Nothing to judge.
    Info,
}
