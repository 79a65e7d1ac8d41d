//! Sessions map a conversation to the agent's chat id, so a follow-up turn resumes that chat (print
//! mode's `--resume`, an ACP session) instead of starting over. Identity, in order: the client's conversation id, a
//! session id the client found in its history, then the history itself: the user requests and
//! the answers (same mode and workspace, and never a session of another conversation). A chat
//! resumes when the client's history is the chat's, plus requests the chat was given but never
//! completed (a failed or cancelled turn the client kept); those are sent again. A session the
//! client named by its id (the marker in its history) also resumes when the history's beginning
//! was cut off, or there is none (VS Code's Copilot harness: the marker and only what is new).
//!
//! Idle sessions expire (TTL, days by default), the least recently used go first past the cap
//! (LRU). The store is a small JSON file shared by every sidecar of this user (two windows and
//! `serve`): each write merges with what is on disk under a file lock, so one process never
//! undoes another's sessions or Clear Sessions. The clock is injected so TTL tests need no
//! sleeping. Only hashes are kept, never text: the file holds no prompt.

mod clock;
mod session;
mod store;
#[cfg(test)]
mod tests;

pub use clock::{Clock, ManualClock, SystemClock};
pub use session::{CallName, ClearScope, Door, Lookup, Match, Session, MAX_RESUME_FAILURES};
pub use store::{PendingRefresh, PendingWrite, SessionStore, Written};

use crate::vocab::Mode;

/// A session as `sessions/list` (and the HTTP door) describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    pub session_id: String,
    pub conversation_id: Option<String>,
    pub mode: Mode,
    pub model: String,
    pub workspace: String,
    pub turns: u32,
    /// Milliseconds since the Unix epoch.
    pub last_used_ms: u64,
}

/// Stable across Rust releases (std's hasher is not), so persisted sessions keep matching.
pub fn request_hash(text: &str) -> u64 {
    crate::util::text::fnv1a(text.trim())
}

/// An answer's identity: its text without any whitespace, so a client that re-wraps or trims
/// what it was sent still matches. `None` for an answer with no text.
pub fn answer_hash(text: &str) -> Option<u64> {
    let mut h = crate::util::text::Fnv::default();
    h.write_non_whitespace(text);
    h.finish_non_empty()
}

/// A session id the client can hold on to; not the agent's chat id (that may change on replay).
pub fn new_session_id() -> String {
    format!("cb-{:016x}", crate::util::ids::random_u64())
}
