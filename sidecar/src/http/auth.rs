//! The client key: `Authorization: Bearer <key>` (or `x-api-key: <key>`, Anthropic's way) on every
//! route (`/health` too) whenever a key is configured (`CURSOR_BRIDGE_API_KEY`, or `--api-key-file`). This key guards the bridge; it is not
//! the Cursor API key, which the CLI uses and no HTTP client ever sees.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, HOST};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::errors::ApiError;
use super::HttpState;
use crate::util::redact::{bearer, constant_time_eq};
use crate::vocab::Secret;

pub const ENV_API_KEY: &str = "CURSOR_BRIDGE_API_KEY";

/// The client key: from `--api-key-file` if given (which must then hold one), else the
/// environment. Whitespace around it (a trailing newline in the file) is not part of it.
pub fn load_key(file: Option<&Path>, env_value: Option<String>) -> Result<Option<Secret>, String> {
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the API key file {}: {e}", path.display()))?;
        let key = text.trim();
        if key.is_empty() {
            return Err(format!("the API key file {} is empty", path.display()));
        }
        return Ok(Some(Secret::new(key)));
    }
    Ok(env_value.map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).map(Secret::new))
}

/// Is a `Host` header's name this machine (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`)?
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Refusals on the Messages routes come in Anthropic's shape, which Claude Code reads.
fn refuse(request: &Request, e: ApiError) -> Response {
    if request.uri().path().starts_with("/v1/messages") {
        e.into_anthropic_response()
    } else {
        e.into_response()
    }
}

pub async fn require_key(State(state): State<Arc<HttpState>>, request: Request, next: Next) -> Response {
    let Some(expected) = &state.client_key else {
        // Without a key the server trusts everything on this machine, so it must only be reached
        // as this machine: a web page that rebinds its own host name to 127.0.0.1 (DNS
        // rebinding) would otherwise be a "local" client that can read the answers.
        let host = request.headers().get(HOST).and_then(|v| v.to_str().ok());
        if host.is_some_and(|h| !is_loopback_host(h)) {
            tracing::info!(host = host.unwrap_or_default(), "rejected: not a loopback host name");
            let e = ApiError::new(
                StatusCode::FORBIDDEN,
                "invalid_request_error",
                "Without a client key this server only answers requests addressed to localhost or a loopback \
                 address. Set CURSOR_BRIDGE_API_KEY (or --api-key-file) to use other host names.",
            )
            .code("host_not_allowed");
            return refuse(&request, e);
        }
        return next.run(request).await;
    };
    let headers = request.headers();
    let given = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer)
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::trim));
    match given {
        None => {
            tracing::info!("rejected: no client key");
            let e = ApiError::unauthorized(
                "Missing API key. This server requires `Authorization: Bearer <key>` (or `x-api-key: <key>`) with \
                 the key it was started with (CURSOR_BRIDGE_API_KEY or --api-key-file).",
            );
            refuse(&request, e)
        }
        Some(token) if constant_time_eq(token.as_bytes(), expected.expose().as_bytes()) => next.run(request).await,
        Some(_) => {
            tracing::info!("rejected: wrong client key");
            refuse(&request, ApiError::unauthorized("Incorrect API key provided."))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_host_names() {
        for host in ["localhost", "localhost:9997", "127.0.0.1:9997", "127.1.2.3", "[::1]:80", "[::1]", "a.localhost:1"]
        {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["evil.example", "evil.example:9997", "10.0.0.1:9997", "[::2]:80", "localhost.evil.example"] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn keys_are_trimmed_and_the_file_wins() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, "  from-file\n").unwrap();
        let k = load_key(Some(&file), Some("from-env".into())).unwrap().unwrap();
        assert_eq!(k.expose(), "from-file");
        assert_eq!(load_key(None, Some(" from-env\n".into())).unwrap().unwrap().expose(), "from-env");
        assert!(load_key(None, Some("  ".into())).unwrap().is_none());
        std::fs::write(&file, "\n").unwrap();
        assert!(load_key(Some(&file), None).is_err());
        assert!(load_key(Some(&dir.path().join("missing")), None).is_err());
    }
}
