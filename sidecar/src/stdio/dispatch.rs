//! The dispatch loop: reads frames, answers each request exactly once, and owns the in-flight map.
//!
//! - One writer task (`outbox.rs`) owns stdout; everything else sends it finished JSON bodies.
//! - Every request runs as its own task through jsonrpsee's `RpcModule`; `$/cancelRequest` aborts
//!   the task (dropping a turn kills its CLI process group) and answers -32800; a panic answers
//!   -32603 and the loop keeps serving.
//! - `initialize` runs inline, so requests that follow it in the stream see an initialized sidecar.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonrpsee::RpcModule;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio_util::codec::FramedRead;

use super::handlers;
use super::outbox::{error_body, outbox, protocol_error, write_frames};
use super::state::Connection;
use super::transport::{FrameCodec, FrameError};
use crate::error::BridgeError;
use crate::protocol::{code, notification, request, CancelParams, ErrorKind};
use crate::startup::Paths;
use crate::util::sync::lock;

/// The parts of a frame the loop needs to route it; `params` stays raw for the handler.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    jsonrpc: Option<&'a str>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

type InFlight = Arc<Mutex<HashMap<String, AbortHandle>>>;

/// Serve the protocol until `exit` or end of input. Returns the process exit code.
pub async fn serve<R, W>(input: R, output: W, paths: Paths) -> i32
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, outbox_rx) = outbox();
    let app = Arc::new(Connection::new(outbox, paths));
    let module = handlers::module(app.clone());
    serve_module(input, output, app, module, outbox_rx).await
}

