//! Logs go through `tracing` to a daily-rolling file (never stdout: stdout carries protocol frames)
//! and, at warn and above, to stderr, which the editor shows in its output channel.
//!
//! - Folder: `CURSOR_BRIDGE_LOG_DIR`, else `<state folder>/logs`.
//! - Filter: `CURSOR_BRIDGE_LOG` (tracing `EnvFilter` syntax), default `info`; `off` disables the
//!   file. Prompts and answers are logged only under the `cursor_bridge::content` target at trace
//!   level, which a filter has to name explicitly (e.g. `info,cursor_bridge::content=trace`).

use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::prelude::*;

pub const ENV_LOG: &str = "CURSOR_BRIDGE_LOG";
pub const ENV_LOG_DIR: &str = "CURSOR_BRIDGE_LOG_DIR";
const FILE_PREFIX: &str = "cursor-bridge";
const KEEP_FILES: usize = 7;

pub struct Logging {
    pub file: Option<PathBuf>,
    _guard: Option<WorkerGuard>,
}

pub fn init(state_dir: Option<&Path>) -> Logging {
    let spec = std::env::var(ENV_LOG).unwrap_or_default();
    let spec = if spec.trim().is_empty() { "info".to_string() } else { spec };
    // Content logging must be asked for by name, not switched on by a blanket `trace`.
    let mut filter_spec = if spec.contains("cursor_bridge::content") {
        spec.clone()
    } else {
        format!("{spec},cursor_bridge::content=off")
    };
    // jsonrpsee traces raw requests, `initialize.apiKey` and prompts included: never let it below
    // info, whatever the filter says (later directives for a target win).
    filter_spec.push_str(",jsonrpsee=info,jsonrpsee_core=info,jsonrpsee_server=info,jsonrpsee_types=info");
    let file_filter =
        EnvFilter::try_new(&filter_spec).unwrap_or_else(|_| EnvFilter::new("info,cursor_bridge::content=off"));
    let off = spec.trim().eq_ignore_ascii_case("off");

    let dir = std::env::var_os(ENV_LOG_DIR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| state_dir.map(|d| d.join("logs")));

    let mut file = None;
    let mut guard = None;
    let file_layer = match (&dir, off) {
        (Some(dir), false) => {
            let appender = std::fs::create_dir_all(dir).ok().and_then(|_| {
                tracing_appender::rolling::Builder::new()
                    .rotation(tracing_appender::rolling::Rotation::DAILY)
                    .filename_prefix(FILE_PREFIX)
                    .filename_suffix("log")
                    .max_log_files(KEEP_FILES)
                    .build(dir)
                    .ok()
            });
            appender.map(|appender| {
                let (writer, g) = tracing_appender::non_blocking(appender);
                guard = Some(g);
                file = current_log_file(dir);
                tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false).with_filter(file_filter)
            })
        }
        _ => None,
    };
    let stderr_layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .with_filter(if off { LevelFilter::OFF } else { LevelFilter::WARN });
    let _ = tracing_subscriber::registry().with(file_layer).with(stderr_layer).try_init();
    Logging { file, _guard: guard }
}

fn current_log_file(dir: &Path) -> Option<PathBuf> {
    // The appender names files `<prefix>.<date>.log`; the newest is the one being written.
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(FILE_PREFIX)))
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .or_else(|| Some(dir.to_path_buf()))
}
