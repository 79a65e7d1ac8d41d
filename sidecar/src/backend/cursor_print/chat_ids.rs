//! Chat ids fetched ahead of need. `create-chat` takes 1–2 s; keeping one id ready per workspace
//! means the first message of a new conversation does not wait for it. Taking an id starts the
//! fetch of the next one in the background.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::task::JoinSet;

use super::args::ChildEnv;
use super::commands;
use super::discovery::CliCommand;

type Slot = Arc<tokio::sync::Mutex<Option<String>>>;

/// `create-chat` takes 1–2 s, so waiting this long before a refill costs nothing.
const REFILL_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

#[derive(Default)]
pub struct ChatIdCache {
    slots: Mutex<HashMap<PathBuf, Slot>>,
    refills: Mutex<JoinSet<()>>,
}

impl ChatIdCache {
    fn slot(&self, workspace: &Path) -> Slot {
        self.slots.lock().unwrap_or_else(|p| p.into_inner()).entry(workspace.to_path_buf()).or_default().clone()
    }

    /// A fresh chat id for `workspace`: the prefetched one, or (if none) one fetched now. `None`
    /// when `create-chat` fails; the turn then lets the CLI create its chat itself.
    pub async fn take(&self, cli: &CliCommand, env: ChildEnv, workspace: &Path) -> Option<String> {
        let slot = self.slot(workspace);
        // A refill in progress holds the lock, so this waits for it instead of starting a second.
        let id = {
            let mut ready = slot.lock().await;
            match ready.take() {
                Some(id) => Some(id),
                None => fetch(cli, &env, workspace).await,
            }
        };
        self.prefetch(cli.clone(), env, workspace.to_path_buf());
        id
    }

    /// Fill the slot for `workspace` in the background, if it is empty.
    pub fn prefetch(&self, cli: CliCommand, env: ChildEnv, workspace: PathBuf) {
        let slot = self.slot(&workspace);
        let mut refills = self.refills.lock().unwrap_or_else(|p| p.into_inner());
        while refills.try_join_next().is_some() {}
        refills.spawn(async move {
            // Let the turn that just took an id start its own CLI first: two spawns at the same
            // moment serialize, and the turn's first token should not wait for a prefetch.
            tokio::time::sleep(REFILL_DELAY).await;
            let mut ready = slot.lock().await;
            if ready.is_none() {
                *ready = fetch(&cli, &env, &workspace).await;
            }
        });
    }

    /// Abort background fetches (their CLI processes die with them).
    pub fn stop(&self) {
        self.refills.lock().unwrap_or_else(|p| p.into_inner()).abort_all();
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
