//! What differs between ACP agents that speak the same protocol: the generic client
//! (`updates.rs`, `tools.rs`; the lifecycle as it moves here, docs/architecture.md) asks an agent's
//! [`AgentQuirks`] wherever an agent reads the protocol its own way. Each agent's folder
//! implements it (Cursor's: `cursor/acp/quirks.rs`); a method with a default is one where the
//! protocol's plain reading is right for an agent that says nothing more.

use serde_json::Value;

use crate::backend::mcp::McpLimits;

pub trait AgentQuirks: Send + Sync {
    /// A tool call the agent reports `completed` although it did not run (it was refused).
    fn completed_but_rejected(&self, _update: &Value) -> bool {
        false
    }

    /// A `failed` call of the agent's tool `tool` whose first text, `detail`, says it was not
    /// allowed to run (a refusal, not a tool that ran and failed).
    fn failure_is_refusal(&self, _tool: &str, _detail: &str) -> bool {
        false
    }

    /// Is this tool call (a `tool_call` update, or a permission request's `toolCall`) one of
    /// our MCP server's, the client's tools (`tools.rs`), rather than the agent's own?
    fn is_our_tool_call(&self, call: &Value) -> bool;

    /// How much of one MCP server the agent shows its model.
    fn mcp_limits(&self) -> McpLimits;
}
