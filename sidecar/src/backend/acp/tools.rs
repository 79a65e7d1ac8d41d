//! Hosting the client's tools for one agent (docs/client-tools.md, "The MCP path"): our loopback
//! MCP host, attached to the agent's session with `mcpServers`, and a forwarder that hands each
//! of the agent's `tools/call`s to the turn running at the time (the engine parks it until the
//! client has run the tool). Lives as long as the agent, so a warm session keeps its tools.
//! Which of the agent's tool calls are our server's is the agent's reading
//! ([`AgentQuirks::is_our_tool_call`](super::quirks::AgentQuirks::is_our_tool_call)).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::backend::mcp::{McpCall, McpHost, McpLimits, McpReply, OfferedTool};
use crate::backend::{ClientCall, ToolReply};
use crate::util::sync::{lock, AbortOnDrop};
use crate::vocab::ToolDefinition;

type Current = Arc<Mutex<Option<mpsc::Sender<ClientCall>>>>;

pub struct ToolHost {
    host: McpHost,
    /// Where the agent's calls go: the running turn's broker; `None` between turns.
    current: Current,
    _forward: AbortOnDrop,
    /// A call was handed to the running turn (the client may run the tool): that turn has
    /// output, whatever the agent's updates said, so its prompt is never sent again.
    called: Arc<AtomicBool>,
    /// The tools it offers, by name (a turn with other tools needs another host).
    pub names: Vec<String>,
}

impl ToolHost {
    /// Serve `tools` within the agent's `limits`.
    pub async fn start(tools: &[ToolDefinition], limits: McpLimits) -> std::io::Result<ToolHost> {
        let offered = tools
            .iter()
            .map(|t| OfferedTool {
                name: t.name.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
            })
            .collect();
        let (host, calls) = McpHost::start(offered, limits).await?;
        let current: Current = Arc::default();
        let called = Arc::new(AtomicBool::new(false));
        let forward = tokio::spawn(forward(calls, current.clone(), called.clone()));
        Ok(ToolHost {
            host,
            current,
            _forward: AbortOnDrop(forward.abort_handle()),
            called,
            names: tools.iter().map(|t| t.name.clone()).collect(),
        })
    }

    /// The `mcpServers` of `session/new` and `session/load`.
    pub fn servers(&self) -> Value {
        Value::Array(vec![self.host.mcp_server_json()])
    }

    /// Has the agent listed our tools by now, or within `wait`?
    pub async fn listed_within(&self, wait: Duration) -> bool {
        let mut listed = self.host.listed();
        let seen = tokio::time::timeout(wait, listed.wait_for(|l| *l)).await;
        matches!(seen, Ok(Ok(_)))
    }

    /// The running turn's broker takes the calls from now on (`None`: no turn runs).
    pub fn serve(&self, calls: Option<mpsc::Sender<ClientCall>>) {
        *lock(&self.current) = calls;
    }

    /// A turn begins (with the client's tools or without): it has handed no call yet, whatever
    /// the turn before did.
    pub fn begin_turn(&self) {
        self.called.store(false, Ordering::SeqCst);
    }

    /// Whether a call was handed to the turn being served (or last served): set when the host
    /// forwards it, before the agent's updates say anything of it.
    pub fn called(&self) -> Arc<AtomicBool> {
        self.called.clone()
    }

    /// Offers exactly these tools.
    pub fn offers(&self, tools: &[ToolDefinition]) -> bool {
        self.names.len() == tools.len() && tools.iter().all(|t| self.names.contains(&t.name))
    }
}

/// Each call of the agent's to the running turn, its answer back to the agent.
async fn forward(mut calls: mpsc::Receiver<McpCall>, current: Current, called: Arc<AtomicBool>) {
    while let Some(call) = calls.recv().await {
        let Some(turn) = lock(&current).clone() else {
            let _ = call.reply.send(McpReply::error("No request of the user is running; the tool was not run."));
            continue;
        };
        let (reply, answer) = oneshot::channel::<ToolReply>();
        let McpCall { tool, arguments, reply: back } = call;
        called.store(true, Ordering::SeqCst);
        if turn.send(ClientCall { name: tool, input: arguments, reply }).await.is_err() {
            let _ = back.send(McpReply::error("The request ended; the tool was not run."));
            continue;
        }
        tokio::spawn(async move {
            let answer = match answer.await {
                Ok(r) => McpReply { text: r.text, is_error: r.is_error },
                Err(_) => McpReply::error("The tool call was cancelled."),
            };
            let _ = back.send(answer);
        });
    }
}
