//! Chat ids fetched ahead of need, per warmed-up workspace, so a new conversation starts with
//! `--resume <id>` of a fresh chat (which lets a warm spare be started for it ahead of time).
//! A turn waits for a fetch in progress only briefly, and never for one that has not started:
//! without an id the CLI creates the chat.
//!
//! The slot a turn emptied is refilled once that turn's CLI is done (or the turn was dropped), not
//! when the id is taken: `create-chat` is a second CLI process, and started next to the turn's own
//! it competes with that one's start-up and first words.
//!
//! A turn waits only for the warm-up fetch (the one `initialize` starts), never for a refill: a
//! new conversation sent while the previous one's refill still runs (two new conversations within
//! one `create-chat`, a second with the real CLI) goes on at once without an id. Waiting for that
//! refill was the tail of a new conversation's first word (issue 26: the rest of a `create-chat`
//! process, tens of ms with a quick CLI, up to its whole start-up with a slow one).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::task::JoinSet;

use crate::util::sync::lock;

use crate::backend::cursor::commands;
use crate::backend::cursor::discovery::CliCommand;
use crate::backend::cursor::env::ChildEnv;

/// A workspace's prefetched id. Locked while a fetch for it is due or runs (and only then), so a
/// turn that finds it locked knows an id is on its way, and one that finds it empty knows none is.
type Slot = Arc<tokio::sync::Mutex<Option<String>>>;

/// The warm-up fetch (at `initialize`) starts this much later, so its process never competes with
/// the answer to `initialize`; the slot is locked meanwhile, so a turn that comes first waits.
const WARM_UP_DELAY: std::time::Duration = std::time::Duration::from_millis(100);
/// The longest a turn waits for a fetch in progress (a good one takes well under this).
const TAKE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Default)]
pub struct ChatIdCache {
    slots: Mutex<HashMap<PathBuf, Slot>>,
    refills: Mutex<JoinSet<()>>,
    /// The workspaces whose slot a refill is filling (not the warm-up): a turn does not wait for it.
    refilling: Arc<Mutex<HashSet<PathBuf>>>,
    /// Set by [`ChatIdCache::stop`]: no fetch starts after it (its process would outlive the
    /// sidecar's last sweep).
    stopped: AtomicBool,
}

/// The refill a turn owes the slot it took from (or found empty): started by [`Refill::start`], or
/// when dropped (the turn's CLI is done, or the turn failed or was cancelled).
#[must_use = "dropping a Refill starts it at once"]
pub struct Refill<'a> {
    cache: &'a ChatIdCache,
    due: Option<(CliCommand, ChildEnv, PathBuf)>,
}

impl Refill<'_> {
    /// Start the refill now (once; later calls do nothing).
    pub fn start(&mut self) {
        if let Some((cli, env, workspace)) = self.due.take() {
            self.cache.fill(cli, env, workspace, None);
        }
    }
}

impl Drop for Refill<'_> {
    fn drop(&mut self) {
        self.start();
    }
}

impl ChatIdCache {
    fn slot(&self, workspace: &Path) -> Slot {
        lock(&self.slots).entry(workspace.to_path_buf()).or_default().clone()
    }

    /// A fresh chat id for `workspace`: the prefetched one, or the one the warm-up fetch is about
    /// to bring, waited for at most [`TAKE_WAIT`] (`create-chat` can hang, and a turn must not
    /// hang with it; without an id the CLI creates the chat itself and says its id). An empty
    /// slot with no fetch running, or with a refill running, gives `None` at once. The [`Refill`] fills the slot again; start
    /// (or drop) it when the turn's CLI is done. Folders that were never warmed up (one per HTTP
    /// conversation, say) have no slot: no wait, no fetches.
    pub async fn take(&self, cli: &CliCommand, env: ChildEnv, workspace: &Path) -> (Option<String>, Refill<'_>) {
        self.take_or_wait(cli, env, workspace, false).await
    }

