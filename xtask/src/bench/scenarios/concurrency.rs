//! Concurrency: 64 turns at once through a pool of 4, next to 16 sequential batches of 4.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use cursor_bridge_test_client::user;
use serde_json::{json, Value};

use crate::bench::report::{Row, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::stats::Stat;
use crate::bench::{scratch, since, Ctx};

/// 64 turns at once through a pool of 4 vs 16 sequential batches of 4.
pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
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

fn min_max(xs: &[f64]) -> (f64, f64) {
    xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}
