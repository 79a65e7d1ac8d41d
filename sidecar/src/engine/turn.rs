//! One turn, whoever asked: pick the session (resume, replay or new), build the prompt, wait for
//! a pool slot, let the backend run it while watching for silence and overruns, fall back to a
//! replayed new chat when a resumed one is gone, then record the session and warm up for the
//! follow-up. Events stream to the caller's channel; the result is a typed outcome.
//!
//! Dropping the future (cancel, a client gone) drops the backend's turn, which stops its agent.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::config::Placement;
use super::core::Engine;
use super::prompt::Conversation;
use super::sessions::{new_session_id, Lookup, Match, PendingWrite, Session};
use crate::backend::{Activity, Chat, Event, EventSink, TurnEnd, TurnFailure, TurnSpec, Warm};
use crate::error::{BridgeError, Result};
use crate::protocol::{ChatMessage, ErrorKind, Mode, Usage};
use crate::util::sync::{lock, OnDrop};

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
}

/// How the turn meets its agent chat.
struct Plan {
    session: Option<Session>,
    chat: Chat,
    resumed: bool,
    replayed: bool,
    prompt: String,
    mode: Mode,
    model: String,
    unattended: bool,
}

impl Engine {
    pub async fn turn(self: &Arc<Self>, req: TurnRequest, events: mpsc::Sender<Event>) -> Result<TurnOutcome> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let _in_flight = OnDrop(|| {
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
        });
        let started = Instant::now();
        if req.model.trim().is_empty() {
            return Err(BridgeError::invalid_params("`model` must not be empty"));
        }
        let place = self.config.placement(req.workspace.as_deref(), req.mode)?;
        if place.scratch {
            tracing::info!(turn = %req.turn_id, trusted = self.config.options.workspace_trusted, "the turn runs in a private scratch folder");
        }
        let conversation = Conversation::parse(&req.messages)?;
        // A missing agent is said before anything else happens.
        self.backend.locate().await?;
        let activity = Activity::new();
        let mut sink = EventSink::new(events, activity.clone());

        // One turn at a time per conversation: by its id when the client names it, else by the
        // session the history finds (planned again if the lane was busy).
        let _conversation_lane = match &req.conversation_id {
            Some(c) => Some(self.lanes.enter(&format!("conversation:{c}")).await),
            None => None,
        };
        let mut plan = self.plan(&req, &conversation, &place)?;
        let _session_lane = match (&req.conversation_id, &plan.session) {
            (None, Some(session)) if plan.resumed || plan.replayed => {
                let lane = self.lanes.enter(&format!("session:{}", session.id)).await;
                if lane.waited {
                    plan = self.plan(&req, &conversation, &place)?;
                }
                Some(lane)
            }
            _ => None,
        };
        // Per-conversation folders: the session's own (made again if something removed it).
        let workspace = match &plan.session {
            Some(session) if place.per_conversation => crate::util::fs::private_dir(Path::new(&session.workspace))
                .map_err(|e| BridgeError::internal(format!("cannot create the conversation's folder: {e}")))?,
            _ => place.folder.clone(),
        };
        tracing::info!(
            turn = %req.turn_id, backend = self.backend.name(), model = %plan.model, mode = plan.mode.as_str(),
            utility = req.utility, resumed = plan.resumed, replayed = plan.replayed,
            prompt_bytes = plan.prompt.len(), "turn starts"
        );
        tracing::trace!(target: "cursor_bridge::content", turn = %req.turn_id, prompt = %plan.prompt);
        self.announce(&plan, &mut sink).await;

