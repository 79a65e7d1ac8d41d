//! `POST /v1/responses`, OpenAI's Responses API (Codex CLI's only wire), on the same engine turn as
//! chat completions (`http/turn.rs`): `request.rs` maps the request, `stream.rs` writes the typed
//! SSE events, `store.rs` keeps responses for `previous_response_id`. The output items are built
//! here, for both the whole response and the stream's `output_item.done` events.

mod request;
mod store;
mod stream;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::errors::ApiError;
use super::{checks, turn, usage};
use super::{json_body, HttpState, RequestId};
use crate::vocab::{ChatMessage, Role, ToolCall};

pub use store::ResponseStore;

pub async fn create(
    State(state): State<Arc<HttpState>>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    checks::answer(&headers, "response", IntoResponse::into_response, |owner| respond(state, request_id, owner, body))
        .await
}

/// What a response says about itself beyond its output, and what is stored when it ends.
pub(crate) struct Meta {
    pub id: String,
    /// The model as the client named it.
    pub model: String,
    pub created_at: u64,
    pub echo: request::Echo,
    pub previous_response_id: Option<String>,
    pub store: bool,
    pub custom: BTreeSet<String>,
    pub namespaces: BTreeMap<String, String>,
    /// The conversation before this response (without instructions): stored with the answer.
    pub history: Vec<ChatMessage>,
    pub owner: String,
    /// The input's estimated tokens, for a turn whose CLI reports no counts.
    pub input_tokens: u64,
}

async fn respond(
    state: Arc<HttpState>,
    request_id: String,
    owner: String,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: request::ResponsesRequest = checks::parse_body(body)?;
    let checked = request.check()?;
    let mut history = match &checked.previous_response_id {
        Some(id) => state.responses.get(id, &owner).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Previous response with id '{id}' not found. This server keeps responses in memory for a few hours, \
                 per client key; send the whole conversation in `input` instead."
            ))
            .param("previous_response_id")
            .code("previous_response_not_found")
        })?,
        None => Vec::new(),
    };
    history.extend(checked.input);
    if !history.iter().any(|m| m.role == Role::User && m.tool_results.is_empty()) {
        // Also what names the conversation's private folder: check before anything is created.
        return Err(ApiError::bad_request("`input` must contain a user message.").param("input"));
    }
    let mut messages = Vec::with_capacity(history.len() + 1);
    messages.extend(checked.instructions.map(|text| ChatMessage::new(Role::System, text)));
    messages.extend(history.iter().cloned());
    let mut model = checked.model.clone();
    if let Some(effort) = &checked.effort {
        let models = state.engine.models(false).await?;
        if let Some(sku) = checks::sku_for_effort(&models, &model, effort) {
            tracing::debug!(%model, %effort, %sku, "reasoning effort picks a variant");
            model = sku;
        }
    }
    let input_tokens = usage::input_estimate(&messages);
    let ask = checks::TurnAsk {
        model,
        messages,
        mode: checked.mode,
        tools: checked.tools,
        format: checked.format,
        images: checked.images,
    };
    let params = checks::turn_request(&state, &request_id, owner.clone(), ask).await?;
    let meta = Meta {
        id: turn::new_id("resp_"),
        model: checked.model,
        created_at: turn::unix_now(),
        echo: checked.echo,
        previous_response_id: checked.previous_response_id,
        store: checked.store,
        custom: checked.custom,
        namespaces: checked.namespaces,
        history,
        owner,
        input_tokens,
    };
    if checked.stream {
        turn::stream(&state, params, stream::ResponseEvents::new(state.clone(), meta)).await
    } else {
        let (got, outcome) = turn::collect(&state, params).await?;
        let mut output = Vec::new();
        if !got.thinking.is_empty() {
            output.push(reasoning_item(&turn::new_id("rs_"), &got.thinking));
        }
        if !got.text.is_empty() || got.calls.is_empty() {
            output.push(message_item(&turn::new_id("msg_"), &got.text, "completed"));
        }
        output.extend(got.calls.iter().map(|c| call_item(&meta, c, "completed")));
        remember(&state, &meta, &got.text, &got.calls);
        let output_tokens = usage::output_estimate(&got.text, &got.thinking, &got.calls);
        let counted = usage::counted(outcome.usage, meta.input_tokens, output_tokens);
        let body = response_object(&meta, "completed", output, Some(counted), None);
        let mut response = json_body(&body);
        usage::mark_estimate(&mut response, &counted);
        turn::session_headers(&mut response, got.session.as_ref());
        Ok(response)
    }
}

/// Keeps the conversation through this response, for a later `previous_response_id`.
pub(crate) fn remember(state: &HttpState, meta: &Meta, text: &str, calls: &[ToolCall]) {
    if !meta.store {
        return;
    }
    let mut history = meta.history.clone();
    let mut answer = ChatMessage::new(Role::Assistant, text);
    answer.tool_calls = calls.to_vec();
    history.push(answer);
    state.responses.put(meta.id.clone(), meta.owner.clone(), history);
}

pub(crate) fn message_item(id: &str, text: &str, status: &str) -> Value {
    let content = if status == "completed" {
        json!([{"type": "output_text", "text": text, "annotations": [], "logprobs": []}])
    } else {
        json!([])
    };
    json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
}

/// The model's thinking, as the reasoning summary (Cursor's thinking is readable text). No
/// `encrypted_content`: there is none, and the Open Responses schema takes only a string there
/// (llm-comply's `open-responses` format failed every answer that had thinking on a `null`).
pub(crate) fn reasoning_item(id: &str, text: &str) -> Value {
    let summary = if text.is_empty() { json!([]) } else { json!([{"type": "summary_text", "text": text}]) };
    json!({"type": "reasoning", "id": id, "summary": summary})
}

