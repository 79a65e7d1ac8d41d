//! What to tell a person when the Cursor CLI is missing or logged out.

pub const INSTALL_HINT: &str =
    "Install the Cursor CLI (`curl https://cursor.com/install -fsS | bash`, see cursor.com/cli), \
     or set `cursorBridge.cliPath` to the `cursor-agent` binary.";

pub const LOGIN_HINT: &str =
    "Run `agent login` in a terminal, or set an API key (command \"Cursor Bridge: Set API Key\").";
