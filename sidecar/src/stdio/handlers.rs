//! Request methods, registered on jsonrpsee's `RpcModule`. Each parses its params into the typed
//! struct from `protocol.rs` (bad params: -32602 with `kind: invalidParams`) and returns a typed
//! result or a [`BridgeError`].

use std::sync::Arc;

use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::RpcModule;
use serde::de::DeserializeOwned;

use crate::engine::state::{App, Ready};
use crate::backend::cursor_print::{commands, models};
use crate::error::BridgeError;
use crate::protocol::*;

type RpcResult<T> = Result<T, ErrorObjectOwned>;

fn parse<T: DeserializeOwned>(params: &Params<'_>) -> Result<T, BridgeError> {
    // Absent params mean "all defaults" for the methods whose params are all optional.
    let raw = params.as_str().unwrap_or("{}");
    serde_json::from_str(raw).map_err(|e| BridgeError::invalid_params(format!("invalid params: {e}")))
}

pub fn module(app: Arc<App>) -> RpcModule<App> {
    let mut m = RpcModule::from_arc(app);
    let result = (|| -> Result<(), jsonrpsee::core::RegisterMethodError> {
        m.register_async_method(request::INITIALIZE, |p, app, _| async move { initialize(&app, p).await })?;
        m.register_async_method(request::MODELS_LIST, |p, app, _| async move { models_list(&app, p).await })?;
        m.register_async_method(request::CHAT_SEND, |p, app, _| async move { chat_send(&app, p).await })?;
        m.register_method(request::SESSIONS_LIST, |_, app, _| sessions_list(app))?;
        m.register_method(request::SESSIONS_CLEAR, |p, app, _| sessions_clear(app, p))?;
        m.register_async_method(request::STATUS, |_, app, _| async move { status(&app).await })?;
        m.register_method(request::SHUTDOWN, |_, app, _| -> RpcResult<()> {
            app.begin_shutdown();
            // Spares and prefetches end now; running turns were aborted by the dispatch loop.
            app.shutdown_background();
            Ok(())
        })?;
        Ok(())
    })();
    result.expect("method names are unique");
    m
}

async fn initialize(app: &App, p: Params<'static>) -> RpcResult<InitializeResult> {
    let params: InitializeParams = parse(&p)?;
    if params.protocol_version != PROTOCOL_VERSION {
        return Err(BridgeError::invalid_params(format!(
            "protocol version {} is not supported; this sidecar speaks {PROTOCOL_VERSION}",
            params.protocol_version
        ))
        .hint("Update the extension and the sidecar together.")
        .into());
    }
    let client = params.client_info.as_ref().map(|c| c.name.clone()).unwrap_or_default();
    let ready = app.initialize(params)?;
    tracing::info!(client = %client, workspaces = ready.workspaces.len(), api_key = ready.has_api_key(), "initialized");
    let cli = ready.cli().await.ok();
    if let Some(cli) = &cli {
        // Warm start: have a chat id ready for each folder before the first message.
        for w in &ready.workspaces {
            ready.chat_ids.prefetch(cli.clone(), ready.child_env(), w.clone());
        }
    }
    Ok(InitializeResult {
        protocol_version: PROTOCOL_VERSION,
        server_info: ServerInfo { name: "cursor-bridge".into(), version: env!("CARGO_PKG_VERSION").into() },
        capabilities: Capabilities {
            delta_kinds: DeltaBody::KINDS.to_vec(),
            cancel: true,
            sessions: true,
            cli: CliInfo { found: cli.is_some(), path: cli.map(|c| c.display.display().to_string()) },
        },
    })
}

async fn fetch_models(ready: &Ready) -> Result<Vec<ModelInfo>, BridgeError> {
    let cli = ready.cli().await?;
    let listed = commands::list_models(&cli, &ready.child_env()).await?;
    Ok(listed.iter().map(models::to_model_info).collect())
}

async fn models_list(app: &Arc<App>, p: Params<'static>) -> RpcResult<ModelsListResult> {
    let params: ModelsListParams = parse(&p)?;
    Ok(ModelsListResult { models: list_models(app, params.refresh).await? })
}

/// The model list from the shared catalog (also served by the HTTP server's `/v1/models`).
pub async fn list_models(app: &Arc<App>, refresh: bool) -> Result<Vec<ModelInfo>, BridgeError> {
    let ready = app.ready()?.clone();
    let models = ready.models.list(refresh, || fetch_models(&ready)).await?;
    if !refresh && ready.models.take_unverified() {
        // Served from the file cache of an earlier run: check with the CLI in the background and
        // tell the client if the list changed.
        let (task_app, served) = (app.clone(), models.clone());
        app.spawn_background(async move {
            let app = task_app;
            let Ok(ready) = app.ready().cloned() else { return };
            match ready.models.list(true, || fetch_models(&ready)).await {
                Ok(fresh) if fresh != served => {
                    tracing::info!(models = fresh.len(), "model list changed");
                    app.outbox.notify(notification::MODELS_CHANGED, &ModelsListResult { models: fresh }).await;
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "background model refresh failed"),
            }
        });
    }
    Ok(models)
}

async fn chat_send(app: &App, p: Params<'static>) -> RpcResult<ChatSendResult> {
    let params: ChatSendParams = parse(&p)?;
    Ok(crate::engine::turn::chat_send(app, params).await?)
}

fn sessions_list(app: &App) -> RpcResult<SessionsListResult> {
    let ready = app.ready()?;
    let sessions = ready.sessions.lock().unwrap_or_else(|p| p.into_inner()).list();
    Ok(SessionsListResult { sessions })
}

fn sessions_clear(app: &App, p: Params<'_>) -> RpcResult<SessionsClearResult> {
    let params: SessionsClearParams = parse(&p)?;
    let ready = app.ready()?;
    let cleared = ready.sessions.lock().unwrap_or_else(|p| p.into_inner()).clear(params.session_id.as_deref());
    tracing::info!(cleared, "sessions cleared");
    Ok(SessionsClearResult { cleared })
}

async fn status(app: &App) -> RpcResult<StatusResult> {
    Ok(status_result(app).await?)
}

/// `status` (also served by the HTTP server's `/health`).
pub async fn status_result(app: &App) -> Result<StatusResult, BridgeError> {
    let ready = app.ready()?.clone();
    let (cli, hint) = match ready.cli().await {
        Ok(cli) => (Some(cli), None),
        Err(e) => (None, e.hint.clone()),
    };
    let (version, login) = match &cli {
        Some(cli) => {
            let env = ready.child_env();
            tokio::join!(commands::version(cli, &env), commands::status(cli, &env))
        }
        None => (None, commands::LoginStatus::default()),
    };
    let hint = hint.or_else(|| {
        (login.logged_in == Some(false) && !ready.has_api_key()).then(|| crate::backend::cursor_print::LOGIN_HINT.to_string())
    });
    let sessions = ready.sessions.lock().unwrap_or_else(|p| p.into_inner()).len();
    Ok(StatusResult {
        version: env!("CARGO_PKG_VERSION").into(),
        cli: CliStatus {
            found: cli.is_some(),
            path: cli.map(|c| c.display.display().to_string()),
            version,
            logged_in: login.logged_in,
            account: login.account,
            api_key: ready.has_api_key(),
            hint,
        },
        sessions,
        in_flight: ready.in_flight.load(std::sync::atomic::Ordering::SeqCst),
        log_file: app.paths.log_file.as_ref().map(|p| p.display().to_string()),
    })
}
