//! Structured outputs on `cursor-bridge serve`, every route, against the CLI double (both
//! backends): the format is told to the model after the prompt, the answer is checked against the
//! schema (its ```` ```json ```` fence taken off), asked for once more in the same chat when it
//! does not fit, and still wrong is a 502 `structured_output_invalid` in the route's error shape,
//! never a 200 with text the client cannot parse. Streamed, the answer is checked before any of it
//! is sent.

use serde_json::{json, Value};

use crate::http_openai::Server;
use crate::support::*;

const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];

fn weather_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["city", "celsius"],
        "properties": {"city": {"type": "string"}, "celsius": {"type": ["integer", "null"]}}})
}

const VALID: &str = r#"{"city": "Oslo", "celsius": 3}"#;

/// A chat completion asking for the weather schema; the double answers `answer`, and a repair
/// prompt `repair` (if any).
fn chat_body(label: &str, answer: &str, repair: Option<&str>, stream: bool) -> String {
    let scenario = match repair {
        Some(r) => json!({"answer": answer, "jsonRepairAnswer": r}),
        None => json!({"answer": answer}),
    };
    json!({
        "model": "auto", "stream": stream,
        "messages": [{"role": "user", "content": directed(label, scenario)}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "weather", "strict": true, "schema": weather_schema()}},
    })
    .to_string()
}

/// The turns whose prompt contains `label`, and the turn after each that continued its chat.
fn turns_with(dir: &TestDir, label: &str) -> Vec<Value> {
    let all = dir.turn_records();
    let Some(first) = all.iter().position(|t| t["prompt"].as_str().unwrap_or_default().contains(label)) else {
        return Vec::new();
    };
    let session = all[first]["sessionId"].clone();
    all[first..].iter().filter(|t| t["sessionId"] == session).cloned().collect()
}

fn content(text: &str) -> String {
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    v["choices"][0]["message"]["content"].as_str().unwrap_or_default().to_string()
}

