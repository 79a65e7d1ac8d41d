//! The loopback MCP host's request handling (`backend::mcp::methods::handle`, what the server
//! runs on every authorised POST body, with parked calls answered as the client would) fed
//! arbitrary bytes, against two tool offers: a fixed one (a name that fits, a shortened one, a
//! non-object schema) and one whose tool names are the input's own lines (non-UTF-8 replaced;
//! more than 40 lines bring the dispatcher). The input is also converted as an input schema
//! when it is JSON.
//!
//! Invariants checked:
//! 1. no panic;
//! 2. a refused body (HTTP 400) is a JSON-RPC error with `id` null or the message's id and code
//!    -32700 or -32600;
//! 3. otherwise every answer is `jsonrpc: "2.0"` with exactly one of `result` / `error`; each
//!    well-formed request (checked here from the raw JSON, not by the code under test) gets one
//!    answer with its id; there are never more answers than messages; no answer means HTTP 202;
//!    a body that is not a batch gets at most one answer, not in an array;
//! 4. a parked call names one of the client's tools; a `tools/call` result is one text block and
//!    a boolean `isError`;
//! 5. the offer lists at most 40 tools with unique names of `[A-Za-z0-9_-]` that fit
//!    beside the server name in 59 characters, a client name that fits is kept exactly, and each
//!    listed name resolves to the client tool at its place (or is the dispatcher, last);
//! 6. a converted schema is an object schema with `properties`, without `$schema`.
#![no_main]

use std::collections::HashSet;

use cursor_bridge::backend::cursor::acp::quirks::MCP_LIMITS;
use cursor_bridge::backend::mcp::methods::{self, Step};
use cursor_bridge::backend::mcp::offer::{ToolOffer, SERVER_NAME};
use cursor_bridge::backend::mcp::{names, schema, OfferedTool};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let fixed = ToolOffer::new(
        vec![
            tool("create_file", json!({"type": "object", "properties": {"path": {"type": "string"}}})),
            tool("mcp.github/search issues", json!({})),
            tool("run", json!({"type": "string"})),
        ],
        MCP_LIMITS,
    );
    let fixed_names = ["create_file", "mcp.github/search issues", "run"];
    exchange(&fixed, &fixed_names, data);

    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.split('\n').take(130).collect();
    let mut unique = Vec::new();
    let mut seen = HashSet::new();
    for line in &lines {
        if seen.insert(*line) {
            unique.push(*line);
        }
    }
    let built = ToolOffer::new(lines.iter().map(|n| tool(n, json!({"type": "object"}))).collect(), MCP_LIMITS);
    check_offer(&built, &unique);
    exchange(&built, &unique, data);

    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        let converted = schema::convert(&value);
        assert_eq!(converted.schema["type"], "object", "{converted:?}");
        assert!(converted.schema["properties"].is_object(), "{converted:?}");
        assert!(converted.schema.get("$schema").is_none(), "{converted:?}");
    }
});

fn tool(name: &str, input_schema: Value) -> OfferedTool {
    OfferedTool { name: name.to_string(), description: format!("{name} does it"), input_schema }
}

fn check_offer(offer: &ToolOffer, clients: &[&str]) {
    let listed = offer.listing()["tools"].as_array().expect("tools/list has tools").clone();
    assert!(listed.len() <= MCP_LIMITS.listed, "{} tools listed", listed.len());
    let budget = MCP_LIMITS.combined - SERVER_NAME.len();
    let mut seen = HashSet::new();
    let dispatcher = clients.len() > MCP_LIMITS.listed;
    for (i, entry) in listed.iter().enumerate() {
        let name = entry["name"].as_str().expect("a name");
        assert!(names::fits(name, budget), "listed name {name:?} does not fit");
        assert!(seen.insert(name.to_string()), "{name:?} listed twice");
        assert_eq!(entry["inputSchema"]["type"], "object");
        if dispatcher && i == listed.len() - 1 {
            continue;
        }
        let client = clients[i];
        if names::fits(client, budget) {
            assert_eq!(name, client, "a name that fits is kept");
        }
        let (resolved, _) = offer.resolve(name, None).expect("a listed name resolves");
        assert_eq!(resolved, client, "listed {name:?} resolves to the wrong tool");
    }
    assert_eq!(listed.len(), clients.len().min(MCP_LIMITS.listed));
}

/// Is `m` a request the handler must answer, and with which id? (Read from the raw JSON.)
fn request_id(m: &Value) -> Option<&Value> {
    let id = m.get("id").filter(|id| id.is_string() || id.is_number())?;
    let ok = m.get("jsonrpc") == Some(&json!("2.0"))
        && m.get("method").is_some_and(Value::is_string)
        && m.get("params").is_none_or(|p| p.is_object() || p.is_array());
    ok.then_some(id)
}

fn exchange(offer: &ToolOffer, clients: &[&str], data: &[u8]) {
    let handled = match methods::handle(offer, data) {
        Ok(handled) => handled,
        Err(refused) => {
            assert_eq!(refused["jsonrpc"], "2.0", "{refused}");
            let code = refused["error"]["code"].as_i64();
            assert!(matches!(code, Some(-32700) | Some(-32600)), "{refused}");
            assert!(refused.get("result").is_none(), "{refused}");
            assert!(refused["id"].is_null() || refused["id"].is_string() || refused["id"].is_number(), "{refused}");
            return;
        }
    };
    let raw: Value = serde_json::from_slice(data).expect("an accepted body is JSON");
    let messages: Vec<&Value> = match &raw {
        Value::Array(items) => items.iter().collect(),
        single => vec![single],
    };
    assert_eq!(handled.batch, raw.is_array());
    assert_eq!(handled.steps.len(), messages.len(), "one step per message");

    let mut answers = Vec::new();
    for step in &handled.steps {
        match step {
            Step::Answer(answer) => answers.push(answer.clone()),
            Step::Call(pending) => {
                assert!(clients.contains(&pending.tool.as_str()), "a call for {:?}", pending.tool);
                answers.push(methods::tool_result(pending.id.clone(), &format!("ran {}", pending.tool), false));
            }
            Step::Cancel(_) | Step::Nothing => {}
        }
    }
    let count = answers.len();
    for answer in &answers {
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert!(answer.get("result").is_some() != answer.get("error").is_some(), "{answer}");
        let content = &answer["result"]["content"];
        if !content.is_null() {
            assert_eq!(content.as_array().map(Vec::len), Some(1), "{answer}");
            assert_eq!(content[0]["type"], "text", "{answer}");
            assert!(content[0]["text"].is_string() && answer["result"]["isError"].is_boolean(), "{answer}");
        }
    }
    // Every request's id is answered (as many times as it was asked).
    let mut unanswered: Vec<Value> = answers.iter().map(|a| a["id"].clone()).collect();
    for id in messages.iter().filter_map(|m| request_id(m)) {
        let at = unanswered.iter().position(|a| a == id).unwrap_or_else(|| panic!("request {id} not answered"));
        unanswered.remove(at);
    }
    assert!(count <= messages.len());
    match methods::assemble(handled.batch, answers) {
        None => assert_eq!(count, 0, "answers lost"),
        Some(Value::Array(items)) => assert!(handled.batch && items.len() == count),
        Some(single) => assert!(!handled.batch && count == 1 && single.is_object()),
    }
}
