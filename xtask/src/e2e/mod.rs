//! `cargo xtask e2e`: the packaged extension in a real, headless VS Code.
//!
//! VS Code 1.139.1 runs as code-server (its server and web workbench), opened in headless Debian
//! Chromium driven by Playwright; the Cursor CLI is the test double. Two halves run in one VS Code
//! session: an extension that uses the Cursor models through `vscode.lm` (`vscode-client/e2e/consumer`),
//! then a person's use of the Chat view (`vscode-client/e2e/driver.cjs`). `vscode-client/e2e/check.cjs`
//! judges both against the double's record and the sidecar's state. Everything a run writes stays in
//! `target/e2e/<run>/`.
//!
//! Steps: set-up (cached, `setup.rs`), build (`cargo xtask dist`, the double, the consumer VSIX), then
//! one session (`session.rs`) per backend — print mode, then ACP, each in a fresh VS Code profile
//! and run folder of its own (`<run>/print`, `<run>/acp`) — in a private network namespace where
//! only loopback exists. `<run>/check.log` holds both verdicts and their sum.

pub mod session;
pub mod setup;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

const KEEP_RUNS: usize = 5;

const USAGE: &str = "\
cargo xtask e2e [--setup-only]

  Runs the extension in a real, headless VS Code (code-server + Chromium + Playwright) against the
  Cursor CLI test double. Installs what it needs once into $CURSOR_BRIDGE_E2E_CACHE (default
  target/e2e-cache; apt-get for chromium needs root). Each run's logs, results and screenshots are
  kept in target/e2e/<run>/<backend>/ (the last 5 runs). Every phase runs once per backend.

  --setup-only   install what is missing, then stop
  Env: CURSOR_BRIDGE_E2E_NETNS=0   no private network namespace
       E2E_CHAT_VIEW=0              the API half only (the Chat view checks then fail)
       E2E_TOOLS_ONLY=1             only the Copilot tools phase of the Chat view (the others are not checked)
       E2E_BACKENDS=print,acp       the backends (`cursorBridge.backend`) to run the sessions on, in order
       E2E_TERMINAL_WAIT_S=70       how long the person waits before allowing the terminal command
";

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let setup_only = match args {
        [] => false,
        [flag] if flag == "--setup-only" => true,
        [flag] if flag == "--help" || flag == "-h" => {
            print!("{USAGE}");
            return Ok(());
        }
        _ => bail!("unexpected arguments {args:?}\n\n{USAGE}"),
    };
    let started = Instant::now();
    let cache = setup::cache_dir(root);
    let tools = setup::ensure(&cache)?;
    if setup_only {
        return Ok(());
    }

    // What is tested: the real VSIX (release sidecar inside) and the debug CLI double.
    let build_started = Instant::now();
    crate::run_cmd(crate::cargo().args(["build", "--locked", "--package", "cli-double"]))?;
    let double = root.join("target").join("debug").join("cursor-agent-double");
    if !double.is_file() {
        bail!("expected the CLI double at {}", double.display());
    }
    let bridge_vsix = crate::dist(&None)?;
    let run_dir = new_run_dir(root)?;
    let consumer_vsix = run_dir.join("consumer.vsix");
    pack_consumer(root, &consumer_vsix)?;
    eprintln!("e2e: built in {:.1?}; run folder {}", build_started.elapsed(), run_dir.display());

    let mut failed_sessions = Vec::new();
    let mut verdicts = String::new();
    let (mut passed, mut failed) = (0, 0);
    for backend in backends()? {
        let session_dir = run_dir.join(backend);
        std::fs::create_dir_all(&session_dir)?;
        let plan = session::Plan {
            root: root.to_path_buf(),
            run_dir: session_dir.clone(),
            backend: backend.to_string(),
            bridge_vsix: bridge_vsix.clone(),
            consumer_vsix: consumer_vsix.clone(),
            double: double.clone(),
            node: tools.node.clone(),
            code_server: tools.code_server.clone(),
            playwright: tools.playwright.clone(),
            chromium: tools.chromium.clone(),
        };
        plan.save()?;
        let session_started = Instant::now();
        eprintln!("e2e: the session on {backend} starts");
        // A session that could not run is a failed one; the next backend still runs.
        let ok = run_session(&plan).unwrap_or_else(|e| {
            eprintln!("e2e: the session on {backend} did not run: {e:#}");
            false
        });
        eprintln!("e2e: the session on {backend} finished in {:.1?}", session_started.elapsed());
        let log = std::fs::read_to_string(session_dir.join("check.log")).unwrap_or_default();
        // A session that stopped before its checks (the reason is printed above) counts as one failure.
        let closing = log.lines().rev().find(|l| l.starts_with("e2e: "));
        let counts = closing.and_then(|l| {
            Some((crate::summary::number_before(l, " passed")?, crate::summary::number_before(l, " failed")?))
        });
        let (p, f) = counts.unwrap_or((0, 1));
        passed += p;
        failed += f;
        verdicts.push_str(&format!("== {backend}\n{log}"));
        if !ok {
            failed_sessions.push(session_dir);
        }
    }
    let closing = format!("e2e: {passed} passed, {failed} failed");
    std::fs::write(run_dir.join("check.log"), format!("{verdicts}{closing}\n"))?;
    println!("{closing} (all sessions)");
    eprintln!("e2e: finished in {:.1?}", started.elapsed());
    if !failed_sessions.is_empty() {
        for dir in &failed_sessions {
            eprintln!("e2e: FAILED; everything is in {}:", dir.display());
            for (what, rel) in session::LOGS {
                eprintln!("  {what:<22} {}", dir.join(rel).display());
            }
        }
        bail!("the end-to-end test failed (run folder {})", run_dir.display());
    }
    Ok(())
}

