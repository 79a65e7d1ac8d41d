//! `doctor`: what stands between this set-up and a working model of the agent's, one check at a time, each
//! with what was found and what to do about it. Both the `cursor-bridge doctor` command and the
//! stdio `doctor` method (the editor's "Check Setup") run this. A check that depends on one that
//! failed is reported as not checked, so exactly the check at fault fails.

use std::sync::Arc;

use super::core::Engine;
use crate::backend::{AgentWords, CliStatus, VersionCheck, VersionVerdict};
use crate::vocab::ModelInfo;

/// What stands between this set-up and a working model, check by check.
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
    /// The agent's models will not answer until this is fixed.
    Fail,
    /// Nothing to judge.
    Info,
}

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

impl Engine {
    /// `probe`: the backend checks its assumptions against the agent program (in a scratch
    /// folder of its own: nothing runs in a workspace, trusted or not).
    pub async fn probe(self: &Arc<Self>, plan: crate::backend::ProbePlan) -> crate::backend::ProbeReport {
        self.backend.probe(plan).await
    }

    /// The most requests of the person's plan [`Engine::probe`] spends with consent.
    pub fn probe_requests(&self) -> u32 {
        self.backend.probe_requests()
    }

    /// The checks in the order a person fixes them: the agent, its version, the login, the
    /// models, then where turns run, who serves them and where state is kept.
    pub async fn doctor(self: &Arc<Self>) -> Report {
        let cli = self.backend.health().await;
        // The agent's own terms: its name, its commands, its fixes (the backend's).
        let agent = Agent { cli: &cli, words: self.backend.words() };
        let login = agent.login();
        let logged_out = login.status == CheckStatus::Fail;
        let checks = vec![
            agent.found(),
            agent.version(|v| self.backend.judge_version(v)),
            login,
            self.models_check(&agent, logged_out).await,
            self.trust_check(agent.words),
            self.backend_check(agent.words),
            self.state_check(),
        ];
        let ok = checks.iter().all(|c| c.status != CheckStatus::Fail);
        Report { ok, checks }
    }

    async fn models_check(self: &Arc<Self>, agent: &Agent<'_>, logged_out: bool) -> Check {
        const MODELS: (&str, &str) = ("models", "Models");
        if !agent.cli.found {
            return not_checked(MODELS.0, MODELS.1, &agent.none());
        }
        if logged_out {
            return not_checked(MODELS.0, MODELS.1, "not logged in");
        }
        match self.models(true).await {
            Ok(models) => check(MODELS.0, MODELS.1, CheckStatus::Ok, models_summary(&models)),
            Err(e) => {
                let mut c = check(MODELS.0, MODELS.1, CheckStatus::Fail, e.message.clone());
                c.fix = e.hint.clone();
                c.detail = e.detail.clone();
                c
            }
        }
    }

    /// Where turns run.
    fn trust_check(&self, words: &AgentWords) -> Check {
        const TRUST: (&str, &str) = ("workspaceTrust", "Workspace trust");
        let folders = &self.config.workspaces;
        if !self.config.settings.workspace_trusted {
            return with_fix(
                check(
                    TRUST.0,
                    TRUST.1,
                    CheckStatus::Warn,
                    format!(
                        "Restricted: {} models only answer questions (ask mode), in a private scratch folder, never in your files.",
                        words.vendor
                    ),
                ),
                TRUST_FIX,
            );
        }
        if folders.is_empty() {
            return check(
                TRUST.0,
                TRUST.1,
                CheckStatus::Info,
                "No folder is open: turns run in a private scratch folder.",
            );
        }
        let list: Vec<String> = folders.iter().map(|f| f.display().to_string()).collect();
        check(
            TRUST.0,
            TRUST.1,
            CheckStatus::Ok,
            format!("Trusted: agent mode may edit files and run commands in {}.", list.join(", ")),
        )
    }

    /// Who serves, and why when it is not what was asked for.
    fn backend_check(&self, words: &AgentWords) -> Check {
        let served = self.backend.status();
        let what = |b: &str| match words.backends.iter().find(|(name, _)| *name == b) {
            Some((_, meaning)) => meaning.to_string(),
            None => format!("`{b}`"),
        };
        let mut summary = format!("Turns run in {} (setting: `{}`).", what(&served.active), served.configured);
        if let Some(reason) = &served.reason {
            summary.push_str(&format!(" {reason}."));
        }
        check("backend", "Backend", CheckStatus::Info, summary)
    }

