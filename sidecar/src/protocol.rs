//! Every wire type of protocol v1 and every method name. This is the only module that derives
//! `Serialize`/`Deserialize` for the wire; `protocol.md` documents it and a test keeps the two in
//! step (`tests/protocol_doc.rs`). `vscode-client/src/protocol.ts` mirrors it.

use std::fmt;

use serde::{Deserialize, Serialize};

pub const PROTOCOL_VERSION: u32 = 1;
/// The client-owned tools this sidecar speaks (`capabilities.clientTools`): `tools` on
/// `chat/send`, `toolCalls`/`toolResults` in messages, the `toolCall` delta, `stopReason: "toolCalls"`.
pub const CLIENT_TOOLS_VERSION: u32 = 1;

/// Requests a client may send (they get exactly one response each).
pub mod request {
    pub const INITIALIZE: &str = "initialize";
    pub const MODELS_LIST: &str = "models/list";
    pub const CHAT_SEND: &str = "chat/send";
    pub const SESSIONS_LIST: &str = "sessions/list";
    pub const SESSIONS_CLEAR: &str = "sessions/clear";
    pub const STATUS: &str = "status";
    pub const DOCTOR: &str = "doctor";
    pub const SHUTDOWN: &str = "shutdown";

    pub const ALL: &[&str] =
        &[INITIALIZE, MODELS_LIST, CHAT_SEND, SESSIONS_LIST, SESSIONS_CLEAR, STATUS, DOCTOR, SHUTDOWN];
}

/// Notifications, in either direction (no response).
pub mod notification {
    /// Sidecar → client: streamed output of a `chat/send` turn.
    pub const CHAT_DELTA: &str = "chat/delta";
    /// Client → sidecar: abort an in-flight request.
    pub const CANCEL_REQUEST: &str = "$/cancelRequest";
    /// Client → sidecar: exit now (after `shutdown`, or without it).
    pub const EXIT: &str = "exit";
    /// Sidecar → client: the model list changed (found by a background check), params
    /// `{models}` as in `models/list`.
    pub const MODELS_CHANGED: &str = "models/changed";

    pub const ALL: &[&str] = &[CHAT_DELTA, CANCEL_REQUEST, EXIT, MODELS_CHANGED];
}

/// JSON-RPC error codes the sidecar answers with.
pub mod code {
    pub const PARSE_ERROR: i32 = -32700;
    pub const INVALID_REQUEST: i32 = -32600;
    pub const METHOD_NOT_FOUND: i32 = -32601;
    pub const INVALID_PARAMS: i32 = -32602;
    pub const INTERNAL_ERROR: i32 = -32603;
    /// LSP's ServerNotInitialized: a request other than `initialize` came first.
    pub const NOT_INITIALIZED: i32 = -32002;
    /// LSP's RequestCancelled: the request was aborted by `$/cancelRequest`.
    pub const REQUEST_CANCELLED: i32 = -32800;
    /// A chat turn (or a CLI call behind another method) failed; `data.kind` says why.
    pub const TURN_FAILED: i32 = -32000;
}

/// `error.data.kind`: what went wrong, in terms a client can map to its own message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ErrorKind {
    CliNotFound,
    AuthRequired,
    InvalidModel,
    RateLimited,
    UsageLimit,
    Network,
    Timeout,
    EmptyResponse,
    CliFailed,
    InvalidParams,
    // Extensions beyond the design's core set.
    /// The request was cancelled by the client (`$/cancelRequest`).
    Cancelled,
    /// A request other than `initialize` arrived before `initialize`.
    NotInitialized,
    /// The sidecar itself failed (a bug); the request was answered, the sidecar keeps serving.
    Internal,
    /// Client-tools mode: the model's tool call did not fit the client's tool, even when asked again.
    BadToolCall,
    /// Client-tools mode: Cursor ran one of its own tools, and the turn was stopped.
    ToolPolicy,
}

