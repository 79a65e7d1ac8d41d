//! Finding the CLI once and remembering it; looked up again when the remembered file went away
//! (the user reinstalled it). Discovery itself (the search order) is `discovery.rs`.

use std::path::{Path, PathBuf};

use super::commands;
use super::discovery::{self, CliCommand, DiscoveryError, Lookup};
use super::env::ChildEnv;
use super::failures::HINT_INSTALL;
use crate::error::{BridgeError, Result};
use crate::util::sync::lock;
use crate::vocab::ErrorKind;

pub struct Locator {
    /// `initialize.cliPath` / `serve --cli-path`.
    setting: Option<String>,
    cached: tokio::sync::Mutex<Option<CliCommand>>,
    /// The last CLI found, for callers that must not wait (starting a spare before a turn's
    /// answer is sent).
    known: std::sync::Mutex<Option<CliCommand>>,
    /// Where the search runs `--version` and resolves relative PATH entries: a folder of ours.
    neutral: PathBuf,
}

impl Locator {
    pub fn new(setting: Option<String>, neutral: PathBuf) -> Self {
        Locator {
            neutral,
            setting: setting.filter(|p| !p.trim().is_empty()),
            cached: tokio::sync::Mutex::new(None),
            known: std::sync::Mutex::new(None),
        }
    }

    pub fn known(&self) -> Option<CliCommand> {
        lock(&self.known).clone()
    }

    pub async fn cli(&self, env: &ChildEnv) -> Result<CliCommand> {
        let mut cached = self.cached.lock().await;
        if let Some(cli) = cached.as_ref() {
            if cli.program.is_file() {
                return Ok(cli.clone());
            }
        }
        let setting = self.setting.clone();
        let env = env.clone();
        let handle = tokio::runtime::Handle::current();
        let neutral = self.neutral.clone();
        let found = tokio::task::spawn_blocking(move || {
            let version_of =
                |p: &Path| handle.block_on(commands::version(&CliCommand::plain(p.to_path_buf()), &env, &neutral));
            discovery::discover(&Lookup {
                configured: setting.as_deref(),
                env_path: std::env::var_os(discovery::ENV_CLI_PATH),
                path_var: std::env::var_os("PATH"),
                home: dirs::home_dir(),
                // A relative PATH entry (`.`, `node_modules/.bin`) must not find a program in
                // whatever folder the sidecar was started from: a repository cannot choose
                // what runs.
                cwd: neutral.clone(),
                version_of: &version_of,
            })
        })
        .await
        .map_err(|e| BridgeError::internal(format!("CLI discovery failed: {e}")))?;
        match found {
            Ok(cli) => {
                tracing::info!(cli = %cli.display.display(), "found the Cursor CLI");
                *cached = Some(cli.clone());
                *lock(&self.known) = Some(cli.clone());
                Ok(cli)
            }
            Err(e) => Err(not_found_error(&e)),
        }
    }
}

fn not_found_error(e: &DiscoveryError) -> BridgeError {
    match e {
        // Named with the path tried: "not found" alone sends people to reinstall a CLI they have,
        // when the fix is the setting that points elsewhere.
        DiscoveryError::ConfiguredPathMissing { path, source } => {
            let path = path.display();
            let (message, fix) = match source {
                discovery::Source::EnvVar => (
                    format!("The Cursor CLI was not found at {path}, the path in `{}`", discovery::ENV_CLI_PATH),
                    format!(
                        "Fix or unset the `{}` environment variable (the sidecar inherits it from the editor or shell that started it).",
                        discovery::ENV_CLI_PATH
                    ),
                ),
                _ => (
                    format!(
                        "The Cursor CLI was not found at {path}, the path in the `cursorBridge.cliPath` setting (`--cli-path` on the command line)"
                    ),
                    "Fix the `cursorBridge.cliPath` setting (or `--cli-path`), or clear it to search PATH.".to_string(),
                ),
            };
            BridgeError::new(ErrorKind::CliNotFound, message).hint(fix).detail(path.to_string())
        }
        DiscoveryError::NotFound { searched } => {
            BridgeError::new(ErrorKind::CliNotFound, "The Cursor CLI (`cursor-agent`) is not installed or not on PATH")
                .hint(HINT_INSTALL)
                .detail(format!("searched: {}", searched.join(", ")))
        }
    }
}
