//! One prompt in a warm session: set the mode and model if they changed, send the user's message,
//! stream the session's updates as [`Event`]s, answer the agent's requests by policy, and tell a
//! failure from an answer (Cursor streams some errors as answer text and ends with `end_turn`,
//! docs/cursor-acp.md §6, §11). Dropping the turn cancels it (docs/cursor-acp.md §8.1): the
//! agent's pending requests are answered cancelled, `session/cancel` is sent, and the session is
//! kept if the agent answers `cancelled` within a grace, else its process tree is killed. Kept,
//! everything the agent came to run since its session's first turn is killed; at a normal end,
//! the jobs the turn's shells left behind ([`Agent::end_what_the_turn_started`]).

use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::OwnedMutexGuard;
use tokio::task::JoinHandle;

use super::agent::{cancelled_outcome, Agent, CONFIG_TIMEOUT};
use super::model_options::{Choice, ModelConfig};
use crate::backend::acp::connection::{Incoming, RpcError};
use crate::backend::acp::updates::Updates;
use crate::backend::contract::{TurnEnd, TurnFailure, TurnSpec};
use crate::backend::cursor::failures::classify;
use crate::backend::events::{Event, EventSink};
use crate::error::BridgeError;
use crate::vocab::{ErrorKind, Mode};

/// How long a cancelled turn's agent gets to answer `cancelled` before its tree is killed.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);
/// How often a running turn checks that its agent process still runs.
const EXIT_WATCH: Duration = Duration::from_millis(250);
/// After the agent exited mid-turn, how long what it wrote before may still take to arrive.
const EXIT_DRAIN: Duration = Duration::from_millis(500);
/// Transport drops the ACP session does not retry itself (docs/cursor-acp.md §6): retried here
/// while nothing of the answer has been shown.
const TRANSPORT_RETRIES: usize = 2;
const TRANSPORT_DROPS: &[&str] = &["ping timed out", "stream closed", "exceeded max retries", "econnreset"];
/// Answers that are errors in disguise start like one of these (docs/cursor-acp.md §6, §11):
/// text that may still become one is held back until it cannot.
const ERROR_OPENERS: &[&str] = &["Error:", "Upgrade your plan"];

pub const PERMISSION_HINT: &str = "Cursor asked for approval, which the bridge cannot give interactively. \
     To let agent mode run commands without asking, enable `cursorBridge.allowUnattended`.";

/// The slot a warm session lives in, locked by the turn that uses it.
pub type Slot = OwnedMutexGuard<Option<Agent>>;

/// What a turn leaves: the slot (`None` inside when the agent died or was killed) and the outcome.
pub async fn run(
    slot: Slot,
    spec: &TurnSpec,
    model: Option<&Choice>,
    sink: &mut EventSink,
) -> (Option<Slot>, Result<TurnEnd, TurnFailure>) {
    let mut running = Running { slot: Some(slot), prompt: None };
    let outcome = running.turn(spec, model, sink).await;
    let mut slot = running.slot.take();
    if let Some(agent) = slot.as_mut().and_then(|s| s.as_mut()) {
        agent.end_turn().await;
        agent.end_what_the_turn_started(false);
    }
    (slot, outcome)
}

struct Running {
    slot: Option<Slot>,
    prompt: Option<JoinHandle<(Result<Value, RpcError>, u64)>>,
}

impl Running {
    fn agent(&mut self) -> &mut Agent {
        self.slot.as_mut().and_then(|s| s.as_mut()).expect("a turn runs on a live agent")
    }

