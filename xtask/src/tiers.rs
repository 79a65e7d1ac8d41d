//! The test tiers a contributor lives in (docs/contributing.md):
//!
//! - `cargo xtask test --quick`, the inner loop: formatting, clippy with warnings denied (the
//!   whole workspace, every target), the sidecar's library tests (unit
//!   tests, tidy, the in-process tier of the engine and the stdio door), and the extension's
//!   typecheck, lint, format check and unit tests. No integration suite, no fuzzing, no VS Code;
//!   under five minutes from a warm `target/` on a 2-core machine.
//! - A plain `cargo test`: everything but the heavy tier, which is `#[ignore]`d with its reason
//!   (the soak, the fault matrix, the Python client, the ACP cases that wait out a real bound;
//!   `sidecar/tests/process/main.rs`).
//! - `cargo xtask test`, what CI runs: everything, the heavy tier included
//!   ([`HEAVY_TIER_ON_PRINT`], and the ACP pass with `--run-ignored all`).

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};

use crate::{
    bench, cargo, conformance, cross_check, e2e, extension, fuzz, leftovers, project_root, run_cmd, summary, workflows,
    FUZZ_SECONDS,
};

/// The heavy tier on print mode, after the workspace run that leaves it out (the ACP pass of the
/// integration suite runs it with the rest, `--run-ignored all`). Only the process suite's
/// ignored tests: the conformance crate's are ignored for another reason (they need the agent
/// its own stage installs). A filter that matches none of them is no failure.
pub const HEAVY_TIER_ON_PRINT: [&str; 11] = [
    "nextest",
    "run",
    "-p",
    "cursor-bridge",
    "--test",
    "process",
    "--locked",
    "--no-fail-fast",
    "--run-ignored",
    "only",
    "--no-tests=warn",
];

/// What the full run adds to the tests a plain `cargo test` runs, said in its log.
pub const HEAVY_TIER: &str =
    "the heavy tier (#[ignore]d in a plain `cargo test`: soak, fault matrix, Python client, slow ACP bounds)";

/// `cargo xtask test --quick`.
pub fn quick(root: &Path) -> Result<()> {
    let started = Instant::now();
    let mut stages: Vec<(&str, std::time::Duration)> = Vec::new();
    let mut stage = |name: &'static str, run: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        let at = Instant::now();
        run()?;
        stages.push((name, at.elapsed()));
        Ok(())
    };
    stage("rustfmt --check", &mut || run_cmd(cargo().args(["fmt", "--all", "--", "--check"])))?;
    // The lints CI denies, here too: a warning found before the commit, not by the full run.
    stage("clippy (warnings denied)", &mut crate::cross_check::clippy_host)?;
    // The unit tests, tidy and the in-process tier (engine/tests, stdio/tests) are all the lib's.
    stage("sidecar lib tests (unit, tidy, in-process tier)", &mut || {
        run_cmd(cargo().args(["test", "--locked", "-p", "cursor-bridge", "--lib"]))
    })?;
    // The extension's unit tests also drive the real sidecar against the CLI double.
    stage("sidecar and CLI double binaries", &mut || {
        run_cmd(cargo().args(["build", "--locked", "-p", "cursor-bridge", "-p", "cli-double", "--bins"]))
    })?;
    stage("extension typecheck, format, lint", &mut || extension::check(root))?;
    stage("extension unit tests", &mut || extension::unit_tests(root).map(|_| ()))?;
    for (name, took) in &stages {
        eprintln!("xtask: {name}: {took:.0?}");
    }
    eprintln!(
        "xtask: quick tests passed in {:.0?} (not run: the integration suite, {HEAVY_TIER}, conformance, fuzzing, benchmarks, e2e: `cargo xtask test`)",
        started.elapsed()
    );
    Ok(())
}

pub fn has_nextest() -> bool {
    cargo().args(["nextest", "--version"]).output().is_ok_and(|o| o.status.success())
}

pub fn full(extra: &[String]) -> Result<()> {
    let started = Instant::now();
    let root = project_root();
    let mut tally = summary::Tally::default();
    // Figures from an earlier run must not be mistaken for this run's.
    let _ = std::fs::remove_dir_all(root.join("target").join("reliability"));
    // After every stage, passed or failed: nothing this run started may outlive it.
    let watch = leftovers::Watch::start(&root);
    let stages = test_stages(extra, &root, &mut tally);
    let left = watch.finish(&root);
    stages?;
    if left > 0 {
        tally.print(&root);
        bail!("{left} process(es) started by this run outlived it (listed above)");
    }
    eprintln!("xtask: all tests passed in {:.0?}", started.elapsed());
    tally.print(&root);
    Ok(())
}

