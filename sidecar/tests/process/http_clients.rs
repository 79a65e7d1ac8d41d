//! The README's configurations of HTTP clients, as a person copies them (`readme_snippet`: the
//! text of the README itself, its example address replaced by the test server's), run against
//! `cursor-bridge serve` and the CLI double:
//!
//! * `llm` (PyPI, pinned): its `extra-openai-models.yaml` from the README, a prompt, and one of
//!   llm's own tools called by Cursor's "model" (the double's tool script) and run by llm;
//! * Zed and Continue, which cannot run here: the request each forms from its configuration
//!   (the base URL, the model, the key, streaming, Zed's tools capability) is sent as they send
//!   it, and must be answered.
//!
//! Codex, Claude Code and Copilot CLI take their snippets in `conformance/tests/`.

use std::process::Command;

use cursor_bridge_test_client::readme_snippet;
use serde_json::{json, Value};

use crate::http_openai::{python_venv, Server};
use crate::support::*;

/// The `llm` release the README's configuration is tested with.
const LLM: &str = "llm==0.36";
const KEY: &str = "readme-client-key-5c1d";

/// The text of a chat-completions SSE stream: every `content` delta, in order.
fn streamed_text(body: &str) -> String {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| v["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect()
}

/// A streamed chat request to `path` (the client's base path) with the client key as a bearer
/// token, as both editors send it; its SSE body, once answered 200.
fn post_chat(server: &Server, path: &str, body: &Value) -> String {
    let auth = format!("Bearer {KEY}");
    let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/json")];
    let (status, _, answer) = server.request("POST", &format!("{path}/chat/completions"), &headers, &body.to_string());
    assert_eq!(status, 200, "{answer}");
    answer
}

#[test]
#[ignore = "heavy tier (installs the `llm` Python package, up to a minute): `cargo xtask test` runs it; alone: `cargo test -p cursor-bridge --test process -- --ignored llm_with_the_readme`"]
fn llm_with_the_readme_configuration_answers_and_runs_its_own_tool() {
    let python = python_venv("py-llm", &[LLM]).unwrap_or_else(|e| panic!("could not set up {LLM}: {e}"));
    let llm = python.with_file_name("llm");
    let dir = TestDir::new();
    let server = Server::start(&dir, &[("CURSOR_BRIDGE_API_KEY", KEY)]);
    let user = dir.path().join("llm-user");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("extra-openai-models.yaml"), readme_snippet("llm-models", &server.addr.to_string()))
        .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(&llm)
            .args(args)
            .env("LLM_USER_PATH", &user)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .expect("run llm");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(
            out.status.success(),
            "llm {args:?} failed ({}):\n{text}\nserver:\n{}",
            out.status,
            server.stderr.lock().unwrap()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // As the README says: the key stored once under the configuration's `api_key_name`.
    run(&["keys", "set", "cursor-bridge", "--value", KEY]);
    let answer = run(&["-m", "cursor-auto", "Say hello in five words"]);
    assert!(answer.contains("Echo: Say hello in five words"), "llm printed: {answer}");

    // One of llm's own tools, called by the model and run by llm (its `llm_version`).
    let script = json!({"toolScript": [{"call": [{"name": "llm_version", "arguments": {}}]}]});
    let prompt = format!("Which llm version is this? [[double:{script}]]");
    let answer = run(&["-m", "cursor-auto", "-T", "llm_version", &prompt]);
    let version = LLM.trim_start_matches("llm==");
    assert!(
        answer.contains("Done. Results: llm_version:") && answer.contains(version),
        "the model's answer does not quote llm's tool result ({version}): {answer}"
    );
    assert!(!dir.log_text().contains(KEY), "the client key is in the log");
}

#[test]
fn zed_settings_from_the_readme_reach_serve_as_zed_sends_them() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[("CURSOR_BRIDGE_API_KEY", KEY)]);
    let settings: Value = serde_json::from_str(&readme_snippet("zed-settings", &server.addr.to_string()))
        .expect("the README's Zed settings are JSON");
    let providers =
        settings["language_models"]["openai_compatible"].as_object().expect("an openai_compatible provider");
    let (name, provider) = providers.iter().next().expect("one provider");
    // Zed reads the key from `<PROVIDER NAME>_API_KEY`, the name upper-cased with `_` for spaces.
    assert_eq!(format!("{}_API_KEY", name.to_uppercase().replace(' ', "_")), "CURSOR_BRIDGE_API_KEY");
    let url = provider["api_url"].as_str().unwrap();
    let path = url.strip_prefix(&format!("http://{}", server.addr)).expect("the api_url is the server's");
    let model = &provider["available_models"][0];
    assert_eq!(model["capabilities"]["tools"], true, "{model}");
    // Zed streams, and offers its tools when the model says it can take them.
    let tool = json!({"type": "function", "function": {"name": "read_file", "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}});
    let body = json!({"model": model["name"], "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "system", "content": "You are Zed's assistant."}, {"role": "user", "content": "hello from zed"}],
        "tools": [tool]});
    let answer = post_chat(&server, path, &body);
    assert!(streamed_text(&answer).contains("hello from zed"), "{answer}");
    assert!(answer.lines().any(|l| l.trim() == "data: [DONE]"), "the stream ends as Zed waits for: {answer}");
}

#[test]
fn continue_config_from_the_readme_reaches_serve_as_continue_sends_it() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[("CURSOR_BRIDGE_API_KEY", KEY)]);
    let config = readme_snippet("continue-config", &server.addr.to_string());
    // The fields of its one model (YAML, read line by line: `key: value` under `models:`).
    let field = |key: &str| {
        config
            .lines()
            .map(|l| l.trim().trim_start_matches("- "))
            .find_map(|l| l.strip_prefix(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("no {key} in the README's Continue config:\n{config}"))
            .to_owned()
    };
    assert_eq!(field("provider"), "openai");
    let base = field("apiBase");
    let path = base.strip_prefix(&format!("http://{}", server.addr)).expect("apiBase is the server's");
    assert!(field("apiKey").starts_with('<'), "the key is the person's to fill in");
    let body = json!({"model": field("model"), "stream": true, "messages": [{"role": "user", "content": "hello from continue"}]});
    let answer = post_chat(&server, path, &body);
    assert!(streamed_text(&answer).contains("hello from continue"), "{answer}");
}
