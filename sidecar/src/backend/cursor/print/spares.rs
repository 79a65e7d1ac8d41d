//! Warm spares: CLI processes started ahead of the turn that will use them. The Cursor CLI is a
//! Node program that boots and loads its modules before it reads the prompt from stdin, so a
//! process started early has that start-up behind it when the prompt arrives.
//!
//! After a turn ends, a spare is started for the same conversation (`--resume` the same chat, same
//! model and mode); with room for more, another for a new conversation (a prefetched chat id). A
//! spare is used only by a turn whose command line is exactly the spare's, at most once; spares
//! are bounded, dropped when idle too long or when memory is tight, and killed with the sidecar.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::backend::cursor::cli::memory_allows_spares;
use crate::backend::process::{self, ChildProcess, SpawnSpec};

struct Spare {
    /// Program, arguments and folder: a turn may use the spare only if its own are identical.
    program: PathBuf,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    /// The chat a fresh spare will start (`None` for a spare that resumes a known chat).
    fresh_chat: Option<String>,
    child: ChildProcess,
    born: Instant,
}

pub struct Spares {
    limit: usize,
    idle: Duration,
    slots: Mutex<Vec<Spare>>,
    /// Set at shutdown: a spare started after that would outlive the sidecar's last sweep.
    closed: AtomicBool,
}

/// A fresh spare taken for a new conversation: its chat id and its process.
pub struct FreshSpare {
    pub chat_id: String,
    pub child: ChildProcess,
}

