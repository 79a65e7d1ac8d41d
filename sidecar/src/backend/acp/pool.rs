//! Warm ACP sessions, for any agent: one agent process and session per conversation (see
//! `agent.rs` for why), kept across turns by session id so a follow-up pays neither a process
//! start nor `session/new`; spares, sessions opened ahead of need so a new conversation's first
//! message does not wait; and their ends — idle expiry, the `warmSessions` limit (least recently
//! used first), memory that is tight, shutdown. How an agent is opened, and when a spare may be
//! opened at all, is the agent's backend's: the pool only keeps what it is given.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Mutex as AsyncMutex;
use tokio::time::Instant;

use super::agent::{Agent, SessionConfig};
use super::turn::Slot;
use crate::backend::contract::{TurnFailure, Warmth};
use crate::error::BridgeError;
use crate::util::sync::lock;
use crate::vocab::{ErrorKind, ToolDefinition};

/// A turn for a session whose previous turn is still being cancelled waits this long for it.
const BUSY_WAIT: Duration = Duration::from_secs(4);
/// At shutdown, how long agents get to exit on end of input before they are killed.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

pub type SlotCell<C> = Arc<AsyncMutex<Option<Agent<C>>>>;

/// A session opened ahead of need, for a new conversation in `workspace`: a plain one, or one
/// whose agent hosts the tools the last new conversation there was given (Copilot's Agent mode
/// sends the same tools with every request, and a session that must attach them first costs a
/// `session/new` with `mcpServers` and our server's listing on the new conversation's first word).
struct Spare<C: SessionConfig> {
    workspace: PathBuf,
    agent: Agent<C>,
}

impl<C: SessionConfig> Spare<C> {
    /// Its agent hosts exactly `tools` (`None`: no tools).
    fn hosts(&self, tools: Option<&[ToolDefinition]>) -> bool {
        match (tools, &self.agent.tools) {
            (None, None) => true,
            (Some(tools), Some(host)) => host.offers(tools),
            _ => false,
        }
    }
}

pub struct Pool<C: SessionConfig + 'static> {
    /// Warm sessions by ACP session id.
    warm: Mutex<HashMap<String, SlotCell<C>>>,
    spares: Mutex<Vec<Spare<C>>>,
    /// (Workspaces, whether with tools) a spare is being opened for.
    opening: Mutex<Vec<(PathBuf, bool)>>,
    /// The tasks opening them: stopped at shutdown, so no agent starts after it.
    openers: Mutex<Vec<tokio::task::AbortHandle>>,
    spare_limit: usize,
    warm_limit: usize,
    warm_idle: Duration,
    spare_idle: Duration,
    closed: AtomicBool,
}

