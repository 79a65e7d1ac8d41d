//! `cursor-bridge [stdio]`: speak the protocol on stdin/stdout. `cursor-bridge serve`: the
//! OpenAI-compatible HTTP server (`http/`). `cursor-bridge --version`.

use cursor_bridge::{doctor, http, startup, stdio};

const USAGE: &str = "\
cursor-bridge: Cursor's models for any editor, over stdio JSON-RPC (see protocol.md) or an
OpenAI-compatible HTTP API (`serve`)

Usage:
  cursor-bridge [stdio]     speak the protocol on stdin/stdout (the default)
  cursor-bridge serve [--listen 127.0.0.1:9997] [--workspace DIR] [--cli-path PATH]
                      [--api-key-file FILE] [--mode agent|ask|plan]
                            an OpenAI-compatible HTTP server (`cursor-bridge serve --help`)
  cursor-bridge doctor [--json]
                            check the set-up and say how to fix it (`cursor-bridge doctor --help`)
  cursor-bridge --version   print the version
  cursor-bridge --help      print this help

Environment:
  CURSOR_BRIDGE_CLI_PATH    path of the Cursor CLI (else cursor-agent / agent on PATH)
  CURSOR_BRIDGE_LOG         log filter, e.g. info, debug, off (default info)
  CURSOR_BRIDGE_LOG_DIR     log folder (default: logs/ in the state folder)
  CURSOR_BRIDGE_STATE_DIR   state folder for sessions and the model cache (default: cursor-bridge/
                            in ~/.local/state on Linux, ~/Library/Application Support on macOS,
                            %LOCALAPPDATA% on Windows)
  CURSOR_BRIDGE_API_KEY     serve: the key HTTP clients must send (Authorization: Bearer)
  CURSOR_BRIDGE_PASS_ENV    serve: more variables for the CLI (`cursor-bridge serve --help`)
";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] | ["stdio"] => std::process::exit(run_stdio()),
        ["serve", ..] => std::process::exit(http::main(&args[1..])),
        ["doctor", ..] => std::process::exit(doctor::main(&args[1..])),
        ["--version"] | ["-V"] | ["version"] => println!("cursor-bridge {}", env!("CARGO_PKG_VERSION")),
        ["--help"] | ["-h"] | ["help"] => print!("{USAGE}"),
        other => {
            eprintln!("cursor-bridge: unknown arguments: {}\n\n{USAGE}", other.join(" "));
            std::process::exit(2);
        }
    }
}

fn run_stdio() -> i32 {
    let started = match startup::start() {
        Ok(started) => started,
        Err(code) => return code,
    };
    tracing::info!(version = env!("CARGO_PKG_VERSION"), pid = std::process::id(), "cursor-bridge starting");
    let paths = started.paths.clone();
    let code = started.runtime.block_on(stdio::serve(tokio::io::stdin(), tokio::io::stdout(), paths));
    started.finish(code)
}
