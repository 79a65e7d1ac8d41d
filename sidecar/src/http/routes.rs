//! The handlers. A chat completion is one engine turn (`Engine::turn`) whose events come
//! back on a channel: collected into one `chat.completion`, or written as SSE chunks as they
//! arrive. Conversations resume as in the editor path: the engine matches the user messages of
//! the request against its sessions, so a client re-sending the whole history only sends the new
//! message to the CLI.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::util::sync::{lock, AbortOnDrop};

use super::errors::ApiError;
use super::openai::{
    AssistantMessage, ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, Checked, Choice, ChunkChoice,
    CompletionUsage, Delta, ModelList, ToolCallOut,
};
use super::{json_body, HttpState, RequestId, MAX_BODY};
use crate::engine::{Event as TurnEvent, TurnOutcome, TurnRequest};
use crate::error::BridgeError;
use crate::vocab::Mode;

/// Deltas buffered between the engine and the HTTP writer; a slow client slows the turn.
const DELTA_BUFFER: usize = 256;
/// SSE comments while the model is silent: proxies keep the connection, and a client that went
/// away is noticed by the failed write even when the CLI says nothing for a while.
const KEEP_ALIVE: Duration = Duration::from_secs(10);
const HEALTH_CACHE: Duration = Duration::from_secs(10);

pub async fn models(State(state): State<Arc<HttpState>>) -> Response {
    match state.engine.models(false).await {
        Ok(models) => json_body(&ModelList::from_models(&models)),
        Err(e) => ApiError::from(e).into_response(),
    }
}

pub async fn health(State(state): State<Arc<HttpState>>) -> Response {
    let cached = {
        let cache = lock(&state.health_cache);
        cache.as_ref().filter(|(at, _)| at.elapsed() < HEALTH_CACHE).map(|(_, s)| s.clone())
    };
    let status = match cached {
        Some(s) => s,
        None => {
            let s = state.engine.status().await;
            *lock(&state.health_cache) = Some((Instant::now(), s.clone()));
            s
        }
    };
    // Sessions and turns are counted now, not when the CLI was last asked.
    let (sessions, in_flight) = (state.engine.session_count(), state.engine.in_flight());
    let body = serde_json::json!({
        "status": if status.cli.found { "ok" } else { "cli_not_found" },
        "version": status.version,
        "cli": {
            "found": status.cli.found,
            "path": status.cli.path,
            "version": status.cli.version,
            "logged_in": status.cli.logged_in,
            "cursor_api_key": status.cli.api_key,
            "hint": status.cli.hint,
        },
        "sessions": sessions,
        "in_flight": in_flight,
    });
    let mut response = json_body(&body);
    if !status.cli.found {
        // Every completion would fail: let a load balancer or a supervisor see it.
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    }
    response
}

pub async fn not_found(method: Method, uri: Uri) -> Response {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!(
            "Unknown request URL: {method} {}. This server has GET /v1/models, POST /v1/chat/completions and GET /health.",
            uri.path()
        ),
    )
    .code("unknown_url")
    .into_response()
}

pub async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        format!("{method} is not allowed on {}.", uri.path()),
    )
    .code("method_not_allowed")
    .into_response()
}

pub async fn chat_completions(
    State(state): State<Arc<HttpState>>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // A web page may send a cross-origin POST without asking first only with a "simple" content
    // type (text/plain, forms); insisting on JSON means a page cannot start turns on this machine.
    if !is_json(&headers) {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "The request body must be JSON, sent with `Content-Type: application/json`.",
        )
        .code("unsupported_media_type")
        .into_response();
    }
    let owner = owner_of(&headers);
    match chat(state, request_id, owner, body).await {
        Ok(response) => response,
        Err(e) => {
            tracing::info!(status = e.status.as_u16(), error = %e.message, "chat completion refused");
            e.into_response()
        }
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let media = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

/// Who is asking, for tool calls: a hash of the key the client presented (a turn parked for
/// one key's calls is never continued by another), or `anonymous` without one.
fn owner_of(headers: &HeaderMap) -> String {
    match headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        Some(value) => format!("key-{:016x}", crate::util::text::fnv1a(value)),
        None => "anonymous".into(),
    }
}

