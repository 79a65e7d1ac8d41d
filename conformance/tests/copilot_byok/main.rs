//! GitHub Copilot CLI in "bring your own key" mode with `cursor-bridge serve` as its model, the
//! CLI double playing Cursor: a real OpenAI-compatible agent client doing a small job with its own
//! tools (docs/client-tools.md). Copilot runs `copilot -p … --allow-all-tools` in a temporary
//! folder; the double's tool script (cli-double README §9) has Cursor's "model" call Copilot's
//! `create` tool twice in one answer (two files, parallel calls), then its `view` tool on the first
//! file, then answer. What must come out, as a user would see it and as the wire shows it:
//!
//! * the two files exist with exactly the scripted content, and Copilot exits 0 having printed the
//!   final answer (the double's `Done. Results: …`, which quotes the results Copilot sent back);
//! * on the wire (a tap between the two, `tap.rs`): three streamed requests, the first two
//!   answered with `tool_calls` chunks and `finish_reason: "tool_calls"`, the last with text and
//!   `"stop"`; each later request carries the `role: "tool"` results of the calls before it;
//! * the double's record: the tools Copilot offered reached Cursor's side, the calls went out, and
//!   the results of Copilot's tools came back to the same chat (the MCP path on ACP, the prompt
//!   protocol on print mode: one test each);
//! * the client key never reaches the Cursor CLI or serve's log; serve stops on SIGTERM with exit
//!   0; no process of either is left over.
//!
//! Ignored in a plain `cargo nextest run` (it needs Copilot CLI): `cargo xtask conformance` installs
//! it and runs this with `--run-ignored only`. Everything a run saw is kept in
//! `target/tmp/copilot-byok/<backend>/`; a failure prints its tails.
//!
//! Linux only: processes are counted and waited for through `/proc` (`processes.rs`) and serve is
//! stopped with SIGTERM; elsewhere this test binary is empty.
#![cfg(target_os = "linux")]

mod tap;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acp_conformance::copilot::{self, Provider, BASE_ARGS};
use acp_conformance::{processes, serve};
use anyhow::{bail, ensure, Context, Result};
use cursor_bridge::backend::process::{self, SpawnSpec};
use cursor_bridge_test_client::{readme_snippet, shell_env};
use serde_json::{json, Value};

use processes::Output;
use serve::Serve;
use tap::{Exchange, Tap};

/// A first start unpacks ~235 MB into Copilot's fresh home; the job itself takes seconds.
const COPILOT_BOUND: Duration = Duration::from_secs(180);
const STOP_BOUND: Duration = Duration::from_secs(15);
/// How long leftovers get to go after their parent exited.
const LEFTOVER_GRACE: Duration = Duration::from_secs(5);
/// Output pipes drain within this once their process is gone.
const DRAIN_BOUND: Duration = Duration::from_secs(5);
/// The model Copilot asks for: Cursor's `auto`, as the double lists it.
const MODEL: &str = "auto";

const GREETING: &str = "Hello from Cursor's model.\nSecond line:\ta tab, \"quotes\", ünïcode ✓\n";
const NOTES: &str = "# Notes\n\n- written by Copilot CLI's own `create` tool\n";
const SAY: &str = "Creating the two files.";

/// The tests share this process's children (we are their subreaper): one at a time, so one's
/// leftovers are never another's.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
#[ignore = "needs the GitHub Copilot CLI: `cargo xtask conformance` installs it and runs this test; by hand set \
            CURSOR_BRIDGE_CONFORMANCE_COPILOT to its native `copilot` binary and pass `--run-ignored only`"]
async fn copilot_cli_writes_files_with_its_own_tools_through_serve_on_acp() {
    byok("acp").await;
}

#[tokio::test]
#[ignore = "needs the GitHub Copilot CLI: `cargo xtask conformance` installs it and runs this test; by hand set \
            CURSOR_BRIDGE_CONFORMANCE_COPILOT to its native `copilot` binary and pass `--run-ignored only`"]
async fn copilot_cli_writes_files_with_its_own_tools_through_serve_on_print_mode() {
    byok("print").await;
}

