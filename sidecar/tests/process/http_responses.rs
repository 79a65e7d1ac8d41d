//! `POST /v1/responses` on `cursor-bridge serve`, against the CLI double: driven by the official
//! `openai` Python package's `client.responses` (tests/http/responses_client.py, in the venv the
//! chat-completions test makes), plus plain HTTP checks from here.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::http_openai::{openai_venv, Server};
use crate::support::*;

/// How the backends differ in this file's tests.
struct Expected {
    /// The model each answered turn ran, as the CLI was told: print mode's `--model`, or on ACP
    /// the SKU of the wire id the session store keeps per turn.
    models_run: fn(&TestDir) -> Vec<String>,
}

const ON_PRINT: Expected = Expected { models_run: models_run_on_print };
const ON_ACP: Expected = Expected { models_run: models_run_on_acp };

fn expected() -> &'static Expected {
    per_backend(&ON_PRINT, &ON_ACP)
}

#[test]
fn the_openai_python_client_speaks_the_responses_api_to_serve() {
    let python = openai_venv().unwrap_or_else(|e| panic!("could not set up the openai package: {e}"));
    let dir = TestDir::new();
    // Token counts: print mode's result has them; on ACP the double sends them when asked.
    let server = Server::start(&dir, &[("CURSOR_DOUBLE_ACP_PROMPT_USAGE", "tokens")]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/http/responses_client.py");
    let out = Command::new(&python)
        .arg(&script)
        .env("OPEN_URL", server.base_url())
        .env("OPEN_RECORD", dir.record_file())
        .env("OPEN_ACP_SESSIONS", dir.path().join("home/.cursor/acp-sessions"))
        .env("BACKEND", test_backend())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    let last = stdout.lines().last().unwrap_or_default().to_string();
    let checks = stdout.lines().next().and_then(|l| l.rsplit(", ").next()).and_then(|c| c.strip_suffix(" checks"));
    let all = checks.map(|n| format!("{n} passed, 0 failed"));
    assert!(
        out.status.success() && all.as_deref() == Some(last.as_str()),
        "the responses checks failed ({}): {last}\nstderr:\n{}\nserver stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.stderr.lock().unwrap()
    );
}

/// The model each answered turn ran, as the CLI was told: print mode's `--model`, or on ACP the
/// SKU of the wire id the session store keeps per turn.
fn models_run(dir: &TestDir) -> Vec<String> {
    (expected().models_run)(dir)
}

fn models_run_on_acp(dir: &TestDir) -> Vec<String> {
    let mut turns: Vec<Value> =
        dir.acp_sessions().iter().flat_map(|s| s["turns"].as_array().cloned().unwrap_or_default()).collect();
    turns.sort_by_key(|t| t["atMs"].as_u64());
    // The SKU id before its parameters (`gpt-5.5-high[fast=false]`).
    let id = |t: &Value| t["model"].as_str().unwrap_or_default().split('[').next().unwrap_or_default().to_string();
    turns.iter().map(id).collect()
}

fn models_run_on_print(dir: &TestDir) -> Vec<String> {
    dir.turn_records()
        .iter()
        .map(|r| {
            let argv: Vec<&str> = r["argv"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
            argv.iter().position(|a| *a == "--model").map(|i| argv[i + 1].to_string()).unwrap_or_default()
        })
        .collect()
}

#[test]
fn a_reasoning_effort_runs_the_variant_the_picker_would() {
    let dir = TestDir::new();
    let list = dir.path().join("models.txt");
    std::fs::write(
        &list,
        "Available models\n\ngpt-5.5 - GPT-5.5\ngpt-5.5-high - GPT-5.5 High\ngpt-5.5-high-fast - GPT-5.5 High Fast\ncomposer-2.5 - Composer 2.5 (current, default)\n",
    )
    .unwrap();
    let server = Server::start(&dir, &[("CURSOR_DOUBLE_MODELS_FILE", list.to_str().unwrap())]);
    let ask = |input: &str, effort: &str| {
        let body = json!({"model": "gpt-5.5", "input": input, "reasoning": {"effort": effort}}).to_string();
        let (status, _, text) = server.request("POST", "/v1/responses", &[("Content-Type", "application/json")], &body);
        assert_eq!(status, 200, "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        // The response names the model as the client asked for it.
        assert_eq!(v["model"], "gpt-5.5", "{text}");
        assert_eq!(v["reasoning"]["effort"], effort, "{text}");
    };
    ask("think hard", "high");
    // No `low` variant: the model runs as asked (the CLI has no effort knob of its own).
    ask("think a little", "low");
    assert!(eventually(TIMEOUT, || dir.turn_records().len() == 2), "two turns");
    let models = models_run(&dir);
    assert_eq!(models, ["gpt-5.5-high", "gpt-5.5"], "{:?}", dir.turn_records());
}

#[test]
fn responses_refuse_what_they_cannot_honour_before_starting_a_turn() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[]);
    let json_type = [("Content-Type", "application/json")];
    let cases = [
        (json!({"model": "auto", "input": "x", "background": true}), "background"),
        (json!({"model": "auto", "input": "x", "tools": [{"type": "file_search"}]}), "tools[0].type"),
        (
            json!({"model": "auto", "input": "x", "text": {"format": {"type": "json_schema", "name": "x", "schema": "{}"}}}),
            "text.format.schema",
        ),
        (
            json!({"model": "auto", "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]}]}),
            "input[0].content[0].image_url",
        ),
    ];
    for (body, param) in cases {
        let (status, _, text) = server.request("POST", "/v1/responses", &json_type, &body.to_string());
        assert_eq!(status, 400, "{body}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"]["param"], param, "{text}");
        assert_eq!(v["error"]["type"], "invalid_request_error", "{text}");
    }
    let (status, _, _) = server.request("POST", "/v1/responses", &[("Content-Type", "text/plain")], "{}");
    assert_eq!(status, 415);
    assert!(dir.turn_records().is_empty(), "no turn ran");
}
