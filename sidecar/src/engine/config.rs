//! What the engine is configured with, whichever front door set it up: its settings (from
//! `initialize.options`, or `serve`'s flags), the folders turns may run in, and where state
//! is kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::sessions::Door;
use super::settings::Settings;
use crate::error::{BridgeError, Result};
use crate::util::fs::private_dir;
use crate::util::text::fnv1a;
use crate::vocab::Mode;

#[derive(Debug, Clone)]
pub struct Config {
    pub settings: Settings,
    /// Turns run in one of these folders or below one.
    pub workspaces: Vec<PathBuf>,
    /// Sessions and the model cache are kept here (none: in memory only).
    pub state_dir: Option<PathBuf>,
    /// Private folders for turns that must not run in a user's folder (an untrusted workspace,
    /// a window without folders): `<state>/scratch`, else a temporary folder.
    scratch: Scratch,
    /// Every conversation gets a private folder of its own below this one (`serve` without
    /// `--workspace`), so two clients never share a folder or a chat.
    pub conversation_folders: Option<PathBuf>,
    /// The front door this engine serves; its `maxSessions` counts only that door's sessions.
    pub door: Door,
}

#[derive(Debug, Clone)]
enum Scratch {
    Under(PathBuf),
    /// Removed when the last clone of the configuration goes.
    Temporary(Arc<tempfile::TempDir>),
}

/// Where and how a turn runs, after trust is applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// The folder the agent works in.
    pub folder: PathBuf,
    pub mode: Mode,
    /// The agent may run commands without asking.
    pub unattended: bool,
    /// The folder is a private scratch folder, not the user's.
    pub scratch: bool,
    /// `folder` is the root of per-conversation folders; the session decides which one.
    pub per_conversation: bool,
}

impl Config {
    /// Refuses options no turn could run with; canonicalizes the folders.
    pub fn new(settings: Settings, workspaces: Vec<PathBuf>, state_dir: Option<PathBuf>) -> Result<Config> {
        if settings.max_concurrent == 0 || settings.request_timeout_seconds == 0 || settings.idle_timeout_seconds == 0 {
            return Err(BridgeError::invalid_params(
                "`maxConcurrent`, `requestTimeoutSeconds` and `idleTimeoutSeconds` must be at least 1",
            ));
        }
        let workspaces = workspaces.into_iter().map(|p| dunce::canonicalize(&p).unwrap_or(p)).collect();
        let scratch = match &state_dir {
            Some(state) => Scratch::Under(state.join("scratch")),
            None => Scratch::Temporary(Arc::new(
                tempfile::Builder::new()
                    .prefix("cursor-bridge-scratch-")
                    .tempdir()
                    .map_err(|e| BridgeError::internal(format!("cannot create a scratch folder: {e}")))?,
            )),
        };
        Ok(Config { settings, workspaces, state_dir, scratch, conversation_folders: None, door: Door::Stdio })
    }

    /// Where a turn for `requested` (a folder, or the default) runs, in which mode. A trusted
    /// workspace runs where asked; an untrusted one (or a window with no folders) runs in a
    /// private scratch folder of its own, so the CLI never trusts, reads or runs anything of a
    /// folder the user has not trusted; untrusted turns are never agent mode and never unattended.
    pub fn placement(&self, requested: Option<&str>, mode: Mode) -> Result<Placement> {
        let trusted = self.settings.workspace_trusted;
        let asked = requested.filter(|w| !w.is_empty());
        if let (None, Some(root)) = (asked, &self.conversation_folders) {
            let unattended = trusted && self.settings.force && mode == Mode::Agent;
            return Ok(Placement { folder: root.clone(), mode, unattended, scratch: false, per_conversation: true });
        }
        let (folder, scratch) = if asked.is_none() && self.workspaces.is_empty() {
            (self.scratch_folder("empty-window")?, true)
        } else if !trusted {
            let user = self.workspace_for(asked)?;
            (self.scratch_folder(&user.to_string_lossy())?, true)
        } else {
            (self.workspace_for(asked)?, false)
        };
        let mode = if !trusted && mode == Mode::Agent { Mode::Ask } else { mode };
        let unattended = trusted && self.settings.force && mode == Mode::Agent;
        Ok(Placement { folder, mode, unattended, scratch, per_conversation: false })
    }

    /// Client-tools mode: the agent works in a private empty folder (one per user folder, so
    /// chats stay apart by workspace) in ask mode, never unattended; the client's tools are the
    /// only ones that touch the user's files (docs/client-tools.md, "Isolation").
    pub fn tools_placement(&self, requested: Option<&str>) -> Result<Placement> {
        let asked = requested.filter(|w| !w.is_empty());
        let key = match (asked, self.workspaces.is_empty()) {
            (None, true) => "client-tools".to_string(),
            _ => format!("client-tools:{}", self.workspace_for(asked)?.to_string_lossy()),
        };
        let folder = self.scratch_folder(&key)?;
        Ok(Placement { folder, mode: Mode::Ask, unattended: false, scratch: true, per_conversation: false })
    }

    /// A new private folder for a new conversation below `conversation_folders`.
    pub fn new_conversation_folder(&self) -> Result<PathBuf> {
        let root =
            self.conversation_folders.as_ref().ok_or_else(|| BridgeError::internal("no conversation folders"))?;
        private_dir(&root.join(format!("c-{:016x}", crate::util::ids::random_u64())))
            .map_err(|e| BridgeError::internal(format!("cannot create a conversation folder: {e}")))
    }

    fn scratch_folder(&self, key: &str) -> Result<PathBuf> {
        let root = match &self.scratch {
            Scratch::Under(dir) => dir.clone(),
            Scratch::Temporary(dir) => dir.path().to_path_buf(),
        };
        private_dir(&root.join(format!("w-{:016x}", fnv1a(key))))
            .map_err(|e| BridgeError::internal(format!("cannot create a scratch folder under {}: {e}", root.display())))
    }

    /// Where what `doctor --probe` learnt about the agent program's builds is kept (in the state
    /// folder; none without one).
    pub fn probe_notes(&self) -> Option<PathBuf> {
        self.state_dir.as_ref().map(|d| d.join("cli-probe.json"))
    }

    /// Where the agent's own subcommands (`--version`, `status`, `models`) run: a private folder
    /// in the state folder, so they never read a user's folder, trusted or not.
    pub fn neutral_folder(&self) -> Result<PathBuf> {
        self.scratch_folder("agent-commands")
    }

    pub fn scratch_root(&self) -> &Path {
        match &self.scratch {
            Scratch::Under(dir) => dir,
            Scratch::Temporary(dir) => dir.path(),
        }
    }

    pub fn idle(&self) -> Duration {
        Duration::from_secs(self.settings.idle_timeout_seconds)
    }

    pub fn turn_limit(&self) -> Duration {
        Duration::from_secs(self.settings.request_timeout_seconds)
    }

    /// The user's folder for a turn: the requested one (which must be one of the configured
    /// folders or inside one, when folders were given), else the first folder.
    fn workspace_for(&self, requested: Option<&str>) -> Result<PathBuf> {
        let path = match requested.filter(|w| !w.is_empty()) {
            Some(w) => PathBuf::from(w),
            None => match self.workspaces.first() {
                Some(w) => w.clone(),
                None => return Err(BridgeError::invalid_params("no workspace folder")),
            },
        };
        let path = dunce::canonicalize(&path)
            .map_err(|_| BridgeError::invalid_params(format!("workspace folder does not exist: {}", path.display())))?;
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
