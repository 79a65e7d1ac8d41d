//! Before a prompt of Cursor's (the generic backend's, `backend/acp/backend.rs`, which sets the
//! session's mode first): the session's model set if it changed (`session/set_config_option`
//! with Cursor's model values and its selects).

use serde_json::json;

use super::agent::Agent;
use super::model_options::{Choice, ModelConfig};
use crate::backend::contract::TurnFailure;

/// The model and its selects (`None`: the session keeps its own); the mode is set before, by the
/// generic backend.
pub async fn configure(agent: &mut Agent, model: Option<&Choice>) -> Result<(), TurnFailure> {
    let session = agent.session_id.clone();
    let Some(model) = model else { return Ok(()) };
    let mut sets: Vec<(&str, &str)> = Vec::new();
    if agent.config.current.as_deref() != Some(model.value.as_str()) {
        sets.push(("model", &model.value));
    }
    for (id, value) in &model.extras {
        let current = agent.config.extras.iter().find(|(e, _, _)| e == id).map(|(_, v, _)| v.as_str());
        if current != Some(value.as_str()) || !sets.is_empty() {
            sets.push((id, value));
        }
    }
    for (id, value) in sets {
        let params = json!({"sessionId": session, "configId": id, "value": value});
        let result = agent.config_request("session/set_config_option", params).await?;
        let mode = agent.config.current_mode.clone();
        agent.config = ModelConfig::parse(&result);
        if agent.config.current_mode.is_none() {
            agent.config.current_mode = mode;
        }
        if id == "model" {
            agent.config.current = Some(value.to_owned());
        }
    }
    Ok(())
}
