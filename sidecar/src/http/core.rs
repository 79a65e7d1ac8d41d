//! What every dialect's route shares (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`): a
//! request becomes one engine turn (`Engine::turn`, the same `TurnRequest` whoever asks), whose
//! events are either collected into one answer or handed to the dialect's `Encoder` as SSE events
//! while they arrive. Each dialect owns only its wire: how a request maps onto the engine's
//! messages and tools, and how events are written back.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::errors::ApiError;
use super::structured::{self, Format};
use super::{HttpState, MAX_BODY};
use crate::engine::tools::ToolSet;
use crate::engine::{Event as TurnEvent, TurnOutcome, TurnRequest};
use crate::error::BridgeError;
use crate::util::sync::AbortOnDrop;
use crate::vocab::{ChatMessage, Mode, ModelInfo, Role, ToolCall, Usage};

/// Deltas buffered between the engine and the HTTP writer; a slow client slows the turn.
const DELTA_BUFFER: usize = 256;
/// SSE comments while the model is silent: proxies keep the connection, and a client that went
/// away is noticed by the failed write even when the CLI says nothing for a while.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// A web page may send a cross-origin POST without asking first only with a "simple" content
/// type (text/plain, forms); insisting on JSON means a page cannot start turns on this machine.
/// What every route does around its own work: refuse a body that is not JSON, name the caller
/// (its key, hashed), and render a refusal in the route's dialect (`render`), logged as `what`.
pub async fn answer<F, Fut>(headers: &HeaderMap, what: &str, render: fn(ApiError) -> Response, respond: F) -> Response
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = Result<Response, ApiError>>,
{
    if !is_json(headers) {
        return render(not_json());
    }
    match respond(owner_of(headers)).await {
        Ok(response) => response,
        Err(e) => {
            tracing::info!(status = e.status.as_u16(), error = %e.message, "{what} refused");
            render(e)
        }
    }
}

pub fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let media = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

pub fn not_json() -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "invalid_request_error",
        "The request body must be JSON, sent with `Content-Type: application/json`.",
    )
    .code("unsupported_media_type")
}

/// Who is asking, for tool calls and stored responses: a hash of the key the client presented
/// (a turn parked for one key's calls is never continued by another), or `anonymous` without one.
/// Anthropic's clients send theirs as `x-api-key`.
pub fn owner_of(headers: &HeaderMap) -> String {
    let key = headers.get(axum::http::header::AUTHORIZATION).or_else(|| headers.get("x-api-key"));
    match key.and_then(|v| v.to_str().ok()) {
        Some(value) => format!("key-{:016x}", crate::util::text::fnv1a(value)),
        None => "anonymous".into(),
    }
}

/// The body as JSON of type `T`, or a 400 (413) that says what is wrong with it.
pub fn parse_body<T: serde::de::DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let body = body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::body_too_large(MAX_BODY),
        _ => ApiError::bad_request(format!("Could not read the request body: {}", rejection.body_text())),
    })?;
    serde_json::from_slice(&body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            ApiError::bad_request(format!("We could not parse the JSON body of your request: {e}"))
        } else {
            ApiError::bad_request(format!("Invalid request body: {e}"))
        }
    })
}

/// What a dialect's request comes to, in the engine's terms.
#[derive(Debug)]
pub struct TurnAsk {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub mode: Option<Mode>,
    pub tools: Option<ToolSet>,
    /// A structured answer's format (`structured.rs`).
    pub format: Option<Format>,
    /// The new user message's images.
    pub images: Vec<crate::vocab::Image>,
}

/// A checked ask: the engine's request, and the format its answer is held to.
#[derive(Debug)]
pub struct Prepared {
    pub params: TurnRequest,
    pub format: Option<Format>,
}

/// The engine's request for a checked ask: the model checked against the list, the mode against
/// the server's ceiling.
pub async fn turn_request(
    state: &HttpState,
    request_id: &str,
    owner: String,
    ask: TurnAsk,
) -> Result<Prepared, ApiError> {
    check_model(state, &ask.model).await?;
    let mode = allowed_mode(ask.mode, state.default_mode)?;
    let answer_format = ask.format.as_ref().map(Format::instruction);
    let params = TurnRequest {
        turn_id: format!("http-{request_id}"),
        model: ask.model,
        mode,
        // A fixed `--workspace` is the engine's folder; without one, each conversation's own.
        workspace: None,
        // HTTP requests carry no conversation id: the history identifies the conversation.
        conversation_id: None,
        session_id: None,
        utility: false,
        messages: ask.messages,
        tools: ask.tools,
        owner: Some(owner),
        answer_format,
        images: ask.images,
    };
    Ok(Prepared { params, format: ask.format })
}

