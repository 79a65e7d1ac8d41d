//! What crosses between the host and the backend that attached it to a session: the client's
//! tools going in, one call of the agent's coming out, and the client's reply going back.

use serde_json::Value;
use tokio::sync::oneshot;

/// How much of one MCP server an agent shows its model: its first `listed` tools, and a tool
/// only when the server's name and the tool's together are at most `combined` characters. Each
/// agent has its own (Cursor's, with their evidence: `cursor/acp/quirks.rs`); the host offers
/// within them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpLimits {
    pub listed: usize,
    pub combined: usize,
}

/// A tool of the client's as the client described it. The host adapts name and schema to what
/// MCP clients accept (`offer.rs`); everything it hands back names the tool by this `name`.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// One `tools/call` of the agent's, for the client to run. The agent's HTTP request stays open
/// until `reply` is answered (or dropped: the agent then gets an error result). When
/// `reply.is_closed()` the agent no longer waits: it cancelled the call, its connection went, or
/// the host stopped.
#[derive(Debug)]
pub struct McpCall {
    /// The client's own name of the tool (never the shortened name the agent saw).
    pub tool: String,
    /// The arguments as the client's schema describes them (a JSON object, unless the client's
    /// schema was not an object schema: see `schema.rs`).
    pub arguments: Value,
    pub reply: oneshot::Sender<McpReply>,
}

/// The client's result, given to the agent as one plain text block: structured content made
/// Cursor's MCP client hang (docs/client-tools.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpReply {
    pub text: String,
    pub is_error: bool,
}

impl McpReply {
    pub fn ok(text: impl Into<String>) -> McpReply {
        McpReply { text: text.into(), is_error: false }
    }

    pub fn error(text: impl Into<String>) -> McpReply {
        McpReply { text: text.into(), is_error: true }
    }
}
