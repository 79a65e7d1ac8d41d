//! The dispatch loop: reads frames, answers each request exactly once, and owns the in-flight map.
//!
//! - One writer task (`outbox.rs`) owns stdout; everything else sends it finished JSON bodies.
//! - Every request runs as its own task through jsonrpsee's `RpcModule`, supervised by a task that
//!   sends its one answer: the response, -32603 on a panic, or -32800 when it was stopped
//!   (`$/cancelRequest`, `shutdown`, end of input, a signal). Stopping aborts the task (dropping a
//!   turn kills its CLI process group); the answer goes out once the task is gone, so no delta of
//!   it follows.
//! - jsonrpsee sees a synthetic id; the client's id (any JSON number or string, as written) is put
//!   back into the response, and keys the in-flight map.
//! - `initialize` runs inline, so requests that follow it in the stream see an initialized sidecar.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpsee::RpcModule;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio_util::codec::FramedRead;

use super::handlers;
use super::outbox::{error_body, outbox, protocol_error, write_frames};
use super::state::Connection;
use super::transport::{FrameCodec, FrameError};
use crate::error::BridgeError;
use crate::protocol::{code, notification, request, ErrorKind};
use crate::startup::{termination_signal, Paths};
use crate::util::sync::lock;

/// The parts of a frame the loop needs to route it. `params` stays raw for the handler, and `id`
/// raw to be echoed back exactly as the client wrote it.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    jsonrpc: Option<&'a str>,
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
}

/// A field that is there, `null` included (`Option<&RawValue>` alone reads `null` as absent).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Why a request was stopped before it finished; it is answered with this.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Cancelled,
    ShuttingDown,
}

impl Stop {
    fn error(self) -> BridgeError {
        match self {
            Stop::Cancelled => BridgeError::cancelled(),
            Stop::ShuttingDown => BridgeError::new(ErrorKind::Cancelled, SHUTTING_DOWN),
        }
    }
}

/// The -32800 message of requests stopped by `shutdown`, end of input or a signal.
const SHUTTING_DOWN: &str = "the sidecar is shutting down";

/// A request whose answer has not been sent. Only its supervisor removes it, after answering.
struct Flight {
    abort: AbortHandle,
    /// Set by whoever stops the request; the supervisor answers with it.
    stopped: Option<Stop>,
    /// Ends (the sender is dropped) when the supervisor has sent the answer.
    answered: Option<oneshot::Receiver<()>>,
    /// `false` for `shutdown` itself: a second `shutdown` does not stop the first.
    stoppable: bool,
}

/// Requests in flight by [`id_key`] of the client's id.
type InFlight = Arc<Mutex<HashMap<String, Flight>>>;

/// How long `shutdown` (for its own answer) and the end of the loop wait for stopped requests to
/// be answered.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// Serve the protocol until `exit` or end of input. Returns the process exit code.
pub async fn serve<R, W>(input: R, output: W, paths: Paths) -> i32
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, outbox_rx) = outbox();
    serve_connection(input, output, Arc::new(Connection::new(outbox, paths)), outbox_rx).await
}

/// [`serve`] on a connection of the caller's (the in-process tests give it a scripted backend).
pub async fn serve_connection<R, W>(
    input: R,
    output: W,
    app: Arc<Connection>,
    outbox_rx: mpsc::Receiver<Vec<u8>>,
) -> i32
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let module = handlers::module(app.clone());
    serve_module(input, output, app, module, outbox_rx).await
}

