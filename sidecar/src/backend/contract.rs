//! The contract between the engine and whatever runs a turn. The engine decides *what* happens
//! (which session, which prompt, when to warm up, how long to wait); a backend knows *how* with
//! one agent program (print mode spawns a process per turn; ACP keeps one warm). A new backend is
//! a folder of its own implementing [`Backend`] (`cursor/print/`, `cursor/acp/`); nothing in
//! `engine/` changes.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use super::events::EventSink;
use crate::backend::reports::{BackendStatus, CliStatus, ProbePlan, ProbeReport};
use crate::error::BridgeError;
use crate::vocab::{BackendChoice, Mode, ModelInfo, Usage};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which agent chat a turn runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chat {
    /// Continue this chat (the agent holds its history).
    Resume(String),
    /// A new chat the engine will keep (the backend picks its id, ahead of need if it can).
    New,
    /// A one-shot chat nobody resumes (titles, progress messages).
    OneShot,
}

/// One turn, as the engine asks a backend to run it.
#[derive(Debug, Clone)]
pub struct TurnSpec {
    pub model: String,
    pub mode: Mode,
    pub workspace: PathBuf,
    pub chat: Chat,
    /// Exactly what the agent receives as the user's message.
    pub prompt: String,
    /// The agent may run commands without asking (only ever true in agent mode).
    pub unattended: bool,
    /// The engine's idle limit; a backend uses it to bound its own waits (an agent that
    /// lingers after answering).
    pub idle: Duration,
    /// Client-tools mode on a backend that [`Backend::hosts_tools`]: the client's tools, to offer
    /// the agent as its own (an MCP server of ours), and where their calls go.
    pub hosted_tools: Option<HostedTools>,
    /// Images to send with the prompt. Only an agent that takes them (ACP's
    /// `promptCapabilities.image`) gets them; any other backend fails the turn with
    /// `invalidParams`, naming why, before the agent is asked anything.
    pub images: Vec<crate::vocab::Image>,
}

/// The client's tools, hosted by the backend for one turn (docs/client-tools.md, "The MCP path").
#[derive(Clone)]
pub struct HostedTools {
    /// Ranked by the engine: the first are the ones to keep when the agent shows only so many.
    pub tools: Vec<crate::vocab::ToolDefinition>,
    /// Each call the agent makes goes here; the reply comes when the client has run the tool.
    pub calls: tokio::sync::mpsc::Sender<ClientCall>,
}

impl std::fmt::Debug for HostedTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        f.debug_struct("HostedTools").field("tools", &names).finish_non_exhaustive()
    }
}

/// The agent calls one of the client's tools.
#[derive(Debug)]
pub struct ClientCall {
    /// The client's own name of the tool.
    pub name: String,
    pub input: serde_json::Value,
    /// Answered with the client's result (or a stand-in: pending, cancelled); dropped unanswered
    /// when the turn is stopped.
    pub reply: tokio::sync::oneshot::Sender<ToolReply>,
}

/// What goes back to the agent for a [`ClientCall`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    pub text: String,
    pub is_error: bool,
}

/// A finished turn.
#[derive(Debug, Clone, Default)]
pub struct TurnEnd {
    /// The chat the turn ran in, as the agent reported it.
    pub chat_id: Option<String>,
    pub usage: Option<Usage>,
    /// The agent's final answer text (the engine checks it against what streamed).
    pub final_text: String,
}

/// A failed turn.
#[derive(Debug, Clone)]
pub struct TurnFailure {
    pub error: BridgeError,
    /// The agent produced at least one event, so it knew the chat (a resume that fails before
    /// that is treated as a chat the agent no longer has).
    pub spoke: bool,
    /// The agent showed that the chat to resume is gone (its store has no such chat, or it
    /// started another): the engine replays the conversation into a new chat.
    pub chat_lost: bool,
    /// The backend could not offer the client's tools to this agent (a build that ignores the
    /// MCP servers of a session), before any output: the engine runs the turn on the prompt
    /// protocol instead.
    pub tools_not_hosted: bool,
    /// The agent could not be started for this turn (its program, or its protocol mode, does not
    /// start with this build), as opposed to a running agent's failure.
    pub unstartable: bool,
}

