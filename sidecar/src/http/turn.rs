//! One request as one engine turn (`Engine::turn`), whatever the dialect: its events are either
//! collected into one answer or handed to the dialect's [`Encoder`] as SSE events while they
//! arrive. Each dialect owns only its wire: how a request maps onto the engine's messages and
//! tools (its `request.rs`), and how events are written back. Also what every answer carries:
//! the session headers, ids and creation time.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::checks::Prepared;
use super::errors::ApiError;
use super::structured;
use super::HttpState;
use crate::engine::{Event as TurnEvent, TurnOutcome, TurnRequest};
use crate::error::BridgeError;
use crate::util::sync::AbortOnDrop;
use crate::vocab::{ChatMessage, Role, ToolCall, Usage};

/// Deltas buffered between the engine and the HTTP writer; a slow client slows the turn.
const DELTA_BUFFER: usize = 256;
/// SSE comments while the model is silent: proxies keep the connection, and a client that went
/// away is noticed by the failed write even when the CLI says nothing for a while.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

pub fn session_headers(response: &mut Response, session: Option<&(String, bool)>) {
    if let Some((id, resumed)) = session {
        if let Ok(v) = HeaderValue::from_str(id) {
            response.headers_mut().insert("x-cursor-bridge-session", v);
        }
        response
            .headers_mut()
            .insert("x-cursor-bridge-resumed", HeaderValue::from_static(if *resumed { "true" } else { "false" }));
    }
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// An id of ours with a dialect's prefix (`resp_`, `msg_`, `fc_`, …).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{:016x}{:08x}", crate::util::ids::random_u64(), crate::util::ids::random_u64() as u32)
}

/// Logs, in the request's span, that a client went away before its turn ended (the turn is
/// dropped with the request, and its CLI with it), unless disarmed when the turn ends.
struct Hangup {
    span: tracing::Span,
    armed: bool,
}

impl Hangup {
    fn new() -> Self {
        Hangup { span: tracing::Span::current(), armed: true }
    }
}

impl Drop for Hangup {
    fn drop(&mut self) {
        if self.armed {
            self.span.in_scope(|| {
                tracing::info!(
                    "the request ended before its turn (client gone or server stopping); turn and CLI stopped"
                )
            });
        }
    }
}

/// What a `required` or named tool choice demands, for the error when the turn ends without it.
fn demanded(params: &TurnRequest) -> Option<String> {
    let set = params.tools.as_ref().filter(|t| t.must_call())?;
    Some(match &set.choice {
        crate::vocab::ToolChoice::Named(name) => format!("a call of `{name}`"),
        _ => "a tool call".into(),
    })
}

/// A turn that ended without the call its tool choice demands (the engine has asked the model
/// once more by then) fails: an answer with `finish_reason: "stop"` would tell the client the
/// model complied. 502: the model, not the request, fell short.
fn enforce(outcome: TurnOutcome, demanded: Option<&str>) -> Result<TurnOutcome, ApiError> {
    match demanded {
        Some(what) if !outcome.tool_calls => Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "api_error",
            format!(
                "The model answered without {what}, which the request's `tool_choice` requires (it was asked twice). \
                 Try again, or let the model choose (`auto`)."
            ),
        )
        .code("tool_call_required")),
        _ => Ok(outcome),
    }
}

/// A whole turn's answer (`stream: false`).
#[derive(Debug, Default)]
pub struct Collected {
    pub text: String,
    pub thinking: String,
    pub session: Option<(String, bool)>,
    pub calls: Vec<ToolCall>,
}

/// `stream: false`: run the turn here (a client that hangs up drops this future, and with it the
/// CLI), collecting its deltas alongside. With a format, the answer is checked: one that does
/// not fit is asked for again in the same chat (the conversation with the answer and what was
/// wrong with it: the engine resumes the chat and sends only that), and a second miss fails.
pub async fn collect(state: &Arc<HttpState>, turn: Prepared) -> Result<(Collected, TurnOutcome), ApiError> {
    let Prepared { params, format } = turn;
    let Some(format) = format else { return collect_once(state, params).await };
    let (mut got, outcome) = collect_once(state, params.clone()).await?;
    if outcome.tool_calls {
        // Calls of the client's tools are the answer this time; the format holds for the text.
        return Ok((got, outcome));
    }
    let why = match format.check(&got.text) {
        Ok(json) => {
            got.text = json;
            return Ok((got, outcome));
        }
        Err(why) => why,
    };
    tracing::info!(turn = %params.turn_id, "the answer does not fit the requested format; asking again");
    let mut again = params;
    again.turn_id.push_str("-format");
    // The chat has the images already.
    again.images.clear();
    again.messages.push(ChatMessage::new(Role::Assistant, std::mem::take(&mut got.text)));
    again.messages.push(ChatMessage::new(Role::User, structured::repair_prompt(&why)));
    let (mut second, repaired) = collect_once(state, again).await?;
    second.thinking =
        [got.thinking, second.thinking].into_iter().filter(|t| !t.is_empty()).collect::<Vec<_>>().join("\n\n");
    let usage = match (outcome.usage, repaired.usage) {
        (Some(a), Some(b)) => Some(add_usage(a, b)),
        _ => None,
    };
    let outcome = TurnOutcome { usage, ..repaired };
    if outcome.tool_calls {
        return Ok((second, outcome));
    }
    match format.check(&second.text) {
        Ok(json) => {
            second.text = json;
            Ok((second, outcome))
        }
        Err(why) => Err(structured::invalid(&why)),
    }
}

