//! The HTTP side of the host: one route, POST only, JSON answers (no SSE stream: nothing here
//! ever speaks first). The secret path and the bearer token are checked, in constant time, before
//! the body is read, so a program on this machine that does not know them learns nothing and
//! cannot make us read megabytes. A `tools/call` is parked: its HTTP response stays open until the
//! client's reply comes back on the [`McpCall`]'s channel, the agent cancels it, or the host
//! stops. Each call is parked on its own, so parallel calls wait independently.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::header::{ALLOW, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch, Notify};

use super::calls::{McpCall, McpReply};
use super::jsonrpc::{self, INVALID_REQUEST, REQUEST_CANCELLED, SESSION_NOT_FOUND};
use super::methods::{self, Pending, Step};
use super::offer::ToolOffer;
use crate::util::redact::{bearer, constant_time_eq};
use crate::util::sync::{lock, OnDrop};
use crate::vocab::Secret;

/// Largest request body. The agent sends tool arguments (a file's new content, say): generous.
pub const MAX_BODY: usize = 8 * 1024 * 1024;
/// Sessions remembered; an agent that keeps re-initializing loses its oldest ones first.
const MAX_SESSIONS: usize = 16;
pub const SESSION_HEADER: &str = "mcp-session-id";

/// What the agent reads when a call cannot get the client's result.
pub const NO_RESULT: &str = "The editor returned no result for this tool call (the request was dropped).";
pub const STOPPED: &str = "cursor-bridge stopped this session before the tool's result arrived.";
pub const NOBODY: &str = "cursor-bridge is not taking tool calls for this session any more.";

/// Random bytes as lowercase hex, from the operating system's generator.
pub fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| std::io::Error::other(format!("no random bytes from the system: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A parked call: the agent's session (its `Mcp-Session-Id`) and the request id as JSON text.
type CallKey = (Option<String>, String);

/// What every request of one host shares.
pub struct Shared {
    pub offer: ToolOffer,
    /// `/mcp/<random>`: the URL is a secret too, a second lock beside the token.
    pub path: Secret,
    pub token: Secret,
    pub calls: mpsc::Sender<McpCall>,
    pub listed: watch::Sender<bool>,
    /// Its sender is the host's: when that is dropped, `changed()` returns and parked calls end.
    pub stop: watch::Receiver<()>,
    /// The MCP sessions the agent opened (`Mcp-Session-Id`s), oldest first; none at the start.
    pub(super) sessions: Mutex<VecDeque<String>>,
    /// Parked calls by (session, request id as JSON text), for `notifications/cancelled`.
    pub(super) in_flight: Mutex<HashMap<CallKey, Arc<Notify>>>,
}

impl Shared {
    fn open_session(&self) -> String {
        // Not a credential (the token is), so a failing system generator need not fail the call.
        let id = random_hex(16).unwrap_or_else(|_| format!("{:016x}", crate::util::ids::random_u64()));
        let mut sessions = lock(&self.sessions);
        if sessions.len() == MAX_SESSIONS {
            sessions.pop_front();
        }
        sessions.push_back(id.clone());
        id
    }

    fn knows_session(&self, id: &str) -> bool {
        lock(&self.sessions).iter().any(|s| s == id)
    }

    fn cancel(&self, session: &Option<String>, id: &Value) {
        if let Some(cancelled) = lock(&self.in_flight).get(&(session.clone(), id.to_string())) {
            cancelled.notify_one();
        }
    }

    /// Registers the call for cancellation at once (a cancel may come before the call is polled)
    /// and returns the future that answers it.
    fn park(self: &Arc<Self>, session: Option<String>, pending: Pending) -> impl Future<Output = Value> {
        let key = (session, pending.id.to_string());
        let cancelled = Arc::new(Notify::new());
        lock(&self.in_flight).insert(key.clone(), cancelled.clone());
        let shared = self.clone();
        async move {
            let _unregister = OnDrop(|| {
                let mut in_flight = lock(&shared.in_flight);
                // A later request that reused the id replaced our entry: leave it.
                if in_flight.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cancelled)) {
                    in_flight.remove(&key);
                }
            });
            shared.run_call(pending, &cancelled).await
        }
    }

    async fn run_call(&self, pending: Pending, cancelled: &Notify) -> Value {
        let Pending { id, tool, arguments } = pending;
        tracing::debug!(tool = %tool, "mcp: tools/call parked");
        let (reply, answer) = oneshot::channel::<McpReply>();
        let mut stop = self.stop.clone();
        let cancelled = cancelled.notified();
        tokio::pin!(cancelled);
        // Handing the call over waits while the backend's queue is full; the agent may give up meanwhile.
        tokio::select! {
            sent = self.calls.send(McpCall { tool, arguments, reply }) => {
                if sent.is_err() {
                    return methods::tool_result(id, NOBODY, true);
                }
            }
            _ = stop.changed() => return methods::tool_result(id, STOPPED, true),
            _ = &mut cancelled => return jsonrpc::error(id, REQUEST_CANCELLED, "cancelled by the client"),
        }
        tokio::select! {
            reply = answer => match reply {
                Ok(reply) => methods::tool_result(id, &reply.text, reply.is_error),
                Err(_) => methods::tool_result(id, NO_RESULT, true),
            },
            _ = stop.changed() => methods::tool_result(id, STOPPED, true),
            // The agent ignores the answer to a cancelled request; the HTTP response must still end.
            _ = &mut cancelled => jsonrpc::error(id, REQUEST_CANCELLED, "cancelled by the client"),
        }
    }
}

