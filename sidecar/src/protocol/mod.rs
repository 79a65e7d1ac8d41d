//! The stdio wire, protocol v1: every message (params, results, notifications, `error.data`) and
//! every method name, one file per method group (`initialize.rs`, `options.rs`, `models.rs`,
//! `chat.rs`, `sessions.rs`, `status.rs`, `doctor.rs`, `probe.rs`; `methods.rs` the names and
//! codes, `errors.rs` `error.data` and each kind's JSON-RPC code). The messages are made of the
//! shared terms of `vocab/`, whose serde they carry unchanged; with those it is all that derives
//! `Serialize`/`Deserialize` for the wire. Everything, the `vocab` terms included, is re-exported
//! here, so callers name `protocol::ChatSendParams`, not the file.
//!
//! Kept in step with its two other copies: `protocol.md` documents it
//! (`tests/process/protocol_doc.rs`; tidy round-trips its examples), and
//! `vscode-client/src/protocol.ts` mirrors it field by field (`mirror.rs` compares them). Only the front doors import it (tidy); where it sits among the
//! layers, and how `translate.rs` converts it for the engine, is docs/architecture.md.

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
