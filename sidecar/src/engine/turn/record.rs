//! Recording a turn: the answer checked (an error logged, an empty answer refused; on the prompt
//! protocol the model's calls read out of it), the session recorded on whichever chat the turn
//! ended in, on disk before the answer, and the follow-up warmed. A turn whose agent waits inside
//! calls of the client's tools is parked instead, and recorded when it is detached. A turn that
//! did not complete notes what its chat was given ([`Incomplete`]).

use std::path::Path;
use std::sync::Arc;

use tokio::sync::oneshot;
use tracing::Instrument;

use super::state::{ParkedState, Plan};
use super::{ClientTools, Incomplete, Turn, TurnOutcome};
use crate::backend::{Event, EventSink, ToolReply, TurnEnd, TurnFailure, Warm};
use crate::engine::core::Engine;
use crate::engine::session_io::save_detached;
use crate::engine::sessions::{CallName, Session};
use crate::engine::tools::parked::{self, Drive, Parked, Running};
use crate::engine::tools::{self, calls};
use crate::error::{BridgeError, Result};
use crate::util::sync::lock;
use crate::vocab::ErrorKind;

impl Turn<'_> {
    /// The turn's answer: parked while the client runs its tools, or checked and recorded.
    pub(super) async fn finish(mut self, drive: Drive) -> Result<TurnOutcome> {
        let mut outcome = match drive {
            Drive::Ended(outcome) => outcome,
            Drive::Parked(running, pending) => return Ok(self.park(running, pending)),
        };
        // Client-tools mode on the prompt protocol: read the model's calls out of its reply
        // (asking once more when the block was broken, or missing where a call is required).
        let mut made = Vec::new();
        if let (ClientTools::Prompt(set), Ok(end)) = (self.tools, &mut outcome) {
            match self.read_calls(set, end).await {
                Ok(calls) => {
                    for call in calls {
                        let calls::Parsed { name, arguments } = call;
                        let call_id = tools::new_call_id();
                        made.push(CallName { call_id: call_id.clone(), name: name.clone() });
                        self.sink.emit(Event::ToolCall { call_id, name, input: arguments }).await;
                    }
                }
                Err(failed) => outcome = Err(failed),
            }
        }
        let end = self.checked(outcome)?;
        if let Some(usage) = end.usage {
            self.sink.emit(Event::Usage(usage)).await;
        }
        if let Some(i) = self.incomplete.as_mut() {
            // Completed: recorded below, on whichever chat the turn ended in.
            i.disarm();
        }
        let tool_calls = !made.is_empty();
        let session_id = self.remember_chat(&end, made).await;
        let duration_ms = self.started.elapsed().as_millis() as u64;
        tracing::info!(turn = %self.req.turn_id, duration_ms, "turn done");
        Ok(TurnOutcome {
            session_id,
            resumed: self.plan.resumed,
            replayed: self.plan.replayed,
            usage: end.usage,
            duration_ms,
            tool_calls,
        })
    }

    /// The run's end, or its error (logged); an answer with nothing in it is an error too.
    fn checked(&self, outcome: std::result::Result<TurnEnd, TurnFailure>) -> Result<TurnEnd> {
        let turn = &self.req.turn_id;
        let end = match outcome {
            Ok(end) => end,
            Err(failed) => {
                let e = failed.error;
                // A CLI failure's message may quote what the CLI printed (a failed answer's
                // text): that is content, logged only when asked for by name.
                if e.kind == ErrorKind::CliFailed {
                    tracing::warn!(turn = %turn, kind = %e.kind, "turn failed");
                    tracing::debug!(target: "cursor_bridge::content", turn = %turn, error = %e.message);
                } else {
                    tracing::warn!(turn = %turn, kind = %e.kind, error = %e.message, "turn failed");
                }
                return Err(e);
            }
        };
        if !self.sink.text_sent() && end.final_text.trim().is_empty() && !self.sink.tools_seen() {
            let e = BridgeError::new(ErrorKind::EmptyResponse, "The model returned an empty answer")
                .hint("Try again, or pick another model.");
            tracing::warn!(turn = %turn, kind = %e.kind, "turn failed");
            return Err(e);
        }
        Ok(end)
    }

    /// Remember the chat for the next turn and warm up for it; on disk when this returns. The
    /// session's id (`None` for a utility turn).
    /// `calls`: the client-tool calls of this reply (the prompt protocol's), so results that come
    /// alone (a marker, no transcript) still name their tools to the chat.
    async fn remember_chat(&mut self, end: &TurnEnd, calls: Vec<CallName>) -> Option<String> {
        let answer = self.sink.answer_hash();
        let mut session = self.plan.session.take()?;
        session.calls = calls;
        // What the chat was told in its prompts (hosted tools were never described there).
        session.tools = match self.tools {
            ClientTools::Prompt(set) => self.described.get_or_init(|| set.describe()).fingerprint,
            // Nothing was described to the chat (an undecided set never reaches here).
            ClientTools::None | ClientTools::Undecided(_) | ClientTools::Hosted(_) => 0,
        };
        let (requests, mut answers) = self.conversation.seen_after(Some(&session), self.plan.continuing);
        answers.extend(answer);
        (session.requests, session.answers) = (requests, answers);
        Some(self.engine.record_session(session, &self.plan, end, &self.workspace).await)
    }

    /// The client runs the tools now; the agent's turn waits here for the results. After
    /// [`parked::DETACH_AFTER`] its calls are answered "pending" and it ends on its own (its
    /// results then come as a new prompt).
    fn park(mut self, running: Running, pending: Vec<(String, oneshot::Sender<ToolReply>)>) -> TurnOutcome {
        let Some(set) = self.tools.set() else { unreachable!("only hosted tools park a turn") };
        if let Some(i) = self.incomplete.as_mut() {
            i.disarm();
        }
        let (requests, mut answers) = self.conversation.seen_after(self.plan.session.as_ref(), self.plan.continuing);
        answers.extend(self.sink.answer_hash());
        let session_id = self.plan.session.as_ref().map(|s| s.id.clone());
        let (resumed, replayed) = (self.plan.resumed, self.plan.replayed);
        let state = ParkedState { plan: self.plan, workspace: self.workspace, set: set.clone(), requests, answers };
        let waiting = running.activity.open();
        // The client is working, not the agent: other turns may run meanwhile (`slots.rs`).
        running.slot.release();
        let call_ids = pending.iter().map(|(id, _)| id.clone()).collect();
        let engine = self.engine;
        let key = engine.parking.park(Parked { owner: self.owner, call_ids, running, pending, state, waiting });
        let weak = Arc::downgrade(engine);
        engine.spawn_background(
            async move {
                tokio::time::sleep(parked::DETACH_AFTER).await;
                if let Some(engine) = weak.upgrade() {
                    engine.detach(key).await;
                }
            }
            .in_current_span(),
        );
        let duration_ms = self.started.elapsed().as_millis() as u64;
        tracing::info!(turn = %self.req.turn_id, duration_ms, "turn waits for the client's tools");
        TurnOutcome { session_id, resumed, replayed, usage: None, duration_ms, tool_calls: true }
    }

    /// A turn that continued a parked one failed: its chat was given the request whose tools
    /// ran (the parked turn was not counted as incomplete while it waited).
    pub(super) fn note_tools_ran(&self) {
        if let (Some(s), Some(&request)) = (&self.plan.session, self.conversation.all_request_hashes().last()) {
            let (session_id, chat_id) = (s.id.clone(), s.chat_id.clone());
            let (engine, saves) = (self.engine, self.saves);
            Incomplete { engine, saves, session_id, chat_id, request, resume_failed: false }.note();
        }
    }
}

