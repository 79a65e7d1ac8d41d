//! The agent CLIs that speak the other dialects, doing a job with their own tools through
//! `cursor-bridge serve`, the CLI double playing Cursor (its tool script, cli-double README §9):
//!
//! * **Codex CLI** (`@openai/codex`, the Responses API, `wire_api = "responses"`): `codex exec`
//!   edits a file with its own freeform `apply_patch` tool (a custom tool: its call carries the
//!   raw patch) and then runs `cat` with its own `exec_command` tool; the file holds the patched
//!   text and Codex's event stream shows the command's output.
//! * **Claude Code** (`@anthropic-ai/claude-code`, the Messages API, `ANTHROPIC_BASE_URL`):
//!   `claude -p` creates a file with its own `Write` tool, then `--continue` and `--resume <id>`
//!   go on in the same Claude session, which serve continues in the same Cursor chat.
//!
//! Each on both backends. Ignored in a plain `cargo nextest run` (the CLIs are ~400 MB each):
//! `cargo xtask conformance` installs the pinned versions (`xtask/src/agent_clients.rs`) and runs
//! these with `--run-ignored only`, offline, in a network namespace of their own.
//!
//! Linux only: processes are counted and waited for through `/proc` and serve is stopped with
//! SIGTERM; elsewhere this test binary is empty.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_conformance::{processes, serve};
use anyhow::{bail, ensure, Context, Result};
use cursor_bridge::backend::process::{self, SpawnSpec};
use cursor_bridge_test_client::{readme_snippet, shell_env};
use serde_json::{json, Value};

use processes::Output;
use serve::Serve;

const CODEX_VAR: &str = "CURSOR_BRIDGE_CONFORMANCE_CODEX";
const CLAUDE_VAR: &str = "CURSOR_BRIDGE_CONFORMANCE_CLAUDE";
const RUN_BOUND: Duration = Duration::from_secs(180);
const STOP_BOUND: Duration = Duration::from_secs(15);
const LEFTOVER_GRACE: Duration = Duration::from_secs(5);
const DRAIN_BOUND: Duration = Duration::from_secs(5);

/// Codex knows this slug (its freeform `apply_patch` comes with it), and Cursor lists it.
const CODEX_MODEL: &str = "gpt-5.5";
/// The Cursor model that serves Claude Code's own model ids (`serve --model`).
const CLAUDE_SERVES: &str = "opus-5";

/// The tests share this process's children (we are their subreaper): one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The CLI's native binary; `None` (said on stderr) where `cargo xtask conformance` installs
/// none: it installs these on Linux x64 only.
fn binary(var: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    if path.is_none() && !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        eprintln!("SKIPPED: {var} is not set, and `cargo xtask conformance` installs this CLI on Linux x64 only");
        return None;
    }
    Some(path.unwrap_or_else(|| {
        panic!("{var} is not set: it names the CLI's native binary (`cargo xtask conformance` installs it and sets it)")
    }))
}

#[tokio::test]
#[ignore = "needs Codex CLI: `cargo xtask conformance` installs it; by hand set CURSOR_BRIDGE_CONFORMANCE_CODEX"]
async fn codex_exec_patches_a_file_and_runs_a_command_through_serve_on_acp() {
    report(codex("acp").await);
}

#[tokio::test]
#[ignore = "needs Codex CLI: `cargo xtask conformance` installs it; by hand set CURSOR_BRIDGE_CONFORMANCE_CODEX"]
async fn codex_exec_patches_a_file_and_runs_a_command_through_serve_on_print_mode() {
    report(codex("print").await);
}

#[tokio::test]
#[ignore = "needs Claude Code: `cargo xtask conformance` installs it; by hand set CURSOR_BRIDGE_CONFORMANCE_CLAUDE"]
async fn claude_code_writes_a_file_and_continues_its_session_through_serve_on_acp() {
    report(claude("acp").await);
}

#[tokio::test]
#[ignore = "needs Claude Code: `cargo xtask conformance` installs it; by hand set CURSOR_BRIDGE_CONFORMANCE_CLAUDE"]
async fn claude_code_writes_a_file_and_continues_its_session_through_serve_on_print_mode() {
    report(claude("print").await);
}

fn report(outcome: Result<Vec<String>>) {
    match outcome {
        Ok(lines) => lines.iter().for_each(|l| eprintln!("{l}")),
        Err(e) => panic!("{e:#}"),
    }
}

fn client_key() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("cb-agents-{}-{nanos:x}", std::process::id())
}

