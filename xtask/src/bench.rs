//! `cargo xtask bench [--smoke]`: the performance figures of the sidecar, each measured against a
//! reference taken in the same run, printed as one table and written to `target/bench/report.md`
//! and `target/bench/report.json`. See `docs/performance.md` for what each figure means.
//!
//! Everything runs the release binaries (`cursor-bridge` and the CLI test double
//! `cursor-agent-double`) over pipes, with a small JSON-RPC client written here (Content-Length
//! framing, one reader thread per sidecar that timestamps every frame as it arrives). Every sidecar
//! gets its own temporary state, log and data folders; every process started here is stopped when
//! its guard is dropped.
//!
//! Full mode repeats each figure enough for stable medians on a small machine and fails (returns an
//! error) when a target is missed. `--smoke` runs every figure once, quickly, so the harness cannot
//! rot; it never fails on targets.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

// ------------------------------------------------------------------------------------------------
// Settings of the scenarios (the issue's numbers).

/// `CURSOR_DOUBLE_CREATE_CHAT_DELAY_MS` for the new-conversation figure.
const CREATE_CHAT_DELAY_MS: u64 = 1500;
/// `CURSOR_DOUBLE_STARTUP_MS` for the new-conversation figure (Node boot of every CLI process).
const STARTUP_MS: u64 = 800;
/// The double applies its start-up to `create-chat` too, so the prefetch started at `initialize`
/// needs start-up + create-chat; the first message waits this long after `initialize`.
const PREFETCH_WAIT: Duration = Duration::from_millis(STARTUP_MS + CREATE_CHAT_DELAY_MS + 200);
/// The wait the issue names ("give the prefetch its 1.5 s"): also measured, as a separate row.
const EARLY_WAIT: Duration = Duration::from_millis(CREATE_CHAT_DELAY_MS);
/// A person's think time between turns: room for a warm spare to boot (start-up 0.8 s).
const THINK_TIME: Duration = Duration::from_millis(1500);
/// `CURSOR_DOUBLE_MODELS_DELAY_MS` for the model-picker figure.
const MODELS_DELAY_MS: u64 = 2500;
/// Length of the streamed answer (one character per delta).
const STREAM_CHARS: usize = 100_000; // the notes say "100,000"

/// How many times each figure is measured.
struct Plan {
    smoke: bool,
    first_delta: usize,
    stream: usize,
    new_conversation: usize,
    models_cold: usize,
    models_cached_per_cold: usize,
    startup: usize,
    concurrent_rss: usize,
    concurrency: usize,
}

