//! The Cursor CLI's Agent Client Protocol mode (`agent acp`) as a warm backend, built on the
//! generic ACP client (`backend/acp/`: the agent's process and session, a prompt, the pool of
//! warm sessions and spares, the client's tools hosted). What is Cursor's is here: its launch and
//! `cursor/list_available_models` (`agent`), its reading of the protocol and its words
//! (`quirks`, the generic client's [`AgentQuirks`](crate::backend::acp::AgentQuirks)),
//! model ids and the mode/model set-up before a prompt (`model_options`, `turn`), and, in this
//! file, the backend: which session a turn runs in, the model picked from the catalogue, the
//! retry and the notes kept per CLI build (ACP does not start with it, its sessions do not take
//! the client's tools, the catalogue it advertised). Where the CLI is, its environment, its
//! model list and its login are the program's, shared with print mode (`backend/cursor/cli.rs`).
//! docs/cursor-acp.md has the facts these rely on.

pub mod agent;
mod build_note;
pub mod model_options;
mod probe;
pub mod quirks;
pub mod turn;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use agent::{Agent, StartFailure};
use build_note::BuildNote;
/// `doctor --probe`'s ACP questions (`probe.rs`).
pub use probe::questions as probe_questions;
/// How a failed start that the project's configuration caused begins (`auto.rs` tells it apart).
pub use quirks::PROJECT_CONFIG_REJECTED;

use super::cli::{memory_allows_spares, CursorCli};
use super::discovery::CliCommand;
use crate::backend::acp::{retire, Fresh, Pool, ToolHost};
use crate::backend::contract::{
    Backend, BoxFuture, Chat, Located, Settings, TurnEnd, TurnFailure, TurnSpec, VersionCheck, Warm,
};
use crate::backend::events::EventSink;
use crate::backend::process;
use crate::backend::reports::CliStatus;
use crate::error::BridgeError;
use crate::util::sync::lock;
use crate::vocab::{ErrorKind, ModelInfo};

/// How often idle sessions are looked at.
const SWEEP: Duration = Duration::from_secs(5);
/// After ACP failed to start with a CLI build, `auto` uses print mode for it this long.
pub const REPROBE_AFTER: Duration = Duration::from_secs(30 * 60);

/// Chat ids of this backend say so: a print-mode chat id is never sent to `session/load`, nor an
/// ACP session id to `--resume`.
const CHAT_PREFIX: &str = "acp:";

pub fn chat_id(session: &str) -> String {
    format!("{CHAT_PREFIX}{session}")
}

pub fn session_of(chat: &str) -> Option<&str> {
    chat.strip_prefix(CHAT_PREFIX).filter(|s| !s.is_empty())
}

pub struct CursorAcp {
    me: Weak<CursorAcp>,
    /// The program (shared with the print backend of the same front door).
    cli: Arc<CursorCli>,
    /// Warm sessions and spares.
    pool: Arc<Pool<model_options::ModelConfig>>,
    /// Display names of the CLI's models (for matching ACP's options by name).
    names: Mutex<HashMap<String, String>>,
    /// A CLI build ACP did not start with, since when, and why.
    broken: BuildNote<String>,
    /// A CLI build whose sessions did not list our tools (it ignores or gates the MCP servers
    /// of a session), since when: the client's tools go in the prompt meanwhile.
    no_session_mcp: BuildNote<()>,
    /// The model catalogue the last session of a CLI build advertised.
    catalogue: BuildNote<model_options::ModelConfig>,
    /// Whether the last agent started takes images (`None`: none has started yet).
    takes_images: Mutex<Option<bool>>,
}

