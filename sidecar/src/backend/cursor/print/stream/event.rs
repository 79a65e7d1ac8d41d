//! What the parser produces: [`StreamEvent`]s, the [`ToolOutcome`] of a tool call and the
//! [`TurnResult`] of a turn. Re-exported by the parent module; imports nothing from its siblings.

use crate::vocab::Usage;

/// Something the editor can show, in stream order.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// `system/init` (docs/cursor-cli.md §4.3). `model` is a display name ("Claude 4 Sonnet"),
    /// not the requested id.
    Init { session_id: String, model: Option<String> },
    /// New answer text only, never cumulative. May start with an inserted paragraph break
    /// (`"\n\n"` or `"\n"`) when it follows tool calls, see `StreamParser`.
    Text(String),
    /// New reasoning text only (docs/cursor-cli.md §4.5).
    Thinking(String),
    /// The open thinking block is complete: a `thinking/completed` event, or implied because text,
    /// a tool call, the result or EOF came while thinking text was open.
    ThinkingDone,
    /// `tool_call/started` (docs/cursor-cli.md §4.8). `tool` is a short human name ("shell",
    /// "read", …), `summary` one line (command, path, pattern, url …; may be empty).
    ToolStarted { call_id: String, tool: String, summary: String },
    /// `tool_call/completed`; may arrive without a `ToolStarted` (denials,
    /// docs/cursor-cli.md §4.8).
    ToolCompleted { call_id: String, tool: String, summary: String, outcome: ToolOutcome },
    /// `interaction_query/request` (docs/cursor-cli.md §4.10): the CLI asks permission
    /// (non-`--force` runs). With stdin closed it is auto-rejected and the tool completes as
    /// [`ToolOutcome::Rejected`].
    PermissionRequested { query_type: String, summary: String },
    /// `{"type":"error","message":..}` on the stream (docs/cursor-cli.md §4.11); the caller
    /// classifies it with `cursor::failures::classify`.
    ErrorEnvelope { message: String },
    /// The terminal `result` event (docs/cursor-cli.md §4.9), once per turn and always the last
    /// event of a turn that has one; its fallback text (if any) was emitted as `Text` just before.
    Result(TurnResult),
}

/// How a tool call ended (`result` one-key union of docs/cursor-cli.md §4.8).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// `success`, or a completed event with no recognisable outcome at all.
    Success,
    /// `failure`, e.g. a shell command's non-zero exit (`detail`: "exit code 1").
    Failure { detail: Option<String> },
    /// `rejected` (permission denied, auto-rejected query).
    Rejected { reason: Option<String> },
    /// `error` (the tool itself could not run, e.g. unreadable file).
    Error { message: Option<String> },
}

impl ToolOutcome {
    pub fn is_success(&self) -> bool {
        matches!(self, ToolOutcome::Success)
    }

    /// The detail/reason/message, whichever this outcome carries.
    pub fn detail(&self) -> Option<&str> {
        match self {
            ToolOutcome::Success => None,
            ToolOutcome::Failure { detail } => detail.as_deref(),
            ToolOutcome::Rejected { reason } => reason.as_deref(),
            ToolOutcome::Error { message } => message.as_deref(),
        }
    }
}

/// The terminal `result` event (docs/cursor-cli.md §4.9).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    /// `subtype == "success" && !is_error`. The caller must still check the exit status
    /// (docs/cursor-cli.md §5.1).
    pub success: bool,
    /// `result.result`: all segments glued with no separator (docs/cursor-cli.md §4.9).
    pub text: String,
    pub session_id: Option<String>,
    pub request_id: Option<String>,
    pub duration_ms: Option<u64>,
    /// `usage` (camelCase on the wire; missing counters are 0); `None` when absent (pre-2026.07).
    pub usage: Option<Usage>,
}