/// The double's model list: what the tests ask for, listed as Cursor would.
fn models_file(root: &Path) -> Result<PathBuf> {
    let file = root.join("models.txt");
    std::fs::write(
        &file,
        format!("Available models\n\nauto - Auto  (current, default)\n{CODEX_MODEL} - GPT-5.5\n{CLAUDE_SERVES} - Claude Opus 5\n"),
    )?;
    Ok(file)
}

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `program args` in `cwd` with exactly `env`, stdin closed, to its end (at most [`RUN_BOUND`]),
/// leaving no process behind but serve's.
async fn run(program: &Path, args: &[String], cwd: &Path, env: &[(String, String)], serve_pid: u32) -> Result<Ran> {
    let spec = SpawnSpec {
        program: program.to_path_buf(),
        args: args.iter().map(Into::into).collect(),
        cwd: Some(cwd.to_path_buf()),
        env: env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        env_remove: std::env::vars_os().map(|(k, _)| k).collect(),
    };
    let mut child = process::spawn(&spec).with_context(|| format!("starting {}", program.display()))?;
    drop(child.take_stdin());
    let (stdout, out_task) = Output::collect(child.take_stdout());
    let (stderr, err_task) = Output::collect(child.take_stderr());
    let done = processes::exited(child.pid(), RUN_BOUND).await;
    let left = if done { processes::left_over(&[serve_pid], LEFTOVER_GRACE).await } else { Vec::new() };
    let code = processes::reap(&mut child).await;
    for task in [out_task, err_task] {
        let _ = tokio::time::timeout(DRAIN_BOUND, task).await;
    }
    let ran = Ran { code, stdout: stdout.text(), stderr: stderr.text() };
    if !done {
        processes::clean_up();
        bail!("{} did not finish within {RUN_BOUND:?}:\n{}\n{}", program.display(), ran.stdout, ran.stderr);
    }
    ensure!(left.is_empty(), "processes {} left running: {left:?}", program.display());
    ensure!(
        ran.code == Some(0),
        "{} exited {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        program.display(),
        ran.code,
        ran.stdout,
        ran.stderr
    );
    Ok(ran)
}

/// SIGTERM, exit 0 within [`STOP_BOUND`], nothing left over; then the key is nowhere it must not be.
async fn stop(serve: &mut Serve, key: &str) -> Result<()> {
    let pid = serve.child.pid();
    // SAFETY: kill(2) on our own child, which stays unreaped (a zombie at worst) until `reap`.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
    let done = processes::exited(pid, STOP_BOUND).await;
    let left = if done { processes::left_over(&[], LEFTOVER_GRACE).await } else { Vec::new() };
    let code = processes::reap(&mut serve.child).await;
    processes::clean_up();
    ensure!(done && code == Some(0), "serve did not exit 0 on SIGTERM ({code:?})");
    ensure!(left.is_empty(), "processes left after serve stopped: {left:?}");
    let record = std::fs::read_to_string(serve.folders.record_file()).unwrap_or_default();
    ensure!(!record.contains(key), "the client key reached the Cursor CLI");
    ensure!(!serve.folders.log_text().contains(key), "the client key is in serve's log");
    Ok(())
}

/// The environment of an agent CLI: a fresh home, a minimal PATH (its shell tool needs one), and
/// what it is told.
fn base_env(home: &Path) -> Vec<(String, String)> {
    let _ = std::fs::create_dir_all(home.join("tmp"));
    vec![
        ("HOME".into(), home.display().to_string()),
        ("TMPDIR".into(), home.join("tmp").display().to_string()),
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("TERM".into(), "dumb".into()),
    ]
}

