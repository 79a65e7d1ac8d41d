//! Protocol and capability versions, method and notification names, JSON-RPC error codes.

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
    pub const PROBE: &str = "probe";
    pub const SHUTDOWN: &str = "shutdown";

    pub const ALL: &[&str] =
        &[INITIALIZE, MODELS_LIST, CHAT_SEND, SESSIONS_LIST, SESSIONS_CLEAR, STATUS, DOCTOR, PROBE, SHUTDOWN];
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
