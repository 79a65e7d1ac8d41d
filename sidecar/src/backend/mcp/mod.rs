//! The loopback MCP host: the client's tools offered to an ACP agent as a Streamable-HTTP MCP
//! server on 127.0.0.1 (a random path, a bearer token), each `tools/call` handed to the backend
//! as an [`McpCall`] and parked until the client's result comes back. A small hand-rolled subset
//! of MCP (tools only, JSON answers, no SSE): design in docs/client-tools.md.
//!
//! `host.rs` ([`McpHost`]: start, the `mcpServers` entry, stop on drop), `server.rs` (HTTP:
//! path, token, sessions, parking), `methods.rs` (the MCP methods, pure), `jsonrpc.rs` (messages
//! and batches), `offer.rs` (what is offered: the agent's tool cap ([`McpLimits`]) with a dispatcher,
//! the way back to the client's names), `names.rs` (names MCP clients accept), `schema.rs` (input schemas MCP
//! accepts), `calls.rs` (the types that cross to the backend).

mod calls;
mod host;
pub mod jsonrpc;
pub mod methods;
pub mod names;
pub mod offer;
pub mod schema;
mod server;
#[cfg(test)]
mod tests;

pub use calls::{McpCall, McpLimits, McpReply, OfferedTool};

/// The limits this folder's tests are written against (Cursor's, the first agent served).
#[cfg(test)]
pub const TEST_LIMITS: McpLimits = McpLimits { listed: 40, combined: 59 };
pub use host::McpHost;
