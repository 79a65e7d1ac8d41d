//! The agent CLIs of other dialects that the conformance stage runs against `cursor-bridge serve`
//! (`conformance/tests/agent_clients`): Codex CLI (the Responses API) and Claude Code (the
//! Anthropic Messages API), pinned, installed once from npm into the agent cache beside Copilot
//! CLI, without install scripts (each native binary is a plain optional dependency).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::e2e::setup;

/// One pinned client: its npm package, and where its native binary sits in the install.
struct Client {
    package: &'static str,
    version: &'static str,
    /// The folder under the agent cache (`<name>-<version>`).
    name: &'static str,
    /// The native binary, relative to the install's `node_modules` (Linux x64: the only platform
    /// the conformance stage runs these on; docs/platforms.md).
    binary: &'static str,
    /// The variable the tests read the binary's path from.
    var: &'static str,
}

const CLIENTS: [Client; 2] = [
    Client {
        package: "@openai/codex",
        version: "0.171.0",
        name: "codex",
        binary: "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
        var: "CURSOR_BRIDGE_CONFORMANCE_CODEX",
    },
    Client {
        package: "@anthropic-ai/claude-code",
        version: "2.1.332",
        name: "claude-code",
        binary: "@anthropic-ai/claude-code-linux-x64/claude",
        var: "CURSOR_BRIDGE_CONFORMANCE_CLAUDE",
    },
];

/// Install each pinned client unless the cache has it; returns (variable, binary) pairs for the
/// tests' environment.
pub fn ensure(cache: &Path) -> Result<Vec<(&'static str, PathBuf)>> {
    CLIENTS.iter().map(|c| Ok((c.var, ensure_one(cache, c)?))).collect()
}

fn ensure_one(cache: &Path, client: &Client) -> Result<PathBuf> {
    let prefix = cache.join(format!("{}-{}", client.name, client.version));
    let exe = prefix.join("node_modules").join(client.binary);
    let complete = prefix.join(".complete");
    if !complete.exists() || !exe.is_file() {
        let started = Instant::now();
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::create_dir_all(cache.join("logs")).with_context(|| format!("creating {}", cache.display()))?;
        std::fs::create_dir_all(&prefix)?;
        let spec = format!("{}@{}", client.package, client.version);
        eprintln!("conformance: npm install {spec} (into {})", prefix.display());
        let mut npm = Command::new("npm");
        npm.arg("install")
            .arg("--prefix")
            .arg(&prefix)
            .arg(&spec)
            .args(["--no-audit", "--no-fund", "--no-update-notifier", "--ignore-scripts"])
            .stdin(std::process::Stdio::null());
        let log = cache.join("logs").join(format!("{}-install.log", client.name));
        setup::logged(npm, &log, &format!("npm install {spec}"))?;
        if !exe.is_file() {
            anyhow::bail!(
                "{spec} installed, but {} is not there (npm installs only this platform's binary)",
                exe.display()
            );
        }
        std::fs::write(&complete, client.version)?;
        eprintln!("conformance: {spec} installed in {:.1?}", started.elapsed());
    }
    Ok(exe)
}
