//! The Chat Completions wire: a [`Reply`] as one `chat.completion`, or as SSE chunks
//! (`chat.completion.chunk`, reasoning in `delta.reasoning_content`, tool calls in
//! `delta.tool_calls`, usage last when `stream_options.include_usage`, then `[DONE]`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::reply::{self, Reply};
use super::{Log, Logged, Outcome, MODEL_ID};

pub(super) async fn models(State(log): State<Log>) -> Response {
    log.push(entry("GET", "/v1/models", false, Vec::new(), None, Outcome::Completed));
    json_response(
        StatusCode::OK,
        json!({"object": "list", "data": [
        {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "fake"}]}),
    )
}

pub(super) async fn not_found(State(log): State<Log>, method: Method, uri: Uri) -> Response {
    log.push(entry(method.as_str(), &uri.to_string(), false, Vec::new(), None, Outcome::Completed));
    let message = format!("the fake model serves no {method} {uri}");
    json_response(StatusCode::NOT_FOUND, json!({"error": {"message": message, "type": "invalid_request_error"}}))
}

pub(super) async fn chat_completions(State(log): State<Log>, body: Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        log.push(entry("POST", "/v1/chat/completions", false, Vec::new(), None, Outcome::Completed));
        let error = json!({"error": {"message": "the body is not JSON", "type": "invalid_request_error"}});
        return json_response(StatusCode::BAD_REQUEST, error);
    };
    let answer = reply::reply(&body);
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = body.get("model").and_then(Value::as_str).unwrap_or(MODEL_ID).to_string();
    let usage = usage(&body, &answer);
    let messages = reply::messages(&body);
    if !stream {
        log.push(entry("POST", "/v1/chat/completions", false, messages, Some(answer.clone()), Outcome::Completed));
        return json_response(StatusCode::OK, completion(&model, &answer, usage));
    }
    let include_usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
    let index =
        log.push(entry("POST", "/v1/chat/completions", true, messages, Some(answer.clone()), Outcome::Streaming));
    let chunks = Chunks { queue: chunks(&model, &answer, include_usage.then_some(usage)), log, index, sent: 0 };
    let events = futures_util::stream::unfold(chunks, |mut chunks| async move {
        let chunk = chunks.queue.pop_front()?;
        if let Some(pause) = chunk.pause {
            tokio::time::sleep(pause).await;
        }
        if chunk.delta {
            chunks.sent += 1;
            let sent = chunks.sent;
            chunks.log.update(chunks.index, |e| e.deltas_sent = sent);
        }
        if chunks.queue.is_empty() {
            chunks.log.update(chunks.index, |e| e.outcome = Outcome::Completed);
        }
        Some((Ok::<_, Infallible>(Event::default().data(chunk.data)), chunks))
    });
    Sse::new(events).into_response()
}

/// One SSE event to write, and the pause before it.
struct Chunk {
    data: String,
    pause: Option<Duration>,
    /// Text or reasoning (counted in `deltas_sent`).
    delta: bool,
}

/// A stream in progress. Dropped before its last chunk went out: the client hung up.
struct Chunks {
    queue: VecDeque<Chunk>,
    log: Log,
    index: usize,
    sent: usize,
}

impl Drop for Chunks {
    fn drop(&mut self) {
        self.log.update(self.index, |e| {
            if e.outcome == Outcome::Streaming {
                e.outcome = Outcome::Disconnected;
            }
        });
    }
}

fn entry(
    method: &str,
    path: &str,
    stream: bool,
    messages: Vec<reply::Message>,
    reply: Option<Reply>,
    outcome: Outcome,
) -> Logged {
    Logged { method: method.into(), path: path.into(), stream, messages, reply, deltas_sent: 0, outcome }
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, [("content-type", "application/json")], body.to_string()).into_response()
}