/// [`serve`] on a connection of the caller's (the in-process tests give it a scripted backend).
pub async fn serve_connection<R, W>(input: R, output: W, app: Arc<Connection>, outbox_rx: mpsc::Receiver<Vec<u8>>) -> i32
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

    // SIGTERM / SIGINT (a service manager, a closing terminal) end the sidecar like end of input:
    // every child is stopped first, none is orphaned.
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
                app.outbox.send(protocol_error(&Value::Null, code, &message)).await;
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

    // Stop every turn (dropping a turn kills its CLI group), wait for the drops, then make sure no
    // process of ours is left.
    for (_, handle) in lock(&in_flight).drain() {
        handle.abort();
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
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

async fn handle_frame(
    frame: &[u8],
    app: &Arc<Connection>,
    module: &Arc<RpcModule<Connection>>,
    in_flight: &InFlight,
    tasks: &mut tokio::task::JoinSet<()>,
) -> Flow {
    let Ok(text) = std::str::from_utf8(frame) else {
        app.outbox.send(protocol_error(&Value::Null, code::PARSE_ERROR, "frame is not UTF-8")).await;
        return Flow::Continue;
    };
    if text.trim_start().starts_with('[') {
        // LSP-style protocols do not batch; say so rather than guess.
        app.outbox
            .send(protocol_error(&Value::Null, code::INVALID_REQUEST, "batch requests are not supported"))
            .await;
        return Flow::Continue;
    }
    let envelope: Envelope<'_> = match serde_json::from_str(text) {
        Ok(e) => e,
        Err(e) => {
            let message = if e.is_data() { format!("invalid request: {e}") } else { format!("parse error: {e}") };
            let code = if e.is_data() { code::INVALID_REQUEST } else { code::PARSE_ERROR };
            app.outbox.send(protocol_error(&Value::Null, code, &message)).await;
            return Flow::Continue;
        }
    };
    let id = envelope.id.clone();
    let Some(method) = envelope.method.as_deref().filter(|_| envelope.jsonrpc == Some("2.0")) else {
        if let Some(id) = id {
            app.outbox.send(protocol_error(&id, code::INVALID_REQUEST, "not a JSON-RPC 2.0 request")).await;
        } else {
            app.outbox.send(protocol_error(&Value::Null, code::INVALID_REQUEST, "not a JSON-RPC 2.0 message")).await;
        }
        return Flow::Continue;
    };

    let Some(id) = id else {
        return handle_notification(method, envelope.params, app, in_flight).await;
    };
    if !matches!(id, Value::Number(_) | Value::String(_)) {
        app.outbox.send(protocol_error(&Value::Null, code::INVALID_REQUEST, "id must be a number or a string")).await;
        return Flow::Continue;
    }

    if method == request::INITIALIZE {
        let (response, _) = match module.raw_json_request(text, 1).await {
            Ok(r) => r,
            Err(e) => {
                app.outbox.error(&id, &BridgeError::invalid_params(e.to_string())).await;
                return Flow::Continue;
            }
        };
        app.outbox.send(response.get().as_bytes().to_vec()).await;
        return Flow::Continue;
    }
    if !app.is_initialized() && method != request::SHUTDOWN {
        app.outbox.error(&id, &BridgeError::not_initialized()).await;
        return Flow::Continue;
    }
    if app.is_shutting_down() && method != request::SHUTDOWN {
        app.outbox.send(protocol_error(&id, code::INVALID_REQUEST, "the sidecar is shutting down")).await;
        return Flow::Continue;
    }
    if method == request::SHUTDOWN {
        // Stop running turns now; `exit` (or EOF) follows.
        for (_, handle) in lock(in_flight).drain() {
            handle.abort();
        }
    }

    let key = id.to_string();
    if lock(in_flight).contains_key(&key) {
        app.outbox.send(protocol_error(&id, code::INVALID_REQUEST, "a request with this id is already in flight")).await;
        return Flow::Continue;
    }
    let request_text = text.to_owned();
    let module = module.clone();
    let handler = tokio::spawn(async move {
        match module.raw_json_request(&request_text, 1).await {
            Ok((response, _)) => response.get().as_bytes().to_vec(),
            Err(e) => error_body(&Value::Null, &BridgeError::invalid_params(e.to_string())),
        }
    });
    // Only this loop inserts, so the id is still free here.
    lock(in_flight).insert(key.clone(), handler.abort_handle());

    // The supervisor answers exactly once: with the response, with -32603 on a panic, or not at
    // all when a cancel got there first (the cancel answered -32800).
    let outbox = app.outbox.clone();
    let in_flight = in_flight.clone();
    let method = method.to_owned();
    tasks.spawn(async move {
        let outcome = handler.await;
        let still_ours = lock(&in_flight).remove(&key).is_some();
        match outcome {
            Ok(body) if still_ours => outbox.send(body).await,
            Err(e) if e.is_panic() && still_ours => {
                tracing::error!(%method, "request handler panicked");
                outbox.error(&id, &BridgeError::internal(format!("`{method}` failed unexpectedly"))).await;
            }
            _ => {}
        }
    });
    Flow::Continue
}

async fn handle_notification(method: &str, params: Option<&RawValue>, app: &Arc<Connection>, in_flight: &InFlight) -> Flow {
    match method {
        notification::EXIT => Flow::Exit,
        notification::CANCEL_REQUEST => {
            let parsed = params.map(|p| serde_json::from_str::<CancelParams>(p.get()));
            let Some(Ok(CancelParams { id })) = parsed else {
                tracing::debug!("ignoring $/cancelRequest without a valid id");
                return Flow::Continue;
            };
            let handle = lock(in_flight).remove(&id.to_string());
            match handle {
                Some(handle) => {
                    handle.abort();
                    tracing::info!(id = %id, "request cancelled");
                    app.outbox.error(&id, &BridgeError::cancelled()).await;
                }
                // Already answered, or never existed: JSON-RPC says to ignore it.
                None => tracing::debug!(id = %id, "cancel for a request that is not in flight"),
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

/// Resolves with the signal's name when SIGTERM or SIGINT arrives (never elsewhere).
async fn termination_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            (Ok(mut term), Ok(mut int)) => tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            },
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
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

        client_in.write_all(&frame(serde_json::json!({"jsonrpc":"2.0","id":3,"method":"sessions/list"}))).await.unwrap();
        let r = read_response(&mut client_out).await;
        assert_eq!(r["result"]["sessions"], serde_json::json!([]));

        drop(client_in);
        assert_eq!(server.await.unwrap(), 0);
    }
}
