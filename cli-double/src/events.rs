//! stream-json events (docs/cursor-cli.md §4), with key orders copied from the transcripts
//! (tests/fixtures/). Every function returns one event object; `output::EventStream` turns it into
//! one NDJSON line.

use crate::json::{arr, obj, Json};

fn text_message(role: &str, text: &str) -> Json {
    obj([("role", role.into()), ("content", arr([obj([("type", "text".into()), ("text", text.into())])]))])
}

/// `system/init`: emitted only after auth and argument checks passed.
pub fn init(api_key_source: &str, cwd: &str, session_id: &str, model: &str, permission_mode: &str) -> Json {
    obj([
        ("type", "system".into()),
        ("subtype", "init".into()),
        ("apiKeySource", api_key_source.into()),
        ("cwd", cwd.into()),
        ("session_id", session_id.into()),
        ("model", model.into()),
        ("permissionMode", permission_mode.into()),
    ])
}

/// `user`: this turn's prompt, exactly as received.
pub fn user(prompt: &str, session_id: &str) -> Json {
    obj([("type", "user".into()), ("message", text_message("user", prompt)), ("session_id", session_id.into())])
}

/// `assistant`. The presence of `model_call_id` / `timestamp_ms` is what distinguishes the shapes:
/// delta (timestamp only), segment flush (both), end-of-turn flush / final segment (neither).
pub fn assistant(text: &str, session_id: &str, model_call_id: Option<&str>, timestamp_ms: Option<u64>) -> Json {
    let mut e = obj([
        ("type", "assistant".into()),
        ("message", text_message("assistant", text)),
        ("session_id", session_id.into()),
    ]);
    if let Some(id) = model_call_id {
        e.set("model_call_id", id.into());
    }
    if let Some(ts) = timestamp_ms {
        e.set("timestamp_ms", ts.into());
    }
    e
}

pub fn thinking_delta(text: &str, session_id: &str, timestamp_ms: u64) -> Json {
    obj([
        ("type", "thinking".into()),
        ("subtype", "delta".into()),
        ("text", text.into()),
        ("session_id", session_id.into()),
        ("timestamp_ms", timestamp_ms.into()),
    ])
}

pub fn thinking_completed(session_id: &str, timestamp_ms: u64) -> Json {
    obj([
        ("type", "thinking".into()),
        ("subtype", "completed".into()),
        ("session_id", session_id.into()),
        ("timestamp_ms", timestamp_ms.into()),
    ])
}

/// What a `tool_call` event needs to know about the call.
pub struct ToolCallInfo<'a> {
    pub call_id: &'a str,
    /// e.g. `shellToolCall`.
    pub key: &'a str,
    pub args: &'a Json,
    pub started_at_ms: u64,
}

/// The `tool_call` object: the `<kind>ToolCall` key first, then the 2026.07+ sibling keys in the
/// transcripts' order. Timestamps inside are strings, as in the real CLI.
fn tool_call_object(info: &ToolCallInfo<'_>, result: Option<&Json>, completed_at_ms: Option<u64>) -> Json {
    let mut inner = obj([("args", info.args.clone())]);
    if let Some(r) = result {
        inner.set("result", r.clone());
    }
    let mut call = Json::Obj(vec![(info.key.to_owned(), inner)]);
    call.set("hookAdditionalContexts", arr([]));
    call.set("toolCallId", info.call_id.into());
    call.set("startedAtMs", info.started_at_ms.to_string().into());
    if let Some(done) = completed_at_ms {
        call.set("completedAtMs", done.to_string().into());
    }
    call
}

pub fn tool_started(info: &ToolCallInfo<'_>, model_call_id: &str, session_id: &str, timestamp_ms: u64) -> Json {
    obj([
        ("type", "tool_call".into()),
        ("subtype", "started".into()),
        ("call_id", info.call_id.into()),
        ("tool_call", tool_call_object(info, None, None)),
        ("model_call_id", model_call_id.into()),
        ("session_id", session_id.into()),
        ("timestamp_ms", timestamp_ms.into()),
    ])
}