impl TurnFailure {
    /// The agent does not have the chat to resume (any more): the engine replays the
    /// conversation into a new chat, as the hint says. `why` says how it showed.
    pub fn chat_lost(why: impl Into<String>) -> TurnFailure {
        let error = BridgeError::new(crate::vocab::ErrorKind::CliFailed, why)
            .hint("The conversation continues in a new chat with its history.");
        TurnFailure { chat_lost: true, ..error.into() }
    }
}

impl From<BridgeError> for TurnFailure {
    fn from(error: BridgeError) -> Self {
        TurnFailure { error, spoke: false, chat_lost: false, tools_not_hosted: false, unstartable: false }
    }
}

/// Capacity worth preparing before it is needed.
#[derive(Debug, Clone)]
pub enum Warm {
    /// New conversations will start in this folder.
    Workspace(PathBuf),
    /// This chat will likely get a follow-up with the same model and mode. `fresh` asks for
    /// warm capacity for a new conversation as well.
    FollowUp { model: String, mode: Mode, workspace: PathBuf, chat_id: String, unattended: bool, fresh: bool },
}

/// What every backend may need from the front door's set-up.
#[derive(Debug, Clone, Default)]
pub struct BackendSettings {
    /// The agent program's path setting (else discovery).
    pub cli_path: Option<String>,
    /// The chosen agent's API key (Cursor's), only ever for the agent's environment.
    pub api_key: Option<crate::vocab::Secret>,
    pub backend: BackendChoice,
    /// Capacity prepared ahead of need, for a backend that can.
    pub warmth: Warmth,
    /// Where the agent's own subcommands run (`--version`, `status`, `models`, the search for
    /// the program): a private folder of ours, never a user's, so nothing of a repository is
    /// read before a turn asks for it (`None`: a private temporary folder).
    pub neutral_dir: Option<PathBuf>,
    /// What of the sidecar's environment reaches the agent and every tool it runs.
    pub env: EnvPolicy,
    /// Where what `doctor --probe` learnt about agent builds is kept, read by every front door's
    /// backend (`None`: nothing is kept or read).
    pub probe_notes: Option<PathBuf>,
}

/// Capacity prepared ahead, honoured by backends that can: agents made ready before a turn asks
/// for one, and sessions kept alive for the next turn of their conversation. What a backend
/// prepares is its own (Cursor's print mode starts processes ahead, its ACP mode opens sessions
/// ahead and keeps them warm); a backend that prepares nothing ignores these. The defaults are
/// the front door's (`initialize.options`: `spares`, `spareIdleSeconds`, `warmSessions`,
/// `warmIdleSeconds`); zero here is nothing prepared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Warmth {
    /// Agents prepared ahead of a turn, at most (0: none), and how long an unused one lives.
    pub ahead: usize,
    pub ahead_idle: Duration,
    /// Sessions kept alive after their turn, at most, and how long an unused one lives.
    pub kept: usize,
    pub kept_idle: Duration,
}

/// What of the sidecar's own environment the agent inherits (docs/cursor-cli.md §7.2 for what
/// the bridge sets on top).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum EnvPolicy {
    /// Everything but the bridge's own variables: an editor's agent works in the user's
    /// shell environment (their PATH, SDKs, proxies), as a terminal would.
    #[default]
    Inherit,
    /// Only what the agent needs to run, find its login and reach the network, plus the names
    /// (or `PREFIX*` patterns) the operator passes on purpose (`serve`: a server's environment
    /// is the operator's, not something to hand to every HTTP client's turns).
    Minimal { pass: Vec<String> },
}

/// Where the agent program is.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    pub path: String,
}

/// An agent's version against the builds a backend was checked with, for `doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionCheck {
    pub verdict: VersionVerdict,
    /// The oldest and the newest build known to work, as the agent writes its version.
    pub oldest: String,
    pub newest: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionVerdict {
    /// Between the oldest and the newest known-good build.
    KnownGood,
    /// Newer than any build the bridge was checked against; expected to work.
    Newer,
    /// Older than the oldest known-good build: turns will fail.
    TooOld,
    /// Not a version of this agent's shape.
    Unrecognised,
}

