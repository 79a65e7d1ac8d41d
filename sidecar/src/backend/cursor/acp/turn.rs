//! Before a prompt of Cursor's (the generic backend's, `backend/acp/sessions.rs`): the session's
//! mode and model set if they changed (`session/set_mode`, `session/set_config_option` with
//! Cursor's model values).

use serde_json::{json, Value};

use super::agent::{Agent, CONFIG_TIMEOUT};
use super::model_options::{Choice, ModelConfig};
use crate::backend::acp::RpcError;
use crate::backend::contract::TurnFailure;
use crate::error::BridgeError;
use crate::vocab::{ErrorKind, Mode};

/// Mode first (ask mode means no permission prompts), then the model and its selects
/// (`None`: the session keeps its own).
pub async fn configure(agent: &mut Agent, mode: Mode, model: Option<&Choice>) -> Result<(), TurnFailure> {
    let session = agent.session_id.clone();
    if agent.config.current_mode.as_deref() != Some(mode.as_str()) {
        let params = json!({"sessionId": session, "modeId": mode.as_str()});
        config_request(agent, "session/set_mode", params).await?;
        agent.config.current_mode = Some(mode.as_str().to_owned());
    }
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
        let result = config_request(agent, "session/set_config_option", params).await?;
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

async fn config_request(agent: &Agent, method: &str, params: Value) -> Result<Value, TurnFailure> {
    match tokio::time::timeout(CONFIG_TIMEOUT, agent.conn.request(method, params)).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(RpcError::Remote { code: -32602, message, .. })) if method == "session/set_config_option" => {
            Err(BridgeError::new(ErrorKind::InvalidModel, format!("Cursor's ACP mode refused the model: {message}"))
                .hint(crate::backend::cursor::failures::HINT_MODEL)
                .into())
        }
        Ok(Err(e)) => Err(BridgeError::new(ErrorKind::CliFailed, format!("Cursor's ACP mode refused `{method}`: {e}"))
            .hint("See Cursor Bridge logs for details.")
            .into()),
        Err(_) => Err(BridgeError::new(
            ErrorKind::Timeout,
            format!("Cursor's ACP mode did not answer `{method}` within {} s", CONFIG_TIMEOUT.as_secs()),
        )
        .into()),
    }
}
