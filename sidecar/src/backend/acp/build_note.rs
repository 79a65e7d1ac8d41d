//! What an ACP backend learnt about one build of its agent (ACP does not start with it; its
//! sessions ignore the client's MCP servers; the catalogue its sessions advertised), kept for a
//! while: a note holds for the build it was taken on (the agent's own build identity, see
//! [`AcpAgent::build_id`](super::backend::AcpAgent::build_id)), until [`REPROBE_AFTER`] has
//! passed, so an updated agent, or the same one later, is tried again.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::util::sync::lock;

/// How long a note holds (after ACP failed to start with a build, `auto` uses print mode for it
/// this long).
pub const REPROBE_AFTER: Duration = Duration::from_secs(30 * 60);

pub struct BuildNote<T> {
    note: Mutex<Option<(String, Instant, T)>>,
}

impl<T: Clone> Default for BuildNote<T> {
    fn default() -> Self {
        BuildNote { note: Mutex::new(None) }
    }
}

impl<T: Clone> BuildNote<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes `what` for `build` (replacing a note on any build).
    pub fn note(&self, build: String, what: T) {
        *lock(&self.note) = Some((build, Instant::now(), what));
    }

    /// Drops the note (what it said no longer holds: ACP started after all).
    pub fn forget(&self) {
        lock(&self.note).take();
    }

    /// The note, while it holds for `build`.
    pub fn get(&self, build: &str) -> Option<T> {
        match &*lock(&self.note) {
            Some((noted, since, what)) if noted == build && since.elapsed() < REPROBE_AFTER => Some(what.clone()),
            _ => None,
        }
    }
}
