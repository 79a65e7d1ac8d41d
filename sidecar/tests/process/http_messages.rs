//! `POST /v1/messages` (Anthropic's Messages API) on `cursor-bridge serve`, against the CLI
//! double: driven by the official `anthropic` Python package (tests/http/anthropic_client.py, in a
//! venv of its own, target/py-anthropic, the version pinned here), plus plain HTTP checks.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::http_openai::{python_venv, Server};
use crate::support::*;

/// How the backends differ in this file's tests.
struct Expected {
    /// The CLI reports no token counts (ACP today), so the usage is the bridge's estimate, said so
    /// in `usage.estimated` and the `x-cursor-bridge-usage` header; print mode's are the CLI's.
    usage_estimated: bool,
}

const ON_PRINT: Expected = Expected { usage_estimated: false };
const ON_ACP: Expected = Expected { usage_estimated: true };

fn expected() -> &'static Expected {
    per_backend(&ON_PRINT, &ON_ACP)
}

/// The `anthropic` package the test runs (pinned: its checks read the SDK's types).
const ANTHROPIC: &str = "anthropic==2.16.0";

#[test]
fn the_anthropic_python_client_speaks_the_messages_api_to_serve() {
    let python =
        python_venv("py-anthropic", &[ANTHROPIC]).unwrap_or_else(|e| panic!("could not set up {ANTHROPIC}: {e}"));
    let dir = TestDir::new();
    let key = "test-client-key-a7c1";
    let server = Server::start_with_args(
        &dir,
        &["--model", "opus-5"],
        &[("CURSOR_BRIDGE_API_KEY", key), ("CURSOR_DOUBLE_ACP_PROMPT_USAGE", "tokens")],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/http/anthropic_client.py");
    let out = Command::new(&python)
        .arg(&script)
        .env("BASE_URL", format!("http://{}", server.addr))
        .env("KEY", key)
        .env("OPEN_RECORD", dir.record_file())
        .env("OPEN_ACP_SESSIONS", dir.path().join("home/.cursor/acp-sessions"))
        .env("BACKEND", test_backend())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_BASE_URL")
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    let last = stdout.lines().last().unwrap_or_default().to_string();
    let checks = stdout.lines().next().and_then(|l| l.rsplit(", ").next()).and_then(|c| c.strip_suffix(" checks"));
    let all = checks.map(|n| format!("{n} passed, 0 failed"));
    assert!(
        out.status.success() && all.as_deref() == Some(last.as_str()),
        "the anthropic checks failed ({}): {last}\nstderr:\n{}\nserver stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.stderr.lock().unwrap()
    );
    assert!(!dir.log_text().contains(key), "the client key is in the log");
}

/// The counts of `text` with the bridge's tokenizer (held against tiktoken's own counts by the
/// library's tests, util/tokens.rs).
fn o200k(text: &str) -> u64 {
    let vocabulary = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/o200k_base.tiktoken");
    cursor_bridge::util::tokens::Tokenizer::load(&vocabulary).unwrap().count(text)
}

fn header<'a>(head: &'a [(String, String)], name: &str) -> Option<&'a str> {
    head.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

#[test]
fn without_the_clis_counts_every_route_reports_a_marked_estimate() {
    let dir = TestDir::new();
    // No usage knob: the double's ACP agent reports no counts, as Cursor's does; print mode's
    // result always has them.
    let server = Server::start(&dir, &[]);
    let headers = [("Content-Type", "application/json"), ("anthropic-version", "2023-06-01")];
    let user = json!([{"role": "user", "content": "count these words please"}]);
    // o200k_base cuts the question into 4 tokens (tiktoken agrees); characters / 4 would say 6.
    let question = 4;
    let routes = [
        (
            "/v1/messages",
            json!({"model": "auto", "max_tokens": 100, "messages": user}),
            "/usage/input_tokens",
            "/usage/output_tokens",
            "/content/0/text",
        ),
        (
            "/v1/chat/completions",
            json!({"model": "auto", "messages": user}),
            "/usage/prompt_tokens",
            "/usage/completion_tokens",
            "/choices/0/message/content",
        ),
        (
            "/v1/responses",
            json!({"model": "auto", "input": "count these words please"}),
            "/usage/input_tokens",
            "/usage/output_tokens",
            "/output/0/content/0/text",
        ),
    ];
    for (route, body, input, output, answer) in routes {
        let (status, head, text) = server.request("POST", route, &headers, &body.to_string());
        assert_eq!(status, 200, "{route}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        let estimate = header(&head, "x-cursor-bridge-usage") == Some("estimate");
        let count = |p: &str| v.pointer(p).and_then(Value::as_u64);
        assert!(count(input).is_some_and(|n| n > 0), "{route}: counts: {text}");
        if route == "/v1/messages" {
            // The fields Anthropic's schema requires beyond the counts.
            for pointer in [
                "/stop_details",
                "/container",
                "/usage/cache_creation",
                "/usage/server_tool_use",
                "/content/0/citations",
            ] {
                assert!(v.pointer(pointer).is_some(), "{route}: no {pointer}: {text}");
            }
        }
        if expected().usage_estimated {
            assert_eq!(
                (&v["usage"]["estimated"], &v["usage"]["tokenizer"]),
                (&json!(true), &json!("o200k_base")),
                "{route}: {text}"
            );
            assert!(estimate && header(&head, "x-cursor-bridge-tokenizer") == Some("o200k_base"), "{route}: {head:?}");
            let said =
                v.pointer(answer).and_then(Value::as_str).unwrap_or_else(|| panic!("{route}: no answer: {text}"));
            assert_eq!((count(input), count(output)), (Some(question), Some(o200k(said))), "{route}: {text}");
        } else {
            assert!(
                v["usage"].get("estimated").is_none() && v["usage"].get("tokenizer").is_none() && !estimate,
                "{route}: print mode's own counts: {text}"
            );
            assert!(header(&head, "x-cursor-bridge-tokenizer").is_none(), "{route}: {head:?}");
        }
    }
    // A streamed answer's estimate is the count of the whole answer, not the sum of its deltas'.
    let body = json!({"model": "auto", "stream": true, "stream_options": {"include_usage": true}, "messages": user});
    let (status, _, text) = server.request("POST", "/v1/chat/completions", &headers, &body.to_string());
    assert_eq!(status, 200, "{text}");
    let chunks: Vec<Value> =
        text.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str(d).ok()).collect();
    let said: String =
        chunks.iter().filter_map(|c| c.pointer("/choices/0/delta/content").and_then(Value::as_str)).collect();
    let usage =
        &chunks.iter().rev().find(|c| !c["usage"].is_null()).unwrap_or_else(|| panic!("no usage: {text}"))["usage"];
    if expected().usage_estimated {
        assert_eq!(
            (usage["completion_tokens"].as_u64(), &usage["tokenizer"]),
            (Some(o200k(&said)), &json!("o200k_base")),
            "{text}"
        );
    } else {
        assert!(usage.get("tokenizer").is_none(), "{text}");
    }

    let body = json!({"model": "auto", "max_tokens": 100, "messages": user});
    let (status, head, text) = server.request("POST", "/v1/messages/count_tokens", &headers, &body.to_string());
    assert_eq!(status, 200, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["input_tokens"], question, "{text}");
    assert_eq!(header(&head, "x-cursor-bridge-usage"), Some("estimate"), "{head:?}");
    assert_eq!(header(&head, "x-cursor-bridge-tokenizer"), Some("o200k_base"), "{head:?}");
}

