//! Sessions map a conversation to a Cursor chat id, so a follow-up turn resumes the CLI chat
//! (`--resume`) instead of starting over. Identity, in order: the client's conversation id, a
//! session id the client found in its history, then the sequence of user requests (same mode and
//! workspace). Idle sessions expire (TTL), the least recently used go first past the cap (LRU), and
//! the store is persisted to a small JSON file so a sidecar restart keeps conversations. The clock
//! is injected so TTL tests need no sleeping.
//!
//! Only hashes of user requests are kept, never their text: the file holds no prompt.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::protocol::{Mode, SessionSummary};

pub trait Clock: Send + Sync {
    fn now_ms(&self) -> u64;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

/// A clock tests move by hand.
#[derive(Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn new(start_ms: u64) -> Self {
        ManualClock(AtomicU64::new(start_ms))
    }
    pub fn advance_ms(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Stable across Rust releases (std's hasher is not), so persisted sessions keep matching.
pub fn request_hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.trim().as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub chat_id: String,
    #[serde(default)]
    pub conversation_id: Option<String>,
    pub mode: Mode,
    pub model: String,
    pub workspace: String,
    /// Hashes of the user requests the CLI chat has seen, in order.
    pub requests: Vec<u64>,
    pub turns: u32,
    pub created_ms: u64,
    pub last_used_ms: u64,
}

impl Session {
    pub fn summary(&self) -> SessionSummary {
        SessionSummary {
            session_id: self.id.clone(),
            conversation_id: self.conversation_id.clone(),
            mode: self.mode,
            model: self.model.clone(),
            workspace: self.workspace.clone(),
            turns: self.turns,
            last_used_ms: self.last_used_ms,
        }
    }
}

/// What identifies the conversation of a `chat/send`.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub conversation_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub mode: Mode,
    pub workspace: &'a str,
    /// Hashes of the user requests before the new one.
    pub history: &'a [u64],
}

#[derive(Debug, Clone, PartialEq)]
pub enum Match {
    /// The chat has seen exactly the earlier requests: resume it with the new one.
    Resume(Session),
    /// The conversation is known but its history changed (an edited or retried request): keep the
    /// session id, start a new chat and replay the history into it.
    Diverged(Session),
    /// Nothing to resume.
    New,
}

#[derive(Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    sessions: Vec<Session>,
}

const FILE_VERSION: u32 = 1;

pub struct SessionStore {
    sessions: Vec<Session>,
    clock: Arc<dyn Clock>,
    ttl_ms: u64,
    max: usize,
    path: Option<PathBuf>,
}

impl SessionStore {
    /// Load from `path` (a missing or unreadable file starts empty: sessions are a cache).
    pub fn open(path: Option<PathBuf>, clock: Arc<dyn Clock>, ttl_minutes: u64, max: usize) -> Self {
        let sessions = path
            .as_deref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|bytes| serde_json::from_slice::<StoreFile>(&bytes).ok())
            .filter(|f| f.version == FILE_VERSION)
            .map(|f| f.sessions)
            .unwrap_or_default();
        let mut store = SessionStore {
            sessions,
            clock,
            ttl_ms: ttl_minutes.saturating_mul(60_000),
            max: max.max(1),
            path,
        };
        store.prune();
        store
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    fn prune(&mut self) -> bool {
        let now = self.clock.now_ms();
        let before = self.sessions.len();
        let ttl = self.ttl_ms;
        self.sessions.retain(|s| now.saturating_sub(s.last_used_ms) <= ttl);
        if self.sessions.len() > self.max {
            self.sessions.sort_by_key(|s| std::cmp::Reverse(s.last_used_ms));
            self.sessions.truncate(self.max);
        }
        self.sessions.len() != before
    }

    pub fn find(&mut self, q: &Lookup<'_>) -> Match {
        if self.prune() {
            self.persist();
        }
        let by_identity = q
            .conversation_id
            .and_then(|c| {
                self.sessions
                    .iter()
                    .filter(|s| s.conversation_id.as_deref() == Some(c) && s.workspace == q.workspace)
                    .max_by_key(|s| s.last_used_ms)
            })
            .or_else(|| q.session_id.and_then(|id| self.sessions.iter().find(|s| s.id == id)));
        if let Some(s) = by_identity {
            return if s.requests == q.history { Match::Resume(s.clone()) } else { Match::Diverged(s.clone()) };
        }
        if q.history.is_empty() {
            return Match::New;
        }
        self.sessions
            .iter()
            .filter(|s| s.mode == q.mode && s.workspace == q.workspace && s.requests == q.history)
            .max_by_key(|s| s.last_used_ms)
            .map(|s| Match::Resume(s.clone()))
            .unwrap_or(Match::New)
    }

