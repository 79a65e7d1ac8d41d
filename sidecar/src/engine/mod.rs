//! The engine: what a turn is, independent of who asked. [`Engine`] (`core.rs`) holds the state;
//! a turn is `turn/`, the model list `models.rs`; sessions (matching, TTL/LRU, persistence),
//! prompts, the model cache, the turn slots and the configuration each have a module. It drives a
//! [`crate::backend::Backend`] and never imports a front door.

pub mod config;
pub mod core;
pub mod doctor;
pub mod lanes;
pub mod model_cache;
pub mod models;
pub mod prompt;
pub mod session_io;
pub mod sessions;
pub mod settings;
pub mod slots;
pub mod tools;
pub mod turn;

pub use self::config::Config;
pub use self::core::Engine;
pub use self::settings::Settings;
pub use self::turn::{TurnOutcome, TurnRequest};
pub use crate::backend::Event;

#[cfg(test)]
mod tests;