async fn chat(
    state: Arc<HttpState>,
    request_id: String,
    owner: String,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::body_too_large(MAX_BODY),
        _ => ApiError::bad_request(format!("Could not read the request body: {}", rejection.body_text())),
    })?;
    let request: ChatCompletionRequest = serde_json::from_slice(&body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            ApiError::bad_request(format!("We could not parse the JSON body of your request: {e}"))
        } else {
            ApiError::bad_request(format!("Invalid request body: {e}"))
        }
    })?;
    let checked = request.check()?;
    check_model(&state, &checked.model).await?;

    let Checked { model, messages, stream, include_usage, mode, tools } = checked;
    let mode = allowed_mode(mode, state.default_mode)?;
    let params = TurnRequest {
        turn_id: format!("http-{request_id}"),
        model: model.clone(),
        mode,
        // A fixed `--workspace` is the engine's folder; without one, each conversation's own.
        workspace: None,
        // OpenAI requests carry no conversation id: the history identifies the conversation.
        conversation_id: None,
        session_id: None,
        utility: false,
        messages,
        tools,
        owner: Some(owner),
    };
    let meta = Meta { id: format!("chatcmpl-{:016x}", crate::util::ids::random_u64()), model, created: unix_now() };
    if stream {
        stream_completion(state, params, meta, include_usage).await
    } else {
        complete(state, params, meta).await
    }
}