impl<C: SessionConfig + 'static> Pool<C> {
    pub fn new(warmth: &Warmth) -> Arc<Pool<C>> {
        Arc::new(Pool {
            warm: Mutex::default(),
            spares: Mutex::default(),
            opening: Mutex::default(),
            openers: Mutex::default(),
            spare_limit: warmth.ahead,
            warm_limit: warmth.kept.max(1),
            warm_idle: warmth.kept_idle.max(Duration::from_secs(1)),
            spare_idle: warmth.ahead_idle.max(Duration::from_secs(1)),
            closed: AtomicBool::new(false),
        })
    }

    /// A spare session for a new conversation in `workspace` that hosts exactly `tools` (or,
    /// with `None`, no tools).
    pub fn take_spare(&self, workspace: &Path, tools: Option<&[ToolDefinition]>) -> Option<Agent<C>> {
        let mut spares = lock(&self.spares);
        for dead in spares.extract_if(.., |s| !s.agent.alive()) {
            retire(dead.agent);
        }
        let i = spares.iter().position(|s| s.workspace == workspace && s.hosts(tools))?;
        Some(spares.remove(i).agent)
    }

    /// Open a session for the next new conversation in `workspace`, in the background, hosting
    /// `tools` if given, with `open` (the agent's backend's way to open one, which decided that a
    /// spare may be opened now). `spares` limits each kind (with tools, without) on its own.
    pub fn refill<F, Fut>(self: &Arc<Self>, workspace: PathBuf, tools: Option<Vec<ToolDefinition>>, open: F)
    where
        F: FnOnce(PathBuf, Option<Vec<ToolDefinition>>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Agent<C>, TurnFailure>> + Send + 'static,
    {
        if self.spare_limit == 0 || self.closed.load(Ordering::SeqCst) {
            return;
        }
        {
            let mut spares = lock(&self.spares);
            let mut opening = lock(&self.opening);
            if opening.iter().any(|(w, _)| *w == workspace) {
                return;
            }
            if spares.iter().any(|s| s.workspace == workspace && s.hosts(tools.as_deref())) {
                return;
            }
            // One spare per workspace: one for other tools than these will not be taken.
            for stale in spares.extract_if(.., |s| s.workspace == workspace) {
                retire(stale.agent);
            }
            // The limit is per kind: a person switching between Ask and Agent chats keeps both.
            let same_kind = spares.iter().filter(|s| s.agent.tools.is_some() == tools.is_some()).count();
            let opening_same = opening.iter().filter(|(_, t)| *t == tools.is_some()).count();
            if same_kind + opening_same >= self.spare_limit {
                return;
            }
            opening.push((workspace.clone(), tools.is_some()));
        }
        let this = self.clone();
        let opener = tokio::spawn(async move {
            let opened = open(workspace.clone(), tools).await;
            let mut opening = lock(&this.opening);
            if let Some(i) = opening.iter().position(|(w, _)| *w == workspace) {
                opening.remove(i);
            }
            drop(opening);
            match opened {
                Ok(agent) => {
                    // Looked at under the spares' lock, which `shutdown` takes after it closes:
                    // a spare pushed after its drain would outlive it (seen under load: an agent
                    // alive after `shutdown` answered). Closed, the agent is dropped: killed.
                    let mut spares = lock(&this.spares);
                    if !this.closed.load(Ordering::SeqCst) {
                        tracing::debug!(pid = agent.pid(), "ACP session opened ahead");
                        spares.push(Spare { workspace, agent });
                    }
                }
                Err(f) => tracing::debug!(error = %f.error.message, "could not open an ACP session ahead"),
            }
        });
        let mut openers = lock(&self.openers);
        openers.retain(|o| !o.is_finished());
        openers.push(opener.abort_handle());
    }

    /// The warm session `session` in `workspace`, locked for a turn; empty when it is not warm
    /// (never was, died, expired), to be loaded into.
    pub async fn lock_session(&self, session: &str, workspace: &Path) -> Result<Slot<C>, TurnFailure> {
        let cell = lock(&self.warm).entry(session.to_owned()).or_default().clone();
        let Ok(mut slot) = tokio::time::timeout(BUSY_WAIT, cell.lock_owned()).await else {
            let error =
                BridgeError::new(ErrorKind::CliFailed, "The previous turn of this conversation is still stopping")
                    .hint("Try again in a moment.");
            return Err(error.into());
        };
        if let Some(agent) = slot.as_mut() {
            if !agent.alive() || agent.workspace != workspace {
                if let Some(agent) = slot.take() {
                    retire(agent);
                }
            }
        }
        Ok(slot)
    }

    /// `session` is no longer warm (its agent died, was killed or could not load it).
    pub fn forget(&self, session: &str) {
        lock(&self.warm).remove(session);
    }

    /// A new session's first turn succeeded: it is kept warm as the conversation's.
    pub fn keep(&self, session: &str, fresh: Fresh<C>) {
        lock(&self.warm).insert(session.to_owned(), fresh.keep());
    }

    /// Past the limit, the least recently used idle sessions are stopped.
    pub fn trim(&self) {
        let mut warm = lock(&self.warm);
        while warm.len() > self.warm_limit {
            let oldest = warm
                .iter()
                .filter_map(|(id, cell)| {
                    let slot = cell.try_lock().ok()?;
                    Some((id.clone(), slot.as_ref().map(|a| a.used)))
                })
                .min_by_key(|(_, used)| *used);
            let Some((id, _)) = oldest else { break };
            let Some(cell) = warm.remove(&id) else { break };
            match cell.clone().try_lock_owned() {
                Ok(mut slot) => {
                    if let Some(agent) = slot.take() {
                        retire(agent);
                    }
                }
                // A turn took it since it was picked: it stays.
                Err(_) => {
                    warm.insert(id, cell);
                    break;
                }
            }
        }
    }

    /// Idle sessions past their time, dead ones, and all idle ones when memory is `tight`.
    pub fn sweep(&self, tight: bool) {
        let (warm_idle, spare_idle) = (self.warm_idle, self.spare_idle);
        lock(&self.warm).retain(|_, cell| match cell.try_lock() {
            Ok(mut slot) => {
                let keep = slot.as_mut().is_some_and(|a| !tight && a.used.elapsed() < warm_idle && a.alive());
                if !keep {
                    if let Some(agent) = slot.take() {
                        retire(agent);
                    }
                }
                keep
            }
            Err(_) => true, // a turn runs on it
        });
        let stale: Vec<Spare<C>> = lock(&self.spares)
            .extract_if(.., |s| tight || s.agent.used.elapsed() >= spare_idle || !s.agent.alive())
            .collect();
        for spare in stale {
            retire(spare.agent);
        }
    }

    /// Warm agent processes (sessions and spares), for `status` and tests.
    pub fn warm_count(&self) -> usize {
        lock(&self.warm).len() + lock(&self.spares).len()
    }

    /// Stop every agent: no spare opens after this; agents still starting are stopped with
    /// their tasks; the others get end of input, so each can finish writing its session store,
    /// and whatever still runs after a short grace is killed with its tree.
    pub fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        // An agent still starting is stopped with its task (dropping it kills its tree).
        for opener in lock(&self.openers).drain(..) {
            opener.abort();
        }
        let mut agents: Vec<Agent<C>> = lock(&self.spares).drain(..).map(|s| s.agent).collect();
        for (_, cell) in lock(&self.warm).drain() {
            if let Ok(mut slot) = cell.try_lock() {
                agents.extend(slot.take());
            }
        }
        for agent in &agents {
            agent.close_input();
        }
        let deadline = std::time::Instant::now() + SHUTDOWN_GRACE;
        while agents.iter_mut().any(Agent::alive) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(agents);
    }
}

