//! One turn, whoever asked: pick the session (resume, replay or new), build the prompt, wait for
//! a pool slot, let the backend run it while watching for silence and overruns, fall back to a
//! replayed new chat when a resumed one is gone, then record the session and warm up for the
//! follow-up. Events stream to the caller's channel; the result is a typed outcome.
//!
//! Dropping the future (cancel, a client gone) drops the backend's turn, which stops its agent.

use std::cell::OnceCell;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::config::Placement;
use super::core::Engine;
use super::plan::{ParkedState, Plan};
use super::prompt::Conversation;
use super::session_io::{save_detached, PendingSaves};
use super::sessions::{new_session_id, Lookup, Match, PendingWrite, Session};
use super::tools::parked::{self, Drive, Parked, Running};
use super::tools::{self, calls, contract, hold::Hold, Described, ToolSet};
use crate::backend::{
    Activity, Chat, Event, EventSink, HostedTools, ToolPolicy, ToolReply, TurnEnd, TurnFailure, TurnSpec, Warm,
};
use crate::error::{BridgeError, Result};
use crate::protocol::{ChatMessage, ErrorKind, Mode, Usage};
use crate::util::sync::{lock, OnDrop};
use tracing::Instrument;

const TIMEOUT_HINT_IDLE: &str = "The model or the network may be stuck. Try again, or raise the idle timeout \
     (VS Code: `cursorBridge.idleTimeoutSeconds`; `serve --idle-timeout`; `idleTimeoutSeconds`).";
const TIMEOUT_HINT_TURN: &str = "Split the task, or raise the turn timeout \
     (VS Code: `cursorBridge.requestTimeoutSeconds`; `serve --request-timeout`; `requestTimeoutSeconds`).";
