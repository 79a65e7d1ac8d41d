//! Parser: the stream parser's throughput in process (`sidecar/benches/parser.rs`), next to plain
//! `serde_json::Value` parsing of the same lines.

use std::path::Path;
use std::process::Stdio;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

use crate::bench::report::{Row, Unit};
use crate::bench::stats::Stat;
use crate::bench::{cargo, Ctx};

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
pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
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