/// Everything a run saw, for the checks, the kept records and a failure message.
#[derive(Default)]
struct Seen {
    copilot_stdout: String,
    copilot_stderr: String,
    serve_stderr: String,
    serve_log: String,
    records: Vec<Value>,
    record_text: String,
    exchanges: Vec<Exchange>,
}

async fn byok(backend: &str) {
    let _one = ONE_AT_A_TIME.lock().await;
    let binary = copilot::binary().unwrap_or_else(|| panic!("{}", copilot::missing_binary()));
    // What outlives its parent comes to us, where the leftover checks see it.
    process::become_subreaper();
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = Seen::default();
    let outcome = scenario(&binary, tmp.path(), backend, &mut seen).await;
    keep_records(backend, &seen);
    let failure = match outcome {
        Ok(report) => {
            for line in report {
                eprintln!("copilot byok ({backend}): {line}");
            }
            return;
        }
        Err(e) => e,
    };
    let tail = |text: &str, lines: usize| {
        let all: Vec<&str> = text.lines().collect();
        let shown = all[all.len().saturating_sub(lines)..].join("\n");
        if shown.trim().is_empty() {
            "(empty)".to_string()
        } else {
            shown
        }
    };
    let message = format!(
        "Copilot CLI through cursor-bridge serve ({backend}): {failure:#}\n\n\
         --- Copilot stdout (tail) ---\n{}\n\n--- Copilot stderr (tail) ---\n{}\n\n\
         --- the wire ---\n{}\n\n--- serve stderr (tail) ---\n{}\n\n--- serve log (tail) ---\n{}\n\n\
         (everything: {})",
        tail(&seen.copilot_stdout, 40),
        tail(&seen.copilot_stderr, 40),
        seen.exchanges.iter().map(Exchange::summary).collect::<Vec<_>>().join("\n"),
        tail(&seen.serve_stderr, 20),
        tail(&seen.serve_log, 40),
        records_dir(backend).display()
    );
    let _ = std::fs::write(records_dir(backend).join("failure.txt"), &message);
    panic!("{message}");
}

async fn scenario(binary: &Path, root: &Path, backend: &str, seen: &mut Seen) -> Result<Vec<String>> {
    let work = root.join("work");
    std::fs::create_dir_all(&work)?;
    let work = work.canonicalize()?;
    let (greeting, notes) = (work.join("greeting.txt"), work.join("notes.md"));
    let key = client_key();
    let mut serve = Serve::start(&root.join("serve"), backend, &key).await?;
    let upstream = serve.base_url.trim_start_matches("http://").trim_end_matches("/v1").to_string();
    let tap = Tap::start(upstream).await?;

    let script = json!([
        {"say": SAY, "call": [
            {"name": "create", "arguments": {"path": greeting, "file_text": GREETING}},
            {"name": "create", "arguments": {"path": notes, "file_text": NOTES}},
        ]},
        {"call": [{"name": "view", "arguments": {"path": greeting}}]},
    ]);
    let prompt = format!(
        "Create greeting.txt and notes.md in this folder, then check greeting.txt. [[double:{}]]",
        json!({"toolScript": script})
    );
    let home = root.join("copilot-home");
    let provider = Provider { base_url: &tap.base_url, api_key: &key, model: MODEL };
    let ran = run_copilot(binary, &home, &work, &provider, &prompt, serve.child.pid(), seen).await;

    // Serve stops whatever happened to Copilot, and is looked at afterwards (an ACP process writes
    // its record line when it exits).
    let stopped = stop_serve(&mut serve).await;
    seen.serve_stderr = serve.stderr();
    seen.serve_log = serve.folders.log_text();
    seen.records = serve.folders.records();
    seen.record_text = std::fs::read_to_string(serve.folders.record_file()).unwrap_or_default();
    seen.exchanges = tap.exchanges();

    let ran = ran?;
    let mut report = vec![format!("Copilot ran {:.1?} and exited {:?}", ran.elapsed, ran.code)];
    ensure!(ran.code == Some(0), "Copilot CLI exited {:?}, not 0", ran.code);
    ensure!(ran.left.is_empty(), "processes Copilot CLI left running: {:?}", ran.left);
    let (code, left) = stopped?;
    ensure!(code == Some(0), "cursor-bridge serve exited {code:?} on SIGTERM, not 0");
    ensure!(left.is_empty(), "processes left running after serve stopped: {left:?}");
    report.push("serve stopped on SIGTERM with exit 0; no process left over".into());

    // The job, as the user sees it.
    for (path, content) in [(&greeting, GREETING), (&notes, NOTES)] {
        let written = std::fs::read_to_string(path).with_context(|| format!("{} was not created", path.display()))?;
        ensure!(written == content, "{} holds {written:?}, not {content:?}", path.display());
    }
    let tools = Tools::from_records(&seen.records);
    let results = tools.check(backend, &greeting, &notes)?;
    let answer = quoted(&results);
    ensure!(
        quoted_in(&seen.copilot_stdout).as_ref() == Some(&answer),
        "Copilot did not print the final answer quoting {answer:?}; it printed {:?}",
        seen.copilot_stdout
    );
    report.push(format!("Cursor's side was offered {} tools: {}", tools.offered.len(), tools.offered.join(", ")));
    report.push(format!("results that reached the double: {}", results.len()));

    report.extend(check_wire(&seen.exchanges, &greeting, &notes, &answer)?);

    // The client key is the HTTP client's alone.
    ensure!(!seen.record_text.contains(&key), "the client key reached the Cursor CLI (the double's record has it)");
    ensure!(!seen.serve_log.contains(&key), "the client key is in serve's log");
    Ok(report)
}

