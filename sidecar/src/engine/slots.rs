//! The turn slots: at most `maxConcurrent` turns run at once, later ones queue in arrival order
//! (tokio's semaphore is fair). How long a turn waited is logged, so a queue is visible.
//!
//! A slot counts an agent at work, not an agent process: a turn parked on the client's tools
//! (`tools/parked.rs`) gives its slot back while the client runs them ([`Held`]), so a client's
//! slow tool (a person confirming a terminal command) never holds up every other conversation.
//! When the results come (or the call is answered "pending") the turn takes a free slot again if
//! there is one, and never waits for one: its agent is in the middle of a turn, waiting inside a
//! tool call that has a deadline of its own, and a result it gets too late is a command that
//! runs twice. So for a moment such a turn may run beyond `maxConcurrent`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{BridgeError, Result};
use crate::util::sync::lock;

/// A wait longer than this is worth a line at info level.
const NOTABLE_WAIT: Duration = Duration::from_millis(100);

pub struct Slots {
    slots: Arc<Semaphore>,
}

impl Slots {
    pub fn new(size: usize) -> Self {
        Slots { slots: Arc::new(Semaphore::new(size.max(1))) }
    }

    /// Wait for a slot; the turn runs while the permit lives.
    pub async fn slot(&self, turn: &str) -> Result<OwnedSemaphorePermit> {
        let started = tokio::time::Instant::now();
        let permit =
            self.slots.clone().acquire_owned().await.map_err(|_| BridgeError::internal("the turn slots are closed"))?;
        let waited = started.elapsed();
        if waited >= NOTABLE_WAIT {
            tracing::info!(turn, waited_ms = waited.as_millis() as u64, "turn waited for a free slot");
        }
        Ok(permit)
    }

    /// A slot if one is free now, without waiting or queueing.
    pub fn try_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().try_acquire_owned().ok()
    }

    pub fn free(&self) -> usize {
        self.slots.available_permits()
    }
}

/// The slot of a turn that runs in a task of its own (hosted tools), shared with the engine so
/// it can be given back while the turn is parked and taken again when it goes on.
#[derive(Clone, Default)]
pub struct Held(Arc<Mutex<Option<OwnedSemaphorePermit>>>);

impl Held {
    pub fn hold(&self, permit: OwnedSemaphorePermit) {
        *lock(&self.0) = Some(permit);
    }

    /// Give the slot back (nothing happens when none is held).
    pub fn release(&self) {
        lock(&self.0).take();
    }
}
