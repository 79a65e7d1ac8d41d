//! What the engine is configured with, whichever front door set it up: the documented options
//! (`initialize.options`, or `serve`'s defaults), the folders turns may run in, and where state
//! is kept.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{BridgeError, Result};
use crate::protocol::Options;

#[derive(Debug, Clone, Default)]
pub struct Config {
    pub options: Options,
    /// Turns run in one of these folders or below one (none: the sidecar's current folder).
    pub workspaces: Vec<PathBuf>,
    /// Sessions and the model cache are kept here (none: in memory only).
    pub state_dir: Option<PathBuf>,
}

impl Config {
    /// Refuses options no turn could run with; canonicalizes the folders.
    pub fn new(options: Options, workspaces: Vec<PathBuf>, state_dir: Option<PathBuf>) -> Result<Config> {
        if options.max_concurrent == 0 || options.request_timeout_seconds == 0 || options.idle_timeout_seconds == 0 {
            return Err(BridgeError::invalid_params(
                "`maxConcurrent`, `requestTimeoutSeconds` and `idleTimeoutSeconds` must be at least 1",
            ));
        }
        let workspaces = workspaces.into_iter().map(|p| p.canonicalize().unwrap_or(p)).collect();
        Ok(Config { options, workspaces, state_dir })
    }

    pub fn idle(&self) -> Duration {
        Duration::from_secs(self.options.idle_timeout_seconds)
    }

    pub fn turn_limit(&self) -> Duration {
        Duration::from_secs(self.options.request_timeout_seconds)
    }

    /// The workspace for a turn: the requested one (which must be one of the configured folders
    /// or inside one, when folders were given), else the first folder, else the current folder.
    pub fn workspace_for(&self, requested: Option<&str>) -> Result<PathBuf> {
        let path = match requested.filter(|w| !w.is_empty()) {
            Some(w) => PathBuf::from(w),
            None => match self.workspaces.first() {
                Some(w) => w.clone(),
                None => std::env::current_dir()
                    .map_err(|e| BridgeError::invalid_params(format!("no workspace and no current folder: {e}")))?,
            },
        };
        let path = path.canonicalize().map_err(|_| {
            BridgeError::invalid_params(format!("workspace folder does not exist: {}", path.display()))
        })?;
        if !path.is_dir() {
            return Err(BridgeError::invalid_params(format!("workspace is not a folder: {}", path.display())));
        }
        if !self.workspaces.is_empty() && !self.workspaces.iter().any(|w| path.starts_with(w)) {
            return Err(BridgeError::invalid_params(format!(
                "workspace {} is not one of the folders given to `initialize`",
                path.display()
            )));
        }
        Ok(path)
    }
}
