//! Tails: the first delta's p50, p95 and p99 on both backends, for new and resumed conversations,
//! with the CLI double starting at once and starting slowly (as the real CLI does, a Node program
//! that takes hundreds of ms), each against a reference measured in the same run, interleaved with
//! it so a busy moment shows in both. And a new conversation sent while another one streams.
//!
//! Print mode's reference is the double spawned directly with the same start-up (what the sidecar
//! cannot avoid); the overhead is the paired difference. ACP hides the start-up (a warm agent, a
//! session opened ahead), so its reference is the double spawned directly *without* start-up: the
//! model's own latency.

use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use cursor_bridge_test_client::{assistant, user};
use serde_json::{json, Value};

use crate::bench::direct::run_double_direct;
use crate::bench::report::{Row, Target, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::{scratch, since, Ctx};

/// The slow double's start-up: a fast real CLI's.
const SLOW_MS: u64 = 300;
/// Between two steps: what the sidecar does after a turn (the chat-id refill, the orphan sweep)
/// overlaps the next step, as it would for a person who sends again soon.
const GAP: Duration = Duration::from_millis(20);

/// Set (to anything): the sidecars log at debug level, and each case's log is kept in
/// `target/bench/trace-<backend>-<start-up>.log`, headed by its slowest new conversations (turn
/// id, figure, and when it was sent, in the log's clock): what the sidecar did in the slow runs.
const TRACE: &str = "CURSOR_BRIDGE_BENCH_TRACE";

fn tracing() -> bool {
    std::env::var_os(TRACE).is_some_and(|v| !v.is_empty())
}

fn env(startup_ms: u64) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("CURSOR_DOUBLE_STARTUP_MS", startup_ms.to_string()),
        ("CURSOR_DOUBLE_ACP_STARTUP_MS", startup_ms.to_string()),
        ("CURSOR_DOUBLE_ACP_NEW_SESSION_MS", "0".into()),
    ];
    if tracing() {
        env.push(("CURSOR_BRIDGE_LOG", "debug".into()));
    }
    env
}

/// The trace of one case (see [`TRACE`]): the slowest new conversations, then the sidecar's log.
fn keep_trace(ctx: &Ctx, dir: &std::path::Path, name: &str, mut slow: Vec<(String, f64, String)>) -> Result<()> {
    slow.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut out = String::from("slowest new conversations (turn, overhead ms, sent at):\n");
    for (turn, ms, at) in slow.iter().take(5) {
        out.push_str(&format!("  {turn} {ms:.1} ms, sent {at}\n"));
    }
    for log in std::fs::read_dir(dir.join("logs"))?.flatten() {
        out.push_str(&format!("\n--- {}\n", log.path().display()));
        out.push_str(&std::fs::read_to_string(log.path()).unwrap_or_default());
    }
    let path = ctx.root.join("target").join("bench").join(format!("trace-{name}.log"));
    std::fs::create_dir_all(path.parent().unwrap_or(ctx.root))?;
    std::fs::write(&path, out)?;
    eprintln!("bench: trace of {name} in {}", path.display());
    Ok(())
}

/// Now, as the sidecar's log writes it (UTC).
fn wall_clock() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let (secs, micros) = (now.as_secs(), now.subsec_micros());
    format!("{:02}:{:02}:{:02}.{micros:06}Z", secs / 3600 % 24, secs / 60 % 60, secs % 60)
}

fn label(startup_ms: u64) -> String {
    if startup_ms == 0 {
        "fast double".into()
    } else {
        format!("double starting in {startup_ms} ms")
    }
}

fn first_text(sc: &mut Sidecar, turn: &str, conv: &str, messages: Vec<Value>) -> Result<f64> {
    let t = sc.turn(turn, conv, messages, Duration::from_secs(60))?;
    Ok(since(t.first_text.ok_or_else(|| anyhow!("turn {turn}: no text delta: {}", t.result))?, t.sent))
}

fn direct(ctx: &Ctx, dir: &std::path::Path, ws: &std::path::Path, startup_ms: u64) -> Result<f64> {
    let run = run_double_direct(ctx.bins, dir, ws, &env(startup_ms), "hi")?;
    Ok(since(run.first_text.ok_or_else(|| anyhow!("the double printed no text delta"))?, run.spawned))
}

