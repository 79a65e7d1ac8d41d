//! The MCP methods a tools-only server answers, over one HTTP body. No I/O and no waiting: a
//! `tools/call` comes out as a [`Pending`] call that the server parks (`server.rs`) and answers
//! with [`tool_result`] later, so the fuzz target drives this file just as the server does.
//!
//! What Cursor's MCP client sends (docs/client-tools.md): `initialize`, `notifications/initialized`,
//! `tools/list`, `resources/list`, `prompts/list`, `resources/subscribe`, then `tools/call`s. The
//! lists we do not serve are answered empty rather than refused, so a client that calls them
//! without checking our capabilities does not give up on the server.
//!
//! This is the handshake era of MCP (up to 2025-11-25). The stateless 2026-07-28 revision drops
//! `initialize` and sessions; its clients that also speak the older revisions probe
//! `server/discover` first and fall back to `initialize` on any error that is not one of the new
//! revision's own (-32020 to -32022), so the plain -32601 below keeps them working.

use serde_json::{json, Value};

use super::jsonrpc::{self, Body, Message, INVALID_PARAMS, METHOD_NOT_FOUND};
use super::offer::ToolOffer;

/// Versions answered as asked; a client asking for another gets [`LATEST`] (and may then go).
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
pub const LATEST: &str = "2025-11-25";
pub const SERVER_INFO_NAME: &str = "cursor-bridge";

/// What one message asks of the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Answered at once.
    Answer(Value),
    /// A call for the client: answered when its result comes.
    Call(Pending),
    /// `notifications/cancelled`: the agent no longer waits for this request id.
    Cancel(Value),
    /// A notification or a response: nothing to answer.
    Nothing,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub id: Value,
    /// The client's tool (its own name) and the arguments in the client's schema.
    pub tool: String,
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Handled {
    pub steps: Vec<Step>,
    /// The body was a batch, so the answers go back as one (even when there is one answer).
    pub batch: bool,
    /// An `initialize` was answered: the server opens a session.
    pub initialize: bool,
    /// A `tools/list` was answered.
    pub listed: bool,
}

/// The steps of one body, or the error response (HTTP 400) for a body that is not a message.
pub fn handle(offer: &ToolOffer, body: &[u8]) -> Result<Handled, Value> {
    let (messages, batch) = match jsonrpc::parse(body)? {
        // A lone invalid message is a body the server cannot accept; in a batch it is one answer.
        Body::Single(Message::Invalid { id, why }) => {
            return Err(jsonrpc::error(id, jsonrpc::INVALID_REQUEST, &why));
        }
        Body::Single(message) => (vec![message], false),
        Body::Batch(messages) => (messages, true),
    };
    let mut handled = Handled { steps: Vec::with_capacity(messages.len()), batch, initialize: false, listed: false };
    for message in messages {
        let step = match message {
            Message::Request { id, method, params } => request(offer, id, &method, &params, &mut handled),
            Message::Notification { method, params } => match method.as_str() {
                "notifications/cancelled" => params.get("requestId").cloned().map_or(Step::Nothing, Step::Cancel),
                _ => Step::Nothing,
            },
            Message::Response => Step::Nothing,
            Message::Invalid { id, why } => Step::Answer(jsonrpc::error(id, jsonrpc::INVALID_REQUEST, &why)),
        };
        handled.steps.push(step);
    }
    Ok(handled)
}

fn request(offer: &ToolOffer, id: Value, method: &str, params: &Value, handled: &mut Handled) -> Step {
    let answer = match method {
        "initialize" => {
            handled.initialize = true;
            initialize(params)
        }
        "ping" => json!({}),
        "tools/list" => {
            handled.listed = true;
            offer.listing().clone()
        }
        "tools/call" => {
            let Some(name) = params.get("name").and_then(Value::as_str) else {
                return Step::Answer(jsonrpc::error(id, INVALID_PARAMS, "tools/call needs `name`, a string"));
            };
            return match offer.resolve(name, params.get("arguments")) {
                Ok((tool, arguments)) => Step::Call(Pending { id, tool, arguments }),
                Err(text) => Step::Answer(tool_result(id, &text, true)),
            };
        }
        "resources/list" => json!({"resources": []}),
        "resources/templates/list" => json!({"resourceTemplates": []}),
        "prompts/list" => json!({"prompts": []}),
        other => {
            let text = format!("method not found: {}", crate::util::text::one_line(other, 100));
            return Step::Answer(jsonrpc::error(id, METHOD_NOT_FOUND, &text));
        }
    };
    Step::Answer(jsonrpc::result(id, answer))
}

fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked.and_then(|v| PROTOCOL_VERSIONS.iter().find(|known| **known == v)).unwrap_or(&LATEST);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": SERVER_INFO_NAME, "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The answer to a `tools/call`: the text as one text block, never structured content.
pub fn tool_result(id: Value, text: &str, is_error: bool) -> Value {
    jsonrpc::result(id, json!({"content": [{"type": "text", "text": text}], "isError": is_error}))
}

/// The HTTP body for the answers of one request body: `None` when there are none (HTTP 202).
pub fn assemble(batch: bool, mut answers: Vec<Value>) -> Option<Value> {
    match (batch, answers.len()) {
        (_, 0) => None,
        (false, _) => answers.pop(),
        (true, _) => Some(Value::Array(answers)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mcp::calls::OfferedTool;

    const FIXTURE: &str = include_str!("../../../tests/fixtures/mcp/exchanges.json");

    fn offer() -> ToolOffer {
        let tool = |name: &str| OfferedTool {
            name: name.into(),
            description: format!("Does {name}."),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        };
        ToolOffer::new(vec![tool("create_file"), tool("read.file")], crate::backend::mcp::TEST_LIMITS)
    }

    /// `want` is contained in `got`: every key of an object, every item of an array (same length).
    fn contained(want: &Value, got: &Value, at: &str) -> Result<(), String> {
        match (want, got) {
            (Value::Object(w), Value::Object(g)) => w.iter().try_for_each(|(k, v)| {
                g.get(k).ok_or(format!("{at}.{k} missing")).and_then(|g| contained(v, g, &format!("{at}.{k}")))
            }),
            (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
                w.iter().zip(g).enumerate().try_for_each(|(i, (w, g))| contained(w, g, &format!("{at}[{i}]")))
            }
            _ if want == got => Ok(()),
            _ => Err(format!("{at}: want {want}, got {got}")),
        }
    }

    /// Each case: a body (`send`, JSON; or `raw`, text), then what comes back: `refused` (the 400
    /// body), or `answers` (the response body; null for none) and the calls to park (`calls`).
    #[test]
    fn exchanges_go_as_the_fixture_says() {
        let cases: Vec<Value> = serde_json::from_str(FIXTURE).unwrap();
        assert!(cases.len() >= 15, "the fixture lost its cases");
        let offer = offer();
        for case in &cases {
            let why = case["why"].as_str().unwrap();
            let body = match case.get("raw") {
                Some(raw) => raw.as_str().unwrap().to_string(),
                None => case["send"].to_string(),
            };
            let outcome = handle(&offer, body.as_bytes());
            if let Some(refused) = case.get("refused") {
                let got = outcome.expect_err(why);
                contained(refused, &got, "refused").unwrap_or_else(|e| panic!("{why}: {e}"));
                continue;
            }
            let handled = outcome.unwrap_or_else(|e| panic!("{why}: refused {e}"));
            // Answer parked calls with a text naming the call, as the client would.
            let mut calls = Vec::new();
            let answers: Vec<Value> = handled
                .steps
                .iter()
                .filter_map(|step| match step {
                    Step::Answer(v) => Some(v.clone()),
                    Step::Call(p) => {
                        calls.push(json!({"tool": p.tool, "arguments": p.arguments}));
                        Some(tool_result(p.id.clone(), &format!("ran {}", p.tool), false))
                    }
                    Step::Cancel(_) | Step::Nothing => None,
                })
                .collect();
            let got = assemble(handled.batch, answers).unwrap_or(Value::Null);
            contained(&case["answers"], &got, "answers").unwrap_or_else(|e| panic!("{why}: {e}\n{got:#}"));
            contained(&case.get("calls").cloned().unwrap_or(json!([])), &Value::Array(calls), "calls")
                .unwrap_or_else(|e| panic!("{why}: {e}"));
            assert_eq!(handled.initialize, case["initialize"].as_bool().unwrap_or(false), "{why}");
            assert_eq!(handled.listed, case["listed"].as_bool().unwrap_or(false), "{why}");
        }
    }

    #[test]
    fn cancellation_names_the_request() {
        let body =
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"timeout"}}"#;
        let handled = handle(&offer(), body).unwrap();
        assert_eq!(handled.steps, [Step::Cancel(json!(4))]);
        let body = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#;
        assert_eq!(handle(&offer(), body).unwrap().steps, [Step::Nothing]);
    }
}
