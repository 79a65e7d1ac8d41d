//! Request methods, registered on jsonrpsee's `RpcModule`. Each parses its params into the typed
//! struct from `protocol/` (bad params: -32602 with `kind: invalidParams`), calls the engine,
//! and returns a typed result or a [`BridgeError`] (turned into a JSON-RPC error here).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::RpcModule;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use super::deltas;
use super::state::Connection;
use crate::engine::sessions::ClearScope;
use crate::engine::tools::ToolSet;
use crate::engine::{Config, TurnOutcome, TurnRequest};
use crate::error::BridgeError;
use crate::protocol::*;
use crate::translate;
use crate::util::sync::lock;

/// A [`BridgeError`] at the protocol edge: `code` from its kind, `data: {kind, hint, detail}`.
pub struct RpcError(pub BridgeError);

impl From<BridgeError> for RpcError {
    fn from(e: BridgeError) -> Self {
        RpcError(e)
    }
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(RpcError(e): RpcError) -> Self {
        ErrorObjectOwned::owned(error_code(e.kind), e.message.clone(), Some(ErrorData::from(&e)))
    }
}

type RpcResult<T> = Result<T, RpcError>;

fn parse<T: DeserializeOwned>(params: &Params<'_>) -> Result<T, BridgeError> {
    // Absent params mean "all defaults" for the methods whose params are all optional.
    let raw = params.as_str().unwrap_or("{}");
    serde_json::from_str(raw).map_err(|e| BridgeError::invalid_params(format!("invalid params: {e}")))
}

/// The `turnId`s of this connection's turns in flight. Deltas are told apart by `turnId` alone,
/// so a second turn with one of these ids is refused rather than interleaved with the first.
#[derive(Clone, Default)]
struct Turns(Arc<Mutex<HashSet<String>>>);

/// A `turnId` held for one turn; dropped (answered, failed, cancelled) it is free again.
struct TurnClaim {
    turns: Turns,
    id: String,
}

impl Turns {
    fn claim(&self, id: &str) -> Result<TurnClaim, BridgeError> {
        if !lock(&self.0).insert(id.to_owned()) {
            return Err(BridgeError::invalid_params(format!("turnId {id:?} is already in flight"))
                .hint("Give every turn its own turnId; a turnId can be reused once its turn is answered."));
        }
        Ok(TurnClaim { turns: self.clone(), id: id.to_owned() })
    }
}

impl Drop for TurnClaim {
    fn drop(&mut self) {
        lock(&self.turns.0).remove(&self.id);
    }
}

pub fn module(conn: Arc<Connection>) -> RpcModule<Connection> {
    let mut m = RpcModule::from_arc(conn);
    let turns = Turns::default();
    let result =
        (|| -> Result<(), jsonrpsee::core::RegisterMethodError> {
            m.register_async_method(request::INITIALIZE, |p, c, _| async move {
                initialize(&c, p).await.map_err(ErrorObjectOwned::from)
            })?;
            m.register_async_method(request::MODELS_LIST, |p, c, _| async move {
                models_list(&c, p).await.map_err(ErrorObjectOwned::from)
            })?;
            m.register_async_method(request::CHAT_SEND, move |p, c, _| {
                let turns = turns.clone();
                async move { chat_send(&c, &turns, p).await.map_err(ErrorObjectOwned::from) }
            })?;
            // Async: both read the shared session file (and clear writes it) off the workers.
            m.register_async_method(request::SESSIONS_LIST, |_, c, _| async move {
                sessions_list(&c).await.map_err(ErrorObjectOwned::from)
            })?;
            m.register_async_method(request::SESSIONS_CLEAR, |p, c, _| async move {
                sessions_clear(&c, p).await.map_err(ErrorObjectOwned::from)
            })?;
            m.register_async_method(request::STATUS, |_, c, _| async move {
                status(&c).await.map_err(ErrorObjectOwned::from)
            })?;
            m.register_async_method(request::DOCTOR, |_, c, _| async move {
                doctor(&c).await.map_err(ErrorObjectOwned::from)
            })?;
            // Long (a minute with prompts): async, and never on a turn's slot.
            m.register_async_method(request::PROBE, |p, c, _| async move {
                probe(&c, p).await.map_err(ErrorObjectOwned::from)
            })?;
            m.register_method(request::SHUTDOWN, |_, c, _| -> Result<(), ErrorObjectOwned> {
                c.begin_shutdown();
                // Spares and prefetches end now; running turns were aborted by the dispatch loop.
                c.shutdown_background();
                Ok(())
            })?;
            Ok(())
        })();
    result.expect("method names are unique");
    m
}