fn follow_up() -> Vec<Value> {
    vec![user("hi"), assistant("Echo: hi"), user("again")]
}

/// Samples of one backend and double: (new, resumed, reference, new − reference, resumed − reference).
struct Samples {
    new: Vec<f64>,
    resumed: Vec<f64>,
    reference: Vec<f64>,
    new_over: Vec<f64>,
    resumed_over: Vec<f64>,
}

fn measure_one(ctx: &Ctx, backend: &str, startup_ms: u64, n: usize) -> Result<Samples> {
    let dir = scratch()?;
    let mut sc = Sidecar::launch(ctx.bins, dir.path(), None, &env(startup_ms))?;
    let acp = backend == "acp";
    // Print mode without spares (a cold CLI per turn, like the reference); ACP at its defaults (a
    // warm agent, the next conversation's session opened ahead).
    sc.initialize(if acp { json!({"backend": "acp"}) } else { json!({"backend": "print", "spares": 0}) })?;
    // The reference: print mode pays the start-up like the direct spawn; ACP does not.
    let reference_startup = if acp { 0 } else { startup_ms };
    // ACP opens the next conversation's session ahead: a new conversation sent before it is open
    // waits for it, which is a different figure (the warm-backend section's).
    let ahead = if acp { Duration::from_millis(startup_ms + 150) } else { GAP };
    std::thread::sleep(Duration::from_millis(startup_ms + 300)); // the prefetch of `initialize`
    let ws = sc.ws.clone();
    let conv = |i: usize| format!("tail-{backend}-{startup_ms}-{i}");
    first_text(&mut sc, "seed", &conv(usize::MAX), vec![user("hi")])?;
    let warmup = if ctx.plan.smoke { 0 } else { 2 };
    let mut s = Samples { new: vec![], resumed: vec![], reference: vec![], new_over: vec![], resumed_over: vec![] };
    let mut sent_at = Vec::new();
    for i in 0..warmup + n {
        let (mut new, mut resumed, mut reference) = (f64::NAN, f64::NAN, f64::NAN);
        for step in 0..3 {
            match (i + step) % 3 {
                0 => reference = direct(ctx, dir.path(), &ws, reference_startup)?,
                1 => {
                    std::thread::sleep(ahead);
                    sent_at.push(wall_clock());
                    new = first_text(&mut sc, &format!("n-{i}"), &conv(i), vec![user("hi")])?;
                }
                _ => {
                    let earlier = if i == 0 { usize::MAX } else { i - 1 };
                    resumed = first_text(&mut sc, &format!("r-{i}"), &conv(earlier), follow_up())?;
                }
            }
            std::thread::sleep(GAP);
        }
        if i >= warmup {
            s.new.push(new);
            s.resumed.push(resumed);
            s.reference.push(reference);
            s.new_over.push(new - reference);
            s.resumed_over.push(resumed - reference);
        }
    }
    if tracing() {
        let slow = sent_at
            .into_iter()
            .enumerate()
            .skip(warmup)
            .map(|(i, at)| (format!("n-{i}"), s.new_over[i - warmup], at))
            .collect();
        drop(sc); // its log complete
        keep_trace(ctx, dir.path(), &format!("{backend}-{startup_ms}ms"), slow)?;
    }
    Ok(s)
}

/// A new conversation's first delta while another conversation streams (print mode, fast double),
/// next to the same new conversation on a quiet sidecar, interleaved.
fn while_streaming(ctx: &Ctx, n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let dir = scratch()?;
    let mut sc = Sidecar::launch(ctx.bins, dir.path(), None, &env(0))?;
    sc.initialize(json!({"backend": "print", "spares": 0}))?;
    std::thread::sleep(Duration::from_millis(300));
    // 400 characters, one every 2 ms: ~0.8 s of streaming.
    let stream =
        format!("[[double:{}]]\nstream", json!({"answer": "x".repeat(400), "chunkChars": 1, "deltaDelayMs": 2}));
    let (mut busy, mut quiet) = (Vec::new(), Vec::new());
    let warmup = if ctx.plan.smoke { 0 } else { 2 };
    for i in 0..warmup + n {
        let t = sc.turn_while_streaming(
            (&format!("s-{i}"), &format!("stream-{i}"), vec![user(&stream)]),
            (&format!("b-{i}"), &format!("busy-{i}"), vec![user("hi")]),
            Duration::from_secs(60),
        )?;
        let b = since(t.first_text.ok_or_else(|| anyhow!("no text delta while streaming: {}", t.result))?, t.sent);
        std::thread::sleep(GAP);
        let q = first_text(&mut sc, &format!("q-{i}"), &format!("quiet-{i}"), vec![user("hi")])?;
        std::thread::sleep(GAP);
        if i >= warmup {
            busy.push(b);
            quiet.push(q);
        }
    }
    if busy.is_empty() {
        bail!("no sample of a new conversation while another streams");
    }
    Ok((busy, quiet))
}