/// [`serve`] with a given method table (tests add methods that misbehave on purpose).
pub async fn serve_module<R, W>(
    input: R,
    output: W,
    app: Arc<Connection>,
    module: RpcModule<Connection>,
    outbox_rx: mpsc::Receiver<Vec<u8>>,
) -> i32
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let writer = tokio::spawn(write_frames(output, outbox_rx));
    let module = Arc::new(module);
    let in_flight: InFlight = Arc::default();
    let mut tasks = tokio::task::JoinSet::new();
    let mut frames = FramedRead::new(input, FrameCodec::default());

    // SIGTERM / SIGINT / SIGHUP (a service manager, Ctrl-C, a closed terminal) end the sidecar
    // like end of input: every request is answered, every child stopped first, none orphaned.
    let terminated = termination_signal();
    tokio::pin!(terminated);
    loop {
        let next = tokio::select! {
            next = next_frame(&mut frames) => next,
            signal = &mut terminated => {
                tracing::info!(signal, "terminated by a signal; shutting down");
                break;
            }
        };
        let frame = match next {
            None => {
                tracing::info!("input closed; shutting down");
                break;
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "reading input failed; shutting down");
                break;
            }
            Some(Ok(Err(frame_error))) => {
                tracing::warn!(error = %frame_error, "bad frame");
                let (code, message) = match &frame_error {
                    FrameError::TooLarge { .. } => (code::INVALID_REQUEST, frame_error.to_string()),
                    FrameError::Malformed(_) => (code::PARSE_ERROR, frame_error.to_string()),
                };
                app.outbox.send(protocol_error(RawValue::NULL, code, &message)).await;
                continue;
            }
            Some(Ok(Ok(frame))) => frame,
        };
        if handle_frame(&frame, &app, &module, &in_flight, &mut tasks).await == Flow::Exit {
            break;
        }
        // Reap finished request tasks as we go so the set does not grow.
        while tasks.try_join_next().is_some() {}
    }

    // Stop every request (dropping a turn kills its CLI group); their supervisors answer them
    // (the client may still be reading), then make sure no process of ours is left.
    app.begin_shutdown();
    stop_all(&in_flight, Stop::ShuttingDown);
    let _ = tokio::time::timeout(STOP_WAIT, async { while tasks.join_next().await.is_some() {} }).await;
    app.shutdown_background();
    drop(module);
    drop(app);
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    0
}

#[derive(PartialEq)]
enum Flow {
    Continue,
    Exit,
}

/// The in-flight map's key for a request id: a number by its JSON text, a string by its value
/// (`"a\u0062"` is `"ab"`). `None`: not an id JSON-RPC allows (an object, an array, a boolean).
fn id_key(id: &RawValue) -> Option<String> {
    let text = id.get().trim();
    match text.as_bytes().first()? {
        b'"' => serde_json::from_str::<String>(text).ok().and_then(|s| serde_json::to_string(&s).ok()),
        b'-' | b'0'..=b'9' => Some(text.to_owned()),
        _ => None,
    }
}

/// Stop every request in flight that is not stopped yet; returns what ends when each is answered.
fn stop_all(in_flight: &InFlight, why: Stop) -> Vec<oneshot::Receiver<()>> {
    let mut answered = Vec::new();
    for flight in lock(in_flight).values_mut().filter(|f| f.stoppable && f.stopped.is_none()) {
        flight.stopped = Some(why);
        flight.abort.abort();
        answered.extend(flight.answered.take());
    }
    answered
}

/// The request as jsonrpsee gets it: the client's method and params under a synthetic id
/// (jsonrpsee's `Id` takes neither negative nor fractional numbers, nor ones past `u64`).
fn inner_request(method: &str, params: Option<&RawValue>) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    #[derive(Serialize)]
    struct Inner<'a> {
        jsonrpc: &'static str,
        id: u64,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a RawValue>,
    }
    let inner = Inner { jsonrpc: "2.0", id: NEXT.fetch_add(1, Ordering::Relaxed), method, params };
    serde_json::to_string(&inner).expect("a request of strings and JSON serializes")
}

/// jsonrpsee's response with the client's id put back in place of the synthetic one.
fn with_client_id(response: &RawValue, id: &RawValue) -> Vec<u8> {
    #[derive(Deserialize)]
    struct Answer<'a> {
        #[serde(default, borrow, deserialize_with = "present")]
        result: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        error: Option<&'a RawValue>,
    }
    #[derive(Serialize)]
    struct Reply<'a> {
        jsonrpc: &'static str,
        id: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'a RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a RawValue>,
    }
    match serde_json::from_str::<Answer<'_>>(response.get()) {
        Ok(Answer { result, error }) if result.is_some() != error.is_some() => {
            serde_json::to_vec(&Reply { jsonrpc: "2.0", id, result, error }).unwrap_or_default()
        }
        _ => {
            tracing::error!(response = response.get(), "jsonrpsee gave a response without one result or error");
            error_body(id, &BridgeError::internal("the response could not be built"))
        }
    }
}

/// Run one request through the method table and answer it with the client's id.
async fn call(module: &RpcModule<Connection>, method: &str, params: Option<&RawValue>, id: &RawValue) -> Vec<u8> {
    match module.raw_json_request(&inner_request(method, params), 1).await {
        Ok((response, _)) => with_client_id(&response, id),
        Err(e) => error_body(id, &BridgeError::invalid_params(e.to_string())),
    }
}

