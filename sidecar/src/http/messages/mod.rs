//! `POST /v1/messages` (Anthropic's Messages API, Claude Code's wire) and
//! `POST /v1/messages/count_tokens`, on the same engine turn as the OpenAI routes
//! (`http/turn.rs`): `request.rs` maps the request, `stream.rs` writes Anthropic's events. Errors
//! come in Anthropic's shape (`{"type": "error", "error": {…}}`).
//!
//! Models: a listed Cursor id runs as asked; a Claude model id Cursor does not list (Claude Code
//! asks for its own, `claude-opus-5-5`, `claude-haiku-…`) runs `serve --model` (default `auto`),
//! and the answer names the model the client asked for.

mod request;
mod stream;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{json, Value};

use super::errors::ApiError;
use super::{checks, turn, usage};
use super::{json_body, HttpState, RequestId};
use crate::vocab::{ToolCall, Usage};

pub async fn create(
    State(state): State<Arc<HttpState>>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    checks::answer(&headers, "message", ApiError::into_anthropic_response, |owner| {
        respond(state, request_id, owner, body)
    })
    .await
}

/// `count_tokens`: an estimate (`o200k_base`; the CLI has no counter), marked as one in
/// `x-cursor-bridge-usage: estimate`.
pub async fn count_tokens(headers: HeaderMap, body: Result<Bytes, BytesRejection>) -> Response {
    if !checks::is_json(&headers) {
        return checks::not_json().into_anthropic_response();
    }
    let checked = checks::parse_body::<request::MessagesRequest>(body).and_then(request::MessagesRequest::check);
    match checked {
        Ok(checked) => {
            let tools = checked.tools.as_ref().map_or(0, |t| {
                t.tools
                    .iter()
                    .map(|d| estimate(&d.name) + estimate(&d.description) + estimate(&d.input_schema.to_string()))
                    .sum()
            });
            let mut response = json_body(&json!({"input_tokens": input_estimate(&checked.messages) + tools}));
            usage::estimate_headers(&mut response);
            response
        }
        Err(e) => e.into_anthropic_response(),
    }
}

/// The model a request runs: a listed Cursor id as asked, a Claude id Cursor does not list the
/// server's `--model`, anything else is refused (404) by the turn's model check.
fn cursor_model(models: &[crate::vocab::ModelInfo], asked: &str, fallback: &str) -> String {
    let claude = asked.starts_with("claude-") || asked.starts_with("anthropic/");
    if claude && !checks::is_listed(models, asked) {
        fallback.to_string()
    } else {
        asked.to_string()
    }
}

async fn respond(
    state: Arc<HttpState>,
    request_id: String,
    owner: String,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: request::MessagesRequest = checks::parse_body(body)?;
    let checked = request.check_create()?;
    let models = state.engine.models(false).await?;
    let model = cursor_model(&models, &checked.model, &state.claude_model);
    if model != checked.model {
        tracing::debug!(asked = %checked.model, %model, "a Claude model id runs the --model model");
    }
    let input_tokens = input_estimate(&checked.messages);
    let ask = checks::TurnAsk {
        model,
        messages: checked.messages,
        mode: checked.mode,
        tools: checked.tools,
        format: checked.format,
        images: checked.images,
    };
    let params = checks::turn_request(&state, &request_id, owner, ask).await?;
    let meta = Meta { id: turn::new_id("msg_"), model: checked.model, input_tokens };
    if checked.stream {
        turn::stream(&state, params, stream::MessageEvents::new(meta)).await
    } else {
        let (got, outcome) = turn::collect(&state, params).await?;
        let mut content = Vec::new();
        if !got.thinking.is_empty() {
            content.push(json!({"type": "thinking", "thinking": got.thinking, "signature": SIGNATURE}));
        }
        if !got.text.is_empty() || got.calls.is_empty() {
            content.push(json!({"type": "text", "text": got.text, "citations": null}));
        }
        content.extend(got.calls.iter().map(tool_use));
        let output = estimate(&got.text)
            + estimate(&got.thinking)
            + got.calls.iter().map(|c| estimate(&c.input.to_string())).sum::<u64>();
        let usage = usage_object(outcome.usage, meta.input_tokens, output);
        let estimated = outcome.usage.is_none();
        let body = json!({
            "id": meta.id,
            "type": "message",
            "role": "assistant",
            "model": meta.model,
            "content": content,
            "stop_reason": if outcome.tool_calls { "tool_use" } else { "end_turn" },
            "stop_sequence": null,
            "stop_details": null,
            "container": null,
            "usage": usage,
        });
        let mut response = json_body(&body);
        if estimated {
            usage::estimate_headers(&mut response);
        }
        turn::session_headers(&mut response, got.session.as_ref());
        Ok(response)
    }
}

