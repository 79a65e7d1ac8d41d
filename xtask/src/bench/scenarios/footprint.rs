//! Footprint: start-up time, idle RSS, and RSS while 16 turns stream at once, next to a minimal Rust
//! process (the double).

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use cursor_bridge_test_client::user;
use serde_json::{json, Value};

use crate::bench::direct::{base_env, Guard};
use crate::bench::report::{Row, Target, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::stats::Stat;
use crate::bench::{ms, scratch, since, Ctx};

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
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
