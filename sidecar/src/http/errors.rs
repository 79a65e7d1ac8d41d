//! Errors in OpenAI's shape, `{"error":{"message","type","param","code"}}`, with the HTTP status a
//! client library maps to its own exception (`openai.NotFoundError` for 404, …). Engine errors
//! keep their message and hint; their diagnostic `detail` (CLI stderr) stays in the log.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::BridgeError;
use crate::vocab::ErrorKind;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// OpenAI's `type`: `invalid_request_error`, `rate_limit_error`, `api_error`, …
    pub kind: &'static str,
    pub param: Option<String>,
    pub code: Option<String>,
    /// Whether trying the same request again may work. OpenAI's client libraries retry 429 and
    /// 5xx on their own unless told otherwise (`x-should-retry: false`); retrying a missing CLI,
    /// a logged-out CLI or a five-minute timeout only wastes the user's time.
    pub retry: bool,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into(), kind, param: None, code: None, retry: false }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    pub fn code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "invalid_request_error", message).code("invalid_api_key")
    }

    pub fn model_not_found(model: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!(
                "The model `{model}` does not exist or is not available to this Cursor account. \
                 GET /v1/models lists the models you can use."
            ),
        )
        .param("model")
        .code("model_not_found")
    }

    pub fn body_too_large(limit: usize) -> Self {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("The request body is larger than {} MiB.", limit / (1024 * 1024)),
        )
        .code("request_too_large")
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "api_error", message)
    }

    /// The body, also sent as an SSE event when a turn fails after its stream started.
    pub fn body(&self) -> serde_json::Value {
        #[derive(Serialize)]
        struct Inner<'a> {
            message: &'a str,
            #[serde(rename = "type")]
            kind: &'a str,
            param: Option<&'a str>,
            code: Option<&'a str>,
        }
        serde_json::json!({ "error": Inner {
            message: &self.message,
            kind: self.kind,
            param: self.param.as_deref(),
            code: self.code.as_deref(),
        }})
    }
}

impl ApiError {
    /// Anthropic's error `type` for this status (`invalid_request_error`, `not_found_error`, …).
    pub fn anthropic_type(&self) -> &'static str {
        match self.status.as_u16() {
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            504 => "timeout_error",
            400..=499 => "invalid_request_error",
            _ => "api_error",
        }
    }

    /// The body in Anthropic's shape, `{"type": "error", "error": {"type", "message"}}`, also sent
    /// as an `error` event when a turn fails after its stream started.
    pub fn anthropic_body(&self) -> serde_json::Value {
        serde_json::json!({"type": "error", "error": {"type": self.anthropic_type(), "message": self.message}})
    }

    /// The response of a refused Messages request (`/v1/messages…`).
    pub fn into_anthropic_response(self) -> Response {
        let mut response = (self.status, super::json_body(&self.anthropic_body())).into_response();
        if !self.retry {
            response.headers_mut().insert("x-should-retry", HeaderValue::from_static("false"));
        }
        response
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, super::json_body(&self.body())).into_response();
        if !self.retry {
            response.headers_mut().insert("x-should-retry", HeaderValue::from_static("false"));
        }
        response
    }
}

impl From<BridgeError> for ApiError {
    fn from(e: BridgeError) -> Self {
        let message = match &e.hint {
            Some(hint) if !hint.is_empty() => format!("{} {}", end_sentence(&e.message), hint),
            _ => e.message.clone(),
        };
        let (status, kind, retry) = match e.kind {
            ErrorKind::InvalidParams => (StatusCode::BAD_REQUEST, "invalid_request_error", false),
            ErrorKind::InvalidModel => (StatusCode::NOT_FOUND, "invalid_request_error", false),
            ErrorKind::RateLimited => (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", true),
            ErrorKind::UsageLimit => (StatusCode::TOO_MANY_REQUESTS, "insufficient_quota", false),
            ErrorKind::AuthRequired => (StatusCode::BAD_GATEWAY, "api_error", false),
            ErrorKind::Network | ErrorKind::CliFailed | ErrorKind::EmptyResponse | ErrorKind::BadToolCall => {
                (StatusCode::BAD_GATEWAY, "api_error", true)
            }
            ErrorKind::CliNotFound => (StatusCode::SERVICE_UNAVAILABLE, "api_error", false),
            ErrorKind::Timeout => (StatusCode::GATEWAY_TIMEOUT, "api_error", false),
            ErrorKind::Cancelled | ErrorKind::NotInitialized | ErrorKind::Internal | ErrorKind::ToolPolicy => {
                (StatusCode::INTERNAL_SERVER_ERROR, "api_error", false)
            }
        };
        let message = if e.kind == ErrorKind::AuthRequired {
            // Not to be confused with a 401: the client's key was fine, the server's CLI is not.
            format!(
                "The Cursor CLI on the server is not logged in (this is not about your API key for cursor-bridge). \
                 {message}"
            )
        } else {
            message
        };
        let code = match e.kind {
            ErrorKind::InvalidModel => "model_not_found",
            ErrorKind::RateLimited => "rate_limit_exceeded",
            ErrorKind::UsageLimit => "insufficient_quota",
            other => other.as_str(),
        };
        let param = (e.kind == ErrorKind::InvalidModel).then(|| "model".to_string());
        ApiError { status, message, kind, param, code: Some(code.to_string()), retry }
    }
}

fn end_sentence(s: &str) -> String {
    let s = s.trim_end();
    if s.ends_with(['.', '!', '?', ':']) {
        s.to_string()
    } else {
        format!("{s}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_errors_map_to_openai_statuses() {
        let cases = [
            (ErrorKind::InvalidParams, 400),
            (ErrorKind::InvalidModel, 404),
            (ErrorKind::RateLimited, 429),
            (ErrorKind::UsageLimit, 429),
            (ErrorKind::AuthRequired, 502),
            (ErrorKind::CliFailed, 502),
            (ErrorKind::Network, 502),
            (ErrorKind::CliNotFound, 503),
            (ErrorKind::Timeout, 504),
            (ErrorKind::Internal, 500),
        ];
        for (kind, status) in cases {
            let e = ApiError::from(BridgeError::new(kind, "It broke").hint("Do this."));
            assert_eq!(e.status.as_u16(), status, "{kind}");
            assert!(e.message.contains("It broke. Do this."), "{}", e.message);
        }
        let auth = ApiError::from(BridgeError::new(ErrorKind::AuthRequired, "Authentication required"));
        assert!(auth.message.contains("not logged in"), "{}", auth.message);
        let body = ApiError::from(BridgeError::new(ErrorKind::InvalidModel, "no")).body();
        assert_eq!(body["error"]["code"], "model_not_found");
        assert_eq!(body["error"]["param"], "model");
        assert_eq!(body["error"]["type"], "invalid_request_error");
    }

    #[test]
    fn anthropic_errors_name_anthropics_types() {
        let cases = [
            (ErrorKind::InvalidParams, "invalid_request_error"),
            (ErrorKind::InvalidModel, "not_found_error"),
            (ErrorKind::RateLimited, "rate_limit_error"),
            (ErrorKind::Timeout, "timeout_error"),
            (ErrorKind::CliFailed, "api_error"),
        ];
        for (kind, want) in cases {
            let body = ApiError::from(BridgeError::new(kind, "It broke")).anthropic_body();
            assert_eq!((body["type"].as_str(), body["error"]["type"].as_str()), (Some("error"), Some(want)), "{kind}");
            assert!(body["error"]["message"].as_str().unwrap().contains("It broke"));
        }
        assert_eq!(ApiError::unauthorized("no").anthropic_type(), "authentication_error");
    }
}
