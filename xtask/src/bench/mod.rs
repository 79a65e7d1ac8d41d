//! `cargo xtask bench [--smoke]`: the performance figures of the sidecar, each measured against a
//! reference taken in the same run, printed as one table and written to `target/bench/report.md`
//! and `target/bench/report.json`. See `docs/performance.md` for what each figure means.
//!
//! Everything runs the release binaries (`cursor-bridge` and the CLI test double
//! `cursor-agent-double`) over pipes, with the JSON-RPC client the integration tests use too
//! (`cursor-bridge-test-client`: Content-Length framing, one reader thread per sidecar that
//! timestamps every frame as it arrives). Every sidecar gets its own temporary state, log and data
//! folders; every process started here is stopped when its guard is dropped.
//!
//! Full mode repeats each figure enough for stable medians on a small machine and fails (returns an
//! error) when a target is missed. `--smoke` runs every figure once, quickly, so the harness cannot
//! rot; it never fails on targets.
//!
//! - `scenarios/`: one module per section of the table, each measuring its figures
//! - [`sidecar`]: the bench's view of a running sidecar (turns timed frame by frame)
//! - [`direct`]: the CLI double run straight, the reference of the first-delta and streaming figures
//! - [`stats`] and [`report`]: medians and percentiles; the rows, their targets, the table, the
//!   Markdown and JSON reports

mod direct;
mod report;
mod scenarios;
mod sidecar;
mod stats;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use report::{loadavg, Report, Row};
use scenarios::{
    client_tools, concurrency, first_delta, footprint, http_routes, model_picker, new_conversation, parser, sizes,
    streaming, tails, warm_backend,
};

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

/// A sidecar binary to measure instead of the release build (the double is still built).
const BRIDGE: &str = "CURSOR_BRIDGE_BENCH_BRIDGE";

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
    eprintln!(
        "bench: release binaries ready in {build_secs:.1} s; measuring ({})",
        if smoke { "smoke" } else { "full" }
    );

    let load_before = loadavg();
    let measure_started = Instant::now();
    let ctx = Ctx { root, bins: &bins, plan: &plan };
    let only: Option<Vec<String>> = std::env::var(ONLY)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    type Section = fn(&Ctx) -> Result<Vec<Row>>;
    let sections: [(&str, Section); 12] = [
        ("first-delta", first_delta::measure),
        ("tails", tails::measure),
        ("streaming", streaming::measure),
        ("parser", parser::measure),
        ("new-conversation", new_conversation::measure),
        ("model-picker", model_picker::measure),
        ("footprint", footprint::measure),
        ("sizes", sizes::measure),
        ("concurrency", concurrency::measure),
        ("warm-backend", warm_backend::measure),
        ("client-tools", client_tools::measure),
        ("http-routes", http_routes::measure),
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
    // Another build of the sidecar to measure (an A/B comparison with an earlier commit's).
    let other = std::env::var_os(BRIDGE).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = &other {
        eprintln!("bench: measuring the sidecar {} ({BRIDGE})", p.display());
    }
    let bins = Bins {
        bridge: other.unwrap_or_else(|| target_dir.join("release").join(format!("cursor-bridge{exe}"))),
        double: target_dir.join("release").join(format!("cursor-agent-double{exe}")),
    };
    for p in [&bins.bridge, &bins.double] {
        if !p.is_file() {
            bail!("expected a release binary at {}", p.display());
        }
    }
    Ok(bins)
}

// ------------------------------------------------------------------------------------------------
// Helpers of the scenarios.

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

/// Sidecars still shutting down in the background; joined before [`run`] returns.
static RETIRING: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>> = std::sync::Mutex::new(Vec::new());

fn lock_retiring() -> std::sync::MutexGuard<'static, Vec<std::thread::JoinHandle<()>>> {
    RETIRING.lock().unwrap_or_else(|p| p.into_inner())
}
