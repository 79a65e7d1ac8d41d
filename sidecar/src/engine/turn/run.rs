//! Running a turn: a turn slot, then the backend until it ends, the agent has been silent for
//! `idleTimeoutSeconds`, the turn took `requestTimeoutSeconds`, or (client-tools mode) one of the
//! agent's own tools ran. Hosted tools run the backend's turn in a task of its own, which can
//! outlive the request while the client runs them ([`parked`]); on the prompt protocol the calls
//! are read out of the reply, with one repair prompt. A run that failed before it said anything
//! falls back: to the prompt protocol when the build cannot host the client's tools, to a new
//! chat with the history replayed when the agent lost the resumed one.

use tokio::sync::mpsc;
use tracing::Instrument;

use super::plan::Continued;
use super::state::Plan;
use super::{ClientTools, Turn};
use crate::backend::{Activity, AgentWords, Chat, EventSink, HostedTools, ToolPolicy, TurnEnd, TurnFailure, TurnSpec};
use crate::engine::core::Engine;
use crate::engine::tools::parked::{self, Drive, Running};
use crate::engine::tools::{calls, hold::Hold, prompt_protocol, ToolSet};
use crate::error::{BridgeError, Result};
use crate::vocab::ErrorKind;

const TIMEOUT_HINT_IDLE: &str = "The model or the network may be stuck. Try again, or raise the idle timeout \
     (VS Code: `cursorBridge.idleTimeoutSeconds`; `serve --idle-timeout`; `idleTimeoutSeconds`).";
const TIMEOUT_HINT_TURN: &str = "Split the task, or raise the turn timeout \
     (VS Code: `cursorBridge.requestTimeoutSeconds`; `serve --request-timeout`; `requestTimeoutSeconds`).";
const TIMEOUT_HINT_CONCURRENT: &str = "Wait for running turns to finish, or allow more at once \
     (VS Code: `cursorBridge.maxConcurrent`; `serve --max-concurrent`; `maxConcurrent`).";

impl<'a> Turn<'a> {
    /// Continue the parked agent turn, or run the turn on the backend; then the fallbacks.
    pub(super) async fn run(&mut self, parked: Option<Continued<'a>>) -> Drive {
        let continued = parked.is_some();
        let mut drive = match parked {
            Some(parked) => self.continue_parked(parked).await,
            None => {
                if let ClientTools::Prompt(set) = self.tools {
                    self.hold_text(set);
                }
                self.drive().await
            }
        };
        // The client has run tools of this turn (the results just came, or calls went out): it
        // is never run again nor elsewhere, which would run a command twice or lose the results.
        // It fails as it is; the client's next request brings the results to the same chat.
        if let (true, Drive::Ended(Err(f))) =
            (continued || (self.tools.set().is_some() && self.sink.tools_seen()), &mut drive)
        {
            if !f.spoke {
                tracing::info!(turn = %self.req.turn_id, "the turn failed after the client ran its tools; not run again");
                f.spoke = true;
            }
            if continued {
                self.note_tools_ran();
            }
        }
        // A build that cannot take the client's tools as its own: describe them in the prompt.
        if let (Some(set), Drive::Ended(Err(f))) = (self.tools.set(), &drive) {
            if f.tools_not_hosted && !f.spoke {
                tracing::info!(turn = %self.req.turn_id, "the agent cannot host the client's tools; using the prompt protocol");
                self.tools = ClientTools::Prompt(set);
                self.describe_tools();
                self.hold_text(set);
                drive = self.drive().await;
            }
        }
        // A chat the agent no longer has (garbage-collected, other machine) fails before it says
        // anything; start a new chat with the history replayed rather than lose the conversation.
        // Only a failure that says so: any other (a limit, a login, "still stopping") is the
        // user's to see, and replaying would hide it.
        let lost = |f: &TurnFailure| !f.spoke && self.engine.chat_is_lost(&self.plan.chat, f);
        if self.plan.resumed && matches!(&drive, Drive::Ended(Err(f)) if lost(f)) {
            tracing::warn!(turn = %self.req.turn_id, "resume failed before any output; replaying into a new chat");
            if let Some(i) = self.incomplete.as_mut() {
                i.resume_failed = true;
            }
            self.plan_replay();
            self.announce().await;
            drive = self.drive().await;
        }
        drive
    }

