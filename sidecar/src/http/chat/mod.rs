//! `POST /v1/chat/completions`, OpenAI's Chat Completions API, on the same engine turn as the
//! other dialects (`http/turn.rs`): `request.rs` maps the request, `response.rs` is the answer's
//! wire, `stream.rs` writes the SSE chunks. A completion is collected into one `chat.completion`,
//! or written as chunks as it arrives. Conversations resume as in the editor path: the engine
//! matches the user messages of the request against its sessions, so a client re-sending the
//! whole history only sends the new message to the CLI.

mod request;
mod response;
mod stream;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use request::{ChatCompletionRequest, Checked};
use response::{AssistantMessage, ChatCompletion, Choice, CompletionUsage, ToolCallOut};
use stream::Chunks;

use super::errors::ApiError;
use super::{checks, json_body, turn, usage, HttpState, RequestId};

pub async fn create(
    State(state): State<Arc<HttpState>>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    checks::answer(&headers, "chat completion", IntoResponse::into_response, |owner| {
        chat(state, request_id, owner, body)
    })
    .await
}

async fn chat(
    state: Arc<HttpState>,
    request_id: String,
    owner: String,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: ChatCompletionRequest = checks::parse_body(body)?;
    let Checked { model, messages, stream, include_usage, mode, tools, format, images } = request.check()?;
    let input = usage::input_estimate(&messages);
    let ask = checks::TurnAsk { model: model.clone(), messages, mode, tools, format, images };
    let params = checks::turn_request(&state, &request_id, owner, ask).await?;
    let meta = Meta {
        id: format!("chatcmpl-{:016x}", crate::util::ids::random_u64()),
        model,
        created: turn::unix_now(),
        input,
    };
    if stream {
        turn::stream(&state, params, Chunks { meta, include_usage, calls: 0, output: usage::Streamed::default() }).await
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

async fn complete(state: &Arc<HttpState>, params: checks::Prepared, meta: Meta) -> Result<Response, ApiError> {
    let (got, result) = turn::collect(state, params).await?;
    let counted =
        usage::counted(result.usage, meta.input, usage::output_estimate(&got.text, &got.thinking, &got.calls));
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
    usage::mark_estimate(&mut response, &counted);
    turn::session_headers(&mut response, got.session.as_ref());
    Ok(response)
}
