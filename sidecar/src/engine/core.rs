//! The engine's state, set up once per front door: configuration, the backend, sessions, the
//! model cache, the turn slots, and the background work (model checks) it started. The
//! operations live beside it: a turn in `turn/`, the model list in `models.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use super::config::Config;
use super::lanes::Lanes;
use super::model_cache::ModelCache;
use super::sessions::SessionSummary;
use super::sessions::{ClearScope, Clock, SessionStore, SystemClock};
use super::slots::Slots;
use crate::backend::{Backend, Located, Warm};
use crate::backend::{BackendStatus, CliStatus};
use crate::error::Result;
use crate::util::sync::lock;
use crate::vocab::ModelInfo;

/// The sidecar's state as `status` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub version: String,
    pub cli: CliStatus,
    pub backend: BackendStatus,
    pub sessions: usize,
    pub in_flight: usize,
}

pub struct Engine {
    pub(super) config: Config,
    pub(super) backend: Arc<dyn Backend>,
    /// Shared with the blocking threads that read and write its file (`session_io.rs`).
    pub(super) sessions: Arc<Mutex<SessionStore>>,
    pub(super) model_cache: ModelCache,
    pub(super) slots: Slots,
    pub(super) in_flight: AtomicUsize,
    /// One turn at a time per conversation.
    pub(super) lanes: Lanes,
    /// A changed model list found by a background check (`models/changed` on stdio).
    pub(super) model_changes: broadcast::Sender<Vec<ModelInfo>>,
    /// Work that outlives the call that started it; aborted at shutdown so it cannot hold the
    /// sidecar's exit.
    background: Mutex<tokio::task::JoinSet<()>>,
    /// Turns waiting inside calls of the client's tools (client-tools mode, hosted tools).
    pub(super) parking: super::tools::parked::Parking<super::turn::state::ParkedState>,
}

impl Engine {
    pub fn new(config: Config, backend: Arc<dyn Backend>) -> Arc<Engine> {
        Self::with_clock(config, backend, Arc::new(SystemClock))
    }

    /// [`Engine::new`] with a clock of the caller's (tests move it by hand).
    pub fn with_clock(config: Config, backend: Arc<dyn Backend>, clock: Arc<dyn Clock>) -> Arc<Engine> {
        let state = config.state_dir.clone();
        let o = &config.settings;
        let sessions = SessionStore::open_for(
            config.door,
            state.as_ref().map(|d| d.join("sessions.json")),
            clock,
            o.session_ttl_minutes,
            o.max_sessions,
        );
        Arc::new(Engine {
            model_cache: ModelCache::open(state.as_ref().map(|d| d.join("models.json"))),
            sessions: Arc::new(Mutex::new(sessions)),
            slots: Slots::new(o.max_concurrent),
            in_flight: AtomicUsize::new(0),
            lanes: Lanes::default(),
            model_changes: broadcast::channel(4).0,
            background: Mutex::new(tokio::task::JoinSet::new()),
            parking: Default::default(),
            backend,
            config,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Find the agent and prepare what the first turn in each of `workspaces` will need, in the
    /// folder that turn will really run in: never a folder the user has not trusted (an
    /// untrusted window's turns run in a scratch folder of its own, and so does its warm-up: a
    /// session opened ahead in the user's folder would have the CLI read and trust its
    /// `.cursor/` before anybody typed a word).
    pub async fn warm_up(&self, workspaces: &[std::path::PathBuf]) -> Result<Located> {
        let located = self.backend.locate().await?;
        let mut warmed: Vec<std::path::PathBuf> = Vec::new();
        for w in workspaces {
            let Some(folder) = w.to_str() else { continue };
            let Ok(place) = self.config.placement(Some(folder), crate::vocab::Mode::Ask) else { continue };
            if !place.per_conversation && !warmed.contains(&place.folder) {
                warmed.push(place.folder.clone());
                self.backend.warm(Warm::Workspace(place.folder));
            }
        }
        Ok(located)
    }

    pub async fn sessions(&self) -> Vec<SessionSummary> {
        self.refresh_sessions().await;
        lock(&self.sessions).summaries()
    }

    pub fn session_count(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Forget sessions (one, this process's, or every sidecar's): a cleared conversation's next
    /// turn starts a new chat with the history replayed. On disk when this returns.
    pub async fn clear_sessions(&self, scope: ClearScope<'_>) -> usize {
        // `All` counts what the other sidecars have too.
        self.refresh_sessions().await;
        let (cleared, write) = lock(&self.sessions).clear_in_memory(scope);
        if let Some(write) = write {
            self.save_sessions(write).await;
        }
        tracing::info!(cleared, ?scope, "sessions cleared");
        cleared
    }

    /// Remove per-conversation folders (`serve` without `--workspace`) that no session points to
    /// any more (expired, cleared, or never recorded) and that nothing touched for `idle`: a
    /// conversation's folder lives as long as its session. Returns how many went.
    pub fn sweep_conversation_folders(&self, idle: std::time::Duration) -> usize {
        let Some(root) = self.config.conversation_folders.clone() else { return 0 };
        let kept: std::collections::HashSet<std::path::PathBuf> =
            lock(&self.sessions).workspaces().into_iter().map(std::path::PathBuf::from).collect();
        let Ok(entries) = std::fs::read_dir(&root) else { return 0 };
        let mut removed = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            let idle_long = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= idle);
            if path.is_dir() && idle_long && !kept.contains(&path) && std::fs::remove_dir_all(&path).is_ok() {
                removed += 1;
            }
        }
        if removed > 0 {
            tracing::info!(removed, "removed conversation folders no session uses");
        }
        removed
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// What `status` reports, but the log file (the front door knows where its log goes).
    pub async fn status(&self) -> Status {
        let cli = self.backend.health().await;
        Status {
            version: env!("CARGO_PKG_VERSION").into(),
            cli,
            backend: self.backend.status(),
            sessions: self.session_count(),
            in_flight: self.in_flight(),
        }
    }

    pub(super) fn spawn_background(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut set = lock(&self.background);
        while set.try_join_next().is_some() {}
        set.spawn(work);
    }

    /// Stop background work and everything the backend prepared ahead (turns in flight are the
    /// caller's: dropping them stops them).
    pub fn shutdown(&self) {
        lock(&self.background).abort_all();
        self.parking.clear();
        self.backend.shutdown();
    }
}