/// The server's `--mode` is a ceiling: a request may ask for less (agent > plan > ask), never more.
pub fn allowed_mode(asked: Option<Mode>, ceiling: Mode) -> Result<Mode, ApiError> {
    let rank = |m: Mode| match m {
        Mode::Ask => 0,
        Mode::Plan => 1,
        Mode::Agent => 2,
    };
    match asked {
        None => Ok(ceiling),
        Some(m) if rank(m) <= rank(ceiling) => Ok(m),
        Some(m) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "permission_error",
            format!(
                "This server allows at most `{}` mode (`cursor-bridge serve --mode`); the request asked for `{}`.",
                ceiling.as_str(),
                m.as_str()
            ),
        )
        .param("mode")
        .code("mode_not_allowed")),
    }
}

/// Is `model` one the CLI runs: `auto`, or a listed id (`id[k=v,…]` picks parameters of `id`)?
pub fn is_listed(models: &[ModelInfo], model: &str) -> bool {
    let base = model.split('[').next().unwrap_or(model).trim();
    base.eq_ignore_ascii_case("auto") || models.iter().any(|m| m.id == base)
}

/// Refuse an unknown model before starting anything (404, as OpenAI does). The engine maps the
/// CLI's own refusal (`invalidModel`) to 404 too, for a list that changed since it was cached.
async fn check_model(state: &HttpState, model: &str) -> Result<(), ApiError> {
    let base = model.split('[').next().unwrap_or(model).trim();
    if base.eq_ignore_ascii_case("auto") {
        return Ok(());
    }
    let models = state.engine.models(false).await?;
    if is_listed(&models, model) {
        Ok(())
    } else {
        Err(ApiError::model_not_found(model))
    }
}

/// The SKU a reasoning effort picks, the way the editor's picker does (`vscode-client/src/models.ts`):
/// the variant of the asked model's base with that effort and the same speed and thinking. `None`
/// when the base has no such variant (the CLI has no effort knob of its own: the model runs as asked).
pub fn sku_for_effort(models: &[ModelInfo], model: &str, effort: &str) -> Option<String> {
    let asked = models.iter().find(|m| m.id == model)?;
    let base = asked.base.as_ref().map_or(asked.id.as_str(), |b| b.id.as_str());
    let (fast, thinking) = asked.variant.as_ref().map_or((false, false), |v| (v.fast, v.thinking));
    models
        .iter()
        .filter(|m| m.base.as_ref().map_or(m.id.as_str(), |b| b.id.as_str()) == base)
        .filter_map(|m| m.variant.as_ref().map(|v| (m, v)))
        .find(|(_, v)| v.effort.as_deref() == Some(effort) && v.fast == fast && v.thinking == thinking)
        .map(|(m, _)| m.id.clone())
}

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

/// The response header that marks token counts as an estimate (`x-cursor-bridge-usage: estimate`).
pub const USAGE_HEADER: &str = "x-cursor-bridge-usage";

/// The response header that names the tokenizer of an estimate ([`estimator`]).
pub const TOKENIZER_HEADER: &str = "x-cursor-bridge-tokenizer";

/// The counts of a turn whose CLI reported none (Cursor's ACP mode): OpenAI's `o200k_base`
/// encoding (`util/tokens.rs`), always marked as an estimate (`estimated` and `tokenizer` in the
/// dialect's usage, and [`USAGE_HEADER`]).
pub fn estimate_tokens(text: &str) -> u64 {
    crate::util::tokens::shared().count(text)
}

/// Which tokenizer the estimates come from: `o200k_base`, or `chars/4` where its vocabulary
/// file is missing.
pub fn estimator() -> &'static str {
    crate::util::tokens::shared().name()
}

/// A streamed answer's output, counted once at its end: a tokenizer's counts of the deltas do not
/// add up to the count of the whole (a word cut between two deltas is one token, not two).
#[derive(Debug, Default)]
pub struct Streamed(String);

impl Streamed {
    pub fn push(&mut self, text: &str) {
        self.0.push_str(text);
    }

    pub fn tokens(&self) -> u64 {
        estimate_tokens(&self.0)
    }
}

/// The estimated input of a conversation as the engine gets it.
pub fn input_estimate(messages: &[ChatMessage]) -> u64 {
    messages
        .iter()
        .map(|m| {
            estimate_tokens(&m.text)
                + m.tool_results.iter().map(|r| estimate_tokens(&r.content)).sum::<u64>()
                + m.tool_calls.iter().map(|c| estimate_tokens(&c.input.to_string())).sum::<u64>()
        })
        .sum()
}

/// The estimated output of an answer.
pub fn output_estimate(text: &str, thinking: &str, calls: &[ToolCall]) -> u64 {
    estimate_tokens(text)
        + estimate_tokens(thinking)
        + calls.iter().map(|c| estimate_tokens(&c.input.to_string())).sum::<u64>()
}