async fn handle_frame(
    frame: &[u8],
    app: &Arc<Connection>,
    module: &Arc<RpcModule<Connection>>,
    in_flight: &InFlight,
    tasks: &mut tokio::task::JoinSet<()>,
) -> Flow {
    let Ok(text) = std::str::from_utf8(frame) else {
        app.outbox.send(protocol_error(RawValue::NULL, code::PARSE_ERROR, "frame is not UTF-8")).await;
        return Flow::Continue;
    };
    if text.trim_start().starts_with('[') {
        // LSP-style protocols do not batch; say so rather than guess.
        app.outbox
            .send(protocol_error(RawValue::NULL, code::INVALID_REQUEST, "batch requests are not supported"))
            .await;
        return Flow::Continue;
    }
    let envelope: Envelope<'_> = match serde_json::from_str(text) {
        Ok(e) => e,
        Err(e) => {
            let message = if e.is_data() { format!("invalid request: {e}") } else { format!("parse error: {e}") };
            let code = if e.is_data() { code::INVALID_REQUEST } else { code::PARSE_ERROR };
            app.outbox.send(protocol_error(RawValue::NULL, code, &message)).await;
            return Flow::Continue;
        }
    };
    let id = envelope.id;
    let Some(method) = envelope.method.as_deref().filter(|_| envelope.jsonrpc == Some("2.0")) else {
        match id.filter(|id| id_key(id).is_some()) {
            Some(id) => app.outbox.send(protocol_error(id, code::INVALID_REQUEST, "not a JSON-RPC 2.0 request")).await,
            None => {
                app.outbox
                    .send(protocol_error(RawValue::NULL, code::INVALID_REQUEST, "not a JSON-RPC 2.0 message"))
                    .await
            }
        }
        return Flow::Continue;
    };

    let Some(id) = id else {
        return handle_notification(method, envelope.params, in_flight).await;
    };
    let Some(key) = id_key(id) else {
        app.outbox.send(protocol_error(RawValue::NULL, code::INVALID_REQUEST, "id must be a number or a string")).await;
        return Flow::Continue;
    };

    if method == request::INITIALIZE {
        app.outbox.send(call(module, method, envelope.params, id).await).await;
        return Flow::Continue;
    }
    if !app.is_initialized() && method != request::SHUTDOWN {
        app.outbox.error(id, &BridgeError::not_initialized()).await;
        return Flow::Continue;
    }
    if app.is_shutting_down() && method != request::SHUTDOWN {
        app.outbox.send(protocol_error(id, code::INVALID_REQUEST, SHUTTING_DOWN)).await;
        return Flow::Continue;
    }
    if lock(in_flight).contains_key(&key) {
        app.outbox.send(protocol_error(id, code::INVALID_REQUEST, "a request with this id is already in flight")).await;
        return Flow::Continue;
    }
    // `shutdown` stops every running request now and answers after they are answered; `exit`
    // (or end of input) follows.
    let is_shutdown = method == request::SHUTDOWN;
    let stopped = if is_shutdown {
        app.begin_shutdown();
        stop_all(in_flight, Stop::ShuttingDown)
    } else {
        Vec::new()
    };

    let id: Box<RawValue> = id.to_owned();
    let params: Option<Box<RawValue>> = envelope.params.map(|p| p.to_owned());
    let method = method.to_owned();
    let handler = tokio::spawn({
        let (module, method, id) = (module.clone(), method.clone(), id.clone());
        async move { call(&module, &method, params.as_deref(), &id).await }
    });
    let (answered_tx, answered) = oneshot::channel::<()>();
    // Only this loop inserts, so the id is still free here.
    let flight =
        Flight { abort: handler.abort_handle(), stopped: None, answered: Some(answered), stoppable: !is_shutdown };
    lock(in_flight).insert(key.clone(), flight);

    // The supervisor answers exactly once, after the handler task is gone: its response when it
    // finished (even if a stop came too late to matter), -32800 when it was stopped, -32603 when it
    // panicked.
    let outbox = app.outbox.clone();
    let in_flight = in_flight.clone();
    tasks.spawn(async move {
        let outcome = handler.await;
        let stopped_by = lock(&in_flight).remove(&key).and_then(|f| f.stopped);
        let body = match (outcome, stopped_by) {
            (Ok(body), _) => body,
            (Err(e), _) if e.is_panic() => {
                tracing::error!(%method, "request handler panicked");
                error_body(&id, &BridgeError::internal(format!("`{method}` failed unexpectedly")))
            }
            // Aborted without a reason recorded: only the runtime itself does that, on the way out.
            (Err(_), why) => error_body(&id, &why.unwrap_or(Stop::ShuttingDown).error()),
        };
        // `shutdown` is answered after the requests it stopped.
        let _ = tokio::time::timeout(STOP_WAIT, async {
            for done in stopped {
                let _ = done.await;
            }
        })
        .await;
        outbox.send(body).await;
        drop(answered_tx);
    });
    Flow::Continue
}

