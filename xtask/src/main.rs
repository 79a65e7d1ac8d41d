//! The project's build system (rust-analyzer style): `cargo xtask <command>`.
//!
//! - `test`: build everything and run every test (what CI runs): the workflow lint, cargo (the
//!   heavy tier included), then `conformance`, fuzzing and the extension's typecheck, format, lint
//!   and unit tests with `cross-check` beside them, the benchmark smoke run and `e2e` with
//!   `wine-test` beside them; fails if any process it started outlives it (`leftovers.rs`)
//! - `test --quick`: the inner loop, under five minutes (see `tiers.rs`)
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
//!   platform in `dist/`)
//! - `install`: `dist`, then install the VSIX into VS Code (`code` on PATH) or say how
//!
//! Each command does its own set-up (tools, packages) so it works on a fresh machine.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

mod agent_clients;
mod bench;
mod conformance;
mod cross_check;
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
        Some("test") => test(&args[1..]),
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

fn has_nextest() -> bool {
    cargo().args(["nextest", "--version"]).output().is_ok_and(|o| o.status.success())
}

fn test(extra: &[String]) -> Result<()> {
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
        let last = lines.last().map(String::as_str).unwrap_or("");
        tally.add(
            "cargo nextest",
            summary::number_before(last, " passed").unwrap_or(0),
            summary::number_before(last, " failed").unwrap_or(0),
        );
        // The heavy tier, which the run above leaves out as a plain `cargo test` does (tiers.rs).
        let heavy_started = Instant::now();
        let lines = summary::run_scanned(cargo().args(tiers::HEAVY_TIER_ON_PRINT).args(extra), |l| {
            l.contains(" tests run: ") || l.contains(" test run: ")
        })?;
        let last = lines.last().map(String::as_str).unwrap_or("");
        tally.add(
            "heavy tier",
            summary::number_before(last, " passed").unwrap_or(0),
            summary::number_before(last, " failed").unwrap_or(0),
        );
        eprintln!("xtask: {} passed in {:.0?}", tiers::HEAVY_TIER, heavy_started.elapsed());
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
        let last = lines.last().map(String::as_str).unwrap_or("");
        tally.add(
            "integration on ACP",
            summary::number_before(last, " passed").unwrap_or(0),
            summary::number_before(last, " failed").unwrap_or(0),
        );
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
    tally.add(
        "end-to-end (VS Code)",
        summary::number_before(closing, " passed").unwrap_or(0),
        summary::number_before(closing, " failed").unwrap_or(0),
    );
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

fn npm() -> Command {
    // npm is a .cmd script on Windows, which Command does not find by the bare name.
    let mut cmd = Command::new(if cfg!(windows) { "npm.cmd" } else { "npm" });
    cmd.current_dir(project_root());
    cmd
}

/// `npm ci` at the root when node_modules is missing or was installed from another lockfile.
/// A copy of the lockfile it was installed from is kept inside node_modules and compared byte for
/// byte, so a changed lockfile (a pull, a dependency bump) always reinstalls and nothing else does.
fn npm_ci_if_needed() -> Result<()> {
    let root = project_root();
    let lock = root.join("package-lock.json");
    let stamp = root.join("node_modules").join(".xtask-installed-package-lock.json");
    let wanted = std::fs::read(&lock).with_context(|| format!("reading {}", lock.display()))?;
    if std::fs::read(&stamp).is_ok_and(|installed| installed == wanted) {
        eprintln!("xtask: node_modules matches package-lock.json; skipping npm ci");
        return Ok(());
    }
    run_cmd(npm().arg("ci")).context("the VS Code extension needs Node.js 20+ with npm (https://nodejs.org)")?;
    std::fs::write(&stamp, &wanted).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(())
}

fn host_triple() -> Result<String> {
    let out = Command::new("rustc").arg("-vV").output().context("running rustc -vV")?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| l.strip_prefix("host: ")).map(str::to_string).context("rustc -vV printed no host triple")
}

/// The `vsce --target` for a Rust target triple (the platforms VS Code publishes builds for).
fn vsce_target(triple: &str) -> Result<&'static str> {
    Ok(match triple {
        "x86_64-unknown-linux-gnu" => "linux-x64",
        "aarch64-unknown-linux-gnu" => "linux-arm64",
        "armv7-unknown-linux-gnueabihf" | "arm-unknown-linux-gnueabihf" => "linux-armhf",
        "x86_64-unknown-linux-musl" => "alpine-x64",
        "aarch64-unknown-linux-musl" => "alpine-arm64",
        "x86_64-apple-darwin" => "darwin-x64",
        "aarch64-apple-darwin" => "darwin-arm64",
        "x86_64-pc-windows-msvc" | "x86_64-pc-windows-gnu" => "win32-x64",
        "aarch64-pc-windows-msvc" => "win32-arm64",
        other => bail!("no VS Code platform for the target `{other}`; supported: Linux, Alpine (musl), macOS and Windows on x64/arm64, Linux on armhf"),
    })
}

