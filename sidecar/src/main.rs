//! `cursor-bridge [stdio]`: speak the protocol on stdin/stdout. `cursor-bridge serve`: the
//! OpenAI-compatible HTTP server (`http/`). `cursor-bridge --version`.

use std::sync::Arc;

use cursor_bridge::{app, http, logging, process, server};

const USAGE: &str = "\
cursor-bridge: Cursor's models for any editor, over stdio JSON-RPC (see protocol.md) or an
OpenAI-compatible HTTP API (`serve`)

Usage:
  cursor-bridge [stdio]     speak the protocol on stdin/stdout (the default)
  cursor-bridge serve [--listen 127.0.0.1:9997] [--workspace DIR] [--cli-path PATH]
                      [--api-key-file FILE] [--mode agent|ask|plan]
                            an OpenAI-compatible HTTP server (`cursor-bridge serve --help`)
  cursor-bridge --version   print the version
  cursor-bridge --help      print this help

Environment:
  CURSOR_BRIDGE_CLI_PATH    path of the Cursor CLI (else cursor-agent / agent on PATH)
  CURSOR_BRIDGE_LOG         log filter, e.g. info, debug, off (default info)
  CURSOR_BRIDGE_LOG_DIR     log folder (default: <state folder>/cursor-bridge/logs)
  CURSOR_BRIDGE_STATE_DIR   state folder for sessions and the model cache
  CURSOR_BRIDGE_API_KEY     serve: the key HTTP clients must send (Authorization: Bearer)
";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] | ["stdio"] => std::process::exit(run_stdio()),
        ["serve", ..] => std::process::exit(http::main(&args[1..])),
        ["--version"] | ["-V"] | ["version"] => println!("cursor-bridge {}", env!("CARGO_PKG_VERSION")),
        ["--help"] | ["-h"] | ["help"] => print!("{USAGE}"),
        other => {
            eprintln!("cursor-bridge: unknown arguments: {}\n\n{USAGE}", other.join(" "));
            std::process::exit(2);
        }
    }
}

fn run_stdio() -> i32 {
    let state_dir = app::Paths::state_dir_from_env();
    let logging = logging::init(state_dir.as_deref());
    std::panic::set_hook(Box::new(|info| {
        // A panic inside a request is answered and survived; log it where people look.
        tracing::error!(panic = %info, "panic");
    }));
    process::become_subreaper();
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cursor-bridge: cannot start the async runtime: {e}");
            return 1;
        }
    };
    tracing::info!(version = env!("CARGO_PKG_VERSION"), pid = std::process::id(), "cursor-bridge starting");
    let code = runtime.block_on(async {
        let (outbox, rx) = server::outbox();
        let paths = app::Paths { state_dir, log_file: logging.file.clone() };
        let app = Arc::new(app::App::new(outbox, paths));
        server::serve(tokio::io::stdin(), tokio::io::stdout(), app, rx).await
    });
    tracing::info!("cursor-bridge exiting");
    // Don't wait for blocked stdin readers or lingering tasks: every child is already gone.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    drop(logging);
    code
}
