//! One prompt in a warm session: send the user's message, stream the session's updates as
//! [`Event`]s, answer the agent's requests by policy (permissions; the agent's extension requests
//! as its [`AgentQuirks`] says), and tell a failure from an answer (an agent may stream errors as
//! answer text and end with `end_turn`, as Cursor does, docs/cursor-acp.md §6, §11: text that may
//! be one is held back). The session's mode and model are set before, by the agent's backend. Dropping the turn cancels it (docs/cursor-acp.md §8.1): the
//! agent's pending requests are answered cancelled, `session/cancel` is sent, and the session is
//! kept if the agent answers `cancelled` within a grace, else its process tree is killed. Kept,
//! everything the agent came to run since its session's first turn is killed; at a normal end,
//! the jobs the turn's shells left behind ([`Agent::end_what_the_turn_started`]).

use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::OwnedMutexGuard;
use tokio::task::JoinHandle;

use super::agent::{Agent, SessionConfig};
use super::connection::{Incoming, RpcError};
use super::quirks::{AgentQuirks, TurnError};
use super::router::permission_answer;
use super::updates::Updates;
use crate::backend::contract::{TurnEnd, TurnFailure, TurnSpec};
use crate::backend::events::{Event, EventSink};

/// How long a cancelled turn's agent gets to answer `cancelled` before its tree is killed.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);
/// How often a running turn checks that its agent process still runs.
const EXIT_WATCH: Duration = Duration::from_millis(250);
/// After the agent exited mid-turn, how long what it wrote before may still take to arrive.
const EXIT_DRAIN: Duration = Duration::from_millis(500);
/// Transport drops the agent's session does not retry itself
/// ([`AgentQuirks::is_transport_drop`]): retried here while nothing of the answer has been shown.
const TRANSPORT_RETRIES: usize = 2;

/// The slot a warm session lives in, locked by the turn that uses it.
pub type Slot<C> = OwnedMutexGuard<Option<Agent<C>>>;

/// What a turn leaves: the slot (`None` inside when the agent died or was killed) and the
/// outcome; its `chat_id` is the agent's session id.
pub async fn run<C: SessionConfig + 'static>(
    slot: Slot<C>,
    spec: &TurnSpec,
    sink: &mut EventSink,
) -> (Option<Slot<C>>, Result<TurnEnd, TurnFailure>) {
    let mut running = Running { slot: Some(slot), prompt: None };
    let outcome = running.turn(spec, sink).await;
    let mut slot = running.slot.take();
    if let Some(agent) = slot.as_mut().and_then(|s| s.as_mut()) {
        agent.end_turn().await;
        agent.end_what_the_turn_started(false);
    }
    (slot, outcome)
}

struct Running<C: SessionConfig + 'static> {
    slot: Option<Slot<C>>,
    prompt: Option<JoinHandle<(Result<Value, RpcError>, u64)>>,
}