async fn codex(backend: &str) -> Result<Vec<String>> {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(codex) = binary(CODEX_VAR) else { return Ok(Vec::new()) };
    process::become_subreaper();
    let tmp = tempfile::tempdir()?;
    let root = tmp.path();
    let key = client_key();
    let models = models_file(root)?;
    let mut serve =
        Serve::start_with(&root.join("serve"), backend, &key, &[], &[("CURSOR_DOUBLE_MODELS_FILE", models)]).await?;
    let work = root.join("work");
    std::fs::create_dir_all(&work)?;
    let work = work.canonicalize()?;
    std::fs::write(work.join("notes.txt"), "first line\nold line\n")?;
    let home = root.join("codex-home");
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home)?;
    // The README's configuration as a person copies it, with what only a test needs around it:
    // no approval prompts (nobody to answer them), no analytics, plugins or apps (each reaches out
    // on its own, agent-clis.md), no retries (a failure shows at once). Its top-level keys come
    // first, and the retry bounds join the provider table the snippet ends with.
    let address = serve.base_url.trim_start_matches("http://").trim_end_matches("/v1").to_string();
    let snippet = readme_snippet("codex-config", &address);
    ensure!(
        snippet.contains(&format!("model = \"{CODEX_MODEL}\"")),
        "the README's Codex model is not {CODEX_MODEL}:\n{snippet}"
    );
    let config = format!(
        "approval_policy = \"never\"\nsandbox_mode = \"workspace-write\"\ncheck_for_update_on_startup = false\n\
         {snippet}request_max_retries = 0\nstream_max_retries = 0\n\n\
         [analytics]\nenabled = false\n[features]\nplugins = false\napps = false\n"
    );
    std::fs::write(codex_home.join("config.toml"), config)?;
    let patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n first line\n-old line\n+new line ✓\n*** End Patch\n";
    let script = json!([
        {"say": "Patching notes.txt.", "call": [{"name": "apply_patch", "arguments": {"input": patch}}]},
        {"call": [{"name": "exec_command", "arguments": {"cmd": "cat notes.txt"}}]},
    ]);
    let prompt =
        format!("Change the old line of notes.txt, then show the file. [[double:{}]]", json!({"toolScript": script}));
    let mut env = base_env(&home);
    env.push(("CODEX_HOME".into(), codex_home.display().to_string()));
    // The key in the variable the README's `env_key` names.
    env.push(("CURSOR_BRIDGE_API_KEY".into(), key.clone()));
    let args = ["exec", "--json", "--skip-git-repo-check", &prompt].map(String::from);
    let ran = run(&codex, &args, &work, &env, serve.child.pid()).await;
    let stopped = stop(&mut serve, &key).await;
    let ran = ran?;
    stopped?;

    let mut report = vec![format!("codex ({backend}): exited 0")];
    let notes = std::fs::read_to_string(work.join("notes.txt"))?;
    ensure!(notes == "first line\nnew line ✓\n", "notes.txt holds {notes:?}; codex said:\n{}", ran.stdout);
    report.push("apply_patch (Codex's own) changed notes.txt".into());
    let events: Vec<Value> = ran.stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let item = |kind: &str| {
        events
            .iter()
            .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == kind)
            .map(|e| e["item"].clone())
            .collect::<Vec<_>>()
    };
    let commands = item("command_execution");
    ensure!(
        commands.iter().any(|c| c["exit_code"] == 0 && c["aggregated_output"] == "first line\nnew line ✓\n"),
        "no `cat notes.txt` that showed the patched file: {commands:?}"
    );
    report.push("exec_command (Codex's own) ran `cat notes.txt` and saw the change".into());
    ensure!(!item("file_change").is_empty(), "Codex reported no file change: {}", ran.stdout);
    let said: Vec<String> = item("agent_message").iter().filter_map(|m| m["text"].as_str().map(String::from)).collect();
    ensure!(
        said.first().map(String::as_str) == Some("Patching notes.txt."),
        "Codex did not show the model's text first: {said:?}"
    );
    ensure!(
        said.last().is_some_and(|s| s.starts_with("Done. Results: apply_patch:") && s.contains("exec_command:")),
        "the model's last answer does not quote both results: {said:?}"
    );
    ensure!(events.iter().any(|e| e["type"] == "turn.completed"), "no turn.completed: {}", ran.stdout);
    report.push(format!("codex ({backend}): serve stopped cleanly; the key stayed with the client"));
    Ok(report)
}

/// The Claude Code session id of a `stream-json` run (its `result` line), and that line.
fn claude_result(ran: &Ran) -> Result<(String, Value)> {
    let result = ran
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .with_context(|| format!("no result line:\n{}\n{}", ran.stdout, ran.stderr))?;
    ensure!(result["is_error"] == false, "Claude Code reported an error: {result}");
    Ok((result["session_id"].as_str().unwrap_or_default().to_string(), result))
}

