//! Sessions map a conversation to a Cursor chat id, so a follow-up turn resumes the CLI chat
//! (`--resume`) instead of starting over. Identity, in order: the client's conversation id, a
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

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

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

pub trait Clock: Send + Sync {
    fn now_ms(&self) -> u64;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
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
    crate::util::text::fnv1a(text.trim())
}

/// An answer's identity: its text without any whitespace, so a client that re-wraps or trims
/// what it was sent still matches. `None` for an answer with no text.
pub fn answer_hash(text: &str) -> Option<u64> {
    let mut h = crate::util::text::Fnv::default();
    h.write_non_whitespace(text);
    h.finish_non_empty()
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
    /// Hashes of the user requests the CLI chat has completed, in order.
    pub requests: Vec<u64>,
    /// Hashes ([`answer_hash`]) of the answers to them that had text, in order.
    #[serde(default)]
    pub answers: Vec<u64>,
    /// Requests sent to this chat that did not complete (failed, cancelled): a client that kept
    /// them in its history still continues this chat.
    #[serde(default)]
    pub attempted: Vec<u64>,
    /// Resumes of this chat in a row that failed before the agent said anything; at
    /// [`MAX_RESUME_FAILURES`] the chat is given up and the history replayed into a new one.
    #[serde(default)]
    pub resume_failures: u32,
    pub turns: u32,
    pub created_ms: u64,
    pub last_used_ms: u64,
    /// Client-tools mode: the fingerprint of the tool set the chat was last told about (0: none),
    /// so an unchanged set is not sent again.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tools: u64,
    /// The sidecar process that last used this session (set when recorded): Clear Sessions clears
    /// the asking process's own unless asked for all, as the file is shared by every sidecar.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub owner: String,
    /// The front door whose turns use it (set when recorded): each door's `maxSessions` counts
    /// only its own, so one door's traffic never pushes out another's conversations.
    #[serde(default)]
    pub door: Door,
    /// The client-tool calls of the chat's last reply (prompt protocol): results that come alone
    /// (the Copilot harness sends a marker and the results, no transcript) still name each tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallName>,
}

/// A client-tool call the chat made: its id and the tool's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallName {
    pub call_id: String,
    pub name: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A front door, as far as sessions are concerned. Files written before doors were recorded
/// read as `stdio`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Door {
    #[default]
    Stdio,
    Http,
}

/// What Clear Sessions clears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClearScope<'a> {
    /// The sessions this process last used (this editor window's).
    Mine,
    /// Every session in the file, every sidecar's.
    All,
    One(&'a str),
}

pub const MAX_RESUME_FAILURES: u32 = 2;

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

    /// How many requests at the end of `history` this chat was given but never completed, if
    /// `history` is this chat's completed history followed by only such requests.
    fn missing_from(&self, history: &[u64]) -> Option<usize> {
        let rest = history.strip_prefix(self.requests.as_slice())?;
        rest.iter().all(|h| self.attempted.contains(h)).then_some(rest.len())
    }

    /// [`Session::missing_from`] for a `history` whose beginning may be cut off: a client that
    /// named this session (its marker) and sent only the newest turns, or none at all (VS Code's
    /// Copilot harness sends a `previous_response_id`'s marker and only what is new). The longest
    /// start of `history` that ends this chat's completed requests is taken as seen; what follows
    /// must be requests given but never completed. Returns how many of those there are, and how
    /// many requests of `history` the chat had completed.
    fn missing_from_trimmed(&self, history: &[u64]) -> Option<(usize, usize)> {
        (0..=history.len().min(self.requests.len())).rev().find_map(|k| {
            let (seen, rest) = history.split_at(k);
            let fits = self.requests.ends_with(seen) && rest.iter().all(|h| self.attempted.contains(h));
            fits.then_some((rest.len(), k))
        })
    }

    /// What this chat has seen once a turn continued it: the client's `history` (the requests
    /// before the turn's own) and `answers`, put after what the chat had seen before when the
    /// client's history was trimmed ([`Session::missing_from_trimmed`]), so a later request with
    /// the whole transcript still matches.
    pub fn continued_with(&self, history: Vec<u64>, answers: Vec<u64>) -> (Vec<u64>, Vec<u64>) {
        if history.starts_with(&self.requests) {
            return (history, answers);
        }
        let shared = self.missing_from_trimmed(&history).map_or(0, |(_, seen)| seen);
        let requests = [self.requests.as_slice(), &history[shared..]].concat();
        let answers = if answers.starts_with(&self.answers) {
            answers
        } else {
            let shared = (1..=answers.len().min(self.answers.len()))
                .rev()
                .find(|&k| self.answers.ends_with(&answers[..k]))
                .unwrap_or(0);
            [self.answers.as_slice(), &answers[shared..]].concat()
        };
        (requests, answers)
    }
}

