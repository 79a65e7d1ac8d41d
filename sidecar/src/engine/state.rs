//! Sidecar state: what exists before `initialize` (the outbox, folders) and what `initialize`
//! creates (options, the CLI, models, sessions, the process pool, prefetched chat ids).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::Semaphore;

use crate::backend::cursor_print::chat_ids::ChatIdCache;
use crate::backend::cursor_print::args::{child_env, ChildEnv};
use crate::backend::cursor_print::discovery::{self, CliCommand, DiscoveryError, Lookup};
use crate::backend::cursor_print::{commands, INSTALL_HINT};
use crate::error::{BridgeError, Result};
use crate::engine::catalog::ModelCatalog;
use crate::protocol::{ErrorKind, InitializeParams, Options, Secret};
use crate::stdio::dispatch::Outbox;
use crate::engine::sessions::{Clock, SessionStore, SystemClock};
use crate::backend::cursor_print::spares::Spares;

/// Where the sidecar keeps its files.
#[derive(Debug, Clone)]
pub struct Paths {
    pub state_dir: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
}

pub const ENV_STATE_DIR: &str = "CURSOR_BRIDGE_STATE_DIR";

impl Paths {
    /// `CURSOR_BRIDGE_STATE_DIR`, else the platform state folder (Linux `~/.local/state`), else the
    /// cache folder, each with `cursor-bridge/` appended.
    pub fn state_dir_from_env() -> Option<PathBuf> {
        std::env::var_os(ENV_STATE_DIR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| dirs::state_dir().or_else(dirs::cache_dir).map(|d| d.join("cursor-bridge")))
    }
}

pub struct App {
    pub outbox: Outbox,
    pub paths: Paths,
    ready: OnceLock<Arc<Ready>>,
    shutting_down: AtomicBool,
    clock: Arc<dyn Clock>,
    /// Work that outlives the request that started it (a background model check); aborted at
    /// shutdown so it cannot hold the sidecar's exit.
    background: Mutex<tokio::task::JoinSet<()>>,
}

/// Everything `initialize` sets up.
pub struct Ready {
    pub options: Options,
    pub workspaces: Vec<PathBuf>,
    api_key: Option<Secret>,
    cli_setting: Option<String>,
    cli: tokio::sync::Mutex<Option<CliCommand>>,
    pub models: ModelCatalog,
    pub sessions: Mutex<SessionStore>,
    pub pool: Semaphore,
    pub chat_ids: ChatIdCache,
    pub spares: Spares,
    pub in_flight: AtomicUsize,
}

impl App {
    pub fn new(outbox: Outbox, paths: Paths) -> Self {
        App {
            outbox,
            paths,
            ready: OnceLock::new(),
            shutting_down: AtomicBool::new(false),
            clock: Arc::new(SystemClock),
            background: Mutex::new(tokio::task::JoinSet::new()),
        }
    }

    pub fn is_initialized(&self) -> bool {
        self.ready.get().is_some()
    }