struct Ran {
    code: Option<i32>,
    left: Vec<String>,
    elapsed: Duration,
}

/// Copilot's environment with the README's BYOK variables as a person copies them (the base URL
/// the tap's, the key in the placeholder's place) over the tests' own.
fn readme_environment(home: &Path, provider: &Provider<'_>) -> Result<Vec<(String, String)>> {
    let address = provider.base_url.trim_start_matches("http://").trim_end_matches("/v1").to_string();
    let readme = shell_env(&readme_snippet("copilot-byok", &address));
    ensure!(
        readme.iter().any(|(k, v)| k == "COPILOT_PROVIDER_BASE_URL" && v == provider.base_url)
            && readme.iter().any(|(k, v)| k == "COPILOT_MODEL" && v == provider.model)
            && readme.iter().any(|(k, _)| k == "COPILOT_PROVIDER_MAX_PROMPT_TOKENS"),
        "the README's Copilot CLI snippet does not say what this test runs: {readme:?}"
    );
    let mut env = copilot::environment(home, provider);
    for (k, v) in readme {
        let v = if v.starts_with('<') { provider.api_key.to_string() } else { v };
        env.retain(|(name, _)| *name != k);
        env.push((k, v));
    }
    Ok(env)
}

/// `copilot -p PROMPT --allow-all-tools` in `work`, stdin closed, to its end (at most
/// [`COPILOT_BOUND`]); what it printed goes to `seen`.
async fn run_copilot(
    binary: &Path,
    home: &Path,
    work: &Path,
    provider: &Provider<'_>,
    prompt: &str,
    serve_pid: u32,
    seen: &mut Seen,
) -> Result<Ran> {
    let args = ["-p", prompt, "--allow-all-tools"].into_iter().chain(BASE_ARGS);
    let spec = SpawnSpec {
        program: binary.to_path_buf(),
        args: args.map(Into::into).collect(),
        cwd: Some(work.to_path_buf()),
        env: readme_environment(home, provider)?.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        env_remove: std::env::vars_os().map(|(k, _)| k).collect(),
    };
    let started = Instant::now();
    let mut child = process::spawn(&spec).with_context(|| format!("starting {}", binary.display()))?;
    drop(child.take_stdin());
    let (stdout, out_task) = Output::collect(child.take_stdout());
    let (stderr, err_task) = Output::collect(child.take_stderr());
    let done = processes::exited(child.pid(), COPILOT_BOUND).await;
    let elapsed = started.elapsed();
    // Before the reap, which would kill what is left in its group.
    let left = if done { processes::left_over(&[serve_pid], LEFTOVER_GRACE).await } else { Vec::new() };
    let code = processes::reap(&mut child).await;
    for task in [out_task, err_task] {
        let _ = tokio::time::timeout(DRAIN_BOUND, task).await;
    }
    seen.copilot_stdout = stdout.text();
    seen.copilot_stderr = stderr.text();
    if !done {
        processes::clean_up();
        bail!("Copilot CLI did not finish within {COPILOT_BOUND:?} (stopped)");
    }
    Ok(Ran { code, left, elapsed })
}