/// Every stage of `test`, in order; the first failure stops them.
fn test_stages(extra: &[String], root: &Path, tally: &mut summary::Tally) -> Result<()> {
    // First and quick: a broken workflow fails here, not on GitHub after a push.
    let lint_started = Instant::now();
    workflows::check(root)?;
    eprintln!("xtask: workflow lint passed in {:.0?}", lint_started.elapsed());

    let started = Instant::now();
    // Build every binary first: integration tests run the real `cursor-bridge` against the CLI
    // double, both from target/debug.
    run_cmd(cargo().args(["build", "--workspace", "--all-targets", "--locked"]))?;
    if has_nextest() {
        let lines = summary::run_scanned(
            cargo().args(["nextest", "run", "--workspace", "--locked", "--no-fail-fast"]).args(extra),
            |l| l.contains(" tests run: "),
        )?;
        tally.add_closing_line("cargo nextest", lines.last().map(String::as_str).unwrap_or(""));
        // The heavy tier, which the run above leaves out as a plain `cargo test` does (tiers.rs).
        let heavy_started = Instant::now();
        let lines = summary::run_scanned(cargo().args(HEAVY_TIER_ON_PRINT).args(extra), |l| {
            l.contains(" tests run: ") || l.contains(" test run: ")
        })?;
        tally.add_closing_line("heavy tier", lines.last().map(String::as_str).unwrap_or(""));
        eprintln!("xtask: {} passed in {:.0?}", HEAVY_TIER, heavy_started.elapsed());
        // The integration suite again on the ACP backend (it runs on print mode above): both
        // backends must pass all of it, fault matrix and soak included.
        let acp_started = Instant::now();
        let lines = summary::run_scanned(
            cargo()
                .args(["nextest", "run", "-p", "cursor-bridge", "--test", "process", "--locked", "--no-fail-fast"])
                .args(["--run-ignored", "all"])
                .args(extra)
                .env("CURSOR_BRIDGE_TEST_BACKEND", "acp"),
            |l| l.contains(" tests run: "),
        )?;
        tally.add_closing_line("integration on ACP", lines.last().map(String::as_str).unwrap_or(""));
        eprintln!("xtask: integration tests on ACP passed in {:.0?}", acp_started.elapsed());
    } else {
        eprintln!("xtask: cargo-nextest not found; using `cargo test`");
        run_cmd(cargo().args(["test", "--workspace", "--locked", "--no-fail-fast"]).args(extra))?;
        // The heavy tier, ignored above (libtest cannot leave out the conformance tests by name).
        let process = ["test", "-p", "cursor-bridge", "--test", "process", "--locked", "--no-fail-fast"];
        run_cmd(cargo().args(process).args(extra).args(["--", "--ignored"]))?;
        let mut cmd = cargo();
        cmd.args(process).args(extra).args(["--", "--include-ignored"]);
        run_cmd(cmd.env("CURSOR_BRIDGE_TEST_BACKEND", "acp"))?;
    }
    eprintln!("xtask: cargo tests passed in {:.0?}", started.elapsed());

    // The ACP client against a real agent no one here wrote, and that agent against `serve`
    // (installed once, run offline).
    let conformance_started = Instant::now();
    conformance::run(root, tally)?;
    eprintln!("xtask: conformance passed in {:.0?}", conformance_started.elapsed());

    // Windows and macOS type-checked and linted (cross_check.rs), beside the stages up to the
    // benchmark, which mostly wait or use one core.
    let cross = cross_check::start_in_background(root)?;
    let beside = run_beside_cross_check(root, tally);
    let crossed = cross.finish();
    beside?;
    crossed?;

    // The sidecar's Windows tests and one turn run under Wine (wine.rs), beside the benchmark smoke
    // run and e2e, which mostly wait; after the cross-check, which sets up the toolchain it uses.
    let wine_log = root.join("target").join("wine").join("wine-test.log");
    let wine = cross_check::Background::start(root, "wine-test", "the benchmark smoke run and e2e", wine_log)?;
    let beside = run_beside_wine_test(root, tally);
    let wined = wine.finish();
    beside?;
    wined
}

/// The stages `wine-test` runs beside: the benchmark smoke run, then the end-to-end test.
fn run_beside_wine_test(root: &Path, tally: &mut summary::Tally) -> Result<()> {
    // One iteration of every benchmark figure, so the harness cannot rot (targets not enforced).
    let bench_started = Instant::now();
    bench::run(root, true)?;
    eprintln!("xtask: benchmark smoke run passed in {:.0?}", bench_started.elapsed());

    // Last, the slowest: the VSIX in a real VS Code, typed into like a person would.
    let e2e_started = Instant::now();
    e2e::run(root, &[])?;
    let check_log = std::fs::read_to_string(root.join("target/e2e/latest/check.log")).unwrap_or_default();
    let closing = check_log.lines().rev().find(|l| l.starts_with("e2e: ")).unwrap_or("");
    tally.add_closing_line("end-to-end (VS Code)", closing);
    eprintln!("xtask: end-to-end test passed in {:.0?}", e2e_started.elapsed());
    Ok(())
}

/// The stages `cross-check` runs beside: fuzzing, then the extension's typecheck and unit tests.
fn run_beside_cross_check(root: &Path, tally: &mut summary::Tally) -> Result<()> {
    // Coverage-guided fuzzing of the input parsers, bounded in time (fuzz/README.md).
    let fuzz_started = Instant::now();
    let fuzzed = fuzz::run(root, FUZZ_SECONDS)?;
    let reliability = root.join("target").join("reliability");
    std::fs::create_dir_all(&reliability)?;
    std::fs::write(reliability.join("fuzz.txt"), fuzzed.to_string())?;
    eprintln!("xtask: fuzzing found no crash in {:.0?}", fuzz_started.elapsed());

    // The VS Code extension: typecheck, then its unit tests (which also drive the debug sidecar
    // built above against the CLI double, so they must not be skipped here).
    let npm_started = Instant::now();
    extension::check(root)?;
    eprintln!("xtask: extension typecheck, format and lint passed in {:.0?}", npm_started.elapsed());
    let unit_started = Instant::now();
    let (passed, failed) = extension::unit_tests(root)?;
    tally.add("extension unit tests", passed, failed);
    eprintln!("xtask: extension unit tests passed in {:.0?}", unit_started.elapsed());

    Ok(())
}
