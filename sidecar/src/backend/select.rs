//! Which backend serves a front door. Today there is one, the Cursor CLI in print mode; the
//! choice (and a fallback between backends) is made here, so the engine never names one.

use std::sync::Arc;
use std::time::Duration;

use super::cursor_print::{self, CursorPrint};
use super::seam::Backend;
use crate::protocol::{Options, Secret};

/// What every backend may need from the front door's set-up.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The agent program's path setting (else discovery).
    pub cli_path: Option<String>,
    /// The Cursor API key, only ever for the agent's environment.
    pub api_key: Option<Secret>,
    /// Warm spares kept at most (0: none) and how long an unused one lives.
    pub spares: usize,
    pub spare_idle: Duration,
}

impl Settings {
    pub fn new(cli_path: Option<String>, api_key: Option<Secret>, options: &Options) -> Self {
        Settings { cli_path, api_key, spares: options.spares, spare_idle: Duration::from_secs(options.spare_idle_seconds) }
    }
}

pub fn backend(settings: Settings) -> Arc<dyn Backend> {
    CursorPrint::new(cursor_print::Config {
        cli_path: settings.cli_path,
        api_key: settings.api_key,
        spares: settings.spares,
        spare_idle: settings.spare_idle,
    })
}