impl Plan {
    fn new(smoke: bool) -> Self {
        if smoke {
            Plan {
                smoke,
                first_delta: 1,
                stream: 1,
                new_conversation: 1,
                models_cold: 1,
                models_cached_per_cold: 1,
                startup: 1,
                concurrent_rss: 1,
                concurrency: 1,
            }
        } else {
            Plan {
                smoke,
                first_delta: 40,
                stream: 8,
                new_conversation: 5,
                models_cold: 5,
                models_cached_per_cold: 6,
                startup: 30,
                concurrent_rss: 5,
                concurrency: 8,
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Entry point.

/// Comma-separated section names: measure only those (for working on one figure).
const ONLY: &str = "CURSOR_BRIDGE_BENCH_ONLY";

/// Set in the optimized re-run (see [`run`]) so it never re-runs itself again.
const OPTIMIZED_RUN: &str = "CURSOR_BRIDGE_BENCH_OPTIMIZED";

pub fn run(root: &Path, smoke: bool) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os(OPTIMIZED_RUN).is_none() {
        // `cargo xtask` builds xtask unoptimized, and an unoptimized client cannot read 300,000
        // frames a second: the streaming figure would measure the client. Run an optimized xtask.
        eprintln!("bench: running an optimized build of xtask (cargo run --release -p xtask --bin xtask -- bench)");
        let mut cmd = cargo();
        cmd.args(["run", "--release", "--quiet", "-p", "xtask", "--bin", "xtask", "--", "bench"])
            .current_dir(root)
            .env(OPTIMIZED_RUN, "1");
        if smoke {
            cmd.arg("--smoke");
        }
        let status = cmd.status().context("running cargo run --release -p xtask --bin xtask -- bench")?;
        if !status.success() {
            bail!("the benchmark failed ({status}); see above");
        }
        return Ok(());
    }
    let started = Instant::now();
    let plan = Plan::new(smoke);
    let target_dir = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let target_dir = if target_dir.is_absolute() { target_dir } else { root.join(target_dir) };

    let build_started = Instant::now();
    let bins = build(root, &target_dir)?;
    let build_secs = build_started.elapsed().as_secs_f64();
    eprintln!("bench: release binaries ready in {build_secs:.1} s; measuring ({})", if smoke { "smoke" } else { "full" });

    let load_before = loadavg();
    let measure_started = Instant::now();
    let ctx = Ctx { root, bins: &bins, plan: &plan };
    let only: Option<Vec<String>> =
        std::env::var(ONLY).ok().filter(|v| !v.trim().is_empty()).map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    type Section = fn(&Ctx) -> Result<Vec<Row>>;
    let sections: [(&str, Section); 8] = [
        ("first-delta", first_delta),
        ("streaming", streaming),
        ("parser", parser_rows),
        ("new-conversation", new_conversation),
        ("model-picker", model_picker),
        ("footprint", footprint),
        ("sizes", sizes),
        ("concurrency", concurrency),
    ];
    if let Some(only) = &only {
        if let Some(bad) = only.iter().find(|o| !sections.iter().any(|(name, _)| name == o)) {
            let names: Vec<&str> = sections.iter().map(|(name, _)| *name).collect();
            bail!("{ONLY}: unknown section `{bad}`; the sections are {}", names.join(", "));
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    for (name, section) in sections {
        if only.as_ref().is_some_and(|only| !only.iter().any(|o| o == name)) {
            continue;
        }
        let t = Instant::now();
        rows.extend(section(&ctx).with_context(|| format!("bench section `{name}`"))?);
        eprintln!("bench: {name} measured in {:.1} s", t.elapsed().as_secs_f64());
    }
    for r in std::mem::take(&mut *lock_retiring()) {
        let _ = r.join();
    }
    let measure_secs = measure_started.elapsed().as_secs_f64();

    let load = format!("{} before, {} after", load_before, loadavg());
    let total_secs = started.elapsed().as_secs_f64();
    let report = Report { smoke, rows, build_secs, measure_secs, total_secs, load, only };
    let table = report.table();
    println!("{table}");
    let out_dir = target_dir.join("bench");
    std::fs::create_dir_all(&out_dir)?;
    std::fs::write(out_dir.join("report.md"), report.markdown(&table))?;
    std::fs::write(out_dir.join("report.json"), serde_json::to_string_pretty(&report.json())? + "\n")?;
    println!(
        "bench: {} mode, measured in {:.0} s (release build {:.0} s), load average {}; report: {}",
        if smoke { "smoke" } else { "full" },
        measure_secs,
        build_secs,
        report.load,
        out_dir.join("report.md").display()
    );

    let failed: Vec<String> = report.rows.iter().filter(|r| r.pass == Some(false)).map(|r| r.figure.clone()).collect();
    if !smoke && !failed.is_empty() {
        bail!("{} target(s) missed: {}", failed.len(), failed.join("; "));
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Build.

struct Bins {
    bridge: PathBuf,
    double: PathBuf,
}

/// What every section gets.
struct Ctx<'a> {
    root: &'a Path,
    bins: &'a Bins,
    plan: &'a Plan,
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn build(root: &Path, target_dir: &Path) -> Result<Bins> {
    let status = cargo()
        .args(["build", "--release", "-p", "cursor-bridge", "-p", "cli-double"])
        .current_dir(root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build --release -p cursor-bridge -p cli-double failed ({status})");
    }
    let exe = std::env::consts::EXE_SUFFIX;
    let bins = Bins {
        bridge: target_dir.join("release").join(format!("cursor-bridge{exe}")),
        double: target_dir.join("release").join(format!("cursor-agent-double{exe}")),
    };
    for p in [&bins.bridge, &bins.double] {
        if !p.is_file() {
            bail!("expected a release binary at {}", p.display());
        }
    }
    Ok(bins)
}

/// Samples from `sidecar/benches/parser.rs` (MB/s per sample).
struct ParserBench {
    fixtures: Vec<f64>,
    serde_value: Vec<f64>,
    deltas: Vec<f64>,
    delta_lines_per_sec: Vec<f64>,
    fixture_bytes: u64,
}

fn parser_bench(root: &Path, smoke: bool) -> Result<ParserBench> {
    let mut cmd = cargo();
    cmd.args(["bench", "-p", "cursor-bridge", "--bench", "parser"]).current_dir(root).stderr(Stdio::inherit());
    if smoke {
        cmd.args(["--", "--smoke"]);
    }
    let out = cmd.output().context("running cargo bench -p cursor-bridge --bench parser")?;
    if !out.status.success() {
        bail!("cargo bench -p cursor-bridge --bench parser failed ({})", out.status);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| anyhow!("the parser bench printed no JSON line"))?;
    let v: Value = serde_json::from_str(line).context("the parser bench's JSON line")?;
    let samples = |ptr: &str| -> Result<Vec<f64>> {
        v.pointer(ptr)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect::<Vec<_>>())
            .filter(|a| !a.is_empty())
            .ok_or_else(|| anyhow!("the parser bench's JSON has no {ptr}"))
    };
    Ok(ParserBench {
        fixtures: samples("/parser/fixtures/mbps")?,
        serde_value: samples("/parser/serdeValue/mbps")?,
        deltas: samples("/parser/deltas/mbps")?,
        delta_lines_per_sec: samples("/parser/deltas/linesPerSec")?,
        fixture_bytes: v.pointer("/parser/fixtures/bytes").and_then(Value::as_u64).unwrap_or(0),
    })
}

/// In-process parser throughput (`cargo bench` first builds its target when it is stale).
fn parser_rows(ctx: &Ctx) -> Result<Vec<Row>> {
    Ok(parser_bench(ctx.root, ctx.plan.smoke)?.rows())
}

impl ParserBench {
    fn rows(&self) -> Vec<Row> {
        vec![
            Row::new("streaming", "Stream parser alone, transcripts (MB/s)", Unit::MBps, &self.fixtures)
                .reference("serde_json::Value on the same lines", &self.serde_value)
                .note(format!(
                    "`cargo bench -p cursor-bridge --bench parser`: StreamParser::new(true) + push_line per line + finish over sidecar/tests/fixtures/cursor-cli/*.jsonl ({} bytes per pass); each sample repeats the set for ≥ 100 ms.",
                    self.fixture_bytes
                )),
            Row::new("streaming", "Stream parser alone, 100k-delta turn (MB/s)", Unit::MBps, &self.deltas).note(format!(
                "A synthetic 100,000 × 1-character delta turn shaped like the CLI's partial output: {:.2} M lines/s (median).",
                Stat::of(&self.delta_lines_per_sec, true).median / 1e6
            )),
        ]
    }
}

// ------------------------------------------------------------------------------------------------
// Figures.

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn since(later: Instant, earlier: Instant) -> f64 {
    ms(later.saturating_duration_since(earlier))
}

/// A new temporary folder for one process or scenario.
fn scratch() -> Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix("cursor-bridge-bench-").tempdir().context("creating a temporary folder")
}

fn user(text: &str) -> Value {
    json!({"role": "user", "text": text})
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "text": text})
}

/// First delta: `chat/send` → first `text` delta through the sidecar vs spawning the double directly.
fn first_delta(ctx: &Ctx) -> Result<Vec<Row>> {
    let (bins, plan) = (ctx.bins, ctx.plan);
    let dir = scratch()?;
    let mut sc = Sidecar::launch(bins, dir.path(), None, &[])?;
    sc.initialize(json!({"spares": 0}))?;
    std::thread::sleep(Duration::from_millis(300)); // the chat-id prefetch of `initialize`
    let (mut via, mut direct, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    let (mut via_resumed, mut diff_resumed) = (Vec::new(), Vec::new());
    let ws = sc.ws.clone();
    let warmup = if plan.smoke { 1 } else { 3 };
    let conv = |i: usize| format!("fd-conv-{i}");
    // The conversation of the warm-up's first turn, so every iteration has one to resume.
    sc.turn("fd-seed", &conv(usize::MAX), vec![user("hi")], Duration::from_secs(30))?;
    std::thread::sleep(Duration::from_millis(60));
    for i in 0..warmup + plan.first_delta {
        let mut d = f64::NAN;
        let mut new = f64::NAN;
        let mut resumed = f64::NAN;
        // Rotate the order so no side always runs on a machine just woken by another.
        for step in 0..3 {
            match (i + step) % 3 {
                0 => {
                    let run = run_double_direct(bins, dir.path(), &ws, &[], "hi")?;
                    d = since(run.first_text.ok_or_else(|| anyhow!("the double printed no text delta"))?, run.spawned);
                }
                1 => {
                    let t = sc.turn(&format!("fd-{i}"), &conv(i), vec![user("hi")], Duration::from_secs(30))?;
                    new = since(t.first_text.ok_or_else(|| anyhow!("no text delta"))?, t.sent);
                }
                _ => {
                    // The previous iteration's conversation, resumed: no chat id to fetch.
                    let earlier = if i == 0 { usize::MAX } else { i - 1 };
                    let msgs = vec![user("hi"), assistant("Echo: hi"), user("again")];
                    let t = sc.turn(&format!("fd-r-{i}"), &conv(earlier), msgs, Duration::from_secs(30))?;
                    if t.result["resumed"] != json!(true) {
                        bail!("the follow-up turn did not resume: {}", t.result);
                    }
                    resumed = since(t.first_text.ok_or_else(|| anyhow!("no text delta"))?, t.sent);
                }
            }
            // Room for what the sidecar does after a turn (the chat-id refill, the orphan sweep).
            std::thread::sleep(Duration::from_millis(40));
        }
        if i >= warmup {
            via.push(new);
            direct.push(d);
            diff.push(new - d);
            via_resumed.push(resumed);
            diff_resumed.push(resumed - d);
        }
    }
    Ok(vec![
        Row::new("first delta", "First text delta via sidecar, new conversation", Unit::Ms, &via)
            .reference("direct spawn → first text line", &direct)
            .note("chat/send → first `text` delta at the client; the double answers at once (no start-up, no pacing). Sidecar initialized with `spares: 0` (a cold CLI process per turn, like the direct spawn) and a new conversationId per turn; the direct spawn uses the sidecar's argv (`-p --output-format stream-json --stream-partial-output --model auto --workspace <ws> --resume <new id> --trust`, prompt on stdin then closed), environment and working folder."),
        Row::new("first delta", "First-delta overhead, new conversation (sidecar − direct)", Unit::Ms, &diff)
            .target(Target::below(2.0, "< 2 ms median"))
            .note("Paired per iteration. A new conversation takes the prefetched chat id, and taking it starts the `create-chat` for the next one at once (sidecar/src/backend/cursor_print/chat_ids.rs), so that process starts alongside the turn's CLI."),
        Row::new("first delta", "First-delta overhead, resumed turn (sidecar − direct)", Unit::Ms, &diff_resumed)
            .reference("resumed turn via sidecar (absolute)", &via_resumed)
            .note("Same, for the second message of an existing conversation (`--resume` its chat, `spares: 0`): no chat id is taken, so nothing else starts with the turn."),
    ])
}

/// Streaming throughput: a 100,000-delta answer through the sidecar vs read straight from the double.
fn streaming(ctx: &Ctx) -> Result<Vec<Row>> {
    let (bins, plan) = (ctx.bins, ctx.plan);
    let dir = scratch()?;
    let alphabet: Vec<char> = "the quick brown fox jumps over the lazy dog ".chars().collect();
    let answer: String = (0..STREAM_CHARS).map(|i| alphabet[i % alphabet.len()]).collect();
    let scenario = dir.path().join("stream.json");
    std::fs::write(&scenario, serde_json::to_vec(&json!({"answer": answer, "chunkChars": 1}))?)?;
    let env = [("CURSOR_DOUBLE_SCENARIO", format!("@{}", scenario.display()))];
    let mut sc = Sidecar::launch(bins, dir.path(), None, &env)?;
    sc.initialize(json!({"spares": 0}))?;
    std::thread::sleep(Duration::from_millis(300));

    let (mut sc_dps, mut sc_mbps, mut d_dps, mut d_mbps) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut frame_mbps = Vec::new();
    let direct = |sc: &Sidecar| -> Result<DirectRun> {
        let d = run_double_direct(bins, dir.path(), &sc.ws, &env, "stream")?;
        if d.deltas != STREAM_CHARS || d.first_text.is_none() {
            bail!("the double printed {} deltas, expected {STREAM_CHARS}", d.deltas);
        }
        std::thread::sleep(Duration::from_millis(100));
        Ok(d)
    };
    for i in 0..plan.stream {
        // Alternate which side goes first.
        let early = if i % 2 == 0 { Some(direct(&sc)?) } else { None };
        let t = sc.turn(&format!("st-{i}"), &format!("st-conv-{i}"), vec![user("stream")], Duration::from_secs(120))?;
        if t.deltas != STREAM_CHARS || t.text != answer {
            bail!("the sidecar delivered {} text deltas ({} chars), expected {STREAM_CHARS} deltas of the answer", t.deltas, t.text.chars().count());
        }
        std::thread::sleep(Duration::from_millis(100));
        let d = match early {
            Some(d) => d,
            None => direct(&sc)?,
        };
        let (first, last) = d.first_text.zip(d.last_text).ok_or_else(|| anyhow!("the double printed no deltas"))?;
        let span = (last - first).as_secs_f64();
        d_dps.push((d.deltas - 1) as f64 / span);
        d_mbps.push(d.window_bytes as f64 / span / 1e6);

        let (first, last) = t.first_text.zip(t.last_text).ok_or_else(|| anyhow!("no deltas"))?;
        let span = (last - first).as_secs_f64();
        sc_dps.push((t.deltas - 1) as f64 / span);
        // The same CLI output (the double's bytes from first to last delta) as the direct run.
        sc_mbps.push(d.window_bytes as f64 / span / 1e6);
        frame_mbps.push(t.delta_frame_bytes as f64 / span / 1e6);
    }
    Ok(vec![
        Row::new("streaming", "Streaming through sidecar (deltas/s)", Unit::PerSec, &sc_dps)
            .reference("double → pipe, read directly", &d_dps)
            .note("An answer of 100,000 characters with `chunkChars: 1` = 100,000 text deltas, timed from the first to the last delta at the client. For rates, the p95 column is the slow end (5th percentile)."),
        Row::new("streaming", "Streaming through sidecar (MB/s of CLI stream-json)", Unit::MBps, &sc_mbps)
            .reference("double → pipe, read directly", &d_mbps)
            .note(format!(
                "Bytes the CLI printed between the first and the last delta, per second. The client received {:.1} MB/s of JSON-RPC frames (median).",
                Stat::of(&frame_mbps, true).median
            )),
    ])
}

struct ConversationRun {
    new_first: f64,
    resumed_first: f64,
}

/// One cold sidecar: wait `first_after`, first message of a new conversation, think, second message.
fn conversation_run(bins: &Bins, spares: u64, first_after: Duration, second: bool, tag: &str) -> Result<ConversationRun> {
    let dir = scratch()?;
    let env = [
        ("CURSOR_DOUBLE_STARTUP_MS", STARTUP_MS.to_string()),
        ("CURSOR_DOUBLE_CREATE_CHAT_DELAY_MS", CREATE_CHAT_DELAY_MS.to_string()),
    ];
    let mut sc = Sidecar::launch(bins, dir.path(), None, &env)?;
    sc.initialize(json!({"spares": spares}))?;
    std::thread::sleep(first_after);
    let conv = format!("nc-{tag}");
    let q1 = "What is the plan?";
    let t1 = sc.turn(&format!("{tag}-1"), &conv, vec![user(q1)], Duration::from_secs(30))?;
    if t1.result["resumed"] != json!(false) {
        bail!("the first message of a new conversation was not a new chat: {}", t1.result);
    }
    let new_first = since(t1.first_text.ok_or_else(|| anyhow!("no text delta"))?, t1.sent);
    if !second {
        return Ok(ConversationRun { new_first, resumed_first: f64::NAN });
    }
    std::thread::sleep(THINK_TIME);
    let t2 = sc.turn(&format!("{tag}-2"), &conv, vec![user(q1), assistant(&t1.text), user("And then?")], Duration::from_secs(30))?;
    if t2.result["resumed"] != json!(true) {
        bail!("the second message did not resume the conversation's chat: {}", t2.result);
    }
    Ok(ConversationRun { new_first, resumed_first: since(t2.first_text.ok_or_else(|| anyhow!("no text delta"))?, t2.sent) })
}

fn new_conversation(ctx: &Ctx) -> Result<Vec<Row>> {
    let (bins, plan) = (ctx.bins, ctx.plan);
    let (mut off, mut on, mut early) = (Vec::new(), Vec::new(), Vec::new());
    if plan.smoke {
        // One of each, side by side: the harness is exercised, the figures are not trusted.
        std::thread::scope(|s| -> Result<()> {
            let a = s.spawn(|| conversation_run(bins, 0, PREFETCH_WAIT, true, "off-0"));
            let b = s.spawn(|| conversation_run(bins, 1, PREFETCH_WAIT, true, "on-0"));
            let c = s.spawn(|| conversation_run(bins, 0, EARLY_WAIT, false, "early-0"));
            off.push(a.join().map_err(|_| anyhow!("panicked"))??);
            on.push(b.join().map_err(|_| anyhow!("panicked"))??);
            early.push(c.join().map_err(|_| anyhow!("panicked"))??);
            Ok(())
        })?;
    } else {
        for i in 0..plan.new_conversation {
            off.push(conversation_run(bins, 0, PREFETCH_WAIT, true, &format!("off-{i}"))?);
            on.push(conversation_run(bins, 1, PREFETCH_WAIT, true, &format!("on-{i}"))?);
            early.push(conversation_run(bins, 0, EARLY_WAIT, false, &format!("early-{i}"))?);
        }
    }
    let col = |runs: &[ConversationRun], f: fn(&ConversationRun) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    let (off_new, off_res) = (col(&off, |r| r.new_first), col(&off, |r| r.resumed_first));
    let (on_new, on_res) = (col(&on, |r| r.new_first), col(&on, |r| r.resumed_first));
    let off_gap: Vec<f64> = off_new.iter().zip(&off_res).map(|(n, r)| n - r).collect();
    let on_gap: Vec<f64> = on_new.iter().zip(&on_res).map(|(n, r)| n - r).collect();
    let gain: Vec<f64> = off_res.iter().zip(&on_res).map(|(off, on)| off - on).collect();
    let early_new = col(&early, |r| r.new_first);
    let setting = format!(
        "Double: create-chat {CREATE_CHAT_DELAY_MS} ms, start-up {STARTUP_MS} ms (it applies to create-chat too, so the prefetch takes {} ms); a fresh sidecar per run; the first message is sent {} ms after `initialize` answered, the second {} ms (think time) after the first ended.",
        STARTUP_MS + CREATE_CHAT_DELAY_MS,
        PREFETCH_WAIT.as_millis(),
        THINK_TIME.as_millis()
    );
    Ok(vec![
        Row::new("new conversation", "New conversation, 1st message, spares off (ms to 1st delta)", Unit::Ms, &off_new)
            .reference("2nd message, resumed, spares off", &off_res)
            .note(setting),
        Row::new("new conversation", "New − resumed, spares off (paired)", Unit::Ms, &off_gap)
            .target(Target::below(50.0, "≤ 50 ms median"))
            .note("Both messages start a cold CLI process; the difference is what a new conversation costs beyond that (the chat id is prefetched at `initialize`)."),
        Row::new("new conversation", "New conversation, 1st message, spares on (ms to 1st delta)", Unit::Ms, &on_new)
            .reference("2nd message, resumed, spares on", &on_res)
            .note("`spares: 1` (the default): after a turn the sidecar starts the follow-up's CLI process (`--resume` the same chat); a new conversation gets no warm process unless `spares` ≥ 2."),
        Row::new("new conversation", "New − resumed, spares on (paired)", Unit::Ms, &on_gap)
            .note("No target: with the default one spare only a follow-up turn is warm, so a new conversation pays the full CLI start-up."),
        Row::new("new conversation", "Follow-up sooner with spares on (off − on)", Unit::Ms, &gain)
            .target(Target::at_least(700.0, "≥ 700 ms median")),
        Row::new("new conversation", "New conversation, 1st message 1.5 s after initialize, spares off", Unit::Ms, &early_new)
            .reference(&format!("same after {} ms (prefetch done)", PREFETCH_WAIT.as_millis()), &off_new)
            .note(format!(
                "The first message sent {} ms after `initialize`, before the prefetched `create-chat` ({} ms with start-up) is done: it waits for the rest of it.",
                EARLY_WAIT.as_millis(),
                STARTUP_MS + CREATE_CHAT_DELAY_MS
            )),
    ])
}

/// `models/list` on a cold sidecar with and without the model cache of an earlier run.
fn model_picker(ctx: &Ctx) -> Result<Vec<Row>> {
    let (bins, plan) = (ctx.bins, ctx.plan);
    let env = [("CURSOR_DOUBLE_MODELS_DELAY_MS", MODELS_DELAY_MS.to_string())];
    let list = |sc: &mut Sidecar| -> Result<f64> {
        let (result, sent, answered) = sc.request("models/list", json!({}), Duration::from_secs(30))?;
        let n = result["models"].as_array().map_or(0, Vec::len);
        if n == 0 {
            bail!("models/list returned no models: {result}");
        }
        Ok(since(answered, sent))
    };
    let (mut cold, mut cached) = (Vec::new(), Vec::new());
    let mut retiring = Vec::new();
    for _ in 0..plan.models_cold {
        // Shared with the sidecars that read its cache, which may outlive this loop (below).
        let earlier = Arc::new(scratch()?);
        {
            let mut sc = Sidecar::launch(bins, earlier.path(), None, &env)?;
            sc.initialize(json!({}))?;
            cold.push(list(&mut sc)?);
        }
        let state = earlier.path().join("state");
        if !state.join("models.json").is_file() {
            bail!("the sidecar left no model cache in {}", state.display());
        }
        for _ in 0..plan.models_cached_per_cold {
            let dir = scratch()?;
            let mut sc = Sidecar::launch(bins, dir.path(), Some(&state), &env)?;
            sc.initialize(json!({}))?;
            cached.push(list(&mut sc)?);
            // Its exit waits for the background check of the cached list (a `models` call): let
            // it end on the side, then remove its folders.
            let earlier = earlier.clone();
            retiring.push(std::thread::spawn(move || drop((sc, dir, earlier))));
        }
    }
    if plan.smoke {
        // Let them end while the other figures run (smoke figures are not compared).
        lock_retiring().extend(retiring);
    } else {
        for r in retiring {
            let _ = r.join();
        }
    }
    Ok(vec![Row::new("model picker", "models/list, cold sidecar with disk cache", Unit::Ms, &cached)
        .reference("cold sidecar without cache", &cold)
        .target(Target::below(10.0, "≤ 10 ms median"))
        .note(format!(
            "Double's `models` takes {MODELS_DELAY_MS} ms. Timed from the request (sent right after `initialize` answered) to the answer. The cache is the state folder (`CURSOR_BRIDGE_STATE_DIR`) of an earlier run."
        ))])
}

fn footprint(ctx: &Ctx) -> Result<Vec<Row>> {
    let (bins, plan) = (ctx.bins, ctx.plan);
    let (mut startup, mut idle, mut floor_start, mut floor_rss) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..plan.startup {
        // Reference: the smallest process start: the (Rust, release) double's `--version`.
        let t0 = Instant::now();
        let status = Command::new(&bins.double)
            .arg("--version")
            .env_clear()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        floor_start.push(ms(t0.elapsed()));
        if !status.success() {
            bail!("cursor-agent-double --version failed");
        }
        // Reference RSS: the double idling in its start-up sleep (a minimal Rust process).
        {
            let dir = scratch()?;
            let mut cmd = Command::new(&bins.double);
            cmd.args(["-p", "--output-format", "stream-json", "--trust"])
                .env_clear()
                .envs(base_env(dir.path()))
                .env("CURSOR_DOUBLE_STARTUP_MS", "5000")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = Guard(cmd.spawn()?);
            std::thread::sleep(Duration::from_millis(60));
            floor_rss.push(rss_kib(child.0.id()).ok_or_else(|| anyhow!("no VmRSS for the double"))? as f64 / 1024.0);
        }

        let dir = scratch()?;
        let mut sc = Sidecar::launch(bins, dir.path(), None, &[])?;
        // The client writes `initialize` as soon as the process exists, like an editor does.
        let params = sc.initialize_params(json!({}));
        let (result, _, answered) = sc.request("initialize", params, Duration::from_secs(30))?;
        if result["protocolVersion"] != json!(1) {
            bail!("unexpected initialize result: {result}");
        }
        startup.push(since(answered, sc.spawned));
        std::thread::sleep(Duration::from_millis(250)); // settle: the chat-id prefetch ends
        idle.push(rss_kib(sc.pid()).ok_or_else(|| anyhow!("no VmRSS for the sidecar"))? as f64 / 1024.0);
    }

    // RSS while 16 turns stream at once.
    let (mut peak, mut peak_idle, mut hwm) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..plan.concurrent_rss {
        let dir = scratch()?;
        let scenario = json!({"answer": "lorem ipsum dolor sit amet ".repeat(150), "chunkChars": 8, "deltaDelayMs": 2});
        let env = [("CURSOR_DOUBLE_SCENARIO", scenario.to_string())];
        let mut sc = Sidecar::launch(bins, dir.path(), None, &env)?;
        sc.initialize(json!({"maxConcurrent": 16, "spares": 0}))?;
        std::thread::sleep(Duration::from_millis(250));
        let pid = sc.pid();
        peak_idle.push(rss_kib(pid).unwrap_or(0) as f64 / 1024.0);
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut max = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    max = max.max(rss_kib(pid).unwrap_or(0));
                    std::thread::sleep(Duration::from_millis(3));
                }
                max
            })
        };
        let specs: Vec<(String, String, Vec<Value>)> =
            (0..16).map(|k| (format!("rss-{i}-{k}"), format!("rss-conv-{i}-{k}"), vec![user("go")])).collect();
        let traces = sc.turns(&specs, Duration::from_secs(60));
        stop.store(true, Ordering::Relaxed);
        let max = sampler.join().map_err(|_| anyhow!("the RSS sampler panicked"))?;
        let traces = traces?;
        if traces.iter().any(|t| t.deltas == 0) {
            bail!("a concurrent turn streamed nothing");
        }
        peak.push(max as f64 / 1024.0);
        hwm.push(hwm_kib(pid).unwrap_or(0) as f64 / 1024.0);
    }