    /// The agent waits inside the call, against its own deadline: answered now, whatever the
    /// slots say (`slots.rs`); a free slot is taken if there is one.
    async fn continue_parked(&mut self, continued: Continued<'a>) -> Drive {
        let Continued { parked: p, results, set } = continued;
        parked::answer(p.pending, &results);
        drop(p.waiting);
        match self.engine.slots.try_slot() {
            Some(slot) => p.running.slot.hold(slot),
            None => {
                tracing::info!(turn = %self.req.turn_id, "the turn goes on beyond maxConcurrent: its agent is mid-turn")
            }
        }
        parked::drive(p.running, &mut self.sink, set, true).await
    }

    /// One run of the plan the way the client's tools go: hosted, in a task of its own; else here.
    async fn drive(&mut self) -> Drive {
        match self.tools {
            ClientTools::Hosted(set) => self.attempt_hosted(set).await,
            ClientTools::None | ClientTools::Prompt(_) => {
                let spec = self.spec(&self.plan, None);
                Drive::Ended(self.attempt(spec).await)
            }
            ClientTools::Undecided(_) => unreachable!("the way of the client's tools is chosen before the turn runs"),
        }
    }

    /// What the backend runs for `plan`. Hosted tools are the agent's own, so nothing in the
    /// prompt says a call is required: a `required` (or named) choice is said before the prompt,
    /// as the prompt protocol says it. The answer's format, if any, goes after it.
    fn spec(&self, plan: &Plan, hosted_tools: Option<HostedTools>) -> TurnSpec {
        let mut prompt = match (self.tools, &hosted_tools) {
            (ClientTools::Hosted(set), Some(_)) if set.must_call() => {
                format!("{}\n\n{}", prompt_protocol::must_call_line(set), plan.prompt)
            }
            _ => plan.prompt.clone(),
        };
        if let Some(format) = &self.req.answer_format {
            prompt = format!("{prompt}\n\n{format}");
        }
        TurnSpec {
            model: plan.model.clone(),
            mode: plan.mode,
            workspace: self.workspace.clone(),
            chat: plan.chat.clone(),
            prompt,
            unattended: plan.unattended,
            idle: self.engine.config.idle(),
            hosted_tools,
            images: self.req.images.clone(),
        }
    }

    /// One run on the backend: wait for a slot, then [`Engine::run_watched`].
    async fn attempt(&mut self, spec: TurnSpec) -> std::result::Result<TurnEnd, TurnFailure> {
        let _slot = self.engine.free_slot(&self.req.turn_id).await?;
        self.engine.run_watched(spec, &mut self.sink, &self.activity, self.policy.as_deref()).await
    }

    /// Run the turn in a task of its own with the client's tools hosted by the backend, so it
    /// can outlive this request while the client runs them ([`parked`]).
    async fn attempt_hosted(&mut self, set: &ToolSet) -> Drive {
        let (calls_tx, calls_rx) = mpsc::channel(64);
        let (events_tx, events_rx) = mpsc::channel(256);
        let activity = Activity::new();
        let hosted = HostedTools { tools: set.offered().into_iter().cloned().collect(), calls: calls_tx };
        let spec = self.spec(&self.plan, Some(hosted));
        let (engine, turn_id, act) = (self.engine.clone(), self.req.turn_id.clone(), activity.clone());
        let policy = self.policy.clone();
        // The slot is shared with the engine, which gives it back while the turn is parked.
        let slot = crate::engine::slots::Held::default();
        let held = slot.clone();
        let task = tokio::spawn(
            async move {
                let mut sink = EventSink::new(events_tx, act.clone());
                if let Some(policy) = &policy {
                    sink.police_tools(policy.clone());
                }
                held.hold(engine.free_slot(&turn_id).await?);
                let end = engine.run_watched(spec, &mut sink, &act, policy.as_deref()).await;
                held.release();
                end
            }
            .in_current_span(),
        );
        let running = Running { task, events: events_rx, calls: calls_rx, activity, slot };
        parked::drive(running, &mut self.sink, set, false).await
    }

