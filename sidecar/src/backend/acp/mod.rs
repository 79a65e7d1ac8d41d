//! The Agent Client Protocol, as a client: what any ACP agent (Cursor's `agent acp`, Gemini CLI,
//! Copilot CLI) speaks on its stdio. `connection.rs` is JSON-RPC 2.0, one message per line, in
//! both directions; `agent.rs` is one agent's process and session (start, handshake,
//! `session/new`, `session/load`); `router.rs` routes what it sends to the running turn; `pool.rs` keeps agents warm (sessions by id, spares opened
//! ahead, their expiry and limits); `turn.rs` is one prompt (permissions by policy, the
//! agent's own requests, errors told from answers, `session/cancel` when dropped); `updates.rs` turns `session/update` notifications into [`Event`]s;
//! `tools.rs` hosts the client's tools for one agent (the MCP host of `backend/mcp/`, calls
//! handed to the running turn); `quirks.rs` is [`AgentQuirks`](quirks::AgentQuirks), what one
//! agent reads its own way; `backend.rs` is an agent as a warm backend
//! ([`AcpBackend`](backend::AcpBackend): which session a turn runs in, load into a new process,
//! spares, one-shot turns, the client's tools, a retried start), with what is the agent's own
//! behind [`AcpAgent`](backend::AcpAgent); `build_note.rs` is what was learnt per build. Lenient on
//! purpose: agents add fields and update kinds between builds (docs/cursor-acp.md §7, §10), so
//! anything unknown is skipped, never fatal. A backend for one agent (its launch, its quirks, its
//! catalogue) builds on these.
//!
//! [`Event`]: crate::backend::Event

pub mod agent;
pub mod backend;
pub mod build_note;
pub mod connection;
pub mod pool;
pub mod quirks;
pub mod router;
pub mod tools;
pub mod turn;
pub mod updates;

// What an agent's backend builds on, offered here: an agent's folder uses the generic client
// through this front, never a file of it (tidy: `a_backend_folder_is_used_only_through_its_front`).
pub use agent::{Agent, Launch, SessionConfig, CONFIG_TIMEOUT};
pub use backend::{session_in, AcpAgent, AcpBackend};
pub use build_note::{BuildNote, REPROBE_AFTER};
pub use connection::{Incoming, RpcError};
pub use pool::{retire, Fresh, Pool};
pub use quirks::{AgentQuirks, ExtensionAnswer, StartError, StartFailure, TurnError};
pub use router::{cancelled_outcome, permission_answer};
pub use tools::ToolHost;
pub use turn::{run as prompt, Slot};
pub use updates::Updates;