impl<C: SessionConfig + 'static> Running<C> {
    fn agent(&mut self) -> &mut Agent<C> {
        self.slot.as_mut().and_then(|s| s.as_mut()).expect("a turn runs on a live agent")
    }

    async fn turn(&mut self, spec: &TurnSpec, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        let mut inbox = self.agent().begin_turn();
        let session = self.agent().session_id.clone();
        let mut state = State::new(spec.unattended, self.agent().quirks());
        state.hosted = spec.hosted_tools.is_some();
        let mut attempt = 0;
        loop {
            let conn = self.agent().conn.clone();
            let params = json!({"sessionId": session, "prompt": prompt_blocks(spec)});
            self.prompt = Some(tokio::spawn(async move { conn.request_marked("session/prompt", params).await }));
            // The agent's output can outlive the agent (a tool's process holding its stdout):
            // its exit is watched as well.
            let mut watch = tokio::time::interval(EXIT_WATCH);
            let (answer, mark) = loop {
                let prompt = self.prompt.as_mut().expect("set above");
                tokio::select! {
                    biased;
                    message = inbox.recv() => match message {
                        Some(message) => {
                            sink.alive();
                            state.handle(self.agent(), message, sink).await;
                        }
                        // The agent's output ended; the prompt's answer will say Closed.
                        None => break prompt.await.unwrap_or((Err(RpcError::Closed), 0)),
                    },
                    r = &mut *prompt => break r.unwrap_or((Err(RpcError::Closed), 0)),
                    _ = watch.tick() => {
                        if !self.agent().alive() {
                            tracing::debug!("the ACP agent exited during the turn");
                            // What it wrote before it died may still be on its way through the
                            // pipe: take it until its output ends (bounded: a tool's process
                            // may hold the pipe open), so no text it sent is lost.
                            let deadline = tokio::time::Instant::now() + EXIT_DRAIN;
                            let agent: &Agent<C> = self.agent();
                            handle_until(agent, &mut inbox, &mut state, sink, || tokio::time::sleep_until(deadline))
                                .await;
                            break (Err(RpcError::Closed), 0);
                        }
                    }
                }
            };
            if let Some(prompt) = self.prompt.take() {
                prompt.abort(); // finished, or its agent is gone
            }
            // The answer overtakes the updates sent before it: handle those first (they are
            // this turn's last text).
            let agent: &Agent<C> = self.agent();
            handle_until(agent, &mut inbox, &mut state, sink, || agent.routed(mark)).await;
            match answer {
                Ok(result) => return state.finish(self.agent(), &result, sink).await,
                Err(RpcError::Remote { code, message, .. })
                    if !state.spoke
                        && !client_called(self.agent())
                        && attempt < TRANSPORT_RETRIES
                        && state.quirks.is_transport_drop(&message) =>
                {
                    attempt += 1;
                    tracing::info!(code, attempt, "the ACP turn lost its connection before any output; retrying");
                    tokio::time::sleep(Duration::from_millis(300 * attempt as u64)).await;
                }
                Err(e) => return Err(state.failed(self.agent(), e).await),
            }
        }
    }
}

impl<C: SessionConfig + 'static> Drop for Running<C> {
    fn drop(&mut self) {
        // Dropped with the prompt outstanding: the turn was cancelled (Stop, a timeout, a client
        // that went away).
        match (self.slot.take(), self.prompt.take()) {
            (Some(slot), Some(prompt)) => drop(tokio::spawn(cancel(slot, prompt))),
            // Stopped between prompts (a retry's pause, the updates drained after the answer):
            // nothing to cancel, but what the turn started ends all the same.
            (Some(mut slot), None) => {
                if let Some(agent) = slot.as_mut() {
                    agent.end_what_the_turn_started(true);
                }
            }
            _ => {}
        }
    }
}

/// Handle the agent's messages until its output ends or `until()` (made anew for each message)
/// is ready, then those queued already.
async fn handle_until<C: SessionConfig, F: std::future::Future<Output = ()>>(
    agent: &Agent<C>,
    inbox: &mut tokio::sync::mpsc::Receiver<Incoming>,
    state: &mut State,
    sink: &mut EventSink,
    mut until: impl FnMut() -> F,
) {
    loop {
        tokio::select! {
            biased;
            message = inbox.recv() => match message {
                Some(message) => state.handle(agent, message, sink).await,
                None => break,
            },
            () = until() => {
                while let Ok(message) = inbox.try_recv() {
                    state.handle(agent, message, sink).await;
                }
                break;
            }
        }
    }
}

async fn cancel<C: SessionConfig + 'static>(mut slot: Slot<C>, mut prompt: JoinHandle<(Result<Value, RpcError>, u64)>) {
    let Some(agent) = slot.as_mut() else { return };
    let session = agent.session_id.clone();
    agent.end_turn().await;
    let _ = agent.conn.notify("session/cancel", json!({"sessionId": session})).await;
    let stopped = tokio::time::timeout(CANCEL_GRACE, &mut prompt).await;
    match stopped {
        Ok(Ok((Ok(result), _))) => {
            let reason = result.get("stopReason").and_then(Value::as_str).unwrap_or("");
            tracing::debug!(reason, pid = agent.pid(), "the cancelled ACP turn stopped; the session stays warm");
            // The agent stopped its turn, not necessarily what the turn started.
            agent.end_what_the_turn_started(true);
        }
        _ => {
            prompt.abort();
            tracing::info!(pid = agent.pid(), "the cancelled ACP turn did not stop in time; its process is killed");
            *slot = None; // dropping the agent kills its process tree
        }
    }
}

/// Our MCP host handed one of the agent's calls to the client during this turn.
fn client_called<C: SessionConfig>(agent: &Agent<C>) -> bool {
    agent.tools.as_ref().is_some_and(|h| h.called().load(std::sync::atomic::Ordering::SeqCst))
}

