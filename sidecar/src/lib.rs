//! cursor-bridge: a stdio JSON-RPC sidecar that drives the Cursor CLI (and, with `serve`, an
//! OpenAI-compatible HTTP server on the same engine). See `protocol.md` for the wire protocol and
//! `README.md` for how the pieces fit.

pub mod app;
pub mod chat_ids;
pub mod cursor;
pub mod engine;
pub mod error;
pub mod http;
pub mod logging;
pub mod methods;
pub mod model_catalog;
pub mod process;
pub mod prompt;
pub mod protocol;
pub mod server;
pub mod sessions;
pub mod spares;
pub mod startup;
pub mod transport;