/// A thinking block's `signature`: Claude Code sends thinking blocks back with theirs. Ours says
/// only where the block came from (the Cursor chat keeps the thinking itself).
pub(crate) const SIGNATURE: &str = "cursor-bridge";

pub(crate) struct Meta {
    pub id: String,
    /// The model as the client named it.
    pub model: String,
    /// The estimated input, for when the CLI reports no counts.
    pub input_tokens: u64,
}

/// A call of the client's tool; `caller` is required by Anthropic's schema (the model called it
/// directly, not code it ran).
pub(crate) fn tool_use(call: &ToolCall) -> Value {
    json!({"type": "tool_use", "id": call.call_id, "name": call.name, "input": call.input, "caller": {"type": "direct"}})
}

pub(crate) use usage::estimate_tokens as estimate;
use usage::input_estimate;

/// Anthropic's usage: `input_tokens` excludes cached input, which has fields of its own. Without
/// the CLI's counts (Cursor's ACP mode reports none) the estimate, marked `estimated: true`:
/// Claude Code needs numbers here to decide when to compact.
pub(crate) fn usage_object(usage: Option<Usage>, input_estimate: u64, output_estimate: u64) -> Value {
    let c = usage::counted(usage, input_estimate, output_estimate);
    // The rest of the fields Anthropic's schema requires: no server tool ran, nothing is known of
    // the cache's lifetimes beyond the write, no region or tier applies.
    let mut v = json!({
        "input_tokens": c.usage.input_tokens,
        "output_tokens": c.usage.output_tokens,
        "cache_read_input_tokens": c.usage.cache_read_tokens,
        "cache_creation_input_tokens": c.usage.cache_write_tokens,
        "cache_creation": {"ephemeral_5m_input_tokens": c.usage.cache_write_tokens, "ephemeral_1h_input_tokens": 0},
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "output_tokens_details": null,
        "inference_geo": null,
        "service_tier": "standard",
    });
    if c.estimated {
        v["estimated"] = json!(true);
        v["tokenizer"] = json!(usage::estimator());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{ModelCapabilities, ModelInfo};

    #[test]
    fn claude_ids_cursor_does_not_list_run_the_servers_model() {
        let listed = |id: &str| ModelInfo {
            id: id.into(),
            name: id.into(),
            family: id.into(),
            max_input_tokens: 1,
            max_output_tokens: 1,
            capabilities: ModelCapabilities { thinking: false, tool_calling: true, image_input: false },
            is_default: false,
            base: None,
            variant: None,
        };
        let models = [listed("claude-opus-4-8"), listed("gpt-5.5")];
        assert_eq!(cursor_model(&models, "claude-opus-5-5", "gpt-5.5"), "gpt-5.5");
        assert_eq!(cursor_model(&models, "claude-haiku-4-5-20251001", "auto"), "auto");
        assert_eq!(cursor_model(&models, "claude-opus-4-8", "auto"), "claude-opus-4-8");
        assert_eq!(cursor_model(&models, "no-such-model", "auto"), "no-such-model", "refused later, with a 404");
    }

    #[test]
    fn a_tool_use_block_says_the_model_called_directly() {
        let call = ToolCall { call_id: "call_1".into(), name: "Write".into(), input: json!({}) };
        assert_eq!(tool_use(&call)["caller"], json!({"type": "direct"}));
    }

    #[test]
    fn usage_is_the_clis_or_a_marked_estimate() {
        let u = usage_object(
            Some(Usage {
                input_tokens: 3,
                output_tokens: 2,
                cache_read_tokens: 10,
                cache_write_tokens: 1,
                reasoning_tokens: None,
            }),
            99,
            99,
        );
        assert_eq!((u["input_tokens"].as_u64(), u["cache_read_input_tokens"].as_u64()), (Some(3), Some(10)));
        assert!(u.get("estimated").is_none());
        let e = usage_object(None, 12, 3);
        assert_eq!(
            (e["input_tokens"].as_u64(), e["output_tokens"].as_u64(), e["estimated"].as_bool()),
            (Some(12), Some(3), Some(true))
        );
    }
}
