//! The single stdout writer and the handle everything else uses to reach it. Only the writer
//! touches stdout, so a notification is never interleaved with another frame; the queue is
//! bounded, so a stalled client slows turns down (back-pressure) instead of growing memory.

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::Encoder;

use super::transport::FrameCodec;
use crate::error::BridgeError;

/// Frames waiting for the writer. Bounded so a stalled client applies back-pressure to turns.
const OUTBOX_CAPACITY: usize = 1024;

/// Sends finished frames (JSON bodies) to the single stdout writer.
#[derive(Clone)]
pub struct Outbox(mpsc::Sender<Vec<u8>>);

impl Outbox {
    pub async fn send(&self, body: Vec<u8>) {
        // The writer only goes away when the client has gone; then there is no one to tell.
        let _ = self.0.send(body).await;
    }

    pub async fn notify<P: serde::Serialize>(&self, method: &str, params: &P) {
        #[derive(serde::Serialize)]
        struct Notification<'a, P> {
            jsonrpc: &'static str,
            method: &'a str,
            params: &'a P,
        }
        match serde_json::to_vec(&Notification { jsonrpc: "2.0", method, params }) {
            Ok(body) => self.send(body).await,
            Err(e) => tracing::error!(error = %e, method, "could not serialize a notification"),
        }
    }

    pub async fn error(&self, id: &RawValue, e: &BridgeError) {
        self.send(error_body(id, e)).await
    }
}

/// `{"jsonrpc":"2.0","id":…,"error":{…}}`. The id is the client's JSON text, written back as it
/// came (a `Value` would round a number past `u64` or a long fraction).
#[derive(Serialize)]
struct ErrorReply<'a, D> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    error: ErrorObject<'a, D>,
}

#[derive(Serialize)]
struct ErrorObject<'a, D> {
    code: i32,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<D>,
}

pub fn error_body(id: &RawValue, e: &BridgeError) -> Vec<u8> {
    let error = ErrorObject {
        code: crate::protocol::error_code(e.kind),
        message: &e.message,
        data: Some(crate::protocol::ErrorData::from(e)),
    };
    serde_json::to_vec(&ErrorReply { jsonrpc: "2.0", id, error }).unwrap_or_default()
}

pub fn protocol_error(id: &RawValue, code: i32, message: &str) -> Vec<u8> {
    let error = ErrorObject::<()> { code, message, data: None };
    serde_json::to_vec(&ErrorReply { jsonrpc: "2.0", id, error }).unwrap_or_default()
}

/// The single stdout writer. It writes every frame that is ready, then flushes once: deltas go out
/// as they arrive without a flush per frame when many are queued.
pub async fn write_frames<W: AsyncWrite + Unpin>(mut output: W, mut rx: mpsc::Receiver<Vec<u8>>) {
    let mut codec = FrameCodec::default();
    let mut buf = tokio_util::bytes::BytesMut::with_capacity(64 * 1024);
    while let Some(body) = rx.recv().await {
        let _ = codec.encode(&body, &mut buf);
        while buf.len() < 1024 * 1024 {
            match rx.try_recv() {
                Ok(body) => {
                    let _ = codec.encode(&body, &mut buf);
                }
                Err(_) => break,
            }
        }
        if output.write_all(&buf).await.is_err() || output.flush().await.is_err() {
            tracing::info!("client stopped reading; dropping output");
            return;
        }
        buf.clear();
    }
}

pub fn outbox() -> (Outbox, mpsc::Receiver<Vec<u8>>) {
    let (tx, rx) = mpsc::channel(OUTBOX_CAPACITY);
    (Outbox(tx), rx)
}