async fn handle_notification(method: &str, params: Option<&RawValue>, in_flight: &InFlight) -> Flow {
    match method {
        notification::EXIT => Flow::Exit,
        notification::CANCEL_REQUEST => {
            // `CancelParams` with the id kept raw: it is looked up by its text, as it was stored.
            #[derive(Deserialize)]
            struct Cancel<'a> {
                #[serde(borrow)]
                id: &'a RawValue,
            }
            let parsed = params.map(|p| serde_json::from_str::<Cancel<'_>>(p.get()));
            let Some((id, key)) = parsed.and_then(Result::ok).and_then(|c| Some((c.id, id_key(c.id)?))) else {
                tracing::debug!("ignoring $/cancelRequest without a valid id");
                return Flow::Continue;
            };
            let mut flights = lock(in_flight);
            match flights.get_mut(&key) {
                Some(flight) if flight.stoppable && flight.stopped.is_none() => {
                    // Its supervisor answers -32800 once the task is gone.
                    flight.stopped = Some(Stop::Cancelled);
                    flight.abort.abort();
                    tracing::info!(id = id.get(), "request cancelled");
                }
                // Already stopped, already answered, or never existed: JSON-RPC says to ignore it.
                _ => tracing::debug!(id = id.get(), "cancel for a request that is not in flight"),
            }
            Flow::Continue
        }
        other => {
            // Unknown notifications (`$/setTrace`, …) are ignored, as JSON-RPC requires.
            tracing::debug!(method = other, "ignoring notification");
            Flow::Continue
        }
    }
}

/// `kind` of an error response body, for logs and tests.
pub fn error_kind_of(body: &[u8]) -> Option<ErrorKind> {
    let v: Value = serde_json::from_slice(body).ok()?;
    serde_json::from_value(v.pointer("/error/data/kind")?.clone()).ok()
}

/// `StreamExt::next` for the one stream we poll, without a futures-util dependency.
async fn next_frame<R: AsyncRead + Unpin>(
    frames: &mut FramedRead<R, FrameCodec>,
) -> Option<Result<Result<Vec<u8>, FrameError>, std::io::Error>> {
    use futures_core::Stream;
    std::future::poll_fn(|cx| std::pin::Pin::new(&mut *frames).poll_next(cx)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn read_response(out: &mut tokio::io::DuplexStream) -> Value {
        let mut header = Vec::new();
        while !header.ends_with(b"\r\n\r\n") {
            header.push(out.read_u8().await.unwrap());
        }
        let text = String::from_utf8(header).unwrap();
        let len: usize = text.trim().trim_start_matches("Content-Length:").trim().parse().unwrap();
        let mut body = vec![0; len];
        out.read_exact(&mut body).await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    fn frame(v: Value) -> Vec<u8> {
        let body = v.to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    #[tokio::test]
    async fn a_panicking_request_is_answered_and_the_server_keeps_serving() {
        let (outbox, rx) = outbox();
        let app = Arc::new(Connection::new(outbox, Paths { state_dir: None, log_file: None }));
        let mut module = handlers::module(app.clone());
        module
            .register_method("test/panic", |_, _, _| -> Result<(), jsonrpsee::types::ErrorObjectOwned> {
                panic!("boom")
            })
            .unwrap();
        let (mut client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, mut client_out) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(serve_module(server_in, server_out, app, module, rx));

        let init = serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}});
        client_in.write_all(&frame(init)).await.unwrap();
        assert!(read_response(&mut client_out).await.get("result").is_some());

        client_in.write_all(&frame(serde_json::json!({"jsonrpc":"2.0","id":2,"method":"test/panic"}))).await.unwrap();
        let r = read_response(&mut client_out).await;
        assert_eq!(r["id"], 2);
        assert_eq!(r["error"]["code"], code::INTERNAL_ERROR);
        assert_eq!(r["error"]["data"]["kind"], "internal");

        client_in
            .write_all(&frame(serde_json::json!({"jsonrpc":"2.0","id":3,"method":"sessions/list"})))
            .await
            .unwrap();
        let r = read_response(&mut client_out).await;
        assert_eq!(r["result"]["sessions"], serde_json::json!([]));

        drop(client_in);
        assert_eq!(server.await.unwrap(), 0);
    }
}