    /// Record a completed turn: insert or update the session, then enforce the cap and persist.
    pub fn record(&mut self, mut session: Session) {
        session.last_used_ms = self.clock.now_ms();
        match self.sessions.iter_mut().find(|s| s.id == session.id) {
            Some(existing) => *existing = session,
            None => self.sessions.push(session),
        }
        self.prune();
        self.persist();
    }

    pub fn get(&self, id: &str) -> Option<&Session> {
        self.sessions.iter().find(|s| s.id == id)
    }

    pub fn list(&mut self) -> Vec<SessionSummary> {
        if self.prune() {
            self.persist();
        }
        let mut out: Vec<_> = self.sessions.iter().map(Session::summary).collect();
        out.sort_by_key(|s| std::cmp::Reverse(s.last_used_ms));
        out
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    pub fn clear(&mut self, id: Option<&str>) -> usize {
        let before = self.sessions.len();
        match id {
            Some(id) => self.sessions.retain(|s| s.id != id),
            None => self.sessions.clear(),
        }
        let cleared = before - self.sessions.len();
        self.persist();
        cleared
    }

    fn persist(&self) {
        let Some(path) = &self.path else { return };
        if let Err(e) = write_atomically(path, &StoreFile { version: FILE_VERSION, sessions: self.sessions.clone() }) {
            tracing::warn!(path = %path.display(), error = %e, "could not save sessions");
        }
    }
}

fn write_atomically(path: &Path, file: &StoreFile) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec_pretty(file)?)?;
    std::fs::rename(&tmp, path)
}

/// A session id the client can hold on to; not a Cursor chat id (that may change on replay).
pub fn new_session_id() -> String {
    format!("cb-{:016x}", crate::util::ids::random_u64())
}


