//! `doctor`: what stands between this set-up and a working Cursor model, one check at a time, each
//! with what was found and what to do about it. Both the `cursor-bridge doctor` command and the
//! stdio `doctor` method (the editor's "Check Setup") run this. A check that depends on one that
//! failed is reported as not checked, so exactly the check at fault fails.

use std::sync::Arc;

use super::core::Engine;
use crate::backend::{VersionCheck, VersionVerdict};
use crate::vocab::ModelInfo;

/// What stands between this set-up and a working Cursor model, check by check.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// No check failed.
    pub ok: bool,
    pub checks: Vec<Check>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Stable: `cli`, `cliVersion`, `login`, `models`, `workspaceTrust`, `backend`, `stateFolder`.
    pub id: String,
    pub title: String,
    pub status: CheckStatus,
    /// One line: what was found.
    pub summary: String,
    pub detail: Option<String>,
    /// What to do about it (absent when nothing needs doing).
    pub fix: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckStatus {
    Ok,
    /// Works, but not as well as it could.
    Warn,
    /// Cursor models will not answer until this is fixed.
    Fail,
    /// Nothing to judge.
    Info,
}

const UPDATE_FIX: &str =
    "Update the Cursor CLI: run `agent update` in a terminal (or install it again: `curl https://cursor.com/install -fsS | bash`).";
const TRUST_FIX: &str = "Trust the folder (VS Code: \"Workspaces: Manage Workspace Trust\"), then reload the window.";
const STATE_FIX: &str = "Set CURSOR_BRIDGE_STATE_DIR to a folder you can write to.";

fn check(id: &str, title: &str, status: CheckStatus, summary: impl Into<String>) -> Check {
    Check { id: id.into(), title: title.into(), status, summary: summary.into(), detail: None, fix: None }
}

fn with_fix(mut c: Check, fix: impl Into<String>) -> Check {
    c.fix = Some(fix.into());
    c
}

fn not_checked(id: &str, title: &str, why: &str) -> Check {
    check(id, title, CheckStatus::Info, format!("Not checked: {why}."))
}

/// A key the CLI will use: given by the client, or in the environment it inherits.
fn env_key() -> bool {
    ["CURSOR_API_KEY", "CURSOR_AUTH_TOKEN"].iter().any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()))
}