/// What the turn has seen and shown so far.
struct State {
    quirks: &'static dyn AgentQuirks,
    updates: Updates,
    unattended: bool,
    /// Something reached the client.
    spoke: bool,
    /// The whole answer text, for the engine's check and the error-text test.
    text: String,
    /// Text not shown yet because it may be an error in disguise.
    held: String,
    holding: bool,
    permission_told: bool,
    /// The client's tools are hosted for this turn: calls of our server are the client's, not
    /// the agent's own tool activity, and only they are allowed.
    hosted: bool,
    ours: std::collections::HashSet<String>,
    /// Calls of the agent's own tools whose permission request was refused: they did not run,
    /// even if the agent reports them `completed` (Cursor does, docs/cursor-acp.md §8.2).
    refused: std::collections::HashSet<String>,
}

impl State {
    fn new(unattended: bool, quirks: &'static dyn AgentQuirks) -> Self {
        State {
            quirks,
            updates: Updates::new(quirks),
            unattended,
            spoke: false,
            text: String::new(),
            held: String::new(),
            holding: true,
            permission_told: false,
            hosted: false,
            ours: Default::default(),
            refused: Default::default(),
        }
    }

    async fn emit(&mut self, mut event: Event, sink: &mut EventSink) {
        if let Event::ToolStarted { call_id, .. } | Event::ToolCompleted { call_id, .. } = &event {
            if self.ours.contains(call_id) {
                // The client sees these as its own tool calls (the engine's `ToolCall`). Still
                // output: the client may run the tool, so the prompt is never sent again.
                self.spoke = true;
                return;
            }
        }
        if let Event::ToolCompleted { call_id, ok, rejected, .. } = &mut event {
            if self.refused.contains(call_id.as_str()) {
                (*ok, *rejected) = (false, true);
            }
        }
        if let Event::Text(t) = &event {
            self.text.push_str(t);
            if self.holding {
                self.held.push_str(t);
                let start = self.held.trim_start();
                let may_be_error = start.is_empty() || self.quirks.may_become_error_text(start);
                if may_be_error {
                    return;
                }
                self.holding = false;
                let held = std::mem::take(&mut self.held);
                self.spoke = true;
                sink.emit(Event::Text(held)).await;
                return;
            }
        }
        self.spoke = true;
        sink.emit(event).await;
    }

    async fn handle<C: SessionConfig>(&mut self, agent: &Agent<C>, message: Incoming, sink: &mut EventSink) {
        match message {
            Incoming::Notification { method, params } => {
                if method == "session/update" {
                    if let Some(update) = params.get("update") {
                        if self.hosted && self.quirks.is_our_tool_call(update) {
                            if let Some(id) = update.get("toolCallId").and_then(Value::as_str) {
                                // Its start may have been reported before a later update named
                                // it ours (Cursor's first one says only "MCP: tool").
                                self.ours.insert(id.to_string());
                                sink.disown(id);
                            }
                        }
                        for event in self.updates.events(update) {
                            self.emit(event, sink).await;
                        }
                    }
                }
                // The agent's own notifications (Cursor's `cursor/update_todos`, `cursor/task`…):
                // nothing a client shows today.
            }
            Incoming::Request { id, method, params } => match method.as_str() {
                "session/request_permission" => self.permission(agent, id, &params, sink).await,
                _ => match self.quirks.extension_request(&method, &params) {
                    Some(answer) => {
                        if let Some(text) = answer.show.filter(|t| !t.is_empty()) {
                            let sep = if self.text.is_empty() { "" } else { "\n\n" };
                            self.emit(Event::Text(format!("{sep}{text}")), sink).await;
                        }
                        agent.answer(id, answer.result).await;
                    }
                    None => agent.refuse(id, -32601, "Method not found").await,
                },
            },
        }
    }

