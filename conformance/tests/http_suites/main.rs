//! Public conformance suites for OpenAI- and Anthropic-style servers, run against
//! `cursor-bridge serve` with the CLI double playing Cursor, on both backends:
//!
//! * **CompatCanary** (npm `compatcanary`, `scan --profile modern`): all 7 probes pass (models,
//!   chat, streaming, a forced tool call, strict structured output, Responses, Responses
//!   streaming).
//! * **llm-comply** (PyPI `llm-comply`, formats `openai-chat`, `open-responses`, `anthropic`),
//!   the double's model thinking before it answers (as reasoning models do, so the reasoning and
//!   thinking tests have something to check): every test passes but the ones in [`EXPECTED`],
//!   each with the outcome it has and why. A test that starts passing fails this too, so the
//!   table stays true.
//!
//! Ignored in a plain `cargo nextest run` (the suites are installed by `cargo xtask conformance`,
//! `xtask/src/conformance.rs`, which names them in the environment and runs these offline).
//! Linux only, as the other conformance targets (serve is stopped with SIGTERM).
#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::time::Duration;

use acp_conformance::{processes, serve};
use anyhow::{ensure, Context, Result};
use cursor_bridge::backend::process::{self, SpawnSpec};
use serde_json::Value;

use processes::Output;
use serve::Serve;

const COMPATCANARY_VAR: &str = "CURSOR_BRIDGE_CONFORMANCE_COMPATCANARY";
const LLM_COMPLY_VAR: &str = "CURSOR_BRIDGE_CONFORMANCE_LLM_COMPLY";
const RUN_BOUND: Duration = Duration::from_secs(300);
const KEY: &str = "suite-client-key-71b0";

/// llm-comply tests that do not pass, on which backends (`None`: both), with their outcome and
/// why. Everything else must pass.
const EXPECTED: &[(&str, Option<&str>, &str, &str)] = &[
    ("chat-image-input", Some("print"), "failed", "print mode is text only: images are refused with a 400 that says they need ACP"),
    ("image-input", Some("print"), "failed", "print mode is text only (as above)"),
    ("anth-image-input", Some("print"), "failed", "print mode is text only (as above)"),
    (
        "streaming-response",
        None,
        "failed",
        "llm-comply 0.5.0's event map (schema.py) lacks `response.reasoning_summary_text.delta`/`.done`, the names its own \
         Open Responses spec gives those events (and OpenAI's, which Codex reads): it calls them unknown",
    ),
    ("streaming-usage", None, "failed", "the same llm-comply event-map gap (as above)"),
];

/// The model each format asks for: llm-comply runs its reasoning and thinking tests only for
/// model names it knows reason (`gpt-5…`, `claude-opus…`); both are in the double's list.
fn model_for(format: &str) -> &'static str {
    if format == "anthropic" {
        "claude-opus-4-8"
    } else {
        "gpt-5.6-sol"
    }
}

fn tool(var: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    if path.is_none() {
        eprintln!("skipped: {var} is not set (`cargo xtask conformance` installs the suite and sets it)");
    }
    path
}

/// `program args`, its environment only `env`, to its end; its stdout.
async fn run(program: &std::path::Path, args: &[String], env: &[(&str, String)]) -> Result<(Option<i32>, String)> {
    let mut all: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default()), ("LANG".into(), "C.UTF-8".into())];
    all.extend(env.iter().map(|(k, v)| (k.into(), v.into())));
    let spec = SpawnSpec {
        program: program.to_path_buf(),
        args: args.iter().map(Into::into).collect(),
        cwd: None,
        env: all,
        env_remove: std::env::vars_os().map(|(k, _)| k).collect(),
    };
    let mut child = process::spawn(&spec).with_context(|| format!("starting {}", program.display()))?;
    drop(child.take_stdin());
    let (stdout, out_task) = Output::collect(child.take_stdout());
    let (stderr, err_task) = Output::collect(child.take_stderr());
    let done = processes::exited(child.pid(), RUN_BOUND).await;
    // Reaping ends what is left of it (its process group) when it did not finish.
    let code = processes::reap(&mut child).await;
    for task in [out_task, err_task] {
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    ensure!(done, "{} did not finish within {RUN_BOUND:?}:\n{}", program.display(), stderr.text());
    Ok((code, stdout.text()))
}

async fn stop(serve: &mut Serve) -> Result<()> {
    // SAFETY: kill(2) on our own child, which stays unreaped (a zombie at worst) until `reap`.
    unsafe {
        libc::kill(serve.child.pid() as libc::pid_t, libc::SIGTERM);
    }
    let done = processes::exited(serve.child.pid(), Duration::from_secs(15)).await;
    let code = processes::reap(&mut serve.child).await;
    ensure!(done && code == Some(0), "serve did not exit 0 on SIGTERM ({code:?})");
    ensure!(!serve.folders.log_text().contains(KEY), "the client key is in serve's log");
    Ok(())
}