impl Engine {
    pub async fn doctor(self: &Arc<Self>) -> Report {
        let mut checks = Vec::new();
        let cli = self.backend.health().await;

        // The CLI, where it is.
        const CLI: (&str, &str) = ("cli", "Cursor CLI");
        let found = cli.found;
        checks.push(match (&cli.path, found) {
            (Some(path), true) => check(CLI.0, CLI.1, CheckStatus::Ok, format!("Found at {path}.")),
            _ => with_fix(
                check(
                    CLI.0,
                    CLI.1,
                    CheckStatus::Fail,
                    match &cli.problem {
                        Some(why) => format!("{why}."),
                        None => "The Cursor CLI (`cursor-agent` / `agent`) was not found.".to_string(),
                    },
                ),
                cli.hint.clone().unwrap_or_else(|| "Install the Cursor CLI: see cursor.com/cli.".into()),
            ),
        });

        // Its version.
        const VERSION: (&str, &str) = ("cliVersion", "Cursor CLI version");
        checks.push(match (&cli.version, found) {
            (_, false) => not_checked(VERSION.0, VERSION.1, "no Cursor CLI"),
            (None, true) => with_fix(
                check(VERSION.0, VERSION.1, CheckStatus::Warn, "`agent --version` printed no version."),
                "Run `agent --version` in a terminal to see what it says; `agent update` may help.",
            ),
            (Some(v), true) => match self.backend.judge_version(v) {
                VersionCheck { verdict: VersionVerdict::KnownGood, oldest, newest } => check(
                    VERSION.0,
                    VERSION.1,
                    CheckStatus::Ok,
                    format!("{v}: known to work (builds {oldest} to {newest} were checked)."),
                ),
                VersionCheck { verdict: VersionVerdict::Newer, newest, .. } => check(
                    VERSION.0,
                    VERSION.1,
                    CheckStatus::Ok,
                    format!("{v}: newer than any build checked (up to {newest}); expected to work."),
                ),
                VersionCheck { verdict: VersionVerdict::TooOld, oldest, .. } => with_fix(
                    check(
                        VERSION.0,
                        VERSION.1,
                        CheckStatus::Fail,
                        format!("{v} is too old: the bridge needs {oldest} or newer."),
                    ),
                    UPDATE_FIX,
                ),
                VersionCheck { verdict: VersionVerdict::Unrecognised, newest, .. } => with_fix(
                    check(
                        VERSION.0,
                        VERSION.1,
                        CheckStatus::Warn,
                        format!("`{v}` is not a Cursor CLI version (expected a date, e.g. {newest}-…)."),
                    ),
                    "Check that the configured CLI path is Cursor's `cursor-agent`.",
                ),
            },
        });

        // Logged in, or a key.
        const LOGIN: (&str, &str) = ("login", "Cursor login");
        let key = cli.api_key || env_key();
        let login = match (found, cli.logged_in, key) {
            (false, _, _) => not_checked(LOGIN.0, LOGIN.1, "no Cursor CLI"),
            (true, Some(true), _) => check(
                LOGIN.0,
                LOGIN.1,
                CheckStatus::Ok,
                match &cli.account {
                    Some(a) => format!("Logged in as {a}."),
                    None => "Logged in.".to_string(),
                },
            ),
            (true, _, true) => check(LOGIN.0, LOGIN.1, CheckStatus::Ok, "A Cursor API key is set."),
            (true, Some(false), false) => with_fix(
                check(LOGIN.0, LOGIN.1, CheckStatus::Fail, "Not logged in, and no API key is set."),
                cli.hint.clone().unwrap_or_else(|| "Run `agent login` in a terminal.".into()),
            ),
            (true, None, false) => with_fix(
                check(LOGIN.0, LOGIN.1, CheckStatus::Warn, "`agent status` did not say whether you are logged in."),
                "Run `agent status` in a terminal; if it says \"Not logged in\", run `agent login`.",
            ),
        };
        let logged_out = login.status == CheckStatus::Fail;
        checks.push(login);

        // The models.
        const MODELS: (&str, &str) = ("models", "Models");
        checks.push(if !found {
            not_checked(MODELS.0, MODELS.1, "no Cursor CLI")
        } else if logged_out {
            not_checked(MODELS.0, MODELS.1, "not logged in")
        } else {
            match self.models(true).await {
                Ok(models) => check(MODELS.0, MODELS.1, CheckStatus::Ok, models_summary(&models)),
                Err(e) => {
                    let mut c = check(MODELS.0, MODELS.1, CheckStatus::Fail, e.message.clone());
                    c.fix = e.hint.clone();
                    c.detail = e.detail.clone();
                    c
                }
            }
        });

        // Where turns run.
        const TRUST: (&str, &str) = ("workspaceTrust", "Workspace trust");
        let folders = &self.config.workspaces;
        checks.push(if !self.config.settings.workspace_trusted {
            with_fix(
                check(
                    TRUST.0,
                    TRUST.1,
                    CheckStatus::Warn,
                    "Restricted: Cursor models only answer questions (ask mode), in a private scratch folder, never in your files.",
                ),
                TRUST_FIX,
            )
        } else if folders.is_empty() {
            check(TRUST.0, TRUST.1, CheckStatus::Info, "No folder is open: turns run in a private scratch folder.")
        } else {
            let list: Vec<String> = folders.iter().map(|f| f.display().to_string()).collect();
            check(
                TRUST.0,
                TRUST.1,
                CheckStatus::Ok,
                format!("Trusted: agent mode may edit files and run commands in {}.", list.join(", ")),
            )
        });

        // Who serves, and why when it is not what was asked for.
        let served = self.backend.status();
        let what = |b: &str| match b {
            "acp" => "Cursor's ACP mode (a warm CLI process per conversation)".to_owned(),
            "print" => "print mode (a CLI process per message)".to_owned(),
            other => format!("`{other}`"),
        };
        let mut summary = format!("Turns run in {} (setting: `{}`).", what(&served.active), served.configured);
        if let Some(reason) = &served.reason {
            summary.push_str(&format!(" {reason}."));
        }
        checks.push(check("backend", "Backend", CheckStatus::Info, summary));

        // Where state is kept.
        const STATE: (&str, &str) = ("stateFolder", "State folder");
        checks.push(match &self.config.state_dir {
            None => with_fix(
                check(
                    STATE.0,
                    STATE.1,
                    CheckStatus::Warn,
                    "No state folder: sessions and the model list live in memory only.",
                ),
                STATE_FIX,
            ),
            Some(dir) => match writable(dir) {
                Ok(()) => {
                    check(STATE.0, STATE.1, CheckStatus::Ok, format!("{} (sessions, model cache).", dir.display()))
                }
                Err(e) => with_fix(
                    check(STATE.0, STATE.1, CheckStatus::Fail, format!("{} cannot be written: {e}.", dir.display())),
                    STATE_FIX,
                ),
            },
        });

        let ok = checks.iter().all(|c| c.status != CheckStatus::Fail);
        Report { ok, checks }
    }
}

fn models_summary(models: &[ModelInfo]) -> String {
    let mut bases: Vec<&str> =
        models.iter().map(|m| m.base.as_ref().map_or(m.id.as_str(), |b| b.id.as_str())).collect();
    bases.dedup();
    let mut unique = bases.clone();
    unique.sort_unstable();
    unique.dedup();
    let default = models.iter().find(|m| m.is_default).map(|m| format!("; default: {}", m.id)).unwrap_or_default();
    format!("{} models ({} base models){default}.", models.len(), unique.len())
}

/// The folder exists (or can be made) and takes a file.
fn writable(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    std::fs::write(&probe, b"ok")?;
    std::fs::remove_file(&probe)
}