impl Spares {
    pub fn new(limit: usize, idle: Duration) -> Self {
        Spares { limit, idle, slots: Mutex::new(Vec::new()), closed: AtomicBool::new(false) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Spare>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn enabled(&self) -> bool {
        self.limit > 0
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The spare started with exactly `spec`, if one is alive.
    pub fn take(&self, spec: &SpawnSpec) -> Option<ChildProcess> {
        let mut slots = self.lock();
        let i = slots.iter().position(|s| s.program == spec.program && s.args == spec.args && s.cwd == spec.cwd)?;
        let mut spare = slots.swap_remove(i);
        drop(slots);
        spare.child.is_running().then(|| {
            spare.child.set_standby(false);
            spare.child
        })
    }

    /// A fresh spare whose command line equals `spec_for(chat)` for its own chat id.
    pub fn take_fresh(&self, spec_for: impl Fn(&str) -> SpawnSpec) -> Option<FreshSpare> {
        let mut slots = self.lock();
        let i = slots.iter().position(|s| {
            s.fresh_chat.as_deref().is_some_and(|chat| {
                let spec = spec_for(chat);
                s.program == spec.program && s.args == spec.args && s.cwd == spec.cwd
            })
        })?;
        let mut spare = slots.swap_remove(i);
        drop(slots);
        let chat_id = spare.fresh_chat.take()?;
        spare.child.is_running().then(|| {
            spare.child.set_standby(false);
            FreshSpare { chat_id, child: spare.child }
        })
    }

    /// Start a spare for `spec` (the oldest is dropped past the limit). `fresh_chat` marks a spare
    /// for a new conversation. Nothing happens when spares are off, memory is tight, or one with
    /// the same command line exists.
    pub fn start(&self, spec: &SpawnSpec, fresh_chat: Option<String>) {
        if !self.enabled() || self.closed.load(Ordering::SeqCst) || !memory_allows_spares() {
            return;
        }
        if self.lock().iter().any(|s| s.program == spec.program && s.args == spec.args) {
            return;
        }
        // Like every child, a spare dies with the sidecar (an orphaned spare would read end of input
        // and run an empty prompt): backend/process/ arms the parent-death signal for all.
        let mut child = match process::spawn(spec) {
            Ok(child) => child,
            Err(e) => {
                tracing::debug!(error = %e, "could not start a spare");
                return;
            }
        };
        // Waiting for its prompt, it runs no tools: it owns its own group, no other orphans.
        child.set_standby(true);
        tracing::debug!(pid = child.pid(), fresh = fresh_chat.is_some(), "spare started");
        let mut slots = self.lock();
        if self.closed.load(Ordering::SeqCst) {
            return; // dropping the child kills it
        }
        slots.push(Spare {
            program: spec.program.clone(),
            args: spec.args.clone(),
            cwd: spec.cwd.clone(),
            fresh_chat,
            child,
            born: Instant::now(),
        });
        while slots.len() > self.limit {
            let oldest = slots.iter().enumerate().min_by_key(|(_, s)| s.born).map(|(i, _)| i).unwrap_or(0);
            slots.remove(oldest); // dropping kills it
        }
    }

    /// Drop spares idle past the limit, dead ones, and all of them when memory is tight.
    pub fn expire(&self) {
        let tight = !memory_allows_spares();
        let idle = self.idle;
        self.lock().retain_mut(|s| !tight && s.born.elapsed() < idle && s.child.is_running());
    }

    /// Stop every spare and start no more. Only the backend's shutdown calls this, so it also tells
    /// the orphan sweep that follows that the sidecar is stopping (every orphan dies).
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.lock().clear();
        process::stopping();
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn sleeper(tag: &str) -> SpawnSpec {
        SpawnSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "read line; echo $line".into(), tag.into()],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_spare_is_taken_once_and_only_by_an_identical_command() {
        let spares = Spares::new(2, Duration::from_secs(60));
        spares.start(&sleeper("a"), None);
        assert_eq!(spares.len(), 1);
        assert!(spares.take(&sleeper("b")).is_none());
        let child = spares.take(&sleeper("a")).expect("the spare");
        assert!(spares.take(&sleeper("a")).is_none(), "never two turns on one process");
        drop(child);
    }

    #[tokio::test]
    async fn the_limit_drops_the_oldest_and_kills_it() {
        let spares = Spares::new(1, Duration::from_secs(60));
        spares.start(&sleeper("a"), None);
        spares.start(&sleeper("b"), None);
        assert_eq!(spares.len(), 1);
        assert!(spares.take(&sleeper("a")).is_none());
        assert!(spares.take(&sleeper("b")).is_some());
    }

    #[tokio::test]
    async fn fresh_spares_carry_their_chat_id() {
        let spares = Spares::new(2, Duration::from_secs(60));
        let spec_for = |chat: &str| sleeper(&format!("chat={chat}"));
        spares.start(&spec_for("c-1"), Some("c-1".into()));
        let fresh = spares.take_fresh(spec_for).expect("fresh spare");
        assert_eq!(fresh.chat_id, "c-1");
    }

    #[tokio::test]
    async fn idle_spares_expire_and_zero_disables() {
        let spares = Spares::new(1, Duration::from_millis(1));
        spares.start(&sleeper("a"), None);
        std::thread::sleep(Duration::from_millis(5));
        spares.expire();
        assert!(spares.is_empty());
        let off = Spares::new(0, Duration::from_secs(60));
        off.start(&sleeper("a"), None);
        assert!(off.is_empty());
    }

    #[tokio::test]
    async fn an_expiring_spare_does_not_kill_a_running_turns_background_job() {
        use crate::backend::process::tests::{alive, child_with_an_orphaned_job, gone_within};
        let (turn, job) = child_with_an_orphaned_job().await;
        let spares = Spares::new(1, Duration::from_millis(1));
        spares.start(&sleeper("a"), None);
        std::thread::sleep(Duration::from_millis(5));
        // Dropping the expired spare kills it and sweeps for orphans.
        spares.expire();
        assert!(spares.is_empty());
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(alive(job), "the expired spare's sweep killed a running turn's background job");
        drop(turn);
        assert!(gone_within(job, Duration::from_secs(2)).await, "the job outlived its turn");
    }
}