        // Until the turn completes, it counts as given to the chat but not completed: a client
        // that keeps it in its history (after a failure or a cancel) still continues this chat.
        let mut incomplete = plan.session.as_ref().filter(|_| plan.resumed).map(|s| Incomplete {
            engine: self,
            session_id: s.id.clone(),
            chat_id: s.chat_id.clone(),
            request: conversation.new_request_hash(),
            resume_failed: false,
        });
        let mut outcome = self.attempt(&req, &plan, &workspace, &mut sink, &activity).await;
        // A chat the agent no longer has (garbage-collected, other machine) fails before it says
        // anything; start a new chat with the history replayed rather than lose the conversation.
        if plan.resumed
            && matches!(&outcome, Err(f) if !f.spoke && (f.chat_lost || f.error.kind == ErrorKind::CliFailed))
        {
            tracing::warn!(turn = %req.turn_id, "resume failed before any output; replaying into a new chat");
            if let Some(i) = incomplete.as_mut() {
                i.resume_failed = true;
            }
            let prompt = self.new_chat_prompt(&conversation);
            plan = Plan { chat: Chat::New, resumed: false, replayed: conversation.has_history(), prompt, ..plan };
            self.announce(&plan, &mut sink).await;
            outcome = self.attempt(&req, &plan, &workspace, &mut sink, &activity).await;
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
            Some(session) => {
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
        Ok(TurnOutcome { session_id, resumed: plan.resumed, replayed: plan.replayed, usage: end.usage, duration_ms })
    }

    /// Tell the client which session the turn runs in and how (again after a fallback, so what
    /// it was told is what happened).
    async fn announce(&self, plan: &Plan, sink: &mut EventSink) {
        if let Some(session) = &plan.session {
            let (session_id, resumed, replayed) = (session.id.clone(), plan.resumed, plan.replayed);
            sink.emit(Event::Session { session_id, resumed, replayed }).await;
        }
    }

    fn new_chat_prompt(&self, conversation: &Conversation<'_>) -> String {
        let o = &self.config.options;
        conversation.new_chat_prompt(o.replay_max_chars, o.send_system_messages)
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
            });
        }
        let workspace = place.folder.to_string_lossy().into_owned();
        let history = conversation.history_hashes();
        let answers = conversation.answer_hashes();
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
                let prompt = conversation.resume_prompt_with(missing);
                Ok(Plan {
                    session: Some(session),
                    chat,
                    resumed: true,
                    replayed: false,
                    prompt,
                    mode,
                    model,
                    unattended,
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
                    },
                };
                let replayed = conversation.has_history();
                let prompt = self.new_chat_prompt(conversation);
                Ok(Plan {
                    session: Some(session),
                    chat: Chat::New,
                    resumed: false,
                    replayed,
                    prompt,
                    mode,
                    model,
                    unattended,
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
    ) -> std::result::Result<TurnEnd, TurnFailure> {
        let options = &self.config.options;
        // Waiting for a slot is bounded like the turn itself.
        let _slot = match tokio::time::timeout(self.config.turn_limit(), self.pool.slot(&req.turn_id)).await {
            Ok(slot) => slot?,
            Err(_) => {
                return Err(BridgeError::new(
                    ErrorKind::Timeout,
                    format!(
                        "No free slot for {} s: {} turns are running",
                        options.request_timeout_seconds, options.max_concurrent
                    ),
                )
                .hint(TIMEOUT_HINT_CONCURRENT)
                .into())
            }
        };
        let spec = TurnSpec {
            model: plan.model.clone(),
            mode: plan.mode,
            workspace: workspace.to_path_buf(),
            chat: plan.chat.clone(),
            prompt: plan.prompt.clone(),
            unattended: plan.unattended,
            idle: self.config.idle(),
        };
        activity.touch();
        let deadline = tokio::time::Instant::now() + self.config.turn_limit();
        tokio::select! {
            outcome = self.backend.run_turn(spec, sink) => outcome,
            () = silent_for(activity, self.config.idle()) => Err(BridgeError::new(
                ErrorKind::Timeout,
                format!("The Cursor CLI produced no output for {} s", options.idle_timeout_seconds),
            ).hint(TIMEOUT_HINT_IDLE).into()),
            () = tokio::time::sleep_until(deadline) => Err(BridgeError::new(
                ErrorKind::Timeout,
                format!("The turn took longer than {} s", options.request_timeout_seconds),
            ).hint(TIMEOUT_HINT_TURN).into()),
        }
    }

    /// Remember the chat for the next turn and warm up for it; returns the session id and the
    /// write that puts the record on disk.
    fn record(
        &self,
        mut session: Session,
        plan: &Plan,
        end: &TurnEnd,
        conversation: &Conversation<'_>,
        workspace: &Path,
        answer: Option<u64>,
    ) -> (String, Option<PendingWrite>) {
        if let Some(chat) = end.chat_id.clone() {
            session.chat_id = chat;
        }
        let mut requests = conversation.history_hashes();
        requests.push(conversation.new_request_hash());
        session.requests = requests;
        session.answers = conversation.answer_hashes();
        session.answers.extend(answer);
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
            lock(&self.engine.sessions).note_incomplete(
                &self.session_id,
                &self.chat_id,
                self.request,
                self.resume_failed,
            );
        }
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
