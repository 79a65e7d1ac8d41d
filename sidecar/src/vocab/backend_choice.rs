//! Which backend runs turns: `auto`, `acp` or `print`.

use serde::{Deserialize, Serialize};

/// `initialize.options.backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BackendChoice {
    #[default]
    Auto,
    Acp,
    Print,
}

impl BackendChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Acp => "acp",
            BackendChoice::Print => "print",
        }
    }
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "acp" => Ok(BackendChoice::Acp),
            "print" => Ok(BackendChoice::Print),
            other => Err(format!("unknown backend `{other}` (auto, acp or print)")),
        }
    }
}