impl CursorAcp {
    pub fn new(settings: &Settings, cli: Arc<CursorCli>) -> Arc<CursorAcp> {
        let backend = Arc::new_cyclic(|me| CursorAcp {
            me: me.clone(),
            cli,
            pool: Pool::new(&settings.warmth),
            names: Mutex::default(),
            broken: BuildNote::new(),
            no_session_mcp: BuildNote::new(),
            catalogue: BuildNote::new(),
            takes_images: Mutex::default(),
        });
        let weak = Arc::downgrade(&backend);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SWEEP);
            loop {
                tick.tick().await;
                match weak.upgrade() {
                    Some(backend) => backend.pool.sweep(!memory_allows_spares()),
                    None => break,
                }
            }
        });
        backend
    }

    /// `Err(why)` while ACP is known not to start with the current CLI build.
    pub fn usable(&self) -> Result<(), String> {
        let Some(cli) = self.cli.found() else { return Ok(()) };
        if let Some(why) = self.broken.get(&cli) {
            return Err(why);
        }
        // What `doctor --probe` saw, for as long as a note of our own would hold.
        match self.cli.learnt(&cli) {
            Some(l) if l.age() < REPROBE_AFTER => {
                l.acp_start_failed.map_or(Ok(()), |why| Err(format!("{why} (seen by `cursor-bridge doctor --probe`)")))
            }
            _ => Ok(()),
        }
    }

    /// Whether sessions of the current CLI build can be given the client's tools.
    pub fn hosts_tools(&self) -> bool {
        let Some(cli) = self.cli.found() else { return self.usable().is_ok() };
        // A probe that saw this build's sessions never list our tools: the prompt protocol from
        // the first turn, without waiting for a listing that does not come.
        let never_listed =
            self.cli.learnt(&cli).is_some_and(|l| l.session_tools == Some(super::probe_notes::SessionTools::Never));
        self.usable().is_ok() && self.no_session_mcp.get(&cli).is_none() && !never_listed
    }

    /// A new agent with its session opened (or, with `load`, loaded: `Ok(None)` when the agent
    /// does not have it), hosting `tools` if given. A failure that says ACP does not work with
    /// this build (the process exits at start or while opening the session, no `initialize`
    /// answer) is tried once more, since one can be the CLI's own moment (it updates itself at
    /// start), before the build is noted as one ACP does not work with, for `REPROBE_AFTER`.
    /// Every session that opens records the catalogue it advertised, for sessions that answer
    /// without one (a `session/load` may answer `{}`).
    async fn open_agent(
        &self,
        cli: &CliCommand,
        workspace: &Path,
        tools: Option<&[crate::vocab::ToolDefinition]>,
        load: Option<&str>,
    ) -> Result<Option<Agent>, TurnFailure> {
        let env = self.cli.env();
        let mut retried = false;
        loop {
            let failure = match agent::start(cli, &env, workspace, self.cli.has_key()).await {
                Ok(mut agent) => match self.open_session(cli, &mut agent, tools, load).await {
                    Ok(true) => {
                        // ACP works with this build after all (a conversation in an ACP session
                        // tries it on every turn): new chats use it again.
                        self.broken.forget();
                        self.note_catalogue(cli, &agent);
                        return Ok(Some(agent));
                    }
                    Ok(false) => {
                        retire(agent);
                        return Ok(None);
                    }
                    // The agent started and shook hands, then stopped loading this session: the
                    // session's problem (a stored session that crashes it), not the build's. No
                    // second start and no mark; the conversation goes on in a new session with
                    // its history.
                    Err(Unopened::Start(failure)) if load.is_some() && failure.broken => {
                        retire(agent);
                        tracing::warn!(error = %failure.error.message, "Cursor's agent stopped while loading a session");
                        return Err(TurnFailure::chat_lost(
                            "Cursor's agent stopped while loading this conversation's session",
                        ));
                    }
                    Err(Unopened::Start(failure)) => {
                        retire(agent);
                        failure
                    }
                    Err(Unopened::Turn(failure)) => {
                        retire(agent);
                        return Err(failure);
                    }
                },
                Err(failure) => failure,
            };
            if failure.broken && !retried {
                tracing::info!(error = %failure.error.message, "Cursor's ACP mode did not start; trying once more");
                retried = true;
                continue;
            }
            self.note_start(cli, &failure);
            // No answer to `authenticate` is no evidence of a missing login; the CLI's own
            // `status` is: signed out → "log in", else the timeout as it is.
            if failure.auth_unanswered && self.cli.health().await.logged_in == Some(false) {
                return Err(quirks::not_signed_in("authenticate did not answer; `agent status`: not logged in").into());
            }
            let broken = failure.broken;
            let mut failed: TurnFailure = failure.error.into();
            failed.unstartable = broken;
            return Err(failed);
        }
    }

    /// Give `agent` the client's tools (if any) and open (or load) its session; `Ok(false)`
    /// from a load: the agent does not have the session. A session that does not list our tools
    /// in time fails with `tools_not_hosted`, and the build is remembered.
    async fn open_session(
        &self,
        cli: &CliCommand,
        agent: &mut Agent,
        tools: Option<&[crate::vocab::ToolDefinition]>,
        load: Option<&str>,
    ) -> Result<bool, Unopened> {
        if let Some(tools) = tools {
            agent.attach_tools(tools).await.map_err(|e| Unopened::Turn(e.into()))?;
        }
        let opened = match load {
            Some(session) => agent.load(session).await,
            None => agent.new_session().await.map(|()| true),
        };
        if !opened.map_err(Unopened::Start)? {
            return Ok(false);
        }
        let Some(host) = agent.tools.as_ref() else { return Ok(true) };
        // A build the probe saw list them late is waited for as long as it took (bounded).
        let within = agent.quirks().tools_listed_within();
        let wait = self.cli.learnt(cli).map_or(within, |l| l.tools_wait(within));
        if host.listed_within(wait).await {
            return Ok(true);
        }
        tracing::warn!(
            "this Cursor CLI build did not list the client's tools given to its session; describing them in the prompt instead"
        );
        self.no_session_mcp.note(cli, ());
        let error = BridgeError::new(ErrorKind::CliFailed, "Cursor's session did not take the client's tools");
        Err(Unopened::Turn(TurnFailure {
            error,
            spoke: false,
            chat_lost: false,
            tools_not_hosted: true,
            unstartable: false,
        }))
    }

    fn note_start(&self, cli: &CliCommand, failure: &StartFailure) {
        if failure.broken {
            tracing::warn!(error = %failure.error.message, "Cursor's ACP mode does not start with this CLI build");
            self.broken.note(cli, failure.error.message.clone());
        }
    }

    /// The catalogue `agent`'s session advertised, if it did, as this build's.
    fn note_catalogue(&self, cli: &CliCommand, agent: &Agent) {
        *lock(&self.takes_images) = Some(agent.prompt_images);
        if !agent.config.options.is_empty() {
            self.catalogue.note(cli, agent.config.clone());
        }
    }

    /// A new agent whose new session hosts `tools`.
    async fn open_hosting(
        &self,
        cli: &CliCommand,
        workspace: &Path,
        tools: &[crate::vocab::ToolDefinition],
    ) -> Result<Agent, TurnFailure> {
        Ok(self.open_agent(cli, workspace, Some(tools), None).await?.expect("a new session is never missing"))
    }

    async fn open(&self, cli: &CliCommand, workspace: &Path) -> Result<Agent, TurnFailure> {
        Ok(self.open_agent(cli, workspace, None, None).await?.expect("a new session is never missing"))
    }

    /// Open a session for the next new conversation in `workspace`, in the background, hosting
    /// `tools` if given: while ACP starts with this CLI build and memory allows it.
    fn refill(&self, workspace: PathBuf, tools: Option<Vec<crate::vocab::ToolDefinition>>) {
        if self.usable().is_err() || !memory_allows_spares() {
            return;
        }
        let Some(cli) = self.cli.found() else { return };
        let Some(this) = self.me.upgrade() else { return };
        self.pool.refill(workspace, tools, move |workspace, tools| async move {
            match &tools {
                None => this.open(&cli, &workspace).await,
                Some(tools) => this.open_hosting(&cli, &workspace, tools).await,
            }
        });
    }

    async fn turn(&self, t: TurnSpec, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        let cli = self.cli.find().await?;
        let mut one_shot = false;
        // A new session is kept warm only once its first turn succeeded (below).
        let mut fresh: Option<Fresh<model_options::ModelConfig>> = None;
        // Starting an agent and opening a session have their own bounds (agent.rs): that is not
        // the model being silent.
        let opening = sink.opening();
        let hosted = t.hosted_tools.as_ref().map(|h| h.tools.as_slice());
        let mut slot = match &t.chat {
            Chat::Resume(chat) => {
                let Some(session) = session_of(chat) else {
                    // A print-mode chat: ACP cannot continue it; the engine replays it here.
                    return Err(TurnFailure::chat_lost("This conversation's chat belongs to print mode"));
                };
                let mut slot = self.pool.lock_session(session, &t.workspace).await?;
                // Client-tools mode needs the session's agent to host exactly these tools: else
                // the session is loaded into an agent that does.
                if let (Some(tools), Some(agent)) = (hosted, slot.as_ref()) {
                    if !agent.tools.as_ref().is_some_and(|h| h.offers(tools)) {
                        if let Some(agent) = slot.take() {
                            retire(agent);
                        }
                    }
                }
                if slot.is_none() {
                    // Lost with its process (a crash, a restart, expiry): load it into a new one.
                    match self.open_agent(&cli, &t.workspace, hosted, Some(session)).await? {
                        Some(agent) => {
                            tracing::info!(pid = agent.pid(), "ACP session loaded into a new process");
                            *slot = Some(agent);
                        }
                        None => {
                            self.pool.forget(session);
                            return Err(TurnFailure::chat_lost("Cursor could not load this conversation's session"));
                        }
                    }
                }
                slot
            }
            Chat::New => {
                let agent = match self.pool.take_spare(&t.workspace, hosted) {
                    Some(agent) => agent,
                    None => match hosted {
                        Some(tools) => self.open_hosting(&cli, &t.workspace, tools).await?,
                        None => self.open(&cli, &t.workspace).await?,
                    },
                };
                self.refill(t.workspace.clone(), hosted.map(<[_]>::to_vec));
                let (new, slot) = Fresh::new(agent).await;
                fresh = Some(new);
                slot
            }
            Chat::OneShot => {
                // Nobody resumes it, and it must not share a session with anyone: its own
                // process, stopped after the answer.
                one_shot = true;
                let agent = self.open(&cli, &t.workspace).await?;
                Arc::new(tokio::sync::Mutex::new(Some(agent))).lock_owned().await
            }
        };
        let agent = slot.as_mut().expect("a live agent");
        let config = self.catalogue(&cli, agent).await;
        drop(opening);
        let display = lock(&self.names).get(&t.model).cloned();
        let choice = match model_options::choose(&config, &t.model, display.as_deref()) {
            Some(choice) => Some(choice),
            // Nothing at all is known of the catalogue (a session loaded with `{}`, an agent
            // that lists no models, no session of this build opened yet): ACP takes only its
            // own values, so the client's id would be refused; the session keeps its own model
            // rather than the conversation being stranded on what we do not know.
            None if config.options.is_empty() => {
                tracing::info!(model = %t.model, "no ACP model catalogue is known; the session keeps its own model");
                None
            }
            None => {
                let error = BridgeError::new(
                    ErrorKind::InvalidModel,
                    format!("The model `{}` is not available in Cursor's ACP mode", t.model),
                )
                .hint(crate::backend::cursor::failures::HINT_MODEL);
                return Err(error.into());
            }
        };
        let session = agent.session_id.clone();
        if let Some(host) = &agent.tools {
            host.begin_turn();
            host.serve(t.hosted_tools.as_ref().map(|h| h.calls.clone()));
        }
        let called = agent.tools.as_ref().map(ToolHost::called);
        let (mut slot, mut outcome) = turn::run(slot, &t, choice.as_ref(), sink).await;
        // A call of the client's tools is output (the client may have run it), even if no update
        // of the agent's said so: neither a second ACP attempt nor print mode may run the prompt
        // again.
        if let (Err(f), Some(called)) = (&mut outcome, &called) {
            if called.load(Ordering::SeqCst) {
                f.spoke = true;
                f.chat_lost = false;
            }
        }
        if let Some(host) = slot.as_mut().and_then(|s| s.as_mut()).and_then(|a| a.tools.as_ref()) {
            host.serve(None);
        }
        match slot {
            // Nobody continues a one-shot session: its agent finishes and exits.
            Some(mut slot) if one_shot => {
                if let Some(agent) = slot.take() {
                    retire(agent);
                }
            }
            Some(mut slot) => {
                if !slot.as_mut().is_some_and(Agent::alive) {
                    self.pool.forget(&session);
                } else if let Some(fresh) = fresh.take().filter(|_| outcome.is_ok()) {
                    self.pool.keep(&session, fresh);
                }
            }
            None => {
                self.pool.forget(&session);
            }
        }
        self.pool.trim();
        outcome
    }

    /// The model catalogue a turn on `agent` picks from: its session's own, else the last one a
    /// session of this CLI build advertised (a `session/load` may answer `{}`), else the agent's
    /// `cursor/list_available_models`.
    async fn catalogue(&self, cli: &CliCommand, agent: &mut Agent) -> model_options::ModelConfig {
        if !agent.config.options.is_empty() {
            self.catalogue.note(cli, agent.config.clone());
            return agent.config.clone();
        }
        if let Some(known) = self.catalogue.get(cli) {
            return agent.config.or_catalogue(&known);
        }
        match agent::list_models(agent).await {
            Some(listed) if !listed.options.is_empty() => {
                self.catalogue.note(cli, listed.clone());
                agent.config.or_catalogue(&listed)
            }
            _ => agent.config.clone(),
        }
    }

    /// Warm ACP processes, for `status` and tests.
    pub fn warm_count(&self) -> usize {
        self.pool.warm_count()
    }
}

