//! JSON-RPC 2.0 as an HTTP body carries it: one message or a batch, each read into what it is.
//! Nothing here knows MCP. The agent's MCP client only ever sends us requests and notifications;
//! a response from it (we send no requests) is recognised and ignored.

use serde_json::{json, Map, Value};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
/// Not JSON-RPC's own, but what MCP's SDKs use for "the request was cancelled".
pub const REQUEST_CANCELLED: i64 = -32800;
/// What MCP's reference servers answer for an unknown `Mcp-Session-Id`.
pub const SESSION_NOT_FOUND: i64 = -32001;
/// Messages in one batch. A batch is a client's burst of list calls, never hundreds.
pub const MAX_BATCH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A response to a request of ours (we send none).
    Response,
    /// Not a request: answered with an error for `id` (null when none could be read).
    Invalid {
        id: Value,
        why: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Single(Message),
    Batch(Vec<Message>),
}

/// The messages of a body, or the error response for a body that is not JSON-RPC at all.
pub fn parse(body: &[u8]) -> Result<Body, Value> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| error(Value::Null, PARSE_ERROR, &format!("the body is not JSON: {e}")))?;
    match value {
        Value::Array(items) if items.is_empty() => Err(error(Value::Null, INVALID_REQUEST, "an empty batch")),
        Value::Array(items) if items.len() > MAX_BATCH => {
            Err(error(Value::Null, INVALID_REQUEST, &format!("a batch of more than {MAX_BATCH} messages")))
        }
        Value::Array(items) => Ok(Body::Batch(items.into_iter().map(classify).collect())),
        single => Ok(Body::Single(classify(single))),
    }
}

/// What one message is.
pub fn classify(value: Value) -> Message {
    let Value::Object(mut map) = value else {
        return invalid(Value::Null, "a message must be a JSON object");
    };
    // An id the answer can carry: MCP allows strings and numbers (not null, unlike JSON-RPC).
    let id = match map.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => return invalid(Value::Null, "`id` must be a string or a number"),
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id.unwrap_or(Value::Null), "`jsonrpc` must be \"2.0\"");
    }
    let method = match map.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => return invalid(id.unwrap_or(Value::Null), "`method` must be a string"),
        None if id.is_some() && (map.contains_key("result") || map.contains_key("error")) => return Message::Response,
        None => return invalid(id.unwrap_or(Value::Null), "no `method`"),
    };
    let params = match map.remove("params") {
        None => Value::Null,
        Some(params @ (Value::Object(_) | Value::Array(_))) => params,
        Some(_) => return invalid(id.unwrap_or(Value::Null), "`params` must be an object or an array"),
    };
    match id {
        Some(id) => Message::Request { id, method, params },
        None => Message::Notification { method, params },
    }
}

fn invalid(id: Value, why: &str) -> Message {
    Message::Invalid { id, why: why.to_string() }
}

pub fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn error(id: Value, code: i64, message: &str) -> Value {
    let mut error = Map::new();
    error.insert("code".into(), code.into());
    error.insert("message".into(), message.into());
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_read_for_what_they_are() {
        let request = |id: Value, method: &str, params: Value| Message::Request { id, method: method.into(), params };
        let cases: Vec<(&str, Message)> = vec![
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, request(json!(1), "ping", Value::Null)),
            (
                r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#,
                request(json!("a"), "tools/list", json!({})),
            ),
            (r#"{"jsonrpc":"2.0","id":2.5,"method":"x","params":[1]}"#, request(json!(2.5), "x", json!([1]))),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                Message::Notification { method: "notifications/initialized".into(), params: Value::Null },
            ),
            (r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, Message::Response),
            (r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}"#, Message::Response),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                invalid(Value::Null, "`id` must be a string or a number"),
            ),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, invalid(Value::Null, "`id` must be a string or a number")),
            (r#"{"id":3,"method":"ping"}"#, invalid(json!(3), "`jsonrpc` must be \"2.0\"")),
            (r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, invalid(json!(3), "`jsonrpc` must be \"2.0\"")),
            (r#"{"jsonrpc":"2.0","id":3,"method":5}"#, invalid(json!(3), "`method` must be a string")),
            (r#"{"jsonrpc":"2.0","id":3}"#, invalid(json!(3), "no `method`")),
            (r#"{"jsonrpc":"2.0","result":{}}"#, invalid(Value::Null, "no `method`")),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"m","params":"p"}"#,
                invalid(json!(3), "`params` must be an object or an array"),
            ),
            (r#"5"#, invalid(Value::Null, "a message must be a JSON object")),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text.as_bytes()), Ok(Body::Single(expected)), "{text}");
        }
    }

    #[test]
    fn bodies_that_are_not_json_rpc_are_refused_whole() {
        let code = |body: &str| parse(body.as_bytes()).unwrap_err()["error"]["code"].as_i64().unwrap();
        assert_eq!(code("{"), PARSE_ERROR);
        assert_eq!(code(""), PARSE_ERROR);
        assert_eq!(code("\u{feff}{}"), PARSE_ERROR);
        assert_eq!(code("[]"), INVALID_REQUEST);
        let too_many = format!("[{}]", vec![r#"{"jsonrpc":"2.0","method":"n"}"#; MAX_BATCH + 1].join(","));
        assert_eq!(code(&too_many), INVALID_REQUEST);
        let refused = parse(b"{").unwrap_err();
        assert_eq!(refused["id"], Value::Null);
        assert!(refused["error"]["message"].as_str().unwrap().starts_with("the body is not JSON"));
    }

    #[test]
    fn a_batch_keeps_its_order() {
        let body = r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},7]"#;
        let Ok(Body::Batch(messages)) = parse(body.as_bytes()) else { panic!("not a batch") };
        assert!(matches!(&messages[0], Message::Request { method, .. } if method == "a"));
        assert!(matches!(&messages[1], Message::Notification { method, .. } if method == "b"));
        assert!(matches!(&messages[2], Message::Invalid { .. }));
    }
}
