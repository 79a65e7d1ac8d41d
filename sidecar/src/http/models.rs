//! `GET /v1/models`: the CLI's models on OpenAI's wire (`list` of `model`), with the context sizes
//! and the variant axes clients read.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::errors::ApiError;
use super::{json_body, HttpState};
use crate::vocab::ModelInfo;

pub async fn models(State(state): State<Arc<HttpState>>) -> Response {
    match state.engine.models(false).await {
        Ok(models) => json_body(&ModelList::from_models(&models)),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[derive(Debug, Serialize)]
pub struct ModelList {
    pub object: &'static str,
    pub data: Vec<Model>,
}

#[derive(Debug, Serialize)]
pub struct Model {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub owned_by: &'static str,
    /// Not OpenAI's, but read by several clients to size their context.
    pub context_window: u32,
    pub max_output_tokens: u32,
    /// The display name, as the Cursor CLI lists it.
    pub name: String,
    /// The base model this SKU is a variant of, and where it sits on its axes (protocol.md,
    /// `models/list`): clients that group variants read these.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<crate::vocab::ModelBase>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<crate::vocab::ModelVariant>,
}

impl ModelList {
    pub fn from_models(models: &[ModelInfo]) -> Self {
        ModelList {
            object: "list",
            data: models
                .iter()
                .map(|m| Model {
                    id: m.id.clone(),
                    object: "model",
                    created: 0,
                    owned_by: "cursor",
                    context_window: m.max_input_tokens,
                    max_output_tokens: m.max_output_tokens,
                    name: m.name.clone(),
                    base: m.base.clone(),
                    variant: m.variant.clone(),
                })
                .collect(),
        }
    }
}
