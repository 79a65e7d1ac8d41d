//! An ACP agent as a warm backend: which session a turn runs in, and the lifecycle of agents
//! around it, for any agent ([`AcpAgent`] says what is the agent's own). A new conversation takes
//! a spare session opened ahead (then another is opened for the next one), a conversation goes
//! on in its warm session, and one whose process is gone (a crash, a restart, expiry) is loaded
//! into a new process with `session/load`; a one-shot turn gets its own process, stopped after
//! the answer. A new session is kept warm only once its first turn succeeded. In client-tools
//! mode a session's agent must host exactly the turn's tools, else the session is loaded into
//! one that does; a session that does not list them in time fails `tools_not_hosted` (the
//! engine describes them in the prompt), and its build is remembered. A start that says ACP
//! does not work with a build is tried once more (one failure can be the agent's own moment: a
//! CLI that updates itself at start) before the build is noted for [`REPROBE_AFTER`](super::REPROBE_AFTER). Once the
//! agent handed a call of the client's tools to the turn, the turn has output, whatever its
//! updates said: no second attempt runs the prompt again.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::agent::{Agent, SessionConfig};
use super::build_note::BuildNote;
use super::pool::{retire, Fresh, Pool};
use super::quirks::{AgentQuirks, StartFailure, TurnError};
use super::tools::ToolHost;
use super::turn::{self, Slot};
use crate::backend::contract::{BoxFuture, Chat, TurnEnd, TurnFailure, TurnSpec, Warm, Warmth};
use crate::backend::events::EventSink;
use crate::error::BridgeError;
use crate::util::sync::lock;
use crate::vocab::ToolDefinition;

/// How often idle sessions are looked at.
const SWEEP: Duration = Duration::from_secs(5);

/// What one agent brings to [`AcpBackend`]: how its program is found and started, how its builds
/// are told apart, its model catalogue and how a session is set to a model, and what its probe
/// (if it has one) learnt. Its words are its [`AgentQuirks`](super::AgentQuirks), given to each
/// agent it starts.
pub trait AcpAgent: Send + Sync + 'static {
    /// What its sessions configure (modes, models, the catalogue).
    type Config: SessionConfig + Clone + 'static;
    /// Its program, as found (where it is, which build).
    type Program: Clone + Send + Sync + 'static;
    /// What a turn sets its session to for the client's model id.
    type Choice: Send + Sync;

    /// Its reading of the protocol and its words (the same its agents are started with).
    fn quirks(&self) -> &'static dyn AgentQuirks;

    /// How this backend's chat ids begin (`acp:`): another backend's chat id is never sent to
    /// `session/load`.
    fn chat_prefix(&self) -> &'static str;

    /// The program, searched for if it is not known.
    fn find(&self) -> BoxFuture<'_, Result<Self::Program, BridgeError>>;

    /// The program if it was found already (never searches).
    fn found(&self) -> Option<Self::Program>;

    /// Which build `program` is: notes are kept per build.
    fn build_id(&self, program: &Self::Program) -> String;

    /// Start the agent in `workspace` and complete its handshake.
    fn start<'a>(
        &'a self,
        program: &'a Self::Program,
        workspace: &'a Path,
    ) -> BoxFuture<'a, Result<Agent<Self::Config>, StartFailure>>;

    /// Why ACP does not start with `program`'s build, by what was seen outside this backend (a
    /// probe of the agent), while that holds.
    fn known_not_to_start(&self, _program: &Self::Program) -> Option<String> {
        None
    }

    /// Sessions of `program`'s build were seen never to list the client's tools.
    fn never_lists_tools(&self, _program: &Self::Program) -> bool {
        false
    }

    /// How long a session of `program`'s build may take to list the client's tools (`within`:
    /// the agent's usual bound).
    fn tools_wait(&self, _program: &Self::Program, within: Duration) -> Duration {
        within
    }

    /// Whether sessions may be opened ahead of need now (memory allows it).
    fn spares_allowed(&self) -> bool;

    /// `authenticate` did not answer: the error to show if the agent's own status says it is
    /// signed out (`None`: the timeout is shown as it is).
    fn signed_out(&self) -> BoxFuture<'_, Option<BridgeError>> {
        Box::pin(async { None })
    }

    /// The session's configuration holds a model catalogue.
    fn has_catalogue(&self, config: &Self::Config) -> bool;

    /// `config` with `known`'s catalogue where it has none.
    fn or_catalogue(&self, config: &Self::Config, known: &Self::Config) -> Self::Config;

    /// The catalogue, asked of the agent itself (an extension of the agent's; `None`: it has no
    /// way to say).
    fn list_catalogue<'a>(&'a self, _agent: &'a Agent<Self::Config>) -> BoxFuture<'a, Option<Self::Config>> {
        Box::pin(async { None })
    }

    /// What serves the client's `model` in `config`: `Ok(None)` keeps the session's own model.
    fn choose(&self, config: &Self::Config, model: &str) -> Result<Option<Self::Choice>, BridgeError>;

    /// Set the session to the turn's `model` before its prompt (its mode is set already).
    fn configure<'a>(
        &'a self,
        agent: &'a mut Agent<Self::Config>,
        model: Option<&'a Self::Choice>,
    ) -> BoxFuture<'a, Result<(), TurnFailure>>;
}

