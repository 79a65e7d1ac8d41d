//! The public conformance suites for OpenAI- and Anthropic-style servers that the conformance
//! stage runs against `cursor-bridge serve` (`conformance/tests/http_suites`), pinned and
//! installed once into the agent cache: CompatCanary from npm (no dependencies, no install
//! scripts run) and llm-comply from PyPI (in a venv of its own).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::e2e::setup;

pub const COMPATCANARY: &str = "compatcanary@0.2.2";
pub const LLM_COMPLY: &str = "llm-comply==0.5.0";

/// The variables the test target reads the suites' paths from.
pub const COMPATCANARY_VAR: &str = "CURSOR_BRIDGE_CONFORMANCE_COMPATCANARY";
pub const LLM_COMPLY_VAR: &str = "CURSOR_BRIDGE_CONFORMANCE_LLM_COMPLY";

/// Both suites, installed unless the cache has them: `(variable, program)`.
pub fn ensure(cache: &Path) -> Result<Vec<(&'static str, PathBuf)>> {
    std::fs::create_dir_all(cache.join("logs"))?;
    Ok(vec![(COMPATCANARY_VAR, compatcanary(cache)?), (LLM_COMPLY_VAR, llm_comply(cache)?)])
}

fn folder(cache: &Path, spec: &str) -> PathBuf {
    cache.join(spec.replace(['@', '='], "-"))
}

fn compatcanary(cache: &Path) -> Result<PathBuf> {
    let prefix = folder(cache, COMPATCANARY);
    let program = prefix.join("node_modules").join(".bin").join("compatcanary");
    if !prefix.join(".complete").exists() {
        let started = Instant::now();
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::create_dir_all(&prefix)?;
        eprintln!("conformance: npm install {COMPATCANARY}");
        let mut npm = Command::new("npm");
        npm.arg("install")
            .arg("--prefix")
            .arg(&prefix)
            .arg(COMPATCANARY)
            .args(["--no-audit", "--no-fund", "--no-update-notifier", "--ignore-scripts"])
            .stdin(std::process::Stdio::null());
        setup::logged(
            npm,
            &cache.join("logs").join("compatcanary-install.log"),
            &format!("npm install {COMPATCANARY}"),
        )?;
        anyhow::ensure!(program.is_file(), "{COMPATCANARY} installed, but {} is not there", program.display());
        std::fs::write(prefix.join(".complete"), COMPATCANARY)?;
        eprintln!("conformance: {COMPATCANARY} installed in {:.1?}", started.elapsed());
    }
    Ok(program)
}

fn llm_comply(cache: &Path) -> Result<PathBuf> {
    let venv = folder(cache, LLM_COMPLY);
    let program = venv.join("bin").join("llm-comply");
    if !venv.join(".complete").exists() {
        let started = Instant::now();
        let _ = std::fs::remove_dir_all(&venv);
        let log = cache.join("logs").join("llm-comply-install.log");
        let mut make = Command::new("python3");
        make.args(["-m", "venv"]).arg(&venv);
        setup::logged(make, &log, "python3 -m venv").context("llm-comply needs Python 3 with venv")?;
        eprintln!("conformance: pip install {LLM_COMPLY}");
        let mut pip = Command::new(venv.join("bin").join("python"));
        pip.args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", LLM_COMPLY])
            .stdin(std::process::Stdio::null());
        setup::logged(pip, &log, &format!("pip install {LLM_COMPLY}"))?;
        anyhow::ensure!(program.is_file(), "{LLM_COMPLY} installed, but {} is not there", program.display());
        std::fs::write(venv.join(".complete"), LLM_COMPLY)?;
        eprintln!("conformance: {LLM_COMPLY} installed in {:.1?}", started.elapsed());
    }
    Ok(program)
}
