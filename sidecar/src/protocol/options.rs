//! `initialize.options`: every tunable a client may set, read leniently (a newer client can
//! start an older sidecar).

use serde::{Deserialize, Serialize};

use crate::vocab::BackendChoice;

/// `initialize.options`. Every field has a default, so `{}` is valid. Keys this sidecar does not
/// know (a newer client's) are kept aside in `unknown`, and known keys whose value it cannot read
/// (a newer client's `backend: "sdk"`) keep their default and are named in `unreadable`: both are
/// logged, reported in `capabilities.ignoredOptions`, and otherwise ignored, so a newer client can
/// start an older sidecar.
// `remote = "Self"`: the derived (strict) code becomes inherent functions, and the trait impls
// below wrap them: deserializing is lenient per key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", default)]
pub struct Options {
    /// Overall limit for one turn.
    pub request_timeout_seconds: u64,
    /// No CLI output for this long ends the turn with kind `timeout`.
    pub idle_timeout_seconds: u64,
    /// At most this many CLI processes run at once; later turns queue in order.
    pub max_concurrent: usize,
    /// A session unused for this long is forgotten.
    pub session_ttl_minutes: u64,
    /// At most this many sessions are kept (least recently used dropped first).
    pub max_sessions: usize,
    /// Pass `--force` so agent mode may run shell commands without approval.
    pub force: bool,
    /// Upper bound (characters) for earlier turns replayed into a new chat's first prompt.
    pub replay_max_chars: usize,
    /// Model for `utility` turns (titles, progress messages); `None` uses the turn's model.
    pub utility_model: Option<String>,
    /// Forward client `system` messages to the CLI (off: Copilot's system prompt describes tools
    /// the CLI does not have).
    pub send_system_messages: bool,
    /// CLI processes kept started ahead of the next turn (0 turns warm spares off).
    pub spares: usize,
    /// A spare unused for this long is stopped.
    pub spare_idle_seconds: u64,
    /// The client trusts the workspace (VS Code's Restricted Mode is `false`). Untrusted: ask
    /// mode only, no `--force`, and the CLI runs in a private scratch folder, never the user's.
    pub workspace_trusted: bool,
    /// Which backend runs turns: `auto` (ACP when the CLI's ACP mode starts, else print mode),
    /// `acp` or `print`; not named: `CURSOR_BRIDGE_BACKEND`, else `auto`.
    pub backend: Option<BackendChoice>,
    /// Warm ACP sessions kept at most (one process each), least recently used stopped first.
    pub warm_sessions: usize,
    /// A warm ACP session unused this long is stopped (the conversation continues through
    /// `session/load` or a replay).
    pub warm_idle_seconds: u64,
    #[serde(flatten, skip_serializing)]
    pub unknown: std::collections::BTreeMap<String, serde_json::Value>,
    /// Known keys whose value was not understood (wrong type, a value from a newer client); each
    /// keeps its default.
    #[serde(skip)]
    pub unreadable: Vec<String>,
}

impl Serialize for Options {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        Options::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for Options {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let mut given = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let known = Options::known_names();
        let mut unreadable = Vec::new();
        // Each known key is tried alone, so one value this sidecar cannot read costs only itself.
        given.retain(|key, value| {
            if !known.contains(key) {
                return true; // kept for `unknown`
            }
            let alone = serde_json::Value::Object([(key.clone(), value.clone())].into_iter().collect());
            let readable = Options::deserialize(alone).is_ok();
            if !readable {
                unreadable.push(key.clone());
            }
            readable
        });
        let mut options = Options::deserialize(serde_json::Value::Object(given)).map_err(serde::de::Error::custom)?;
        // Trust fails closed: a client that said something about trust we cannot read (`"false"`,
        // `0`, `null`) is not given it. Every other default is the safe one already.
        if unreadable.iter().any(|k| k == "workspaceTrusted") {
            options.workspace_trusted = false;
        }
        options.unreadable = unreadable;
        Ok(options)
    }
}

impl Options {
    /// Every key that was sent and is ignored: unknown ones, then known ones with a value this
    /// sidecar cannot read (`capabilities.ignoredOptions`).
    pub fn ignored(&self) -> Vec<String> {
        self.unknown.keys().chain(&self.unreadable).cloned().collect()
    }

    /// The option names this sidecar understands, as on the wire.
    pub fn known_names() -> Vec<String> {
        match serde_json::to_value(Options::default()) {
            Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            request_timeout_seconds: 300,
            idle_timeout_seconds: 60,
            max_concurrent: 4,
            session_ttl_minutes: 7 * 24 * 60,
            max_sessions: 50,
            force: false,
            replay_max_chars: 100_000,
            utility_model: None,
            send_system_messages: false,
            spares: 1,
            spare_idle_seconds: 300,
            workspace_trusted: true,
            backend: None,
            warm_sessions: 4,
            warm_idle_seconds: 900,
            unknown: Default::default(),
            unreadable: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A value a newer (or careless) client sends for a known option keeps that option's default
    /// and is reported, while every other option still takes effect.
    #[test]
    fn an_option_value_this_sidecar_cannot_read_keeps_its_default_and_is_reported() {
        let cases = [
            (json!({"backend": "sdk", "maxConcurrent": 2}), vec!["backend"]),
            (json!({"backend": "acp", "maxConcurrent": 2}), vec![]),
            (json!({"maxConcurrent": "two", "backend": "print"}), vec!["maxConcurrent"]),
            (json!({"workspaceTrusted": "maybe", "maxConcurrent": 2}), vec!["workspaceTrusted"]),
            (json!({"workspaceTrusted": "false"}), vec!["workspaceTrusted"]),
            (json!({"workspaceTrusted": null}), vec!["workspaceTrusted"]),
            (json!({"workspaceTrusted": 0}), vec!["workspaceTrusted"]),
            (json!({"fromTheFuture": 1, "backend": 7, "maxConcurrent": 2}), vec!["fromTheFuture", "backend"]),
        ];
        for (given, ignored) in cases {
            let options: Options = serde_json::from_value(given.clone()).expect("never refused");
            assert_eq!(options.ignored(), ignored, "{given}");
            let sent = given.as_object().unwrap();
            let expected = |key: &str, default: serde_json::Value| match sent.get(key) {
                Some(v) if !ignored.contains(&key) => v.clone(),
                _ => default,
            };
            let got = serde_json::to_value(&options).unwrap();
            assert_eq!(got["backend"], expected("backend", json!(null)), "{given}");
            assert_eq!(got["maxConcurrent"], expected("maxConcurrent", json!(4)), "{given}");
            // Trust fails closed: unreadable means untrusted, never the default `true`.
            let trust_default = if ignored.contains(&"workspaceTrusted") { json!(false) } else { json!(true) };
            assert_eq!(got["workspaceTrusted"], expected("workspaceTrusted", trust_default), "{given}");
        }
    }
}
