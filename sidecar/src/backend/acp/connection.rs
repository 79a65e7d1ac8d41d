//! JSON-RPC 2.0 over newline-delimited JSON, both ways: our requests get their responses matched
//! by id; the agent's requests and notifications arrive on a channel, and every request of the
//! agent must be answered (a turn waits on it). One writer task owns the agent's stdin, so
//! messages never interleave. When the agent's stdout ends, every pending request fails with
//! [`RpcError::Closed`] at once: nothing waits on a dead agent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::util::io::{read_line_bounded, LineRead};
use crate::util::sync::{lock, AbortOnDrop};

/// A message longer than this ends the connection (file contents travel inside tool calls, so
/// lines of several MiB are normal; 64 MiB is not).
pub const MAX_LINE: usize = 64 * 1024 * 1024;
/// Messages queued for the agent's stdin.
const OUTBOX: usize = 256;
/// Messages from the agent queued for the backend.
const INBOX: usize = 1024;

#[derive(Debug, Clone, PartialEq)]
pub enum RpcError {
    /// The agent answered with a JSON-RPC error.
    Remote { code: i64, message: String, data: Option<Value> },
    /// The connection ended before the answer came.
    Closed,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RpcError::Remote { code, message, .. } => write!(f, "{message} ({code})"),
            RpcError::Closed => f.write_str("the agent closed the connection"),
        }
    }
}

/// What the agent sends us unasked.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Notification {
        method: String,
        params: Value,
    },
    /// Must be answered with [`Connection::respond`] (or [`Connection::refuse`]).
    Request {
        id: Value,
        method: String,
        params: Value,
    },
}

/// Requests waiting for their answer; `closed` once the agent's output ended (a request made
/// after that fails at once instead of waiting for an answer no one will send).
#[derive(Default)]
struct PendingMap {
    waiting: HashMap<u64, oneshot::Sender<Marked>>,
    closed: bool,
    /// The agent's requests and notifications queued so far.
    received: u64,
}

type Pending = Arc<Mutex<PendingMap>>;

/// An answer and how many of the agent's messages arrived before it (see [`Connection::request_marked`]).
type Marked = (Result<Value, RpcError>, u64);

/// The client side of one connection. Dropping it stops its tasks (the agent sees its stdin close
/// once the child's handle goes too).
pub struct Connection {
    out: mpsc::Sender<Vec<u8>>,
    pending: Pending,
    next_id: AtomicU64,
    _reader: AbortOnDrop,
    _writer: AbortOnDrop,
}

impl Connection {
    /// Start reading `input` (the agent's stdout) and writing `output` (its stdin).
    pub fn start<R, W>(input: R, output: W) -> (Connection, mpsc::Receiver<Incoming>)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, out_rx) = mpsc::channel(OUTBOX);
        let (in_tx, in_rx) = mpsc::channel(INBOX);
        let pending: Pending = Arc::default();
        let reader = tokio::spawn(read_messages(input, in_tx, pending.clone()));
        let writer = tokio::spawn(write_messages(output, out_rx));
        let conn = Connection {
            out,
            pending,
            next_id: AtomicU64::new(1),
            _reader: AbortOnDrop(reader.abort_handle()),
            _writer: AbortOnDrop(writer.abort_handle()),
        };
        (conn, in_rx)
    }

    /// Send a request and wait for its answer. Callers bound the wait themselves: what a slow
    /// answer means differs per method (a turn, a hanging `authenticate`).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.request_marked(method, params).await.0
    }

    /// [`Connection::request`], also saying how many of the agent's own messages (requests and
    /// notifications) arrived before the answer. Those messages reach the [`Incoming`] channel in
    /// order, but the answer overtakes whoever consumes it: a prompt's answer comes after its
    /// last update on the wire, and the mark lets the caller wait until that update was handled.
    pub async fn request_marked(&self, method: &str, params: Value) -> Marked {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.closed {
                return (Err(RpcError::Closed), pending.received);
            }
            pending.waiting.insert(id, tx);
        }
        let _forget = ForgetOnDrop { pending: &self.pending, id };
        if let Err(e) = self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await {
            return (Err(e), lock(&self.pending).received);
        }
        match rx.await {
            Ok(marked) => marked,
            Err(_) => (Err(RpcError::Closed), lock(&self.pending).received),
        }
    }

    /// Close the agent's stdin (its signal to finish and exit); nothing more can be sent.
    pub fn close_input(&self) {
        self._writer.0.abort();
    }

    pub async fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// Answer a request of the agent.
    pub async fn respond(&self, id: Value, result: Value) -> Result<(), RpcError> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result})).await
    }

    /// Answer a request of the agent with an error (-32601 for a method we do not serve).
    pub async fn refuse(&self, id: Value, code: i64, message: &str) -> Result<(), RpcError> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})).await
    }

    async fn send(&self, message: Value) -> Result<(), RpcError> {
        let mut line = serde_json::to_vec(&message).map_err(|_| RpcError::Closed)?;
        line.push(b'\n');
        self.out.send(line).await.map_err(|_| RpcError::Closed)
    }
}

