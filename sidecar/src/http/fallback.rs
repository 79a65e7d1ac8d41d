//! What a request to no route gets: 404 with the routes this server has, or 405 for a known path
//! with the wrong method, as OpenAI-shaped errors.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use super::errors::ApiError;

/// The body is read (and dropped) first: a connection whose request body was left unread is
/// closed after the answer, and a client that pools connections fails its next request on it.
pub async fn not_found(method: Method, uri: Uri, _body: Result<Bytes, BytesRejection>) -> Response {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!(
            "Unknown request URL: {method} {}. This server has GET /v1/models, POST /v1/chat/completions, POST /v1/responses, POST /v1/messages and GET /health.",
            uri.path()
        ),
    )
    .code("unknown_url")
    .into_response()
}

pub async fn method_not_allowed(method: Method, uri: Uri, _body: Result<Bytes, BytesRejection>) -> Response {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        format!("{method} is not allowed on {}.", uri.path()),
    )
    .code("method_not_allowed")
    .into_response()
}
