//! The handlers of models, health and chat completions. A chat completion is one engine turn
//! (`core.rs`) whose events come back on a channel: collected into one `chat.completion`, or
//! written as SSE chunks as they arrive. Conversations resume as in the editor path: the engine
//! matches the user messages of the request against its sessions, so a client re-sending the
//! whole history only sends the new message to the CLI.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};

use crate::util::sync::lock;

use super::core;
use super::errors::ApiError;
use super::openai::{
    AssistantMessage, ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, Checked, Choice, ChunkChoice,
    CompletionUsage, Delta, ModelList, ToolCallOut,
};
use super::{json_body, HttpState, RequestId};
use crate::engine::{Event as TurnEvent, TurnOutcome};

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

/// The body is read (and dropped) first: a connection whose request body was left unread is
/// closed after the answer, and a client that pools connections fails its next request on it.
pub async fn not_found(method: Method, uri: Uri, _body: Result<Bytes, BytesRejection>) -> Response {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!(
            "Unknown request URL: {method} {}. This server has GET /v1/models, POST /v1/chat/completions, POST /v1/responses, POST /v1/messages and GET /health.",
            uri.path()
        ),
    )
    .code("unknown_url")
    .into_response()
}

pub async fn method_not_allowed(method: Method, uri: Uri, _body: Result<Bytes, BytesRejection>) -> Response {
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
    core::answer(&headers, "chat completion", IntoResponse::into_response, |owner| chat(state, request_id, owner, body))
        .await
}

async fn chat(
    state: Arc<HttpState>,
    request_id: String,
    owner: String,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: ChatCompletionRequest = core::parse_body(body)?;
    let Checked { model, messages, stream, include_usage, mode, tools, format, images } = request.check()?;
    let input = core::input_estimate(&messages);
    let ask = core::TurnAsk { model: model.clone(), messages, mode, tools, format, images };
    let params = core::turn_request(&state, &request_id, owner, ask).await?;
    let meta = Meta {
        id: format!("chatcmpl-{:016x}", crate::util::ids::random_u64()),
        model,
        created: core::unix_now(),
        input,
    };
    if stream {
        core::stream(&state, params, Chunks { meta, include_usage, calls: 0, output: core::Streamed::default() }).await
    } else {
        complete(&state, params, meta).await
    }
}

struct Meta {
    id: String,
    model: String,
    created: u64,
    /// The input's estimated tokens, for a turn whose CLI reports no counts.
    input: u64,
}

async fn complete(state: &Arc<HttpState>, params: core::Prepared, meta: Meta) -> Result<Response, ApiError> {
    let (got, result) = core::collect(state, params).await?;
    let counted = core::counted(result.usage, meta.input, core::output_estimate(&got.text, &got.thinking, &got.calls));
    let calls: Vec<ToolCallOut> =
        got.calls.into_iter().map(|c| ToolCallOut::new(None, c.call_id, c.name, &c.input)).collect();
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
                content: (!got.text.is_empty() || calls.is_empty()).then_some(got.text),
                tool_calls: (!calls.is_empty()).then_some(calls),
                reasoning_content: (!got.thinking.is_empty()).then_some(got.thinking),
                refusal: None,
            },
            logprobs: None,
        }],
        usage: Some(CompletionUsage::from_counted(counted)),
    };
    let mut response = json_body(&completion);
    core::mark_estimate(&mut response, &counted);
    core::session_headers(&mut response, got.session.as_ref());
    Ok(response)
}

/// The chunks of one streamed completion.
struct Chunks {
    meta: Meta,
    include_usage: bool,
    /// Tool calls streamed so far (each chunk names its index).
    calls: u32,
    /// The output so far, for the estimate when the CLI reports no counts.
    output: core::Streamed,
}

impl Chunks {
    fn chunk(&self, delta: Delta, finish_reason: Option<&'static str>) -> Event {
        core::data_event(&ChatCompletionChunk {
            id: &self.meta.id,
            object: "chat.completion.chunk",
            created: self.meta.created,
            model: &self.meta.model,
            choices: vec![ChunkChoice { index: 0, delta, finish_reason, logprobs: None }],
            usage: None,
        })
    }
}

impl core::Encoder for Chunks {
    fn start(&mut self) -> Vec<Event> {
        vec![self.chunk(Delta { role: Some("assistant"), content: Some(String::new()), ..Delta::default() }, None)]
    }

    fn event(&mut self, delta: TurnEvent) -> Vec<Event> {
        let delta = match delta {
            TurnEvent::Text(text) => {
                self.output.push(&text);
                Delta { content: Some(text), ..Delta::default() }
            }
            TurnEvent::Thinking(text) => {
                self.output.push(&text);
                Delta { reasoning_content: Some(text), ..Delta::default() }
            }
            TurnEvent::ToolCall { call_id, name, input } => {
                self.output.push(&input.to_string());
                let call = ToolCallOut::new(Some(self.calls), call_id, name, &input);
                self.calls += 1;
                Delta { tool_calls: Some(vec![call]), ..Delta::default() }
            }
            _ => return Vec::new(),
        };
        vec![self.chunk(delta, None)]
    }

    fn end(&mut self, outcome: Result<TurnOutcome, ApiError>) -> Vec<Event> {
        match outcome {
            Ok(result) => {
                let mut events =
                    vec![self.chunk(Delta::default(), Some(if result.tool_calls { "tool_calls" } else { "stop" }))];
                // The CLI's counts, or (none on ACP) the marked estimate: zeros would read as real.
                if self.include_usage {
                    let usage = core::counted(result.usage, self.meta.input, self.output.tokens());
                    events.push(core::data_event(&ChatCompletionChunk {
                        id: &self.meta.id,
                        object: "chat.completion.chunk",
                        created: self.meta.created,
                        model: &self.meta.model,
                        choices: Vec::new(),
                        usage: Some(CompletionUsage::from_counted(usage)),
                    }));
                }
                events.push(Event::default().data("[DONE]"));
                events
            }
            // OpenAI's clients raise an `{"error": …}` event.
            Err(e) => vec![core::data_event(&e.body())],
        }
    }
}