    /// Policy: unattended (agent mode with `force`) allows once; otherwise reject once and say
    /// why, once per turn.
    async fn permission<C: SessionConfig>(
        &mut self,
        agent: &Agent<C>,
        id: Value,
        params: &Value,
        sink: &mut EventSink,
    ) {
        let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
        // Client-tools mode: our server's tools are the client's, which it asks about itself;
        // nothing else is ever allowed.
        let ours = self.hosted && self.quirks.is_our_tool_call(&call);
        let call_id = call.get("toolCallId").and_then(Value::as_str);
        let allowed = ours || (self.unattended && !self.hosted);
        match call_id {
            Some(id) if ours => {
                self.ours.insert(id.to_string());
                sink.disown(id);
            }
            Some(id) if !allowed => {
                self.refused.insert(id.to_string());
                sink.refused(id);
            }
            _ => {}
        }
        let kinds: &[&str] = if allowed { &["allow_once", "allow_always"] } else { &["reject_once", "reject_always"] };
        agent.answer(id, permission_answer(params, kinds)).await;
        if !ours && !self.unattended && !self.permission_told {
            self.permission_told = true;
            let kind = call.get("kind").and_then(Value::as_str).unwrap_or("tool");
            let tool = if kind == "execute" { "shell" } else { kind }.to_owned();
            let title = call.get("title").and_then(Value::as_str).unwrap_or("").trim_matches('`');
            let summary = crate::util::text::one_line(title, 120);
            self.emit(Event::PermissionDenied { tool, summary, hint: self.quirks.permission_hint().into() }, sink)
                .await;
        }
    }

    async fn finish<C: SessionConfig>(
        &mut self,
        agent: &Agent<C>,
        result: &Value,
        sink: &mut EventSink,
    ) -> Result<TurnEnd, TurnFailure> {
        for event in self.updates.finish() {
            self.emit(event, sink).await;
        }
        let stop = result.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn");
        if self.holding && !self.held.trim().is_empty() {
            if let Some(error) = self.quirks.answer_is_error(&self.held) {
                return Err(self.failure(error));
            }
            // An ordinary answer that only looked like an error at first.
            self.holding = false;
            let held = std::mem::take(&mut self.held);
            self.spoke = true;
            sink.emit(Event::Text(held)).await;
        }
        if stop == "cancelled" {
            return Err(self.failure(self.quirks.turn_error(TurnError::CancelledByAgent)));
        }
        let usage = result.get("usage").and_then(usage_of);
        Ok(TurnEnd { chat_id: Some(agent.session_id.clone()), usage, final_text: self.text.clone() })
    }

    fn failure(&self, error: crate::error::BridgeError) -> TurnFailure {
        TurnFailure { error, spoke: self.spoke, chat_lost: false, tools_not_hosted: false, unstartable: false }
    }

    async fn failed<C: SessionConfig>(&mut self, agent: &mut Agent<C>, e: RpcError) -> TurnFailure {
        let error = match e {
            RpcError::Remote { code: -32602, message, .. } if message.contains("not found") => {
                // The session is gone from the agent: continue in a new one with the history.
                let lost = TurnFailure::chat_lost(self.quirks.turn_error(TurnError::SessionGone).message);
                return TurnFailure { spoke: self.spoke, chat_lost: !self.spoke, ..lost };
            }
            RpcError::Remote { code, message, .. } => {
                self.quirks.turn_error(TurnError::PromptFailed { code, message: &message })
            }
            RpcError::Closed => {
                // The process died mid-turn: its stderr says why.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let stderr = agent.stderr_tail();
                self.quirks.turn_error(TurnError::AgentExited { stderr: &stderr })
            }
        };
        self.failure(error)
    }
}

/// Token counts, where an agent reports them (an unstable field of the prompt response).
fn usage_of(v: &Value) -> Option<crate::vocab::Usage> {
    let n = |keys: &[&str]| keys.iter().find_map(|k| v.get(*k).and_then(Value::as_u64));
    let input = n(&["inputTokens", "input_tokens"])?;
    let output = n(&["outputTokens", "output_tokens"]).unwrap_or(0);
    let cached = n(&["cachedReadTokens", "cacheReadTokens", "cache_read_tokens"]).unwrap_or(0);
    let written = n(&["cachedWriteTokens", "cacheWriteTokens", "cache_write_tokens"]).unwrap_or(0);
    Some(crate::vocab::Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cached,
        cache_write_tokens: written,
        reasoning_tokens: n(&["thoughtTokens", "thought_tokens"]),
    })
}

/// The prompt's content blocks: its text, then its images (ACP `image {data, mimeType}`; the
/// backend checked the agent takes them).
fn prompt_blocks(spec: &TurnSpec) -> Vec<Value> {
    let mut blocks = vec![json!({"type": "text", "text": spec.prompt})];
    blocks.extend(spec.images.iter().map(|i| json!({"type": "image", "data": i.data, "mimeType": i.mime_type})));
    blocks
}