    /// Where state is kept.
    fn state_check(&self) -> Check {
        const STATE: (&str, &str) = ("stateFolder", "State folder");
        let Some(dir) = &self.config.state_dir else {
            return with_fix(
                check(
                    STATE.0,
                    STATE.1,
                    CheckStatus::Warn,
                    "No state folder: sessions and the model list live in memory only.",
                ),
                STATE_FIX,
            );
        };
        match writable(dir) {
            Ok(()) => check(STATE.0, STATE.1, CheckStatus::Ok, format!("{} (sessions, model cache).", dir.display())),
            Err(e) => with_fix(
                check(STATE.0, STATE.1, CheckStatus::Fail, format!("{} cannot be written: {e}.", dir.display())),
                STATE_FIX,
            ),
        }
    }
}

/// The agent as its backend reports it (`health`), in its own words: the first three checks.
struct Agent<'a> {
    cli: &'a CliStatus,
    words: &'a AgentWords,
}

impl Agent<'_> {
    /// Why a check that needs the agent was not made.
    fn none(&self) -> String {
        format!("no {}", self.words.name)
    }

    /// The agent, where it is.
    fn found(&self) -> Check {
        let (cli, words) = (self.cli, self.words);
        match (&cli.path, cli.found) {
            (Some(path), true) => check("cli", words.name, CheckStatus::Ok, format!("Found at {path}.")),
            _ => with_fix(
                check(
                    "cli",
                    words.name,
                    CheckStatus::Fail,
                    match &cli.problem {
                        Some(why) => format!("{why}."),
                        None => words.not_found.to_string(),
                    },
                ),
                cli.hint.clone().unwrap_or_else(|| words.install_fix.into()),
            ),
        }
    }

    /// Its version, as the backend judges it (`judge`, asked only when a version was printed).
    fn version(&self, judge: impl FnOnce(&str) -> VersionCheck) -> Check {
        const VERSION: &str = "cliVersion";
        let (cli, words) = (self.cli, self.words);
        let title = format!("{} version", words.name);
        let v = match (&cli.version, cli.found) {
            (_, false) => return not_checked(VERSION, &title, &self.none()),
            (None, true) => {
                return with_fix(
                    check(
                        VERSION,
                        &title,
                        CheckStatus::Warn,
                        format!("`{}` printed no version.", words.version_command),
                    ),
                    words.no_version_fix,
                )
            }
            (Some(v), true) => v,
        };
        match judge(v) {
            VersionCheck { verdict: VersionVerdict::KnownGood, oldest, newest } => check(
                VERSION,
                &title,
                CheckStatus::Ok,
                format!("{v}: known to work (builds {oldest} to {newest} were checked)."),
            ),
            VersionCheck { verdict: VersionVerdict::Newer, newest, .. } => check(
                VERSION,
                &title,
                CheckStatus::Ok,
                format!("{v}: newer than any build checked (up to {newest}); expected to work."),
            ),
            VersionCheck { verdict: VersionVerdict::TooOld, oldest, .. } => with_fix(
                check(
                    VERSION,
                    &title,
                    CheckStatus::Fail,
                    format!("{v} is too old: the bridge needs {oldest} or newer."),
                ),
                words.update_fix,
            ),
            VersionCheck { verdict: VersionVerdict::Unrecognised, newest, .. } => with_fix(
                check(
                    VERSION,
                    &title,
                    CheckStatus::Warn,
                    format!("`{v}` is not a {} version (expected a date, e.g. {newest}-…).", words.name),
                ),
                words.not_this_agent_fix,
            ),
        }
    }

    /// Logged in, or a key.
    fn login(&self) -> Check {
        const LOGIN: &str = "login";
        let (cli, words) = (self.cli, self.words);
        let title = format!("{} login", words.vendor);
        let key = cli.api_key || cli.key_in_environment;
        match (cli.found, cli.logged_in, key) {
            (false, _, _) => not_checked(LOGIN, &title, &self.none()),
            (true, Some(true), _) => check(
                LOGIN,
                &title,
                CheckStatus::Ok,
                match &cli.account {
                    Some(a) => format!("Logged in as {a}."),
                    None => "Logged in.".to_string(),
                },
            ),
            (true, _, true) => check(LOGIN, &title, CheckStatus::Ok, format!("A {} API key is set.", words.vendor)),
            (true, Some(false), false) => with_fix(
                check(LOGIN, &title, CheckStatus::Fail, "Not logged in, and no API key is set."),
                cli.hint.clone().unwrap_or_else(|| words.login_fix.into()),
            ),
            (true, None, false) => with_fix(
                check(
                    LOGIN,
                    &title,
                    CheckStatus::Warn,
                    format!("`{}` did not say whether you are logged in.", words.status_command),
                ),
                words.unknown_login_fix,
            ),
        }
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
