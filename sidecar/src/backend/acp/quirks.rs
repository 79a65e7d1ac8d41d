//! What differs between ACP agents that speak the same protocol: the generic client
//! (`agent.rs`, `turn.rs`, `updates.rs`, `tools.rs`) asks an agent's [`AgentQuirks`] wherever an agent
//! reads the protocol its own way or says a failure in its own words. The generic client
//! decides what happened (a start that did not answer, a refusal of `session/new`); the agent
//! says what that means and how it reads. Each agent's folder implements it (Cursor's:
//! `cursor/acp/quirks.rs`); a method with a default is one where the protocol's plain reading is
//! right for an agent that says nothing more.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::connection::RpcError;
use crate::backend::mcp::McpLimits;
use crate::error::BridgeError;

/// A start that failed. `broken`: ACP itself does not work with this build of the agent (it
/// exits at start, or does not complete the handshake), as opposed to a failure another way of
/// driving the same program would share (not signed in).
#[derive(Debug)]
pub struct StartFailure {
    pub error: BridgeError,
    pub broken: bool,
    /// `authenticate` did not answer: signed out, or a slow service (the program's own status
    /// command may tell which).
    pub auth_unanswered: bool,
}

impl StartFailure {
    pub fn broken(error: BridgeError) -> Self {
        StartFailure { error, broken: true, auth_unanswered: false }
    }
    pub fn shared(error: BridgeError) -> Self {
        StartFailure { error, broken: false, auth_unanswered: false }
    }
}