const TIMEOUT_HINT_CONCURRENT: &str = "Wait for running turns to finish, or allow more at once \
     (VS Code: `cursorBridge.maxConcurrent`; `serve --max-concurrent`; `maxConcurrent`).";

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
        let started = Instant::now();
        if req.model.trim().is_empty() {
            return Err(BridgeError::invalid_params("`model` must not be empty"));
        }
        // Client-tools mode: the agent runs in a folder where none of its own tools work.
        let tools = req.tools.as_ref().filter(|_| !req.utility);
        let place = match tools {
            Some(_) => {
                let place = self.config.tools_placement(req.workspace.as_deref())?;
                self.backend
                    .lock_down(&place.folder)
                    .map_err(|e| BridgeError::internal(format!("cannot prepare the private folder: {e}")))?;
                place
            }
            None => self.config.placement(req.workspace.as_deref(), req.mode)?,
        };
        if place.scratch {
            tracing::info!(turn = %req.turn_id, trusted = self.config.options.workspace_trusted, "the turn runs in a private scratch folder");
        }
        let conversation = Conversation::parse(&req.messages)?;
        if !conversation.has_request() && tools.is_none() {
            // Results alone continue a tool round of the client's tools, and nothing else.
            return Err(BridgeError::invalid_params("`messages` has no user message"));
        }
        // A missing agent is said before anything else happens.
        self.backend.locate().await?;
        let activity = Activity::new();
        let mut sink = EventSink::new(events, activity.clone());
        let policy = tools.map(|_| Arc::new(ToolPolicy::default()));
        if let Some(policy) = &policy {
            sink.police_tools(policy.clone());
        }

        // One turn at a time per conversation: by its id when the client names it, else by the
        // session the history finds (planned again if the lane was busy).
        let _conversation_lane = match &req.conversation_id {
            Some(c) => Some(self.lanes.enter(&format!("conversation:{c}")).await),
            None => None,
        };
        self.refresh_sessions().await;
        let mut plan = self.plan(&req, &conversation, &place)?;
        let _session_lane = match (&req.conversation_id, &plan.session) {
            (None, Some(session)) if plan.resumed || plan.replayed => {
                let lane = self.lanes.enter(&format!("session:{}", session.id)).await;
                if lane.waited {
                    self.refresh_sessions().await;
                    plan = self.plan(&req, &conversation, &place)?;
                }
                Some(lane)
            }
            _ => None,
        };
        // Per-conversation folders: the session's own (made again if something removed it).
        let mut workspace = conversation_folder(&plan, &place)?;
        // A tool round whose agent turn is parked here waiting for these results: continue it.
        let owner = req.owner.clone().unwrap_or_else(|| "local".into());
        let mut resumed_parked = None;
        if let (Some(_), Some(results)) = (tools, conversation.pending_results()) {
            let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
            match self.parking.take(&owner, &ids) {
                parked::Taken::Parked(p) => {
                    plan = Plan { continuing: true, resumed: true, replayed: false, ..p.state.plan.clone() };
                    // What the chat has seen up to the calls, which results that come alone (under
                    // a marker) do not repeat.
                    if let Some(session) = plan.session.as_mut() {
                        (session.requests, session.answers) = (p.state.requests.clone(), p.state.answers.clone());
                    }
                    workspace = p.state.workspace.clone();
                    resumed_parked = Some((p, results));
                }
                parked::Taken::Detaching(end) => {
                    // The agent is ending the turn that made these calls: once the chat is
                    // recorded the results continue it, rather than a second agent on it or a
                    // replay into a new chat.
                    tracing::info!(turn = %req.turn_id, "the results wait for their turn's detach to end");
                    end.wait().await;
                    plan = self.plan(&req, &conversation, &place)?;
                    workspace = conversation_folder(&plan, &place)?;
                }
                parked::Taken::None => {}
            }
        }
        if resumed_parked.is_none() {
            // A new request while an earlier one's tools are still out: that turn is abandoned.
            // Named conversations go by their id. Without one (HTTP clients), a history that
            // holds the turn's calls (our ids are random: no other conversation has them) and
            // is not their results (none, or the client's own followed by new text) has moved on.
            let abandoned =
                self.parking.remove_if(&owner, |s: &ParkedState, call_ids: &[String]| match &req.conversation_id {
                    Some(c) => s.plan.session.as_ref().and_then(|s| s.conversation_id.as_ref()) == Some(c),
                    None => conversation.tool_calls().iter().any(|call| call_ids.contains(&call.call_id)),
                });
            if abandoned > 0 {
                tracing::info!(turn = %req.turn_id, abandoned, "a turn waiting for the client's tools was stopped");
            }
        }
        let mut hosted = tools.is_some() && (resumed_parked.is_some() || self.backend.hosts_tools());
        // Built when first needed (never for a turn whose tools stay hosted), then reused.
        let described = OnceCell::new();
        if let (Some(set), false) = (tools, hosted) {
            plan.prompt = with_tools(set, &described, &plan, plan.prompt.clone());
        }
        tracing::info!(
            turn = %req.turn_id, backend = self.backend.name(), model = %plan.model, mode = plan.mode.as_str(),
            utility = req.utility, resumed = plan.resumed, replayed = plan.replayed,
            client_tools = match (tools, hosted) { (None, _) => "none", (Some(_), true) => "hosted", (Some(_), false) => "prompt" },
            prompt_bytes = plan.prompt.len(), "turn starts"
        );
        tracing::trace!(target: "cursor_bridge::content", turn = %req.turn_id, prompt = %plan.prompt);
        self.announce(&plan, &mut sink).await;

        // Until the turn completes, it counts as given to the chat but not completed: a client
        // that keeps it in its history (after a failure or a cancel) still continues this chat.
        let mut incomplete = plan.session.as_ref().filter(|_| plan.resumed && !plan.continuing).map(|s| Incomplete {
            engine: self,
            saves,
            session_id: s.id.clone(),
            chat_id: s.chat_id.clone(),
            request: conversation.new_request_hash(),
            resume_failed: false,
        });
        if tools.is_some() && !hosted {
            sink.hold_text(Box::new(Hold::new(tools.is_some_and(ToolSet::must_call))));
        }
        let continued = resumed_parked.is_some();
        let mut drive = match (resumed_parked, tools) {
            (Some((p, results)), Some(set)) => {
                // The agent waits inside the call, against its own deadline: answered now,
                // whatever the pool says (`pool.rs`); a free slot is taken if there is one.
                parked::answer(p.pending, &results);
                drop(p.waiting);
                match self.pool.try_slot() {
                    Some(slot) => p.running.slot.hold(slot),
                    None => {
                        tracing::info!(turn = %req.turn_id, "the turn goes on beyond maxConcurrent: its agent is mid-turn")
                    }
                }
                parked::drive(p.running, &mut sink, set, true).await
            }
            (_, Some(set)) if hosted => {
                self.attempt_hosted(&req, &plan, set, &workspace, &mut sink, policy.clone()).await
            }
            _ => Drive::Ended(self.attempt(&req, &plan, &workspace, &mut sink, &activity, policy.as_deref()).await),
        };
        // The client has run tools of this turn (the results just came, or calls went out): it
        // is never run again nor elsewhere, which would run a command twice or lose the results.
        // It fails as it is; the client's next request brings the results to the same chat.
        if let (true, Drive::Ended(Err(f))) = (continued || (tools.is_some() && sink.tools_seen()), &mut drive) {
            if !f.spoke {
                tracing::info!(turn = %req.turn_id, "the turn failed after the client ran its tools; not run again");
                f.spoke = true;
            }
            // Its chat was given the request whose tools ran (the parked turn was not counted
            // as incomplete while it waited).
            if let (true, Some(s), Some(&request)) =
                (continued, &plan.session, conversation.all_request_hashes().last())
            {
                let write = lock(&self.sessions).note_incomplete_in_memory(&s.id, &s.chat_id, request, false);
                if let Some(write) = write {
                    // On disk before the error is answered, but off the async workers (item 13).
                    saves.push(super::session_io::save_detached(&self.sessions, write));
                }
            }
        }
        // A build that cannot take the client's tools as its own: describe them in the prompt.
        if let (Some(set), Drive::Ended(Err(f))) = (tools, &drive) {
            if f.tools_not_hosted && !f.spoke {
                tracing::info!(turn = %req.turn_id, "the agent cannot host the client's tools; using the prompt protocol");
                hosted = false;
                plan.prompt = with_tools(set, &described, &plan, plan.prompt.clone());
                sink.hold_text(Box::new(Hold::new(set.must_call())));
                drive =
                    Drive::Ended(self.attempt(&req, &plan, &workspace, &mut sink, &activity, policy.as_deref()).await);
            }
        }
        // A chat the agent no longer has (garbage-collected, other machine) fails before it says
        // anything; start a new chat with the history replayed rather than lose the conversation.
        // Only a failure that says so: any other (a limit, a login, "still stopping") is the
        // user's to see, and replaying would hide it.
        if plan.resumed && matches!(&drive, Drive::Ended(Err(f)) if !f.spoke && self.chat_is_lost(&plan.chat, f)) {
            tracing::warn!(turn = %req.turn_id, "resume failed before any output; replaying into a new chat");
            if let Some(i) = incomplete.as_mut() {
                i.resume_failed = true;
            }
            let prompt = self.new_chat_prompt(&conversation, tools.is_some());
            let replayed = conversation.has_history() || plan.continuing;
            plan = Plan { chat: Chat::New, resumed: false, replayed, prompt, ..plan };
            if let (Some(set), false) = (tools, hosted) {
                plan.prompt = with_tools(set, &described, &plan, plan.prompt.clone());
            }
            self.announce(&plan, &mut sink).await;
            drive = match tools {
                Some(set) if hosted => {
                    self.attempt_hosted(&req, &plan, set, &workspace, &mut sink, policy.clone()).await
                }
                _ => Drive::Ended(self.attempt(&req, &plan, &workspace, &mut sink, &activity, policy.as_deref()).await),
            };
        }
        let mut outcome = match (drive, tools) {
            (Drive::Ended(outcome), _) => outcome,
            (Drive::Parked(running, pending), Some(set)) => {
                // The client runs the tools now; the agent's turn waits here for the results.
                if let Some(i) = incomplete.as_mut() {
                    i.disarm();
                }
                let (requests, mut answers) = conversation.seen_after(plan.session.as_ref(), plan.continuing);
                answers.extend(sink.answer_hash());
                let session_id = plan.session.as_ref().map(|s| s.id.clone());
                let (resumed, replayed) = (plan.resumed, plan.replayed);
                let state = ParkedState { plan, workspace, set: set.clone(), requests, answers };
                self.park(owner, running, pending, state);
                let duration_ms = started.elapsed().as_millis() as u64;
                tracing::info!(turn = %req.turn_id, duration_ms, "turn waits for the client's tools");
                return Ok(TurnOutcome { session_id, resumed, replayed, usage: None, duration_ms, tool_calls: true });
            }
            (Drive::Parked(..), None) => unreachable!("only hosted tools park a turn"),
        };
        // Client-tools mode on the prompt protocol: read the model's calls out of its reply
        // (asking once more when the block was broken, or missing where a call is required).
        let mut tool_calls = false;
        if let (Some(set), Ok(end), false) = (tools, &mut outcome, hosted) {
            match self.read_calls(&req, set, &plan, end, &workspace, &mut sink, &activity, policy.as_deref()).await {
                Ok(calls) => {
                    tool_calls = !calls.is_empty();
                    for call in calls {
                        let calls::Parsed { name, arguments } = call;
                        sink.emit(Event::ToolCall { call_id: tools::new_call_id(), name, input: arguments }).await;
                    }
                }
                Err(failed) => outcome = Err(failed),
            }
        }
        let end = match outcome {
            Ok(end) => end,
            Err(failed) => {
                let e = failed.error;
                // A CLI failure's message may quote what the CLI printed (a failed answer's
                // text): that is content, logged only when asked for by name.
                if e.kind == ErrorKind::CliFailed {
                    tracing::warn!(turn = %req.turn_id, kind = %e.kind, "turn failed");
                    tracing::debug!(target: "cursor_bridge::content", turn = %req.turn_id, error = %e.message);
                } else {
                    tracing::warn!(turn = %req.turn_id, kind = %e.kind, error = %e.message, "turn failed");
                }
                return Err(e);
            }
        };
        if !sink.text_sent() && end.final_text.trim().is_empty() && !sink.tools_seen() {
            let e = BridgeError::new(ErrorKind::EmptyResponse, "The model returned an empty answer")
                .hint("Try again, or pick another model.");
            tracing::warn!(turn = %req.turn_id, kind = %e.kind, "turn failed");
            return Err(e);
        }
        if let Some(usage) = end.usage {
            sink.emit(Event::Usage(usage)).await;
        }
        if let Some(i) = incomplete.as_mut() {
            // Completed: recorded below, on whichever chat the turn ended in.
            i.disarm();
        }
        let answer = sink.answer_hash();
        let (session_id, write) = match plan.session.take() {
            Some(mut session) => {
                // What the chat was told in its prompts (hosted tools were never described there).
                session.tools = match tools {
                    Some(set) if !hosted => described.get_or_init(|| set.describe()).fingerprint,
                    _ => 0,
                };
                let (id, write) = self.record(session, &plan, &end, &conversation, &workspace, answer);
                (Some(id), write)
            }
            None => (None, None),
        };
        // On disk before the answer, as before; but written outside the store's lock and off the
        // runtime's workers, so no other turn waits for this one's fsync.
        if let Some(write) = write {
            self.write_sessions(write).await;
        }
        let duration_ms = started.elapsed().as_millis() as u64;
        tracing::info!(turn = %req.turn_id, duration_ms, "turn done");
        Ok(TurnOutcome {
            session_id,
            resumed: plan.resumed,
            replayed: plan.replayed,
            usage: end.usage,
            duration_ms,
            tool_calls,
        })
    }

    /// Run the turn in a task of its own with the client's tools hosted by the backend, so it
    /// can outlive this request while the client runs them ([`parked`]).
    async fn attempt_hosted(
        self: &Arc<Self>,
        req: &TurnRequest,
        plan: &Plan,
        set: &ToolSet,
        workspace: &Path,
        sink: &mut EventSink,
        policy: Option<Arc<ToolPolicy>>,
    ) -> Drive {
        let (calls_tx, calls_rx) = mpsc::channel(64);
        let (events_tx, events_rx) = mpsc::channel(256);
        let activity = Activity::new();
        let mut plan = plan.clone();
        plan.hosted = Some(HostedTools { tools: set.offered().into_iter().cloned().collect(), calls: calls_tx });
        let (engine, req, workspace, act) = (self.clone(), req.clone(), workspace.to_path_buf(), activity.clone());
        // The slot is shared with the engine, which gives it back while the turn is parked.
        let slot = crate::engine::pool::Held::default();
        let held = slot.clone();
        let task = tokio::spawn(
            async move {
                let mut sink = EventSink::new(events_tx, act.clone());
                if let Some(policy) = &policy {
                    sink.police_tools(policy.clone());
                }
                held.hold(engine.free_slot(&req.turn_id).await?);
                let end = engine.attempt_in_slot(&plan, &workspace, &mut sink, &act, policy.as_deref()).await;
                held.release();
                end
            }
            .in_current_span(),
        );
        parked::drive(Running { task, events: events_rx, calls: calls_rx, activity, slot }, sink, set, false).await
    }

    /// Keep a turn that waits for the client's tools; after [`parked::DETACH_AFTER`] its calls
    /// are answered "pending" and it ends on its own (its results then come as a new prompt).
    fn park(
        self: &Arc<Self>,
        owner: String,
        running: Running,
        pending: Vec<(String, tokio::sync::oneshot::Sender<ToolReply>)>,
        state: ParkedState,
    ) {
        let waiting = running.activity.open();
        // The client is working, not the agent: other turns may run meanwhile (`pool.rs`).
        running.slot.release();
        let call_ids = pending.iter().map(|(id, _)| id.clone()).collect();
        let key = self.parking.park(Parked { owner, call_ids, running, pending, state, waiting });
        let engine = Arc::downgrade(self);
        self.spawn_background(
            async move {
                tokio::time::sleep(parked::DETACH_AFTER).await;
                if let Some(engine) = engine.upgrade() {
                    engine.detach(key).await;
                }
            }
            .in_current_span(),
        );
    }

    /// The client has not sent the results in time: answer the calls "pending", let the agent
    /// end its turn (nobody sees what it says), and record the chat so the results, when they
    /// come, continue it.
    async fn detach(&self, key: u64) {
        // Results that come meanwhile wait for `_detaching` to end (`Parking::take`).
        let Some((p, _detaching)) = self.parking.take_to_detach(key) else { return };
        tracing::info!("the client's tools are taking long; the agent is told their results come later");
        // The agent ends its turn: work, which takes a free slot if there is one, but never waits
        // for one (its call's deadline is near: that is why it is detached now).
        if let Some(slot) = self.pool.try_slot() {
            p.running.slot.hold(slot);
        }
        let pending_reply = |pending: Vec<(String, tokio::sync::oneshot::Sender<ToolReply>)>| {
            for (_, reply) in pending {
                let _ = reply.send(ToolReply { text: parked::PENDING_TEXT.into(), is_error: false });
            }
        };
        pending_reply(p.pending);
        drop(p.waiting);
        let (tx, rx) = mpsc::channel(1);
        drop(rx);
        let mut nowhere = EventSink::new(tx, p.running.activity.clone());
        let mut drive = parked::drive(p.running, &mut nowhere, &p.state.set, false).await;
        while let Drive::Parked(running, pending) = drive {
            pending_reply(pending);
            drive = parked::drive(running, &mut nowhere, &p.state.set, false).await;
        }
        let ParkedState { mut plan, workspace, requests, answers, .. } = p.state;
        let (Drive::Ended(Ok(end)), Some(mut session)) = (drive, plan.session.take()) else { return };
        session.tools = 0;
        let (_, write) = self.record_with(session, &plan, &end, requests, answers, &workspace);
        if let Some(write) = write {
            self.write_sessions(write).await;
        }
    }

    /// The calls in the reply that just ended, checked against the tools; one repair prompt in
    /// the same chat when the block is broken or a required call is missing.
    #[allow(clippy::too_many_arguments)]
    async fn read_calls(
        &self,
        req: &TurnRequest,
        set: &ToolSet,
        plan: &Plan,
        end: &mut TurnEnd,
        workspace: &Path,
        sink: &mut EventSink,
        activity: &Activity,
        policy: Option<&ToolPolicy>,
    ) -> std::result::Result<Vec<calls::Parsed>, TurnFailure> {
        let mut repaired = false;
        loop {
            let block = sink.end_hold().await.and_then(|h| h.block().map(str::to_string));
            let problem = match block {
                Some(block) => match calls::parse_block(&block).and_then(|c| calls::validate(&c, set).map(|()| c)) {
                    Ok(mut found) => {
                        if !set.parallel {
                            found.truncate(1);
                        }
                        return Ok(found);
                    }
                    Err(why) => contract::repair_prompt(&why),
                },
                None if set.must_call() => contract::must_call_prompt(set),
                None => return Ok(Vec::new()),
            };
            let chat_id = end.chat_id.clone().filter(|c| !c.is_empty());
            let (Some(chat_id), false) = (chat_id, repaired) else {
                if set.must_call() && !problem.starts_with("Your [TOOL_CALLS]") {
                    // Asked twice for a call and answered in text both times: that answer stands.
                    return Ok(Vec::new());
                }
                return Err(BridgeError::new(
                    ErrorKind::BadToolCall,
                    "The model's tool call did not fit the tool's definition, even when asked again",
                )
                .hint("Try again, or pick another model.")
                .into());
            };
            repaired = true;
            tracing::info!(turn = %req.turn_id, "the model's tool calls need a repair; asking again");
            let repair = Plan { chat: Chat::Resume(chat_id), prompt: problem, session: None, ..plan.clone() };
            sink.hold_text(Box::new(Hold::new(set.must_call())));
            *end = self.attempt(req, &repair, workspace, sink, activity, policy).await?;
        }
    }

    /// The resume of `chat` failed because the agent no longer has it: the backend said so, or
    /// (print mode) it failed with `cliFailed` and nothing more specific.
    fn chat_is_lost(&self, chat: &Chat, f: &TurnFailure) -> bool {
        let silent_loss = match chat {
            Chat::Resume(id) => f.error.kind == ErrorKind::CliFailed && self.backend.silent_failure_loses(id),
            _ => false,
        };
        f.chat_lost || silent_loss
    }

    /// Tell the client which session the turn runs in and how (again after a fallback, so what
    /// it was told is what happened).
    async fn announce(&self, plan: &Plan, sink: &mut EventSink) {
        if let Some(session) = &plan.session {
            let (session_id, resumed, replayed) = (session.id.clone(), plan.resumed, plan.replayed);
            sink.emit(Event::Session { session_id, resumed, replayed }).await;
        }
    }

    /// `client_tools`: the client's system prompt (which explains its tools) always goes in.
    fn new_chat_prompt(&self, conversation: &Conversation<'_>, client_tools: bool) -> String {
        let o = &self.config.options;
        conversation.new_chat_prompt(o.replay_max_chars, o.send_system_messages || client_tools)
    }

    fn plan(&self, req: &TurnRequest, conversation: &Conversation<'_>, place: &Placement) -> Result<Plan> {
        if req.utility {
            // Titles and progress messages: one shot, ask mode, no session touched.
            return Ok(Plan {
                session: None,
                chat: Chat::OneShot,
                resumed: false,
                replayed: false,
                prompt: conversation.utility_prompt(),
                mode: Mode::Ask,
                model: self.config.options.utility_model.clone().unwrap_or_else(|| req.model.clone()),
                unattended: false,
                continuing: false,
                hosted: None,
            });
        }
        let workspace = place.folder.to_string_lossy().into_owned();
        // A tool round continues the chat that made the calls: it has seen every request.
        let continuing = req.tools.is_some() && conversation.pending_results().is_some();
        let (history, answers) = if continuing {
            (conversation.all_request_hashes(), conversation.all_answer_hashes())
        } else {
            (conversation.history_hashes(), conversation.answer_hashes())
        };
        let mut sessions = lock(&self.sessions);
        let found = sessions.find(&Lookup {
            conversation_id: req.conversation_id.as_deref(),
            session_id: req.session_id.as_deref(),
            mode: place.mode,
            workspace: &workspace,
            under: place.per_conversation,
            history: &history,
            answers: &answers,
        });
        let now = sessions.now_ms();
        drop(sessions);
        let (mode, model, unattended) = (place.mode, req.model.clone(), place.unattended);
        match found {
            Match::Resume { mut session, missing } => {
                // A session without a conversation id takes this one; one that has another keeps
                // it unless the client named the session itself (its marker survives a reload
                // that gave the chat a new id).
                let named = req.session_id.as_deref() == Some(session.id.as_str());
                if req.conversation_id.is_some() && (session.conversation_id.is_none() || named) {
                    session.conversation_id = req.conversation_id.clone();
                }
                let chat = Chat::Resume(session.chat_id.clone());
                let prompt =
                    if continuing { conversation.results_prompt() } else { conversation.resume_prompt_with(missing) };
                Ok(Plan {
                    session: Some(session),
                    chat,
                    resumed: true,
                    replayed: false,
                    prompt,
                    mode,
                    model,
                    unattended,
                    continuing,
                    hosted: None,
                })
            }
            found => {
                let session = match found {
                    Match::Diverged(s) => Session { requests: Vec::new(), answers: Vec::new(), ..s },
                    _ => Session {
                        id: new_session_id(),
                        chat_id: String::new(),
                        conversation_id: req.conversation_id.clone(),
                        mode,
                        model: model.clone(),
                        workspace: if place.per_conversation {
                            self.config.new_conversation_folder()?.to_string_lossy().into_owned()
                        } else {
                            workspace
                        },
                        requests: Vec::new(),
                        answers: Vec::new(),
                        attempted: Vec::new(),
                        resume_failures: 0,
                        turns: 0,
                        created_ms: now,
                        last_used_ms: now,
                        tools: 0,
                        // The store's, set when it is recorded.
                        owner: String::new(),
                        door: Default::default(),
                    },
                };
                let replayed = conversation.has_history() || continuing;
                let prompt = self.new_chat_prompt(conversation, req.tools.is_some());
                Ok(Plan {
                    session: Some(session),
                    chat: Chat::New,
                    resumed: false,
                    replayed,
                    prompt,
                    mode,
                    model,
                    unattended,
                    continuing,
                    hosted: None,
                })
            }
        }
    }

    /// One run on the backend: wait for a slot, then run until the backend ends, the agent has
    /// been silent for `idleTimeoutSeconds`, or the turn took `requestTimeoutSeconds`.
    async fn attempt(
        &self,
        req: &TurnRequest,
        plan: &Plan,
        workspace: &Path,
        sink: &mut EventSink,
        activity: &Activity,
        policy: Option<&ToolPolicy>,
    ) -> std::result::Result<TurnEnd, TurnFailure> {
        let _slot = self.free_slot(&req.turn_id).await?;
        self.attempt_in_slot(plan, workspace, sink, activity, policy).await
    }

    /// Wait for a pool slot, bounded like the turn itself.
    async fn free_slot(&self, turn: &str) -> Result<tokio::sync::OwnedSemaphorePermit> {
        let options = &self.config.options;
        match tokio::time::timeout(self.config.turn_limit(), self.pool.slot(turn)).await {
            Ok(slot) => slot,
            Err(_) => Err(BridgeError::new(
                ErrorKind::Timeout,
                format!(
                    "No free slot for {} s: {} turns are running",
                    options.request_timeout_seconds, options.max_concurrent
                ),
            )
            .hint(TIMEOUT_HINT_CONCURRENT)),
        }
    }

    /// [`Engine::attempt`] once it has its slot.
    async fn attempt_in_slot(
        &self,
        plan: &Plan,
        workspace: &Path,
        sink: &mut EventSink,
        activity: &Activity,
        policy: Option<&ToolPolicy>,
    ) -> std::result::Result<TurnEnd, TurnFailure> {
        let options = &self.config.options;
        let spec = TurnSpec {
            model: plan.model.clone(),
            mode: plan.mode,
            workspace: workspace.to_path_buf(),
            chat: plan.chat.clone(),
            prompt: plan.prompt.clone(),
            unattended: plan.unattended,
            idle: self.config.idle(),
            hosted_tools: plan.hosted.clone(),
        };
        activity.touch();
        let deadline = tokio::time::Instant::now() + self.config.turn_limit();
        let outcome = tokio::select! {
            outcome = self.backend.run_turn(spec, sink) => outcome,
            () = silent_for(activity, self.config.idle()) => Err(BridgeError::new(
                ErrorKind::Timeout,
                format!("The Cursor CLI produced no output for {} s", options.idle_timeout_seconds),
            ).hint(TIMEOUT_HINT_IDLE).into()),
            () = tokio::time::sleep_until(deadline) => Err(BridgeError::new(
                ErrorKind::Timeout,
                format!("The turn took longer than {} s", options.request_timeout_seconds),
            ).hint(TIMEOUT_HINT_TURN).into()),
            what = policy_tripped(policy) => Err(policy_error(&what).into()),
        };
        // A tool that ran in the reply's last moments: the turn still fails.
        match policy.and_then(ToolPolicy::tripped_by_end) {
            Some(what) if outcome.is_ok() => Err(policy_error(&what).into()),
            _ => outcome,
        }
    }

    /// Remember the chat for the next turn and warm up for it; returns the session id and the
    /// write that puts the record on disk.
    fn record(
        &self,
        session: Session,
        plan: &Plan,
        end: &TurnEnd,
        conversation: &Conversation<'_>,
        workspace: &Path,
        answer: Option<u64>,
    ) -> (String, Option<PendingWrite>) {
        let (requests, mut answers) = conversation.seen_after(Some(&session), plan.continuing);
        answers.extend(answer);
        self.record_with(session, plan, end, requests, answers, workspace)
    }

    /// [`Engine::record`] with the requests and answers the chat has seen, worked out already.
    fn record_with(
        &self,
        mut session: Session,
        plan: &Plan,
        end: &TurnEnd,
        requests: Vec<u64>,
        answers: Vec<u64>,
        workspace: &Path,
    ) -> (String, Option<PendingWrite>) {
        if let Some(chat) = end.chat_id.clone() {
            session.chat_id = chat;
        }
        session.requests = requests;
        session.answers = answers;
        session.attempted.clear();
        session.resume_failures = 0;
        session.turns += 1;
        session.model = plan.model.clone();
        session.mode = plan.mode;
        let options = &self.config.options;
        if options.spares > 0 && !session.chat_id.is_empty() {
            self.backend.warm(Warm::FollowUp {
                model: session.model.clone(),
                mode: session.mode,
                workspace: workspace.to_path_buf(),
                chat_id: session.chat_id.clone(),
                unattended: plan.unattended,
                fresh: options.spares >= 2,
            });
        }
        let id = session.id.clone();
        let write = lock(&self.sessions).record_in_memory(session);
        (id, write)
    }

    /// Run a session write on a thread of its own (it blocks on the disk; a runtime worker must
    /// not) and take in what it wrote. A turn dropped meanwhile leaves the thread to finish it.
    async fn write_sessions(&self, write: PendingWrite) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new().name("sessions-write".into()).spawn(move || {
            let _ = tx.send(write.run());
        });
        match spawned {
            Ok(_) => {
                if let Ok(written) = rx.await {
                    lock(&self.sessions).absorb(written);
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not start the thread that saves sessions"),
        }
    }
}

