//! The JSON-RPC front door on stdin/stdout: framing (`transport`), the dispatch loop and the
//! in-flight map (`dispatch`), the single writer (`outbox`), the connection's state (`state`),
//! the method handlers (`handlers`), and engine events as numbered `chat/delta`s (`deltas`).
//! protocol.md documents the wire; `protocol/` holds its types.

pub mod deltas;
pub mod dispatch;
pub mod handlers;
pub mod outbox;
pub mod state;
pub mod transport;

pub use dispatch::serve;

#[cfg(test)]
mod tests;
