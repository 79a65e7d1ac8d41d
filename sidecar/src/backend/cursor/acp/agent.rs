//! One `agent acp` process of the Cursor CLI: the generic ACP agent (`backend/acp/agent.rs`:
//! the process, the handshake, one session, routing) launched Cursor's way, with Cursor's
//! session configuration ([`ModelConfig`]) and its `cursor/list_available_models` extension.

use std::path::Path;

use serde_json::json;

use super::model_options::ModelConfig;
use super::quirks::CURSOR;
pub use crate::backend::acp::{cancelled_outcome, permission_answer, StartFailure, CONFIG_TIMEOUT};
use crate::backend::acp::{Launch, SessionConfig};
use crate::backend::cursor::commands::{spawn_error, spawn_spec};
use crate::backend::cursor::discovery::CliCommand;
use crate::backend::cursor::env::ChildEnv;

/// A Cursor ACP agent: its sessions configure a [`ModelConfig`].
pub type Agent = crate::backend::acp::Agent<ModelConfig>;

impl SessionConfig for ModelConfig {
    fn from_opened(result: &serde_json::Value) -> Self {
        ModelConfig::parse(result)
    }

    fn current_mode(&self) -> Option<&str> {
        self.current_mode.as_deref()
    }

    fn mode_was_set(&mut self, mode: &str) {
        self.current_mode = Some(mode.to_owned());
    }
}

/// Start `agent acp` in `workspace` and complete the handshake (`authenticate` unless a key is
/// in the environment: it tries to open a browser then).
pub async fn start(cli: &CliCommand, env: &ChildEnv, workspace: &Path, api_key: bool) -> Result<Agent, StartFailure> {
    // Global flags go before `acp` (docs/cursor-acp.md §2). `--trust`: the workspace-trust gate
    // would stop a headless start, as in print mode; untrusted folders never get here (the
    // engine places them in a scratch folder). Never `--force`: every permission request comes
    // to us and is answered per turn by policy.
    let spec = spawn_spec(cli, &["--trust", "acp"], env, Some(workspace));
    let spawn_failed = |e: &std::io::Error| spawn_error(cli, e);
    let launch = Launch { spec, spawn_error: &spawn_failed, workspace, api_key, quirks: &CURSOR };
    Agent::start(&launch).await
}

/// The agent's model catalogue (`cursor/list_available_models`; older builds lack it).
pub async fn list_models(agent: &Agent) -> Option<ModelConfig> {
    let request = agent.conn.request("cursor/list_available_models", json!({}));
    match tokio::time::timeout(CONFIG_TIMEOUT, request).await {
        Ok(Ok(result)) => Some(ModelConfig::from_model_list(&result)),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "the ACP agent did not list its models");
            None
        }
        Err(_) => None,
    }
}
