//! Which backend serves a front door: `initialize.options.backend` / `serve --backend` —
//! `auto` (the default: ACP with print mode as the fallback, `auto.rs`), `acp` or `print`. The
//! choice is made here, so the engine never names a backend.

use std::sync::Arc;

use super::contract::Backend;
pub use super::contract::{EnvPolicy, Settings};
use super::cursor::acp::CursorAcp;
use super::cursor::auto::Auto;
use super::cursor::print::CursorPrint;
use crate::protocol::BackendChoice;

pub fn backend(settings: Settings) -> Arc<dyn Backend> {
    match settings.backend {
        BackendChoice::Print => CursorPrint::new(settings),
        choice => {
            // ACP keeps its own warm sessions; print mode (the fallback, and the CLI's finder,
            // model list and login) starts no spares of its own under `acp`.
            let print_settings =
                Settings { spares: if choice == BackendChoice::Acp { 0 } else { settings.spares }, ..settings.clone() };
            let print = CursorPrint::new(print_settings);
            let acp = CursorAcp::new(&settings, print.clone());
            match choice {
                BackendChoice::Acp => acp,
                _ => Auto::new(print, acp),
            }
        }
    }
}
