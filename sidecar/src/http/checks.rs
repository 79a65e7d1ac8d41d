//! What every dialect's route checks of a request before its turn (`/v1/chat/completions`,
//! `/v1/responses`, `/v1/messages`): a JSON body, who asks, a model the CLI runs and a mode within
//! the server's ceiling; then the engine's `TurnRequest` for it, the same whoever asks.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::errors::ApiError;
use super::structured::Format;
use super::{HttpState, MAX_BODY};
use crate::engine::tools::ToolSet;
use crate::engine::TurnRequest;
use crate::vocab::{ChatMessage, Mode, ModelInfo};

/// A web page may send a cross-origin POST without asking first only with a "simple" content
/// type (text/plain, forms); insisting on JSON means a page cannot start turns on this machine.
/// What every route does around its own work: refuse a body that is not JSON, name the caller
/// (its key, hashed), and render a refusal in the route's dialect (`render`), logged as `what`.
pub async fn answer<F, Fut>(headers: &HeaderMap, what: &str, render: fn(ApiError) -> Response, respond: F) -> Response
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = Result<Response, ApiError>>,
{
    if !is_json(headers) {
        return render(not_json());
    }
    match respond(owner_of(headers)).await {
        Ok(response) => response,
        Err(e) => {
            tracing::info!(status = e.status.as_u16(), error = %e.message, "{what} refused");
            render(e)
        }
    }
}

pub fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let media = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

pub fn not_json() -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "invalid_request_error",
        "The request body must be JSON, sent with `Content-Type: application/json`.",
    )
    .code("unsupported_media_type")
}

/// Who is asking, for tool calls and stored responses: a hash of the key the client presented
/// (a turn parked for one key's calls is never continued by another), or `anonymous` without one.
/// Anthropic's clients send theirs as `x-api-key`.
pub fn owner_of(headers: &HeaderMap) -> String {
    let key = headers.get(axum::http::header::AUTHORIZATION).or_else(|| headers.get("x-api-key"));
    match key.and_then(|v| v.to_str().ok()) {
        Some(value) => format!("key-{:016x}", crate::util::text::fnv1a(value)),
        None => "anonymous".into(),
    }
}

/// The body as JSON of type `T`, or a 400 (413) that says what is wrong with it.
pub fn parse_body<T: serde::de::DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let body = body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::body_too_large(MAX_BODY),
        _ => ApiError::bad_request(format!("Could not read the request body: {}", rejection.body_text())),
    })?;
    serde_json::from_slice(&body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            ApiError::bad_request(format!("We could not parse the JSON body of your request: {e}"))
        } else {
            ApiError::bad_request(format!("Invalid request body: {e}"))
        }
    })
}

/// What a dialect's request comes to, in the engine's terms.
#[derive(Debug)]
pub struct TurnAsk {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub mode: Option<Mode>,
    pub tools: Option<ToolSet>,
    /// A structured answer's format (`structured/`).
    pub format: Option<Format>,
    /// The new user message's images.
    pub images: Vec<crate::vocab::Image>,
}

/// A checked ask: the engine's request, and the format its answer is held to.
#[derive(Debug)]
pub struct Prepared {
    pub params: TurnRequest,
    pub format: Option<Format>,
}

/// The engine's request for a checked ask: the model checked against the list, the mode against
/// the server's ceiling.
pub async fn turn_request(
    state: &HttpState,
    request_id: &str,
    owner: String,
    ask: TurnAsk,
) -> Result<Prepared, ApiError> {
    check_model(state, &ask.model).await?;
    let mode = allowed_mode(ask.mode, state.default_mode)?;
    let answer_format = ask.format.as_ref().map(Format::instruction);
    let params = TurnRequest {
        turn_id: format!("http-{request_id}"),
        model: ask.model,
        mode,
        // A fixed `--workspace` is the engine's folder; without one, each conversation's own.
        workspace: None,
        // HTTP requests carry no conversation id: the history identifies the conversation.
        conversation_id: None,
        session_id: None,
        utility: false,
        messages: ask.messages,
        tools: ask.tools,
        owner: Some(owner),
        answer_format,
        images: ask.images,
    };
    Ok(Prepared { params, format: ask.format })
}

/// The server's `--mode` is a ceiling: a request may ask for less (agent > plan > ask), never more.
pub fn allowed_mode(asked: Option<Mode>, ceiling: Mode) -> Result<Mode, ApiError> {
    let rank = |m: Mode| match m {
        Mode::Ask => 0,
        Mode::Plan => 1,
        Mode::Agent => 2,
    };
    match asked {
        None => Ok(ceiling),
        Some(m) if rank(m) <= rank(ceiling) => Ok(m),
        Some(m) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "permission_error",
            format!(
                "This server allows at most `{}` mode (`cursor-bridge serve --mode`); the request asked for `{}`.",
                ceiling.as_str(),
                m.as_str()
            ),
        )
        .param("mode")
        .code("mode_not_allowed")),
    }
}

