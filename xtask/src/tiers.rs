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

use anyhow::Result;

use crate::{cargo, extension, run_cmd};

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