/// A request whose caller went away (cancelled, timed out) leaves no entry behind.
struct ForgetOnDrop<'a> {
    pending: &'a Pending,
    id: u64,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        lock(self.pending).waiting.remove(&self.id);
    }
}

async fn write_messages<W: AsyncWrite + Unpin>(mut output: W, mut rx: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = rx.recv().await {
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            tracing::debug!("the agent stopped reading its stdin");
            return;
        }
    }
    let _ = output.shutdown().await;
}

async fn read_messages<R: AsyncRead + Unpin>(input: R, incoming: mpsc::Sender<Incoming>, pending: Pending) {
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::with_capacity(4096);
    let mut skipped = 0u64;
    loop {
        line.clear();
        match read_line_bounded(&mut input, &mut line, MAX_LINE).await {
            Ok(LineRead::Line) => {}
            Ok(LineRead::Eof) => break,
            Ok(LineRead::TooLong) => {
                tracing::warn!(max = MAX_LINE, "the agent sent a message over the size limit; closing");
                break;
            }
            Err(e) => {
                tracing::debug!(error = %e, "reading the agent's output failed");
                break;
            }
        }
        let Some(message) = parse(&line) else {
            // Not a JSON-RPC message (a stray log line): skipped, counted.
            skipped += 1;
            continue;
        };
        match message {
            Parsed::Response { id, outcome } => {
                let (waiter, received) = {
                    let mut pending = lock(&pending);
                    (id.as_u64().and_then(|id| pending.waiting.remove(&id)), pending.received)
                };
                match waiter {
                    Some(tx) => {
                        let _ = tx.send((outcome, received));
                    }
                    None => tracing::debug!(%id, "a response to no request of ours"),
                }
            }
            Parsed::Incoming(m) => {
                if incoming.send(m).await.is_err() {
                    // Nobody listens: requests would go unanswered, and the agent would wait.
                    break;
                }
                lock(&pending).received += 1;
            }
        }
    }
    if skipped > 0 {
        tracing::debug!(skipped, "skipped lines from the agent that were not JSON-RPC");
    }
    let mut pending = lock(&pending);
    pending.closed = true;
    let received = pending.received;
    for (_, tx) in pending.waiting.drain() {
        let _ = tx.send((Err(RpcError::Closed), received));
    }
}

enum Parsed {
    Response { id: Value, outcome: Result<Value, RpcError> },
    Incoming(Incoming),
}

