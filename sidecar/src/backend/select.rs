//! Which backend serves a front door: `initialize.options.backend` / `serve --backend` —
//! `auto` (the default: ACP with print mode as the fallback, `cursor/auto.rs`), `acp` or
//! `print`. The choice is made here, so the engine never names a backend; every choice so far
//! drives the Cursor CLI (`cursor/`).

use std::sync::Arc;

use super::contract::Backend;
pub use super::contract::{EnvPolicy, Settings};

pub fn backend(settings: Settings) -> Arc<dyn Backend> {
    super::cursor::backend(settings)
}