/// `completed` carries no `model_call_id` (2026.07+ captures).
pub fn tool_completed(
    info: &ToolCallInfo<'_>,
    result: &Json,
    completed_at_ms: u64,
    session_id: &str,
    timestamp_ms: u64,
) -> Json {
    obj([
        ("type", "tool_call".into()),
        ("subtype", "completed".into()),
        ("call_id", info.call_id.into()),
        ("tool_call", tool_call_object(info, Some(result), Some(completed_at_ms))),
        ("session_id", session_id.into()),
        ("timestamp_ms", timestamp_ms.into()),
    ])
}

/// A permission request in a non-force run (transcript 10). It carries no `session_id`.
pub fn interaction_query(id: u64, query_type: &str, args: Json) -> Json {
    obj([
        ("type", "interaction_query".into()),
        ("subtype", "request".into()),
        ("query_type", query_type.into()),
        ("query", obj([("id", id.into()), (query_type, obj([("args", args), ("skipApproval", false.into())]))])),
    ])
}

pub struct ResultFields<'a> {
    pub is_error: bool,
    pub duration_ms: u64,
    pub text: &'a str,
    pub session_id: &'a str,
    pub request_id: &'a str,
    pub usage: Json,
}

/// The terminal `result` (also the whole output of `--output-format json`).
pub fn result(r: &ResultFields<'_>) -> Json {
    obj([
        ("type", "result".into()),
        ("subtype", if r.is_error { "error" } else { "success" }.into()),
        ("duration_ms", r.duration_ms.into()),
        ("duration_api_ms", r.duration_ms.into()),
        ("is_error", r.is_error.into()),
        ("result", r.text.into()),
        ("session_id", r.session_id.into()),
        ("request_id", r.request_id.into()),
        ("usage", r.usage.clone()),
    ])
}

/// The refusal envelope seen once on the stream (S-aid).
pub fn error_envelope(message: &str) -> Json {
    obj([("type", "error".into()), ("message", message.into())])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte-for-byte against lines of transcript 04 / 01.
    #[test]
    fn matches_transcript_lines() {
        let sid = "7c6b5a49-3827-4165-b0f1-e2d3c4b5a697";
        let call = "call_Xq3kF9sLm2Pz8TvN1rYc0aBd\nfc_0d2609f619ccdca801698ca0a51c6481a0aaa34fcf724631a9";
        let args = obj([("path", "/home/dev/project/app.ts".into())]);
        let info = ToolCallInfo { call_id: call, key: "readToolCall", args: &args, started_at_ms: 1789045260003 };
        let started = tool_started(&info, "e154b6ed-4b7a-4f1c-9d2e-8a6b4c2d0e1f-0-q6ej", sid, 1789045260001);
        assert_eq!(
            started.to_compact(),
            r#"{"type":"tool_call","subtype":"started","call_id":"call_Xq3kF9sLm2Pz8TvN1rYc0aBd\nfc_0d2609f619ccdca801698ca0a51c6481a0aaa34fcf724631a9","tool_call":{"readToolCall":{"args":{"path":"/home/dev/project/app.ts"}},"hookAdditionalContexts":[],"toolCallId":"call_Xq3kF9sLm2Pz8TvN1rYc0aBd\nfc_0d2609f619ccdca801698ca0a51c6481a0aaa34fcf724631a9","startedAtMs":"1789045260003"},"model_call_id":"e154b6ed-4b7a-4f1c-9d2e-8a6b4c2d0e1f-0-q6ej","session_id":"7c6b5a49-3827-4165-b0f1-e2d3c4b5a697","timestamp_ms":1789045260001}"#
        );
        let r = result(&ResultFields {
            is_error: false,
            duration_ms: 3184,
            text: "4",
            session_id: "5f0c2b7e-8d41-4a3c-9e6b-1c2d3e4f5a61",
            request_id: "9b1e4c2a-7f30-4d8e-a1b2-c3d4e5f60718",
            usage: Json::parse(r#"{"inputTokens":1203,"outputTokens":2,"cacheReadTokens":17920,"cacheWriteTokens":0}"#)
                .unwrap(),
        });
        assert_eq!(
            r.to_compact(),
            r#"{"type":"result","subtype":"success","duration_ms":3184,"duration_api_ms":3184,"is_error":false,"result":"4","session_id":"5f0c2b7e-8d41-4a3c-9e6b-1c2d3e4f5a61","request_id":"9b1e4c2a-7f30-4d8e-a1b2-c3d4e5f60718","usage":{"inputTokens":1203,"outputTokens":2,"cacheReadTokens":17920,"cacheWriteTokens":0}}"#
        );
    }
}
