//! `cursor-bridge serve`: an HTTP front door to the same engine, sessions and process pool as the
//! stdio server (an `Engine` configured from the command line instead of by an `initialize`
//! request), speaking three dialects: OpenAI's Chat Completions and Responses APIs and
//! Anthropic's Messages API. Routes: `GET /v1/models`, `POST /v1/chat/completions` and
//! `POST /v1/responses` (plain and SSE), `POST /v1/messages` (plain and SSE) with
//! `POST /v1/messages/count_tokens`, `GET /health`.
//!
//! - A dialect per folder, each with its `request.rs` and `stream.rs`: `chat/` Chat Completions,
//!   `responses/` the Responses API, `messages/` Anthropic's Messages API.
//! - What the dialects share: `checks.rs` what a request must be before its turn (JSON, caller,
//!   model, mode), `turn.rs` a request as one engine turn (collected, or streamed through a
//!   dialect's `Encoder`), `usage.rs` token counts and their estimates, `structured/` answers
//!   held to a format, `images.rs` a request's images, `errors.rs` OpenAI-shaped errors.
//! - The rest of the server: `models.rs` `GET /v1/models`, `health.rs` `GET /health`,
//!   `fallback.rs` 404 and 405, `auth.rs` the client key, `workspaces.rs` where turns run.
//! - Safe by default: loopback only unless a client key is set; a request never picks the folder
//!   the CLI works in; bodies are capped.

mod auth;
mod chat;
mod checks;
mod errors;
mod fallback;
mod health;
mod images;
mod messages;
mod models;
mod responses;
mod structured;
mod turn;
mod usage;
mod workspaces;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tracing::Instrument;

use crate::backend::select::{self, EnvPolicy};
use crate::engine::sessions::Door;
use crate::engine::{Config, Engine};
use crate::protocol::Options;
use crate::startup::{self, Paths};
use crate::translate;
use crate::vocab::{Mode, Secret};

pub use workspaces::Workspaces;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:9997";
/// A conversation folder no session points to is kept this long (a turn may be creating it).
const FOLDER_GRACE: std::time::Duration = std::time::Duration::from_secs(3600);
/// Largest request body. Whole conversations are re-sent with every request, so this is generous;
/// the stdio transport allows about the same per frame.
pub const MAX_BODY: usize = 32 * 1024 * 1024;

pub const USAGE: &str = "\
Usage: cursor-bridge serve [options]

An OpenAI- and Anthropic-compatible HTTP server (GET /v1/models, POST /v1/chat/completions,
POST /v1/responses, POST /v1/messages, POST /v1/messages/count_tokens, GET /health).

Options:
  --listen ADDR          address to listen on (default 127.0.0.1:9997; a non-loopback address
                         needs a client key)
  --workspace DIR        folder the Cursor CLI works in (default: a private folder per conversation)
  --cli-path PATH        the Cursor CLI to run (else CURSOR_BRIDGE_CLI_PATH, then PATH)
  --api-key-file FILE    client key clients must send as `Authorization: Bearer <key>` or
                         `x-api-key: <key>` (else CURSOR_BRIDGE_API_KEY; none: no key needed)
  --model ID             the Cursor model that serves requests for a Claude model id Cursor
                         does not list (Claude Code's own ids, on /v1/messages; default auto)
  --mode agent|ask|plan  the most a request may do, and the mode of those that name none
                         (default ask; a request asking for more is refused with 403)
  --request-timeout SECS longest a turn may take (default 300)
  --idle-timeout SECS    a turn whose CLI is silent this long fails (default 60)
  --max-concurrent N     CLI turns at once; more requests queue (default 4)
  --backend auto|acp|print
                         how turns run: Cursor's ACP mode with warm sessions, print mode (a
                         process per turn), or auto (ACP, print mode when ACP does not work;
                         default; also CURSOR_BRIDGE_BACKEND)
  --pass-env NAMES       more of this server's environment for the CLI and the commands it runs
                         (comma-separated names, NAME* for a prefix; also CURSOR_BRIDGE_PASS_ENV).
                         By default they get only what the CLI needs: PATH, HOME, the locale,
                         temporary folders, proxies and certificates, the CLI's own folders

