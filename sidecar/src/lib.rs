//! cursor-bridge: a stdio JSON-RPC sidecar that drives the Cursor CLI (and, with `serve`, an
//! OpenAI-compatible HTTP server on the same engine). See `protocol.md` for the wire protocol and
//! `docs/architecture.md` for the code map.

pub mod backend;
pub mod doctor;
pub mod engine;
pub mod error;
pub mod http;
pub mod logging;
pub mod protocol;
pub mod startup;
pub mod stdio;
pub mod translate;
pub mod util;
pub mod vocab;

#[cfg(test)]
mod tidy;
