//! Backends: what runs a turn. The root holds what any agent shares: [`contract`] (the trait
//! the engine programs against), [`events`] (what a turn streams), [`process`] (the one helper
//! that starts processes), [`acp`] (the generic Agent Client Protocol client) and [`mcp`] (the
//! loopback MCP host of the client's tools), plus [`select`], which picks a backend. Each agent
//! is a folder of its own (`cursor/`: the Cursor CLI, with its print and ACP backends beneath
//! it); no agent's folder imports another's, and nothing shared imports an agent's (tidy).
//! Nothing here imports `engine/` or a front door.

pub mod acp;
pub mod contract;
pub mod cursor;
pub mod events;
/// The loopback MCP server that offers the client's tools to an ACP agent.
pub mod mcp;
pub mod process;
pub mod reports;
/// A backend that follows a script, for the in-process test tier.
#[cfg(test)]
pub mod scripted;
pub mod select;

pub use contract::{
    AgentWords, Backend, BoxFuture, Chat, ClientCall, HostedTools, Located, ToolReply, TurnEnd, TurnFailure, TurnSpec,
    VersionCheck, VersionVerdict, Warm,
};
pub use events::{Activity, Event, EventSink, TextHold, ToolPolicy};
pub use reports::{BackendStatus, CliStatus, ProbeFinding, ProbeOutcome, ProbePlan, ProbeReport, ServedTurn};