async fn initialize(conn: &Arc<Connection>, p: Params<'static>) -> RpcResult<InitializeResult> {
    let params: InitializeParams = parse(&p)?;
    if params.protocol_version != PROTOCOL_VERSION {
        return Err(BridgeError::invalid_params(format!(
            "protocol version {} is not supported; this sidecar speaks {PROTOCOL_VERSION}",
            params.protocol_version
        ))
        .hint("Update the extension and the sidecar together.")
        .into());
    }
    if conn.is_initialized() {
        return Err(BridgeError::invalid_params("`initialize` was already called").into());
    }
    let client = params.client_info.as_ref().map(|c| c.name.clone()).unwrap_or_default();
    let ignored = params.options.ignored();
    if !ignored.is_empty() {
        // A newer client: it still works, without what this sidecar does not know.
        tracing::warn!(
            options = ?ignored,
            "ignoring initialize options (or values) this sidecar does not know; their defaults are kept"
        );
    }
    let folders: Vec<PathBuf> = params.workspace_folders.iter().map(PathBuf::from).collect();
    let config = Config::new(translate::engine_settings(&params.options), folders, conn.paths.state_dir.clone())?;
    let api_key = params.api_key.clone().filter(|k| !k.expose().is_empty());
    let has_key = api_key.is_some();
    let settings = translate::backend_settings(params.cli_path.clone(), api_key, &params.options);
    let engine = crate::startup::engine(config, settings, |s| conn.backend(s))?;
    conn.set_engine(engine.clone())?;
    tracing::info!(client = %client, workspaces = engine.config().workspaces.len(), api_key = has_key, "initialized");

    let mut changes = engine.watch_models();
    let outbox = conn.outbox.clone();
    conn.spawn_background(async move {
        while let Ok(models) = changes.recv().await {
            outbox.notify(notification::MODELS_CHANGED, &ModelsListResult { models }).await;
        }
    });
    // Warm start: the CLI found and a chat ready for each folder before the first message.
    let workspaces = engine.config().workspaces.clone();
    let cli = engine.warm_up(&workspaces).await.ok();
    Ok(InitializeResult {
        protocol_version: PROTOCOL_VERSION,
        server_info: ServerInfo { name: "cursor-bridge".into(), version: env!("CARGO_PKG_VERSION").into() },
        capabilities: Capabilities {
            delta_kinds: DeltaBody::KINDS.iter().map(|k| k.to_string()).collect(),
            cancel: true,
            sessions: true,
            client_tools: CLIENT_TOOLS_VERSION,
            cli: CliInfo { found: cli.is_some(), path: cli.map(|c| c.path) },
            options: Options::known_names(),
            ignored_options: ignored,
        },
    })
}

async fn models_list(conn: &Connection, p: Params<'static>) -> RpcResult<ModelsListResult> {
    let params: ModelsListParams = parse(&p)?;
    Ok(ModelsListResult { models: conn.engine()?.models(params.refresh).await? })
}

async fn chat_send(conn: &Connection, turns: &Turns, p: Params<'static>) -> RpcResult<ChatSendResult> {
    let params: ChatSendParams = parse(&p)?;
    let images = checked_images(&params.images)?;
    let engine = conn.engine()?.clone();
    // Held until the answer is built: the task ends (or is aborted) right after.
    let _claim = turns.claim(&params.turn_id)?;
    let turn_id = params.turn_id.clone();
    let (tx, rx) = mpsc::channel(deltas::BUFFER);
    let request = TurnRequest {
        turn_id: params.turn_id,
        model: params.model,
        mode: params.mode,
        workspace: params.workspace,
        conversation_id: params.conversation_id,
        session_id: params.session_id,
        utility: params.utility,
        messages: params.messages,
        tools: (!params.tools.is_empty()).then_some(ToolSet {
            tools: params.tools,
            choice: params.tool_choice,
            parallel: params.parallel_tool_calls,
        }),
        // One client per stdio connection: every call is its own.
        owner: None,
        answer_format: None,
        images,
    };
    let (outcome, ()) = tokio::join!(engine.turn(request, tx), deltas::forward(&turn_id, rx, &conn.outbox));
    let TurnOutcome { session_id, resumed, usage, duration_ms, tool_calls, .. } = outcome?;
    let stop_reason = if tool_calls { StopReason::ToolCalls } else { StopReason::End };
    Ok(ChatSendResult { turn_id, session_id, resumed, stop_reason, usage, duration_ms })
}

/// The request's images as the engine takes them: each one a supported type with base64 data,
/// or the request is refused naming the image (nothing is sent with an image left out).
fn checked_images(images: &[crate::vocab::Image]) -> Result<Vec<crate::vocab::Image>, BridgeError> {
    images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            crate::vocab::Image::checked(&image.mime_type, &image.data).map_err(|why| {
                BridgeError::invalid_params(format!("images[{i}]: {why}"))
                    .hint("Attach the image as PNG, JPEG, GIF or WebP, or send the message without it.")
            })
        })
        .collect()
}

async fn sessions_list(conn: &Connection) -> RpcResult<SessionsListResult> {
    let sessions = conn.engine()?.sessions().await;
    Ok(SessionsListResult { sessions: sessions.into_iter().map(translate::session).collect() })
}

async fn sessions_clear(conn: &Connection, p: Params<'static>) -> RpcResult<SessionsClearResult> {
    let params: SessionsClearParams = parse(&p)?;
    // This window's unless asked for all: the session file is shared by every sidecar of the user.
    let scope = match (&params.session_id, params.all) {
        (Some(id), _) => ClearScope::One(id),
        (None, true) => ClearScope::All,
        (None, false) => ClearScope::Mine,
    };
    Ok(SessionsClearResult { cleared: conn.engine()?.clear_sessions(scope).await })
}

async fn status(conn: &Connection) -> RpcResult<StatusResult> {
    let status = conn.engine()?.status().await;
    Ok(translate::status(status, conn.paths.log_file.as_ref().map(|p| p.display().to_string())))
}

async fn probe(conn: &Connection, p: Params<'static>) -> RpcResult<ProbeResult> {
    let params: ProbeParams = parse(&p)?;
    Ok(translate::probe(conn.engine()?.probe(translate::probe_plan(&params)).await))
}

async fn doctor(conn: &Connection) -> RpcResult<DoctorResult> {
    Ok(translate::doctor(conn.engine()?.clone().doctor().await))
}
