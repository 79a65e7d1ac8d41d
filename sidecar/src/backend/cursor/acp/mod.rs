//! The Cursor CLI's Agent Client Protocol mode (`agent acp`) as a warm backend: the generic ACP
//! backend (`backend/acp/`: the agent's process and session, a prompt, which session a turn runs
//! in, the pool of warm sessions and spares, the client's tools hosted, the notes kept per build)
//! with Cursor's choices. What is Cursor's is here: its launch and `cursor/list_available_models`
//! (`agent`), its reading of the protocol and its words (`quirks`, the generic client's
//! [`AgentQuirks`](crate::backend::acp::AgentQuirks)), model ids and the model set-up before a
//! prompt (`model_options`, `turn`), and, in this file, [`CursorAgent`]: the program found and
//! its build, what `doctor --probe` learnt of it, the model picked from the catalogue, and the
//! [`Backend`] around it. Where the CLI is, its environment, its model list and its login are the
//! program's, shared with print mode (`backend/cursor/cli.rs`). docs/cursor-acp.md has the facts
//! these rely on.

pub mod agent;
pub mod model_options;
mod probe;
pub mod quirks;
pub mod turn;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{Agent, StartFailure};
use model_options::{Choice, ModelConfig};
/// `doctor --probe`'s ACP questions (`probe.rs`).
pub use probe::questions as probe_questions;
/// How a failed start that the project's configuration caused begins (`auto.rs` tells it apart).
pub use quirks::PROJECT_CONFIG_REJECTED;

use super::cli::{memory_allows_spares, CursorCli};
use super::discovery::CliCommand;
use super::probe_notes::SessionTools;
pub use crate::backend::acp::REPROBE_AFTER;
use crate::backend::acp::{session_in, AcpAgent, AcpBackend, AgentQuirks};
use crate::backend::contract::{
    Backend, BackendSettings, BoxFuture, Located, TurnEnd, TurnFailure, TurnSpec, VersionCheck, Warm,
};
use crate::backend::events::EventSink;
use crate::backend::process;
use crate::backend::reports::CliStatus;
use crate::error::BridgeError;
use crate::util::sync::lock;
use crate::vocab::{ErrorKind, ModelInfo};

/// Chat ids of this backend say so: a print-mode chat id is never sent to `session/load`, nor an
/// ACP session id to `--resume`.
const CHAT_PREFIX: &str = "acp:";

/// The ACP session an `acp:` chat id continues (`None`: a print-mode chat).
pub fn session_of(chat: &str) -> Option<&str> {
    session_in(CHAT_PREFIX, chat)
}

/// Cursor's ACP backend.
pub type CursorAcp = AcpBackend<CursorAgent>;

/// Cursor's ACP backend on `cli` (the program, shared with the print backend of the same door).
pub fn backend(settings: &BackendSettings, cli: Arc<CursorCli>) -> Arc<CursorAcp> {
    AcpBackend::new(&settings.warmth, CursorAgent { cli, names: Mutex::default() })
}

/// What Cursor brings to the generic ACP backend.
pub struct CursorAgent {
    /// The program (shared with the print backend of the same front door).
    cli: Arc<CursorCli>,
    /// Display names of the CLI's models (for matching ACP's options by name).
    names: Mutex<HashMap<String, String>>,
}

impl AcpAgent for CursorAgent {
    type Config = ModelConfig;
    type Program = CliCommand;
    type Choice = Choice;

