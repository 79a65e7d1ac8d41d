//! `tool_choice: required` / a named tool on `cursor-bridge serve`, with the CLI double's model
//! unscripted: the model is told the call is required (on print mode in the prompt protocol's
//! tools block; on ACP, whose tools the agent hosts over MCP, in a sentence before the prompt) and
//! calls, as a real model mostly does. Every route, both backends.

use serde_json::{json, Value};

use crate::http_openai::Server;
use crate::support::*;

const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];

fn weather() -> Value {
    json!({"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}})
}

fn clock() -> Value {
    json!({"type": "object", "properties": {}})
}

/// The prompt text that reached the CLI with `label` in it (on ACP, a turn is in the session
/// store once it ended: after its tool round).
fn prompt_with(dir: &TestDir, label: &str) -> String {
    let prompts = || -> Vec<String> {
        dir.turn_records().iter().filter_map(|t| t["prompt"].as_str().map(String::from)).collect()
    };
    let mut found = None;
    eventually(TIMEOUT, || {
        found = prompts().into_iter().find(|p| p.contains(label));
        found.is_some()
    });
    found.unwrap_or_else(|| panic!("no prompt with {label:?}: {:?}", prompts()))
}

/// How the backends differ in this file: where the model is told a call is required.
struct Expected {
    told: fn(&str, &str),
}
/// Print mode: in the prompt protocol's tools block.
const ON_PRINT: Expected = Expected {
    told: |prompt, sentence| {
        let block = prompt.split("</client_tools>").next().unwrap_or_default();
        assert!(block.contains(sentence), "in the tools block: {prompt}");
    },
};
/// ACP: the tools are hosted (our MCP server), so the sentence goes before the prompt.
const ON_ACP: Expected = Expected {
    told: |prompt, sentence| {
        assert!(prompt.starts_with(&format!("{sentence}\n\n")), "said before the prompt: {prompt}");
        assert!(!prompt.contains("<client_tools>"), "the hosted tools are not described: {prompt}");
    },
};

/// What the model was told, as this backend tells it.
fn told(prompt: &str, sentence: &str) {
    (per_backend(ON_PRINT, ON_ACP).told)(prompt, sentence)
}

#[test]
fn an_unscripted_model_obeys_a_required_or_named_tool_choice() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[]);

    // Chat completions, `required`: a call of one of the tools, with arguments that fit it.
    let tools = json!([{"type": "function", "function": {"name": "get_time", "parameters": clock()}},
        {"type": "function", "function": {"name": "get_weather", "parameters": weather()}}]);
    let body = json!({"model": "auto", "tools": tools, "tool_choice": "required",
        "messages": [{"role": "user", "content": "required: what time is it?"}]});
    let (status, _, text) = server.request("POST", "/v1/chat/completions", &JSON, &body.to_string());
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls", "{text}");
    let call = v["choices"][0]["message"]["tool_calls"][0].clone();
    assert_eq!(call["function"]["name"], "get_time", "{text}");
    // The result goes back; the model answers with it (the same agent turn, on ACP).
    let mut follow = body.clone();
    follow["tool_choice"] = json!("auto");
    follow["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": null, "tool_calls": [call.clone()]}),
        json!({"role": "tool", "tool_call_id": call["id"], "content": "12:00"}),
    ]);
    let (status, _, text) = server.request("POST", "/v1/chat/completions", &JSON, &follow.to_string());
    assert_eq!(status, 200, "{text}");
    let answer = serde_json::from_str::<Value>(&text).unwrap()["choices"][0]["message"]["content"].clone();
    assert_eq!(answer, "Done. Results: get_time: 12:00", "{text}");

    // Responses, a named function: that one, its required argument filled in.
    let tools = json!([{"type": "function", "name": "get_time", "parameters": clock()},
        {"type": "function", "name": "get_weather", "parameters": weather()}]);
    let body = json!({"model": "auto", "tools": tools, "tool_choice": {"type": "function", "name": "get_weather"},
        "input": "named: weather in Oslo?"});
    let (status, _, text) = server.request("POST", "/v1/responses", &JSON, &body.to_string());
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let call = v["output"].as_array().unwrap().iter().find(|i| i["type"] == "function_call").cloned();
    let call = call.unwrap_or_else(|| panic!("a function call: {text}"));
    assert_eq!(call["name"], "get_weather", "{text}");
    let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert!(arguments["city"].is_string(), "{arguments}");
    let mut follow = body.clone();
    follow["tool_choice"] = json!("auto");
    follow["input"] = json!([{"role": "user", "content": "named: weather in Oslo?"}, call.clone(),
        {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}]);
    let (status, _, text) = server.request("POST", "/v1/responses", &JSON, &follow.to_string());
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("Done. Results: get_weather: sunny"), "{text}");

    // Anthropic Messages, `any`.
    let body = json!({"model": "claude-opus-5-5", "max_tokens": 256, "tool_choice": {"type": "any"},
        "tools": [{"name": "get_weather", "input_schema": weather()}],
        "messages": [{"role": "user", "content": "any: weather please"}]});
    let (status, _, text) = server.request("POST", "/v1/messages", &JSON, &body.to_string());
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["stop_reason"], "tool_use", "{text}");
    let used = v["content"].as_array().unwrap().iter().find(|b| b["type"] == "tool_use").cloned().unwrap();
    assert_eq!(used["name"], "get_weather", "{text}");

    // `auto`: the model answers in words.
    let body = json!({"model": "auto", "tools": [{"type": "function", "function": {"name": "get_time", "parameters": clock()}}],
        "messages": [{"role": "user", "content": "auto: hello"}]});
    let (status, _, text) = server.request("POST", "/v1/chat/completions", &JSON, &body.to_string());
    assert_eq!(status, 200, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["choices"][0]["finish_reason"], "stop", "{text}");

    told(&prompt_with(&dir, "required: what time"), "You must call a tool in this reply.");
    told(&prompt_with(&dir, "named: weather"), "You must call `get_weather` in this reply.");
    assert!(!prompt_with(&dir, "auto: hello").contains("You must call"));
}