#[test]
fn chat_completions_hold_the_answer_to_the_schema() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[]);
    let ask = |body: String| server.request("POST", "/v1/chat/completions", &JSON, &body);

    // Valid at once: the answer as given, one turn, the schema told after the prompt.
    let (status, _, text) = ask(chat_body("valid at once", VALID, None, false));
    assert_eq!(status, 200, "{text}");
    assert_eq!(content(&text), VALID);
    assert!(eventually(TIMEOUT, || turns_with(&dir, "valid at once").len() == 1));
    let prompt = turns_with(&dir, "valid at once")[0]["prompt"].as_str().unwrap().to_string();
    let told = prompt.find("<response_format>").unwrap_or_else(|| panic!("the format is told: {prompt}"));
    assert!(prompt.find("valid at once").unwrap() < told, "after the request: {prompt}");
    assert!(prompt[told..].contains(r#""required":["city","celsius"]"#), "with the schema: {prompt}");

    // Fenced: the fence is taken off; still one turn.
    let fenced = format!("```json\n{VALID}\n```");
    let (status, _, text) = ask(chat_body("fenced", &fenced, None, false));
    assert_eq!((status, content(&text)), (200, VALID.to_string()), "{text}");
    assert!(eventually(TIMEOUT, || turns_with(&dir, "fenced").len() == 1));

    // Wrong, then right when asked again in the same chat with what was wrong.
    let (status, _, text) = ask(chat_body("repaired", "Sure! It is 3 degrees in Oslo.", Some(VALID), false));
    assert_eq!((status, content(&text)), (200, VALID.to_string()), "{text}");
    assert!(eventually(TIMEOUT, || turns_with(&dir, "repaired").len() == 2), "{:?}", dir.turn_records());
    let second = turns_with(&dir, "repaired")[1]["prompt"].as_str().unwrap().to_string();
    assert!(
        second.starts_with("Your answer did not match the required JSON format: the answer is not JSON"),
        "{second}"
    );
    assert!(second.contains("<response_format>"), "the format is told again: {second}");

    // Valid JSON that breaks the schema, twice: a 502 that says so, not the text.
    let (status, _, text) =
        ask(chat_body("still wrong", r#"{"city": "Oslo"}"#, Some(r#"{"city": 3, "celsius": 1}"#), false));
    assert_eq!(status, 502, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["code"], "structured_output_invalid", "{text}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("`/city` must be of type string"), "{message}");
    assert!(eventually(TIMEOUT, || turns_with(&dir, "still wrong").len() == 2));

    // Unscripted, the double's model obeys the format, as a real model mostly does.
    let body = json!({"model": "auto", "messages": [{"role": "user", "content": "the weather, unscripted"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "weather", "schema": weather_schema()}}});
    let (status, _, text) = ask(body.to_string());
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&content(&text)).unwrap();
    assert!(answer["city"].is_string() && answer["celsius"].is_i64(), "{answer}");

    // `json_object`: any object; an array is asked for again.
    let body = json!({"model": "auto", "response_format": {"type": "json_object"}, "messages": [{"role": "user",
        "content": directed("an object", json!({"answer": "[1, 2]", "jsonRepairAnswer": "{\"n\": 2}"}))}]});
    let (status, _, text) = ask(body.to_string());
    assert_eq!((status, content(&text)), (200, r#"{"n": 2}"#.to_string()), "{text}");
}

#[test]
fn a_streamed_structured_answer_is_checked_before_it_is_sent() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[]);
    let (status, headers, text) =
        server.request("POST", "/v1/chat/completions", &JSON, &chat_body("streamed", "oops", Some(VALID), true));
    assert_eq!(status, 200, "{text}");
    assert!(headers.iter().any(|(k, v)| k == "content-type" && v.starts_with("text/event-stream")), "{headers:?}");
    let streamed: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str().map(String::from))
        .collect();
    assert_eq!(streamed, VALID, "only the checked answer is streamed: {text}");
    assert!(text.contains("data: [DONE]"), "{text}");
    // Still wrong: an error status before any event.
    let (status, headers, text) =
        server.request("POST", "/v1/chat/completions", &JSON, &chat_body("streamed wrong", "oops", Some("no"), true));
    assert_eq!(status, 502, "{text}");
    assert!(headers.iter().any(|(k, v)| k == "content-type" && v.starts_with("application/json")), "{headers:?}");
}

#[test]
fn responses_hold_the_answer_to_text_format() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[]);
    let format = json!({"type": "json_schema", "name": "weather", "strict": true, "schema": weather_schema()});
    let body = |label: &str, stream: bool| {
        let input = directed(label, json!({"answer": "not json", "jsonRepairAnswer": format!("```\n{VALID}\n```")}));
        json!({"model": "auto", "input": input, "stream": stream, "text": {"format": format}}).to_string()
    };
    let (status, _, text) = server.request("POST", "/v1/responses", &JSON, &body("responses whole", false));
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["output"][0]["content"][0]["text"], VALID, "{text}");
    assert_eq!(v["text"]["format"]["name"], "weather", "the format is echoed: {text}");
    let (status, _, text) = server.request("POST", "/v1/responses", &JSON, &body("responses streamed", true));
    assert_eq!(status, 200, "{text}");
    let events: Vec<Value> =
        text.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str(d).ok()).collect();
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(deltas, VALID, "{text}");
    assert_eq!(events.last().unwrap()["type"], "response.completed", "{text}");
    // Still wrong: 502, the OpenAI error shape.
    let input = directed("responses wrong", json!({"answer": "[]", "jsonRepairAnswer": "[]"}));
    let wrong = json!({"model": "auto", "input": input, "text": {"format": format}}).to_string();
    let (status, _, text) = server.request("POST", "/v1/responses", &JSON, &wrong);
    assert_eq!(status, 502, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["error"]["code"], "structured_output_invalid");
}

#[test]
fn messages_hold_the_answer_to_output_config() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[]);
    let body = |label: &str, answer: &str, repair: &str, stream: bool| {
        json!({"model": "claude-opus-5-5", "max_tokens": 1024, "stream": stream,
            "messages": [{"role": "user", "content": directed(label, json!({"answer": answer, "jsonRepairAnswer": repair}))}],
            "output_config": {"format": {"type": "json_schema", "schema": weather_schema()}}})
        .to_string()
    };
    let (status, _, text) = server.request("POST", "/v1/messages", &JSON, &body("messages", "nope", VALID, false));
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["content"][0]["text"], VALID, "{text}");
    let (status, _, text) = server.request("POST", "/v1/messages", &JSON, &body("messages wrong", "nope", "no", true));
    assert_eq!(status, 502, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((v["type"].as_str(), v["error"]["type"].as_str()), (Some("error"), Some("api_error")), "{text}");
    assert!(v["error"]["message"].as_str().unwrap().contains("did not match the requested format"), "{text}");
    // The beta's `output_format` is the same thing; other kinds are refused before any turn.
    let beta = json!({"model": "claude-opus-5-5", "max_tokens": 1024, "messages": [{"role": "user",
        "content": directed("beta", json!({"answer": VALID}))}],
        "output_format": {"type": "json_schema", "schema": weather_schema()}});
    let (status, _, text) = server.request("POST", "/v1/messages", &JSON, &beta.to_string());
    assert_eq!(status, 200, "{text}");
    let before = dir.turn_records().len();
    let odd = json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
        "output_config": {"format": {"type": "json_object"}}});
    let (status, _, text) = server.request("POST", "/v1/messages", &JSON, &odd.to_string());
    assert_eq!(status, 400, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["error"]["type"], "invalid_request_error");
    assert_eq!(dir.turn_records().len(), before, "no turn ran");
}