/// A turn's token counts: the CLI's, or the estimate (`estimated`), never zeros that read as real.
#[derive(Debug, Clone, Copy)]
pub struct Counted {
    pub usage: Usage,
    pub estimated: bool,
}

pub fn counted(reported: Option<Usage>, input: u64, output: u64) -> Counted {
    match reported {
        Some(usage) => Counted { usage, estimated: false },
        None => Counted {
            usage: Usage {
                input_tokens: input,
                output_tokens: output,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                reasoning_tokens: None,
            },
            estimated: true,
        },
    }
}

/// Marks a whole answer's counts as estimated.
pub fn mark_estimate(response: &mut Response, counted: &Counted) {
    if counted.estimated {
        estimate_headers(response);
    }
}

/// `x-cursor-bridge-usage: estimate` and the tokenizer's name ([`TOKENIZER_HEADER`]).
pub fn estimate_headers(response: &mut Response) {
    response.headers_mut().insert(USAGE_HEADER, HeaderValue::from_static("estimate"));
    response.headers_mut().insert(TOKENIZER_HEADER, HeaderValue::from_static(estimator()));
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
    use crate::vocab::{ModelBase, ModelCapabilities, ModelVariant};

    #[test]
    fn the_server_mode_is_a_ceiling() {
        assert_eq!(allowed_mode(None, Mode::Ask).unwrap(), Mode::Ask);
        assert_eq!(allowed_mode(Some(Mode::Ask), Mode::Agent).unwrap(), Mode::Ask);
        assert_eq!(allowed_mode(Some(Mode::Plan), Mode::Agent).unwrap(), Mode::Plan);
        let e = allowed_mode(Some(Mode::Agent), Mode::Ask).unwrap_err();
        assert_eq!(e.status, StatusCode::FORBIDDEN);
        assert!(e.message.contains("at most `ask`"), "{}", e.message);
        assert!(allowed_mode(Some(Mode::Plan), Mode::Ask).is_err());
    }

    #[test]
    fn counts_are_the_clis_or_a_marked_estimate() {
        // o200k_base's counts (tiktoken's own for these texts), not characters / 4 (5 and 2).
        assert_eq!((estimator(), estimate_tokens(""), estimate_tokens("The quick brown fox")), ("o200k_base", 0, 4));
        let cli = Usage {
            input_tokens: 3,
            output_tokens: 2,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reasoning_tokens: None,
        };
        let c = counted(Some(cli), 99, 99);
        assert!(!c.estimated && c.usage.input_tokens == 3);
        let e = counted(None, 12, 3);
        assert!(e.estimated && (e.usage.input_tokens, e.usage.output_tokens) == (12, 3));
        let m = [ChatMessage::new(crate::vocab::Role::User, "12345678")];
        assert_eq!(input_estimate(&m), 3, "123 456 78");
    }

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

    fn sku(id: &str, base: &str, effort: Option<&str>, fast: bool) -> ModelInfo {
        ModelInfo {
            id: id.into(),
            name: id.into(),
            family: base.into(),
            max_input_tokens: 1,
            max_output_tokens: 1,
            capabilities: ModelCapabilities { thinking: true, tool_calling: true, image_input: false },
            is_default: false,
            base: Some(ModelBase { id: base.into(), name: base.into() }),
            variant: Some(ModelVariant {
                effort: effort.map(String::from),
                fast,
                thinking: false,
                label: String::new(),
                default: effort.is_none(),
            }),
        }
    }

    #[test]
    fn an_effort_picks_the_variant_of_the_same_base_and_speed() {
        let models = [
            sku("gpt-9", "gpt-9", None, false),
            sku("gpt-9-high", "gpt-9", Some("high"), false),
            sku("gpt-9-high-fast", "gpt-9", Some("high"), true),
            sku("gpt-9-low", "gpt-9", Some("low"), false),
            sku("other-high", "other", Some("high"), false),
        ];
        assert_eq!(sku_for_effort(&models, "gpt-9", "high").as_deref(), Some("gpt-9-high"));
        assert_eq!(sku_for_effort(&models, "gpt-9-low", "high").as_deref(), Some("gpt-9-high"));
        assert_eq!(sku_for_effort(&models, "gpt-9-high", "low").as_deref(), Some("gpt-9-low"));
        assert_eq!(sku_for_effort(&models, "gpt-9-high-fast", "high").as_deref(), Some("gpt-9-high-fast"));
        assert_eq!(sku_for_effort(&models, "gpt-9", "xhigh"), None);
        assert_eq!(sku_for_effort(&models, "auto", "high"), None);
        assert!(is_listed(&models, "gpt-9-high[fast=true]") && is_listed(&models, "Auto"));
        assert!(!is_listed(&models, "claude-opus-5-5"));
    }
}