    Ok(vec![
        Row::new("footprint", "Start-up: spawn → initialize answered", Unit::Ms, &startup)
            .reference("spawn → exit of a minimal Rust binary (double --version)", &floor_start),
        Row::new("footprint", "Idle RSS after initialize (MiB)", Unit::MiB, &idle)
            .reference("minimal Rust process (double, idle)", &floor_rss)
            .target(Target::below(15.0, "< 15 MiB median"))
            .note("VmRSS from /proc/<pid>/status 250 ms after `initialize` answered (its chat-id prefetch done)."),
        Row::new("footprint", "Peak RSS during 16 concurrent turns (MiB)", Unit::MiB, &peak)
            .reference("same sidecar idle, before the turns", &peak_idle)
            .note(format!(
                "`maxConcurrent: 16`, 16 new conversations at once, each streaming ~4 KB in 8-character deltas ~2 ms apart; VmRSS sampled every ~3 ms (VmHWM at the end: {:.2} MiB median).",
                Stat::of(&hwm, false).median
            )),
    ])
}

fn sizes(ctx: &Ctx) -> Result<Vec<Row>> {
    let (root, bins) = (ctx.root, ctx.bins);
    let mib = |p: &Path| std::fs::metadata(p).map(|m| m.len() as f64 / (1024.0 * 1024.0)).ok();
    let mut rows = Vec::new();
    let mut bin = Row::new("footprint", "Release binary size (MiB)", Unit::MiB, &[mib(&bins.bridge).unwrap_or(f64::NAN)])
        .target(Target::below(8.0, "< 8 MiB"))
        .note(format!("{} (stripped, LTO, as `cargo build --release` makes it).", rel(root, &bins.bridge)));
    if let Some(d) = mib(&bins.double) {
        bin = bin.reference("the CLI double, same profile", &[d]);
    }
    rows.push(bin);
    let vsix = std::fs::read_dir(root.join("dist"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "vsix"))
        .min();
    rows.push(match vsix.as_deref().and_then(|p| mib(p).map(|m| (p, m))) {
        Some((p, m)) => Row::new("footprint", "VSIX size (MiB)", Unit::MiB, &[m]).note(format!("{} as found (not rebuilt by the bench).", rel(root, p))),
        None => Row::missing("footprint", "VSIX size (MiB)", "n/a (run cargo xtask dist)"),
    });
    Ok(rows)
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

/// 64 turns at once through a pool of 4 vs 16 sequential batches of 4.
fn concurrency(ctx: &Ctx) -> Result<Vec<Row>> {
    let (bins, plan) = (ctx.bins, ctx.plan);
    let dir = scratch()?;
    // 10 deltas of 2 characters, 6 ms between events: ~0.1 s per turn.
    let scenario = json!({"answer": "0123456789abcdefghij", "chunkChars": 2, "deltaDelayMs": 6});
    let env = [("CURSOR_DOUBLE_SCENARIO", scenario.to_string())];
    let mut sc = Sidecar::launch(bins, dir.path(), None, &env)?;
    sc.initialize(json!({"maxConcurrent": 4, "spares": 0}))?;
    std::thread::sleep(Duration::from_millis(300));
    let specs = |tag: &str, range: std::ops::Range<usize>| -> Vec<(String, String, Vec<Value>)> {
        range.map(|k| (format!("{tag}-{k}"), format!("{tag}-conv-{k}"), vec![user(&format!("turn {k}"))])).collect()
    };
    let (mut total, mut max_wait, mut spread) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ref_total, mut ref_max_wait, mut ref_spread) = (Vec::new(), Vec::new(), Vec::new());
    let mut turn_ms = Vec::new();
    for i in 0..plan.concurrency {
        // All 64 at once.
        let traces = sc.turns(&specs(&format!("cc{i}"), 0..64), Duration::from_secs(120))?;
        let submit = traces[0].sent;
        let waits: Vec<f64> = traces.iter().map(|t| t.first_text.map_or(f64::NAN, |f| since(f, submit))).collect();
        if waits.iter().any(|w| w.is_nan()) {
            bail!("a turn of the 64 streamed no text");
        }
        total.push(since(traces.iter().map(|t| t.answered).max().unwrap_or(submit), submit));
        let (lo, hi) = min_max(&waits);
        max_wait.push(hi);
        spread.push(hi - lo);
        std::thread::sleep(Duration::from_millis(300));

        // Reference: 16 batches of 4, each submitted when the previous one has answered.
        let start = Instant::now();
        let mut firsts = Vec::new();
        let mut end = start;
        for b in 0..16 {
            let traces = sc.turns(&specs(&format!("rb{i}"), b * 4..b * 4 + 4), Duration::from_secs(60))?;
            for t in &traces {
                firsts.push(since(t.first_text.ok_or_else(|| anyhow!("a batched turn streamed no text"))?, start));
                turn_ms.push(since(t.answered, t.sent));
                end = end.max(t.answered);
            }
        }
        ref_total.push(since(end, start));
        let (lo, hi) = min_max(&firsts);
        ref_max_wait.push(hi);
        ref_spread.push(hi - lo);
        std::thread::sleep(Duration::from_millis(300));
    }
    Ok(vec![
        Row::new("concurrency", "64 turns at once, pool of 4: total", Unit::Ms, &total)
            .reference("16 sequential batches of 4", &ref_total)
            .note(format!(
                "`maxConcurrent: 4`, `spares: 0`; the double streams 10 deltas 6 ms apart (a batched turn takes {:.0} ms median, chat/send → answer). 64 new conversations written in one go.",
                Stat::of(&turn_ms, false).median
            )),
        Row::new("concurrency", "Max wait, submit → first delta (64 at once)", Unit::Ms, &max_wait)
            .reference("batches: start → last turn's first delta", &ref_max_wait)
            .note("Fairness: the turn that waited longest. In the reference every batch waits for the previous one, so its last first delta is the schedule a fair FIFO pool should match."),
        Row::new("concurrency", "Wait spread, max − min (64 at once)", Unit::Ms, &spread)
            .reference("batches: last − first turn's first delta", &ref_spread),
    ])
}

