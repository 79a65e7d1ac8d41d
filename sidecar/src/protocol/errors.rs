//! `error.data` and the JSON-RPC code each failure kind is answered with.

use serde::{Deserialize, Serialize};

use super::code;
use crate::error::BridgeError;
use crate::vocab::ErrorKind;

/// The JSON-RPC error code a failure of this kind is answered with.
pub fn error_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::InvalidParams => code::INVALID_PARAMS,
        ErrorKind::Cancelled => code::REQUEST_CANCELLED,
        ErrorKind::NotInitialized => code::NOT_INITIALIZED,
        ErrorKind::Internal => code::INTERNAL_ERROR,
        _ => code::TURN_FAILED,
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

impl From<&BridgeError> for ErrorData {
    fn from(e: &BridgeError) -> Self {
        ErrorData { kind: e.kind, hint: e.hint.clone(), detail: e.detail.clone() }
    }
}