    /// The answer's text is held back while a call block may be starting (the prompt protocol).
    fn hold_text(&mut self, set: &ToolSet) {
        self.sink.hold_text(Box::new(Hold::new(set.must_call())));
    }

    /// The calls in the reply that just ended, checked against the tools; one repair prompt in
    /// the same chat when the block is broken or a required call is missing.
    pub(super) async fn read_calls(
        &mut self,
        set: &ToolSet,
        end: &mut TurnEnd,
    ) -> std::result::Result<Vec<calls::Parsed>, TurnFailure> {
        let mut repaired = false;
        loop {
            let block = self.sink.end_hold().await.and_then(|h| h.block().map(str::to_string));
            let problem = match block {
                Some(block) => match calls::parse_block(&block).and_then(|c| calls::validate(&c, set).map(|()| c)) {
                    Ok(mut found) => {
                        if !set.parallel {
                            found.truncate(1);
                        }
                        return Ok(found);
                    }
                    Err(why) => prompt_protocol::repair_prompt(&why),
                },
                None if set.must_call() => prompt_protocol::must_call_prompt(set),
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
            tracing::info!(turn = %self.req.turn_id, "the model's tool calls need a repair; asking again");
            let repair = Plan { chat: Chat::Resume(chat_id), prompt: problem, session: None, ..self.plan.clone() };
            self.hold_text(set);
            let mut spec = self.spec(&repair, None);
            // The chat has the images already.
            spec.images.clear();
            *end = self.attempt(spec).await?;
        }
    }
}

impl Engine {
    /// Wait for a turn slot, bounded like the turn itself.
    async fn free_slot(&self, turn: &str) -> Result<tokio::sync::OwnedSemaphorePermit> {
        let options = &self.config.settings;
        match tokio::time::timeout(self.config.turn_limit(), self.slots.slot(turn)).await {
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

    /// One run on the backend once it has its slot: until the backend ends, the agent has been
    /// silent for `idleTimeoutSeconds`, the turn took `requestTimeoutSeconds`, or `policy` saw
    /// one of the agent's own tools run.
    async fn run_watched(
        &self,
        spec: TurnSpec,
        sink: &mut EventSink,
        activity: &Activity,
        policy: Option<&ToolPolicy>,
    ) -> std::result::Result<TurnEnd, TurnFailure> {
        let options = &self.config.settings;
        // The agent's own name for it (the backend's words), as `doctor` has.
        let words = self.backend.words();
        activity.touch();
        let deadline = tokio::time::Instant::now() + self.config.turn_limit();
        let outcome = tokio::select! {
            outcome = self.backend.run_turn(spec, sink) => outcome,
            () = silent_for(activity, self.config.idle()) => Err(BridgeError::new(
                ErrorKind::Timeout,
                format!("The {} produced no output for {} s", words.name, options.idle_timeout_seconds),
            ).hint(TIMEOUT_HINT_IDLE).into()),
            () = tokio::time::sleep_until(deadline) => Err(BridgeError::new(
                ErrorKind::Timeout,
                format!("The turn took longer than {} s", options.request_timeout_seconds),
            ).hint(TIMEOUT_HINT_TURN).into()),
            what = policy_tripped(policy) => Err(policy_error(words, &what).into()),
        };
        // A tool that ran in the reply's last moments: the turn still fails.
        match policy.and_then(ToolPolicy::tripped_by_end) {
            Some(what) if outcome.is_ok() => Err(policy_error(words, &what).into()),
            _ => outcome,
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
}

/// An agent ran one of its own tools in client-tools mode, in its own words (`name`, `vendor`).
fn policy_error(words: &AgentWords, what: &str) -> BridgeError {
    let AgentWords { name, vendor, .. } = words;
    BridgeError::new(
        ErrorKind::ToolPolicy,
        format!("{vendor} ran one of its own tools ({what}) although only the client's tools are allowed; the turn was stopped"),
    )
    .hint(format!(
        "Report this with the log: this {name} build ignores the permissions cursor-bridge sets. \
         Meanwhile set `cursorBridge.tools` to `cursor` to let {vendor}'s agent work on its own."
    ))
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