/// Both runs' counts, when the answer was asked for twice.
fn add_usage(a: Usage, b: Usage) -> Usage {
    Usage {
        input_tokens: a.input_tokens + b.input_tokens,
        output_tokens: a.output_tokens + b.output_tokens,
        cache_read_tokens: a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens: a.cache_write_tokens + b.cache_write_tokens,
        reasoning_tokens: match (a.reasoning_tokens, b.reasoning_tokens) {
            (None, None) => None,
            (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
        },
    }
}

async fn collect_once(state: &Arc<HttpState>, params: TurnRequest) -> Result<(Collected, TurnOutcome), ApiError> {
    let mut hangup = Hangup::new();
    let demanded = demanded(&params);
    let (tx, mut rx) = mpsc::channel(DELTA_BUFFER);
    let turn = state.engine.turn(params, tx);
    let gather = async {
        let mut got = Collected::default();
        while let Some(delta) = rx.recv().await {
            match delta {
                TurnEvent::Text(t) => got.text.push_str(&t),
                TurnEvent::Thinking(t) => got.thinking.push_str(&t),
                TurnEvent::Session { session_id, resumed, .. } => got.session = Some((session_id, resumed)),
                TurnEvent::ToolCall { call_id, name, input } => got.calls.push(ToolCall { call_id, name, input }),
                _ => {}
            }
        }
        got
    };
    let (result, got) = tokio::join!(turn, gather);
    hangup.armed = false;
    Ok((got, enforce(result?, demanded.as_deref())?))
}

/// A dialect's SSE writer: the events it sends at the start, for each turn event, and at the end.
/// The CLI's own tool activity has no place in these streams (the client could not run those
/// tools); the answer describes what it did. Encoders see text, thinking and calls of the
/// client's tools.
pub trait Encoder: Send + 'static {
    fn start(&mut self) -> Vec<Event>;
    fn event(&mut self, event: TurnEvent) -> Vec<Event>;
    fn end(&mut self, outcome: Result<TurnOutcome, ApiError>) -> Vec<Event>;
}

/// `stream: true`. The turn runs in its own task, owned by the response stream. The status line
/// is held back until the turn has produced something (or ended), so failures that happen before
/// any output (unknown model, rate limit, CLI logged out, …) still get their proper HTTP status
/// (the dialect's error body); a failure after that is the encoder's to write as an event.
///
/// With a format, nothing is streamed before the answer is checked (and repaired): the whole
/// answer is collected, then written as the dialect's events at once; an answer that still
/// does not fit is an error status, not a stream.
pub async fn stream<E: Encoder>(state: &Arc<HttpState>, turn: Prepared, encoder: E) -> Result<Response, ApiError> {
    if turn.format.is_some() {
        let (got, outcome) = collect(state, turn).await?;
        return Ok(replay(encoder, got, outcome));
    }
    let params = turn.params;
    let mut hangup = Hangup::new();
    let demanded = demanded(&params);
    let (tx, mut rx) = mpsc::channel(DELTA_BUFFER);
    let engine = state.engine.clone();
    let mut turn = tokio::spawn(async move { engine.turn(params, tx).await }.in_current_span());
    let abort = AbortOnDrop(turn.abort_handle());

    let mut session = None;
    let first = loop {
        match rx.recv().await {
            Some(TurnEvent::Session { session_id, resumed, .. }) => session = Some((session_id, resumed)),
            Some(delta) => break Some(delta),
            None => break None,
        }
    };
    let mut finished = None;
    if first.is_none() {
        // The turn ended without output (its channel closed): a failure gets a status code.
        let outcome = join_turn(&mut turn).await;
        hangup.armed = false;
        finished = Some(enforce(outcome?, demanded.as_deref())?);
    }
    let mut events = Events {
        rx,
        turn: Some(turn),
        finished,
        hangup,
        _abort: abort,
        encoder,
        queue: VecDeque::new(),
        done: false,
        demanded,
    };
    let start = events.encoder.start();
    events.queue.extend(start);
    if let Some(delta) = first {
        let more = events.encoder.event(delta);
        events.queue.extend(more);
    }
    let stream = futures_util::stream::unfold(events, |mut events| async move {
        events.next().await.map(|event| (Ok::<_, Infallible>(event), events))
    });
    let mut response = Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    session_headers(&mut response, session.as_ref());
    Ok(response)
}