/// What identifies the conversation of a `chat/send`.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub conversation_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub mode: Mode,
    pub workspace: &'a str,
    /// `workspace` is a root of per-conversation folders: a session in any folder below it
    /// matches (each conversation has a folder of its own there).
    pub under: bool,
    /// Hashes of the user requests before the new one.
    pub history: &'a [u64],
    /// [`answer_hash`]es of the assistant messages before the new request.
    pub answers: &'a [u64],
}

impl Lookup<'_> {
    fn place_matches(&self, workspace: &str) -> bool {
        if self.under {
            std::path::Path::new(workspace).parent() == Some(std::path::Path::new(self.workspace))
        } else {
            workspace == self.workspace
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Match {
    /// The chat has seen the earlier requests, except the last `missing` ones (given to it
    /// but never completed): resume it with those and the new one.
    Resume { session: Session, missing: usize },
    /// The conversation is known but its history changed (an edited request), or its chat was
    /// given up: keep the session id, start a new chat and replay the history into it.
    Diverged(Session),
    /// Nothing to resume.
    New,
}

/// The file: sessions, and what was cleared (so a merge does not bring a cleared session back).
#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoreFile {
    version: u32,
    sessions: Vec<Session>,
    /// Session id → when it was cleared.
    #[serde(default)]
    cleared: BTreeMap<String, u64>,
    /// Everything used before this was cleared (Clear Sessions).
    #[serde(default)]
    cleared_all_ms: u64,
}

const FILE_VERSION: u32 = 2;
/// Files of version 1 (no tombstones) are read as they are.
const OLDEST_READABLE: u32 = 1;

pub struct SessionStore {
    sessions: Vec<Session>,
    cleared: BTreeMap<String, u64>,
    cleared_all_ms: u64,
    clock: Arc<dyn Clock>,
    ttl_ms: u64,
    max: usize,
    path: Option<PathBuf>,
    /// The file's modification time when this process last read it.
    seen: Option<SystemTime>,
    /// This process, in [`Session::owner`].
    owner: String,
    door: Door,
}

impl SessionStore {
    /// Load from `path` (a missing or unreadable file starts empty: sessions are a cache).
    pub fn open(path: Option<PathBuf>, clock: Arc<dyn Clock>, ttl_minutes: u64, max: usize) -> Self {
        Self::open_for(Door::Stdio, path, clock, ttl_minutes, max)
    }

    /// [`SessionStore::open`] for a front door: `max` counts only that door's sessions.
    pub fn open_for(door: Door, path: Option<PathBuf>, clock: Arc<dyn Clock>, ttl_minutes: u64, max: usize) -> Self {
        let mut store = SessionStore {
            sessions: Vec::new(),
            cleared: BTreeMap::new(),
            cleared_all_ms: 0,
            clock,
            ttl_ms: ttl_minutes.saturating_mul(60_000),
            max: max.max(1),
            path,
            seen: None,
            owner: format!("p-{:016x}", crate::util::ids::random_u64()),
            door,
        };
        store.refresh();
        store.prune();
        store
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    fn read_file(&self) -> Option<(StoreFile, Option<SystemTime>)> {
        let path = self.path.as_deref()?;
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let bytes = std::fs::read(path).ok()?;
        let file = serde_json::from_slice::<StoreFile>(&bytes).ok()?;
        (OLDEST_READABLE..=FILE_VERSION).contains(&file.version).then_some((file, modified))
    }

    /// Take in what other processes wrote since we last looked.
    fn refresh(&mut self) {
        let Some(path) = self.path.as_deref() else { return };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if modified.is_some() && modified == self.seen {
            return;
        }
        if let Some((file, modified)) = self.read_file() {
            self.merge(file);
            self.seen = modified;
        }
    }

    /// Union of ours and `other`: the more recently used copy of a session wins, and a session
    /// cleared (by anyone) after it was last used stays cleared.
    fn merge(&mut self, other: StoreFile) {
        self.cleared_all_ms = self.cleared_all_ms.max(other.cleared_all_ms);
        for (id, at) in other.cleared {
            let mine = self.cleared.entry(id).or_insert(at);
            *mine = (*mine).max(at);
        }
        for theirs in other.sessions {
            match self.sessions.iter_mut().find(|s| s.id == theirs.id) {
                Some(mine) if mine.last_used_ms >= theirs.last_used_ms => {}
                Some(mine) => *mine = theirs,
                None => self.sessions.push(theirs),
            }
        }
        let (cleared, all) = (&self.cleared, self.cleared_all_ms);
        self.sessions.retain(|s| s.last_used_ms > all && cleared.get(&s.id).is_none_or(|at| s.last_used_ms > *at));
    }

    fn prune(&mut self) -> bool {
        let now = self.clock.now_ms();
        let before = self.sessions.len();
        let ttl = self.ttl_ms;
        self.sessions.retain(|s| now.saturating_sub(s.last_used_ms) <= ttl);
        self.cleared.retain(|_, at| now.saturating_sub(*at) <= ttl);
        // The cap is this door's: other doors' sessions are theirs to bound.
        let door = self.door;
        if self.sessions.iter().filter(|s| s.door == door).count() > self.max {
            self.sessions.sort_by_key(|s| std::cmp::Reverse(s.last_used_ms));
            let mut kept = 0;
            let max = self.max;
            self.sessions.retain(|s| {
                if s.door != door {
                    return true;
                }
                kept += 1;
                kept <= max
            });
        }
        self.sessions.len() != before
    }

    /// The session for a turn, from what is in memory: take in the file first
    /// ([`SessionStore::pending_refresh`], off the async workers).
    pub fn find(&mut self, q: &Lookup<'_>) -> Match {
        self.prune();
        let by_identity = q
            .conversation_id
            .and_then(|c| {
                self.sessions
                    .iter()
                    .filter(|s| s.conversation_id.as_deref() == Some(c) && q.place_matches(&s.workspace))
                    .max_by_key(|s| s.last_used_ms)
            })
            .or_else(|| {
                q.session_id.and_then(|id| self.sessions.iter().find(|s| s.id == id && q.place_matches(&s.workspace)))
            });
        if let Some(s) = by_identity {
            let given_up = s.resume_failures >= MAX_RESUME_FAILURES;
            // A session the client named by its marker may come with a trimmed history (or none).
            let named = q.session_id == Some(s.id.as_str());
            let missing = s
                .missing_from(q.history)
                .or_else(|| named.then(|| s.missing_from_trimmed(q.history).map(|(missing, _)| missing)).flatten());
            return match missing {
                Some(missing) if !given_up => Match::Resume { session: s.clone(), missing },
                _ => Match::Diverged(s.clone()),
            };
        }
        if q.history.is_empty() {
            return Match::New;
        }
        // By history: never a session that belongs to another conversation, and the answers
        // must be the ones this chat gave (two chats that began alike differ from there).
        self.sessions
            .iter()
            .filter(|s| s.mode == q.mode && q.place_matches(&s.workspace))
            .filter(|s| s.conversation_id.is_none() || s.conversation_id.as_deref() == q.conversation_id)
            .filter(|s| s.resume_failures < MAX_RESUME_FAILURES && q.answers.starts_with(&s.answers))
            .filter_map(|s| s.missing_from(q.history).map(|missing| (s, missing)))
            .max_by_key(|(s, _)| s.last_used_ms)
            .map(|(s, missing)| Match::Resume { session: s.clone(), missing })
            .unwrap_or(Match::New)
    }

    /// Record a turn: insert or update the session, then enforce the cap and persist.
    pub fn record(&mut self, session: Session) {
        if let Some(write) = self.record_in_memory(session) {
            let written = write.run();
            self.absorb(written);
        }
    }

    /// [`SessionStore::record`] without the disk: the returned write (none for a store kept in
    /// memory only) puts it there, merged with the file, without this store or its lock:
    /// [`PendingWrite::run`] it anywhere, then [`SessionStore::absorb`] what it wrote.
    pub fn record_in_memory(&mut self, mut session: Session) -> Option<PendingWrite> {
        session.last_used_ms = self.clock.now_ms();
        session.owner = self.owner.clone();
        session.door = self.door;
        match self.sessions.iter_mut().find(|s| s.id == session.id) {
            Some(existing) => *existing = session,
            None => self.sessions.push(session),
        }
        self.prune();
        self.pending_write()
    }

    /// A copy of this store to merge with the file and write without its lock (none for a store
    /// kept in memory only).
    fn pending_write(&self) -> Option<PendingWrite> {
        self.path.as_ref()?;
        Some(PendingWrite(self.detached()))
    }

    fn detached(&self) -> SessionStore {
        SessionStore {
            sessions: self.sessions.clone(),
            cleared: self.cleared.clone(),
            cleared_all_ms: self.cleared_all_ms,
            clock: self.clock.clone(),
            ttl_ms: self.ttl_ms,
            max: self.max,
            path: self.path.clone(),
            seen: self.seen,
            owner: self.owner.clone(),
            door: self.door,
        }
    }

    /// Take in what a [`PendingWrite`] wrote (other processes' sessions merged on the way). What
    /// changed here meanwhile stays: the merge keeps the more recent copy and every clear.
    pub fn absorb(&mut self, written: Written) {
        let Written(w) = written;
        let seen = w.seen;
        self.merge(StoreFile {
            version: FILE_VERSION,
            sessions: w.sessions,
            cleared: w.cleared,
            cleared_all_ms: w.cleared_all_ms,
        });
        self.prune();
        if seen.is_some() {
            self.seen = seen;
        }
    }

    /// A copy of this store that takes in what other processes wrote since it last looked (and
    /// writes back what expired), to [`PendingRefresh::run`] off this store's lock and then
    /// [`SessionStore::absorb`]; none for a store kept in memory only.
    pub fn pending_refresh(&self) -> Option<PendingRefresh> {
        self.path.as_ref()?;
        Some(PendingRefresh(self.detached()))
    }

    /// A turn on this session's chat did not complete: remember what it was given, and count a
    /// resume that failed before the agent said anything.
    pub fn note_incomplete(&mut self, id: &str, chat_id: &str, request: u64, resume_failed: bool) {
        if let Some(write) = self.note_incomplete_in_memory(id, chat_id, request, resume_failed) {
            self.absorb(write.run());
        }
    }

    /// [`SessionStore::note_incomplete`] without the disk, as [`SessionStore::record_in_memory`].
    pub fn note_incomplete_in_memory(
        &mut self,
        id: &str,
        chat_id: &str,
        request: u64,
        resume_failed: bool,
    ) -> Option<PendingWrite> {
        let now = self.clock.now_ms();
        let s = self.sessions.iter_mut().find(|s| s.id == id && s.chat_id == chat_id)?;
        if !s.attempted.contains(&request) {
            s.attempted.push(request);
        }
        if resume_failed {
            s.resume_failures += 1;
        }
        s.last_used_ms = now;
        s.owner = self.owner.clone();
        self.pending_write()
    }

    pub fn get(&self, id: &str) -> Option<&Session> {
        self.sessions.iter().find(|s| s.id == id)
    }

    pub fn list(&mut self) -> Vec<SessionSummary> {
        self.refresh();
        if self.prune() {
            self.persist();
        }
        self.summaries()
    }

    /// [`SessionStore::list`] from memory (take in the file first with
    /// [`SessionStore::pending_refresh`]).
    pub fn summaries(&mut self) -> Vec<SessionSummary> {
        self.prune();
        let mut out: Vec<_> = self.sessions.iter().map(Session::summary).collect();
        out.sort_by_key(|s| std::cmp::Reverse(s.last_used_ms));
        out
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// The folder of every session, after taking in other processes' changes.
    pub fn workspaces(&mut self) -> Vec<String> {
        self.refresh();
        self.prune();
        self.sessions.iter().map(|s| s.workspace.clone()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    pub fn clear(&mut self, scope: ClearScope<'_>) -> usize {
        self.refresh();
        let (cleared, write) = self.clear_in_memory(scope);
        if let Some(write) = write {
            self.absorb(write.run());
        }
        cleared
    }

    /// [`SessionStore::clear`] without the disk (take in the file first, for `All` to count
    /// every process's sessions): how many went, and the write that makes it stick.
    pub fn clear_in_memory(&mut self, scope: ClearScope<'_>) -> (usize, Option<PendingWrite>) {
        let before = self.sessions.len();
        let now = self.clock.now_ms();
        match scope {
            ClearScope::One(id) => {
                self.sessions.retain(|s| s.id != id);
                self.cleared.insert(id.to_string(), now);
            }
            // Each one tombstoned: the file keeps other processes' sessions, and a merge must not
            // bring these back.
            ClearScope::Mine => {
                let owner = &self.owner;
                let (mine, others): (Vec<_>, Vec<_>) = self.sessions.drain(..).partition(|s| &s.owner == owner);
                self.sessions = others;
                self.cleared.extend(mine.into_iter().map(|s| (s.id, now)));
            }
            ClearScope::All => {
                self.sessions.clear();
                self.cleared_all_ms = now;
            }
        }
        (before - self.sessions.len(), self.pending_write())
    }

    /// Merge with the file under its lock and write the result (atomically, 0600).
    fn persist(&mut self) {
        let Some(path) = self.path.clone() else { return };
        let mut write = || -> std::io::Result<()> {
            let dir = path.parent().map(crate::util::fs::private_dir).transpose()?;
            let lock_path = dir.unwrap_or_default().join("sessions.lock");
            let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(lock_path)?;
            lock.lock()?;
            if let Some((file, _)) = self.read_file() {
                self.merge(file);
            }
            self.prune();
            let file = StoreFile {
                version: FILE_VERSION,
                sessions: self.sessions.clone(),
                cleared: self.cleared.clone(),
                cleared_all_ms: self.cleared_all_ms,
            };
            crate::util::fs::write_private(&path, &serde_json::to_vec_pretty(&file)?)?;
            self.seen = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            lock.unlock()
        };
        if let Err(e) = write() {
            tracing::warn!(path = %path.display(), error = %e, "could not save sessions");
        }
    }
}

/// A write of the store taken by [`SessionStore::record_in_memory`]: a copy of it, written without
/// the original's lock (merging with the file and the fsync take milliseconds, tens on a busy disk,
/// and the next turn plans under that lock).
pub struct PendingWrite(SessionStore);

/// What a [`PendingWrite`] wrote, for [`SessionStore::absorb`].
pub struct Written(SessionStore);

impl PendingWrite {
    /// Merge with the file under its lock and write it, synced to disk (blocking).
    pub fn run(mut self) -> Written {
        self.0.persist();
        Written(self.0)
    }
}

/// A read of the file taken by [`SessionStore::pending_refresh`], run without the store's lock.
pub struct PendingRefresh(SessionStore);

impl PendingRefresh {
    /// Take in the file when it changed; write back what expired (blocking).
    pub fn run(mut self) -> Written {
        self.0.refresh();
        if self.0.prune() {
            self.0.persist();
        }
        Written(self.0)
    }
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
            answers: requests.iter().filter_map(|r| answer_hash(&format!("answer to {r}"))).collect(),
            attempted: Vec::new(),
            resume_failures: 0,
            turns: requests.len() as u32,
            created_ms: used,
            last_used_ms: used,
            tools: 0,
            owner: String::new(),
            door: Door::Stdio,
            calls: Vec::new(),
        }
    }

    fn store(clock: &Arc<ManualClock>, path: Option<PathBuf>) -> SessionStore {
        SessionStore::open(path, clock.clone(), 30, 3)
    }

    fn roomy(clock: &Arc<ManualClock>) -> SessionStore {
        SessionStore::open(None, clock.clone(), 30, 10)
    }

    fn lookup<'a>(conv: Option<&'a str>, sid: Option<&'a str>, mode: Mode, history: &'a [u64]) -> Lookup<'a> {
        Lookup { conversation_id: conv, session_id: sid, mode, workspace: "/w", under: false, history, answers: &[] }
    }

    fn answers(reqs: &[&str]) -> Vec<u64> {
        reqs.iter().filter_map(|r| answer_hash(&format!("answer to {r}"))).collect()
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
        let h_abf = hashes(&["a", "b", "failed"]);
        let (a_a, a_ab, a_other) = (answers(&["a"]), answers(&["a", "b"]), answers(&["other"]));
        let with = |q: Lookup<'static>, answers: &'static [u64]| Lookup { answers, ..q };
        let leak = |v: Vec<u64>| -> &'static [u64] { Box::leak(v.into_boxed_slice()) };
        let (h_a, h_ab, h_x, h_abf) = (leak(h_a), leak(h_ab), leak(h_x), leak(h_abf));
        let (a_a, a_ab, a_other) = (leak(a_a), leak(a_ab), leak(a_other));
        let table: Vec<(&str, Lookup<'_>, &str)> = vec![
            ("history of another conversation is never taken over", lookup(Some("c2"), None, Mode::Agent, h_a), "new"),
            ("same requests, the answers this chat gave", with(lookup(None, None, Mode::Ask, h_ab), a_ab), "resume s2"),
            ("same requests, other answers: another chat", with(lookup(None, None, Mode::Ask, h_ab), a_other), "new"),
            (
                "answers of a failed turn after the chat's own",
                with(lookup(None, None, Mode::Ask, h_ab), leak([a_ab, a_a].concat())),
                "resume s2",
            ),
            (
                "a request the chat never completed is sent again",
                lookup(Some("c3"), None, Mode::Ask, h_abf),
                "resume s3 missing 1",
            ),
            (
                "a request the chat never saw diverges",
                lookup(Some("c3"), None, Mode::Ask, leak(hashes(&["a", "b", "new"]))),
                "diverged s3",
            ),
            ("a chat that failed twice is given up", lookup(Some("c4"), None, Mode::Ask, h_a), "diverged s4"),
            ("conversation id, same history", lookup(Some("c1"), None, Mode::Agent, h_a), "resume s1"),
            ("conversation id, other mode still resumes", lookup(Some("c1"), None, Mode::Ask, h_a), "resume s1"),
            ("conversation id, edited history", lookup(Some("c1"), None, Mode::Agent, h_x), "diverged s1"),
            ("conversation id, retried last turn", lookup(Some("c1"), None, Mode::Agent, &[]), "diverged s1"),
            ("unknown conversation id, new chat", lookup(Some("zz"), None, Mode::Agent, &[]), "new"),
            (
                "unknown conversation id falls back to a session of none",
                with(lookup(Some("zz"), None, Mode::Ask, h_ab), a_ab),
                "resume s2",
            ),
            ("session id marker", lookup(None, Some("s2"), Mode::Ask, h_ab), "resume s2"),
            ("marker only: no earlier request at all", lookup(None, Some("s2"), Mode::Ask, &[]), "resume s2"),
            (
                "marker plus a trimmed transcript",
                lookup(None, Some("s2"), Mode::Ask, leak(hashes(&["b"]))),
                "resume s2",
            ),
            (
                "marker plus a trimmed transcript ending in a request never completed",
                lookup(None, Some("s3"), Mode::Ask, leak(hashes(&["b", "failed"]))),
                "resume s3 missing 1",
            ),
            (
                "marker only, a request never completed",
                lookup(None, Some("s3"), Mode::Ask, leak(hashes(&["failed"]))),
                "resume s3 missing 1",
            ),
            ("marker, trimmed and edited", lookup(None, Some("s2"), Mode::Ask, leak(hashes(&["x"]))), "diverged s2"),
            ("marker, a retry of the last request", lookup(None, Some("s2"), Mode::Ask, h_a), "diverged s2"),
            ("marker and conversation id, no history", lookup(Some("c1"), Some("s1"), Mode::Agent, &[]), "resume s1"),
            (
                "marker of a session in another folder",
                Lookup { workspace: "/elsewhere", ..lookup(None, Some("s2"), Mode::Ask, &[]) },
                "new",
            ),
            (
                "marker of a session in another folder, history alone decides",
                Lookup { workspace: "/elsewhere", ..with(lookup(None, Some("s2"), Mode::Ask, h_ab), a_ab) },
                "new",
            ),
            ("history match, same mode", with(lookup(None, None, Mode::Ask, h_ab), a_ab), "resume s2"),
            ("history match, other mode", with(lookup(None, None, Mode::Plan, h_ab), a_ab), "new"),
            ("first message is always new", lookup(None, None, Mode::Agent, &[]), "new"),
            ("no match", lookup(None, None, Mode::Agent, h_x), "new"),
        ];
        for (name, q, expected) in table {
            let mut s = roomy(&clock);
            let mut s3 = session("s3", Some("c3"), Mode::Ask, &["a", "b"], 7 * MIN);
            s3.attempted = hashes(&["failed"]);
            let mut s4 = session("s4", Some("c4"), Mode::Ask, &["a"], 7 * MIN);
            s4.resume_failures = MAX_RESUME_FAILURES;
            s.sessions = vec![
                session("s1", Some("c1"), Mode::Agent, &["a"], 9 * MIN),
                session("s2", None, Mode::Ask, &["a", "b"], 8 * MIN),
                s3,
                s4,
            ];
            let got = match s.find(&q) {
                Match::Resume { session, missing: 0 } => format!("resume {}", session.id),
                Match::Resume { session, missing } => format!("resume {} missing {missing}", session.id),
                Match::Diverged(s) => format!("diverged {}", s.id),
                Match::New => "new".into(),
            };
            assert_eq!(got, expected, "{name}");
        }
    }

    #[test]
    fn a_turn_on_a_trimmed_history_keeps_what_the_chat_saw_before() {
        let mut s = session("s", None, Mode::Ask, &["a", "b"], 0);
        let (a_a, a_ab) = (answers(&["a"]), answers(&["a", "b"]));
        // (case, requests sent, answers sent, requests the chat has seen after, answers after)
        type Case = (&'static str, Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>);
        let cases: Vec<Case> = vec![
            ("whole history", hashes(&["a", "b"]), a_ab.clone(), hashes(&["a", "b"]), a_ab.clone()),
            ("marker only", vec![], vec![], hashes(&["a", "b"]), a_ab.clone()),
            ("trimmed", hashes(&["b"]), answers(&["b"]), hashes(&["a", "b"]), a_ab.clone()),
            (
                "history of a new chat",
                hashes(&["x"]),
                answers(&["x"]),
                hashes(&["a", "b", "x"]),
                [a_ab, answers(&["x"])].concat(),
            ),
        ];
        for (name, history, given, requests, answered) in cases {
            assert_eq!(s.continued_with(history, given), (requests, answered), "{name}");
        }
        s.requests.clear();
        s.answers.clear();
        assert_eq!(s.continued_with(hashes(&["a"]), a_a.clone()), (hashes(&["a"]), a_a), "a replayed chat");
    }

    #[test]
    fn most_recent_history_match_wins() {
        let clock = Arc::new(ManualClock::new(10 * MIN));
        let mut s = store(&clock, None);
        s.sessions =
            vec![session("old", None, Mode::Agent, &["a"], MIN), session("new", None, Mode::Agent, &["a"], 2 * MIN)];
        let (history, answered) = (hashes(&["a"]), answers(&["a"]));
        let q = Lookup { answers: &answered, ..lookup(None, None, Mode::Agent, &history) };
        assert!(matches!(s.find(&q), Match::Resume { session: x, .. } if x.id == "new"));
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
            Match::Resume { session: x, .. } if x.id == "s1"
        ));
        assert_eq!(reopened.clear(ClearScope::All), 1);
        assert_eq!(store(&clock, Some(path)).len(), 0);
    }

    #[test]
    fn a_write_done_outside_the_store_reaches_disk_and_keeps_what_changed_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/sessions.json");
        let clock = Arc::new(ManualClock::new(MIN));
        let mut s = SessionStore::open(Some(path.clone()), clock.clone(), 30, 10);
        let mut other = SessionStore::open(Some(path.clone()), clock.clone(), 30, 10);
        let write = s.record_in_memory(session("s1", Some("c1"), Mode::Agent, &["a"], 0)).expect("a file to write");
        assert!(!path.exists(), "nothing is written before the write runs");
        // Meanwhile: this store records another turn (written at once), another process one more.
        clock.advance_ms(1);
        s.record(session("s2", None, Mode::Agent, &["b"], 0));
        other.record(session("o1", None, Mode::Agent, &["c"], 0));
        // The deferred write, on a thread of its own, lands on disk with everything merged.
        let written = std::thread::spawn(move || write.run()).join().unwrap();
        let on_disk: StoreFile = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let mut ids: Vec<_> = on_disk.sessions.iter().map(|x| x.id.as_str()).collect();
        ids.sort();
        assert_eq!(ids, ["o1", "s1", "s2"]);
        s.absorb(written);
        let mut ids: Vec<_> = s.list().into_iter().map(|x| (x.session_id, x.last_used_ms)).collect();
        ids.sort();
        let expected = [("o1".to_string(), MIN + 1), ("s1".to_string(), MIN), ("s2".to_string(), MIN + 1)];
        assert_eq!(ids, expected, "absorbing the write loses nothing newer");
        // A session cleared after the write was taken stays cleared when it is absorbed.
        let write = s.record_in_memory(session("s3", None, Mode::Agent, &["d"], 0)).unwrap();
        clock.advance_ms(1);
        s.clear(ClearScope::One("s3"));
        s.absorb(write.run());
        assert!(s.get("s3").is_none(), "a cleared session came back");
        assert!(
            SessionStore::open(None, clock.clone(), 30, 10)
                .record_in_memory(session("m", None, Mode::Agent, &[], 0))
                .is_none(),
            "a store in memory writes nothing"
        );
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
        assert_eq!(s.clear(ClearScope::One("s1")), 1);
        assert_eq!(s.clear(ClearScope::One("nope")), 0);
        assert_eq!(s.len(), 1);
    }

    /// Two sidecars (windows) sharing one session file in a new state folder.
    fn two_windows() -> (tempfile::TempDir, PathBuf, Arc<ManualClock>, SessionStore, SessionStore) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/sessions.json");
        let clock = Arc::new(ManualClock::new(MIN));
        let window_a = SessionStore::open(Some(path.clone()), clock.clone(), 30, 10);
        let window_b = SessionStore::open(Some(path.clone()), clock.clone(), 30, 10);
        (dir, path, clock, window_a, window_b)
    }

    #[test]
    fn processes_sharing_the_file_merge_and_a_clear_stays_cleared() {
        let (_dir, path, clock, mut window_a, mut window_b) = two_windows();
        window_a.record(session("a1", None, Mode::Agent, &["a"], 0));
        clock.advance_ms(1);
        window_b.record(session("b1", None, Mode::Agent, &["b"], 0));
        let ids = |s: &mut SessionStore| s.list().into_iter().map(|x| x.session_id).collect::<Vec<_>>();
        assert_eq!(ids(&mut window_a), ["b1", "a1"], "each window sees the other's sessions");
        clock.advance_ms(1);
        assert_eq!(window_a.clear(ClearScope::All), 2);
        clock.advance_ms(1);
        // B still holds a1 and b1 in memory; its next write must not bring them back.
        window_b.record(session("b2", None, Mode::Agent, &["c"], 0));
        assert_eq!(ids(&mut window_b), ["b2"]);
        assert_eq!(ids(&mut SessionStore::open(Some(path.clone()), clock.clone(), 30, 10)), ["b2"]);
        window_b.clear(ClearScope::One("b2"));
        window_a.record(session("a2", None, Mode::Agent, &["d"], 0));
        assert_eq!(ids(&mut window_a), ["a2"], "a single cleared session stays cleared too");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
        }
    }

    #[test]
    fn clear_sessions_clears_this_processs_own_unless_asked_for_all() {
        let (_dir, path, clock, mut window_a, mut window_b) = two_windows();
        window_a.record(session("a1", None, Mode::Agent, &["a"], 0));
        clock.advance_ms(1);
        window_b.record(session("b1", None, Mode::Agent, &["b"], 0));
        clock.advance_ms(1);
        // B used A's session last: it is B's now (the window that used it).
        let a2 = session("a2", None, Mode::Agent, &["c"], 0);
        window_a.record(a2.clone());
        window_b.list();
        clock.advance_ms(1);
        window_b.record(a2);
        clock.advance_ms(1);
        window_a.list();
        let ids = |s: &mut SessionStore| s.list().into_iter().map(|x| x.session_id).collect::<Vec<_>>();
        assert_eq!(window_a.clear(ClearScope::Mine), 1, "only a1 is this window's");
        assert_eq!(ids(&mut window_a), ["a2", "b1"]);
        clock.advance_ms(1);
        // B still holds a1 in memory; its next write must not bring it back.
        window_b.record(session("b2", None, Mode::Agent, &["d"], 0));
        assert_eq!(ids(&mut SessionStore::open(Some(path.clone()), clock.clone(), 30, 10)), ["b2", "a2", "b1"]);
        clock.advance_ms(1);
        assert_eq!(window_a.clear(ClearScope::All), 3, "all: every window's");
        assert_eq!(ids(&mut window_b), Vec::<String>::new());
    }

    #[test]
    fn the_session_cap_counts_each_front_doors_sessions_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/sessions.json");
        let clock = Arc::new(ManualClock::new(MIN));
        let mut editor = SessionStore::open_for(Door::Stdio, Some(path.clone()), clock.clone(), 30, 2);
        let mut serve = SessionStore::open_for(Door::Http, Some(path.clone()), clock.clone(), 30, 2);
        for id in ["e1", "e2"] {
            editor.record(session(id, None, Mode::Agent, &[id], 0));
            clock.advance_ms(1);
        }
        // A busy HTTP client: many conversations, newer than the editor's.
        for id in ["h1", "h2", "h3", "h4"] {
            serve.record(session(id, None, Mode::Agent, &[id], 0));
            clock.advance_ms(1);
        }
        let ids = |s: &mut SessionStore| {
            let mut v = s.list().into_iter().map(|x| x.session_id).collect::<Vec<_>>();
            v.sort();
            v
        };
        assert_eq!(ids(&mut serve), ["e1", "e2", "h3", "h4"], "serve's cap drops serve's oldest only");
        assert_eq!(ids(&mut editor), ["e1", "e2", "h3", "h4"], "the editor's conversations are all there");
        editor.record(session("e3", None, Mode::Agent, &["e3"], 0));
        assert_eq!(ids(&mut SessionStore::open(Some(path), clock.clone(), 30, 2)), ["e2", "e3", "h3", "h4"]);
    }
}
