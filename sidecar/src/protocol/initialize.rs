//! `initialize`: the client, its folders, its key (a `Secret`) and its options; what the sidecar
//! answers it can do.

use serde::{Deserialize, Serialize};

use super::Options;
use crate::vocab::Secret;

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
