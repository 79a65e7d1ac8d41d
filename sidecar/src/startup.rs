//! What both front doors (stdio and `serve`) set up before serving and tear down after: logging,
//! the panic hook, the subreaper flag, the async runtime.

use std::path::PathBuf;

use crate::backend::process;
use crate::logging::{self, Logging};

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

pub struct Started {
    pub paths: Paths,
    pub runtime: tokio::runtime::Runtime,
    logging: Logging,
}

/// Start logging and the runtime; `Err` is the exit code (the reason is already on stderr).
pub fn start() -> Result<Started, i32> {
    let state_dir: Option<PathBuf> = Paths::state_dir_from_env();
    let logging = logging::init(state_dir.as_deref());
    std::panic::set_hook(Box::new(|info| {
        // A panic inside a request is answered and survived; log it where people look.
        tracing::error!(panic = %info, "panic");
    }));
    process::become_subreaper();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| {
        eprintln!("cursor-bridge: cannot start the async runtime: {e}");
        1
    })?;
    let paths = Paths { state_dir, log_file: logging.file.clone() };
    Ok(Started { paths, runtime, logging })
}

impl Started {
    /// Stop the runtime without waiting for blocked readers (dropping its tasks drops their turns,
    /// which kills their CLI process groups), end any orphan, flush the log.
    pub fn finish(self, code: i32) -> i32 {
        tracing::info!(code, "cursor-bridge exiting");
        self.runtime.shutdown_timeout(std::time::Duration::from_millis(500));
        process::sweep_orphans();
        drop(self.logging);
        code
    }
}
