//! The VS Code extension's checks, shared by `cargo xtask test` and `test --quick`: its
//! typecheck (TypeScript 7, `npm run typecheck`), its format (prettier) and lint (eslint), and its
//! unit tests.
//!
//! Prettier and eslint are pinned in `vscode-client/lint/` (their own package.json and lockfile),
//! apart from the extension's dependencies: typescript-eslint parses through the TypeScript 6 API,
//! which the extension's TypeScript 7 does not have. `npm ci` installs them there when its lockfile
//! changed, like the root's (`npm_ci_if_needed`).

use std::path::Path;

use anyhow::{Context, Result};

use crate::{npm, npm_ci_if_needed, run_cmd, summary};

/// The files prettier checks, from `vscode-client/` (its config: `.prettierrc.json` there).
const FORMATTED: [&str; 3] = ["src/**/*.ts", "test/**/*.ts", "scripts/**/*.mjs"];
/// The folders eslint lints, from `vscode-client/` (its config: `lint/eslint.config.mjs`).
const LINTED: [&str; 3] = ["src", "test", "scripts"];

/// Typecheck, format check and lint; the first failure stops them.
pub fn check(root: &Path) -> Result<()> {
    npm_ci_if_needed()?;
    run_cmd(npm().args(["run", "typecheck", "--workspace", "vscode-client"]))?;
    let client = root.join("vscode-client");
    let tools = client.join("lint");
    lint_tools_ci_if_needed(&tools)?;
    let bin = tools.join("node_modules").join(".bin");
    run_cmd(std::process::Command::new(node_bin(&bin, "prettier")).arg("--check").args(FORMATTED).current_dir(&client))
        .context("the extension is not formatted: `vscode-client/lint/node_modules/.bin/prettier --write` the files named above (from vscode-client/)")?;
    run_cmd(
        std::process::Command::new(node_bin(&bin, "eslint"))
            .args(["--config", "lint/eslint.config.mjs", "--max-warnings", "0"])
            .args(LINTED)
            .current_dir(&client),
    )?;
    Ok(())
}

/// The unit tests, with the debug binaries required (they drive the real sidecar against the CLI
/// double, so they must not be skipped here); returns `(passed, failed)`.
pub fn unit_tests(_root: &Path) -> Result<(u64, u64)> {
    npm_ci_if_needed()?;
    let lines = summary::run_scanned(
        npm().args(["test", "--workspace", "vscode-client"]).env("CURSOR_BRIDGE_REQUIRE_BINARIES", "1"),
        |l| l.starts_with("ℹ pass") || l.starts_with("ℹ fail"),
    )?;
    let count = |prefix: &str| lines.iter().filter_map(|l| summary::number_after(l, prefix)).next_back().unwrap_or(0);
    Ok((count("ℹ pass"), count("ℹ fail")))
}

fn node_bin(bin: &Path, name: &str) -> std::path::PathBuf {
    // npm writes a .cmd shim on Windows.
    bin.join(if cfg!(windows) { format!("{name}.cmd") } else { name.to_string() })
}

/// `npm ci` in `vscode-client/lint/` when its node_modules is missing or came from another
/// lockfile (a copy of the lockfile it was installed from is kept inside node_modules).
fn lint_tools_ci_if_needed(tools: &Path) -> Result<()> {
    let lock = tools.join("package-lock.json");
    let stamp = tools.join("node_modules").join(".xtask-installed-package-lock.json");
    let wanted = std::fs::read(&lock).with_context(|| format!("reading {}", lock.display()))?;
    if std::fs::read(&stamp).is_ok_and(|installed| installed == wanted) {
        return Ok(());
    }
    // No install scripts: prettier and eslint need none, and nothing from the registry runs here.
    run_cmd(npm().args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"]).current_dir(tools))
        .context("installing the extension's pinned prettier and eslint (vscode-client/lint/)")?;
    std::fs::write(&stamp, &wanted).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(())
}