/// Sidecars still shutting down in the background; joined before [`run`] returns.
static RETIRING: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>> = std::sync::Mutex::new(Vec::new());

fn lock_retiring() -> std::sync::MutexGuard<'static, Vec<std::thread::JoinHandle<()>>> {
    RETIRING.lock().unwrap_or_else(|p| p.into_inner())
}

fn min_max(xs: &[f64]) -> (f64, f64) {
    xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

// ------------------------------------------------------------------------------------------------
// Processes.

/// Environment of every process started here: nothing inherited but PATH; home and Cursor data in
/// the scratch folder.
fn base_env(dir: &Path) -> Vec<(OsString, OsString)> {
    vec![
        ("PATH".into(), std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into())),
        ("HOME".into(), dir.join("home").into_os_string()),
        ("CURSOR_DATA_DIR".into(), dir.join("data").into_os_string()),
    ]
}

/// Kills and reaps the child when dropped (if it is still running).
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

fn proc_status_kib(pid: u32, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines().find_map(|l| l.strip_prefix(key))?.split_whitespace().next()?.parse().ok()
}

fn rss_kib(pid: u32) -> Option<u64> {
    proc_status_kib(pid, "VmRSS:")
}

fn hwm_kib(pid: u32) -> Option<u64> {
    proc_status_kib(pid, "VmHWM:")
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A stream-json line that is a text delta of partial output: an `assistant` event with
/// `timestamp_ms` and no `model_call_id` (flushes have one or lack the other).
fn is_text_delta(line: &[u8]) -> bool {
    line.starts_with(br#"{"type":"assistant""#) && contains(line, b"\"timestamp_ms\"") && !contains(line, b"\"model_call_id\"")
}

struct DirectRun {
    spawned: Instant,
    first_text: Option<Instant>,
    last_text: Option<Instant>,
    deltas: usize,
    /// stdout bytes from the start of the first delta line to the end of the last.
    window_bytes: usize,
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let h = format!("{:032x}", nanos ^ ((std::process::id() as u128) << 64));
    format!("{}-{}-4{}-a{}-{}", &h[0..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
}

/// Run the double the way the sidecar runs a new chat's turn, reading its stdout directly.
fn run_double_direct(bins: &Bins, dir: &Path, ws: &Path, env: &[(&str, String)], prompt: &str) -> Result<DirectRun> {
    let mut cmd = Command::new(&bins.double);
    cmd.args(["-p", "--output-format", "stream-json", "--stream-partial-output", "--model", "auto", "--workspace"])
        .arg(ws)
        .args(["--resume", &uuid_like(), "--trust"])
        .current_dir(ws)
        .env_clear()
        .envs(base_env(dir))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let spawned = Instant::now();
    let mut child = Guard(cmd.spawn().context("starting the CLI double")?);
    let mut stdin = child.0.stdin.take().ok_or_else(|| anyhow!("no stdin"))?;
    stdin.write_all(prompt.as_bytes())?;
    drop(stdin);
    let mut out = BufReader::with_capacity(64 * 1024, child.0.stdout.take().ok_or_else(|| anyhow!("no stdout"))?);
    let mut run = DirectRun { spawned, first_text: None, last_text: None, deltas: 0, window_bytes: 0 };
    let (mut offset, mut window_start) = (0usize, 0usize);
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        let n = out.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        if is_text_delta(&line) {
            let now = Instant::now();
            if run.first_text.is_none() {
                run.first_text = Some(now);
                window_start = offset;
            }
            run.last_text = Some(now);
            run.deltas += 1;
            run.window_bytes = offset + n - window_start;
        }
        offset += n;
    }
    let status = child.0.wait()?;
    if !status.success() {
        bail!("the CLI double failed ({status})");
    }
    Ok(run)
}

/// A frame from the sidecar, stamped with the time its last byte was read from the pipe.
struct Incoming {
    at: Instant,
    bytes: usize,
    kind: Kind,
}

enum Kind {
    /// A `chat/delta` of kind `text`.
    Text { turn: String, text: String },
    /// Any other notification.
    Notification,
    /// A response: its id and its result or error.
    Response { id: Option<u64>, outcome: std::result::Result<Value, Value> },
}

/// A running sidecar and a JSON-RPC client on its pipes.
struct Sidecar {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    rx: Receiver<Vec<Incoming>>,
    pending: std::collections::VecDeque<Incoming>,
    next_id: u64,
    ws: PathBuf,
    double: PathBuf,
    spawned: Instant,
    stderr_file: PathBuf,
}

/// What the client saw of one turn.
struct TurnTrace {
    sent: Instant,
    first_text: Option<Instant>,
    last_text: Option<Instant>,
    deltas: usize,
    delta_frame_bytes: usize,
    text: String,
    answered: Instant,
    result: Value,
}

impl Sidecar {
    /// Start the release sidecar with its folders in `dir` (state in `state` when given) and the
    /// double's settings in its environment (its CLI children inherit them).
    fn launch(bins: &Bins, dir: &Path, state: Option<&Path>, env: &[(&str, String)]) -> Result<Sidecar> {
        let ws = dir.join("ws");
        std::fs::create_dir_all(&ws)?;
        let ws = ws.canonicalize()?;
        let stderr_file = dir.join("sidecar.stderr");
        let mut cmd = Command::new(&bins.bridge);
        cmd.env_clear()
            .envs(base_env(dir))
            .env("CURSOR_BRIDGE_STATE_DIR", state.map_or_else(|| dir.join("state"), Path::to_path_buf))
            .env("CURSOR_BRIDGE_LOG_DIR", dir.join("logs"))
            .env("CURSOR_BRIDGE_LOG", "info")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr_file)?);
        let spawned = Instant::now();
        let mut child = cmd.spawn().with_context(|| format!("starting {}", bins.bridge.display()))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || read_frames(stdout, tx));
        Ok(Sidecar {
            stdin: child.stdin.take(),
            child: Some(child),
            rx,
            pending: Default::default(),
            next_id: 1,
            ws,
            double: bins.double.clone(),
            spawned,
            stderr_file,
        })
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    fn initialize_params(&self, options: Value) -> Value {
        json!({
            "protocolVersion": 1,
            "clientInfo": {"name": "xtask-bench", "version": "1"},
            "workspaceFolders": [self.ws],
            "cliPath": self.double,
            "options": options,
        })
    }

    fn initialize(&mut self, options: Value) -> Result<()> {
        let params = self.initialize_params(options);
        let (result, _, _) = self.request("initialize", params, Duration::from_secs(30))?;
        if result["capabilities"]["cli"]["found"] != json!(true) {
            bail!("the sidecar did not find the CLI double: {result}");
        }
        Ok(())
    }

    /// Write frames in one go; returns the time just before the write.
    fn write(&mut self, bodies: &[Value]) -> Result<Instant> {
        let mut buf = Vec::new();
        for body in bodies {
            let bytes = serde_json::to_vec(body)?;
            write!(buf, "Content-Length: {}\r\n\r\n", bytes.len())?;
            buf.extend_from_slice(&bytes);
        }
        let stdin = self.stdin.as_mut().ok_or_else(|| anyhow!("stdin closed"))?;
        let at = Instant::now();
        stdin.write_all(&buf)?;
        stdin.flush()?;
        Ok(at)
    }

    fn recv(&mut self, deadline: Instant) -> Result<Incoming> {
        if let Some(m) = self.pending.pop_front() {
            return Ok(m);
        }
        match self.rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(batch) => {
                self.pending.extend(batch);
                self.pending.pop_front().ok_or_else(|| anyhow!("empty batch"))
            }
            Err(RecvTimeoutError::Timeout) => bail!("the sidecar did not answer in time{}", self.stderr_tail()),
            Err(RecvTimeoutError::Disconnected) => bail!("the sidecar closed its output{}", self.stderr_tail()),
        }
    }

    fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr_file).unwrap_or_default();
        let tail: String = text.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
        if tail.trim().is_empty() { String::new() } else { format!("; its stderr: {tail}") }
    }

    /// A request and its result; notifications that arrive meanwhile are dropped.
    fn request(&mut self, method: &str, params: Value, timeout: Duration) -> Result<(Value, Instant, Instant)> {
        let id = self.next_id;
        self.next_id += 1;
        let sent = self.write(&[json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})])?;
        let deadline = sent + timeout;
        loop {
            let m = self.recv(deadline)?;
            if let Kind::Response { id: Some(got), outcome } = m.kind {
                if got == id {
                    return match outcome {
                        Ok(result) => Ok((result, sent, m.at)),
                        Err(e) => bail!("{method} failed: {e}"),
                    };
                }
            }
        }
    }

    fn turn(&mut self, turn_id: &str, conversation: &str, messages: Vec<Value>, timeout: Duration) -> Result<TurnTrace> {
        let mut traces = self.turns(&[(turn_id.to_string(), conversation.to_string(), messages)], timeout)?;
        Ok(traces.remove(0))
    }

    /// Send every `(turnId, conversationId, messages)` at once and follow them to their answers.
    fn turns(&mut self, specs: &[(String, String, Vec<Value>)], timeout: Duration) -> Result<Vec<TurnTrace>> {
        let first_id = self.next_id;
        self.next_id += specs.len() as u64;
        let bodies: Vec<Value> = specs
            .iter()
            .enumerate()
            .map(|(k, (turn, conv, messages))| {
                json!({"jsonrpc": "2.0", "id": first_id + k as u64, "method": "chat/send", "params": {
                    "turnId": turn, "model": "auto", "mode": "agent", "conversationId": conv, "messages": messages,
                }})
            })
            .collect();
        let sent = self.write(&bodies)?;
        let deadline = sent + timeout;
        let by_turn: HashMap<&str, usize> = specs.iter().enumerate().map(|(k, s)| (s.0.as_str(), k)).collect();
        let mut traces: Vec<TurnTrace> = specs
            .iter()
            .map(|_| TurnTrace {
                sent,
                first_text: None,
                last_text: None,
                deltas: 0,
                delta_frame_bytes: 0,
                text: String::new(),
                answered: sent,
                result: Value::Null,
            })
            .collect();
        let mut open = specs.len();
        while open > 0 {
            let m = self.recv(deadline)?;
            match m.kind {
                Kind::Text { turn, text } => {
                    let Some(&k) = by_turn.get(turn.as_str()) else { continue };
                    let t = &mut traces[k];
                    t.first_text.get_or_insert(m.at);
                    t.last_text = Some(m.at);
                    t.deltas += 1;
                    t.delta_frame_bytes += m.bytes;
                    t.text.push_str(&text);
                }
                Kind::Notification => {}
                Kind::Response { id: Some(id), outcome } if id >= first_id && id < first_id + specs.len() as u64 => {
                    let k = (id - first_id) as usize;
                    let t = &mut traces[k];
                    t.answered = m.at;
                    t.result = match outcome {
                        Ok(result) => result,
                        Err(e) => bail!("chat/send {} failed: {e}", specs[k].0),
                    };
                    open -= 1;
                }
                Kind::Response { .. } => {}
            }
        }
        Ok(traces)
    }
}

