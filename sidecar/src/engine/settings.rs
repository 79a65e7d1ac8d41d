//! The engine's tunables, as plain values. A front door reads them from its own wire
//! (`initialize.options`, `serve`'s flags) and hands them over (`translate.rs`); the engine never
//! sees the wire's form. Defaults are the product's: the wire's defaults are checked against
//! these (`translate::tests`).

/// How the engine runs turns and keeps sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Overall limit for one turn.
    pub request_timeout_seconds: u64,
    /// No agent output for this long ends the turn with kind `timeout`.
    pub idle_timeout_seconds: u64,
    /// At most this many turns run at once; later turns queue in order.
    pub max_concurrent: usize,
    /// A session unused for this long is forgotten.
    pub session_ttl_minutes: u64,
    /// At most this many sessions are kept (least recently used dropped first).
    pub max_sessions: usize,
    /// Agent mode may run shell commands without approval (`--force`).
    pub force: bool,
    /// Upper bound (characters) for earlier turns replayed into a new chat's first prompt.
    pub replay_max_chars: usize,
    /// Model for `utility` turns (titles, progress messages); `None` uses the turn's model.
    pub utility_model: Option<String>,
    /// Forward the client's `system` messages to the agent.
    pub send_system_messages: bool,
    /// Agents the backend may prepare ahead of a turn (the `spares` option; 0: none): after a
    /// turn the engine asks for its follow-up's, and from 2 for a new conversation's as well.
    /// What a backend prepares, and whether it can, is its own (`backend::contract::Warmth`).
    pub warm_ahead: usize,
    /// The client trusts the workspace. Untrusted: ask mode only, never unattended, and the
    /// agent runs in a private scratch folder, never the user's.
    pub workspace_trusted: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            request_timeout_seconds: 300,
            idle_timeout_seconds: 60,
            max_concurrent: 4,
            session_ttl_minutes: 7 * 24 * 60,
            max_sessions: 50,
            force: false,
            replay_max_chars: 100_000,
            utility_model: None,
            send_system_messages: false,
            warm_ahead: 1,
            workspace_trusted: true,
        }
    }
}