    fn quirks(&self) -> &'static dyn AgentQuirks {
        &quirks::CURSOR
    }

    fn chat_prefix(&self) -> &'static str {
        CHAT_PREFIX
    }

    fn find(&self) -> BoxFuture<'_, Result<CliCommand, BridgeError>> {
        Box::pin(self.cli.find())
    }

    fn found(&self) -> Option<CliCommand> {
        self.cli.found()
    }

    fn build_id(&self, cli: &CliCommand) -> String {
        cli.build_id()
    }

    fn start<'a>(&'a self, cli: &'a CliCommand, workspace: &'a Path) -> BoxFuture<'a, Result<Agent, StartFailure>> {
        Box::pin(async move { agent::start(cli, &self.cli.env(), workspace, self.cli.has_key()).await })
    }

    /// What `doctor --probe` saw, for as long as a note of the backend's own would hold.
    fn known_not_to_start(&self, cli: &CliCommand) -> Option<String> {
        let learnt = self.cli.learnt(cli).filter(|l| l.age() < REPROBE_AFTER)?;
        learnt.acp_start_failed.map(|why| format!("{why} (seen by `cursor-bridge doctor --probe`)"))
    }

    /// A probe that saw this build's sessions never list our tools.
    fn never_lists_tools(&self, cli: &CliCommand) -> bool {
        self.cli.learnt(cli).is_some_and(|l| l.session_tools == Some(SessionTools::Never))
    }

    /// A build the probe saw list them late is waited for as long as it took (bounded).
    fn tools_wait(&self, cli: &CliCommand, within: Duration) -> Duration {
        self.cli.learnt(cli).map_or(within, |l| l.tools_wait(within))
    }

    fn spares_allowed(&self) -> bool {
        memory_allows_spares()
    }

    /// The CLI's own `status`: signed out → "log in", else the timeout as it is.
    fn signed_out(&self) -> BoxFuture<'_, Option<BridgeError>> {
        Box::pin(async move {
            (self.cli.health().await.logged_in == Some(false))
                .then(|| quirks::not_signed_in("authenticate did not answer; `agent status`: not logged in"))
        })
    }

    fn has_catalogue(&self, config: &ModelConfig) -> bool {
        !config.options.is_empty()
    }

    fn or_catalogue(&self, config: &ModelConfig, known: &ModelConfig) -> ModelConfig {
        config.or_catalogue(known)
    }

    /// `cursor/list_available_models`.
    fn list_catalogue<'a>(&'a self, agent: &'a Agent) -> BoxFuture<'a, Option<ModelConfig>> {
        Box::pin(agent::list_models(agent))
    }

    fn choose(&self, config: &ModelConfig, model: &str) -> Result<Option<Choice>, BridgeError> {
        let display = lock(&self.names).get(model).cloned();
        match model_options::choose(config, model, display.as_deref()) {
            Some(choice) => Ok(Some(choice)),
            // Nothing at all is known of the catalogue (a session loaded with `{}`, an agent
            // that lists no models, no session of this build opened yet): ACP takes only its
            // own values, so the client's id would be refused; the session keeps its own model
            // rather than the conversation being stranded on what we do not know.
            None if config.options.is_empty() => {
                tracing::info!(model = %model, "no ACP model catalogue is known; the session keeps its own model");
                Ok(None)
            }
            None => Err(BridgeError::new(
                ErrorKind::InvalidModel,
                format!("The model `{model}` is not available in Cursor's ACP mode"),
            )
            .hint(crate::backend::cursor::failures::HINT_MODEL)),
        }
    }

    fn configure<'a>(
        &'a self,
        agent: &'a mut Agent,
        model: Option<&'a Choice>,
    ) -> BoxFuture<'a, Result<(), TurnFailure>> {
        Box::pin(turn::configure(agent, model))
    }
}

impl Backend for CursorAcp {
    fn name(&self) -> &'static str {
        "acp"
    }

    fn locate(&self) -> BoxFuture<'_, Result<Located, BridgeError>> {
        Box::pin(self.agent.cli.locate())
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>, BridgeError>> {
        Box::pin(async move {
            let models = self.agent.cli.models().await?;
            *lock(&self.agent.names) = models.iter().map(|m| (m.id.clone(), m.name.clone())).collect();
            Ok(models)
        })
    }

    fn hosts_tools(&self) -> bool {
        CursorAcp::hosts_tools(self)
    }

    /// What the last agent started said (`promptCapabilities.image`); before any has started, what
    /// Cursor's agent advertises (every recorded `initialize`), so the first picker is not wrong.
    /// A turn with images on an agent that does not take them is refused, naming why.
    fn takes_images(&self) -> bool {
        self.images_taken(true)
    }

    /// ACP says when a session is gone (`session/load` refused, a prompt "not found").
    fn silent_failure_loses(&self, _chat: &str) -> bool {
        false
    }

    fn run_turn<'a>(&'a self, turn: TurnSpec, sink: &'a mut EventSink) -> BoxFuture<'a, Result<TurnEnd, TurnFailure>> {
        Box::pin(self.turn(turn, sink))
    }

    fn warm(&self, hint: Warm) {
        CursorAcp::warm(self, hint)
    }

    fn health(&self) -> BoxFuture<'_, CliStatus> {
        Box::pin(self.agent.cli.health())
    }

    fn status(&self) -> crate::backend::reports::BackendStatus {
        crate::backend::reports::BackendStatus {
            configured: "acp".into(),
            active: "acp".into(),
            reason: self.usable().err().map(|why| format!("ACP mode does not start with this CLI: {why}")),
            last_turn: None,
            warm: self.warm_count(),
        }
    }

    fn words(&self) -> &'static crate::backend::AgentWords {
        &crate::backend::cursor::words::WORDS
    }

    fn judge_version(&self, version: &str) -> VersionCheck {
        super::known_builds::check(version)
    }

    fn lock_down(&self, folder: &Path) -> std::io::Result<()> {
        super::isolation::lock_down(folder)
    }

    fn shutdown(&self) {
        self.stop_agents();
        // The sidecar is stopping: every orphan ends, and is reaped.
        process::end_orphans(process::STOP_ORPHANS_WITHIN);
    }
}