impl Drop for Sidecar {
    /// End of input makes the sidecar stop every CLI process and exit; kill it if it does not.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let Some(mut child) = self.child.take() else { return };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        eprintln!("bench: the sidecar (pid {}) did not exit after end of input; killing it", child.id());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Reader thread: Content-Length frames from the sidecar's stdout. Everything read in one `read`
/// is parsed and handed over as one batch, each frame stamped with the time of that read, so the
/// client keeps up with hundreds of thousands of frames per second on a small machine.
fn read_frames(mut stdout: impl Read, tx: mpsc::Sender<Vec<Incoming>>) {
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
    let mut chunk = vec![0u8; 256 * 1024];
    let mut start = 0; // first unconsumed byte of `buf`
    loop {
        let n = match stdout.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let at = Instant::now();
        if start > 0 && start == buf.len() {
            buf.clear();
            start = 0;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut batch = Vec::new();
        while let Some((body, next)) = next_frame(&buf[start..]) {
            let len = body.len();
            if let Some(kind) = classify(body) {
                batch.push(Incoming { at, bytes: len, kind });
            }
            start += next;
        }
        if start > buf.len() / 2 {
            buf.drain(..start);
            start = 0;
        }
        if !batch.is_empty() && tx.send(batch).is_err() {
            return;
        }
    }
}

/// The body of the first whole frame in `data` and the offset just past it.
fn next_frame(data: &[u8]) -> Option<(&[u8], usize)> {
    let end = data.windows(4).position(|w| w == b"\r\n\r\n")?;
    let header = std::str::from_utf8(&data[..end]).ok()?;
    let len: usize = header.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim().eq_ignore_ascii_case("content-length").then(|| value.trim().parse().ok())?
    })?;
    let body_start = end + 4;
    (data.len() >= body_start + len).then(|| (&data[body_start..body_start + len], body_start + len))
}

