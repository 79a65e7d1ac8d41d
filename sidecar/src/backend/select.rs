//! Which backend serves a front door: `initialize.options.backend` / `serve --backend` —
//! `auto` (the default: ACP with print mode as the fallback, `cursor/auto.rs`), `acp` or
//! `print`. The choice is made here, one arm per value of [`BackendChoice`], so the engine never
//! names a backend; every choice so far drives the Cursor CLI (`cursor/`), and a second agent is
//! a value and an arm (docs/architecture.md, "Adding a second ACP agent").

use std::sync::Arc;

use super::contract::Backend;
pub use super::contract::{BackendSettings, EnvPolicy, Warmth};
use super::cursor;
use crate::vocab::BackendChoice;

pub fn backend(settings: BackendSettings) -> Arc<dyn Backend> {
    match settings.backend {
        BackendChoice::Print => cursor::print_backend(&settings),
        BackendChoice::Acp => cursor::acp_backend(&settings),
        BackendChoice::Auto => cursor::auto_backend(&settings),
    }
}

/// `CURSOR_BRIDGE_BACKEND`, the default when a client names none (how a test suite runs every
/// front door on one backend).
pub fn backend_from_env() -> Option<BackendChoice> {
    let value = std::env::var("CURSOR_BRIDGE_BACKEND").ok()?;
    match value.parse() {
        Ok(choice) => Some(choice),
        Err(e) => {
            tracing::warn!("CURSOR_BRIDGE_BACKEND: {e}");
            None
        }
    }
}