async fn compatcanary(backend: &str) -> Result<()> {
    let Some(canary) = tool(COMPATCANARY_VAR) else { return Ok(()) };
    process::become_subreaper();
    let tmp = tempfile::tempdir()?;
    let mut serve = Serve::start(tmp.path(), backend, KEY).await?;
    let args = ["scan", "--base-url", &serve.base_url, "--model", "auto", "--profile", "modern", "--format", "json"]
        .map(String::from);
    let ran = run(&canary, &args, &[("OPENAI_API_KEY", KEY.into())]).await;
    let stopped = stop(&mut serve).await;
    let (code, out) = ran?;
    stopped?;
    let report: Value = serde_json::from_str(&out).with_context(|| format!("CompatCanary printed no JSON: {out}"))?;
    let failed: Vec<String> = report["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["status"] != "pass")
        .map(|r| format!("{} ({}): {}", r["id"], r["status"], r["summary"]))
        .collect();
    println!(
        "CompatCanary on {backend}: {} of {} probes pass, score {}",
        report["summary"]["passes"], report["summary"]["total"], report["score"]
    );
    ensure!(
        code == Some(0) && failed.is_empty() && report["summary"]["total"] == 7,
        "CompatCanary on {backend}: {failed:#?}\n{out}"
    );
    Ok(())
}

async fn llm_comply(backend: &str) -> Result<()> {
    let Some(comply) = tool(LLM_COMPLY_VAR) else { return Ok(()) };
    process::become_subreaper();
    let tmp = tempfile::tempdir()?;
    // The model thinks before it answers, as reasoning models do (the reasoning tests look for it).
    let scenario = tmp.path().join("scenario.json");
    std::fs::write(&scenario, r#"{"thinking": "Reading the question first, then answering it."}"#)?;
    let thinks = format!("@{}", scenario.display());
    let mut serve =
        Serve::start_with(tmp.path(), backend, KEY, &[], &[("CURSOR_DOUBLE_SCENARIO", thinks.into())]).await?;
    let mut problems = Vec::new();
    for format in ["openai-chat", "open-responses", "anthropic"] {
        let mut args: Vec<String> =
            ["--base-url", &serve.base_url, "--model", model_for(format), "--format", format, "--json"]
                .map(String::from)
                .to_vec();
        // Claude Code's way in: the key as `x-api-key`.
        if format == "anthropic" {
            args.extend(["--auth-header", "x-api-key", "--no-bearer"].map(String::from));
        }
        args.extend(["-k".to_string(), KEY.to_string()]);
        let (_, out) = run(&comply, &args, &[]).await?;
        let report: Value = serde_json::from_str(&out)
            .with_context(|| format!("llm-comply --format {format} printed no JSON: {out}"))?;
        println!("llm-comply {format} on {backend}: {}", report["summary"]);
        for result in report["results"].as_array().into_iter().flatten() {
            let id = result["id"].as_str().unwrap_or_default();
            let status = result["status"].as_str().unwrap_or_default();
            let expected = EXPECTED.iter().find(|(t, on, _, _)| *t == id && on.is_none_or(|b| b == backend));
            let want = expected.map_or("passed", |(_, _, outcome, _)| outcome);
            if status != want {
                problems.push(format!("{format} {id}: {status}, expected {want}: {result}"));
            }
        }
        for (id, on, _, why) in EXPECTED.iter().filter(|(_, on, _, _)| on.is_none_or(|b| b == backend)) {
            if report["results"].as_array().into_iter().flatten().any(|r| r["id"] == *id) {
                println!("  {id} ({}): expected so: {why}", on.unwrap_or("both backends"));
            }
        }
    }
    stop(&mut serve).await?;
    ensure!(problems.is_empty(), "llm-comply on {backend}:\n{}", problems.join("\n"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs CompatCanary: `cargo xtask conformance` installs it"]
async fn compatcanary_modern_profile_passes_on_acp() {
    compatcanary("acp").await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs CompatCanary: `cargo xtask conformance` installs it"]
async fn compatcanary_modern_profile_passes_on_print_mode() {
    compatcanary("print").await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs llm-comply: `cargo xtask conformance` installs it"]
async fn llm_comply_passes_but_what_the_table_says_on_acp() {
    llm_comply("acp").await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs llm-comply: `cargo xtask conformance` installs it"]
async fn llm_comply_passes_but_what_the_table_says_on_print_mode() {
    llm_comply("print").await.unwrap();
}