/// SIGTERM, its exit within [`STOP_BOUND`], and what is left below us then: (exit code, leftovers).
async fn stop_serve(serve: &mut Serve) -> Result<(Option<i32>, Vec<String>)> {
    let pid = serve.child.pid();
    // SAFETY: kill(2) on our own child, which stays unreaped (a zombie at worst) until `reap`.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
    let done = processes::exited(pid, STOP_BOUND).await;
    let left = if done { processes::left_over(&[], LEFTOVER_GRACE).await } else { Vec::new() };
    let code = processes::reap(&mut serve.child).await;
    processes::clean_up();
    ensure!(done, "cursor-bridge serve did not exit within {STOP_BOUND:?} of SIGTERM (killed)");
    Ok((code, left))
}

/// The `tools` entries of the double's record (cli-double README §9.7), over all its lines.
#[derive(Default)]
struct Tools {
    /// The tool names Cursor's side could call: listed by our MCP host (ACP) or in the
    /// `<client_tools>` block (print mode).
    offered: Vec<String>,
    calls: Vec<Value>,
    results: Vec<Value>,
}

impl Tools {
    fn from_records(records: &[Value]) -> Tools {
        let mut tools = Tools::default();
        let names = |v: &Value| -> Vec<String> {
            v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
        };
        for t in records.iter().filter_map(|r| r.get("tools")) {
            let list = |key: &str| t[key].as_array().cloned().unwrap_or_default();
            for server in list("mcpServers") {
                tools.offered.extend(names(&server["visibleTools"]));
            }
            for offer in list("offered") {
                tools.offered.extend(names(&offer["names"]));
            }
            tools.calls.extend(list("calls"));
            tools.results.extend(list("results"));
        }
        let mut once = std::collections::HashSet::new();
        tools.offered.retain(|name| once.insert(name.clone()));
        tools
    }

    /// The calls went out by the backend's path, and Copilot's results came back; returns them.
    fn check(&self, backend: &str, greeting: &Path, notes: &Path) -> Result<Vec<Value>> {
        for name in ["create", "view"] {
            ensure!(
                self.offered.iter().any(|t| t == name),
                "Copilot's `{name}` tool was not offered: {:?}",
                self.offered
            );
        }
        let (path, outcome) = if backend == "acp" { ("mcp", "result") } else { ("prompt", "sent") };
        let calls: Vec<(&str, &str, &str)> =
            self.calls.iter().map(|c| (str_at(c, "name"), str_at(c, "path"), str_at(c, "outcome"))).collect();
        let mut names: Vec<&str> = calls.iter().map(|c| c.0).collect();
        names.sort_unstable();
        ensure!(names == ["create", "create", "view"], "the double's calls: {:?}", self.calls);
        ensure!(
            calls.iter().all(|&(_, p, o)| p == path && o == outcome),
            "the calls did not go out by the {path} path with outcome {outcome}: {calls:?}"
        );
        ensure!(self.results.len() == 3, "the double got {} results, not 3: {:?}", self.results.len(), self.results);
        ensure!(self.results.iter().all(|r| r["isError"] == false), "an error result: {:?}", self.results);
        for file in [greeting, notes] {
            let file = file.display().to_string();
            ensure!(
                self.results.iter().any(|r| str_at(r, "name") == "create" && str_at(r, "text").contains(&file)),
                "no `create` result names {file}: {:?}",
                self.results
            );
        }
        let viewed = self.results.iter().find(|r| str_at(r, "name") == "view").context("no `view` result")?;
        ensure!(
            str_at(viewed, "text").trim_end() == GREETING.trim_end(),
            "the `view` result the double got is {:?}, not the file's text",
            viewed["text"]
        );
        Ok(self.results.clone())
    }
}

/// The double's last answer quotes every result the chat received (cli-double README §9.1):
/// `Done. Results: <name>: <first line>; …`. Sorted: the results of parallel calls come back in
/// the order they finish.
fn quoted(results: &[Value]) -> Vec<String> {
    let mut quoted: Vec<String> = results
        .iter()
        .map(|r| {
            let error = if r["isError"] == true { " (error)" } else { "" };
            format!("{}{error}: {}", str_at(r, "name"), str_at(r, "text").lines().next().unwrap_or(""))
        })
        .collect();
    quoted.sort();
    quoted
}

