//! What went wrong, in terms a client can map to its own message: the kind of every failure.

use std::fmt;

use serde::{Deserialize, Serialize};

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
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