    pub fn ready(&self) -> Result<&Arc<Ready>> {
        self.ready.get().ok_or_else(BridgeError::not_initialized)
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    pub fn initialize(&self, params: InitializeParams) -> Result<Arc<Ready>> {
        if self.is_initialized() {
            return Err(BridgeError::invalid_params("`initialize` was already called"));
        }
        let o = &params.options;
        if o.max_concurrent == 0 || o.request_timeout_seconds == 0 || o.idle_timeout_seconds == 0 {
            return Err(BridgeError::invalid_params(
                "`maxConcurrent`, `requestTimeoutSeconds` and `idleTimeoutSeconds` must be at least 1",
            ));
        }
        let workspaces = params
            .workspace_folders
            .iter()
            .map(PathBuf::from)
            .map(|p| p.canonicalize().unwrap_or(p))
            .collect();
        let state = self.paths.state_dir.clone();
        let ready = Arc::new(Ready {
            options: params.options.clone(),
            workspaces,
            api_key: params.api_key.clone().filter(|k| !k.expose().is_empty()),
            cli_setting: params.cli_path.clone().filter(|p| !p.trim().is_empty()),
            cli: tokio::sync::Mutex::new(None),
            models: ModelCatalog::open(state.as_ref().map(|d| d.join("models.json"))),
            sessions: Mutex::new(SessionStore::open(
                state.as_ref().map(|d| d.join("sessions.json")),
                self.clock.clone(),
                params.options.session_ttl_minutes,
                params.options.max_sessions,
            )),
            pool: Semaphore::new(params.options.max_concurrent),
            chat_ids: ChatIdCache::default(),
            spares: Spares::new(
                params.options.spares,
                std::time::Duration::from_secs(params.options.spare_idle_seconds.max(1)),
            ),
            in_flight: AtomicUsize::new(0),
        });
        if ready.spares.enabled() {
            // Stop spares that sat idle too long; the task ends with the sidecar.
            let weak = Arc::downgrade(&ready);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
                loop {
                    tick.tick().await;
                    match weak.upgrade() {
                        Some(ready) => ready.spares.expire(),
                        None => break,
                    }
                }
            });
        }
        self.ready.set(ready.clone()).map_err(|_| BridgeError::invalid_params("`initialize` was already called"))?;
        Ok(ready)
    }

    pub fn spawn_background(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut set = self.background.lock().unwrap_or_else(|p| p.into_inner());
        while set.try_join_next().is_some() {}
        set.spawn(work);
    }

    pub fn shutdown_background(&self) {
        self.background.lock().unwrap_or_else(|p| p.into_inner()).abort_all();
        if let Some(ready) = self.ready.get() {
            ready.chat_ids.stop();
            ready.spares.clear();
        }
    }
}

impl Ready {
    pub fn child_env(&self) -> ChildEnv {
        child_env(self.api_key.as_ref().map(Secret::expose))
    }

    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// The CLI to run, found once and remembered; looked up again after it went missing.
    pub async fn cli(&self) -> Result<CliCommand> {
        let mut cached = self.cli.lock().await;
        if let Some(cli) = cached.as_ref() {
            if cli.program.is_file() {
                return Ok(cli.clone());
            }
        }
        let setting = self.cli_setting.clone();
        let env = self.child_env();
        let handle = tokio::runtime::Handle::current();
        let found = tokio::task::spawn_blocking(move || {
            let version_of = |p: &Path| handle.block_on(commands::version(&CliCommand::plain(p.to_path_buf()), &env));
            discovery::discover(&Lookup {
                configured: setting.as_deref(),
                env_path: std::env::var_os(discovery::ENV_CLI_PATH),
                path_var: std::env::var_os("PATH"),
                home: dirs::home_dir(),
                cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
                version_of: &version_of,
            })
        })
        .await
        .map_err(|e| BridgeError::internal(format!("CLI discovery failed: {e}")))?;
        match found {
            Ok(cli) => {
                tracing::info!(cli = %cli.display.display(), "found the Cursor CLI");
                *cached = Some(cli.clone());
                Ok(cli)
            }
            Err(e) => Err(not_found_error(&e)),
        }
    }

    /// The workspace for a turn: the requested one (which must be one of the initialize folders or
    /// inside one, when folders were given), else the first folder, else the sidecar's cwd.
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

fn not_found_error(e: &DiscoveryError) -> BridgeError {
    match e {
        DiscoveryError::ConfiguredPathMissing { path, source } => {
            let (what, fix) = match source {
                discovery::Source::EnvVar => (
                    format!("`{}`", discovery::ENV_CLI_PATH),
                    "Fix or unset that environment variable.",
                ),
                _ => ("the configured CLI path".to_string(), "Fix the `cursorBridge.cliPath` setting, or clear it to search PATH."),
            };
            BridgeError::new(ErrorKind::CliNotFound, format!("The Cursor CLI was not found at {what}"))
                .hint(fix)
                .detail(path.display().to_string())
        }
        DiscoveryError::NotFound { searched } => {
            BridgeError::new(ErrorKind::CliNotFound, "The Cursor CLI (`cursor-agent`) is not installed or not on PATH")
                .hint(INSTALL_HINT)
                .detail(format!("searched: {}", searched.join(", ")))
        }
    }
}
