//! The model list, cached: the CLI takes seconds to list models and the editor asks often. The
//! cache lives in memory and in a small file in the state folder, so a restarted sidecar answers at
//! once from the file and then checks with the CLI in the background (stale-while-revalidate; the
//! caller tells the client when the list changed). `refresh` asks the CLI again. Concurrent
//! fetches share one CLI call.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::Result;
use crate::vocab::ModelInfo;

pub struct ModelCache {
    cached: Mutex<Option<Vec<ModelInfo>>>,
    fetching: tokio::sync::Mutex<()>,
    /// Bumped by every completed fetch.
    generation: AtomicU64,
    /// The cache came from disk and the CLI has not been asked since this process started.
    unverified: AtomicBool,
    path: Option<PathBuf>,
}

impl ModelCache {
    pub fn open(path: Option<PathBuf>) -> Self {
        let cached = path
            .as_deref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice::<Vec<ModelInfo>>(&b).ok())
            .filter(|models| !models.is_empty());
        ModelCache {
            unverified: AtomicBool::new(cached.is_some()),
            cached: Mutex::new(cached),
            fetching: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
            path,
        }
    }

    /// True once, for the first caller served from a cache read from disk: that caller should
    /// revalidate it in the background.
    pub fn take_unverified(&self) -> bool {
        self.unverified.swap(false, Ordering::SeqCst)
    }

    pub fn cached(&self) -> Option<Vec<ModelInfo>> {
        self.cached.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The cached list, or a fresh one from `fetch` when there is none or `refresh` is set.
    pub async fn list<F, Fut>(&self, refresh: bool, fetch: F) -> Result<Vec<ModelInfo>>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Vec<ModelInfo>>>,
    {
        if !refresh {
            if let Some(models) = self.cached() {
                return Ok(models);
            }
        }
        let generation = self.generation.load(Ordering::SeqCst);
        let _guard = self.fetching.lock().await;
        // Someone else fetched while we waited: their answer is as fresh as ours would be.
        if self.generation.load(Ordering::SeqCst) != generation {
            if let Some(models) = self.cached() {
                return Ok(models);
            }
        }
        let models = fetch().await?;
        self.unverified.store(false, Ordering::SeqCst);
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) = Some(models.clone());
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.save(&models);
        Ok(models)
    }

    fn save(&self, models: &[ModelInfo]) {
        let Some(path) = &self.path else { return };
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, serde_json::to_vec(models)?)?;
            std::fs::rename(&tmp, path)
        };
        if let Err(e) = write() {
            tracing::warn!(path = %path.display(), error = %e, "could not save the model cache");
        }
    }
}