/// The token estimates' vocabulary, shipped beside the sidecar (`util::tokens::VOCABULARY_FILE`).
const VOCABULARY: &str = "o200k_base.tiktoken";

/// Build the release sidecar, then package the extension around it; returns the VSIX's path.
fn dist(target: &Option<String>) -> Result<PathBuf> {
    let triple = match target {
        Some(t) => t.clone(),
        None => host_triple()?,
    };
    // Fail before a long build when the triple cannot be packaged.
    let platform = vsce_target(&triple)?;
    match glibc::zig_target(&triple) {
        // Linked against an old glibc whatever this machine's is, so it starts on every Linux
        // VS Code supports (glibc.rs); checked below.
        Some(zig_target) => run_cmd(glibc::ensure(&project_root())?.command().args([
            "--release",
            "--locked",
            "--package",
            "cursor-bridge",
            "--target",
            &zig_target,
        ]))?,
        None => run_cmd(cargo().args([
            "build",
            "--release",
            "--locked",
            "--package",
            "cursor-bridge",
            "--target",
            &triple,
        ]))?,
    }
    let exe = if triple.contains("windows") { "cursor-bridge.exe" } else { "cursor-bridge" };
    let built = project_root().join("target").join(&triple).join("release").join(exe);
    if !built.is_file() {
        bail!("expected the binary at {}", built.display());
    }
    if triple.ends_with("-linux-gnu") {
        glibc::check(&built)?;
    }
    let out_dir = project_root().join("dist");
    std::fs::create_dir_all(&out_dir)?;
    let dest = out_dir.join(format!("{}-{triple}{}", "cursor-bridge", if exe.ends_with(".exe") { ".exe" } else { "" }));
    std::fs::copy(&built, &dest)?;
    eprintln!("xtask: sidecar built: {} ({} KiB)", dest.display(), std::fs::metadata(&dest)?.len() / 1024);
    // The vocabulary of `serve`'s token estimates goes beside the binary (util/tokens.rs): 3.6 MB
    // the binary's size budget has no room for.
    let vocabulary = project_root().join("sidecar").join("assets").join(VOCABULARY);
    std::fs::copy(&vocabulary, out_dir.join(VOCABULARY))
        .with_context(|| format!("copying {}", vocabulary.display()))?;

    // The extension ships the sidecar in server/; a binary for another platform must not linger.
    let client = project_root().join("vscode-client");
    let server = client.join("server");
    if server.exists() {
        std::fs::remove_dir_all(&server).with_context(|| format!("removing {}", server.display()))?;
    }
    std::fs::create_dir_all(&server)?;
    std::fs::copy(&built, server.join(exe))?;
    std::fs::copy(&vocabulary, server.join(VOCABULARY))?;
    // Which platform this package is for, and on Linux gnu the oldest glibc it starts on: the
    // extension compares them with the machine it runs on and says so when they do not fit
    // (vscode-client/src/platform.ts).
    let mut record = serde_json::json!({ "target": platform, "triple": triple });
    if triple.ends_with("-linux-gnu") {
        record["glibc"] = format!("{}.{}", glibc::GLIBC_FLOOR.0, glibc::GLIBC_FLOOR.1).into();
    }
    std::fs::write(server.join("platform.json"), serde_json::to_string_pretty(&record)? + "\n")?;

    npm_ci_if_needed()?;
    run_cmd(npm().args(["run", "build", "--workspace", "vscode-client"]))?;
    let vsix = out_dir.join(format!("cursor-bridge-{platform}.vsix"));
    let vsce = project_root().join("node_modules").join("@vscode").join("vsce").join("vsce");
    // The bundle is self-contained, so no node_modules go in (--no-dependencies).
    run_cmd(
        Command::new("node")
            .arg(&vsce)
            .args(["package", "--target", platform, "--no-dependencies", "--allow-missing-repository", "--out"])
            .arg(&vsix)
            .current_dir(&client),
    )?;
    eprintln!("xtask: extension packaged: {} ({} KiB)", vsix.display(), std::fs::metadata(&vsix)?.len() / 1024);
    Ok(vsix)
}

/// `code` (VS Code's command-line launcher) on PATH, if any.
fn find_code() -> Option<PathBuf> {
    let names: &[&str] = if cfg!(windows) { &["code.cmd", "code.exe"] } else { &["code"] };
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|dir| names.iter().map(move |n| dir.join(n))).find(|p| p.is_file())
}

fn install(target: &Option<String>) -> Result<()> {
    let vsix = dist(target)?;
    match find_code() {
        Some(code) => {
            run_cmd(Command::new(code).arg("--install-extension").arg(&vsix).arg("--force"))?;
            println!(
                "Installed {} into VS Code. Reload open windows (Developer: Reload Window) to use it.",
                vsix.display()
            );
        }
        None => {
            println!("The extension is packaged: {}", vsix.display());
            println!("`code` is not on PATH, so install it yourself, either:");
            println!("  - in VS Code: Extensions view → … (Views and More Actions) → Install from VSIX… → pick the file above");
            println!("  - or in a terminal: code --install-extension {}", vsix.display());
        }
    }
    Ok(())
}