/// What went wrong while starting an agent or opening its session, for the agent to word
/// ([`AgentQuirks::start_error`]). The bounds are the ones that ran out.
#[derive(Debug)]
pub enum StartError<'a> {
    /// `initialize` was answered with an error.
    InitializeRefused(&'a RpcError),
    InitializeTimeout(Duration),
    /// `initialize` answered a protocol version other than 1 (its whole answer).
    ProtocolVersion(&'a Value),
    AuthenticateTimeout(Duration),
    /// The agent says it needs a login (its message).
    NotSignedIn(&'a str),
    /// `session/new` answered without a `sessionId`.
    SessionWithoutId,
    SessionTimeout(Duration),
    /// A `session/load` whose answer did not come for this long.
    LoadTimeout(Duration),
}

/// What went wrong in a turn, for the agent to word ([`AgentQuirks::turn_error`]).
#[derive(Debug)]
pub enum TurnError<'a> {
    /// The prompt ended with `stopReason: cancelled` though nobody cancelled it.
    CancelledByAgent,
    /// The agent no longer has the session (the turn continues in a new one).
    SessionGone,
    /// `session/prompt` was answered with this error.
    PromptFailed { code: i64, message: &'a str },
    /// The agent's process ended during the turn; the tail of its stderr.
    AgentExited { stderr: &'a str },
    /// A request inside the session (`session/set_mode`, `session/set_config_option`) was
    /// refused (or the agent's output ended).
    ConfigRefused { method: &'a str, error: &'a RpcError },
    /// It was not answered within this bound.
    ConfigTimeout { method: &'a str, within: Duration },
    /// The conversation's chat is another backend's (the engine replays it in a new session).
    OtherBackendsChat,
    /// The agent stopped while loading the conversation's session (it goes on in a new one).
    LoadStopped,
    /// The agent could not load the conversation's session (it goes on in a new one).
    LoadRefused,
    /// The session did not list the client's tools in time (they go in the prompt instead).
    ToolsNotListed,
    /// The prompt carries images and the agent's `initialize` did not advertise
    /// `promptCapabilities.image`.
    ImagesNotTaken,
}

/// The answer to one of the agent's own requests ([`AgentQuirks::extension_request`]).
#[derive(Debug)]
pub struct ExtensionAnswer {
    /// Text the person sees in the answer (as its own paragraph).
    pub show: Option<String>,
    /// The request's result.
    pub result: Value,
}

pub trait AgentQuirks: Send + Sync {
    /// The agent's words for a failure of its start or its session.
    fn start_error(&self, what: StartError<'_>) -> BridgeError;

    /// The agent refused `method` (`session/new`, `session/load`) with this error.
    fn refused(&self, method: &str, code: i64, message: &str, data: Option<&Value>) -> BridgeError;

    /// The agent's output ended during its start: what its exit status and stderr say, and
    /// whether that means ACP does not work with this build ([`StartFailure::broken`]).
    /// `workspace` is the folder it was started in.
    fn exited_at_start(&self, code: Option<i32>, stderr: &str, workspace: &Path) -> StartFailure;

    /// An error answer to `authenticate` that says the agent is not signed in (anything else is
    /// passed over: a stored login may still serve `session/new`).
    fn is_not_signed_in(&self, code: i64, message: &str) -> bool;

    /// The `authenticate` method when `initialize` lists none.
    fn fallback_auth_method(&self) -> &'static str;

    /// A `session/new` failure the agent is known to recover from on the same connection.
    fn retries_session_new(&self, _code: i64, _message: &str) -> bool {
        false
    }

    /// The agent's words for a failed turn.
    fn turn_error(&self, what: TurnError<'_>) -> BridgeError;

    /// The hint of the notice that a permission request was refused (how to let the agent run
    /// tools without asking).
    fn permission_hint(&self) -> &'static str;

    /// A request of the agent's own (not `session/request_permission`): its answer, or `None`
    /// for "method not found".
    fn extension_request(&self, _method: &str, _params: &Value) -> Option<ExtensionAnswer> {
        None
    }

    /// The answer text so far (trimmed at the start, not empty) may still turn out to be an
    /// error the agent streams as answer text: it is held back until it cannot.
    fn may_become_error_text(&self, _start: &str) -> bool {
        false
    }

    /// The text held back to the end of the turn is an error in disguise: which one.
    fn answer_is_error(&self, _held: &str) -> Option<BridgeError> {
        None
    }

    /// A prompt error that is a dropped connection to the agent's service, which the agent
    /// does not retry itself (the turn retries while nothing was shown).
    fn is_transport_drop(&self, _message: &str) -> bool {
        false
    }

    /// A tool call the agent reports `completed` although it did not run (it was refused).
    fn completed_but_rejected(&self, _update: &Value) -> bool {
        false
    }

    /// A `failed` call of the agent's tool `tool` whose first text, `detail`, says it was not
    /// allowed to run (a refusal, not a tool that ran and failed).
    fn failure_is_refusal(&self, _tool: &str, _detail: &str) -> bool {
        false
    }

    /// Is this tool call (a `tool_call` update, or a permission request's `toolCall`) one of
    /// our MCP server's, the client's tools (`tools.rs`), rather than the agent's own?
    fn is_our_tool_call(&self, call: &Value) -> bool;

    /// How much of one MCP server the agent shows its model.
    fn mcp_limits(&self) -> McpLimits;

    /// How long a new session may take to list our MCP server's tools before the agent is taken
    /// to ignore the MCP servers given to a session (the turn then describes the client's tools
    /// in the prompt instead).
    fn tools_listed_within(&self) -> Duration;
}

/// An agent that reads the protocol plainly and words its failures as the generic client names
/// them: for the tests of the generic client, and for a client of an agent no backend serves yet
/// (the conformance test's, `conformance/tests/acp_agents`).
pub static PLAIN: Plain = Plain;

pub struct Plain;

impl AgentQuirks for Plain {
    fn start_error(&self, what: StartError<'_>) -> BridgeError {
        BridgeError::new(crate::vocab::ErrorKind::CliFailed, format!("{what:?}"))
    }

    fn refused(&self, method: &str, code: i64, message: &str, _data: Option<&Value>) -> BridgeError {
        BridgeError::new(crate::vocab::ErrorKind::CliFailed, format!("{method} refused: {code} {message}"))
    }

    fn exited_at_start(&self, code: Option<i32>, _stderr: &str, _workspace: &Path) -> StartFailure {
        StartFailure::broken(BridgeError::new(crate::vocab::ErrorKind::CliFailed, format!("exited: {code:?}")))
    }

    fn is_not_signed_in(&self, _code: i64, _message: &str) -> bool {
        false
    }

    fn fallback_auth_method(&self) -> &'static str {
        "login"
    }

    fn turn_error(&self, what: TurnError<'_>) -> BridgeError {
        BridgeError::new(crate::vocab::ErrorKind::CliFailed, format!("{what:?}"))
    }

    fn permission_hint(&self) -> &'static str {
        "Allow it."
    }

    fn is_our_tool_call(&self, _call: &Value) -> bool {
        false
    }

    /// The limits the MCP folder's tests are written against (Cursor's, the first agent served).
    fn mcp_limits(&self) -> McpLimits {
        McpLimits { listed: 40, combined: 59 }
    }

    /// The wait of the first agent served (Cursor's), as for the limits above.
    fn tools_listed_within(&self) -> Duration {
        Duration::from_secs(5)
    }
}