/// A call of the client's tool: `custom_tool_call` with the raw `input` string for a custom tool,
/// else `function_call` with `arguments` as a JSON string (and its `namespace`, for a tool
/// declared in one).
pub(crate) fn call_item(meta: &Meta, call: &ToolCall, status: &str) -> Value {
    call_item_of(&meta.custom, &meta.namespaces, call, status)
}

fn call_item_of(
    custom: &BTreeSet<String>,
    namespaces: &BTreeMap<String, String>,
    call: &ToolCall,
    status: &str,
) -> Value {
    let id = format!("fc_{}", call.call_id.trim_start_matches("call_"));
    if custom.contains(&call.name) {
        let input = match call.input.get("input") {
            Some(Value::String(s)) => s.clone(),
            _ => call.input.to_string(),
        };
        let input = if status == "completed" { input } else { String::new() };
        return json!({"type": "custom_tool_call", "id": id, "call_id": call.call_id, "name": call.name,
            "input": input, "status": status});
    }
    let arguments = if status == "completed" { call.input.to_string() } else { String::new() };
    let mut item = json!({"type": "function_call", "id": id, "call_id": call.call_id, "name": call.name,
        "arguments": arguments, "status": status});
    if let Some(ns) = namespaces.get(&call.name) {
        item["namespace"] = json!(ns);
    }
    item
}

/// OpenAI counts cached input inside `input_tokens`; Cursor reports it apart. An estimate (the
/// CLI reported no counts) says so: `estimated: true`. Reasoning tokens are the agent's count
/// where it gives one (ACP's `thoughtTokens`); the schema requires the field, so 0 stands for
/// "not counted" only when the agent said nothing.
pub(crate) fn usage_object(c: usage::Counted) -> Value {
    let u = c.usage;
    let input = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
    let mut v = json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens.unwrap_or(0)},
        "total_tokens": input + u.output_tokens,
    });
    if c.estimated {
        v["estimated"] = json!(true);
        v["tokenizer"] = json!(usage::estimator());
    }
    v
}

/// The Response object (`object: "response"`); `usage` is null until the response is complete.
pub(crate) fn response_object(
    meta: &Meta,
    status: &str,
    output: Vec<Value>,
    usage: Option<usage::Counted>,
    error: Option<Value>,
) -> Value {
    // The fields the Open Responses schema requires, with the values they had in effect: the CLI
    // has no sampling knobs, so none of the request's were applied.
    let completed_at = (status == "completed").then(turn::unix_now);
    json!({
        "id": meta.id,
        "object": "response",
        "created_at": meta.created_at,
        "completed_at": completed_at,
        "status": status,
        "background": false,
        "service_tier": "default",
        "frequency_penalty": 0.0,
        "presence_penalty": 0.0,
        "top_logprobs": 0,
        "max_tool_calls": null,
        "safety_identifier": null,
        "prompt_cache_key": null,
        "error": error,
        "incomplete_details": null,
        "instructions": meta.echo.instructions,
        "max_output_tokens": null,
        "model": meta.model,
        "output": output,
        "parallel_tool_calls": meta.echo.parallel_tool_calls,
        "previous_response_id": meta.previous_response_id,
        "reasoning": {"effort": meta.echo.effort, "summary": meta.echo.summary},
        "store": meta.store,
        "temperature": 1.0,
        "text": meta.echo.text,
        "tool_choice": meta.echo.tool_choice,
        "tools": meta.echo.tools,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage.map(usage_object),
        "metadata": {},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Usage;

    #[test]
    fn custom_calls_carry_the_raw_input_and_functions_a_json_string() {
        let custom: BTreeSet<String> = ["apply_patch".to_string()].into();
        let patch = ToolCall {
            call_id: "call_ab".into(),
            name: "apply_patch".into(),
            input: json!({"input": "*** Begin Patch\n"}),
        };
        let none = BTreeMap::new();
        let item = call_item_of(&custom, &none, &patch, "completed");
        assert_eq!(
            (item["type"].as_str(), item["input"].as_str()),
            (Some("custom_tool_call"), Some("*** Begin Patch\n"))
        );
        assert_eq!(item["call_id"], "call_ab");
        let exec = ToolCall { call_id: "call_cd".into(), name: "exec_command".into(), input: json!({"cmd": "ls"}) };
        let item = call_item_of(&custom, &none, &exec, "completed");
        assert_eq!(item["type"], "function_call");
        assert_eq!(serde_json::from_str::<Value>(item["arguments"].as_str().unwrap()).unwrap(), json!({"cmd": "ls"}));
    }

    #[test]
    fn usage_counts_cached_input_as_input() {
        let cli = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 100,
            cache_write_tokens: 1,
            reasoning_tokens: None,
        };
        let u = usage_object(usage::counted(Some(cli), 0, 0));
        assert!(u.get("estimated").is_none());
        assert_eq!(usage_object(usage::counted(None, 7, 2))["estimated"], true);
        assert_eq!((u["input_tokens"].as_u64(), u["total_tokens"].as_u64()), (Some(111), Some(116)));
        assert_eq!(u["input_tokens_details"]["cached_tokens"], 100);
        let thought = Usage { reasoning_tokens: Some(7), ..cli };
        assert_eq!(usage_object(usage::counted(Some(thought), 0, 0))["output_tokens_details"]["reasoning_tokens"], 7);
    }
}