/// A new conversation sent as soon as the previous new conversation was answered (print mode,
/// the slow double, spares off): the previous one's chat-id refill is still running then (a
/// `create-chat` takes the CLI's start-up). Against the double spawned directly, interleaved.
fn right_after(ctx: &Ctx, n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let dir = scratch()?;
    let mut sc = Sidecar::launch(ctx.bins, dir.path(), None, &env(SLOW_MS))?;
    sc.initialize(json!({"backend": "print", "spares": 0}))?;
    std::thread::sleep(Duration::from_millis(SLOW_MS + 300));
    let ws = sc.ws.clone();
    let (mut second, mut reference) = (Vec::new(), Vec::new());
    for i in 0..n {
        reference.push(direct(ctx, dir.path(), &ws, SLOW_MS)?);
        // The refill of the first one's id starts when its CLI is done, and takes a start-up.
        std::thread::sleep(Duration::from_millis(SLOW_MS + 300));
        first_text(&mut sc, &format!("a-{i}"), &format!("first-{i}"), vec![user("hi")])?;
        second.push(first_text(&mut sc, &format!("b-{i}"), &format!("second-{i}"), vec![user("hi")])?);
    }
    Ok((second, reference))
}

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let n = if ctx.plan.smoke { 1 } else { 30 };
    let mut rows = Vec::new();
    for backend in ["print", "acp"] {
        for startup_ms in [0, SLOW_MS] {
            let s = measure_one(ctx, backend, startup_ms, n)?;
            let what = format!("{}, {}", if backend == "acp" { "ACP" } else { "print mode" }, label(startup_ms));
            let reference = if backend == "acp" {
                "the double's own answer, spawned with no start-up"
            } else {
                "the same double spawned directly"
            };
            rows.push(
                Row::new("tails", &format!("First delta, new conversation, {what}"), Unit::Ms, &s.new)
                    .reference(reference, &s.reference),
            );
            let over = Row::new("tails", &format!("  overhead, new conversation, {what}"), Unit::Ms, &s.new_over);
            // Print mode's tail has its target: within 5 ms of spawning the CLI directly.
            rows.push(if backend == "print" { over.target(Target::p95_below(5.0, "p95 ≤ 5 ms")) } else { over });
            rows.push(
                Row::new("tails", &format!("First delta, resumed conversation, {what}"), Unit::Ms, &s.resumed)
                    .reference(reference, &s.reference),
            );
            rows.push(Row::new(
                "tails",
                &format!("  overhead, resumed conversation, {what}"),
                Unit::Ms,
                &s.resumed_over,
            ));
        }
    }
    let (second, reference) = right_after(ctx, if ctx.plan.smoke { 1 } else { 10 })?;
    rows.push(
        Row::new("tails", &format!("First delta, new conversation right after another, print mode, {}", label(SLOW_MS)), Unit::Ms, &second)
            .reference("the same double spawned directly", &reference)
            .note("Sent the moment the previous new conversation was answered, while that one's chat-id refill (a `create-chat`, one start-up long) still runs: a turn never waits for a refill, it goes on without an id."),
    );
    let (busy, quiet) = while_streaming(ctx, n)?;
    rows.push(
        Row::new("tails", "First delta, new conversation while another streams, print mode", Unit::Ms, &busy)
            .reference("the same on a quiet sidecar", &quiet)
            .note("The other conversation streams 400 one-character deltas 2 ms apart; the new one is sent once its first text arrived, and must see its own first text while the other still streams."),
    );
    Ok(rows)
}