impl Engine {
    /// Record `session` (its requests, answers and tools set by the caller) as the chat the
    /// turn ended in, and warm up for the follow-up; on disk when this returns. Its id.
    async fn record_session(&self, mut session: Session, plan: &Plan, end: &TurnEnd, workspace: &Path) -> String {
        if let Some(chat) = end.chat_id.clone() {
            session.chat_id = chat;
        }
        session.attempted.clear();
        session.resume_failures = 0;
        session.turns += 1;
        session.model = plan.model.clone();
        session.mode = plan.mode;
        let options = &self.config.settings;
        if options.warm_ahead > 0 && !session.chat_id.is_empty() {
            self.backend.warm(Warm::FollowUp {
                model: session.model.clone(),
                mode: session.mode,
                workspace: workspace.to_path_buf(),
                chat_id: session.chat_id.clone(),
                unattended: plan.unattended,
                fresh: options.warm_ahead >= 2,
            });
        }
        let id = session.id.clone();
        let write = lock(&self.sessions).record_in_memory(session);
        // On disk before the answer; but written outside the store's lock and off the runtime's
        // workers (`session_io.rs`), so no other turn waits for this one's fsync.
        if let Some(write) = write {
            self.save_sessions(write).await;
        }
        id
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
        if let Some(slot) = self.slots.try_slot() {
            p.running.slot.hold(slot);
        }
        let pending_reply = |pending: Vec<(String, oneshot::Sender<ToolReply>)>| {
            for (_, reply) in pending {
                let _ = reply.send(ToolReply { text: parked::PENDING_TEXT.into(), is_error: false });
            }
        };
        pending_reply(p.pending);
        drop(p.waiting);
        let (tx, rx) = tokio::sync::mpsc::channel(1);
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
        session.requests = requests;
        session.answers = answers;
        self.record_session(session, &plan, &end, &workspace).await;
    }
}

impl Incomplete<'_> {
    fn disarm(&mut self) {
        self.session_id.clear();
    }

    /// Tell the session store what the chat was given, once.
    fn note(&mut self) {
        if self.session_id.is_empty() {
            return;
        }
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
        self.disarm();
    }
}

impl Drop for Incomplete<'_> {
    fn drop(&mut self) {
        self.note();
    }
}
