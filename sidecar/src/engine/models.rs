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
        let models = self.with_agent_capabilities(self.model_cache.list(refresh, || self.backend.list_models()).await?);
        if !refresh && self.model_cache.take_unverified() {
            let (engine, served) = (Arc::downgrade(self), models.clone());
            self.spawn_background(async move {
                let Some(engine) = engine.upgrade() else { return };
                match engine.model_cache.list(true, || engine.backend.list_models()).await {
                    Ok(fresh) if engine.with_agent_capabilities(fresh.clone()) != served => {
                        let fresh = engine.with_agent_capabilities(fresh);
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

    /// Whether a model takes images is the agent's to say (ACP's `promptCapabilities.image`), not
    /// the catalogue's: every model of an agent that takes them does.
    fn with_agent_capabilities(&self, mut models: Vec<ModelInfo>) -> Vec<ModelInfo> {
        let images = self.backend.takes_images();
        for model in &mut models {
            model.capabilities.image_input = images;
        }
        models
    }

    /// Lists found by background checks that differ from what was served.
    pub fn watch_models(&self) -> broadcast::Receiver<Vec<ModelInfo>> {
        self.model_changes.subscribe()
    }
}
