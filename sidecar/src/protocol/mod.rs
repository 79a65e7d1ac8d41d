//! Every message of protocol v1 and every method name, one file per method group. With the shared
//! terms of `vocab/` (whose serde the messages carry unchanged) it is all that derives
//! `Serialize`/`Deserialize` for the stdio wire; `protocol.md` documents it and a test keeps the
//! two in step (`tests/process/protocol_doc.rs`).
//! `vscode-client/src/protocol.ts` mirrors it, field by field (`mirror.rs` compares them).
//!
//! The messages are made of the shared terms in `vocab/` (re-exported here, as the wire carries
//! them unchanged). Everything is re-exported here, so callers name `protocol::ChatSendParams`,
//! not the file. Only the front doors import this module (tidy).

mod chat;
mod doctor;
mod errors;
mod initialize;
mod methods;
#[cfg(test)]
mod mirror;
mod models;
mod options;
mod probe;
mod sessions;
mod status;

pub use crate::vocab::*;
pub use chat::*;
pub use doctor::*;
pub use errors::*;
pub use initialize::*;
pub use methods::*;
pub use models::*;
pub use options::*;
pub use probe::*;
pub use sessions::*;
pub use status::*;
