//! A model as the sidecar lists it: an agent's SKU (Cursor's), its base model and where it sits on that base's
//! axes (effort, speed, thinking), and what it can do.

use serde::{Deserialize, Serialize};

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
    /// The base model this SKU is a variant of (`backend/cursor/sku.rs`); absent in lists cached by
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
