//! Logs go through `tracing` to a daily-rolling file (never stdout: stdout carries protocol frames)
//! and, at warn and above, to stderr, which the editor shows in its output channel.
//!
//! - Folder: `CURSOR_BRIDGE_LOG_DIR`, else `<state folder>/logs`.
//! - Filter: `CURSOR_BRIDGE_LOG`, a list of `level` and `target=level` directives (tracing's
//!   `Targets` syntax: the longest matching target wins), default `info`; `off` disables the file.
//!   Not `EnvFilter`: its span and field filters need a regex engine, a fifth of the binary's
//!   growth, for a syntax no one here uses. Prompts and answers are logged only under the
//!   `cursor_bridge::content` target at trace level, which a filter has to name explicitly (e.g.
//!   `info,cursor_bridge::content=trace`).

use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::filter::{LevelFilter, Targets};
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
    let file_filter = file_filter(&spec);
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

/// The log file's filter for a `CURSOR_BRIDGE_LOG` value: what it asks for, with two limits no
/// value lifts. Content is logged only when `cursor_bridge::content` is named; jsonrpsee never
/// logs below info (it traces raw requests, `initialize.apiKey` and prompts included), so the
/// user's directives for its targets are dropped (a more specific one would win over ours). A
/// value that does not parse is the default.
fn file_filter(spec: &str) -> Targets {
    let kept: Vec<&str> =
        spec.split(',').map(str::trim).filter(|d| !d.is_empty() && !d.starts_with("jsonrpsee")).collect();
    let named = kept.iter().any(|d| d.starts_with("cursor_bridge::content"));
    let filter = kept.join(",").parse::<Targets>().unwrap_or_else(|_| Targets::new().with_default(LevelFilter::INFO));
    let filter = if named { filter } else { filter.with_target("cursor_bridge::content", LevelFilter::OFF) };
    filter.with_target("jsonrpsee", LevelFilter::INFO)
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

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    /// (CURSOR_BRIDGE_LOG, target, level, written to the log file?)
    const CASES: &[(&str, &str, Level, bool)] = &[
        ("info", "cursor_bridge::engine", Level::INFO, true),
        ("info", "cursor_bridge::engine", Level::DEBUG, false),
        ("info", "cursor_bridge::content", Level::TRACE, false),
        ("debug", "cursor_bridge::engine", Level::DEBUG, true),
        ("trace", "cursor_bridge::content", Level::TRACE, false),
        ("trace", "jsonrpsee_server::server", Level::TRACE, false),
        ("trace", "jsonrpsee_core", Level::INFO, true),
        ("info,cursor_bridge::content=trace", "cursor_bridge::content", Level::TRACE, true),
        ("warn,cursor_bridge::backend=debug", "cursor_bridge::backend::acp", Level::DEBUG, true),
        ("warn,cursor_bridge::backend=debug", "cursor_bridge::engine", Level::INFO, false),
        // A more specific directive for jsonrpsee than ours must not reopen its raw requests.
        ("debug,jsonrpsee_core::server=trace", "jsonrpsee_core::server", Level::TRACE, false),
        ("debug,jsonrpsee_core::server=trace", "jsonrpsee_core::server", Level::DEBUG, false),
        // What does not parse is the default.
        ("cursor_bridge=loud", "cursor_bridge::engine", Level::INFO, true),
        ("cursor_bridge=loud", "cursor_bridge::engine", Level::DEBUG, false),
    ];

    #[test]
    fn the_file_filter_gives_what_is_asked_within_its_limits() {
        for (spec, target, level, want) in CASES {
            assert_eq!(file_filter(spec).would_enable(target, level), *want, "{spec:?}: {target} at {level}");
        }
    }
}
