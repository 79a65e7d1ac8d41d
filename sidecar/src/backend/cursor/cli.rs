//! The Cursor CLI as a program both of its backends drive: where it is (found once, remembered),
//! the environment every child of it gets, the private folder its own subcommands run in, its
//! model list and its state for `status` (found, version, login). One of these is shared by the
//! print and ACP backends of a front door, so `auto` finds the program once and both modes see
//! the same key and environment.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::commands;
use super::discovery::CliCommand;
use super::env::{child_env, ChildEnv};
use super::failures::HINT_AUTH;
use super::locate::Locator;
use super::models;
use super::probe_notes::{Learnt, Notes};
use crate::backend::contract::{BackendSettings, EnvPolicy, Located};
use crate::backend::process;
use crate::backend::reports::CliStatus;
use crate::error::BridgeError;
use crate::vocab::{ModelInfo, Secret};

/// Below this much available memory no CLI process is started ahead of need (each is a Node
/// program of ~100 MB). macOS judges by its memory-pressure level instead.
const MIN_AVAILABLE_KIB: u64 = 512 * 1024;

/// Room for a CLI process started ahead (a print-mode spare, an ACP session opened ahead): the OS
/// does not report memory as tight (Linux `MemAvailable`, Windows available physical memory,
/// macOS the kernel's pressure level; see `process::memory_is_tight`).
pub fn memory_allows_spares() -> bool {
    !process::memory_is_tight(MIN_AVAILABLE_KIB)
}

pub struct CursorCli {
    /// Only ever for the children's environment.
    api_key: Option<Secret>,
    env_policy: EnvPolicy,
    /// Where the CLI's own subcommands run: a private folder of ours (`BackendSettings::neutral_dir`).
    neutral: Neutral,
    locator: Locator,
    /// What `doctor --probe` learnt about builds (`probe_notes.rs`).
    notes: Notes,
}

impl CursorCli {
    pub fn new(settings: &BackendSettings) -> Arc<CursorCli> {
        let neutral = Neutral::new(settings.neutral_dir.clone());
        Arc::new(CursorCli {
            api_key: settings.api_key.clone().filter(|k| !k.expose().is_empty()),
            env_policy: settings.env.clone(),
            locator: Locator::new(settings.cli_path.clone(), neutral.path().to_path_buf()),
            neutral,
            notes: Notes::new(settings.probe_notes.clone()),
        })
    }

    /// The environment of every child of the CLI (a turn, a subcommand, an ACP agent).
    pub fn env(&self) -> ChildEnv {
        child_env(self.api_key.as_ref().map(Secret::expose), &self.env_policy)
    }

    /// Whether the bridge was given an API key for the CLI.
    pub fn has_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// What a probe learnt about `cli`'s build, if it was probed.
    pub fn learnt(&self, cli: &CliCommand) -> Option<Learnt> {
        self.notes.of(cli)
    }

    pub fn notes(&self) -> &Notes {
        &self.notes
    }

    /// The folder the CLI's subcommands run in (never a user's).
    pub fn neutral_dir(&self) -> &Path {
        self.neutral.path()
    }

    /// The program, searched for if it is not known (or went missing).
    pub async fn find(&self) -> Result<CliCommand, BridgeError> {
        self.locator.cli(&self.env()).await
    }

    /// The program if it was found already (never searches).
    pub fn found(&self) -> Option<CliCommand> {
        self.locator.known()
    }

    pub async fn locate(&self) -> Result<Located, BridgeError> {
        self.find().await.map(|cli| Located { path: cli.display.display().to_string() })
    }

    /// `agent models`, as the model picker's list.
    pub async fn models(&self) -> Result<Vec<ModelInfo>, BridgeError> {
        let cli = self.find().await?;
        let listed = commands::list_models(&cli, &self.env(), self.neutral_dir()).await?;
        Ok(models::to_model_infos(&listed))
    }

    /// Found, version and login (`agent --version`, `agent status`), for `status` and `doctor`.
    pub async fn health(&self) -> CliStatus {
        let api_key = self.has_key();
        let key_in_environment = super::words::key_in_environment();
        let cli = match self.find().await {
            Ok(cli) => cli,
            Err(e) => {
                return CliStatus {
                    found: false,
                    path: None,
                    version: None,
                    logged_in: None,
                    account: None,
                    api_key,
                    key_in_environment,
                    hint: e.hint,
                    problem: Some(e.message),
                }
            }
        };
        let env = self.env();
        let cwd = self.neutral_dir();
        let (version, login) = tokio::join!(commands::version(&cli, &env, cwd), commands::status(&cli, &env, cwd));
        let hint = (login.logged_in == Some(false) && !api_key).then(|| HINT_AUTH.to_string());
        CliStatus {
            found: true,
            path: Some(cli.display.display().to_string()),
            version,
            logged_in: login.logged_in,
            account: login.account,
            api_key,
            key_in_environment,
            hint,
            problem: None,
        }
    }
}

/// The folder the CLI's subcommands run in: the front door's (in the state folder), else a
/// private temporary one that lives as long as the CLI's backends.
enum Neutral {
    Given(PathBuf),
    Temporary(tempfile::TempDir),
}

impl Neutral {
    fn new(given: Option<PathBuf>) -> Neutral {
        if let Some(dir) = given {
            return Neutral::Given(dir);
        }
        match tempfile::Builder::new().prefix("cursor-bridge-cli-").tempdir() {
            Ok(dir) => Neutral::Temporary(dir),
            // No private temporary folder: the user's home, whose `.cursor/` is the CLI's own
            // user configuration anyway (never the shared temporary folder, where anyone could
            // plant one).
            Err(e) => {
                tracing::warn!(error = %e, "cannot create a private folder for the CLI's commands; using the home folder");
                Neutral::Given(dirs::home_dir().unwrap_or_else(|| PathBuf::from("/")))
            }
        }
    }

    fn path(&self) -> &Path {
        match self {
            Neutral::Given(dir) => dir,
            Neutral::Temporary(dir) => dir.path(),
        }
    }
}
