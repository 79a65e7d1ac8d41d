//! The session store's disk work, off the runtime's workers: reading what other sidecars wrote,
//! and merging and writing the shared file under its lock (milliseconds, tens on a busy disk)
//! run on blocking threads, on a copy of the store, so neither a worker nor another turn waiting
//! for the store's lock waits for the disk. What they did is then taken back in
//! ([`SessionStore::absorb`]).

use std::sync::{Arc, Mutex};

use super::core::Engine;
use super::sessions::{PendingWrite, SessionStore, Written};
use crate::util::sync::lock;

impl Engine {
    /// Take in what other sidecars wrote (and write back what expired) before the store is read.
    pub(super) async fn refresh_sessions(&self) {
        let Some(read) = lock(&self.sessions).pending_refresh() else { return };
        if let Some(written) = off_the_workers(move || read.run()).await {
            lock(&self.sessions).absorb(written);
        }
    }

    /// Write `write` and take in what it wrote; on disk when this returns. The write runs on a
    /// thread of its own rather than the blocking pool, as a turn's record always has; a caller
    /// dropped meanwhile leaves the thread to finish it.
    pub(super) async fn save_sessions(&self, write: PendingWrite) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new().name("sessions-write".into()).spawn(move || {
            let _ = tx.send(write.run());
        });
        match spawned {
            Ok(_) => {
                if let Ok(written) = rx.await {
                    lock(&self.sessions).absorb(written);
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not start the thread that saves sessions"),
        }
    }
}

/// Start `write` now, from code that cannot wait (a drop guard): it lands on disk and is taken
/// in even when the caller is gone. The receiver says when it is done.
pub(super) fn save_detached(
    sessions: &Arc<Mutex<SessionStore>>,
    write: PendingWrite,
) -> Option<tokio::sync::oneshot::Receiver<()>> {
    let sessions = sessions.clone();
    let (done, rx) = tokio::sync::oneshot::channel();
    let run = move || {
        let written = write.run();
        lock(&sessions).absorb(written);
        let _ = done.send(());
    };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn_blocking(run);
            Some(rx)
        }
        // No runtime (a test's or a shutdown's drop): write here, as before.
        Err(_) => {
            run();
            None
        }
    }
}

async fn off_the_workers(work: impl FnOnce() -> Written + Send + 'static) -> Option<Written> {
    match tokio::task::spawn_blocking(work).await {
        Ok(written) => Some(written),
        Err(e) => {
            tracing::warn!(error = %e, "could not read or save sessions");
            None
        }
    }
}

/// Writes a turn started from a drop guard, waited for before the turn answers (so a failed
/// turn's note is on disk before its error, as when it was written in place).
#[derive(Default)]
pub(super) struct PendingSaves(Mutex<Vec<tokio::sync::oneshot::Receiver<()>>>);

impl PendingSaves {
    pub(super) fn push(&self, done: Option<tokio::sync::oneshot::Receiver<()>>) {
        lock(&self.0).extend(done);
    }

    pub(super) async fn wait(&self) {
        let waiting = std::mem::take(&mut *lock(&self.0));
        for done in waiting {
            let _ = done.await;
        }
    }
}
