//! Helpers every layer may use, each in one place: text cutting and ANSI stripping, secret
//! redaction, lock and abort guards, random ids, bounded line reading, subcommand options, the state
//! folder's place. Nothing here knows about
//! the protocol, the engine or a backend.

pub mod args;
pub mod fs;
pub mod ids;
pub mod io;
pub mod redact;
pub mod state_dir;
pub mod sync;
pub mod text;
pub mod tokens;
