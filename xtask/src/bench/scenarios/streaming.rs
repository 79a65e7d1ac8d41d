//! Streaming throughput: a long answer of one-character deltas through the sidecar, next to reading
//! the double's output straight from its pipe.

use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use cursor_bridge_test_client::user;
use serde_json::json;

use crate::bench::direct::{run_double_direct, DirectRun};
use crate::bench::report::{Row, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::stats::Stat;
use crate::bench::{scratch, Ctx};

/// Length of the streamed answer (one character per delta).
const STREAM_CHARS: usize = 100_000; // the notes say "100,000"

/// Streaming throughput: a 100,000-delta answer through the sidecar vs read straight from the double.
pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
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
            bail!(
                "the sidecar delivered {} text deltas ({} chars), expected {STREAM_CHARS} deltas of the answer",
                t.deltas,
                t.text.chars().count()
            );
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