/// Rough but deterministic: a token per four characters sent, one per delta received.
fn usage(body: &Value, answer: &Reply) -> Value {
    let prompt = (reply::messages(body).iter().map(|m| m.text.len()).sum::<usize>() / 4).max(1);
    let completion = match answer {
        Reply::Text { thinking, deltas, .. } => thinking.len() + deltas.len(),
        Reply::ToolCall { .. } => 1,
    };
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

const COMPLETION_ID: &str = "chatcmpl-fake";
const CALL_ID: &str = "call_fake";

fn completion(model: &str, answer: &Reply, usage: Value) -> Value {
    let (message, finish) = match answer {
        Reply::Text { thinking, .. } => {
            let mut message = json!({"role": "assistant", "content": answer.text()});
            if !thinking.is_empty() {
                message["reasoning_content"] = json!(thinking.concat());
            }
            (message, "stop")
        }
        Reply::ToolCall { name, arguments } => (
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": CALL_ID, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]}),
            "tool_calls",
        ),
    };
    json!({"id": COMPLETION_ID, "object": "chat.completion", "created": 0, "model": model,
           "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})
}

fn chunks(model: &str, answer: &Reply, usage: Option<Value>) -> VecDeque<Chunk> {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": COMPLETION_ID, "object": "chat.completion.chunk", "created": 0, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    let plain = |data: String| Chunk { data, pause: None, delta: false };
    let mut out = VecDeque::from([plain(chunk(json!({"role": "assistant", "content": ""}), None))]);
    let finish = match answer {
        Reply::Text { thinking, deltas, pause } => {
            for t in thinking {
                out.push_back(Chunk { data: chunk(json!({"reasoning_content": t}), None), pause: None, delta: true });
            }
            // The pause comes before each delta but the first, so a slow answer starts at once.
            for (i, d) in deltas.iter().enumerate() {
                let pause = if i == 0 { None } else { *pause };
                out.push_back(Chunk { data: chunk(json!({"content": d}), None), pause, delta: true });
            }
            "stop"
        }
        Reply::ToolCall { name, arguments } => {
            let call =
                json!({"index": 0, "id": CALL_ID, "type": "function", "function": {"name": name, "arguments": ""}});
            out.push_back(plain(chunk(json!({"tool_calls": [call]}), None)));
            let args = json!({"index": 0, "function": {"arguments": arguments.to_string()}});
            out.push_back(plain(chunk(json!({"tool_calls": [args]}), None)));
            "tool_calls"
        }
    };
    out.push_back(plain(chunk(json!({}), Some(finish))));
    if let Some(usage) = usage {
        out.push_back(plain(
            json!({"id": COMPLETION_ID, "object": "chat.completion.chunk", "created": 0, "model": model,
                   "choices": [], "usage": usage})
            .to_string(),
        ));
    }
    out.push_back(plain("[DONE]".into()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_answer_is_its_deltas_in_order_then_the_finish_then_done() {
        let answer = Reply::Text { thinking: vec!["hm".into()], deltas: vec!["a ".into(), "b".into()], pause: None };
        let data: Vec<Value> = chunks("m", &answer, Some(json!({"total_tokens": 3})))
            .into_iter()
            .map(|c| serde_json::from_str(&c.data).unwrap_or(Value::String(c.data)))
            .collect();
        let delta = |i: usize| data[i].pointer("/choices/0/delta").cloned().unwrap_or(Value::Null);
        assert_eq!(delta(0), json!({"role": "assistant", "content": ""}));
        assert_eq!(delta(1), json!({"reasoning_content": "hm"}));
        assert_eq!((delta(2), delta(3)), (json!({"content": "a "}), json!({"content": "b"})));
        assert_eq!(data[4].pointer("/choices/0/finish_reason"), Some(&json!("stop")));
        assert_eq!(data[5]["usage"], json!({"total_tokens": 3}));
        assert_eq!(data[6], json!("[DONE]"));
    }

    #[test]
    fn a_tool_call_streams_its_name_then_its_arguments() {
        let answer = Reply::ToolCall { name: "bash".into(), arguments: json!({"command": "ls"}) };
        let data: Vec<Value> =
            chunks("m", &answer, None).into_iter().filter_map(|c| serde_json::from_str(&c.data).ok()).collect();
        assert_eq!(data[1].pointer("/choices/0/delta/tool_calls/0/function/name"), Some(&json!("bash")));
        assert_eq!(
            data[2].pointer("/choices/0/delta/tool_calls/0/function/arguments"),
            Some(&json!(r#"{"command":"ls"}"#))
        );
        assert_eq!(data[3].pointer("/choices/0/finish_reason"), Some(&json!("tool_calls")));
        let whole = completion("m", &answer, json!({}));
        assert_eq!(whole.pointer("/choices/0/message/tool_calls/0/function/name"), Some(&json!("bash")));
    }
}