/// The Cursor chat each answered turn ran in, with its prompt: ACP's session store, or print
/// mode's `--resume` (a chat's first turn has none: its own id, from the record's session).
fn cursor_turns(serve: &Serve, backend: &str) -> Vec<(String, String)> {
    if backend == "acp" {
        let root = serve.folders.root.join("home/.cursor/acp-sessions");
        let mut turns = Vec::new();
        for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(e.path().join("cursor-agent-double.json")).unwrap_or_default();
            let Ok(s) = serde_json::from_str::<Value>(&text) else { continue };
            for t in s["turns"].as_array().into_iter().flatten() {
                let id = s["sessionId"].as_str().unwrap_or_default().to_string();
                turns.push((t["atMs"].as_u64().unwrap_or(0), id, t["user"].as_str().unwrap_or_default().to_string()));
            }
        }
        turns.sort();
        return turns.into_iter().map(|(_, id, user)| (id, user)).collect();
    }
    serve
        .folders
        .records()
        .iter()
        .filter(|r| r["subcommand"] == "print")
        .map(|r| {
            let argv: Vec<&str> = r["argv"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let chat = argv.iter().position(|a| *a == "--resume").map(|i| argv[i + 1]);
            let chat = chat.or(r["sessionId"].as_str()).unwrap_or_default().to_string();
            (chat, r["stdin"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

async fn claude(backend: &str) -> Result<Vec<String>> {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(claude) = binary(CLAUDE_VAR) else { return Ok(Vec::new()) };
    process::become_subreaper();
    let tmp = tempfile::tempdir()?;
    let root = tmp.path();
    let key = client_key();
    let models = models_file(root)?;
    let mut serve = Serve::start_with(
        &root.join("serve"),
        backend,
        &key,
        &["--model", CLAUDE_SERVES],
        &[("CURSOR_DOUBLE_MODELS_FILE", models)],
    )
    .await?;
    let work = root.join("work");
    std::fs::create_dir_all(&work)?;
    let work = work.canonicalize()?;
    let file = work.join("hello.txt");
    let text = "Hello from Cursor's model ✓\nsecond line\n";
    let script = json!([{"say": "Writing hello.txt.", "call": [{"name": "Write", "arguments": {"file_path": file, "content": text}}]}]);
    let prompt = format!("Create hello.txt here. [[double:{}]]", json!({"toolScript": script}));
    let home = root.join("claude-home");
    let mut env = base_env(&home);
    // The README's environment, as a person copies it (the base URL without /v1: Claude Code adds
    // it; the client key as x-api-key in the placeholder's place), plus none of the traffic Claude
    // Code sends on its own (agent-clis.md).
    let address = serve.base_url.trim_start_matches("http://").trim_end_matches("/v1").to_string();
    let readme = shell_env(&readme_snippet("claude-code", &address));
    ensure!(
        readme.iter().any(|(k, v)| k == "ANTHROPIC_BASE_URL" && *v == format!("http://{address}")),
        "the README's Claude Code snippet does not point at serve: {readme:?}"
    );
    for (k, v) in readme {
        let v = if v.starts_with('<') { key.clone() } else { v };
        env.push((k, v));
    }
    for (k, v) in [("DISABLE_AUTOUPDATER", "1"), ("DISABLE_TELEMETRY", "1"), ("DISABLE_ERROR_REPORTING", "1")] {
        env.push((k.into(), v.into()));
    }
    let args = |prompt: &str, more: &[&str]| {
        let mut a: Vec<String> =
            ["-p", prompt, "--output-format", "stream-json", "--verbose", "--allowedTools", "Write"]
                .map(String::from)
                .to_vec();
        a.extend(more.iter().map(|s| s.to_string()));
        a
    };
    let pid = serve.child.pid();
    let outcome = async {
        let first = run(&claude, &args(&prompt, &[]), &work, &env, pid).await?;
        let (session, _) = claude_result(&first)?;
        let second = run(&claude, &args("What did you write? (continued)", &["--continue"]), &work, &env, pid).await?;
        let (continued, _) = claude_result(&second)?;
        let third = run(&claude, &args("And once more. (resumed)", &["--resume", &session]), &work, &env, pid).await?;
        let (resumed, _) = claude_result(&third)?;
        Ok::<_, anyhow::Error>((first, session, continued, resumed))
    }
    .await;
    let turns = cursor_turns(&serve, backend);
    let stopped = stop(&mut serve, &key).await;
    let (first, session, continued, resumed) = outcome?;
    stopped?;

    let mut report = vec![format!("claude ({backend}): three runs exited 0")];
    let written = std::fs::read_to_string(&file)
        .with_context(|| format!("{} was not created:\n{}", file.display(), first.stdout))?;
    ensure!(written == text, "hello.txt holds {written:?}");
    report.push("Write (Claude Code's own) created hello.txt".into());
    ensure!(continued == session && resumed == session, "Claude sessions: {session}, {continued}, {resumed}");
    let chat_of = |marker: &str| turns.iter().find(|(_, user)| user.contains(marker)).map(|(chat, _)| chat.clone());
    let first_chat =
        chat_of("Create hello.txt here.").with_context(|| format!("no Cursor turn of the first run: {turns:?}"))?;
    for marker in ["(continued)", "(resumed)"] {
        let chat = chat_of(marker).with_context(|| format!("no Cursor turn with {marker}: {turns:?}"))?;
        ensure!(chat == first_chat, "the {marker} turn ran in Cursor chat {chat}, not {first_chat}: {turns:?}");
        let prompt = &turns.iter().find(|(_, u)| u.contains(marker)).unwrap().1;
        ensure!(
            !prompt.contains("Create hello.txt here."),
            "the {marker} turn was sent the whole history again: {prompt:?}"
        );
    }
    report.push("--continue and --resume went on in the same Cursor chat, sending only the new message".into());
    Ok(report)
}
