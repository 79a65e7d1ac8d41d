//! The router of one ACP agent's messages: a task reads what the agent sends, and `session/update`s
//! of our session and the agent's requests go to the turn that runs (if any); updates of other
//! sessions (a `session/load` replay, an `available_commands_update` before `session/new`
//! answered) are dropped; a request nobody runs a turn for is answered at once, so the agent never
//! waits on us.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::connection::{Connection, Incoming};
use crate::util::sync::lock;

/// What the router shares with the agent's owner.
pub(super) struct Shared {
    /// Our session, once `session/new` or `session/load` answered.
    pub(super) session: Mutex<Option<String>>,
    /// The running turn's inbox.
    pub(super) turn: Mutex<Option<mpsc::Sender<Incoming>>>,
    /// Ids of the agent's requests handed to a turn and not answered yet.
    pub(super) pending: Mutex<Vec<Value>>,
    pub(super) dead: AtomicBool,
    /// The agent's messages the router has handled (forwarded, answered or dropped), to match
    /// against [`Connection::request_marked`]'s mark.
    pub(super) routed: tokio::sync::watch::Sender<u64>,
}

pub(super) fn forget(shared: &Shared, id: &Value) {
    lock(&shared.pending).retain(|p| p != id);
}

pub fn cancelled_outcome() -> Value {
    json!({"outcome": {"outcome": "cancelled"}})
}

/// The answer to a `session/request_permission` (its `params`): the first of `kinds`
/// (`allow_once`, `reject_once`, …) among the options it offers, or cancelled when it offers none.
pub fn permission_answer(params: &Value, kinds: &[&str]) -> Value {
    let options = params.get("options").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let chosen = kinds.iter().find_map(|k| {
        options.iter().find(|o| o.get("kind").and_then(Value::as_str) == Some(k)).and_then(|o| o.get("optionId"))
    });
    chosen.map_or_else(cancelled_outcome, |option| json!({"outcome": {"outcome": "selected", "optionId": option}}))
}

pub(super) async fn route(
    mut incoming: mpsc::Receiver<Incoming>,
    conn: std::sync::Arc<Connection>,
    shared: std::sync::Arc<Shared>,
) {
    while let Some(message) = incoming.recv().await {
        route_one(message, &conn, &shared).await;
        shared.routed.send_modify(|n| *n += 1);
    }
    shared.dead.store(true, Ordering::SeqCst);
    lock(&shared.turn).take();
}

async fn route_one(message: Incoming, conn: &Connection, shared: &Shared) {
    {
        if let Incoming::Notification { method, params } = &message {
            if method == "session/update" {
                let ours = lock(&shared.session)
                    .as_deref()
                    .is_some_and(|s| params.get("sessionId").and_then(Value::as_str) == Some(s));
                if !ours {
                    return;
                }
            }
        }
        let turn = lock(&shared.turn).clone();
        let Some(turn) = turn else {
            answer_unattended(conn, message).await;
            return;
        };
        if let Incoming::Request { id, .. } = &message {
            lock(&shared.pending).push(id.clone());
        }
        if let Err(mpsc::error::SendError(message)) = turn.send(message).await {
            if let Incoming::Request { id, .. } = &message {
                forget(shared, id);
            }
            answer_unattended(conn, message).await;
        }
    }
}

/// Between turns nothing can be approved or answered: permission requests are cancelled, other
/// requests refused, notifications dropped.
async fn answer_unattended(conn: &Connection, message: Incoming) {
    if let Incoming::Request { id, method, .. } = message {
        tracing::debug!(%method, "the ACP agent asked something outside a turn; answered");
        let _ = if method == "session/request_permission" {
            conn.respond(id, cancelled_outcome()).await
        } else {
            conn.refuse(id, -32601, "Method not found").await
        };
    }
}