/// The server's `--mode` is a ceiling: a request may ask for less (agent > plan > ask), never more.
fn allowed_mode(asked: Option<Mode>, ceiling: Mode) -> Result<Mode, ApiError> {
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

/// Refuse an unknown model before starting anything (404, as OpenAI does). The engine maps the
/// CLI's own refusal (`invalidModel`) to 404 too, for a list that changed since it was cached.
async fn check_model(state: &HttpState, model: &str) -> Result<(), ApiError> {
    // `id[k=v,…]` picks parameters of the model `id`.
    let base = model.split('[').next().unwrap_or(model).trim();
    if base.eq_ignore_ascii_case("auto") {
        return Ok(());
    }
    let models = state.engine.models(false).await?;
    if models.iter().any(|m| m.id == base) {
        Ok(())
    } else {
        Err(ApiError::model_not_found(model))
    }
}

struct Meta {
    id: String,
    model: String,
    created: u64,
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn session_headers(response: &mut Response, session: Option<&(String, bool)>) {
    if let Some((id, resumed)) = session {
        if let Ok(v) = HeaderValue::from_str(id) {
            response.headers_mut().insert("x-cursor-bridge-session", v);
        }
        response
            .headers_mut()
            .insert("x-cursor-bridge-resumed", HeaderValue::from_static(if *resumed { "true" } else { "false" }));
    }
}

/// `stream: false`: run the turn here (a client that hangs up drops this future, and with it the
/// CLI), collecting its deltas alongside.
async fn complete(state: Arc<HttpState>, params: TurnRequest, meta: Meta) -> Result<Response, ApiError> {
    let mut hangup = Hangup::new();
    let (tx, mut rx) = mpsc::channel(DELTA_BUFFER);
    let turn = state.engine.turn(params, tx);
    let collect = async {
        let (mut text, mut thinking, mut session, mut calls) = (String::new(), String::new(), None, Vec::new());
        while let Some(delta) = rx.recv().await {
            match delta {
                TurnEvent::Text(t) => text.push_str(&t),
                TurnEvent::Thinking(t) => thinking.push_str(&t),
                TurnEvent::Session { session_id, resumed, .. } => session = Some((session_id, resumed)),
                TurnEvent::ToolCall { call_id, name, input } => {
                    calls.push(ToolCallOut::new(None, call_id, name, &input))
                }
                _ => {}
            }
        }
        (text, thinking, session, calls)
    };
    let (result, (text, thinking, session, calls)) = tokio::join!(turn, collect);
    hangup.armed = false;
    let result = result?;
    let completion = ChatCompletion {
        id: meta.id,
        object: "chat.completion",
        created: meta.created,
        model: meta.model,
        choices: [Choice {
            index: 0,
            finish_reason: if result.tool_calls { "tool_calls" } else { "stop" },
            message: AssistantMessage {
                role: "assistant",
                content: (!text.is_empty() || calls.is_empty()).then_some(text),
                tool_calls: (!calls.is_empty()).then_some(calls),
                reasoning_content: (!thinking.is_empty()).then_some(thinking),
                refusal: None,
            },
            logprobs: None,
        }],
        usage: result.usage.map(CompletionUsage::from_usage),
    };
    let mut response = json_body(&completion);
    session_headers(&mut response, session.as_ref());
    Ok(response)
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

/// `stream: true`. The turn runs in its own task, owned by the response stream. The status line
/// is held back until the turn has produced something (or ended), so failures that happen before
/// any output (unknown model, rate limit, CLI logged out, …) still get their proper HTTP status;
/// a failure after that is sent as an `{"error": …}` event, which OpenAI's clients raise.
async fn stream_completion(
    state: Arc<HttpState>,
    params: TurnRequest,
    meta: Meta,
    include_usage: bool,
) -> Result<Response, ApiError> {
    let mut hangup = Hangup::new();
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
        finished = Some(outcome?);
    }
    let mut chunks = Chunks {
        rx,
        turn: Some(turn),
        finished,
        hangup,
        _abort: abort,
        meta,
        include_usage,
        queue: VecDeque::new(),
        done: false,
        calls: 0,
    };
    chunks.queue.push_back(
        chunks.chunk(Delta { role: Some("assistant"), content: Some(String::new()), ..Delta::default() }, None),
    );
    if let Some(delta) = first {
        chunks.push_delta(delta);
    }
    let stream = futures_util::stream::unfold(chunks, |mut chunks| async move {
        chunks.next().await.map(|event| (Ok::<_, Infallible>(event), chunks))
    });
    let mut response = Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    session_headers(&mut response, session.as_ref());
    Ok(response)
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

/// The SSE events of one streamed completion, produced as the turn's deltas arrive.
struct Chunks {
    rx: mpsc::Receiver<TurnEvent>,
    turn: Option<JoinHandle<Result<TurnOutcome, BridgeError>>>,
    /// The turn's outcome, when it was already known before the stream started.
    finished: Option<TurnOutcome>,
    hangup: Hangup,
    _abort: AbortOnDrop,
    meta: Meta,
    include_usage: bool,
    queue: VecDeque<Event>,
    done: bool,
    /// Tool calls streamed so far (each chunk names its index).
    calls: u32,
}

impl Chunks {
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            match self.rx.recv().await {
                Some(delta) => self.push_delta(delta),
                None => self.finish().await,
            }
        }
    }

    fn chunk(&self, delta: Delta, finish_reason: Option<&'static str>) -> Event {
        self.event(&ChatCompletionChunk {
            id: &self.meta.id,
            object: "chat.completion.chunk",
            created: self.meta.created,
            model: &self.meta.model,
            choices: vec![ChunkChoice { index: 0, delta, finish_reason, logprobs: None }],
            usage: None,
        })
    }

    fn event<T: serde::Serialize>(&self, value: &T) -> Event {
        Event::default().data(serde_json::to_string(value).unwrap_or_default())
    }

    /// Text, thinking and calls of the client's tools become chunks. The CLI's own tool activity
    /// has no place in OpenAI's stream (the client could not run those tools); the CLI's answer
    /// describes what it did.
    fn push_delta(&mut self, delta: TurnEvent) {
        let delta = match delta {
            TurnEvent::Text(text) => Delta { content: Some(text), ..Delta::default() },
            TurnEvent::Thinking(text) => Delta { reasoning_content: Some(text), ..Delta::default() },
            TurnEvent::ToolCall { call_id, name, input } => {
                let call = ToolCallOut::new(Some(self.calls), call_id, name, &input);
                self.calls += 1;
                Delta { tool_calls: Some(vec![call]), ..Delta::default() }
            }
            _ => return,
        };
        let event = self.chunk(delta, None);
        self.queue.push_back(event);
    }

    async fn finish(&mut self) {
        self.done = true;
        let outcome = match (self.finished.take(), self.turn.as_mut()) {
            (Some(result), _) => Ok(result),
            (None, Some(turn)) => join_turn(turn).await,
            (None, None) => Err(ApiError::internal("The turn ended twice.")),
        };
        self.hangup.armed = false;
        match outcome {
            Ok(result) => {
                let last = self.chunk(Delta::default(), Some(if result.tool_calls { "tool_calls" } else { "stop" }));
                self.queue.push_back(last);
                // Only a count the CLI reported (none on ACP): zeros would read as real.
                if let (true, Some(usage)) = (self.include_usage, result.usage) {
                    let usage = self.event(&ChatCompletionChunk {
                        id: &self.meta.id,
                        object: "chat.completion.chunk",
                        created: self.meta.created,
                        model: &self.meta.model,
                        choices: Vec::new(),
                        usage: Some(CompletionUsage::from_usage(usage)),
                    });
                    self.queue.push_back(usage);
                }
                self.queue.push_back(Event::default().data("[DONE]"));
            }
            Err(e) => {
                tracing::info!(status = e.status.as_u16(), error = %e.message, "stream ended with an error");
                let event = self.event(&e.body());
                self.queue.push_back(event);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