Environment: CURSOR_BRIDGE_API_KEY (client key), CURSOR_API_KEY (the Cursor key the CLI uses),
CURSOR_BRIDGE_PASS_ENV, and the CURSOR_BRIDGE_* variables of `cursor-bridge --help`.
";

/// `cursor-bridge serve` options.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeArgs {
    pub listen: String,
    pub workspace: Option<PathBuf>,
    pub cli_path: Option<String>,
    pub api_key_file: Option<PathBuf>,
    pub mode: Mode,
    pub request_timeout: Option<u64>,
    pub idle_timeout: Option<u64>,
    pub max_concurrent: Option<usize>,
    pub backend: Option<crate::vocab::BackendChoice>,
    /// The Cursor model for Claude model ids Cursor does not list (`/v1/messages`).
    pub model: Option<String>,
    /// Names (or `PREFIX*`) of the server's variables the CLI inherits beyond the minimal set.
    pub pass_env: Vec<String>,
}

impl ServeArgs {
    pub fn parse(args: &[String]) -> Result<ServeArgs, String> {
        let mut out = ServeArgs {
            listen: DEFAULT_LISTEN.into(),
            workspace: None,
            cli_path: None,
            api_key_file: None,
            mode: Mode::Ask,
            request_timeout: None,
            idle_timeout: None,
            max_concurrent: None,
            backend: None,
            model: None,
            pass_env: std::env::var(PASS_ENV).map(|v| names(&v)).unwrap_or_default(),
        };
        crate::util::args::each_option(args, |name, value| {
            match name {
                "--listen" => out.listen = value()?,
                "--workspace" => out.workspace = Some(PathBuf::from(value()?)),
                "--cli-path" => out.cli_path = Some(value()?),
                "--api-key-file" => out.api_key_file = Some(PathBuf::from(value()?)),
                "--mode" => {
                    out.mode = match value()?.as_str() {
                        "agent" => Mode::Agent,
                        "ask" => Mode::Ask,
                        "plan" => Mode::Plan,
                        other => return Err(format!("--mode must be agent, ask or plan, not `{other}`")),
                    }
                }
                "--request-timeout" => out.request_timeout = Some(positive(name, &value()?)?),
                "--idle-timeout" => out.idle_timeout = Some(positive(name, &value()?)?),
                "--max-concurrent" => out.max_concurrent = Some(positive(name, &value()?)? as usize),
                "--backend" => out.backend = Some(value()?.parse().map_err(|e| format!("--backend: {e}"))?),
                "--pass-env" => out.pass_env.extend(names(&value()?)),
                "--model" => {
                    let model = value()?.trim().to_string();
                    if model.is_empty() {
                        return Err(
                            "--model needs a model id (`cursor-bridge serve` then lists them at /v1/models)".into()
                        );
                    }
                    out.model = Some(model);
                }
                other => return Err(format!("unknown option `{other}`")),
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// `serve --pass-env`'s environment twin.
pub const PASS_ENV: &str = "CURSOR_BRIDGE_PASS_ENV";

fn names(list: &str) -> Vec<String> {
    list.split(',').map(str::trim).filter(|n| !n.is_empty()).map(String::from).collect()
}

fn positive(name: &str, value: &str) -> Result<u64, String> {
    value.parse::<u64>().ok().filter(|n| *n > 0).ok_or(format!("{name} needs a whole number above 0, not `{value}`"))
}

/// `localhost:PORT` or an IP socket address. Names other than localhost are not resolved: what
/// the server binds to must be plain to see (and to check for loopback).
pub fn listen_addr(s: &str) -> Result<SocketAddr, String> {
    if let Some(port) = s.strip_prefix("localhost:") {
        let port = port.parse().map_err(|_| format!("bad port in `{s}`"))?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    s.parse().map_err(|_| format!("`{s}` is not an address to listen on (e.g. 127.0.0.1:9997 or [::1]:9997)"))
}

/// What every handler shares.
pub struct HttpState {
    pub engine: Arc<Engine>,
    pub workspaces: Workspaces,
    pub client_key: Option<Secret>,
    pub default_mode: Mode,
    /// The Cursor model that serves a Claude model id Cursor does not list (`serve --model`).
    pub claude_model: String,
    /// Responses kept for `previous_response_id` (`POST /v1/responses`).
    pub responses: responses::ResponseStore,
    /// `/health` asks the CLI (`agent status` is a Node start); a poller should not cost one each time.
    health_cache: Mutex<Option<(Instant, crate::engine::core::Status)>>,
}

/// The request id of the request being handled (the client's `x-request-id`, or ours).
#[derive(Clone)]
pub struct RequestId(pub String);

pub fn router(state: Arc<HttpState>) -> Router {
    Router::new()
        .route("/v1/models", get(models::models))
        .route("/v1/chat/completions", post(chat::create))
        .route("/v1/responses", post(responses::create))
        .route("/v1/messages", post(messages::create))
        .route("/v1/messages/count_tokens", post(messages::count_tokens))
        .route("/health", get(health::health))
        .fallback(fallback::not_found)
        .method_not_allowed_fallback(fallback::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        // Outermost last: every response, a 401 included, carries the request id.
        .layer(middleware::from_fn_with_state(state.clone(), auth::require_key))
        .layer(middleware::from_fn(request_context))
        .with_state(state)
}

/// Gives the request an id (the client's when it sent a sane one), runs it inside a span that
/// puts the id on every log line it causes, and returns the id in `x-request-id`.
async fn request_context(mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.len() <= 200 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_string)
        .unwrap_or_else(|| format!("req_{:016x}", crate::util::ids::random_u64()));
    let span = tracing::info_span!("http", request_id = %id);
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    request.extensions_mut().insert(RequestId(id.clone()));
    let started = Instant::now();
    let mut response = async move {
        tracing::info!(%method, %path, "request");
        next.run(request).await
    }
    .instrument(span.clone())
    .await;
    span.in_scope(|| {
        tracing::info!(status = response.status().as_u16(), ms = started.elapsed().as_millis() as u64, "response")
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

pub(crate) fn json_body<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => ([(CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "could not serialize a response");
            axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// `cursor-bridge serve …`: returns the process exit code (2: bad usage or an unsafe setup).
pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return 0;
    }
    let args = match ServeArgs::parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cursor-bridge serve: {e}\n\n{USAGE}");
            return 2;
        }
    };
    let addr = match listen_addr(&args.listen) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cursor-bridge serve: {e}");
            return 2;
        }
    };
    let client_key = match auth::load_key(args.api_key_file.as_deref(), std::env::var(auth::ENV_API_KEY).ok()) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("cursor-bridge serve: {e}");
            return 2;
        }
    };
    if !addr.ip().is_loopback() && client_key.is_none() {
        eprintln!(
            "cursor-bridge serve: refusing to listen on {addr} without a client key: anyone who can reach \
             it could use your Cursor account. Set {} or pass --api-key-file, or listen on 127.0.0.1.",
            auth::ENV_API_KEY
        );
        return 2;
    }
    if let Some(cli) = args.cli_path.as_deref().filter(|c| c.contains(std::path::MAIN_SEPARATOR) && !c.starts_with('~'))
    {
        // Said now, not as a 503 on every request (bare names and ~ are resolved by discovery).
        if !std::path::Path::new(cli).is_file() {
            eprintln!("cursor-bridge serve: --cli-path {cli} is not a file");
            return 2;
        }
    }
    let workspace = match &args.workspace {
        Some(dir) => match dunce::canonicalize(dir) {
            Ok(d) if d.is_dir() => Some(d),
            _ => {
                eprintln!("cursor-bridge serve: --workspace {} is not a folder", dir.display());
                return 2;
            }
        },
        None => None,
    };

    let started = match startup::start() {
        Ok(started) => started,
        Err(code) => return code,
    };
    tracing::info!(version = env!("CARGO_PKG_VERSION"), pid = std::process::id(), %addr, "cursor-bridge serve starting");
    let paths = started.paths.clone();
    let code = started.runtime.block_on(serve(addr, args, workspace, client_key, paths));
    started.finish(code)
}

async fn serve(
    addr: SocketAddr,
    args: ServeArgs,
    workspace: Option<PathBuf>,
    client_key: Option<Secret>,
    paths: Paths,
) -> i32 {
    let workspaces = match workspace {
        Some(dir) => Workspaces::Fixed(dir),
        None => match Workspaces::private(paths.state_dir.as_deref()) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("cursor-bridge serve: cannot create the private workspace folder: {e}");
                return 1;
            }
        },
    };
    let options = Options {
        // An API client's system message is part of what it asks (unlike Copilot's, which
        // describes tools the CLI does not have).
        send_system_messages: true,
        request_timeout_seconds: args.request_timeout.unwrap_or(Options::default().request_timeout_seconds),
        idle_timeout_seconds: args.idle_timeout.unwrap_or(Options::default().idle_timeout_seconds),
        max_concurrent: args.max_concurrent.unwrap_or(Options::default().max_concurrent),
        backend: args.backend,
        ..Options::default()
    };
    let mut config =
        match Config::new(translate::engine_settings(&options), workspaces.roots(), paths.state_dir.clone()) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("cursor-bridge serve: {e}");
                return 1;
            }
        };
    // `maxSessions` counts serve's own sessions, never the editor's.
    config.door = Door::Http;
    if let Workspaces::Private { root, .. } = &workspaces {
        // A folder per conversation, chosen by the engine with the conversation's session.
        config.conversation_folders = Some(root.clone());
    }
    // The CLI's key is the one thing of the operator's credentials it gets (set in its
    // environment, never on a command line); the rest of the server's environment stays behind
    // (`EnvPolicy::Minimal`), but for what the operator passes on purpose.
    let api_key = std::env::var("CURSOR_API_KEY").ok().filter(|k| !k.is_empty()).map(Secret::new);
    let settings = select::BackendSettings {
        env: EnvPolicy::Minimal { pass: args.pass_env.clone() },
        ..translate::backend_settings(args.cli_path.clone(), api_key, &options)
    };
    let engine = match crate::startup::engine(config, settings, select::backend) {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("cursor-bridge serve: {}", e.message);
            return 1;
        }
    };
    // Warm start, as `initialize` does for the editor: a chat id ready for the first turn (only
    // with a fixed folder: private ones are made per conversation).
    let warm: Vec<PathBuf> = match &workspaces {
        Workspaces::Fixed(dir) => vec![dir.clone()],
        Workspaces::Private { .. } => Vec::new(),
    };
    // Conversation folders live as long as their sessions: swept now and every hour.
    let sweeper = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(3600));
            loop {
                tick.tick().await;
                let engine = engine.clone();
                let _ = tokio::task::spawn_blocking(move || engine.sweep_conversation_folders(FOLDER_GRACE)).await;
            }
        })
    };
    let _sweeper = crate::util::sync::AbortOnDrop(sweeper.abort_handle());
    // Token estimates read their vocabulary once (tens of ms): now, on a thread of its own (it
    // starts nothing), not in the first request. Where it is missing, that is logged (a warning).
    std::thread::spawn(|| {
        crate::util::tokens::shared();
    });
    match engine.warm_up(&warm).await {
        Ok(_) => {
            // Every completion checks its model against the list: have it (and a disk cache
            // checked) before the first one asks.
            let engine = engine.clone();
            tokio::spawn(async move {
                if let Err(e) = engine.models(false).await {
                    tracing::warn!(error = %e, "could not list the models");
                }
            });
        }
        Err(e) => {
            // Keep serving: `/health` says so, and requests answer 503 until the CLI appears.
            tracing::warn!(error = %e, "the Cursor CLI was not found");
            eprintln!("cursor-bridge serve: warning: {}", e.message);
        }
    }
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cursor-bridge serve: cannot listen on {addr}: {e}");
            return 1;
        }
    };
    let bound = listener.local_addr().unwrap_or(addr);
    let state = Arc::new(HttpState {
        engine: engine.clone(),
        workspaces,
        client_key,
        default_mode: args.mode,
        claude_model: args.model.clone().unwrap_or_else(|| "auto".into()),
        responses: responses::ResponseStore::default(),
        health_cache: Mutex::new(None),
    });
    tracing::info!(addr = %bound, key = state.client_key.is_some(), mode = args.mode.as_str(), "listening");
    if state.client_key.is_none() {
        eprintln!(
            "cursor-bridge serve: no client key: any local user or program that can reach {bound} can use your Cursor \
             account through it. On a machine others use, set {} or pass --api-key-file.",
            auth::ENV_API_KEY
        );
    }
    // Tests and scripts read this line to learn the port (`--listen 127.0.0.1:0`).
    eprintln!("cursor-bridge serve: listening on http://{bound}/v1");
    let server = axum::serve(listener, router(state));
    tokio::select! {
        r = server => {
            if let Err(e) = r {
                tracing::error!(error = %e, "the HTTP server failed");
                return 1;
            }
        }
        signal = startup::termination_signal() => tracing::info!(signal, "stopping on a signal"),
    }
    engine.shutdown();
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ServeArgs, String> {
        ServeArgs::parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn passed_variables_are_a_comma_list_and_the_flag_may_repeat() {
        let a = parse(&["--pass-env", "JAVA_HOME, MY_TOOL_*,", "--pass-env=GOPATH"]).unwrap();
        assert!(a.pass_env.ends_with(&["JAVA_HOME".into(), "MY_TOOL_*".into(), "GOPATH".into()]), "{:?}", a.pass_env);
    }

    #[test]
    fn serve_arguments() {
        let a = parse(&[]).unwrap();
        assert_eq!((a.listen.as_str(), a.mode), (DEFAULT_LISTEN, Mode::Ask));
        let a = parse(&["--listen", "0.0.0.0:1", "--mode=agent", "--workspace", "/w", "--api-key-file=/k"]).unwrap();
        assert_eq!(a.listen, "0.0.0.0:1");
        assert_eq!(a.mode, Mode::Agent);
        assert_eq!(a.workspace, Some(PathBuf::from("/w")));
        assert_eq!(a.api_key_file, Some(PathBuf::from("/k")));
        assert!(parse(&["--mode", "yolo"]).is_err());
        let a = parse(&["--request-timeout", "900", "--idle-timeout=120", "--max-concurrent", "8"]).unwrap();
        assert_eq!((a.request_timeout, a.idle_timeout, a.max_concurrent), (Some(900), Some(120), Some(8)));
        assert!(parse(&["--idle-timeout", "0"]).is_err());
        assert!(parse(&["--max-concurrent", "lots"]).is_err());
        assert!(parse(&["--listen"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert_eq!(parse(&["--model", "gpt-5.5"]).unwrap().model.as_deref(), Some("gpt-5.5"));
        assert!(parse(&["--model", " "]).is_err());
    }

    #[test]
    fn listen_addresses() {
        assert!(listen_addr("127.0.0.1:9997").unwrap().ip().is_loopback());
        assert!(listen_addr("[::1]:9997").unwrap().ip().is_loopback());
        assert!(listen_addr("localhost:80").unwrap().ip().is_loopback());
        assert!(!listen_addr("0.0.0.0:80").unwrap().ip().is_loopback());
        assert!(listen_addr("example.com:80").is_err());
    }
}