/// The backends the sessions run on: `E2E_BACKENDS` (comma-separated), else print mode then ACP.
fn backends() -> Result<Vec<&'static str>> {
    let wanted = std::env::var("E2E_BACKENDS").unwrap_or_else(|_| "print,acp".into());
    let mut out = Vec::new();
    for name in wanted.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match name {
            "print" => out.push("print"),
            "acp" => out.push("acp"),
            other => bail!("E2E_BACKENDS: unknown backend `{other}` (print, acp)"),
        }
    }
    if out.is_empty() {
        bail!("E2E_BACKENDS names no backend (print, acp)");
    }
    Ok(out)
}

/// `cargo xtask e2e-session <run dir>`: the part that runs inside the network namespace.
pub fn session_entry(args: &[String]) -> Result<()> {
    let [run_dir] = args else { bail!("usage: cargo xtask e2e-session <run dir>") };
    let plan = session::Plan::load(Path::new(run_dir))?;
    if !session::run(&plan)? {
        std::process::exit(1);
    }
    Ok(())
}

/// Runs the session in a network namespace of its own that has only loopback, so neither
/// code-server, the extension host nor Chromium can reach anything but each other (as root; else,
/// and with CURSOR_BRIDGE_E2E_NETNS=0, in the normal one, said loudly).
fn run_session(plan: &session::Plan) -> Result<bool> {
    // This very binary, through /proc: a build during the run (cargo replaces target/debug/xtask)
    // must not leave the namespace with nothing to run.
    let exe = PathBuf::from(format!("/proc/{}/exe", std::process::id()));
    let why_not = if std::env::var("CURSOR_BRIDGE_E2E_NETNS").is_ok_and(|v| v == "0") {
        Some("CURSOR_BRIDGE_E2E_NETNS=0")
    } else if setup::which("ip").is_none() {
        Some("no `ip` command to bring up its loopback")
    } else if !unshare_works() {
        Some("`unshare --net` is not permitted here")
    } else {
        None
    };
    let mut cmd = if why_not.is_none() {
        eprintln!("e2e: the session runs in a private network namespace (loopback only)");
        let mut c = Command::new("unshare");
        c.args(["--net", "--", "sh", "-c", r#"ip link set lo up && exec "$0" "$@""#]).arg(&exe);
        c
    } else {
        eprintln!(
            "e2e: NOTE: no private network namespace ({}); code-server and Chromium run in the normal one",
            why_not.unwrap_or_default()
        );
        Command::new(&exe)
    };
    cmd.arg("e2e-session").arg(&plan.run_dir).stdin(std::process::Stdio::null());
    let status = cmd.status().context("starting the e2e session")?;
    Ok(status.success())
}

/// Can a command run in a private network namespace with only loopback (`unshare --net`, then
/// `ip link set lo up`)? Root, or user namespaces, and iproute2.
pub fn netns_available() -> bool {
    setup::which("ip").is_some() && unshare_works()
}

fn unshare_works() -> bool {
    Command::new("unshare")
        .args(["--net", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `target/e2e/<UTC date-time>`, and `target/e2e/latest` pointing at it; older runs beyond the last
/// few are removed.
fn new_run_dir(root: &Path) -> Result<PathBuf> {
    let base = root.join("target").join("e2e");
    std::fs::create_dir_all(&base)?;
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&base)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir() && !p.is_symlink() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("run-"))
        })
        .collect();
    runs.sort();
    while runs.len() >= KEEP_RUNS {
        let old = runs.remove(0);
        std::fs::remove_dir_all(&old).with_context(|| format!("removing the old run {}", old.display()))?;
    }
    let secs = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let mut dir = base.join(format!("run-{}", utc_stamp(secs)));
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = base.join(format!("run-{}-{n}", utc_stamp(secs)));
    }
    std::fs::create_dir_all(&dir)?;
    let latest = base.join("latest");
    let _ = std::fs::remove_file(&latest);
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.file_name().expect("named"), &latest)?;
    Ok(dir)
}

/// `YYYYMMDD-HHMMSS` (UTC) for seconds since the epoch (days → civil date, Howard Hinnant's method).
fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}-{:02}{:02}{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

/// The consumer extension as a VSIX, packed by the project's own vsce (installed by `npm ci`).
fn pack_consumer(root: &Path, out: &Path) -> Result<()> {
    let vsce = root.join("node_modules").join("@vscode").join("vsce").join("vsce");
    let log = out.with_extension("vsce.log");
    let status = Command::new("node")
        .arg(&vsce)
        .args(["package", "--no-dependencies", "--allow-missing-repository", "--skip-license", "--out"])
        .arg(out)
        .current_dir(root.join("vscode-client").join("e2e").join("consumer"))
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&log)?)
        .stderr(std::fs::File::create(log.with_extension("err.log"))?)
        .status()
        .context("running vsce")?;
    if !status.success() {
        bail!("packing the consumer extension failed ({status}); see {}", log.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::utc_stamp;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(951_782_400), "20000229-000000");
        assert_eq!(utc_stamp(1_798_000_000 + 3_723), "20261223-052843");
    }
}
