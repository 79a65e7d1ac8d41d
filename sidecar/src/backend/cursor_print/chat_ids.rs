//! Chat ids fetched ahead of need, per warmed-up workspace, so a new conversation starts with
//! `--resume <id>` of a fresh chat (which lets a warm spare be started for it ahead of time).
//! A turn waits for a fetch in progress only briefly: without an id the CLI creates the chat.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::task::JoinSet;

use crate::util::sync::lock;

use super::args::ChildEnv;
use super::commands;
use super::discovery::CliCommand;

type Slot = Arc<tokio::sync::Mutex<Option<String>>>;

/// A refill waits this long before it starts `create-chat`, so it never competes with the
/// spawn of the turn that just took an id.
const REFILL_DELAY: std::time::Duration = std::time::Duration::from_millis(100);
/// The longest a turn waits for a fetch in progress (a good one takes well under this).
const TAKE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Default)]
pub struct ChatIdCache {
    slots: Mutex<HashMap<PathBuf, Slot>>,
    refills: Mutex<JoinSet<()>>,
}

impl ChatIdCache {
    fn slot(&self, workspace: &Path) -> Slot {
        lock(&self.slots).entry(workspace.to_path_buf()).or_default().clone()
    }

    /// A fresh chat id for `workspace`: the prefetched one, or the one a fetch in progress is
    /// about to bring, waited for at most [`TAKE_WAIT`] (`create-chat` can hang, and a turn must
    /// not hang with it; without an id the CLI creates the chat itself and says its id). Taking
    /// an id starts the fetch of the next one. Folders that were never warmed up (one per HTTP
    /// conversation, say) have no slot: no wait, no fetches.
    pub async fn take(&self, cli: &CliCommand, env: ChildEnv, workspace: &Path) -> Option<String> {
        let slot = lock(&self.slots).get(workspace).cloned()?;
        let id = match tokio::time::timeout(TAKE_WAIT, slot.lock()).await {
            Ok(mut ready) => ready.take(),
            Err(_) => {
                tracing::debug!("no chat id ready in time; the CLI creates the chat");
                None
            }
        };
        self.prefetch(cli.clone(), env, workspace.to_path_buf());
        id
    }

    /// Fill the slot for `workspace` in the background, if it is empty.
    pub fn prefetch(&self, cli: CliCommand, env: ChildEnv, workspace: PathBuf) {
        let slot = self.slot(&workspace);
        let mut refills = lock(&self.refills);
        while refills.try_join_next().is_some() {}
        refills.spawn(async move {
            // Hold the slot from the start, so a turn that wants an id waits for this fetch
            // instead of finding the slot empty; but let the turn that just took an id start
            // its own CLI first (two spawns at one moment serialize).
            let mut ready = slot.lock().await;
            if ready.is_none() {
                tokio::time::sleep(REFILL_DELAY).await;
                *ready = fetch(&cli, &env, &workspace).await;
            }
        });
    }

    /// Abort background fetches (their CLI processes die with them).
    pub fn stop(&self) {
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
