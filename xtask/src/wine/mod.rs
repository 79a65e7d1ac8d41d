//! `cargo xtask wine-test`: the sidecar's Windows code *run*, not only type-checked, on this Linux
//! machine: its library tests (all of them: the Windows process layer, the stdio framing, CLI
//! discovery's launcher handling, and the rest) built for `x86_64-pc-windows-gnu` (cross_check.rs's
//! toolchain, -Zbuild-std, Debian's mingw-w64 as the linker) and run under Debian's Wine in a
//! private prefix (`target/wine/prefix`, made once). The few that cannot run under Wine are
//! [`NOT_UNDER_WINE`], each with its reason, printed with every run. Then one real turn of
//! `cursor-bridge.exe` against the CLI double built for Windows (`turn.rs`). docs/platforms.md
//! says what this proves and what it cannot.
//!
//! Rust's std imports `ProcessPrng` from bcryptprimitives.dll, which Wine 8.0 lacks, so a
//! stand-in built from `xtask/wine/bcryptprimitives.c` sits next to each Windows binary (Windows
//! looks in the program's own folder first). Missing Debian packages are installed with apt-get
//! (as e2e does; its log is `target/wine/logs/apt.log`).
//!
//! Every Wine run is bounded: on a timeout the run is killed and so is the wineserver of *this*
//! prefix (`WINEPREFIX=… wineserver -k`), nobody else's; it is also ended after every run, so no
//! Wine process outlives the command.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

mod turn;

const TARGET: &str = "x86_64-pc-windows-gnu";

/// Debian's packages: the cross C compiler (the linker, and the stand-in DLL) and Wine (64-bit).
const PACKAGES: &[&str] = &["gcc-mingw-w64-x86-64", "wine64", "wine"];

/// Making the prefix (first run only), listing the tests, running them.
const BOOT_TIMEOUT: Duration = Duration::from_secs(300);
const LIST_TIMEOUT: Duration = Duration::from_secs(120);
const RUN_TIMEOUT: Duration = Duration::from_secs(600);

/// The library tests that do not run under Wine, each with why; every other test runs. A row
/// that names no test of the binary fails the stage (a renamed test must not leave a stale row).
pub const NOT_UNDER_WINE: &[(&str, &str)] = &[
    (
        "backend::process::child::windows_tests::input_reaches_the_child_and_a_normal_exit_is_reported",
        "it pipes a line through findstr.exe, and Wine 8.0's findstr is a stub (it prints \
         `fixme:findstr:wmain stub:` and no output); CI's Windows runner runs it",
    ),
    (
        "tidy::sources_are_formatted",
        "it runs `cargo fmt`, a Linux program that a Windows process under Wine cannot start; \
         formatting does not depend on the platform, and it runs on Linux",
    ),
];

/// Why `test` does not run under Wine, if it does not.
pub fn not_run_because(test: &str) -> Option<&'static str> {
    NOT_UNDER_WINE.iter().find(|(name, _)| *name == test).map(|(_, why)| *why)
}

/// The whole stage: set up, build, run, summary.
pub fn run(root: &Path) -> Result<()> {
    let started = Instant::now();
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        bail!("wine-test runs on x86-64 Linux only (Debian's wine64 and mingw-w64)");
    }
    let dir = root.join("target").join("wine");
    std::fs::create_dir_all(&dir)?;
    ensure_packages(&dir)?;
    let toolchain = crate::cross_check::ensure(root)?;

    let build_started = Instant::now();
    let exe = build_tests(&toolchain)?;
    let dll = stand_in_dll(root, &dir)?;
    std::fs::copy(&dll, exe.with_file_name("bcryptprimitives.dll"))?;
    eprintln!("xtask: wine-test: {} built in {:.0?}", exe.display(), build_started.elapsed());

    let bins_started = Instant::now();
    let (bridge, double) = build_bins(&toolchain)?;
    for bin in [&bridge, &double] {
        std::fs::copy(&dll, bin.with_file_name("bcryptprimitives.dll"))?;
    }
    eprintln!("xtask: wine-test: cursor-bridge.exe and the CLI double built in {:.0?}", bins_started.elapsed());

    let wine = Wine { prefix: dir.join("prefix"), pipe_grace: Duration::from_secs(10) };
    let result = (|| {
        wine.ensure_prefix()?;
        let names = wine.list(&exe)?;
        let outcome = wine.run_tests(&exe, &names)?;
        outcome.print();
        if outcome.failed > 0 {
            bail!("{} of {} Windows test(s) failed under Wine (output above)", outcome.failed, outcome.ran);
        }
        turn::run(&wine, &bridge, &double, &dir.join("turn"))
    })();
    wine.end_server();
    result?;
    eprintln!("xtask: wine-test passed in {:.0?}", started.elapsed());
    Ok(())
}