/// A resumed turn that has not completed. Dropped armed (failed, timed out, cancelled), it tells
/// the session store what the chat was given.
struct Incomplete<'a> {
    engine: &'a Engine,
    saves: &'a PendingSaves,
    session_id: String,
    chat_id: String,
    request: u64,
    resume_failed: bool,
}

impl Incomplete<'_> {
    fn disarm(&mut self) {
        self.session_id.clear();
    }
}

impl Drop for Incomplete<'_> {
    fn drop(&mut self) {
        if !self.session_id.is_empty() {
            let write = lock(&self.engine.sessions).note_incomplete_in_memory(
                &self.session_id,
                &self.chat_id,
                self.request,
                self.resume_failed,
            );
            // A drop cannot wait: the write runs on a blocking thread, and the turn waits for it
            // before it answers (a cancelled turn's lands on its own).
            if let Some(write) = write {
                self.saves.push(save_detached(&self.engine.sessions, write));
            }
        }
    }
}

/// Where the turn runs: with per-conversation folders, the session's own (made again if
/// something removed it).
fn conversation_folder(plan: &Plan, place: &Placement) -> Result<std::path::PathBuf> {
    match &plan.session {
        Some(session) if place.per_conversation => crate::util::fs::private_dir(Path::new(&session.workspace))
            .map_err(|e| BridgeError::internal(format!("cannot create the conversation's folder: {e}"))),
        _ => Ok(place.folder.clone()),
    }
}