    /// [`ChatIdCache::take`] for work off a turn's path (a fresh spare started in the background):
    /// a refill in progress is waited for too, as long as a warm-up would be.
    pub async fn take_waiting(
        &self,
        cli: &CliCommand,
        env: ChildEnv,
        workspace: &Path,
    ) -> (Option<String>, Refill<'_>) {
        self.take_or_wait(cli, env, workspace, true).await
    }

    async fn take_or_wait(
        &self,
        cli: &CliCommand,
        env: ChildEnv,
        workspace: &Path,
        wait_for_refill: bool,
    ) -> (Option<String>, Refill<'_>) {
        let Some(slot) = lock(&self.slots).get(workspace).cloned() else {
            return (None, Refill { cache: self, due: None });
        };
        let id = match slot.try_lock() {
            Ok(mut ready) => ready.take(),
            Err(_) if !wait_for_refill && lock(&self.refilling).contains(workspace) => {
                tracing::debug!("a refill of the chat id is still running; the CLI creates this chat");
                None
            }
            Err(_) => {
                let waiting = std::time::Instant::now();
                match tokio::time::timeout(TAKE_WAIT, slot.lock()).await {
                    Ok(mut ready) => {
                        let waited_ms = waiting.elapsed().as_secs_f64() * 1e3;
                        tracing::debug!(waited_ms, "waited for a chat id being fetched");
                        ready.take()
                    }
                    Err(_) => {
                        tracing::debug!("no chat id ready in time; the CLI creates the chat");
                        None
                    }
                }
            }
        };
        (id, Refill { cache: self, due: Some((cli.clone(), env, workspace.to_path_buf())) })
    }

    /// Warm `workspace` up: fill its slot in the background, [`WARM_UP_DELAY`] from now. The slot
    /// is locked before this returns, so a turn that comes right after waits for this fetch
    /// instead of finding the slot empty.
    pub fn prefetch(&self, cli: CliCommand, env: ChildEnv, workspace: PathBuf) {
        self.fill(cli, env, workspace, Some(WARM_UP_DELAY));
    }

    /// Fill the slot for `workspace` in the background (after `delay`), if it is empty and no
    /// fetch for it is running.
    fn fill(&self, cli: CliCommand, env: ChildEnv, workspace: PathBuf, delay: Option<std::time::Duration>) {
        // A turn dropped while the runtime goes away has nowhere to run a fetch.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut ready) = self.slot(&workspace).try_lock_owned() else { return }; // being fetched
        if ready.is_some() {
            return;
        }
        let refilling = self.refilling.clone();
        if delay.is_none() {
            lock(&refilling).insert(workspace.clone());
        }
        let mut refills = lock(&self.refills);
        while refills.try_join_next().is_some() {}
        refills.spawn_on(
            async move {
                // Off the list however the task ends (an abort at stop drops it mid-fetch).
                let _listed = crate::util::sync::OnDrop(|| {
                    lock(&refilling).remove(&workspace);
                });
                if let Some(delay) = delay {
                    tokio::time::sleep(delay).await;
                }
                *ready = fetch(&cli, &env, &workspace).await;
                // Ready before it is off the list: a turn in between finds the id, not a wait.
                drop(ready);
            },
            &runtime,
        );
    }

    /// Abort background fetches (their CLI processes die with them) and start no more.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        lock(&self.refills).abort_all();
    }
}

