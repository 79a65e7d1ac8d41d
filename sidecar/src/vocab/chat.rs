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

/// An image the user's new message carries (HTTP image parts, the VS Code provider's image data
/// parts; inline data only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// `image/png`, `image/jpeg`, …
    pub mime_type: String,
    /// Base64, as the client sent it.
    pub data: String,
}

impl Image {
    /// The image formats the model is sent (what Cursor's models read).
    pub const TYPES: [&'static str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

    /// An image of one of [`Image::TYPES`] whose data is base64, or what is wrong with it (each
    /// door words the error its own way).
    pub fn checked(mime: &str, data: &str) -> Result<Image, String> {
        let mime = mime.trim().to_ascii_lowercase();
        if !Image::TYPES.contains(&mime.as_str()) {
            return Err(format!("Images of type `{mime}` are not supported: send {}.", Image::TYPES.join(", ")));
        }
        let data = data.trim();
        let base64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=');
        if data.is_empty() || !data.chars().all(base64) {
            return Err("The image's data is not base64.".into());
        }
        Ok(Image { mime_type: mime, data: data.to_string() })
    }
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
