//! The conformance stage of `cargo xtask test`, against a real agent CLI (GitHub Copilot CLI,
//! pinned), offline: the sidecar's ACP client driving it, its model the fake of `conformance/`
//! (`conformance/tests/acp_agents`), and Copilot in BYOK mode doing a job with its own tools, its
//! model `cursor-bridge serve` over the CLI double (`conformance/tests/copilot_byok`). The agent
//! is installed once from npm into a cache folder; the tests (ignored in a plain `cargo nextest
//! run`) then run with the agent's path in their environment, inside a private network namespace
//! where only loopback exists, so "offline" is checked, not assumed (where namespaces are not
//! permitted, said loudly; the agent's own offline switch still holds).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::e2e::{self, setup};
use crate::summary;

/// `@github/copilot`, whose per-platform optional dependency carries the native binary.
pub const COPILOT_VERSION: &str = "1.0.102";
/// The variable the tests read the binary's path from (`conformance/src/copilot.rs`).
const COPILOT_VAR: &str = "CURSOR_BRIDGE_CONFORMANCE_COPILOT";

/// `$CURSOR_BRIDGE_AGENT_CACHE`, else `target/agent-cache`.
pub fn cache_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CURSOR_BRIDGE_AGENT_CACHE").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => root.join("target").join("agent-cache"),
    }
}

/// Install the pinned Copilot CLI unless the cache has it; returns its native binary.
pub fn ensure_copilot(cache: &Path) -> Result<PathBuf> {
    let prefix = cache.join(format!("copilot-{COPILOT_VERSION}"));
    let complete = prefix.join(".complete");
    if !complete.exists() {
        let started = Instant::now();
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::create_dir_all(cache.join("logs")).with_context(|| format!("creating {}", cache.display()))?;
        std::fs::create_dir_all(&prefix)?;
        let spec = format!("@github/copilot@{COPILOT_VERSION}");
        eprintln!("conformance: npm install {spec} (into {})", prefix.display());
        let mut npm = Command::new("npm");
        // No install scripts: the package has none it needs (the binary is a plain optional
        // dependency), and nothing from the registry runs at install time.
        npm.arg("install")
            .arg("--prefix")
            .arg(&prefix)
            .arg(&spec)
            .args(["--no-audit", "--no-fund", "--no-update-notifier", "--ignore-scripts"])
            .stdin(std::process::Stdio::null());
        setup::logged(npm, &cache.join("logs").join("copilot-install.log"), &format!("npm install {spec}"))?;
        native_copilot(&prefix)?;
        std::fs::write(&complete, COPILOT_VERSION)?;
        eprintln!("conformance: {spec} installed in {:.1?}", started.elapsed());
    }
    native_copilot(&prefix)
}

/// `node_modules/@github/copilot-<platform>/copilot`: the optional dependency npm chose for this
/// machine (the `copilot` bin is a Node loader that only starts it).
fn native_copilot(prefix: &Path) -> Result<PathBuf> {
    let scope = prefix.join("node_modules").join("@github");
    let exe = if cfg!(windows) { "copilot.exe" } else { "copilot" };
    let found = std::fs::read_dir(&scope)
        .with_context(|| format!("reading {}", scope.display()))?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("copilot-"))
        .map(|e| e.path().join(exe))
        .find(|p| p.is_file());
    found.with_context(|| {
        format!(
            "no native Copilot CLI for this platform under {} (npm installs only the one matching it)",
            scope.display()
        )
    })
}

/// The conformance crate's test targets that need the agents.
const TESTS: [&str; 4] = ["acp_agents", "copilot_byok", "agent_clients", "http_suites"];

/// Install (cached), then run the conformance tests; adds their count to the tally.
pub fn run(root: &Path, tally: &mut summary::Tally) -> Result<()> {
    let cache = cache_dir(root);
    std::fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;
    let copilot = ensure_copilot(&cache.canonicalize()?)?;
    // Codex CLI and Claude Code, for `agent_clients` (Linux x64 builds only).
    let clients = if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        crate::agent_clients::ensure(&cache.canonicalize()?)?
    } else {
        Vec::new()
    };
    // CompatCanary and llm-comply, for `http_suites`.
    let suites = crate::http_suites::ensure(&cache.canonicalize()?)?;
    let mut cmd = if e2e::netns_available() {
        eprintln!("conformance: the agent runs in a private network namespace (loopback only)");
        let mut c = Command::new("unshare");
        c.args(["--net", "--", "sh", "-c", r#"ip link set lo up && exec "$0" "$@""#]).arg(crate::cargo_program());
        c
    } else {
        eprintln!(
            "conformance: NOTE: no private network namespace here; the agent runs offline by its own switch only"
        );
        crate::cargo()
    };
    // Built by the first stage (or by `cargo xtask conformance`: the tests, the sidecar and the
    // CLI double `copilot_byok` starts), so nothing here needs the network.
    let nextest = crate::has_nextest();
    let tests = TESTS.iter().flat_map(|t| ["--test", t]);
    if nextest {
        cmd.args(["nextest", "run", "--package", "acp-conformance"]).args(tests).args([
            "--run-ignored",
            "only",
            "--locked",
            "--offline",
            "--no-fail-fast",
            "--success-output",
            "final",
        ]);
    } else {
        cmd.args(["test", "--package", "acp-conformance"]).args(tests).args(["--locked", "--offline"]);
        cmd.args(["--", "--ignored"]);
    }
    cmd.env(COPILOT_VAR, &copilot);
    cmd.envs(clients.iter().map(|(var, path)| (*var, path)));
    cmd.envs(suites.iter().map(|(var, path)| (*var, path)));
    // nextest: "… 1 test run: 1 passed, 0 skipped"; cargo test: "test result: ok. 1 passed; 0 failed; …".
    let closing: fn(&str) -> bool = if nextest {
        |l| l.contains(" test run: ") || l.contains(" tests run: ")
    } else {
        |l| l.starts_with("test result: ")
    };
    let lines = summary::run_scanned(&mut cmd, closing)?;
    // nextest closes the whole run with one line; cargo test closes each test target with one.
    let closing = if nextest { lines.last().into_iter().collect() } else { lines.iter().collect::<Vec<_>>() };
    let count = |label| closing.iter().map(|l| summary::number_before(l, label).unwrap_or(0)).sum::<u64>();
    let passed = count(" passed");
    if passed == 0 {
        bail!("the conformance tests did not run (the runner said {:?})", lines.last());
    }
    tally.add(
        "conformance (Copilot CLI: ACP, BYOK through serve; Codex, Claude Code through serve; CompatCanary, llm-comply)",
        passed,
        count(" failed"),
    );
    Ok(())
}