async fn fetch(cli: &CliCommand, env: &ChildEnv, workspace: &Path) -> Option<String> {
    match commands::create_chat(cli, env, workspace).await {
        Ok(id) => Some(id),
        Err(e) => {
            tracing::warn!(error = %e, "create-chat failed; the CLI will create the chat itself");
            None
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backend::cursor::env::child_env;

    /// A `create-chat` that counts its runs in `calls` and answers `chat-000<n>`.
    fn counting_cli(calls: &Path) -> CliCommand {
        let script = r#"echo run >> "$1"; printf 'chat-%04d\n' "$(wc -l < "$1")""#;
        CliCommand {
            prefix_args: vec!["-c".into(), script.into(), "sh".into(), calls.into()],
            ..CliCommand::plain("/bin/sh".into())
        }
    }

    /// `take` without waiting: time is paused and nothing runs, so any wait for the slot would
    /// run into the 1 ms timeout at once instead of passing unnoticed.
    async fn try_take<'a>(cache: &'a ChatIdCache, cli: &CliCommand, ws: &Path) -> (Option<String>, Refill<'a>) {
        tokio::time::pause();
        let taken = tokio::time::timeout(
            Duration::from_millis(1),
            cache.take(cli, child_env(None, &crate::backend::contract::EnvPolicy::Inherit), ws),
        )
        .await;
        tokio::time::resume();
        taken.expect("the turn waited for a chat id")
    }

    async fn take_at_once(cache: &ChatIdCache, cli: &CliCommand, ws: &Path) -> Option<String> {
        let (id, refill) = try_take(cache, cli, ws).await;
        std::mem::forget(refill); // this one is not the turn under test
        id
    }

    /// The id once the fetch in progress has brought it (each try without waiting).
    async fn take_when_ready<'a>(cache: &'a ChatIdCache, cli: &CliCommand, ws: &Path) -> (Option<String>, Refill<'a>) {
        for _ in 0..2000 {
            let (id, refill) = try_take(cache, cli, ws).await;
            if id.is_some() {
                return (id, refill);
            }
            std::mem::forget(refill);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("no chat id within 10 s");
    }

    #[tokio::test]
    async fn a_refill_starts_when_the_turn_says_so_and_an_empty_slot_never_waits() {
        let dir = tempfile::tempdir().unwrap();
        let calls = dir.path().join("calls");
        let cli = counting_cli(&calls);
        let ws = dir.path().to_path_buf();
        let cache = ChatIdCache::default();

        // Warm-up: a turn right after it waits for the fetch in progress and gets its id.
        cache.prefetch(cli.clone(), child_env(None, &crate::backend::contract::EnvPolicy::Inherit), ws.clone());
        let (id, mut refill) =
            cache.take(&cli, child_env(None, &crate::backend::contract::EnvPolicy::Inherit), &ws).await;
        assert_eq!(id.as_deref(), Some("chat-0001"));

        // Taking the id started no fetch (the slot is empty and unlocked): a new conversation
        // meanwhile goes on at once without an id, and the CLI creates its chat.
        assert_eq!(take_at_once(&cache, &cli, &ws).await, None);
        assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), 1, "create-chat ran on the turn's path");

        // The turn's CLI is done: the refill runs. A new conversation meanwhile does not wait for
        // it (the rest of a create-chat was the tail of a new conversation's first word): it goes
        // on at once without an id. Once the refill is done, the next one gets its id.
        refill.start();
        refill.start(); // once only
        assert_eq!(take_at_once(&cache, &cli, &ws).await, None, "the id came before the refill could run");
        let (id, refill) = take_when_ready(&cache, &cli, &ws).await;
        assert_eq!(id.as_deref(), Some("chat-0002"));

        // A turn refills when its Refill is dropped (its CLI done, or the turn failed or cancelled).
        drop(refill);
        let (id, _refill) = take_when_ready(&cache, &cli, &ws).await;
        assert_eq!(id.as_deref(), Some("chat-0003"));
        assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), 3, "one create-chat per refill");
    }

    #[tokio::test]
    async fn nothing_is_fetched_after_stop_or_for_a_folder_never_warmed() {
        let dir = tempfile::tempdir().unwrap();
        let calls = dir.path().join("calls");
        let cli = counting_cli(&calls);
        let cache = ChatIdCache::default();
        assert_eq!(take_at_once(&cache, &cli, dir.path()).await, None, "no slot: no wait");
        drop(cache.take(&cli, child_env(None, &crate::backend::contract::EnvPolicy::Inherit), dir.path()).await);
        cache.stop();
        cache.prefetch(
            cli.clone(),
            child_env(None, &crate::backend::contract::EnvPolicy::Inherit),
            dir.path().to_path_buf(),
        );
        assert_eq!(take_at_once(&cache, &cli, dir.path()).await, None);
        assert!(!calls.exists(), "create-chat ran for an unwarmed folder or after stop");
    }
}
