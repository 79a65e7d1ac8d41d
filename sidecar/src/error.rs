//! The typed error every request fails with. It becomes a JSON-RPC error at the protocol edge
//! (`protocol::error_code` of the kind, `protocol::ErrorData`); inside the sidecar it carries enough for a
//! person to act on: what happened (message), what to do (hint), and diagnostics (detail).

use crate::vocab::ErrorKind;

#[derive(Debug, Clone, PartialEq)]
pub struct BridgeError {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
    pub detail: Option<String>,
}

pub type Result<T, E = BridgeError> = std::result::Result<T, E>;

impl BridgeError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        BridgeError { kind, message: message.into(), hint: None, detail: None }
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        BridgeError::new(ErrorKind::InvalidParams, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        BridgeError::new(ErrorKind::Internal, message).hint("This is a bug in Cursor Bridge; the log file has details.")
    }
    pub fn cancelled() -> Self {
        BridgeError::new(ErrorKind::Cancelled, "Request cancelled")
    }
    pub fn not_initialized() -> Self {
        BridgeError::new(ErrorKind::NotInitialized, "The sidecar has not been initialized")
            .hint("Send `initialize` first.")
    }
}

impl std::fmt::Display for BridgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for BridgeError {}
