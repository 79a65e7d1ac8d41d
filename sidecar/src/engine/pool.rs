//! The process pool: at most `maxConcurrent` turns run at once, later ones queue in arrival order
//! (tokio's semaphore is fair). How long a turn waited is logged, so a queue is visible.

use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::error::{BridgeError, Result};

/// A wait longer than this is worth a line at info level.
const NOTABLE_WAIT: Duration = Duration::from_millis(100);

pub struct Pool {
    slots: Semaphore,
}

impl Pool {
    pub fn new(size: usize) -> Self {
        Pool { slots: Semaphore::new(size.max(1)) }
    }

    /// Wait for a slot; the turn runs while the permit lives.
    pub async fn slot(&self, turn: &str) -> Result<SemaphorePermit<'_>> {
        let started = tokio::time::Instant::now();
        let permit = self.slots.acquire().await.map_err(|_| BridgeError::internal("process pool closed"))?;
        let waited = started.elapsed();
        if waited >= NOTABLE_WAIT {
            tracing::info!(turn, waited_ms = waited.as_millis() as u64, "turn waited for a free slot");
        }
        Ok(permit)
    }

    pub fn free(&self) -> usize {
        self.slots.available_permits()
    }
}