    async fn turn(
        &mut self,
        spec: &TurnSpec,
        model: Option<&Choice>,
        sink: &mut EventSink,
    ) -> Result<TurnEnd, TurnFailure> {
        if !spec.images.is_empty() && !self.agent().prompt_images {
            return Err(BridgeError::invalid_params(
                "this Cursor CLI's ACP mode does not take images (its `initialize` does not advertise \
                 `promptCapabilities.image`)",
            )
            .hint("Send text only, or update the Cursor CLI.")
            .into());
        }
        self.configure(spec.mode, model).await?;
        let mut inbox = self.agent().begin_turn();
        let session = self.agent().session_id.clone();
        let mut state = State::new(spec.unattended);
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
                            let drained = tokio::time::sleep(EXIT_DRAIN);
                            tokio::pin!(drained);
                            loop {
                                tokio::select! {
                                    biased;
                                    message = inbox.recv() => match message {
                                        Some(message) => state.handle(self.agent(), message, sink).await,
                                        None => break,
                                    },
                                    () = &mut drained => break,
                                }
                            }
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
            loop {
                tokio::select! {
                    biased;
                    message = inbox.recv() => match message {
                        Some(message) => state.handle(self.agent(), message, sink).await,
                        None => break,
                    },
                    () = self.agent().routed(mark) => {
                        while let Ok(message) = inbox.try_recv() {
                            state.handle(self.agent(), message, sink).await;
                        }
                        break;
                    }
                }
            }
            match answer {
                Ok(result) => return state.finish(self.agent(), &result, sink).await,
                Err(RpcError::Remote { code, message, .. })
                    if !state.spoke
                        && !client_called(self.agent())
                        && attempt < TRANSPORT_RETRIES
                        && is_transport_drop(&message) =>
                {
                    attempt += 1;
                    tracing::info!(
                        code,
                        attempt,
                        "the ACP turn lost its connection to Cursor before any output; retrying"
                    );
                    tokio::time::sleep(Duration::from_millis(300 * attempt as u64)).await;
                }
                Err(e) => return Err(state.failed(self.agent(), e).await),
            }
        }
    }

    /// Mode first (ask mode means no permission prompts), then the model and its selects
    /// (`None`: the session keeps its own).
    async fn configure(&mut self, mode: Mode, model: Option<&Choice>) -> Result<(), TurnFailure> {
        let agent = self.agent();
        let session = agent.session_id.clone();
        if agent.config.current_mode.as_deref() != Some(mode.as_str()) {
            let params = json!({"sessionId": session, "modeId": mode.as_str()});
            config_request(agent, "session/set_mode", params).await?;
            agent.config.current_mode = Some(mode.as_str().to_owned());
        }
        let Some(model) = model else { return Ok(()) };
        let mut sets: Vec<(&str, &str)> = Vec::new();
        if agent.config.current.as_deref() != Some(model.value.as_str()) {
            sets.push(("model", &model.value));
        }
        for (id, value) in &model.extras {
            let current = agent.config.extras.iter().find(|(e, _, _)| e == id).map(|(_, v, _)| v.as_str());
            if current != Some(value.as_str()) || !sets.is_empty() {
                sets.push((id, value));
            }
        }
        for (id, value) in sets {
            let params = json!({"sessionId": session, "configId": id, "value": value});
            let result = config_request(agent, "session/set_config_option", params).await?;
            let mode = agent.config.current_mode.clone();
            agent.config = ModelConfig::parse(&result);
            if agent.config.current_mode.is_none() {
                agent.config.current_mode = mode;
            }
            if id == "model" {
                agent.config.current = Some(value.to_owned());
            }
        }
        Ok(())
    }
}

impl Drop for Running {
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

async fn cancel(mut slot: Slot, mut prompt: JoinHandle<(Result<Value, RpcError>, u64)>) {
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

async fn config_request(agent: &Agent, method: &str, params: Value) -> Result<Value, TurnFailure> {
    match tokio::time::timeout(CONFIG_TIMEOUT, agent.conn.request(method, params)).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(RpcError::Remote { code: -32602, message, .. })) if method == "session/set_config_option" => {
            Err(BridgeError::new(ErrorKind::InvalidModel, format!("Cursor's ACP mode refused the model: {message}"))
                .hint(crate::backend::cursor::failures::HINT_MODEL)
                .into())
        }
        Ok(Err(e)) => Err(BridgeError::new(ErrorKind::CliFailed, format!("Cursor's ACP mode refused `{method}`: {e}"))
            .hint("See Cursor Bridge logs for details.")
            .into()),
        Err(_) => Err(BridgeError::new(
            ErrorKind::Timeout,
            format!("Cursor's ACP mode did not answer `{method}` within {} s", CONFIG_TIMEOUT.as_secs()),
        )
        .into()),
    }
}

