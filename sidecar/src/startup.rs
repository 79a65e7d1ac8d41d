//! What the front doors (stdio, `serve`, `doctor`) set up before serving and tear down after:
//! logging, the panic hook, the subreaper flag, the async runtime, and the engine itself.

use std::path::PathBuf;
use std::sync::Arc;

use crate::backend::{process, select, Backend};
use crate::engine::{Config, Engine};
use crate::error::BridgeError;
use crate::logging::{self, Logging};
use crate::util::state_dir;

/// Where the sidecar keeps its files.
#[derive(Debug, Clone)]
pub struct Paths {
    pub state_dir: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
}

pub const ENV_STATE_DIR: &str = "CURSOR_BRIDGE_STATE_DIR";

impl Paths {
    /// `CURSOR_BRIDGE_STATE_DIR`, else the platform's state folder with `cursor-bridge/` appended
    /// (`util/state_dir.rs`: Linux `~/.local/state`, macOS Application Support), and what choosing
    /// it moved.
    pub fn state_dir_from_env() -> (Option<PathBuf>, state_dir::Moved) {
        state_dir::choose(std::env::var_os(ENV_STATE_DIR).filter(|v| !v.is_empty()).map(PathBuf::from))
    }
}

/// The engine of a front door, made the same way by all three: the door decides its engine's
/// `config` and its backend's `settings`; the folders the backend needs from the engine's state
/// (the private folder its subcommands run in, the probe's notes) are filled in here, and `make`
/// builds the backend (`select::backend`, or a test's).
pub fn engine(
    config: Config,
    settings: select::BackendSettings,
    make: impl FnOnce(select::BackendSettings) -> Arc<dyn Backend>,
) -> Result<Arc<Engine>, BridgeError> {
    let settings = select::BackendSettings {
        neutral_dir: Some(config.neutral_folder()?),
        probe_notes: config.probe_notes(),
        ..settings
    };
    Ok(Engine::new(config, make(settings)))
}

pub struct Started {
    pub paths: Paths,
    pub runtime: tokio::runtime::Runtime,
    logging: Logging,
}

/// Start logging and the runtime; `Err` is the exit code (the reason is already on stderr).
pub fn start() -> Result<Started, i32> {
    let (state_dir, moved) = Paths::state_dir_from_env();
    let logging = logging::init(state_dir.as_deref());
    match moved {
        state_dir::Moved::Nothing => {}
        state_dir::Moved::From(old) => {
            tracing::info!(from = %old.display(), to = ?state_dir, "moved the state folder out of Caches")
        }
        state_dir::Moved::KeptAt { old, error } => tracing::warn!(
            folder = %old.display(),
            %error,
            "cannot move the state folder out of Caches; using it where it is"
        ),
    }
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

/// Resolves with the signal's name when the sidecar is asked to stop, for both front doors to end
/// as at end of input (every child stopped, none orphaned): SIGTERM (a service manager), SIGINT
/// (Ctrl-C) and SIGHUP (the terminal closed) on Unix; Ctrl-C, or the console closing, logging off
/// or the system shutting down, on Windows. A SIGHUP ignored when the process started (`nohup`)
/// stays ignored. A signal that cannot be listened for is logged and left to its default action.
pub async fn termination_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        fn listen(kind: SignalKind, name: &'static str) -> Option<Signal> {
            signal(kind).map_err(|e| tracing::warn!(signal = name, error = %e, "cannot listen for a signal")).ok()
        }
        async fn next(signal: &mut Option<Signal>) {
            // `None` from `recv`: the runtime is going away; that is not a signal.
            let got = match signal {
                Some(s) => s.recv().await.is_some(),
                None => false,
            };
            if !got {
                std::future::pending::<()>().await;
            }
        }
        let hangup = if hangup_ignored_at_start() {
            tracing::info!("SIGHUP was ignored when the sidecar started (nohup); it stays ignored");
            None
        } else {
            listen(SignalKind::hangup(), "SIGHUP")
        };
        let (mut term, mut int, mut hup) =
            (listen(SignalKind::terminate(), "SIGTERM"), listen(SignalKind::interrupt(), "SIGINT"), hangup);
        tokio::select! {
            _ = next(&mut term) => "SIGTERM",
            _ = next(&mut int) => "SIGINT",
            _ = next(&mut hup) => "SIGHUP",
        }
    }
    #[cfg(windows)]
    {
        use tokio::signal::windows;
        // Each listener type is its own; `recv` is the same on all of them.
        macro_rules! next {
            ($listen:expr) => {
                async {
                    let got = match $listen {
                        Ok(mut s) => s.recv().await.is_some(),
                        Err(_) => false,
                    };
                    if !got {
                        std::future::pending::<()>().await;
                    }
                }
            };
        }
        tokio::select! {
            _ = next!(windows::ctrl_c()) => "Ctrl-C",
            _ = next!(windows::ctrl_break()) => "Ctrl-Break",
            _ = next!(windows::ctrl_close()) => "console closed",
            _ = next!(windows::ctrl_logoff()) => "logoff",
            _ = next!(windows::ctrl_shutdown()) => "system shutdown",
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            Err(_) => std::future::pending().await,
        }
    }
}

/// Whether SIGHUP was ignored when the process started. Read once, before this module's own
/// handler (installed by the first [`termination_signal`]) replaces the disposition.
#[cfg(unix)]
fn hangup_ignored_at_start() -> bool {
    static IGNORED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *IGNORED.get_or_init(|| {
        // SAFETY: sigaction(2) with no new action only reads the current one into `old`.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
        }
    })
}
