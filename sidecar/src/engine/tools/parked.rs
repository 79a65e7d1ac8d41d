//! Parked turns: on a backend that hosts the client's tools (an MCP server of ours attached to
//! the agent's session), the agent's turn waits inside each tool call while the client runs the
//! tool. The client's response ends with the calls; the agent's turn stays alive here, and the
//! request that brings the results answers the calls and streams the rest of the same turn.
//!
//! A call parked longer than [`DETACH_AFTER`] (Copilot waits minutes for a person to confirm a
//! terminal command; the agent's MCP client gives up after about a minute) is answered "result
//! pending", and the real result reaches the same chat later as a prompt of its own.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::backend::{Activity, ClientCall, Event, EventSink, ToolReply, TurnEnd, TurnFailure};
use crate::util::sync::lock;
use crate::vocab::ToolResult;

/// Parallel calls arriving this close together go to the client in one response.
pub const BATCH_WINDOW: Duration = Duration::from_millis(50);
/// Under the agent's own MCP call timeout (about 60 s).
pub const DETACH_AFTER: Duration = Duration::from_secs(45);
/// What a call still parked at [`DETACH_AFTER`] is answered.
pub const PENDING_TEXT: &str = "result pending: the user's editor is still running this tool (it may be waiting \
for the user to confirm). Its result arrives in the next message; stop here and wait for it.";

/// A backend turn running in a task of its own, its events and its calls of the client's tools.
pub struct Running {
    pub task: JoinHandle<Result<TurnEnd, TurnFailure>>,
    pub events: mpsc::Receiver<Event>,
    pub calls: mpsc::Receiver<ClientCall>,
    /// The turn's activity: a parked call is waiting for the client, not the agent being silent.
    pub activity: Arc<Activity>,
    /// Its turn slot, given back while it is parked (`engine/slots.rs`).
    pub slot: crate::engine::slots::Held,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Dropped before its end (a cancel, a client gone): the turn stops, and with it the agent's
        // turn (the backend's future is dropped), and every parked call is answered with an error.
        self.task.abort();
    }
}

/// How far [`drive`] got.
pub enum Drive {
    Ended(Result<TurnEnd, TurnFailure>),
    /// The agent waits for these calls (our ids), which went to the client.
    Parked(Running, Vec<(String, oneshot::Sender<ToolReply>)>),
}

/// Forward the running turn's events to `sink` until it ends or calls the client's tools (then
/// gather the calls that come within [`BATCH_WINDOW`], or only one when the client wants one at
/// a time). A call that does not fit its tool goes back to the agent at once with the reason,
/// as the prompt protocol's repair does: the client never sees it.
///
/// `continued`: the run goes on in a new response (its results just came), whose text must not
/// open with the paragraph break the agent put after the tool calls.
pub async fn drive(mut run: Running, sink: &mut EventSink, set: &super::ToolSet, continued: bool) -> Drive {
    let parallel = set.parallel;
    let mut opening = continued;
    let mut pending: Vec<(String, oneshot::Sender<ToolReply>)> = Vec::new();
    let batch = tokio::time::sleep(Duration::from_secs(3600));
    tokio::pin!(batch);
    loop {
        let more_calls = pending.is_empty() || parallel;
        tokio::select! {
            biased;
            event = run.events.recv() => match event {
                Some(Event::Text(text)) if opening => {
                    let text = text.trim_start_matches(['\n', '\r']);
                    if !text.is_empty() {
                        opening = false;
                        sink.emit(Event::Text(text.to_string())).await;
                    }
                }
                Some(event) => sink.emit(event).await,
                None => {
                    let end = match (&mut run.task).await {
                        Ok(end) => end,
                        Err(e) => Err(crate::error::BridgeError::internal(format!("the turn's task failed: {e}")).into()),
                    };
                    return Drive::Ended(end);
                }
            },
            call = run.calls.recv(), if more_calls => {
                let Some(call) = call else { continue };
                let parsed = super::calls::Parsed { name: call.name.clone(), arguments: call.input.clone() };
                if let Err(why) = super::calls::validate(std::slice::from_ref(&parsed), set) {
                    let _ = call.reply.send(ToolReply { text: format!("Invalid call: {why}."), is_error: true });
                    continue;
                }
                let call_id = super::new_call_id();
                sink.emit(Event::ToolCall { call_id: call_id.clone(), name: call.name, input: call.input }).await;
                pending.push((call_id, call.reply));
                if !parallel {
                    return Drive::Parked(run, pending);
                }
                batch.as_mut().reset(tokio::time::Instant::now() + BATCH_WINDOW);
            },
            () = &mut batch, if !pending.is_empty() => return Drive::Parked(run, pending),
        }
    }
}

/// Answer parked calls with the client's results (a result it did not send is an error the
/// agent sees, never a hang).
pub fn answer(pending: Vec<(String, oneshot::Sender<ToolReply>)>, results: &[&ToolResult]) {
    for (call_id, reply) in pending {
        let text = match results.iter().find(|r| r.call_id == call_id) {
            Some(r) => ToolReply { text: r.content.clone(), is_error: r.is_error },
            None => ToolReply { text: "The client returned no result for this call.".into(), is_error: true },
        };
        let _ = reply.send(text);
    }
}