/// What `doctor` says of an agent, in that agent's terms: its name, its commands and the fixes a
/// person can apply (`backend/cursor/words.rs` for the Cursor CLI).
#[derive(Debug)]
pub struct AgentWords {
    /// The program as a person knows it ("Cursor CLI").
    pub name: &'static str,
    /// Whose account and key it is ("Cursor").
    pub vendor: &'static str,
    /// What was looked for, when it was not found.
    pub not_found: &'static str,
    pub install_fix: &'static str,
    pub update_fix: &'static str,
    /// The command that prints its version, and what to try when it printed none.
    pub version_command: &'static str,
    pub no_version_fix: &'static str,
    /// When a version does not look like this agent's: the configured path may be another program.
    pub not_this_agent_fix: &'static str,
    /// The command that says whether one is logged in, and what to try when it did not say.
    pub status_command: &'static str,
    pub unknown_login_fix: &'static str,
    pub login_fix: &'static str,
    /// What each backend value of `status.backend.active` means to a person.
    pub backends: &'static [(&'static str, &'static str)],
}

pub trait Backend: Send + Sync {
    /// Short name for logs and `status` (`print`, `acp`, …).
    fn name(&self) -> &'static str;

    /// Find the agent program (remembered; looked up again when it went missing).
    fn locate(&self) -> BoxFuture<'_, Result<Located, BridgeError>>;

    /// The models the agent offers, fresh (the engine caches them).
    fn list_models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>, BridgeError>>;

    /// Run one turn, streaming its events to `sink`. Dropping the future stops the turn and
    /// everything it started.
    fn run_turn<'a>(&'a self, turn: TurnSpec, sink: &'a mut EventSink) -> BoxFuture<'a, Result<TurnEnd, TurnFailure>>;

    /// Prepare capacity ahead of need, in the background (never delays the caller).
    fn warm(&self, hint: Warm);

    /// The agent's state for `status`: found, version, login.
    fn health(&self) -> BoxFuture<'_, CliStatus>;

    /// Which backend serves turns and why, for `status`.
    fn status(&self) -> BackendStatus {
        BackendStatus {
            configured: self.name().into(),
            active: self.name().into(),
            reason: None,
            last_turn: None,
            warm: 0,
        }
    }

    /// Whether the agent's version (as `health` reported it) is one this backend is known to
    /// work with, for `doctor`: each agent has builds of its own.
    fn judge_version(&self, version: &str) -> VersionCheck;

    /// How the agent is named and what a person does about its problems, for `doctor`: the
    /// engine words its checks with these and knows nothing of an agent's own.
    fn words(&self) -> &'static AgentWords;

    /// Whether this backend can host the client's tools itself ([`TurnSpec::hosted_tools`]) for
    /// its next turn; otherwise the engine describes them in the prompt. A cheap check (what
    /// the backend knows of the agent's build), no I/O.
    fn hosts_tools(&self) -> bool {
        false
    }

    /// Whether the agent takes images with the prompt ([`TurnSpec::images`]); the engine then
    /// says so in every model's `imageInput`. A cheap check (what the backend knows of the
    /// agent), no I/O.
    fn takes_images(&self) -> bool {
        false
    }

    /// Whether a resume of `chat` that failed with `cliFailed` before any output means the agent
    /// no longer has the chat. Print mode's `--resume` of a chat the CLI lost fails just so, with
    /// nothing more specific; a backend that says itself when a chat is gone
    /// ([`TurnFailure::chat_lost`]) answers no, so its other failures are shown as they are.
    fn silent_failure_loses(&self, _chat: &str) -> bool {
        true
    }

    /// Make `folder` one where the agent can run none of its own tools, only the client's
    /// (client-tools mode): each agent has its own way to deny its tools.
    fn lock_down(&self, folder: &std::path::Path) -> std::io::Result<()>;

    /// `doctor --probe`: check the bridge's assumptions against this build of the agent program
    /// with a short scripted session, and keep what it learnt for the build. An agent without a
    /// probe answers a report with no findings.
    fn probe(&self, _plan: ProbePlan) -> BoxFuture<'_, ProbeReport> {
        let agent = self.words().name.to_string();
        Box::pin(async move { ProbeReport { agent, ..ProbeReport::default() } })
    }

    /// The most requests of the person's plan its probe spends with consent (said before asking).
    fn probe_requests(&self) -> u32 {
        0
    }

    /// Stop everything prepared ahead and every background task (sidecar shutdown).
    fn shutdown(&self);
}