#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    fn session(id: &str, conv: Option<&str>, mode: Mode, requests: &[&str], used: u64) -> Session {
        Session {
            id: id.into(),
            chat_id: format!("chat-{id}"),
            conversation_id: conv.map(Into::into),
            mode,
            model: "auto".into(),
            workspace: "/w".into(),
            requests: requests.iter().map(|r| request_hash(r)).collect(),
            turns: requests.len() as u32,
            created_ms: used,
            last_used_ms: used,
        }
    }

    fn store(clock: &Arc<ManualClock>, path: Option<PathBuf>) -> SessionStore {
        SessionStore::open(path, clock.clone(), 30, 3)
    }

    fn lookup<'a>(conv: Option<&'a str>, sid: Option<&'a str>, mode: Mode, history: &'a [u64]) -> Lookup<'a> {
        Lookup { conversation_id: conv, session_id: sid, mode, workspace: "/w", history }
    }

    fn hashes(reqs: &[&str]) -> Vec<u64> {
        reqs.iter().map(|r| request_hash(r)).collect()
    }

    /// Data-driven matching cases: (stored sessions, lookup, expected session id + kind).
    #[test]
    fn matching_table() {
        let clock = Arc::new(ManualClock::new(10 * MIN));
        let h_a = hashes(&["a"]);
        let h_ab = hashes(&["a", "b"]);
        let h_x = hashes(&["x"]);
        let table: Vec<(&str, Lookup<'_>, &str)> = vec![
            ("conversation id, same history", lookup(Some("c1"), None, Mode::Agent, &h_a), "resume s1"),
            ("conversation id, other mode still resumes", lookup(Some("c1"), None, Mode::Ask, &h_a), "resume s1"),
            ("conversation id, edited history", lookup(Some("c1"), None, Mode::Agent, &h_x), "diverged s1"),
            ("conversation id, retried last turn", lookup(Some("c1"), None, Mode::Agent, &[]), "diverged s1"),
            ("unknown conversation id, new chat", lookup(Some("zz"), None, Mode::Agent, &[]), "new"),
            ("unknown conversation id falls back to history", lookup(Some("zz"), None, Mode::Ask, &h_ab), "resume s2"),
            ("session id marker", lookup(None, Some("s2"), Mode::Ask, &h_ab), "resume s2"),
            ("history match, same mode", lookup(None, None, Mode::Ask, &h_ab), "resume s2"),
            ("history match, other mode", lookup(None, None, Mode::Plan, &h_ab), "new"),
            ("first message is always new", lookup(None, None, Mode::Agent, &[]), "new"),
            ("no match", lookup(None, None, Mode::Agent, &h_x), "new"),
        ];
        for (name, q, expected) in table {
            let mut s = store(&clock, None);
            s.sessions = vec![
                session("s1", Some("c1"), Mode::Agent, &["a"], 9 * MIN),
                session("s2", None, Mode::Ask, &["a", "b"], 8 * MIN),
            ];
            let got = match s.find(&q) {
                Match::Resume(s) => format!("resume {}", s.id),
                Match::Diverged(s) => format!("diverged {}", s.id),
                Match::New => "new".into(),
            };
            assert_eq!(got, expected, "{name}");
        }
    }

    #[test]
    fn most_recent_history_match_wins() {
        let clock = Arc::new(ManualClock::new(10 * MIN));
        let mut s = store(&clock, None);
        s.sessions = vec![
            session("old", None, Mode::Agent, &["a"], MIN),
            session("new", None, Mode::Agent, &["a"], 2 * MIN),
        ];
        assert!(matches!(s.find(&lookup(None, None, Mode::Agent, &hashes(&["a"]))), Match::Resume(x) if x.id == "new"));
    }

    #[test]
    fn ttl_expires_idle_sessions() {
        let clock = Arc::new(ManualClock::new(0));
        let mut s = store(&clock, None);
        s.record(session("s1", Some("c1"), Mode::Agent, &["a"], 0));
        clock.advance_ms(29 * MIN);
        assert_eq!(s.list().len(), 1);
        clock.advance_ms(2 * MIN);
        assert_eq!(s.list().len(), 0);
        assert_eq!(s.find(&lookup(Some("c1"), None, Mode::Agent, &hashes(&["a"]))), Match::New);
    }

    #[test]
    fn lru_cap_drops_least_recently_used() {
        let clock = Arc::new(ManualClock::new(0));
        let mut s = store(&clock, None);
        for id in ["s1", "s2", "s3"] {
            s.record(session(id, None, Mode::Agent, &[id], 0));
            clock.advance_ms(1000);
        }
        // Touch s1 so s2 becomes the least recently used.
        let s1 = s.get("s1").unwrap().clone();
        s.record(s1);
        clock.advance_ms(1000);
        s.record(session("s4", None, Mode::Agent, &["s4"], 0));
        let ids: Vec<_> = s.list().into_iter().map(|x| x.session_id).collect();
        assert_eq!(ids, ["s4", "s1", "s3"]);
    }

    #[test]
    fn persisted_sessions_survive_a_restart_and_hold_no_prompt_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/sessions.json");
        let clock = Arc::new(ManualClock::new(MIN));
        let mut s = store(&clock, Some(path.clone()));
        s.record(session("s1", Some("c1"), Mode::Agent, &["a secret prompt"], 0));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("secret"), "{text}");

        let mut reopened = store(&clock, Some(path.clone()));
        assert!(matches!(
            reopened.find(&lookup(Some("c1"), None, Mode::Agent, &hashes(&["a secret prompt"]))),
            Match::Resume(x) if x.id == "s1"
        ));
        assert_eq!(reopened.clear(None), 1);
        assert_eq!(store(&clock, Some(path)).len(), 0);
    }

    #[test]
    fn corrupt_file_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.json");
        std::fs::write(&path, "{not json").unwrap();
        let clock = Arc::new(ManualClock::new(0));
        assert_eq!(store(&clock, Some(path)).len(), 0);
    }

    #[test]
    fn clear_one() {
        let clock = Arc::new(ManualClock::new(0));
        let mut s = store(&clock, None);
        s.record(session("s1", None, Mode::Agent, &["a"], 0));
        s.record(session("s2", None, Mode::Agent, &["b"], 0));
        assert_eq!(s.clear(Some("s1")), 1);
        assert_eq!(s.clear(Some("nope")), 0);
        assert_eq!(s.len(), 1);
    }
}
