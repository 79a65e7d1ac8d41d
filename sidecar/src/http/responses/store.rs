//! Responses kept for `previous_response_id`: the conversation up to and including each stored
//! response (without its `instructions`, which OpenAI never carries over), in the engine's
//! messages. A request that names one is that history plus its own `input`, so the engine's
//! history match finds the same Cursor session (or the parked turn its tool outputs continue),
//! exactly as when a client re-sends everything (`store: false`, Codex's way).
//!
//! In memory only, bounded, and per client key: a restarted server answers
//! `previous_response_not_found`, and the client re-sends its input.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::util::sync::lock;
use crate::vocab::ChatMessage;

/// Stored responses at most (the oldest go first).
const CAPACITY: usize = 1024;
/// A response older than this is forgotten (the session it continues has expired by then too).
const KEEP: Duration = Duration::from_secs(6 * 3600);

struct Stored {
    owner: String,
    history: Vec<ChatMessage>,
    at: Instant,
}

#[derive(Default)]
pub struct ResponseStore {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_id: HashMap<String, Stored>,
    order: VecDeque<String>,
}

impl ResponseStore {
    pub fn put(&self, id: String, owner: String, history: Vec<ChatMessage>) {
        let mut inner = lock(&self.inner);
        while inner.order.len() >= CAPACITY {
            if let Some(old) = inner.order.pop_front() {
                inner.by_id.remove(&old);
            }
        }
        inner.order.push_back(id.clone());
        inner.by_id.insert(id, Stored { owner, history, at: Instant::now() });
    }

    /// The history up to `id`, when `owner` stored it and it is still kept.
    pub fn get(&self, id: &str, owner: &str) -> Option<Vec<ChatMessage>> {
        let inner = lock(&self.inner);
        let stored = inner.by_id.get(id)?;
        (stored.owner == owner && stored.at.elapsed() < KEEP).then(|| stored.history.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Role;

    #[test]
    fn a_response_is_found_only_by_its_owner_and_the_oldest_go_first() {
        let store = ResponseStore::default();
        store.put("resp_a".into(), "key-1".into(), vec![ChatMessage::new(Role::User, "hi")]);
        assert_eq!(store.get("resp_a", "key-1").unwrap()[0].text, "hi");
        assert!(store.get("resp_a", "key-2").is_none());
        assert!(store.get("resp_b", "key-1").is_none());
        for i in 0..CAPACITY {
            store.put(format!("resp_{i}"), "key-1".into(), Vec::new());
        }
        assert!(store.get("resp_a", "key-1").is_none());
        assert!(store.get(&format!("resp_{}", CAPACITY - 1), "key-1").is_some());
    }
}