/// What the client needs of a frame, read without building a whole JSON tree for deltas.
fn classify(body: &[u8]) -> Option<Kind> {
    #[derive(serde::Deserialize)]
    struct Frame<'a> {
        #[serde(default)]
        id: Option<u64>,
        #[serde(default, borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        #[serde(default, borrow)]
        params: Option<&'a serde_json::value::RawValue>,
        #[serde(default)]
        result: Option<Value>,
        #[serde(default)]
        error: Option<Value>,
    }
    #[derive(serde::Deserialize)]
    struct Delta<'a> {
        #[serde(rename = "turnId", borrow)]
        turn_id: std::borrow::Cow<'a, str>,
        #[serde(borrow)]
        kind: std::borrow::Cow<'a, str>,
        #[serde(default)]
        text: Option<String>,
    }
    let frame: Frame<'_> = serde_json::from_slice(body).ok()?;
    match frame.method.as_deref() {
        Some("chat/delta") => {
            let delta: Delta<'_> = serde_json::from_str(frame.params?.get()).ok()?;
            Some(match (delta.kind.as_ref(), delta.text) {
                ("text", Some(text)) => Kind::Text { turn: delta.turn_id.into_owned(), text },
                _ => Kind::Notification,
            })
        }
        Some(_) => Some(Kind::Notification),
        None => Some(Kind::Response {
            id: frame.id,
            outcome: match frame.error {
                Some(e) => Err(e),
                None => Ok(frame.result.unwrap_or(Value::Null)),
            },
        }),
    }
}

