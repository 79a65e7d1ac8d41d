//! A turn's terms: its mode, the roles and messages of a conversation, the tokens it used.

use serde::{Deserialize, Serialize};

use super::{ToolCall, ToolResult};

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

/// An image the user's new message carries (HTTP image parts, inline data only).
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// `image/png`, `image/jpeg`, …
    pub mime_type: String,
    /// Base64, as the client sent it.
    pub data: String,
}

impl ChatMessage {
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        ChatMessage { role, text: text.into(), tool_calls: Vec::new(), tool_results: Vec::new() }
    }
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
