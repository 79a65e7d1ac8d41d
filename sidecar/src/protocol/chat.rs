//! `chat/send`, `chat/delta` and `$/cancelRequest`: a turn, its messages and client tools, what
//! it streams and how it ends.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    Agent,
    Ask,
    Plan,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Agent => "agent",
            Mode::Ask => "ask",
            Mode::Plan => "plan",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    User,
    Assistant,
    System,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatMessage {
    pub role: Role,
    /// May be empty on a message that only calls tools or only carries their results.
    #[serde(default)]
    pub text: String,
    /// An assistant message's calls of the client's tools (as this sidecar reported them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A user message's results of the client's tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResult>,
}

impl ChatMessage {
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        ChatMessage { role, text: text.into(), tool_calls: Vec::new(), tool_results: Vec::new() }
    }
}

/// A tool the client owns and runs (client-tools mode, docs/client-tools.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// A JSON Schema of the tool's input (an object).
    #[serde(default = "empty_object_schema")]
    pub input_schema: serde_json::Value,
}

fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    #[default]
    Auto,
    None,
    Required,
    /// This tool, and only this one.
    Named(String),
}

impl Serialize for ToolChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            ToolChoice::Auto => s.serialize_str("auto"),
            ToolChoice::None => s.serialize_str("none"),
            ToolChoice::Required => s.serialize_str("required"),
            ToolChoice::Named(name) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("name", name)?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Word(String),
            Named { name: String },
        }
        match Wire::deserialize(d)? {
            Wire::Word(w) => match w.as_str() {
                "auto" => Ok(ToolChoice::Auto),
                "none" => Ok(ToolChoice::None),
                "required" => Ok(ToolChoice::Required),
                other => Err(serde::de::Error::custom(format!(
                    "unknown toolChoice `{other}`: expected \"auto\", \"none\", \"required\" or {{\"name\": …}}"
                ))),
            },
            Wire::Named { name } => Ok(ToolChoice::Named(name)),
        }
    }
}

/// The model asked the client to run one of its tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// This sidecar's id for the call (`call_…`), never the agent's.
    pub call_id: String,
    pub name: String,
    #[serde(default)]
    pub input: serde_json::Value,
}

/// What the client's tool returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub call_id: String,
    /// The tool's name, when the client knows it (OpenAI's `role: "tool"` messages do not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
}

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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
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