/// A new session until its first turn succeeds. Dropped before that — the turn failed, or was
/// cancelled and its future dropped — its agent is retired once the turn lets go of it (after a
/// cancel's grace): the engine never learnt the session's id, so nobody can resume it, and kept
/// warm it would only push real conversations out of `warmSessions`.
pub struct Fresh<C: SessionConfig + 'static>(Option<SlotCell<C>>);

impl<C: SessionConfig + 'static> Fresh<C> {
    /// A new session's agent, and the slot its first turn runs in.
    pub async fn new(agent: Agent<C>) -> (Fresh<C>, Slot<C>) {
        let cell: SlotCell<C> = Arc::new(AsyncMutex::new(Some(agent)));
        (Fresh(Some(cell.clone())), cell.lock_owned().await)
    }

    fn keep(mut self) -> SlotCell<C> {
        self.0.take().expect("taken only here")
    }
}

impl<C: SessionConfig + 'static> Drop for Fresh<C> {
    fn drop(&mut self) {
        let (Some(cell), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) else { return };
        runtime.spawn(async move {
            let mut slot = cell.lock_owned().await;
            if let Some(agent) = slot.take() {
                retire(agent);
            }
        });
    }
}

/// Stop an agent no turn needs — evicted (idle, past `warmSessions`, dead, another workspace),
/// replaced or finished: end of input, so it can save its session store as at shutdown, a
/// moment to exit, then its tree is killed (dropping the agent), whether it exited or not.
pub fn retire<C: SessionConfig + 'static>(mut agent: Agent<C>) {
    agent.close_input();
    tokio::spawn(async move {
        let deadline = Instant::now() + SHUTDOWN_GRACE * 2;
        while agent.alive() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(agent);
    });
}