fn ensure_packages(dir: &Path) -> Result<()> {
    let missing: Vec<&str> = PACKAGES.iter().copied().filter(|p| !crate::e2e::setup::deb_installed(p)).collect();
    if !missing.is_empty() {
        crate::e2e::setup::apt_install(&missing, dir, "wine-test")?;
    }
    for tool in ["wine", "wineserver", "x86_64-w64-mingw32-gcc"] {
        if crate::e2e::setup::which(tool).is_none() {
            bail!("`{tool}` is still missing after installing {}", PACKAGES.join(" "));
        }
    }
    Ok(())
}

/// cargo for Windows-gnu, mingw-w64 linking.
fn windows_cargo(toolchain: &crate::cross_check::Toolchain, subcommand: &str) -> Command {
    let mut cmd = toolchain.cargo(subcommand, TARGET);
    cmd.env("CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER", "x86_64-w64-mingw32-gcc")
        // No incremental state: it would about double this build's disk use, and a changed
        // workspace crate rebuilds in about a minute without it.
        .env("CARGO_INCREMENTAL", "0");
    cmd
}

/// `cargo test --no-run` of the sidecar's library for Windows; returns the test binary. Cached in
/// `target/cross/build` like the cross-check, so a second run only relinks what changed.
fn build_tests(toolchain: &crate::cross_check::Toolchain) -> Result<PathBuf> {
    let mut cmd = windows_cargo(toolchain, "test");
    cmd.args(["--no-run", "--package", "cursor-bridge", "--lib", "--message-format=json-render-diagnostics"])
        .stdout(Stdio::piped());
    eprintln!("$ {}", crate::describe(&cmd));
    let out = cmd.spawn().context("starting cargo")?.wait_with_output()?;
    if !out.status.success() {
        bail!("building the sidecar's tests for {TARGET} failed ({}; errors above)", out.status);
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .context("cargo built no test executable for the sidecar's library")
}

/// `cursor-bridge.exe` and the CLI double (`cursor-agent-double.exe`) for Windows.
fn build_bins(toolchain: &crate::cross_check::Toolchain) -> Result<(PathBuf, PathBuf)> {
    let mut cmd = windows_cargo(toolchain, "build");
    cmd.args(["--package", "cursor-bridge", "--package", "cli-double", "--bins"]);
    crate::run_cmd(&mut cmd).with_context(|| format!("building cursor-bridge and the CLI double for {TARGET}"))?;
    let out = toolchain.dir.join("build").join(TARGET).join("debug");
    let (bridge, double) = (out.join("cursor-bridge.exe"), out.join("cursor-agent-double.exe"));
    for bin in [&bridge, &double] {
        if !bin.is_file() {
            bail!("expected {} after the build", bin.display());
        }
    }
    Ok((bridge, double))
}

/// `target/wine/bcryptprimitives.dll`, rebuilt when its source is newer.
fn stand_in_dll(root: &Path, dir: &Path) -> Result<PathBuf> {
    let source = root.join("xtask").join("wine").join("bcryptprimitives.c");
    let dll = dir.join("bcryptprimitives.dll");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if modified(&dll).is_none() || modified(&dll) < modified(&source) {
        crate::run_cmd(
            Command::new("x86_64-w64-mingw32-gcc")
                .args(["-O2", "-Wall", "-Werror", "-shared", "-o"])
                .arg(&dll)
                .arg(&source)
                .arg("-ladvapi32"),
        )
        .context("building the stand-in bcryptprimitives.dll")?;
    }
    Ok(dll)
}

pub struct Wine {
    prefix: PathBuf,
    /// How long a run's output may stay open after it exited (10 s; less in tests).
    pipe_grace: Duration,
}

impl Wine {
    /// The environment of every Wine run (`None`: removed): this prefix, quiet, headless, without
    /// Mono/Gecko install prompts.
    pub fn env(&self) -> Vec<(&'static str, Option<std::ffi::OsString>)> {
        vec![
            ("WINEPREFIX", Some(self.prefix.clone().into_os_string())),
            ("WINEARCH", Some("win64".into())),
            ("WINEDEBUG", Some("-all".into())),
            ("WINEDLLOVERRIDES", Some("mscoree,mshtml=".into())),
            ("DISPLAY", None),
            ("WAYLAND_DISPLAY", None),
        ]
    }

    /// `program` with [`env`](Self::env), stdin closed.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        for (key, value) in self.env() {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Made once; a prefix whose making was interrupted has no stamp and is made again.
    fn ensure_prefix(&self) -> Result<()> {
        let stamp = self.prefix.join(".xtask-ready");
        if stamp.is_file() {
            return Ok(());
        }
        let started = Instant::now();
        let _ = std::fs::remove_dir_all(&self.prefix);
        eprintln!("xtask: wine-test: making the Wine prefix {}", self.prefix.display());
        let mut cmd = self.command("wineboot");
        cmd.arg("--init").stdout(Stdio::null()).stderr(Stdio::null());
        let (status, _) = self.bounded(cmd, BOOT_TIMEOUT, "wineboot --init", false)?;
        if !status.success() {
            bail!("`wineboot --init` failed ({status}) for {}", self.prefix.display());
        }
        std::fs::write(&stamp, "")?;
        eprintln!("xtask: wine-test: prefix made in {:.0?}", started.elapsed());
        Ok(())
    }

    /// The test binary's own list (`--list`), so the table is checked against what was built.
    fn list(&self, exe: &Path) -> Result<Vec<String>> {
        let mut cmd = self.command("wine");
        cmd.arg(exe).args(["--list", "--format", "terse"]);
        let (status, lines) = self.bounded(cmd, LIST_TIMEOUT, "listing the tests under Wine", false)?;
        if !status.success() {
            bail!("the Windows test binary could not list its tests under Wine ({status}): {}", lines.join("\n"));
        }
        let names: Vec<String> = lines.iter().filter_map(|l| l.strip_suffix(": test")).map(str::to_string).collect();
        if names.is_empty() {
            bail!("the Windows test binary listed no tests under Wine: {}", lines.join("\n"));
        }
        Ok(names)
    }

    /// Runs every test but [`NOT_UNDER_WINE`]'s.
    fn run_tests(&self, exe: &Path, names: &[String]) -> Result<Outcome> {
        if let Some((stale, _)) = NOT_UNDER_WINE.iter().find(|(row, _)| !names.iter().any(|n| n == row)) {
            bail!("xtask/src/wine.rs's NOT_UNDER_WINE names `{stale}`, which the test binary does not have");
        }
        let (not_run, run): (Vec<&String>, Vec<&String>) = names.iter().partition(|n| not_run_because(n).is_some());
        let not_run: Vec<(String, &'static str)> =
            not_run.into_iter().map(|n| (n.clone(), not_run_because(n).unwrap_or_default())).collect();
        let mut cmd = self.command("wine");
        // Exact names, two threads (as many as this machine's cores; the tests' timeouts allow it).
        cmd.arg(exe).args(["--exact", "--test-threads=2"]).args(&run);
        let (status, lines) = self.bounded(cmd, RUN_TIMEOUT, "the Windows tests under Wine", true)?;
        let result = lines.iter().rev().find(|l| l.starts_with("test result: "));
        let Some(result) = result else {
            bail!("the Windows test binary ended ({status}) without a result line (output above)");
        };
        let passed = crate::summary::number_before(result, " passed").unwrap_or(0) as usize;
        let failed = crate::summary::number_before(result, " failed").unwrap_or(0) as usize;
        if passed + failed != run.len() {
            bail!("{} test(s) were to run under Wine, but the binary reports: {result}", run.len());
        }
        if failed == 0 && !status.success() {
            bail!("the Windows test binary reported no failure but exited with {status}");
        }
        Ok(Outcome { ran: run.len(), failed, not_run })
    }

    /// Run `cmd`, its output read line by line (echoed when `echo`), killed with this prefix's
    /// wineserver after `timeout`.
    fn bounded(
        &self,
        mut cmd: Command,
        timeout: Duration,
        what: &str,
        echo: bool,
    ) -> Result<(std::process::ExitStatus, Vec<String>)> {
        let shown = crate::describe(&cmd);
        match shown.char_indices().nth(300) {
            Some((cut, _)) => eprintln!("$ {} … ({} arguments in all)", &shown[..cut], cmd.get_args().count()),
            None => eprintln!("$ {shown}"),
        }
        let mut child = cmd.stdout(Stdio::piped()).spawn().with_context(|| format!("starting {what}"))?;
        let stdout = child.stdout.take();
        // The lines come back through a channel, so waiting for them is bounded too: a Windows
        // process the run left behind may still hold the pipe open.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in stdout.map(BufReader::new).into_iter().flat_map(|r| r.lines()).map_while(|l| l.ok()) {
                if echo {
                    println!("{line}");
                }
                lines.push(line);
            }
            let _ = tx.send(lines);
        });
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                self.end_server();
                bail!("{what} did not finish within {timeout:?}: killed it and this prefix's wineserver");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let lines = match rx.recv_timeout(self.pipe_grace) {
            Ok(lines) => lines,
            Err(_) => {
                // Whatever still holds the pipe is one of this prefix's processes.
                self.end_server();
                rx.recv_timeout(self.pipe_grace).with_context(|| {
                    format!("{what} exited ({status}) but its output never closed, even after ending this prefix's wineserver")
                })?
            }
        };
        Ok((status, lines))
    }

    /// Ends this prefix's wineserver and every Wine process under it (and only those).
    fn end_server(&self) {
        let mut cmd = self.command("wineserver");
        cmd.arg("-k").stdout(Stdio::null()).stderr(Stdio::null());
        let _ = cmd.status();
    }
}