/// The session a chat id that begins with `prefix` continues.
pub fn session_in<'c>(prefix: &str, chat: &'c str) -> Option<&'c str> {
    chat.strip_prefix(prefix).filter(|s| !s.is_empty())
}

/// An ACP agent's warm backend: its sessions and spares, and what it learnt per build.
pub struct AcpBackend<A: AcpAgent> {
    me: Weak<AcpBackend<A>>,
    /// The agent's own part.
    pub agent: A,
    /// Warm sessions and spares.
    pool: Arc<Pool<A::Config>>,
    /// A build ACP did not start with, since when, and why.
    broken: BuildNote<String>,
    /// A build whose sessions did not list our tools (it ignores or gates the MCP servers of a
    /// session), since when: the client's tools go in the prompt meanwhile.
    no_session_mcp: BuildNote<()>,
    /// The model catalogue the last session of a build advertised.
    catalogue: BuildNote<A::Config>,
    /// Whether the last agent started takes images (`None`: none has started yet).
    takes_images: Mutex<Option<bool>>,
}

/// Why a new agent's session did not open: a start failure (which may say ACP does not work with
/// this build), or a turn failure as it is (the client's tools not taken).
enum Unopened {
    Start(StartFailure),
    Turn(TurnFailure),
}

impl<A: AcpAgent> AcpBackend<A> {
    pub fn new(warmth: &Warmth, agent: A) -> Arc<Self> {
        let backend = Arc::new_cyclic(|me| AcpBackend {
            me: me.clone(),
            agent,
            pool: Pool::new(warmth),
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
                    Some(backend) => backend.pool.sweep(!backend.agent.spares_allowed()),
                    None => break,
                }
            }
        });
        backend
    }

    /// This backend's chat id for `session`.
    pub fn chat_id(&self, session: &str) -> String {
        format!("{}{session}", self.agent.chat_prefix())
    }

    /// The session `chat` continues, if it is a chat of this backend's.
    pub fn session_of<'c>(&self, chat: &'c str) -> Option<&'c str> {
        session_in(self.agent.chat_prefix(), chat)
    }

    /// `Err(why)` while ACP is known not to start with the current build.
    pub fn usable(&self) -> Result<(), String> {
        let Some(program) = self.agent.found() else { return Ok(()) };
        if let Some(why) = self.broken.get(&self.agent.build_id(&program)) {
            return Err(why);
        }
        self.agent.known_not_to_start(&program).map_or(Ok(()), Err)
    }

    /// Whether sessions of the current build can be given the client's tools.
    pub fn hosts_tools(&self) -> bool {
        let Some(program) = self.agent.found() else { return self.usable().is_ok() };
        // Seen never to list them: the prompt protocol from the first turn, without waiting for
        // a listing that does not come.
        self.usable().is_ok()
            && self.no_session_mcp.get(&self.agent.build_id(&program)).is_none()
            && !self.agent.never_lists_tools(&program)
    }

    /// What the last agent started said (`promptCapabilities.image`); before any has started,
    /// `before_any` (what the agent is known to advertise, so the first picker is not wrong).
    pub fn images_taken(&self, before_any: bool) -> bool {
        self.usable().is_ok() && lock(&self.takes_images).unwrap_or(before_any)
    }

    /// Warm agent processes, for `status` and tests.
    pub fn warm_count(&self) -> usize {
        self.pool.warm_count()
    }

    /// Open sessions ahead as `hint` suggests.
    pub fn warm(&self, hint: Warm) {
        match hint {
            Warm::Workspace(workspace) => self.refill(workspace, None),
            // The follow-up's session is warm already; a fresh one for the next conversation.
            Warm::FollowUp { workspace, fresh: true, .. } => self.refill(workspace, None),
            Warm::FollowUp { .. } => {}
        }
    }

    /// Stop every agent (the backend's shutdown).
    pub fn stop_agents(&self) {
        self.pool.shutdown();
    }

    /// A new agent with its session opened (or, with `load`, loaded: `Ok(None)` when the agent
    /// does not have it), hosting `tools` if given. A failure that says ACP does not work with
    /// this build (the process exits at start or while opening the session, no `initialize`
    /// answer) is tried once more before the build is noted. Every session that opens records
    /// the catalogue it advertised, for sessions that answer without one (a `session/load` may
    /// answer `{}`).
    async fn open_agent(
        &self,
        program: &A::Program,
        workspace: &Path,
        tools: Option<&[ToolDefinition]>,
        load: Option<&str>,
    ) -> Result<Option<Agent<A::Config>>, TurnFailure> {
        let mut retried = false;
        loop {
            let failure = match self.agent.start(program, workspace).await {
                Ok(mut agent) => match self.open_session(program, &mut agent, tools, load).await {
                    Ok(true) => {
                        // ACP works with this build after all (a conversation in an ACP session
                        // tries it on every turn): new chats use it again.
                        self.broken.forget();
                        self.note_catalogue(program, &agent);
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
                        let lost = self.agent.quirks().turn_error(TurnError::LoadStopped);
                        retire(agent);
                        tracing::warn!(error = %failure.error.message, "the ACP agent stopped while loading a session");
                        return Err(TurnFailure::chat_lost(lost.message));
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
                tracing::info!(error = %failure.error.message, "the ACP agent did not start; trying once more");
                retried = true;
                continue;
            }
            if failure.broken {
                tracing::warn!(error = %failure.error.message, "the ACP agent does not start with this build");
                self.broken.note(self.agent.build_id(program), failure.error.message.clone());
            }
            // No answer to `authenticate` is no evidence of a missing login; the agent's own
            // status may be.
            if failure.auth_unanswered {
                if let Some(signed_out) = self.agent.signed_out().await {
                    return Err(signed_out.into());
                }
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
        program: &A::Program,
        agent: &mut Agent<A::Config>,
        tools: Option<&[ToolDefinition]>,
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
        // A build seen to list them late is waited for as long as it took (bounded).
        let wait = self.agent.tools_wait(program, agent.quirks().tools_listed_within());
        if host.listed_within(wait).await {
            return Ok(true);
        }
        tracing::warn!(
            "this build of the ACP agent did not list the client's tools given to its session; describing them in the prompt instead"
        );
        self.no_session_mcp.note(self.agent.build_id(program), ());
        let error = agent.quirks().turn_error(TurnError::ToolsNotListed);
        Err(Unopened::Turn(TurnFailure { tools_not_hosted: true, ..error.into() }))
    }

    /// The catalogue `agent`'s session advertised, if it did, as this build's.
    fn note_catalogue(&self, program: &A::Program, agent: &Agent<A::Config>) {
        *lock(&self.takes_images) = Some(agent.prompt_images);
        if self.agent.has_catalogue(&agent.config) {
            self.catalogue.note(self.agent.build_id(program), agent.config.clone());
        }
    }

    /// A new agent whose new session hosts `tools` (if given).
    async fn open(
        &self,
        program: &A::Program,
        workspace: &Path,
        tools: Option<&[ToolDefinition]>,
    ) -> Result<Agent<A::Config>, TurnFailure> {
        Ok(self.open_agent(program, workspace, tools, None).await?.expect("a new session is never missing"))
    }

    /// Open a session for the next new conversation in `workspace`, in the background, hosting
    /// `tools` if given: while ACP starts with this build and spares are allowed.
    fn refill(&self, workspace: PathBuf, tools: Option<Vec<ToolDefinition>>) {
        if self.usable().is_err() || !self.agent.spares_allowed() {
            return;
        }
        let Some(program) = self.agent.found() else { return };
        let Some(this) = self.me.upgrade() else { return };
        self.pool.refill(workspace, tools, move |workspace, tools| async move {
            this.open(&program, &workspace, tools.as_deref()).await
        });
    }

    /// One turn: its session found, loaded or opened, the model chosen, the prompt run, and the
    /// session kept warm, forgotten or retired after.
    pub async fn turn(&self, t: TurnSpec, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        let program = self.agent.find().await?;
        let mut one_shot = false;
        // A new session is kept warm only once its first turn succeeded (below).
        let mut fresh: Option<Fresh<A::Config>> = None;
        // Starting an agent and opening a session have their own bounds (agent.rs): that is not
        // the model being silent.
        let opening = sink.opening();
        let hosted = t.hosted_tools.as_ref().map(|h| h.tools.as_slice());
        let mut slot = match &t.chat {
            Chat::Resume(chat) => {
                let Some(session) = self.session_of(chat) else {
                    // Another backend's chat: ACP cannot continue it; the engine replays it here.
                    let other = self.agent.quirks().turn_error(TurnError::OtherBackendsChat);
                    return Err(TurnFailure::chat_lost(other.message));
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
                    match self.open_agent(&program, &t.workspace, hosted, Some(session)).await? {
                        Some(agent) => {
                            tracing::info!(pid = agent.pid(), "ACP session loaded into a new process");
                            *slot = Some(agent);
                        }
                        None => {
                            self.pool.forget(session);
                            let refused = self.agent.quirks().turn_error(TurnError::LoadRefused);
                            return Err(TurnFailure::chat_lost(refused.message));
                        }
                    }
                }
                slot
            }
            Chat::New => {
                let agent = match self.pool.take_spare(&t.workspace, hosted) {
                    Some(agent) => agent,
                    None => self.open(&program, &t.workspace, hosted).await?,
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
                let agent = self.open(&program, &t.workspace, None).await?;
                Arc::new(tokio::sync::Mutex::new(Some(agent))).lock_owned().await
            }
        };
        let agent = slot.as_mut().expect("a live agent");
        let config = self.catalogue(&program, agent).await;
        drop(opening);
        let choice = self.agent.choose(&config, &t.model)?;
        let session = agent.session_id.clone();
        if let Some(host) = &agent.tools {
            host.begin_turn();
            host.serve(t.hosted_tools.as_ref().map(|h| h.calls.clone()));
        }
        let called = agent.tools.as_ref().map(ToolHost::called);
        let (mut slot, mut outcome) = self.prompt(slot, &t, choice.as_ref(), sink).await;
        // A call of the client's tools is output (the client may have run it), even if no update
        // of the agent's said so: neither a second ACP attempt nor another backend may run the
        // prompt again.
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

    /// One prompt on the slot's agent: refused before the agent is asked anything when it
    /// carries images the agent does not take (a prompt it could not take whole is refused, not
    /// cut), else the session set to the turn's mode and model, then the prompt; the chat id
    /// it ends with is this backend's.
    async fn prompt(
        &self,
        mut slot: Slot<A::Config>,
        spec: &TurnSpec,
        model: Option<&A::Choice>,
        sink: &mut EventSink,
    ) -> (Option<Slot<A::Config>>, Result<TurnEnd, TurnFailure>) {
        let agent = slot.as_mut().expect("a turn runs on a live agent");
        if !spec.images.is_empty() && !agent.prompt_images {
            let error = agent.quirks().turn_error(TurnError::ImagesNotTaken);
            return (Some(slot), Err(error.into()));
        }
        // Mode first (ask mode means no permission prompts), then the agent's model set-up.
        let configured = match agent.set_mode(spec.mode).await {
            Ok(()) => self.agent.configure(agent, model).await,
            Err(failure) => Err(failure),
        };
        if let Err(failure) = configured {
            agent.end_turn().await;
            agent.end_what_the_turn_started(false);
            return (Some(slot), Err(failure));
        }
        let (slot, outcome) = turn::run(slot, spec, sink).await;
        let outcome = outcome.map(|end| TurnEnd { chat_id: end.chat_id.as_deref().map(|s| self.chat_id(s)), ..end });
        (slot, outcome)
    }

    /// The model catalogue a turn on `agent` picks from: its session's own, else the last one a
    /// session of this build advertised (a `session/load` may answer `{}`), else the agent's own
    /// listing.
    async fn catalogue(&self, program: &A::Program, agent: &mut Agent<A::Config>) -> A::Config {
        let build = self.agent.build_id(program);
        if self.agent.has_catalogue(&agent.config) {
            self.catalogue.note(build, agent.config.clone());
            return agent.config.clone();
        }
        if let Some(known) = self.catalogue.get(&build) {
            return self.agent.or_catalogue(&agent.config, &known);
        }
        match self.agent.list_catalogue(agent).await {
            Some(listed) if self.agent.has_catalogue(&listed) => {
                self.catalogue.note(build, listed.clone());
                self.agent.or_catalogue(&agent.config, &listed)
            }
            _ => agent.config.clone(),
        }
    }
}
