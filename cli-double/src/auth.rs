//! Who is calling: a stored browser login (simulated by `CURSOR_DOUBLE_LOGGED_IN`), an API key /
//! auth token from the command line, or one from the environment.

use crate::args::Parsed;
use crate::settings;

/// Byte-exact print-mode text (S-runtime-auth-health capture).
pub const PRINT_AUTH_REQUIRED: &str =
    "Error: Authentication required. Please run 'agent login' first, or set CURSOR_API_KEY environment variable.";

/// `models` / `--list-models` text when unauthenticated (S-acp-probe, exit 0).
pub const MODELS_AUTH_REQUIRED: &str =
    "Error: Authentication required. Run 'agent login', pass --api-key/--auth-token, or set CURSOR_API_KEY/CURSOR_AUTH_TOKEN.";

pub const INVALID_KEY: &str = "Error: The provided API key is invalid.";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// Authenticated; the value is `system/init.apiKeySource`: `flag`, `env` or `login`.
    Ok(&'static str),
    Missing,
    InvalidKey,
}

/// Credentials win over the stored login (as in the real CLI, where a key reports `env`/`flag`
/// even on a logged-in machine). A key is checked against `CURSOR_DOUBLE_VALID_KEY` when that is
/// set; auth tokens are never checked.
pub fn resolve(parsed: &Parsed) -> Auth {
    let flag_key = parsed.value("api-key").filter(|k| !k.is_empty());
    let env_key = settings::non_empty("CURSOR_API_KEY");
    let key = match (flag_key, &env_key) {
        (Some(k), _) => Some((k.to_owned(), "flag")),
        (None, Some(k)) => Some((k.clone(), "env")),
        _ => None,
    };
    if let Some((key, source)) = key {
        return match settings::var("CURSOR_DOUBLE_VALID_KEY") {
            Some(valid) if valid != key => Auth::InvalidKey,
            _ => Auth::Ok(source),
        };
    }
    if parsed.value("auth-token").is_some_and(|t| !t.is_empty()) {
        return Auth::Ok("flag");
    }
    if settings::non_empty("CURSOR_AUTH_TOKEN").is_some() {
        return Auth::Ok("env");
    }
    if settings::logged_in() {
        Auth::Ok("login")
    } else {
        Auth::Missing
    }
}
