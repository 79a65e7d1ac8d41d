//! `GET /health`: whether the CLI is found and logged in, and how busy the server is, for a load
//! balancer or a supervisor (503 while there is no CLI).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::{json_body, HttpState};
use crate::util::sync::lock;

const HEALTH_CACHE: Duration = Duration::from_secs(10);

pub async fn health(State(state): State<Arc<HttpState>>) -> Response {
    let cached = {
        let cache = lock(&state.health_cache);
        cache.as_ref().filter(|(at, _)| at.elapsed() < HEALTH_CACHE).map(|(_, s)| s.clone())
    };
    let status = match cached {
        Some(s) => s,
        None => {
            let s = state.engine.status().await;
            *lock(&state.health_cache) = Some((Instant::now(), s.clone()));
            s
        }
    };
    // Sessions and turns are counted now, not when the CLI was last asked.
    let (sessions, in_flight) = (state.engine.session_count(), state.engine.in_flight());
    let body = serde_json::json!({
        "status": if status.cli.found { "ok" } else { "cli_not_found" },
        "version": status.version,
        "cli": {
            "found": status.cli.found,
            "path": status.cli.path,
            "version": status.cli.version,
            "logged_in": status.cli.logged_in,
            "cursor_api_key": status.cli.api_key,
            "hint": status.cli.hint,
        },
        "sessions": sessions,
        "in_flight": in_flight,
    });
    let mut response = json_body(&body);
    if !status.cli.found {
        // Every completion would fail: let a load balancer or a supervisor see it.
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    }
    response
}
