//! One stdio connection's state: what exists before `initialize` (the outbox, the folders) and
//! the engine `initialize` creates, plus the connection's own background work (forwarding
//! `models/changed`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::outbox::Outbox;
use crate::backend::{select, Backend};
use crate::engine::Engine;
use crate::error::{BridgeError, Result};
use crate::startup::Paths;
use crate::util::sync::lock;

/// Builds the backend `initialize` asks for (tests substitute a scripted one).
pub type BackendFactory = Box<dyn Fn(select::BackendSettings) -> Arc<dyn Backend> + Send + Sync>;

pub struct Connection {
    pub outbox: Outbox,
    pub paths: Paths,
    make_backend: BackendFactory,
    engine: OnceLock<Arc<Engine>>,
    shutting_down: AtomicBool,
    background: Mutex<tokio::task::JoinSet<()>>,
}

impl Connection {
    pub fn new(outbox: Outbox, paths: Paths) -> Self {
        Self::with_backend(outbox, paths, Box::new(select::backend))
    }

    pub fn with_backend(outbox: Outbox, paths: Paths, make_backend: BackendFactory) -> Self {
        Connection {
            outbox,
            paths,
            make_backend,
            engine: OnceLock::new(),
            shutting_down: AtomicBool::new(false),
            background: Mutex::new(tokio::task::JoinSet::new()),
        }
    }

    pub fn backend(&self, settings: select::BackendSettings) -> Arc<dyn Backend> {
        (self.make_backend)(settings)
    }

    pub fn is_initialized(&self) -> bool {
        self.engine.get().is_some()
    }

    pub fn engine(&self) -> Result<&Arc<Engine>> {
        self.engine.get().ok_or_else(BridgeError::not_initialized)
    }

    pub fn set_engine(&self, engine: Arc<Engine>) -> Result<()> {
        self.engine.set(engine).map_err(|_| BridgeError::invalid_params("`initialize` was already called"))
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    pub fn spawn_background(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut set = lock(&self.background);
        while set.try_join_next().is_some() {}
        set.spawn(work);
    }

    /// Stop background work here and in the engine (spares, prefetches, model checks).
    pub fn shutdown_background(&self) {
        lock(&self.background).abort_all();
        if let Some(engine) = self.engine.get() {
            engine.shutdown();
        }
    }
}
