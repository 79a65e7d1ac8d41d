//! Environment access in one place, so the README's list of `CURSOR_DOUBLE_*` variables can be
//! checked against a single file.

use std::time::Duration;

/// The variable's value, if set and valid Unicode.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// True when the variable is set to `1` or `true`.
pub fn enabled(name: &str) -> bool {
    matches!(var(name).as_deref(), Some("1") | Some("true"))
}

/// A millisecond count; unset or unparsable means zero (a typo must not make a test hang).
pub fn millis(name: &str) -> Duration {
    Duration::from_millis(var(name).and_then(|v| v.trim().parse().ok()).unwrap_or(0))
}

/// A non-empty value.
pub fn non_empty(name: &str) -> Option<String> {
    var(name).filter(|v| !v.is_empty())
}

/// The version string printed by `--version` (and reported by `about`).
pub fn version() -> String {
    non_empty("CURSOR_DOUBLE_VERSION").unwrap_or_else(|| "2026.09.28-64d2043".to_owned())
}

/// The e-mail address of the simulated browser login.
pub fn email() -> String {
    non_empty("CURSOR_DOUBLE_EMAIL").unwrap_or_else(|| "test@example.com".to_owned())
}

/// Whether a stored browser login exists (`CURSOR_DOUBLE_LOGGED_IN=0` simulates a fresh machine).
/// Where the real CLI keeps it is an open question (the client-tools research, Q3): the login does
/// not depend on the working folder or `CURSOR_DATA_DIR`; with `CURSOR_DOUBLE_AUTH_IN_CONFIG_DIR=1`
/// it lives in the config folder, so a private `CURSOR_CONFIG_DIR` loses it.
pub fn logged_in() -> bool {
    let stored = !matches!(var("CURSOR_DOUBLE_LOGGED_IN").as_deref(), Some("0") | Some("false"));
    stored && !(enabled("CURSOR_DOUBLE_AUTH_IN_CONFIG_DIR") && non_empty("CURSOR_CONFIG_DIR").is_some())
}
