//! One turn at a time per conversation. Two turns of one conversation (an SDK retry, a request
//! sent again while the first still runs) must never run two agent processes on one chat: the
//! second waits for the first, then plans again against what the first left (usually a new chat
//! with the history replayed, since its history no longer matches the chat's).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

use crate::util::sync::lock;

#[derive(Default)]
pub struct Lanes {
    lanes: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// Held while a turn runs in its lane.
pub struct InLane {
    _guard: OwnedMutexGuard<()>,
    /// The lane was busy and this turn waited for it.
    pub waited: bool,
}

impl Lanes {
    fn lane(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut lanes = lock(&self.lanes);
        // Lanes nobody holds or waits for are dropped as we go.
        lanes.retain(|_, l| Arc::strong_count(l) > 1);
        lanes.entry(key.to_string()).or_default().clone()
    }

    pub async fn enter(&self, key: &str) -> InLane {
        let lane = self.lane(key);
        match lane.clone().try_lock_owned() {
            Ok(guard) => InLane { _guard: guard, waited: false },
            Err(_) => InLane { _guard: lane.lock_owned().await, waited: true },
        }
    }
}