impl ErrorKind {
    pub const ALL: &'static [ErrorKind] = &[
        ErrorKind::CliNotFound,
        ErrorKind::AuthRequired,
        ErrorKind::InvalidModel,
        ErrorKind::RateLimited,
        ErrorKind::UsageLimit,
        ErrorKind::Network,
        ErrorKind::Timeout,
        ErrorKind::EmptyResponse,
        ErrorKind::CliFailed,
        ErrorKind::InvalidParams,
        ErrorKind::Cancelled,
        ErrorKind::NotInitialized,
        ErrorKind::Internal,
        ErrorKind::BadToolCall,
        ErrorKind::ToolPolicy,
    ];

    /// The wire name, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::CliNotFound => "cliNotFound",
            ErrorKind::AuthRequired => "authRequired",
            ErrorKind::InvalidModel => "invalidModel",
            ErrorKind::RateLimited => "rateLimited",
            ErrorKind::UsageLimit => "usageLimit",
            ErrorKind::Network => "network",
            ErrorKind::Timeout => "timeout",
            ErrorKind::EmptyResponse => "emptyResponse",
            ErrorKind::CliFailed => "cliFailed",
            ErrorKind::InvalidParams => "invalidParams",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::NotInitialized => "notInitialized",
            ErrorKind::Internal => "internal",
            ErrorKind::BadToolCall => "badToolCall",
            ErrorKind::ToolPolicy => "toolPolicy",
        }
    }

    /// The JSON-RPC error code this kind is answered with.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::InvalidParams => code::INVALID_PARAMS,
            ErrorKind::Cancelled => code::REQUEST_CANCELLED,
            ErrorKind::NotInitialized => code::NOT_INITIALIZED,
            ErrorKind::Internal => code::INTERNAL_ERROR,
            _ => code::TURN_FAILED,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `error.data` of every error the sidecar sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorData {
    pub kind: ErrorKind,
    /// What a person can do about it, one sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Diagnostic text (e.g. the CLI's stderr, bounded); never contains the API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A secret (the Cursor API key). Its `Debug` never shows the value, so it cannot reach a log by
/// accident; it is only ever put into the CLI child's environment.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

// ---------------------------------------------------------------------------------------------
// initialize

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub protocol_version: u32,
    #[serde(default)]
    pub client_info: Option<ClientInfo>,
    #[serde(default)]
    pub workspace_folders: Vec<String>,
    #[serde(default)]
    pub cli_path: Option<String>,
    /// Never serialized: the key travels in one direction only, into the CLI's environment.
    #[serde(default, skip_serializing)]
    pub api_key: Option<Secret>,
    #[serde(default)]
    pub options: Options,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientInfo {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
}

/// `initialize.options`. Every field has a default, so `{}` is valid. Keys this sidecar does not
/// know (a newer client's) are kept aside in `unknown`, and known keys whose value it cannot read
/// (a newer client's `backend: "sdk"`) keep their default and are named in `unreadable`: both are
/// logged, reported in `capabilities.ignoredOptions`, and otherwise ignored, so a newer client can
/// start an older sidecar.
// `remote = "Self"`: the derived (strict) code becomes inherent functions, and the trait impls
// below wrap them: deserializing is lenient per key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", default)]
pub struct Options {
    /// Overall limit for one turn.
    pub request_timeout_seconds: u64,
    /// No CLI output for this long ends the turn with kind `timeout`.
    pub idle_timeout_seconds: u64,
    /// At most this many CLI processes run at once; later turns queue in order.
    pub max_concurrent: usize,
    /// A session unused for this long is forgotten.
    pub session_ttl_minutes: u64,
    /// At most this many sessions are kept (least recently used dropped first).
    pub max_sessions: usize,
    /// Pass `--force` so agent mode may run shell commands without approval.
    pub force: bool,
    /// Upper bound (characters) for earlier turns replayed into a new chat's first prompt.
    pub replay_max_chars: usize,
    /// Model for `utility` turns (titles, progress messages); `None` uses the turn's model.
    pub utility_model: Option<String>,
    /// Forward client `system` messages to the CLI (off: Copilot's system prompt describes tools
    /// the CLI does not have).
    pub send_system_messages: bool,
    /// CLI processes kept started ahead of the next turn (0 turns warm spares off).
    pub spares: usize,
    /// A spare unused for this long is stopped.
    pub spare_idle_seconds: u64,
    /// The client trusts the workspace (VS Code's Restricted Mode is `false`). Untrusted: ask
    /// mode only, no `--force`, and the CLI runs in a private scratch folder, never the user's.
    pub workspace_trusted: bool,
    /// Which backend runs turns: `auto` (ACP when the CLI's ACP mode starts, else print mode),
    /// `acp` or `print`; not named: `CURSOR_BRIDGE_BACKEND`, else `auto`.
    pub backend: Option<BackendChoice>,
    /// Warm ACP sessions kept at most (one process each), least recently used stopped first.
    pub warm_sessions: usize,
    /// A warm ACP session unused this long is stopped (the conversation continues through
    /// `session/load` or a replay).
    pub warm_idle_seconds: u64,
    #[serde(flatten, skip_serializing)]
    pub unknown: std::collections::BTreeMap<String, serde_json::Value>,
    /// Known keys whose value was not understood (wrong type, a value from a newer client); each
    /// keeps its default.
    #[serde(skip)]
    pub unreadable: Vec<String>,
}

impl Serialize for Options {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        Options::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for Options {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let mut given = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let known = Options::known_names();
        let mut unreadable = Vec::new();
        // Each known key is tried alone, so one value this sidecar cannot read costs only itself.
        given.retain(|key, value| {
            if !known.contains(key) {
                return true; // kept for `unknown`
            }
            let alone = serde_json::Value::Object([(key.clone(), value.clone())].into_iter().collect());
            let readable = Options::deserialize(alone).is_ok();
            if !readable {
                unreadable.push(key.clone());
            }
            readable
        });
        let mut options = Options::deserialize(serde_json::Value::Object(given)).map_err(serde::de::Error::custom)?;
        // Trust fails closed: a client that said something about trust we cannot read (`"false"`,
        // `0`, `null`) is not given it. Every other default is the safe one already.
        if unreadable.iter().any(|k| k == "workspaceTrusted") {
            options.workspace_trusted = false;
        }
        options.unreadable = unreadable;
        Ok(options)
    }
}

impl Options {
    /// Every key that was sent and is ignored: unknown ones, then known ones with a value this
    /// sidecar cannot read (`capabilities.ignoredOptions`).
    pub fn ignored(&self) -> Vec<String> {
        self.unknown.keys().chain(&self.unreadable).cloned().collect()
    }

    /// The option names this sidecar understands, as on the wire.
    pub fn known_names() -> Vec<String> {
        match serde_json::to_value(Options::default()) {
            Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            request_timeout_seconds: 300,
            idle_timeout_seconds: 60,
            max_concurrent: 4,
            session_ttl_minutes: 7 * 24 * 60,
            max_sessions: 50,
            force: false,
            replay_max_chars: 100_000,
            utility_model: None,
            send_system_messages: false,
            spares: 1,
            spare_idle_seconds: 300,
            workspace_trusted: true,
            backend: None,
            warm_sessions: 4,
            warm_idle_seconds: 900,
            unknown: Default::default(),
            unreadable: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: u32,
    pub server_info: ServerInfo,
    pub capabilities: Capabilities,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// The `chat/delta` kinds this sidecar may send.
    pub delta_kinds: Vec<String>,
    /// Turns can be cancelled with `$/cancelRequest`.
    pub cancel: bool,
    /// Conversations resume across turns (and sidecar restarts).
    pub sessions: bool,
    /// The version of client-owned tools this sidecar speaks (`tools` on `chat/send`, the
    /// `toolCall` delta, `stopReason: "toolCalls"`); 0 or absent: none.
    #[serde(default)]
    pub client_tools: u32,
    /// The CLI found at initialize time, if any (found lazily again on each turn).
    pub cli: CliInfo,
    /// The `initialize.options` keys this sidecar understands.
    #[serde(default)]
    pub options: Vec<String>,
    /// Keys of `initialize.options` that were not understood and are ignored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_options: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CliInfo {
    pub found: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// models/list

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelsListParams {
    /// Ask the CLI again instead of answering from the cache.
    pub refresh: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelsListResult {
    pub models: Vec<ModelInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub id: String,
    pub name: String,
    pub family: String,
    pub max_input_tokens: u32,
    pub max_output_tokens: u32,
    pub capabilities: ModelCapabilities,
    pub is_default: bool,
    /// The base model this SKU is a variant of (`backend/sku.rs`); absent in lists cached by
    /// older sidecars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<ModelBase>,
    /// Where this SKU sits on its base's axes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<ModelVariant>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelBase {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelVariant {
    /// `minimal`, `low`, `medium`, `high`, `xhigh`, `max`; absent: the CLI's own default effort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    pub fast: bool,
    pub thinking: bool,
    /// What a menu shows for it (`High · Fast`, `Default`, `Standard`).
    pub label: String,
    /// The variant the CLI uses for the base (exactly one per base).
    pub default: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCapabilities {
    pub thinking: bool,
    pub tool_calling: bool,
    pub image_input: bool,
}

// ---------------------------------------------------------------------------------------------
// chat/send

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
    /// Of `output_tokens`, those spent reasoning, when the agent says (ACP's `thoughtTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
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

// ---------------------------------------------------------------------------------------------
// sessions/list, sessions/clear

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

// ---------------------------------------------------------------------------------------------
// status

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

/// `initialize.options.backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BackendChoice {
    #[default]
    Auto,
    Acp,
    Print,
}

impl BackendChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Acp => "acp",
            BackendChoice::Print => "print",
        }
    }
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "acp" => Ok(BackendChoice::Acp),
            "print" => Ok(BackendChoice::Print),
            other => Err(format!("unknown backend `{other}` (auto, acp or print)")),
        }
    }
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

// ---------------------------------------------------------------------------------------------
// doctor

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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A value a newer (or careless) client sends for a known option keeps that option's default
    /// and is reported, while every other option still takes effect.
    #[test]
    fn an_option_value_this_sidecar_cannot_read_keeps_its_default_and_is_reported() {
        let cases = [
            (json!({"backend": "sdk", "maxConcurrent": 2}), vec!["backend"]),
            (json!({"backend": "acp", "maxConcurrent": 2}), vec![]),
            (json!({"maxConcurrent": "two", "backend": "print"}), vec!["maxConcurrent"]),
            (json!({"workspaceTrusted": "maybe", "maxConcurrent": 2}), vec!["workspaceTrusted"]),
            (json!({"workspaceTrusted": "false"}), vec!["workspaceTrusted"]),
            (json!({"workspaceTrusted": null}), vec!["workspaceTrusted"]),
            (json!({"workspaceTrusted": 0}), vec!["workspaceTrusted"]),
            (json!({"fromTheFuture": 1, "backend": 7, "maxConcurrent": 2}), vec!["fromTheFuture", "backend"]),
        ];
        for (given, ignored) in cases {
            let options: Options = serde_json::from_value(given.clone()).expect("never refused");
            assert_eq!(options.ignored(), ignored, "{given}");
            let sent = given.as_object().unwrap();
            let expected = |key: &str, default: serde_json::Value| match sent.get(key) {
                Some(v) if !ignored.contains(&key) => v.clone(),
                _ => default,
            };
            let got = serde_json::to_value(&options).unwrap();
            assert_eq!(got["backend"], expected("backend", json!(null)), "{given}");
            assert_eq!(got["maxConcurrent"], expected("maxConcurrent", json!(4)), "{given}");
            // Trust fails closed: unreadable means untrusted, never the default `true`.
            let trust_default = if ignored.contains(&"workspaceTrusted") { json!(false) } else { json!(true) };
            assert_eq!(got["workspaceTrusted"], expected("workspaceTrusted", trust_default), "{given}");
        }
    }
}
