//! Everything that knows the Cursor CLI: where it is, how to call it, and how to read what it
//! prints. `../shared/reference/cursor-cli.md` is the source for every rule here.

pub mod args;
pub mod commands;
pub mod discovery;
pub mod errors;
pub mod models;
pub mod stream;
pub mod chat_ids;
pub mod spares;

pub const INSTALL_HINT: &str = "Install the Cursor CLI (`curl https://cursor.com/install -fsS | bash`, see cursor.com/cli), \
     or set `cursorBridge.cliPath` to the `cursor-agent` binary.";

pub const LOGIN_HINT: &str =
    "Run `agent login` in a terminal, or set an API key (command \"Cursor Bridge: Set API Key\").";