/// The results quoted by the `Done. Results: …` line in `text`, sorted; `None` without one.
fn quoted_in(text: &str) -> Option<Vec<String>> {
    let line = text.lines().find_map(|l| l.trim().strip_prefix("Done. Results: "))?;
    let mut quoted: Vec<String> = line.split("; ").map(str::to_string).collect();
    quoted.sort();
    Some(quoted)
}

/// One streamed answer, put together from its chunks.
#[derive(Debug, Default)]
struct Streamed {
    text: String,
    /// (id, name, arguments as sent) by index.
    calls: Vec<(String, String, String)>,
    finish: Vec<String>,
    chunks: usize,
    done: bool,
    usage: Option<Value>,
}

fn streamed(exchange: &Exchange) -> Result<Streamed> {
    let mut s = Streamed::default();
    for data in exchange.sse_data() {
        if data == "[DONE]" {
            s.done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(&data).with_context(|| format!("a chunk that is not JSON: {data}"))?;
        ensure!(chunk["object"] == "chat.completion.chunk", "not a chat.completion.chunk: {chunk}");
        s.chunks += 1;
        if !chunk["usage"].is_null() {
            s.usage = Some(chunk["usage"].clone());
        }
        for choice in chunk["choices"].as_array().into_iter().flatten() {
            let delta = &choice["delta"];
            s.text.push_str(delta["content"].as_str().unwrap_or(""));
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"].as_u64().context("a tool_calls delta without an index")? as usize;
                ensure!(index <= s.calls.len(), "tool call index {index} skips one: {chunk}");
                if index == s.calls.len() {
                    s.calls.push(Default::default());
                }
                let slot = &mut s.calls[index];
                slot.0.push_str(call["id"].as_str().unwrap_or(""));
                slot.1.push_str(call.pointer("/function/name").and_then(Value::as_str).unwrap_or(""));
                slot.2.push_str(call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or(""));
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                s.finish.push(reason.to_string());
            }
        }
    }
    Ok(s)
}

