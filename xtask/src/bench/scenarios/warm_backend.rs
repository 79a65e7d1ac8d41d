//! The warm backend: what Cursor's ACP mode saves over print mode when the CLI takes as long to
//! start as the real one. The double starts in 0.8 s and opens an ACP session in 1.5 s (the
//! figures seen on real builds, docs/cursor-acp.md §2), and its "model" takes 300 ms before it
//! answers each message (a `startupMs` directive in every user message, which both modes honour
//! per turn): that is the model's own latency, measured directly as the reference (the double
//! spawned with no start-up delay, to its first text line).

use std::time::Duration;

use anyhow::{anyhow, Result};
use cursor_bridge_test_client::{assistant, user};
use serde_json::{json, Value};

use crate::bench::direct::run_double_direct;
use crate::bench::report::{Row, Target, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::{scratch, since, Ctx};

const STARTUP_MS: &str = "800";
const NEW_SESSION_MS: &str = "1500";
const MODEL_MS: u64 = 300;
/// Long enough for a spare (print) or a session opened ahead (ACP) to be ready again.
const REFILL: Duration = Duration::from_millis(2800);

fn env() -> Vec<(&'static str, String)> {
    vec![
        ("CURSOR_DOUBLE_STARTUP_MS", STARTUP_MS.into()),
        ("CURSOR_DOUBLE_ACP_STARTUP_MS", STARTUP_MS.into()),
        ("CURSOR_DOUBLE_ACP_NEW_SESSION_MS", NEW_SESSION_MS.into()),
    ]
}

/// A user message the double's model takes `MODEL_MS` to answer.
fn said(text: &str) -> Value {
    user(&format!("[[double:{}]]\n{text}", json!({"startupMs": MODEL_MS})))
}

fn first_text_ms(sc: &mut Sidecar, turn: &str, conv: &str, messages: Vec<Value>) -> Result<f64> {
    let t = sc.turn(turn, conv, messages, Duration::from_secs(60))?;
    Ok(since(t.first_text.ok_or_else(|| anyhow!("turn {turn}: no text delta: {}", t.result))?, t.sent))
}

fn follow_up() -> Vec<Value> {
    vec![said("hi"), assistant("Echo: hi"), said("again")]
}

/// (second turn's first delta, a new conversation's first delta) on one backend and setting.
fn follow_ups_and_new(ctx: &Ctx, options: Value, n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let dir = scratch()?;
    let mut sc = Sidecar::launch(ctx.bins, dir.path(), None, &env())?;
    sc.initialize(options)?;
    std::thread::sleep(REFILL);
    let (mut second, mut new) = (Vec::new(), Vec::new());
    for i in 0..n + 1 {
        let conv = format!("wb-{i}");
        let first = first_text_ms(&mut sc, &format!("n-{i}"), &conv, vec![said("hi")])?;
        std::thread::sleep(REFILL);
        let again = first_text_ms(&mut sc, &format!("f-{i}"), &conv, follow_up())?;
        std::thread::sleep(REFILL);
        if i > 0 {
            new.push(first);
            second.push(again);
        }
    }
    Ok((second, new))
}

fn kib(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.split_whitespace().next()?.parse().ok()
}

/// The sidecar's children that run `acp`.
fn acp_children(sidecar: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(sidecar) && cmdline.split(|b| *b == 0).any(|a| a == b"acp")
        })
        .collect()
}

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let n = if ctx.plan.smoke { 1 } else { 5 };
    let dir = scratch()?;
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws)?;
    // The model's own latency: the double with no start-up, spawned directly.
    let mut model = Vec::new();
    let prompt = format!("[[double:{}]]\nhi", json!({"startupMs": MODEL_MS}));
    for _ in 0..n.max(3) {
        let run = run_double_direct(ctx.bins, dir.path(), &ws, &[], &prompt)?;
        model.push(since(run.first_text.ok_or_else(|| anyhow!("the double printed no text"))?, run.spawned));
    }
    let model_median = median(&model);

    let (acp_second, acp_new) = follow_ups_and_new(ctx, json!({"backend": "acp"}), n)?;
    let (print_second_off, _) = follow_ups_and_new(ctx, json!({"backend": "print", "spares": 0}), n)?;
    let (print_second_on, print_new) = follow_ups_and_new(ctx, json!({"backend": "print"}), n)?;

    // Memory: four warm conversations, each its own ACP process.
    let mem_dir = scratch()?;
    let mut sc = Sidecar::launch(ctx.bins, mem_dir.path(), None, &env())?;
    sc.initialize(json!({"backend": "acp", "spares": 0}))?;
    let before = kib(sc.pid()).unwrap_or(0.0);
    for i in 0..4 {
        first_text_ms(&mut sc, &format!("m-{i}"), &format!("mem-{i}"), vec![user("hi")])?;
    }
    let children = acp_children(sc.pid());
    let per_process: Vec<f64> = children.iter().filter_map(|p| kib(*p)).map(|k| k / 1024.0).collect();
    let sidecar_growth = (kib(sc.pid()).unwrap_or(before) - before) / 4.0;
    drop(sc);

    // Cancel: Stop after the first text, answered; then the conversation's next turn.
    // Answers stream a character every 20 ms, so Stop lands mid-answer.
    let mut slow = env();
    slow.push(("CURSOR_DOUBLE_SCENARIO", json!({"deltaDelayMs": 20, "chunkChars": 1}).to_string()));
    let cancel_dir = scratch()?;
    let mut sc = Sidecar::launch(ctx.bins, cancel_dir.path(), None, &slow)?;
    sc.initialize(json!({"backend": "acp"}))?;
    std::thread::sleep(REFILL);
    let (mut acp_cancel, mut after_cancel) = (Vec::new(), Vec::new());
    let long = || vec![user("hi"), assistant("Echo: hi"), user(&"tell me more ".repeat(40))];
    for i in 0..n.max(2) {
        let conv = format!("c-{i}");
        first_text_ms(&mut sc, &format!("c0-{i}"), &conv, vec![user("hi")])?;
        let (_, cancelled, answered) =
            sc.cancel_after_first_text(&format!("c1-{i}"), &conv, long(), Duration::from_secs(60))?;
        acp_cancel.push(since(answered, cancelled));
        let mut next = long();
        next.extend([assistant("tell"), user("go on")]);
        after_cancel.push(first_text_ms(&mut sc, &format!("c2-{i}"), &conv, next)?);
    }
    drop(sc);
    let print_dir = scratch()?;
    let mut sc = Sidecar::launch(ctx.bins, print_dir.path(), None, &slow)?;
    sc.initialize(json!({"backend": "print"}))?;
    let mut print_cancel = Vec::new();
    for i in 0..n.max(2) {
        let conv = format!("p-{i}");
        let (_, cancelled, answered) = sc.cancel_after_first_text(
            &format!("p1-{i}"),
            &conv,
            vec![user(&"tell me more ".repeat(40))],
            Duration::from_secs(60),
        )?;
        print_cancel.push(since(answered, cancelled));
    }
    drop(sc);

    let within =
        |x: f64| -> &'static str { Box::leak(format!("≤ {x:.0} ms (the model's latency + 10 %)").into_boxed_str()) };
    let followup_median = median(&acp_second);
    let setup = format!("The double starts in {STARTUP_MS} ms and opens an ACP session in {NEW_SESSION_MS} ms; its model takes {MODEL_MS} ms to answer each message.");
    Ok(vec![
        Row::new("warm backend", "Second turn's first delta, ACP", Unit::Ms, &acp_second)
            .reference("the model's own latency (double, no start-up)", &model)
            .target(Target::below(model_median * 1.1, within(model_median * 1.1)))
            .note(format!("{setup} chat/send of a conversation's second message → its first `text` delta, `backend: \"acp\"`, default settings (the session stays warm between turns).")),
        Row::new("warm backend", "Second turn's first delta, print mode, spares off", Unit::Ms, &print_second_off)
            .reference("the model's own latency", &model)
            .note("`backend: \"print\"`, `spares: 0`: every turn starts the CLI (`--resume`)."),
        Row::new("warm backend", "Second turn's first delta, print mode, spares on", Unit::Ms, &print_second_on)
            .reference("the model's own latency", &model)
            .note("`backend: \"print\"`, default `spares: 1`: the follow-up's process was started after the first turn and has booted."),
        Row::new("warm backend", "New conversation's first delta, ACP, default settings", Unit::Ms, &acp_new)
            .reference("second turn's first delta, ACP", &acp_second)
            .target(Target::below(followup_median * 1.1, "≤ the ACP follow-up's median + 10 %"))
            .note("A new conversationId: the session opened ahead (after `initialize`, and again after each new conversation took one) serves it."),
        Row::new("warm backend", "New conversation's first delta, print mode, default settings", Unit::Ms, &print_new)
            .reference("the model's own latency", &model)
            .note("`spares: 1`: the chat id is fetched ahead, the process is not (that takes `spares` ≥ 2)."),
        Row::new("warm backend", "Memory per warm ACP conversation (agent process RSS)", Unit::MiB, &per_process)
            .note(format!("VmRSS of each of the {} `acp` processes after 4 conversations (the double, not Cursor's CLI: a real `agent acp` is a Node process of ~150+ MiB); the sidecar itself grew {:.0} KiB per warm conversation.", per_process.len(), sidecar_growth)),
        Row::new("warm backend", "Cost of a cancel, ACP ($/cancelRequest → -32800)", Unit::Ms, &acp_cancel)
            .reference("print mode, the same", &print_cancel)
            .note("Stop after the first text of a long answer. ACP answers at once and sends `session/cancel` in the background (the session stays warm when the agent stops within 2 s); print mode kills the process group."),
        Row::new("warm backend", "First delta of the turn after a cancel, ACP", Unit::Ms, &after_cancel)
            .reference("second turn's first delta, ACP", &acp_second)
            .note("The next message of the cancelled conversation, answered by the same warm session (no start-up paid). These messages carry no model latency (the double answers at once), so the figure is the bridge's own time plus the re-sent interrupted message."),
    ])
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
