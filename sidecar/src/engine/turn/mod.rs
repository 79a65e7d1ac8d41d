//! One turn, whoever asked. This file is its outline ([`Engine::turn`]) and what its steps
//! share ([`Turn`]); each step is a module:
//!
//! 1. `plan.rs`: where the turn runs, one turn at a time per conversation, the session it meets
//!    (resume, replay or new) and its prompt; a tool round's results find the agent's turn parked
//!    for them; how the client's tools reach the agent.
//! 2. `run.rs`: a turn slot, then the backend while watching for silence, overruns and the
//!    agent's own tools; a build that cannot host the client's tools falls back to the prompt
//!    protocol, a resumed chat the agent lost to a new chat with the history replayed.
//! 3. `record.rs`: the answer checked (and on the prompt protocol its calls read out), the
//!    session recorded and the follow-up warmed; or the turn parked while the client runs its
//!    tools.
//!
//! `state.rs` is what outlives a step: the plan, and what a parked turn keeps. Events stream to
//! the caller's channel; the result is a typed outcome. Dropping the future (cancel, a client
//! gone) drops the backend's turn, which stops its agent.

mod plan;
mod record;
mod run;
pub(super) mod state;

use std::cell::OnceCell;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use self::state::Plan;
use super::config::Placement;
use super::core::Engine;
use super::lanes::InLane;
use super::prompt::Conversation;
use super::session_io::PendingSaves;
use super::tools::{Described, ToolSet};
use crate::backend::{Activity, Event, EventSink, ToolPolicy};
use crate::error::Result;
use crate::util::sync::OnDrop;
use crate::vocab::{ChatMessage, Mode, Usage};

/// A turn as a front door asks for it.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// For logs (the stdio client's `turnId`, the HTTP request id).
    pub turn_id: String,
    pub model: String,
    pub mode: Mode,
    pub workspace: Option<String>,
    /// The client's own id for the conversation.
    pub conversation_id: Option<String>,
    /// A session id this engine returned earlier.
    pub session_id: Option<String>,
    /// A one-shot request (title, progress message): never creates, resumes or changes a session.
    pub utility: bool,
    pub messages: Vec<ChatMessage>,
    /// The client's tools (client-tools mode, docs/client-tools.md); `None`: the agent's own.
    pub tools: Option<ToolSet>,
    /// Who is asking (the HTTP client's key, hashed; `None`: the stdio client): results of tool
    /// calls continue only a turn this owner was given.
    pub owner: Option<String>,
    /// What the answer must look like (a structured answer's JSON format), said after the prompt
    /// of every run of this turn: never part of what identifies the conversation (the client's
    /// next request resumes the chat without it).
    pub answer_format: Option<String>,
    /// Images of the new user message (HTTP), for an agent that takes them with the prompt
    /// (`TurnSpec::images`); a chat that saw them keeps them, a replay carries text only.
    pub images: Vec<crate::vocab::Image>,
}

/// How a finished turn went.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    /// `None` for utility turns.
    pub session_id: Option<String>,
    pub resumed: bool,
    pub replayed: bool,
    pub usage: Option<Usage>,
    pub duration_ms: u64,
    /// The turn ended with calls of the client's tools (`Event::ToolCall`): their results come
    /// with the next request.
    pub tool_calls: bool,
}

impl Engine {
    pub async fn turn(self: &Arc<Self>, req: TurnRequest, events: mpsc::Sender<Event>) -> Result<TurnOutcome> {
        let saves = PendingSaves::default();
        let outcome = self.turn_saving(req, events, &saves).await;
        // What a failed turn noted on its session is on disk before the answer.
        saves.wait().await;
        outcome
    }

    async fn turn_saving(
        self: &Arc<Self>,
        req: TurnRequest,
        events: mpsc::Sender<Event>,
        saves: &PendingSaves,
    ) -> Result<TurnOutcome> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let _in_flight = OnDrop(|| {
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
        });
        // Where it runs, in its conversation's lane, meeting which session and chat (`plan.rs`).
        let mut turn = Turn::plan(self, &req, events, saves).await?;
        // A tool round's results continue the agent's turn parked waiting for them.
        let parked = turn.take_parked().await?;
        // Hosted by the backend or described in the prompt: chosen here, once.
        turn.choose_tools(parked.is_some());
        turn.start().await;
        // On the backend under the idle and turn timeouts, with its fallbacks (`run.rs`).
        let drive = turn.run(parked).await;
        // Parked for the client's tools, or checked and recorded (`record.rs`).
        turn.finish(drive).await
    }
}

/// One turn from its start to its answer: what its steps read and change, in one place.
///
/// Fields drop in the order written: what an unfinished turn gave its chat is noted
/// (`incomplete`) before its lanes let the conversation's next turn plan.
struct Turn<'a> {
    /// Armed while the resumed chat has been given the request but not completed it.
    incomplete: Option<Incomplete<'a>>,
    _session_lane: Option<InLane>,
    _conversation_lane: Option<InLane>,
    engine: &'a Arc<Engine>,
    req: &'a TurnRequest,
    conversation: Conversation<'a>,
    place: Placement,
    tools: ClientTools<'a>,
    /// The session and chat the turn meets, and its prompt.
    plan: Plan,
    /// Where the agent works (with per-conversation folders, the session's own).
    workspace: PathBuf,
    /// Who may continue the turn once it is parked ("local": the stdio client).
    owner: String,
    sink: EventSink,
    activity: Arc<Activity>,
    /// Client-tools mode: a built-in tool of the agent's that ran stops the turn.
    policy: Option<Arc<ToolPolicy>>,
    /// The tools' description, built when first needed (never while they stay hosted).
    described: OnceCell<Described>,
    saves: &'a PendingSaves,
    started: Instant,
}

/// How the client's tools reach the agent (client-tools mode, docs/client-tools.md).
#[derive(Clone, Copy)]
enum ClientTools<'a> {
    /// The request brought none: the agent works with its own.
    None,
    /// The request brought tools, and how they reach the agent is not chosen yet: a turn with
    /// tools is planned so, and [`Turn::choose_tools`] makes it `Prompt` or `Hosted` before the
    /// turn starts. Nothing after that sees it.
    Undecided(&'a ToolSet),
    /// Described in the prompt, the calls read out of the reply: works on every backend, and
    /// where a backend that was to host them cannot (`run.rs`).
    Prompt(&'a ToolSet),
    /// Offered by the backend as the agent's own (an MCP server of ours); a call parks the turn.
    Hosted(&'a ToolSet),
}

impl<'a> ClientTools<'a> {
    fn set(self) -> Option<&'a ToolSet> {
        match self {
            ClientTools::None => None,
            ClientTools::Undecided(set) | ClientTools::Prompt(set) | ClientTools::Hosted(set) => Some(set),
        }
    }

    fn name(self) -> &'static str {
        match self {
            ClientTools::None => "none",
            ClientTools::Undecided(_) => "undecided",
            ClientTools::Prompt(_) => "prompt",
            ClientTools::Hosted(_) => "hosted",
        }
    }
}

/// A resumed turn that has not completed. Dropped armed (failed, timed out, cancelled), it tells
/// the session store what the chat was given (`record.rs`).
struct Incomplete<'a> {
    engine: &'a Engine,
    saves: &'a PendingSaves,
    session_id: String,
    chat_id: String,
    request: u64,
    resume_failed: bool,
}