// ------------------------------------------------------------------------------------------------
// Statistics and the report.

#[derive(Clone, Copy)]
struct Stat {
    median: f64,
    /// The bad tail: the 95th percentile of times and sizes, the 5th of rates.
    p95: f64,
    n: usize,
}

impl Stat {
    fn of(samples: &[f64], higher_is_better: bool) -> Stat {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Stat { median: f64::NAN, p95: f64::NAN, n: 0 };
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        // Nearest rank.
        let rank = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Stat { median, p95: if higher_is_better { rank(0.05) } else { rank(0.95) }, n }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Unit {
    Ms,
    MiB,
    MBps,
    PerSec,
}

impl Unit {
    fn higher_is_better(self) -> bool {
        matches!(self, Unit::MBps | Unit::PerSec)
    }

    fn suffix(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::MiB => "MiB",
            Unit::MBps => "MB/s",
            Unit::PerSec => "/s",
        }
    }

    fn fmt(self, x: f64) -> String {
        if !x.is_finite() {
            return "—".into();
        }
        let v = match self {
            Unit::Ms if x.abs() < 10.0 => format!("{x:.2}"),
            Unit::Ms if x.abs() < 100.0 => format!("{x:.1}"),
            Unit::Ms => format!("{x:.0}"),
            Unit::MiB => format!("{x:.2}"),
            Unit::MBps => format!("{x:.1}"),
            Unit::PerSec => format!("{:.0}k", x / 1e3),
        };
        format!("{v} {}", self.suffix())
    }
}

struct Target {
    text: &'static str,
    below: Option<f64>,
    at_least: Option<f64>,
}

impl Target {
    fn below(x: f64, text: &'static str) -> Target {
        Target { text, below: Some(x), at_least: None }
    }
    fn at_least(x: f64, text: &'static str) -> Target {
        Target { text, below: None, at_least: Some(x) }
    }
    fn holds(&self, median: f64) -> bool {
        median.is_finite() && self.below.is_none_or(|b| median <= b) && self.at_least.is_none_or(|a| median >= a)
    }
}

struct Row {
    section: &'static str,
    figure: String,
    unit: Unit,
    samples: Vec<f64>,
    stat: Stat,
    reference: Option<(String, Vec<f64>, Stat)>,
    target: Option<Target>,
    pass: Option<bool>,
    note: Option<String>,
    missing: Option<&'static str>,
}

impl Row {
    fn new(section: &'static str, figure: &str, unit: Unit, samples: &[f64]) -> Row {
        Row {
            section,
            figure: figure.into(),
            unit,
            samples: samples.to_vec(),
            stat: Stat::of(samples, unit.higher_is_better()),
            reference: None,
            target: None,
            pass: None,
            note: None,
            missing: None,
        }
    }