/// Is `model` one the CLI runs: `auto`, or a listed id (`id[k=v,…]` picks parameters of `id`)?
pub fn is_listed(models: &[ModelInfo], model: &str) -> bool {
    let base = model.split('[').next().unwrap_or(model).trim();
    base.eq_ignore_ascii_case("auto") || models.iter().any(|m| m.id == base)
}

/// Refuse an unknown model before starting anything (404, as OpenAI does). The engine maps the
/// CLI's own refusal (`invalidModel`) to 404 too, for a list that changed since it was cached.
async fn check_model(state: &HttpState, model: &str) -> Result<(), ApiError> {
    let base = model.split('[').next().unwrap_or(model).trim();
    if base.eq_ignore_ascii_case("auto") {
        return Ok(());
    }
    let models = state.engine.models(false).await?;
    if is_listed(&models, model) {
        Ok(())
    } else {
        Err(ApiError::model_not_found(model))
    }
}

/// The SKU a reasoning effort picks, the way the editor's picker does (`vscode-client/src/models.ts`):
/// the variant of the asked model's base with that effort and the same speed and thinking. `None`
/// when the base has no such variant (the CLI has no effort knob of its own: the model runs as asked).
pub fn sku_for_effort(models: &[ModelInfo], model: &str, effort: &str) -> Option<String> {
    let asked = models.iter().find(|m| m.id == model)?;
    let base = asked.base.as_ref().map_or(asked.id.as_str(), |b| b.id.as_str());
    let (fast, thinking) = asked.variant.as_ref().map_or((false, false), |v| (v.fast, v.thinking));
    models
        .iter()
        .filter(|m| m.base.as_ref().map_or(m.id.as_str(), |b| b.id.as_str()) == base)
        .filter_map(|m| m.variant.as_ref().map(|v| (m, v)))
        .find(|(_, v)| v.effort.as_deref() == Some(effort) && v.fast == fast && v.thinking == thinking)
        .map(|(m, _)| m.id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{ModelBase, ModelCapabilities, ModelVariant};

    #[test]
    fn the_server_mode_is_a_ceiling() {
        assert_eq!(allowed_mode(None, Mode::Ask).unwrap(), Mode::Ask);
        assert_eq!(allowed_mode(Some(Mode::Ask), Mode::Agent).unwrap(), Mode::Ask);
        assert_eq!(allowed_mode(Some(Mode::Plan), Mode::Agent).unwrap(), Mode::Plan);
        let e = allowed_mode(Some(Mode::Agent), Mode::Ask).unwrap_err();
        assert_eq!(e.status, StatusCode::FORBIDDEN);
        assert!(e.message.contains("at most `ask`"), "{}", e.message);
        assert!(allowed_mode(Some(Mode::Plan), Mode::Ask).is_err());
    }

    fn sku(id: &str, base: &str, effort: Option<&str>, fast: bool) -> ModelInfo {
        ModelInfo {
            id: id.into(),
            name: id.into(),
            family: base.into(),
            max_input_tokens: 1,
            max_output_tokens: 1,
            capabilities: ModelCapabilities { thinking: true, tool_calling: true, image_input: false },
            is_default: false,
            base: Some(ModelBase { id: base.into(), name: base.into() }),
            variant: Some(ModelVariant {
                effort: effort.map(String::from),
                fast,
                thinking: false,
                label: String::new(),
                default: effort.is_none(),
            }),
        }
    }

    #[test]
    fn an_effort_picks_the_variant_of_the_same_base_and_speed() {
        let models = [
            sku("gpt-9", "gpt-9", None, false),
            sku("gpt-9-high", "gpt-9", Some("high"), false),
            sku("gpt-9-high-fast", "gpt-9", Some("high"), true),
            sku("gpt-9-low", "gpt-9", Some("low"), false),
            sku("other-high", "other", Some("high"), false),
        ];
        assert_eq!(sku_for_effort(&models, "gpt-9", "high").as_deref(), Some("gpt-9-high"));
        assert_eq!(sku_for_effort(&models, "gpt-9-low", "high").as_deref(), Some("gpt-9-high"));
        assert_eq!(sku_for_effort(&models, "gpt-9-high", "low").as_deref(), Some("gpt-9-low"));
        assert_eq!(sku_for_effort(&models, "gpt-9-high-fast", "high").as_deref(), Some("gpt-9-high-fast"));
        assert_eq!(sku_for_effort(&models, "gpt-9", "xhigh"), None);
        assert_eq!(sku_for_effort(&models, "auto", "high"), None);
        assert!(is_listed(&models, "gpt-9-high[fast=true]") && is_listed(&models, "Auto"));
        assert!(!is_listed(&models, "claude-opus-5-5"));
    }
}