/// Our MCP host handed one of the agent's calls to the client during this turn.
fn client_called(agent: &Agent) -> bool {
    agent.tools.as_ref().is_some_and(|h| h.called().load(std::sync::atomic::Ordering::SeqCst))
}

fn is_transport_drop(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    TRANSPORT_DROPS.iter().any(|p| lower.contains(p))
}

/// What the turn has seen and shown so far.
struct State {
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
    /// even if Cursor reports them `completed` (docs/cursor-acp.md §8.2).
    refused: std::collections::HashSet<String>,
}

impl State {
    fn new(unattended: bool) -> Self {
        State {
            updates: Updates::default(),
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
                let may_be_error =
                    start.is_empty() || ERROR_OPENERS.iter().any(|o| o.starts_with(start) || start.starts_with(o));
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

    async fn handle(&mut self, agent: &Agent, message: Incoming, sink: &mut EventSink) {
        match message {
            Incoming::Notification { method, params } => {
                if method == "session/update" {
                    if let Some(update) = params.get("update") {
                        if self.hosted && super::tools::is_ours(update) {
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
                // `cursor/update_todos`, `cursor/task`…: nothing a client shows today.
            }
            Incoming::Request { id, method, params } => match method.as_str() {
                "session/request_permission" => self.permission(agent, id, &params, sink).await,
                "cursor/create_plan" => {
                    // Plan mode's plan, as text the person can read; not accepted (accepting
                    // could start building it), so the agent ends the turn.
                    let plan = ["name", "overview", "plan"]
                        .iter()
                        .filter_map(|k| params.get(*k).and_then(Value::as_str))
                        .filter(|s| !s.trim().is_empty())
                        .collect::<Vec<_>>()
                        .join("\n\n");
                    if !plan.is_empty() {
                        let sep = if self.text.is_empty() { "" } else { "\n\n" };
                        self.emit(Event::Text(format!("{sep}{plan}")), sink).await;
                    }
                    agent.answer(id, cancelled_outcome()).await;
                }
                // A question only the person could answer: the bridge cannot ask it mid-turn.
                "cursor/ask_question" => agent.answer(id, cancelled_outcome()).await,
                _ => agent.refuse(id, -32601, "Method not found").await,
            },
        }
    }

    /// Policy: unattended (agent mode with `force`) allows once; otherwise reject once and say
    /// why, once per turn.
    async fn permission(&mut self, agent: &Agent, id: Value, params: &Value, sink: &mut EventSink) {
        let options = params.get("options").and_then(Value::as_array).cloned().unwrap_or_default();
        let pick = |kinds: &[&str]| {
            kinds.iter().find_map(|k| {
                options
                    .iter()
                    .find(|o| o.get("kind").and_then(Value::as_str) == Some(k))
                    .and_then(|o| o.get("optionId").cloned())
            })
        };
        let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
        // Client-tools mode: our server's tools are the client's, which it asks about itself;
        // nothing else is ever allowed.
        let ours = self.hosted && super::tools::is_ours(&call);
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
        let chosen =
            if allowed { pick(&["allow_once", "allow_always"]) } else { pick(&["reject_once", "reject_always"]) };
        let result = match chosen {
            Some(option) => json!({"outcome": {"outcome": "selected", "optionId": option}}),
            None => cancelled_outcome(),
        };
        agent.answer(id, result).await;
        if !ours && !self.unattended && !self.permission_told {
            self.permission_told = true;
            let kind = call.get("kind").and_then(Value::as_str).unwrap_or("tool");
            let tool = if kind == "execute" { "shell" } else { kind }.to_owned();
            let title = call.get("title").and_then(Value::as_str).unwrap_or("").trim_matches('`');
            let summary = crate::util::text::one_line(title, 120);
            self.emit(Event::PermissionDenied { tool, summary, hint: PERMISSION_HINT.into() }, sink).await;
        }
    }

    async fn finish(&mut self, agent: &Agent, result: &Value, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        for event in self.updates.finish() {
            self.emit(event, sink).await;
        }
        let stop = result.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn");
        if self.holding && !self.held.trim().is_empty() {
            let failure = classify(Some(0), "", Some(&self.held));
            let known = !matches!(failure.kind, ErrorKind::CliFailed | ErrorKind::Network)
                || ERROR_OPENERS.iter().any(|o| self.held.trim_start().starts_with(o));
            if known {
                let mut error: BridgeError = failure.into();
                if error.kind == ErrorKind::CliFailed {
                    error.message = crate::util::text::one_line(self.held.trim(), 300);
                }
                if self.held.contains("Upgrade your plan") {
                    error = BridgeError::new(ErrorKind::UsageLimit, "This model needs a higher Cursor plan.")
                        .hint("Pick another model, or upgrade your Cursor plan.");
                }
                return Err(TurnFailure {
                    error,
                    spoke: self.spoke,
                    chat_lost: false,
                    tools_not_hosted: false,
                    unstartable: false,
                });
            }
            // An ordinary answer that only looked like an error at first.
            self.holding = false;
            let held = std::mem::take(&mut self.held);
            self.spoke = true;
            sink.emit(Event::Text(held)).await;
        }
        if stop == "cancelled" {
            return Err(TurnFailure {
                error: BridgeError::new(ErrorKind::CliFailed, "The Cursor CLI cancelled the turn itself")
                    .hint("Try again."),
                spoke: self.spoke,
                chat_lost: false,
                tools_not_hosted: false,
                unstartable: false,
            });
        }
        let usage = result.get("usage").and_then(usage_of);
        Ok(TurnEnd { chat_id: Some(super::chat_id(&agent.session_id)), usage, final_text: self.text.clone() })
    }

    async fn failed(&mut self, agent: &mut Agent, e: RpcError) -> TurnFailure {
        let error = match e {
            RpcError::Remote { code: -32000, message, .. } => {
                classify(Some(1), "", Some(&format!("authentication required: {message}"))).into()
            }
            RpcError::Remote { code: -32602, message, .. } if message.contains("not found") => {
                // The session is gone from the agent: continue in a new one with the history.
                let lost = TurnFailure::chat_lost("Cursor no longer has this session");
                return TurnFailure { spoke: self.spoke, chat_lost: !self.spoke, ..lost };
            }
            RpcError::Remote { message, .. } if is_transport_drop(&message) => {
                BridgeError::new(ErrorKind::Network, "The connection to Cursor's servers dropped during the turn.")
                    .hint(crate::backend::cursor::failures::HINT_NETWORK)
                    .detail(crate::util::text::cut_chars(&message, 500).to_string())
            }
            RpcError::Remote { message, .. } => {
                let mut error: BridgeError = classify(Some(1), "", Some(&message)).into();
                if error.kind == ErrorKind::CliFailed {
                    error.message =
                        format!("Cursor's ACP mode failed the turn: {}", crate::util::text::one_line(&message, 200));
                }
                error
            }
            RpcError::Closed => {
                // The process died mid-turn: its stderr says why.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let stderr = agent.stderr_tail();
                let mut error: BridgeError = classify(Some(1), &stderr, None).into();
                if error.kind == ErrorKind::CliFailed {
                    error.message = "Cursor's ACP agent stopped during the turn".into();
                }
                error
            }
        };
        TurnFailure { error, spoke: self.spoke, chat_lost: false, tools_not_hosted: false, unstartable: false }
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

/// The prompt's content blocks: its text, then its images (ACP `image {data, mimeType}`).
fn prompt_blocks(spec: &TurnSpec) -> Vec<Value> {
    let mut blocks = vec![json!({"type": "text", "text": spec.prompt})];
    blocks.extend(spec.images.iter().map(|i| json!({"type": "image", "data": i.data, "mimeType": i.mime_type})));
    blocks
}
