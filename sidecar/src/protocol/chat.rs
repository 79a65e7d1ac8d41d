//! `chat/send`, `chat/delta` and `$/cancelRequest`: a turn, its messages and client tools, what
//! it streams and how it ends.

use serde::{Deserialize, Serialize};

use crate::vocab::{ChatMessage, Image, Mode, ToolChoice, ToolDefinition, Usage};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatSendParams {
    /// Chosen by the client; echoed in every `chat/delta` of this turn.
    pub turn_id: String,
    pub model: String,
    pub mode: Mode,
    #[serde(default)]
    pub workspace: Option<String>,
    /// The client's own id for the conversation (VS Code: `modelOptions._conversationId`).
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// A session id this sidecar returned earlier (found by the client in the history).
    #[serde(default)]
    pub session_id: Option<String>,
    /// A one-shot request (title, progress message): never creates, resumes or changes a session.
    #[serde(default)]
    pub utility: bool,
    pub messages: Vec<ChatMessage>,
    /// The new user message's images (inline base64), for a model whose `imageInput` is true.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// The client's tools (client-tools mode: the model calls these, the agent's own are off).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    #[serde(default, skip_serializing_if = "is_auto")]
    pub tool_choice: ToolChoice,
    /// The model may ask for several calls at once (default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub parallel_tool_calls: bool,
}

fn is_auto(c: &ToolChoice) -> bool {
    *c == ToolChoice::Auto
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The CLI finished the turn.
    End,
    /// The model called the client's tools (`toolCall` deltas): run them and send the results in
    /// the next `chat/send`.
    ToolCalls,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatSendResult {
    pub turn_id: String,
    /// The session this turn belongs to; `null` for utility turns.
    pub session_id: Option<String>,
    /// The CLI chat was resumed (`--resume`), not started anew.
    pub resumed: bool,
    pub stop_reason: StopReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    pub duration_ms: u64,
}

/// `chat/delta` params: `{turnId, seq, kind, …}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatDelta<'a> {
    pub turn_id: std::borrow::Cow<'a, str>,
    pub seq: u64,
    #[serde(flatten)]
    pub body: DeltaBody,
}

/// What one `chat/delta` carries, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum DeltaBody {
    /// New answer text (never cumulative).
    Text { text: String },
    /// New reasoning text (never cumulative).
    Thinking { text: String },
    /// The current thinking block is complete.
    ThinkingDone,
    /// The CLI started a tool.
    ToolStarted { call_id: String, tool: String, summary: String },
    /// A tool finished; `ok` is false for failures, errors and rejections.
    ToolCompleted {
        call_id: String,
        tool: String,
        summary: String,
        ok: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// The CLI asked permission for something it may not do unattended and was refused.
    PermissionDenied { tool: String, summary: String, hint: String },
    /// Which session the turn runs in; sent once, before any text.
    Session {
        session_id: String,
        resumed: bool,
        /// Earlier turns were replayed into a new chat's first prompt.
        replayed: bool,
    },
    /// Token usage reported by the CLI at the end of the turn.
    Usage { usage: Usage },
    /// The model calls one of the client's tools: the client runs it (client-tools mode).
    ToolCall { call_id: String, name: String, input: serde_json::Value },
}

impl DeltaBody {
    pub const KINDS: &'static [&'static str] = &[
        "text",
        "thinking",
        "thinkingDone",
        "toolStarted",
        "toolCompleted",
        "permissionDenied",
        "session",
        "usage",
        "toolCall",
    ];
}

/// `$/cancelRequest` params.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CancelParams {
    pub id: serde_json::Value,
}
