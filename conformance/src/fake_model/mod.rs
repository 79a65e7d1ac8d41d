//! A fake model server of our own: just enough of the OpenAI Chat Completions API for a real
//! agent CLI in "bring your own key" mode to run against it offline. Answers are deterministic
//! ([`reply`]); every request is logged, with how its stream ended (completed, or the client hung
//! up), so a test can check what the agent sent and whether it stopped a cancelled stream.
//!
//! Routes: `POST /v1/chat/completions` (`stream` true: SSE chunks, then `[DONE]`; false: one
//! `chat.completion`), `GET /v1/models` (one model). Anything else: 404 in OpenAI's error shape,
//! logged too, so an agent that needs another route says so in the test's failure message.

mod openai;
pub mod reply;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::routing::{get, post};
use axum::Router;
use tokio::net::TcpListener;

pub use reply::{Message, Reply};

/// The model id `GET /v1/models` lists (any id is accepted in requests).
pub const MODEL_ID: &str = "fake-model";

/// One request the fake served.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    pub method: String,
    pub path: String,
    pub stream: bool,
    pub messages: Vec<Message>,
    /// `None`: not a chat completion.
    pub reply: Option<Reply>,
    /// Answer (and reasoning) deltas written so far.
    pub deltas_sent: usize,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Still streaming.
    Streaming,
    Completed,
    /// The client closed the connection before the stream's end.
    Disconnected,
}

impl Logged {
    /// One line for a failure message: what was asked, what came back, how it ended.
    pub fn summary(&self) -> String {
        let last_user = self.messages.iter().rev().find(|m| m.role == "user").map(|m| m.text.as_str()).unwrap_or("");
        let roles: Vec<&str> = self.messages.iter().map(|m| m.role.as_str()).collect();
        let reply = match &self.reply {
            Some(Reply::ToolCall { name, .. }) => format!("tool call {name}"),
            Some(r) => format!("{:?}", r.text().chars().take(80).collect::<String>()),
            None => "-".into(),
        };
        format!(
            "{} {} stream={} roles={roles:?} last user={:?} → {reply} ({} deltas, {:?})",
            self.method,
            self.path,
            self.stream,
            last_user.chars().rev().take(60).collect::<String>().chars().rev().collect::<String>(),
            self.deltas_sent,
            self.outcome
        )
    }
}

#[derive(Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<Logged>>>);

impl Log {
    fn lock(&self) -> MutexGuard<'_, Vec<Logged>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds an entry; returns its index.
    pub(crate) fn push(&self, entry: Logged) -> usize {
        let mut log = self.lock();
        log.push(entry);
        log.len() - 1
    }

    pub(crate) fn update(&self, index: usize, f: impl FnOnce(&mut Logged)) {
        if let Some(entry) = self.lock().get_mut(index) {
            f(entry);
        }
    }
}

/// The running server; dropping it stops it.
pub struct FakeModel {
    addr: SocketAddr,
    log: Log,
    server: tokio::task::JoinHandle<()>,
}

impl FakeModel {
    /// Listen on a free loopback port.
    pub async fn start() -> std::io::Result<FakeModel> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let log = Log::default();
        let router = Router::new()
            .route("/v1/chat/completions", post(openai::chat_completions))
            .route("/v1/models", get(openai::models))
            .fallback(openai::not_found)
            .with_state(log.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(FakeModel { addr, log, server })
    }

    /// What an OpenAI client takes as its base URL (`…/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Logged> {
        self.log.lock().clone()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    async fn post(fake: &FakeModel, body: &str) -> TcpStream {
        let mut tcp = TcpStream::connect(fake.addr).await.unwrap();
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        tcp.write_all(request.as_bytes()).await.unwrap();
        tcp
    }

    async fn read_until(tcp: &mut TcpStream, needle: &str) -> String {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains(needle) {
            let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf)).await.expect("no stall").unwrap();
            assert!(n > 0, "the stream ended before {needle:?}: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    }

    #[tokio::test]
    async fn a_stream_is_served_as_sse_and_logged_complete() {
        let fake = FakeModel::start().await.unwrap();
        let mut tcp = post(&fake, r#"{"stream":true,"messages":[{"role":"user","content":"hi <<a>>"}]}"#).await;
        let seen = read_until(&mut tcp, "data: [DONE]").await;
        assert!(seen.contains("text/event-stream"), "{seen}");
        let deltas: String = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .filter_map(|c| c.pointer("/choices/0/delta/content").and_then(|t| t.as_str().map(str::to_string)))
            .collect();
        assert_eq!(deltas, "echo: a (user_turns=1)");
        let log = fake.requests();
        assert_eq!((log.len(), log[0].stream, log[0].deltas_sent, log[0].outcome), (1, true, 3, Outcome::Completed));
    }

    #[tokio::test]
    async fn a_client_that_hangs_up_mid_stream_is_logged_as_gone() {
        let fake = FakeModel::start().await.unwrap();
        let mut tcp = post(&fake, r#"{"stream":true,"messages":[{"role":"user","content":"[[slow]] <<s>>"}]}"#).await;
        read_until(&mut tcp, "slow-1 ").await;
        drop(tcp);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while fake.requests()[0].outcome == Outcome::Streaming && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let entry = &fake.requests()[0];
        assert_eq!(entry.outcome, Outcome::Disconnected, "{}", entry.summary());
        assert!(entry.deltas_sent < reply::SLOW_DELTAS, "{}", entry.summary());
    }

    #[tokio::test]
    async fn unknown_routes_are_404_and_logged() {
        let fake = FakeModel::start().await.unwrap();
        let mut tcp = TcpStream::connect(fake.addr).await.unwrap();
        tcp.write_all(b"GET /v1/responses HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        let seen = read_until(&mut tcp, "serves no").await;
        assert!(seen.starts_with("HTTP/1.1 404"), "{seen}");
        assert_eq!(fake.requests()[0].path, "/v1/responses");
    }
}
