//! The Cursor API key, kept out of logs by its type.

use std::fmt;

use serde::Deserialize;

/// A secret (the Cursor API key). Its `Debug` never shows the value, so it cannot reach a log by
/// accident; it is only ever put into the CLI child's environment.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}