/// A parked turn, with what continuing it needs.
pub struct Parked<S> {
    /// Who may continue it: the client whose response carried the calls.
    pub owner: String,
    pub call_ids: Vec<String>,
    pub running: Running,
    pub pending: Vec<(String, oneshot::Sender<ToolReply>)>,
    /// The engine's own state of the turn (its session and plan).
    pub state: S,
    /// Keeps the idle watchdog off while the client runs the tools.
    pub waiting: crate::backend::events::Opening,
}

/// The parked turns of an engine, by our call ids.
pub struct Parking<S> {
    turns: std::sync::Mutex<HashMap<u64, Parked<S>>>,
    /// Turns being detached (taken out of `turns`, the agent ending its turn, the chat not yet
    /// recorded), by key.
    detaching: std::sync::Mutex<HashMap<u64, Marked>>,
    next: std::sync::atomic::AtomicU64,
}

impl<S> Default for Parking<S> {
    fn default() -> Self {
        Parking { turns: Default::default(), detaching: Default::default(), next: Default::default() }
    }
}

/// A turn being detached: whose it is, its calls, and a receiver that ends with the detach.
struct Marked {
    owner: String,
    call_ids: Vec<String>,
    ended: watch::Receiver<()>,
}

/// What [`Parking::take`] found for a request's results.
pub enum Taken<S> {
    Parked(Parked<S>),
    /// The turn that made the calls is being detached: wait for [`DetachEnd::wait`], then send
    /// the results to the chat it recorded.
    Detaching(DetachEnd),
    None,
}

/// The end of a detach, to wait for.
pub struct DetachEnd(watch::Receiver<()>);

impl DetachEnd {
    pub async fn wait(mut self) {
        // Nothing is ever sent: this returns when the detach drops its sender.
        let _ = self.0.changed().await;
    }
}

/// Held while a turn is being detached; results for its calls wait until it is dropped.
pub struct Detaching<'a, S> {
    parking: &'a Parking<S>,
    key: u64,
    _done: watch::Sender<()>,
}

impl<S> Drop for Detaching<'_, S> {
    fn drop(&mut self) {
        lock(&self.parking.detaching).remove(&self.key);
    }
}

impl<S: Send + 'static> Parking<S> {
    /// Park a turn; returns its key (for [`Parking::take_to_detach`]).
    pub fn park(&self, parked: Parked<S>) -> u64 {
        let key = self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        lock(&self.turns).insert(key, parked);
        key
    }

    /// The parked turn waiting for one of `call_ids`, taken out, if `owner` owns it; or, when
    /// that turn is being detached, what ends with the detach. Another client's results never
    /// reach a turn it does not own.
    pub fn take(&self, owner: &str, call_ids: &[&str]) -> Taken<S> {
        let made = |ids: &[String]| ids.iter().any(|c| call_ids.contains(&c.as_str()));
        let mut turns = lock(&self.turns);
        let Some(key) = turns.iter().find(|(_, p)| made(&p.call_ids)).map(|(k, _)| *k) else {
            // Looked up under the turns' lock, which a detach holds while it marks its turn.
            let detaching = lock(&self.detaching);
            return match detaching.values().find(|m| m.owner == owner && made(&m.call_ids)) {
                Some(m) => Taken::Detaching(DetachEnd(m.ended.clone())),
                None => Taken::None,
            };
        };
        if turns[&key].owner != owner {
            tracing::warn!("tool results for calls of another client were ignored");
            return Taken::None;
        }
        turns.remove(&key).map_or(Taken::None, Taken::Parked)
    }

    /// The turn under `key`, taken out if still parked, to detach it: until the returned guard
    /// is dropped, [`Parking::take`] tells results for its calls to wait. Taken and marked under
    /// one lock, so results find the turn either parked or being detached, never neither.
    pub fn take_to_detach(&self, key: u64) -> Option<(Parked<S>, Detaching<'_, S>)> {
        let mut turns = lock(&self.turns);
        let parked = turns.remove(&key)?;
        let (done, ended) = watch::channel(());
        let marked = Marked { owner: parked.owner.clone(), call_ids: parked.call_ids.clone(), ended };
        lock(&self.detaching).insert(key, marked);
        Some((parked, Detaching { parking: self, key, _done: done }))
    }

    /// Stop the turns of `owner` whose state and call ids match (dropping one stops its agent's
    /// turn and answers its calls with an error); returns how many.
    pub fn remove_if(&self, owner: &str, matches: impl Fn(&S, &[String]) -> bool) -> usize {
        let mut turns = lock(&self.turns);
        let before = turns.len();
        turns.retain(|_, p| p.owner != owner || !matches(&p.state, &p.call_ids));
        before - turns.len()
    }

    pub fn len(&self) -> usize {
        lock(&self.turns).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stop every parked turn (shutdown).
    pub fn clear(&self) {
        lock(&self.turns).clear();
    }
}