/// What a run under Wine did.
struct Outcome {
    ran: usize,
    failed: usize,
    /// Each test left out, with why.
    not_run: Vec<(String, &'static str)>,
}

impl Outcome {
    fn print(&self) {
        eprintln!("xtask: wine-test: {} passed, {} failed under Wine ({TARGET})", self.ran - self.failed, self.failed);
        for (name, why) in &self.not_run {
            eprintln!("xtask: wine-test: not run under Wine: {name}: {why}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row names one test exactly (a module prefix would skip tests nobody listed) and once.
    #[test]
    fn every_row_names_one_test_once() {
        for (i, (name, why)) in NOT_UNDER_WINE.iter().enumerate() {
            assert!(name.contains("::") && !name.ends_with("::"), "row {i} is not a test name: {name:?}");
            assert!(!why.trim().is_empty(), "row {i} ({name}) gives no reason");
            assert_eq!(NOT_UNDER_WINE.iter().filter(|(n, _)| n == name).count(), 1, "{name} is listed twice");
        }
        assert!(not_run_because("tidy::sources_are_formatted").is_some());
        assert_eq!(not_run_because("tidy::sources_are_formatted_too"), None);
    }

    /// A run that hangs is killed at its timeout and says so, instead of hanging the stage (a
    /// prefix of its own: ending its wineserver touches no other).
    #[test]
    fn a_run_past_its_timeout_is_killed_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let wine = Wine { prefix: dir.path().join("prefix"), pipe_grace: Duration::from_millis(500) };
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let started = Instant::now();
        let err = wine.bounded(cmd, Duration::from_millis(300), "a sleeping run", false).unwrap_err();
        assert!(err.to_string().contains("a sleeping run did not finish within 300ms"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    }

    /// A run that exits while something it started still holds its output is not waited for
    /// forever either.
    #[test]
    fn output_held_open_after_the_exit_is_not_waited_for_forever() {
        let dir = tempfile::tempdir().unwrap();
        let wine = Wine { prefix: dir.path().join("prefix"), pipe_grace: Duration::from_millis(500) };
        let mut cmd = Command::new("sh");
        // The shell exits at once; its background sleep keeps stdout open for 3 s. Its stderr
        // goes nowhere, so the straggler does not hold the test harness's own output open
        // (nextest reports that as a leak).
        cmd.args(["-c", "echo done; sleep 3 &"]).stderr(std::process::Stdio::null());
        let started = Instant::now();
        let result = wine.bounded(cmd, Duration::from_secs(5), "a run with a straggler", false);
        assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
        let err = result.unwrap_err();
        assert!(err.to_string().contains("its output never closed"), "{err}");
    }
}
