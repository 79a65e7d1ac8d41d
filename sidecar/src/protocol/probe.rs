//! `probe`: the bridge's assumptions about the agent program, checked against this build with a
//! short scripted session (`cursor-bridge doctor --probe --json` prints the same result).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeParams {
    /// The person agreed to spend a few requests of their plan (tiny prompts); without it only
    /// the questions that send no prompt are asked.
    #[serde(default)]
    pub spend: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeResult {
    /// The program probed, in the agent's words (`Cursor CLI`).
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Requests of the person's plan spent (prompts sent).
    pub spent: u32,
    /// What was learnt is kept for this build, and the bridge acts on it.
    pub kept: bool,
    pub findings: Vec<ProbeFinding>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeFinding {
    /// Stable: `acpStart`, `catalogue`, `sessionTools`, `promptUsage`, `toolPermission`,
    /// `sessionLoad`, `cancelCommands`, `chatStore`.
    pub id: String,
    pub question: String,
    pub outcome: ProbeOutcome,
    /// What this build did (or why it was not asked).
    pub observed: String,
    /// What the bridge does about it with this build (empty when nothing was asked).
    pub bridge: String,
    /// Figures and shapes seen (times in ms, option kinds, counts); `null` when not asked.
    #[serde(default)]
    pub measured: serde_json::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProbeOutcome {
    AsAssumed,
    Differs,
    Failed,
    NotAsked,
}
