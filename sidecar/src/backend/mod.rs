//! Backends: what runs a turn. [`seam`] is the contract the engine programs against, [`events`]
//! what a turn streams, [`process`] the one helper that starts processes; each backend is a
//! folder (`cursor_print/`: the Cursor CLI in print mode). Nothing here imports `engine/` or a
//! front door.

pub mod acp;
pub mod cursor;
pub mod events;
/// The loopback MCP server that offers the client's tools to an ACP agent.
pub mod mcp;
pub mod process;
/// A backend that follows a script, for the in-process test tier.
#[cfg(test)]
pub mod scripted;
pub mod seam;
pub mod select;

pub use events::{Activity, Event, EventSink, TextHold, ToolPolicy};
pub use seam::{
    Backend, BoxFuture, Chat, ClientCall, HostedTools, Located, ToolReply, TurnEnd, TurnFailure, TurnSpec, Warm,
};
