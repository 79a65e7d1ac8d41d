//! [`McpHost`]: the server's life. Started per ACP session with the client's tools; the backend
//! passes [`McpHost::mcp_server_json`] in `session/new` and takes the calls off the channel.
//! Dropping it stops the server: every parked call is answered with an error at once, the port
//! is closed, and no call arrives after.

use std::net::Ipv4Addr;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use super::calls::{McpCall, McpLimits, OfferedTool};
use super::offer::{ToolOffer, SERVER_NAME};
use super::server::{self, random_hex, Shared};
use crate::util::sync::AbortOnDrop;
use crate::vocab::Secret;

/// Calls handed over but not yet taken by the backend; more wait in their HTTP requests.
const CALL_QUEUE: usize = 64;

pub struct McpHost {
    url: String,
    port: u16,
    token: Secret,
    listed: watch::Receiver<bool>,
    // Field order is drop order: `stop` goes first, so parked calls are answered and connections
    // close gracefully; then the accept loop is aborted (the port closes at once).
    _stop: watch::Sender<()>,
    _server: AbortOnDrop,
}

impl McpHost {
    /// Binds 127.0.0.1 on a free port and serves `tools` (in the caller's order: the first are
    /// offered directly when there are more than the agent lists, `limits`). Needs a Tokio runtime.
    pub async fn start(
        tools: Vec<OfferedTool>,
        limits: McpLimits,
    ) -> std::io::Result<(McpHost, mpsc::Receiver<McpCall>)> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let port = listener.local_addr()?.port();
        let path = format!("/mcp/{}", uuid_like(&random_hex(16)?));
        let token = Secret::new(random_hex(32)?);
        let url = format!("http://127.0.0.1:{port}{path}");

        let (calls, received) = mpsc::channel(CALL_QUEUE);
        let (listed_tx, listed) = watch::channel(false);
        let (stop, stopped) = watch::channel(());
        let offered = tools.len();
        let shared = Arc::new(Shared {
            offer: ToolOffer::new(tools, limits),
            path: Secret::new(path),
            token: token.clone(),
            calls,
            listed: listed_tx,
            stop: stopped.clone(),
            sessions: Default::default(),
            in_flight: Default::default(),
        });
        let mut signal = stopped;
        let serve = axum::serve(listener, server::router(shared)).with_graceful_shutdown(async move {
            let _ = signal.changed().await;
        });
        let task = tokio::spawn(async move {
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "mcp: the host's server failed");
            }
        });
        // Never the path or the token: both are what keeps other local programs out.
        tracing::info!(port, tools = offered, "mcp: host listening on 127.0.0.1");
        let host = McpHost { url, port, token, listed, _stop: stop, _server: AbortOnDrop(task.abort_handle()) };
        Ok((host, received))
    }

    /// The name the agent knows the server by (its tools are `cb` tools in Cursor's permissions).
    pub fn server_name(&self) -> &'static str {
        SERVER_NAME
    }

    /// `http://127.0.0.1:<port>/mcp/<random>`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The headers the agent must send: `Authorization: Bearer <token>`.
    pub fn headers(&self) -> Vec<(String, String)> {
        vec![("Authorization".into(), format!("Bearer {}", self.token.expose()))]
    }

    /// Becomes `true` once the agent has called `tools/list` (so this build honours session MCP
    /// servers). `borrow()` reads it; `wait_for(|l| *l)` awaits it.
    pub fn listed(&self) -> watch::Receiver<bool> {
        self.listed.clone()
    }

    /// The `mcpServers[]` entry for ACP's `session/new` (and `session/load`).
    pub fn mcp_server_json(&self) -> Value {
        let headers: Vec<Value> =
            self.headers().into_iter().map(|(name, value)| json!({"name": name, "value": value})).collect();
        json!({"type": "http", "name": SERVER_NAME, "url": self.url, "headers": headers})
    }
}

impl std::fmt::Debug for McpHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL's path is a secret like the token: only the port shows.
        f.debug_struct("McpHost").field("port", &self.port).finish_non_exhaustive()
    }
}

/// 32 hex digits as 8-4-4-4-12.
fn uuid_like(hex: &str) -> String {
    let (a, rest) = hex.split_at(8);
    let (b, rest) = rest.split_at(4);
    let (c, rest) = rest.split_at(4);
    let (d, e) = rest.split_at(4);
    format!("{a}-{b}-{c}-{d}-{e}")
}