fn parse(line: &[u8]) -> Option<Parsed> {
    let mut v: Value = serde_json::from_slice(line).ok()?;
    let obj = v.as_object_mut()?;
    let method = obj.get("method").and_then(Value::as_str).map(str::to_string);
    let params = obj.remove("params").unwrap_or(Value::Null);
    let id = obj.remove("id");
    match (method, id) {
        (Some(method), Some(id)) if !id.is_null() => Some(Parsed::Incoming(Incoming::Request { id, method, params })),
        (Some(method), _) => Some(Parsed::Incoming(Incoming::Notification { method, params })),
        (None, Some(id)) => {
            let outcome = match obj.remove("error") {
                Some(e) => Err(RpcError::Remote {
                    code: e.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                    message: e.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
                    data: e.get("data").cloned(),
                }),
                None => Ok(obj.remove("result").unwrap_or(Value::Null)),
            };
            Some(Parsed::Response { id, outcome })
        }
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, DuplexStream};

    /// The agent's end: reads our lines, writes its own.
    struct Agent {
        from_client: tokio::io::Lines<BufReader<DuplexStream>>,
        to_client: DuplexStream,
    }

    impl Agent {
        async fn next(&mut self) -> Value {
            let line = self.from_client.next_line().await.unwrap().expect("a line");
            serde_json::from_str(&line).unwrap()
        }
        async fn say(&mut self, text: &str) {
            self.to_client.write_all(format!("{text}\n").as_bytes()).await.unwrap();
        }
    }

    fn pair() -> (Connection, mpsc::Receiver<Incoming>, Agent) {
        let (client_out, agent_in) = tokio::io::duplex(1 << 16);
        let (agent_out, client_in) = tokio::io::duplex(1 << 16);
        let (conn, incoming) = Connection::start(client_in, client_out);
        (conn, incoming, Agent { from_client: BufReader::new(agent_in).lines(), to_client: agent_out })
    }

    #[tokio::test]
    async fn requests_are_matched_to_their_answers_whatever_the_order() {
        let (conn, _incoming, mut agent) = pair();
        let conn = Arc::new(conn);
        let (a, b) = (conn.clone(), conn.clone());
        let first = tokio::spawn(async move { a.request("initialize", json!({"protocolVersion": 1})).await });
        let second = tokio::spawn(async move { b.request("session/new", json!({"cwd": "/w"})).await });
        let (m1, m2) = (agent.next().await, agent.next().await);
        let id_of = |m: &Value, method: &str| if m["method"] == method { m["id"].clone() } else { Value::Null };
        let init_id = if m1["method"] == "initialize" { m1["id"].clone() } else { id_of(&m2, "initialize") };
        let new_id = if m1["method"] == "session/new" { m1["id"].clone() } else { id_of(&m2, "session/new") };
        agent.say(&json!({"jsonrpc": "2.0", "id": new_id, "error": {"code": -32603, "message": "Failed to initialize session services"}}).to_string()).await;
        agent.say("this is a log line, not JSON-RPC").await;
        agent.say(&json!({"jsonrpc": "2.0", "id": init_id, "result": {"protocolVersion": 1}}).to_string()).await;
        assert_eq!(first.await.unwrap().unwrap(), json!({"protocolVersion": 1}));
        let e = second.await.unwrap().unwrap_err();
        assert!(
            matches!(&e, RpcError::Remote { code: -32603, message, .. } if message.contains("session services")),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn the_agents_requests_and_notifications_arrive_and_can_be_answered() {
        let (conn, mut incoming, mut agent) = pair();
        agent.say(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk"}}}"#).await;
        agent
            .say(r#"{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"S"}}"#)
            .await;
        agent.say(r#"{"jsonrpc":"2.0","id":7,"method":"cursor/ask_question","params":{}}"#).await;
        let n = incoming.recv().await.unwrap();
        assert!(
            matches!(&n, Incoming::Notification { method, params } if method == "session/update" && params["sessionId"] == "S")
        );
        let Incoming::Request { id, method, .. } = incoming.recv().await.unwrap() else { panic!("a request") };
        assert_eq!((id.clone(), method.as_str()), (json!("p1"), "session/request_permission"));
        conn.respond(id, json!({"outcome": {"outcome": "cancelled"}})).await.unwrap();
        assert_eq!(
            agent.next().await,
            json!({"jsonrpc": "2.0", "id": "p1", "result": {"outcome": {"outcome": "cancelled"}}})
        );
        let Incoming::Request { id, .. } = incoming.recv().await.unwrap() else { panic!("a request") };
        conn.refuse(id, -32601, "not supported").await.unwrap();
        let refused = agent.next().await;
        assert_eq!((refused["id"].clone(), refused["error"]["code"].clone()), (json!(7), json!(-32601)));
    }

    #[tokio::test]
    async fn a_dead_agent_fails_every_pending_request_at_once() {
        let (conn, _incoming, agent) = pair();
        let conn = Arc::new(conn);
        let waiting = {
            let conn = conn.clone();
            tokio::spawn(async move { conn.request("session/prompt", json!({})).await })
        };
        tokio::task::yield_now().await;
        drop(agent); // its stdout closes
        let r = tokio::time::timeout(std::time::Duration::from_secs(5), waiting).await.expect("no hang").unwrap();
        assert_eq!(r, Err(RpcError::Closed));
        assert_eq!(conn.request("session/prompt", json!({})).await, Err(RpcError::Closed));
    }

    #[tokio::test]
    async fn an_abandoned_request_leaves_nothing_pending() {
        let (conn, _incoming, _agent) = pair();
        let r =
            tokio::time::timeout(std::time::Duration::from_millis(20), conn.request("authenticate", json!({}))).await;
        assert!(r.is_err(), "the agent never answers");
        assert!(lock(&conn.pending).waiting.is_empty());
    }
}