pub fn router(shared: Arc<Shared>) -> Router {
    // One handler for every path and method: the path is compared as a secret, not routed.
    Router::new().fallback(handle).with_state(shared)
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    if !constant_time_eq(request.uri().path().as_bytes(), shared.path.expose().as_bytes()) {
        // OAuth discovery (`/.well-known/oauth-protected-resource…`) lands here too: a 404 tells
        // the agent's client that no login is needed.
        return plain(StatusCode::NOT_FOUND, "not found");
    }
    let given = request.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer);
    if !given.is_some_and(|t| constant_time_eq(t.as_bytes(), shared.token.expose().as_bytes())) {
        tracing::warn!(token_given = given.is_some(), "mcp: refused a request without the right bearer token");
        let mut response = plain(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
        response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    if request.method() != Method::POST {
        // GET would open an SSE stream for messages of ours; we have none. DELETE (end the
        // session) may be refused the same way.
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "this MCP server takes POST only (no SSE stream)");
        response.headers_mut().insert(ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    let session = request.headers().get(SESSION_HEADER).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let Ok(body) = to_bytes(request.into_body(), MAX_BODY).await else {
        let refused = jsonrpc::error(Value::Null, INVALID_REQUEST, &format!("the body is over {MAX_BODY} bytes"));
        return json(StatusCode::PAYLOAD_TOO_LARGE, &refused, None);
    };
    let handled = match methods::handle(&shared.offer, &body) {
        Ok(handled) => handled,
        Err(refused) => return json(StatusCode::BAD_REQUEST, &refused, None),
    };
    // A session we did not open (or forgot): the client must initialize again.
    if let Some(id) = &session {
        if !handled.initialize && !shared.knows_session(id) {
            let refused = jsonrpc::error(Value::Null, SESSION_NOT_FOUND, "unknown Mcp-Session-Id: initialize again");
            return json(StatusCode::NOT_FOUND, &refused, None);
        }
    }
    if handled.listed {
        shared.listed.send_replace(true);
    }
    let opened = handled.initialize.then(|| shared.open_session());

    let mut answers: Vec<Option<Value>> = Vec::with_capacity(handled.steps.len());
    let mut parked = Vec::new();
    for step in handled.steps {
        match step {
            Step::Answer(answer) => answers.push(Some(answer)),
            Step::Call(pending) => {
                let slot = answers.len();
                let call = shared.park(session.clone(), pending);
                parked.push(async move { (slot, call.await) });
                answers.push(None);
            }
            Step::Cancel(id) => shared.cancel(&session, &id),
            Step::Nothing => {}
        }
    }
    for (slot, answer) in futures_util::future::join_all(parked).await {
        answers[slot] = Some(answer);
    }
    match methods::assemble(handled.batch, answers.into_iter().flatten().collect()) {
        Some(answer) => json(StatusCode::OK, &answer, opened.as_deref()),
        None => {
            let mut response = StatusCode::ACCEPTED.into_response();
            add_session(&mut response, opened.as_deref());
            response
        }
    }
}

fn json(status: StatusCode, body: &Value, session: Option<&str>) -> Response {
    let mut response = (status, [(CONTENT_TYPE, "application/json")], Body::from(body.to_string())).into_response();
    add_session(&mut response, session);
    response
}

fn add_session(response: &mut Response, session: Option<&str>) {
    if let Some(value) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, [(CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}