/// The tool set's description goes in when the chat has not been told about this set yet.
fn with_tools(set: &ToolSet, described: &OnceCell<Described>, plan: &Plan, prompt: String) -> String {
    let described = described.get_or_init(|| set.describe());
    let known = plan.resumed && plan.session.as_ref().is_some_and(|s| s.tools == described.fingerprint);
    if known || set.offered().is_empty() {
        return prompt;
    }
    format!("{}\n\n{prompt}", described.block)
}

fn policy_error(what: &str) -> BridgeError {
    BridgeError::new(
        ErrorKind::ToolPolicy,
        format!("Cursor ran one of its own tools ({what}) although only the client's tools are allowed; the turn was stopped"),
    )
    .hint(
        "Report this with the log: this Cursor CLI build ignores the permissions cursor-bridge sets. \
         Meanwhile set `cursorBridge.tools` to `cursor` to let Cursor's agent work on its own.",
    )
}

/// Resolves with what ran when a built-in tool ran in client-tools mode; never without a policy.
async fn policy_tripped(policy: Option<&ToolPolicy>) -> String {
    match policy {
        Some(policy) => policy.tripped().await,
        None => std::future::pending().await,
    }
}

/// Resolves once nothing has touched `activity` for `idle` while the backend was not opening.
async fn silent_for(activity: &Activity, idle: std::time::Duration) {
    loop {
        let due = activity.last() + idle;
        if tokio::time::Instant::now() >= due {
            if !activity.opening() {
                return;
            }
            // Still opening: look again one idle period from now (its end touches `activity`).
            tokio::time::sleep(idle).await;
            continue;
        }
        tokio::time::sleep_until(due).await;
    }
}