    fn missing(section: &'static str, figure: &str, why: &'static str) -> Row {
        Row { missing: Some(why), ..Row::new(section, figure, Unit::MiB, &[]) }
    }

    fn reference(mut self, label: &str, samples: &[f64]) -> Row {
        self.reference = Some((label.into(), samples.to_vec(), Stat::of(samples, self.unit.higher_is_better())));
        self
    }

    fn target(mut self, t: Target) -> Row {
        self.pass = Some(t.holds(self.stat.median));
        self.target = Some(t);
        self
    }

    fn note(mut self, note: impl Into<String>) -> Row {
        self.note = Some(note.into());
        self
    }

    fn cells(&self) -> Vec<String> {
        let u = self.unit;
        let (median, p95) = match self.missing {
            Some(why) => (why.to_string(), "—".to_string()),
            None if self.stat.n <= 1 => (u.fmt(self.stat.median), "—".into()),
            None => (u.fmt(self.stat.median), u.fmt(self.stat.p95)),
        };
        let reference = match &self.reference {
            None => "—".into(),
            Some((label, _, s)) if s.n <= 1 => format!("{label}: {}", u.fmt(s.median)),
            Some((label, _, s)) => format!("{label}: {} / {}", u.fmt(s.median), u.fmt(s.p95)),
        };
        vec![
            self.figure.clone(),
            median,
            p95,
            reference,
            self.target.as_ref().map_or("—".into(), |t| t.text.to_string()),
            match self.pass {
                Some(true) => "PASS".into(),
                Some(false) => "FAIL".into(),
                None => "—".into(),
            },
            self.stat.n.to_string(),
        ]
    }
}

struct Report {
    smoke: bool,
    rows: Vec<Row>,
    build_secs: f64,
    measure_secs: f64,
    total_secs: f64,
    /// Load average (1, 5, 15 min) around the measurements: other work on the machine skews them.
    load: String,
    /// The sections measured when not all were (`CURSOR_BRIDGE_BENCH_ONLY`).
    only: Option<Vec<String>>,
}

impl Report {
    /// The table as Markdown with padded columns (readable on a terminal too).
    fn table(&self) -> String {
        let header: Vec<String> =
            ["Figure", "Median", "p95", "Reference (median / p95)", "Target", "Result", "n"].iter().map(|s| s.to_string()).collect();
        let mut lines: Vec<Vec<String>> = vec![header];
        lines.extend(self.rows.iter().map(Row::cells));
        let widths: Vec<usize> =
            (0..lines[0].len()).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
        let fmt_line = |cells: &[String]| {
            let padded: Vec<String> =
                cells.iter().zip(&widths).map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count()))).collect();
            format!("| {} |", padded.join(" | "))
        };
        let mut out = String::new();
        let _ = writeln!(out, "{}", fmt_line(&lines[0]));
        let _ = writeln!(out, "|{}|", widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("|"));
        for l in &lines[1..] {
            let _ = writeln!(out, "{}", fmt_line(l));
        }
        if self.smoke {
            out.push_str("\n(smoke run: one iteration per figure, figures not comparable, targets not enforced)\n");
        }
        if let Some(only) = &self.only {
            let _ = writeln!(out, "\n(only the sections {} were measured, {ONLY})", only.join(", "));
        }
        out
    }

    fn markdown(&self, table: &str) -> String {
        let mut md = format!(
            "# cursor-bridge benchmark ({} run)\n\n{}\n\nMeasured in {:.0} s (release build {:.0} s, total {:.0} s) on {}; load average {}.\n\n",
            if self.smoke { "smoke" } else { "full" },
            machine_line(),
            self.measure_secs,
            self.build_secs,
            self.total_secs,
            git_line(),
            self.load,
        );
        md.push_str(table);
        md.push_str("\n## Notes\n\n");
        md.push_str("- p95 is the 95th percentile of the samples (nearest rank); for rates (deltas/s, MB/s) it is the slow end, the 5th percentile. `n` is the number of samples.\n");
        for r in &self.rows {
            if let Some(note) = &r.note {
                let _ = writeln!(md, "- **{}**: {note}", r.figure);
            }
        }
        md
    }

    fn json(&self) -> Value {
        let stat = |s: &Stat| json!({"median": finite(s.median), "p95": finite(s.p95), "n": s.n});
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "section": r.section,
                    "figure": r.figure,
                    "unit": r.unit.suffix(),
                    "value": if r.missing.is_some() { Value::Null } else { stat(&r.stat) },
                    "missing": r.missing,
                    "samples": r.samples.iter().map(|x| finite(*x)).collect::<Vec<_>>(),
                    "reference": r.reference.as_ref().map(|(label, samples, s)| json!({
                        "label": label,
                        "value": stat(s),
                        "samples": samples.iter().map(|x| finite(*x)).collect::<Vec<_>>(),
                    })),
                    "target": r.target.as_ref().map(|t| json!({"text": t.text, "medianAtMost": t.below, "medianAtLeast": t.at_least})),
                    "pass": r.pass,
                    "note": r.note,
                })
            })
            .collect();
        json!({
            "mode": if self.smoke { "smoke" } else { "full" },
            "date": command_line("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]),
            "machine": machine_line(),
            "git": git_line(),
            "seconds": {"build": self.build_secs, "measure": self.measure_secs, "total": self.total_secs},
            "loadAverage": self.load,
            "onlySections": self.only,
            "rows": rows,
            "failed": self.rows.iter().filter(|r| r.pass == Some(false)).map(|r| r.figure.clone()).collect::<Vec<_>>(),
        })
    }
}

fn finite(x: f64) -> Value {
    if x.is_finite() { json!((x * 1000.0).round() / 1000.0) } else { Value::Null }
}

fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn machine_line() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info.lines().find_map(|l| l.strip_prefix("model name")).map(|v| v.trim_start_matches([' ', '\t', ':']).to_string());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:")).and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok()));
    format!(
        "{} CPU(s){}{}, {} {}",
        cpus,
        model.map(|m| format!(" ({m})")).unwrap_or_default(),
        mem.map(|k| format!(", {:.0} GiB RAM", k as f64 / 1024.0 / 1024.0)).unwrap_or_default(),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn git_line() -> String {
    let rev = command_line("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown commit".into());
    let dirty = command_line("git", &["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
    format!("commit {rev}{}", if dirty { " (with uncommitted changes)" } else { "" })
}
