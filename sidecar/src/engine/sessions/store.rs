//! The session store: the sessions in memory and the JSON file every sidecar of this user shares
//! (read, merged under a file lock, written synced, pruned by TTL and LRU, cleared).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::{ClearScope, Clock, Door, Lookup, Match, Session, SessionSummary, MAX_RESUME_FAILURES};

/// The file: sessions, and what was cleared (so a merge does not bring a cleared session back).
#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StoreFile {
    version: u32,
    pub(super) sessions: Vec<Session>,
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
    pub(super) sessions: Vec<Session>,
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
