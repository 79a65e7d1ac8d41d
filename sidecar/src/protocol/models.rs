//! `models/list` (and the `models/changed` notification): the models and their SKU variants.

use crate::vocab::ModelInfo;
use serde::{Deserialize, Serialize};

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
