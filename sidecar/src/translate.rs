//! Where the stdio wire meets the engine's plain types, for every front door: the options a
//! client sends become the engine's and the backends' settings, and what the engine reports
//! (status, sessions, doctor) becomes the wire's messages. The engine and the backends never
//! import `protocol` (tidy), so a wire change is made here and in `protocol/`, nowhere else.

use crate::backend::{self, select};
use crate::engine::{self, doctor, sessions};
use crate::protocol;
use crate::vocab::Secret;

/// The engine's half of `initialize.options` (or of `serve`'s flags, written as options).
pub fn engine_settings(o: &protocol::Options) -> engine::Settings {
    engine::Settings {
        request_timeout_seconds: o.request_timeout_seconds,
        idle_timeout_seconds: o.idle_timeout_seconds,
        max_concurrent: o.max_concurrent,
        session_ttl_minutes: o.session_ttl_minutes,
        max_sessions: o.max_sessions,
        force: o.force,
        replay_max_chars: o.replay_max_chars,
        utility_model: o.utility_model.clone(),
        send_system_messages: o.send_system_messages,
        warm_ahead: o.spares,
        workspace_trusted: o.workspace_trusted,
    }
}

/// The backends' half: warm capacity and the backend choice (the option, else
/// `CURSOR_BRIDGE_BACKEND`, else `auto`).
pub fn backend_settings(
    cli_path: Option<String>,
    api_key: Option<Secret>,
    o: &protocol::Options,
) -> select::BackendSettings {
    select::BackendSettings {
        cli_path,
        api_key,
        backend: o.backend.or_else(select::backend_from_env).unwrap_or_default(),
        warmth: select::Warmth {
            ahead: o.spares,
            ahead_idle: std::time::Duration::from_secs(o.spare_idle_seconds),
            kept: o.warm_sessions,
            kept_idle: std::time::Duration::from_secs(o.warm_idle_seconds),
        },
        // The engine's folders, filled in by `startup::engine` for every door.
        neutral_dir: None,
        env: backend::contract::EnvPolicy::Inherit,
        probe_notes: None,
    }
}

/// `status`, with the log file only the front door knows.
pub fn status(s: engine::core::Status, log_file: Option<String>) -> protocol::StatusResult {
    protocol::StatusResult {
        version: s.version,
        cli: cli_status(s.cli),
        backend: backend_status(s.backend),
        sessions: s.sessions,
        in_flight: s.in_flight,
        log_file,
    }
}

pub fn cli_status(c: backend::CliStatus) -> protocol::CliStatus {
    // `key_in_environment` is for `doctor`'s login check; `status` says only whether one was given.
    let backend::CliStatus { found, path, version, logged_in, account, api_key, hint, problem, key_in_environment: _ } =
        c;
    protocol::CliStatus { found, path, version, logged_in, account, api_key, hint, problem }
}

pub fn backend_status(b: backend::BackendStatus) -> protocol::BackendStatus {
    let backend::BackendStatus { configured, active, reason, last_turn, warm } = b;
    let last_turn = last_turn.map(|t| protocol::ServedTurn { backend: t.backend, reason: t.reason });
    protocol::BackendStatus { configured, active, reason, last_turn, warm }
}

pub fn session(s: sessions::SessionSummary) -> protocol::SessionSummary {
    let sessions::SessionSummary { session_id, conversation_id, mode, model, workspace, turns, last_used_ms } = s;
    protocol::SessionSummary { session_id, conversation_id, mode, model, workspace, turns, last_used_ms }
}

pub fn doctor(r: doctor::Report) -> protocol::DoctorResult {
    let check = |c: doctor::Check| protocol::Check {
        id: c.id,
        title: c.title,
        status: match c.status {
            doctor::CheckStatus::Ok => protocol::CheckStatus::Ok,
            doctor::CheckStatus::Warn => protocol::CheckStatus::Warn,
            doctor::CheckStatus::Fail => protocol::CheckStatus::Fail,
            doctor::CheckStatus::Info => protocol::CheckStatus::Info,
        },
        summary: c.summary,
        detail: c.detail,
        fix: c.fix,
    };
    protocol::DoctorResult { ok: r.ok, checks: r.checks.into_iter().map(check).collect() }
}

/// `probe`'s report as the wire's.
pub fn probe(r: backend::ProbeReport) -> protocol::ProbeResult {
    let outcome = |o: backend::ProbeOutcome| match o {
        backend::ProbeOutcome::AsAssumed => protocol::ProbeOutcome::AsAssumed,
        backend::ProbeOutcome::Differs => protocol::ProbeOutcome::Differs,
        backend::ProbeOutcome::Failed => protocol::ProbeOutcome::Failed,
        backend::ProbeOutcome::NotAsked => protocol::ProbeOutcome::NotAsked,
    };
    protocol::ProbeResult {
        agent: r.agent,
        version: r.version,
        spent: r.spent,
        kept: r.kept,
        findings: r
            .findings
            .into_iter()
            .map(|f| protocol::ProbeFinding {
                id: f.id.to_string(),
                question: f.question,
                outcome: outcome(f.outcome),
                observed: f.observed,
                bridge: f.bridge,
                measured: f.measured,
            })
            .collect(),
    }
}

pub fn probe_plan(p: &protocol::ProbeParams) -> backend::ProbePlan {
    backend::ProbePlan { spend: p.spend }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that sends no options gets the engine's own defaults: the two are written in two
    /// places (the wire's `Options::default` documents them to clients), so they must agree.
    #[test]
    fn the_wires_default_options_are_the_engines_defaults() {
        assert_eq!(engine_settings(&protocol::Options::default()), engine::Settings::default());
    }

    /// Every option reaches the engine: a value changed on the wire changes the setting.
    #[test]
    fn every_engine_option_is_carried_over() {
        let wire = serde_json::json!({
            "requestTimeoutSeconds": 7, "idleTimeoutSeconds": 8, "maxConcurrent": 9,
            "sessionTtlMinutes": 10, "maxSessions": 11, "force": true, "replayMaxChars": 12,
            "utilityModel": "m", "sendSystemMessages": true, "spares": 13, "workspaceTrusted": false,
        });
        let options: protocol::Options = serde_json::from_value(wire).unwrap();
        let expected = engine::Settings {
            request_timeout_seconds: 7,
            idle_timeout_seconds: 8,
            max_concurrent: 9,
            session_ttl_minutes: 10,
            max_sessions: 11,
            force: true,
            replay_max_chars: 12,
            utility_model: Some("m".into()),
            send_system_messages: true,
            warm_ahead: 13,
            workspace_trusted: false,
        };
        assert_eq!(engine_settings(&options), expected);
    }

    /// The warmth options reach the backends, each where it belongs.
    #[test]
    fn every_warmth_option_is_carried_over() {
        let wire = serde_json::json!({
            "spares": 3, "spareIdleSeconds": 4, "warmSessions": 5, "warmIdleSeconds": 6,
        });
        let options: protocol::Options = serde_json::from_value(wire).unwrap();
        let secs = std::time::Duration::from_secs;
        let expected = select::Warmth { ahead: 3, ahead_idle: secs(4), kept: 5, kept_idle: secs(6) };
        assert_eq!(backend_settings(None, None, &options).warmth, expected);
    }
}
