//! The README's configurations of HTTP clients, as a person copies them (`readme_snippet`: the
//! text of the README itself, its example address replaced by the test server's), run against
//! `cursor-bridge serve` and the CLI double:
//!
//! * `llm` (PyPI, pinned): its `extra-openai-models.yaml` from the README, a prompt, and one of
//!   llm's own tools called by Cursor's "model" (the double's tool script) and run by llm;
//! * opencode (npm, pinned): its `opencode.json` from the README, and `opencode run` writing a file
//!   with its own `write` tool, called by the model and run by opencode;
//! * aider (PyPI, pinned): the README's command, editing a file in its `whole` format from the
//!   model's answer;
//! * Zed and Continue, which cannot run here: the request each forms from its configuration
//!   (the base URL, the model, the key, streaming, Zed's tools capability) is sent as they send
//!   it, and must be answered.
//!
//! Codex, Claude Code and Copilot CLI take their snippets in `conformance/tests/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use cursor_bridge_test_client::{readme_snippet, shell_command, shell_env};
use serde_json::{json, Value};

use crate::http_openai::{python_venv, Server};
use crate::support::*;

/// The `llm` release the README's configuration is tested with.
const LLM: &str = "llm==0.36";
/// The opencode and aider releases the README's configurations are tested with.
const OPENCODE: &str = "1.18.33";
const AIDER: &str = "aider-chat==0.86.2";
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

/// A client run to its end: its output (both streams), or a panic with it and the server's log.
fn run_client(mut cmd: Command, what: &str, server: &Server) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{text}\nserver:\n{}",
        out.status,
        server.stderr.lock().unwrap()
    );
    text
}

/// opencode's native binary, installed once from npm into `target/npm-opencode-<version>`
/// (without install scripts: the binary is this platform's optional dependency).
fn opencode() -> PathBuf {
    let prefix = python_venv_root().join(format!("npm-opencode-{OPENCODE}"));
    let exe = prefix.join("node_modules/opencode-linux-x64/bin/opencode");
    let complete = prefix.join(".complete");
    if !complete.exists() || !exe.is_file() {
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::create_dir_all(&prefix).unwrap();
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--no-update-notifier", "--ignore-scripts", "--prefix"])
            .arg(&prefix)
            .arg(format!("opencode-ai@{OPENCODE}"))
            .output()
            .expect("run npm");
        assert!(
            out.status.success(),
            "npm install opencode-ai@{OPENCODE} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(exe.is_file(), "opencode-ai@{OPENCODE} installed, but {} is not there", exe.display());
        std::fs::write(&complete, OPENCODE).unwrap();
    }
    exe
}

/// The target folder (where the cached client installs live).
fn python_venv_root() -> PathBuf {
    sidecar_exe().parent().and_then(Path::parent).expect("target/<profile>/cursor-bridge").to_path_buf()
}

#[test]
#[ignore = "heavy tier (installs opencode from npm and its provider package, about a minute): `cargo xtask test` runs it; alone: `cargo test -p cursor-bridge --test process -- --ignored opencode_with_the_readme`"]
fn opencode_with_the_readme_configuration_writes_a_file_with_its_own_tool() {
    let opencode = opencode();
    let dir = TestDir::new();
    let server = Server::start(&dir, &[("CURSOR_BRIDGE_API_KEY", KEY)]);
    let project = dir.path().join("opencode-project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("opencode.json"), readme_snippet("opencode-config", &server.addr.to_string())).unwrap();
    let home = dir.path().join("opencode-home");
    let target = project.join("hello.txt");
    let script = json!({"toolScript": [{"call": [{"name": "write",
        "arguments": {"filePath": target.to_string_lossy(), "content": "hi from opencode"}}]}]});
    let mut cmd = Command::new(&opencode);
    cmd.args(["run", &format!("Create hello.txt saying hi [[double:{script}]]")])
        .current_dir(&project)
        // opencode takes its project folder from PWD, as a shell sets it.
        .env("PWD", &project)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        // opencode installs the provider's npm package into its cache at first use: kept between runs.
        .env("XDG_CACHE_HOME", python_venv_root().join(format!("npm-opencode-{OPENCODE}-cache")))
        .env("CURSOR_BRIDGE_API_KEY", KEY)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL");
    let output = run_client(cmd, "opencode run", &server);
    assert_eq!(
        std::fs::read_to_string(&target).ok().as_deref(),
        Some("hi from opencode"),
        "opencode's write tool did not write the file:\n{output}"
    );
    assert!(output.contains("Wrote file successfully"), "the model's answer does not quote the tool result: {output}");
    assert!(!dir.log_text().contains(KEY), "the client key is in the log");
}

#[test]
#[ignore = "heavy tier (installs aider from PyPI, a minute or more): `cargo xtask test` runs it; alone: `cargo test -p cursor-bridge --test process -- --ignored aider_with_the_readme`"]
fn aider_with_the_readme_command_edits_a_file() {
    let python = python_venv("py-aider", &[AIDER]).unwrap_or_else(|e| panic!("could not set up {AIDER}: {e}"));
    let dir = TestDir::new();
    let server = Server::start(&dir, &[("CURSOR_BRIDGE_API_KEY", KEY)]);
    let snippet = readme_snippet("aider", &server.addr.to_string());
    let argv = shell_command(&snippet);
    assert_eq!(argv.first().map(String::as_str), Some("aider"), "{snippet}");
    let project = dir.path().join("aider-project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("notes.txt"), "old\n").unwrap();
    // aider's `whole` format: the file's name, then its whole new content fenced.
    let answer = json!({"answer": "notes.txt\n```\nhi from aider\n```\n"});
    let mut cmd = Command::new(python.with_file_name("aider"));
    cmd.args(&argv[1..])
        .args(["--no-git", "--yes-always", "--no-check-update", "--no-analytics", "--no-pretty"])
        .args(["--message", &format!("Replace the text with hi [[double:{answer}]]"), "notes.txt"])
        .current_dir(&project)
        .env("HOME", dir.path().join("aider-home"))
        // Offline: litellm's bundled model list, not the one it would download.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True");
    for (name, value) in shell_env(&snippet) {
        cmd.env(&name, if value.starts_with('<') { KEY.to_owned() } else { value });
    }
    let output = run_client(cmd, "aider", &server);
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        "hi from aider\n",
        "aider did not apply the model's edit:\n{output}"
    );
    assert!(output.contains("Applied edit to notes.txt"), "{output}");
    assert!(!dir.log_text().contains(KEY), "the client key is in the log");
}