/// A collected turn written as one stream's events, all at once.
fn replay<E: Encoder>(mut encoder: E, got: Collected, outcome: TurnOutcome) -> Response {
    let mut events = encoder.start();
    if !got.thinking.is_empty() {
        events.extend(encoder.event(TurnEvent::Thinking(got.thinking)));
        events.extend(encoder.event(TurnEvent::ThinkingDone));
    }
    if !got.text.is_empty() {
        events.extend(encoder.event(TurnEvent::Text(got.text)));
    }
    for ToolCall { call_id, name, input } in got.calls {
        events.extend(encoder.event(TurnEvent::ToolCall { call_id, name, input }));
    }
    events.extend(encoder.end(Ok(outcome)));
    let stream = futures_util::stream::iter(events.into_iter().map(Ok::<_, Infallible>));
    let mut response = Sse::new(stream).into_response();
    session_headers(&mut response, got.session.as_ref());
    response
}

async fn join_turn(turn: &mut JoinHandle<Result<TurnOutcome, BridgeError>>) -> Result<TurnOutcome, ApiError> {
    match turn.await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(e)) => Err(e.into()),
        Err(e) => {
            tracing::error!(error = %e, "the turn's task failed");
            Err(ApiError::internal("The turn failed unexpectedly; the server log has details."))
        }
    }
}

/// The SSE events of one streamed turn, produced as its deltas arrive.
struct Events<E> {
    rx: mpsc::Receiver<TurnEvent>,
    turn: Option<JoinHandle<Result<TurnOutcome, BridgeError>>>,
    /// The turn's outcome, when it was already known before the stream started.
    finished: Option<TurnOutcome>,
    hangup: Hangup,
    _abort: AbortOnDrop,
    encoder: E,
    queue: VecDeque<Event>,
    done: bool,
    demanded: Option<String>,
}

impl<E: Encoder> Events<E> {
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            match self.rx.recv().await {
                Some(TurnEvent::Session { .. }) => {}
                Some(delta) => {
                    let events = self.encoder.event(delta);
                    self.queue.extend(events);
                }
                None => self.finish().await,
            }
        }
    }

    async fn finish(&mut self) {
        self.done = true;
        let outcome = match (self.finished.take(), self.turn.as_mut()) {
            (Some(result), _) => Ok(result),
            (None, Some(turn)) => join_turn(turn).await.and_then(|o| enforce(o, self.demanded.as_deref())),
            (None, None) => Err(ApiError::internal("The turn ended twice.")),
        };
        self.hangup.armed = false;
        if let Err(e) = &outcome {
            tracing::info!(status = e.status.as_u16(), error = %e.message, "stream ended with an error");
        }
        let events = self.encoder.end(outcome);
        self.queue.extend(events);
    }
}

/// An SSE event with data only (chat completions' chunks).
pub fn data_event<T: serde::Serialize>(value: &T) -> Event {
    Event::default().data(serde_json::to_string(value).unwrap_or_default())
}

/// An SSE event with its type on the `event:` line too (Responses and Anthropic streams).
pub fn typed_event<T: serde::Serialize>(kind: &str, value: &T) -> Event {
    Event::default().event(kind).data(serde_json::to_string(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_demanded_call_that_never_came_fails_the_turn() {
        let outcome = |tool_calls| TurnOutcome {
            session_id: None,
            resumed: false,
            replayed: false,
            usage: None,
            duration_ms: 0,
            tool_calls,
        };
        assert!(enforce(outcome(false), None).is_ok());
        assert!(enforce(outcome(true), Some("a tool call")).is_ok());
        let e = enforce(outcome(false), Some("a call of `get_weather`")).unwrap_err();
        assert_eq!((e.status.as_u16(), e.code.as_deref()), (502, Some("tool_call_required")));
        assert!(e.message.contains("without a call of `get_weather`"), "{}", e.message);
    }
}