/// What crossed the wire: three streamed rounds, tool calls out and their results back.
fn check_wire(exchanges: &[Exchange], greeting: &Path, notes: &Path, answer: &[String]) -> Result<Vec<String>> {
    let rounds: Vec<&Exchange> = exchanges
        .iter()
        .filter(|e| e.path == "/v1/chat/completions" && e.request["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    ensure!(rounds.len() == 3, "{} chat requests with tools, not 3", rounds.len());
    let mut answers = Vec::new();
    for (i, round) in rounds.iter().enumerate() {
        ensure!(round.error.is_none() && round.status == 200, "round {}: {}", i + 1, round.summary());
        ensure!(round.request["stream"] == true, "round {}: Copilot did not ask for a stream", i + 1);
        ensure!(
            round.response_header("content-type").is_some_and(|c| c.starts_with("text/event-stream")),
            "round {}: not an event stream: {:?}",
            i + 1,
            round.response_headers
        );
        let answer = streamed(round).with_context(|| format!("round {}", i + 1))?;
        ensure!(answer.done, "round {}: the stream did not end with [DONE]", i + 1);
        answers.push(answer);
    }
    // The calls of one step, in any order: on the MCP path Cursor's side makes them at once, and
    // they reach serve (and so the client) in the order they arrive.
    let want_calls = |i: usize, want: &[(&str, Value)]| -> Result<Vec<String>> {
        let got = &answers[i].calls;
        ensure!(got.len() == want.len(), "round {}: {} tool calls, not {}: {got:?}", i + 1, got.len(), want.len());
        let mut unmatched: Vec<&(&str, Value)> = want.iter().collect();
        for (id, name, arguments) in got {
            ensure!(id.starts_with("call_"), "round {}: the call id {id:?}", i + 1);
            let arguments: Value = serde_json::from_str(arguments)
                .with_context(|| format!("round {}: arguments that are not JSON: {arguments}", i + 1))?;
            let Some(at) = unmatched.iter().position(|(n, a)| n == name && *a == arguments) else {
                bail!("round {}: an unexpected call {name} {arguments}", i + 1);
            };
            unmatched.remove(at);
        }
        let ids: Vec<String> = got.iter().map(|c| c.0.clone()).collect();
        ensure!(ids.iter().collect::<std::collections::HashSet<_>>().len() == ids.len(), "round {}: ids repeat", i + 1);
        ensure!(answers[i].finish == ["tool_calls"], "round {}: finish_reason {:?}", i + 1, answers[i].finish);
        Ok(ids)
    };
    let created = want_calls(
        0,
        &[
            ("create", json!({"path": greeting, "file_text": GREETING})),
            ("create", json!({"path": notes, "file_text": NOTES})),
        ],
    )?;
    ensure!(answers[0].text.trim() == SAY, "round 1: the text before the calls is {:?}", answers[0].text);
    let viewed = want_calls(1, &[("view", json!({"path": greeting}))])?;
    ensure!(answers[2].calls.is_empty(), "round 3: tool calls {:?}", answers[2].calls);
    ensure!(answers[2].finish == ["stop"], "round 3: finish_reason {:?}", answers[2].finish);
    ensure!(
        answers[2].text.trim().starts_with("Done. Results: ") && quoted_in(&answers[2].text).as_deref() == Some(answer),
        "round 3: the answer streamed is {:?}, not one quoting {answer:?}",
        answers[2].text
    );

    // Each later request carries the calls before it and Copilot's results for them.
    for (i, ids) in [(1, &created), (2, &viewed)] {
        let messages = rounds[i].request["messages"].as_array().cloned().unwrap_or_default();
        for id in ids {
            ensure!(
                messages.iter().any(|m| m["role"] == "assistant"
                    && m["tool_calls"].as_array().is_some_and(|c| c.iter().any(|c| c["id"] == id.as_str()))),
                "round {}: the request does not carry the call {id} back",
                i + 1
            );
            ensure!(
                messages.iter().any(|m| m["role"] == "tool" && m["tool_call_id"] == id.as_str()),
                "round {}: no `role: tool` result for {id}",
                i + 1
            );
        }
    }
    let view_result = rounds[2].request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == viewed[0].as_str())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    ensure!(view_result.trim_end() == GREETING.trim_end(), "Copilot's `view` result: {view_result:?}");

    let mut report = vec![format!(
        "wire: 3 rounds, finish_reason {:?}, {} tool calls out, chunks per round {:?}",
        answers.iter().map(|a| a.finish.join(",")).collect::<Vec<_>>(),
        answers.iter().map(|a| a.calls.len()).sum::<usize>(),
        answers.iter().map(|a| a.chunks).collect::<Vec<_>>()
    )];
    report.push(format!(
        "wire: texts as streamed {:?}; usage {:?}",
        answers.iter().map(|a| a.text.chars().take(40).collect::<String>()).collect::<Vec<_>>(),
        answers.iter().map(|a| a.usage.clone().unwrap_or(Value::Null)["prompt_tokens"].clone()).collect::<Vec<_>>()
    ));
    Ok(report)
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A client key of this run only (it must show up nowhere but in Copilot's requests).
fn client_key() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("cb-conformance-{}-{nanos:x}", std::process::id())
}

fn records_dir(backend: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("copilot-byok").join(backend)
}

/// What the run saw, kept for reading after it (the wire as JSON lines).
fn keep_records(backend: &str, seen: &Seen) {
    let dir = records_dir(backend);
    let _ = std::fs::remove_dir_all(&dir);
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let wire: Vec<String> = seen
        .exchanges
        .iter()
        .map(|e| {
            json!({"method": e.method, "path": e.path, "request": e.request, "status": e.status,
                   "responseHeaders": e.response_headers, "response": e.response, "error": e.error})
            .to_string()
        })
        .collect();
    for (name, text) in [
        ("copilot-stdout.txt", seen.copilot_stdout.clone()),
        ("copilot-stderr.txt", seen.copilot_stderr.clone()),
        ("serve-stderr.txt", seen.serve_stderr.clone()),
        ("serve.log", seen.serve_log.clone()),
        ("record.jsonl", seen.record_text.clone()),
        ("wire.jsonl", wire.join("\n") + "\n"),
    ] {
        let _ = std::fs::write(dir.join(name), text);
    }
}
