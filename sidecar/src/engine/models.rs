//! The model list, from the model cache (`model_cache.rs`: memory, then the file of an earlier
//! run) and checked with the backend in the background when it came from the file, so a picker opens at once and still
//! learns about a changed list.

use std::sync::Arc;

use tokio::sync::broadcast;

use super::core::Engine;
use crate::error::Result;
use crate::vocab::ModelInfo;

impl Engine {
    pub async fn models(self: &Arc<Self>, refresh: bool) -> Result<Vec<ModelInfo>> {
        let models = self.model_cache.list(refresh, || self.backend.list_models()).await?;
        if !refresh && self.model_cache.take_unverified() {
            let (engine, served) = (Arc::downgrade(self), models.clone());
            self.spawn_background(async move {
                let Some(engine) = engine.upgrade() else { return };
                match engine.model_cache.list(true, || engine.backend.list_models()).await {
                    Ok(fresh) if fresh != served => {
                        tracing::info!(models = fresh.len(), "model list changed");
                        let _ = engine.model_changes.send(fresh);
                    }
                    Ok(_) => {}
                    Err(e) => tracing::debug!(error = %e, "background model refresh failed"),
                }
            });
        }
        Ok(models)
    }

    /// Lists found by background checks that differ from what was served.
    pub fn watch_models(&self) -> broadcast::Receiver<Vec<ModelInfo>> {
        self.model_changes.subscribe()
    }
}
