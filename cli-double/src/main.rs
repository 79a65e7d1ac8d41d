//! `cursor-agent-double`: a faithful stand-in for the Cursor CLI (`cursor-agent` / `agent`) used by
//! the sidecar's and the extension's tests. It never ships. Behaviour follows docs/cursor-cli.md
//! (and its transcripts, sidecar/tests/fixtures/cursor-cli/) and is scripted through
//! `CURSOR_DOUBLE_*` variables and scenarios — see README.md in this crate for the full contract.

mod acp;
mod args;
mod auth;
mod builtins;
mod chats;
mod commands;
mod events;
mod ids;
mod json;
mod md5;
mod models;
mod output;
mod permissions;
mod print_mode;
mod process;
mod prompt_protocol;
mod record;
mod scenario;
mod settings;
mod sha256;
mod style;
mod tool_model;
mod tool_script;
mod tool_state;
mod tools;

use std::time::Instant;

use args::{Parsed, Stop};
use record::Record;

fn main() {
    let started = Instant::now();
    // Lossy: an argument that is not valid Unicode is still recorded and parsed, never a panic.
    let argv: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let code = dispatch(argv, started);
    std::process::exit(code);
}

fn record(argv: &[String], subcommand: &str) {
    Record { argv: argv.to_vec(), subcommand: subcommand.to_owned(), ..Record::default() }.append();
}

/// Print mode is explicit (`-p`) or inferred when stdin or stdout is not a terminal
/// (docs/cursor-cli.md §3).
fn is_print_mode(parsed: &Parsed) -> bool {
    parsed.has("print") || !process::stdin_is_tty() || !process::stdout_is_tty()
}

fn dispatch(argv: Vec<String>, started: Instant) -> i32 {
    let parsed = args::parse(&argv);
    if let Ok(p) = &parsed {
        let default_command = matches!(p.subcommand.as_deref(), None | Some("agent"));
        if default_command && !p.has("list-models") && is_print_mode(p) {
            // Print mode sleeps its own startup time (a scenario may change it).
            return print_mode::run(p, argv, started);
        }
        if p.subcommand.as_deref() == Some("acp") {
            // ACP mode sleeps its own startup time (it has a knob of its own).
            return acp::run(p, argv);
        }
    }
    // Node boot time applies to every other command as well.
    process::sleep(settings::millis("CURSOR_DOUBLE_STARTUP_MS"));
    let parsed = match parsed {
        Ok(p) => p,
        Err(Stop::Version) => {
            record(&argv, "version");
            return commands::version();
        }
        Err(Stop::Help) => {
            record(&argv, "help");
            return commands::help();
        }
        Err(Stop::Error(message)) => {
            record(&argv, "invalid-args");
            output::stderr_line(&message);
            return 1;
        }
    };
    let sub = if parsed.has("list-models") { "models" } else { parsed.subcommand.as_deref().unwrap_or("interactive") };
    let canonical = match sub {
        "whoami" => "status",
        "agent" => "interactive",
        other => other,
    };
    record(&argv, canonical);
    match canonical {
        "models" => commands::models(&parsed),
        "create-chat" => commands::create_chat(),
        "status" => commands::status(&parsed),
        "about" => commands::about(&parsed),
        "help" => commands::help(),
        "ls" => commands::ls(),
        "resume" => commands::resume_list(),
        "interactive" => commands::not_simulated("interactive mode (pass -p)"),
        other => commands::not_simulated(&format!("the '{other}' subcommand")),
    }
}