#[test]
fn without_the_vocabulary_the_estimate_says_it_counts_characters() {
    let dir = TestDir::new();
    let missing = dir.path().join("nowhere/o200k_base.tiktoken");
    let server = Server::start(&dir, &[("CURSOR_BRIDGE_TOKENIZER", missing.to_str().unwrap())]);
    let headers = [("Content-Type", "application/json")];
    let user = json!([{"role": "user", "content": "count these words please"}]);
    let body = json!({"model": "auto", "max_tokens": 100, "messages": user});
    let (status, head, text) = server.request("POST", "/v1/messages/count_tokens", &headers, &body.to_string());
    assert_eq!(status, 200, "{text}");
    // 24 characters / 4, and the answer says that is how it was counted.
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["input_tokens"], 6, "{text}");
    assert_eq!(header(&head, "x-cursor-bridge-usage"), Some("estimate"), "{head:?}");
    assert_eq!(header(&head, "x-cursor-bridge-tokenizer"), Some("chars/4"), "{head:?}");
    if expected().usage_estimated {
        let body = json!({"model": "auto", "messages": user});
        let (status, _, text) = server.request("POST", "/v1/chat/completions", &headers, &body.to_string());
        assert_eq!(status, 200, "{text}");
        let usage = &serde_json::from_str::<Value>(&text).unwrap()["usage"];
        assert_eq!(
            (&usage["estimated"], &usage["tokenizer"], &usage["prompt_tokens"]),
            (&json!(true), &json!("chars/4"), &json!(6)),
            "{text}"
        );
    }
    let stderr = server.stderr.lock().unwrap().clone();
    assert!(stderr.contains("token estimates count characters / 4"), "{stderr}");
}

#[test]
fn messages_refusals_come_in_anthropics_shape() {
    let dir = TestDir::new();
    let server = Server::start_with_args(&dir, &[], &[("CURSOR_BRIDGE_API_KEY", "k1")]);
    let body = json!({"model": "auto", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let (status, _, text) = server.request("POST", "/v1/messages", &[("Content-Type", "application/json")], &body);
    assert_eq!(status, 401, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (v["type"].as_str(), v["error"]["type"].as_str()),
        (Some("error"), Some("authentication_error")),
        "{text}"
    );
    let keyed = [("Content-Type", "application/json"), ("x-api-key", "k1")];
    // `max_tokens` is required, as on Anthropic's API.
    let no_max = json!({"model": "auto", "messages": [{"role": "user", "content": "hi"}]});
    let (status, _, text) = server.request("POST", "/v1/messages", &keyed, &no_max.to_string());
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("max_tokens"), "{text}");
    let tools = json!({"model": "auto", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "bash_20250124", "name": "bash"}]});
    let (status, _, text) = server.request("POST", "/v1/messages", &keyed, &tools.to_string());
    assert_eq!(status, 400, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["error"]["type"], "invalid_request_error", "{text}");
    // The OpenAI routes keep OpenAI's shape, and take the same key as x-api-key.
    let (status, _, text) =
        server.request("POST", "/v1/chat/completions", &[("Content-Type", "application/json")], "{}");
    assert_eq!(status, 401);
    assert!(serde_json::from_str::<Value>(&text).unwrap()["error"]["code"] == "invalid_api_key", "{text}");
    assert!(dir.turn_records().is_empty(), "no turn ran");
}
