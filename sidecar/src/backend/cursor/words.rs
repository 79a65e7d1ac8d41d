//! What `doctor` says of the Cursor CLI: its name, its commands and the fixes a person can apply
//! (docs/cursor-cli.md §1 finding it, §7 `status` and `--version`).

use crate::backend::contract::AgentWords;

pub static WORDS: AgentWords = AgentWords {
    name: "Cursor CLI",
    vendor: "Cursor",
    not_found: "The Cursor CLI (`cursor-agent` / `agent`) was not found.",
    install_fix: "Install the Cursor CLI: see cursor.com/cli.",
    update_fix: "Update the Cursor CLI: run `agent update` in a terminal (or install it again: `curl https://cursor.com/install -fsS | bash`).",
    version_command: "agent --version",
    no_version_fix: "Run `agent --version` in a terminal to see what it says; `agent update` may help.",
    not_this_agent_fix: "Check that the configured CLI path is Cursor's `cursor-agent`.",
    status_command: "agent status",
    unknown_login_fix: "Run `agent status` in a terminal; if it says \"Not logged in\", run `agent login`.",
    login_fix: "Run `agent login` in a terminal.",
    backends: &[
        ("acp", "Cursor's ACP mode (a warm CLI process per conversation)"),
        ("print", "print mode (a CLI process per message)"),
    ],
};

/// A key the CLI will use without a login, in the environment it inherits.
pub fn key_in_environment() -> bool {
    ["CURSOR_API_KEY", "CURSOR_AUTH_TOKEN"].iter().any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()))
}