/// Why a new agent's session did not open: a start failure (which may say ACP does not work with
/// this build), or a turn failure as it is (the client's tools not taken).
enum Unopened {
    Start(StartFailure),
    Turn(TurnFailure),
}

impl Backend for CursorAcp {
    fn name(&self) -> &'static str {
        "acp"
    }

    fn locate(&self) -> BoxFuture<'_, Result<Located, BridgeError>> {
        Box::pin(self.cli.locate())
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>, BridgeError>> {
        Box::pin(async move {
            let models = self.cli.models().await?;
            *lock(&self.names) = models.iter().map(|m| (m.id.clone(), m.name.clone())).collect();
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
        self.usable().is_ok() && lock(&self.takes_images).unwrap_or(true)
    }

    /// ACP says when a session is gone (`session/load` refused, a prompt "not found").
    fn silent_failure_loses(&self, _chat: &str) -> bool {
        false
    }

    fn run_turn<'a>(&'a self, turn: TurnSpec, sink: &'a mut EventSink) -> BoxFuture<'a, Result<TurnEnd, TurnFailure>> {
        Box::pin(self.turn(turn, sink))
    }

    fn warm(&self, hint: Warm) {
        match hint {
            Warm::Workspace(workspace) => self.refill(workspace, None),
            // The follow-up's session is warm already; a fresh one for the next conversation.
            Warm::FollowUp { workspace, fresh: true, .. } => self.refill(workspace, None),
            Warm::FollowUp { .. } => {}
        }
    }

    fn health(&self) -> BoxFuture<'_, CliStatus> {
        Box::pin(self.cli.health())
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

    /// Print mode's question runs on a print backend of the same program, made for the probe.
    fn shutdown(&self) {
        self.pool.shutdown();
        // The sidecar is stopping: every orphan ends, and is reaped.
        process::end_orphans(process::STOP_ORPHANS_WITHIN);
    }
}
