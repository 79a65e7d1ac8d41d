//! The agent under test read plainly: the generic client's [`AgentQuirks`] with none of an
//! agent's own readings, so what passes here is the protocol as written, not a quirk of Cursor's.
//! Only [`Updates`](cursor_bridge::backend::acp::Updates) asks it anything: whether a finished
//! tool call was refused, which it never reads into one (a `failed` call is a failure, as the
//! protocol says). The rest is the trait's, worded as the generic client names each failure.

use std::path::Path;
use std::time::Duration;

use cursor_bridge::backend::acp::quirks::{AgentQuirks, StartError, StartFailure, TurnError};
use cursor_bridge::backend::mcp::McpLimits;
use cursor_bridge::error::BridgeError;
use cursor_bridge::vocab::ErrorKind;
use serde_json::Value;

pub static PLAIN: Plain = Plain;

pub struct Plain;

fn failed(text: String) -> BridgeError {
    BridgeError::new(ErrorKind::CliFailed, text)
}

impl AgentQuirks for Plain {
    fn start_error(&self, what: StartError<'_>) -> BridgeError {
        failed(format!("{what:?}"))
    }

    fn refused(&self, method: &str, code: i64, message: &str, _data: Option<&Value>) -> BridgeError {
        failed(format!("{method} refused: {code} {message}"))
    }

    fn exited_at_start(&self, code: Option<i32>, stderr: &str, _workspace: &Path) -> StartFailure {
        StartFailure::broken(failed(format!("exited at start ({code:?}): {stderr}")))
    }

    fn is_not_signed_in(&self, _code: i64, _message: &str) -> bool {
        false
    }

    fn fallback_auth_method(&self) -> &'static str {
        "login"
    }

    fn turn_error(&self, what: TurnError<'_>) -> BridgeError {
        failed(format!("{what:?}"))
    }

    fn permission_hint(&self) -> &'static str {
        "Allow the tool."
    }

    fn is_our_tool_call(&self, _call: &Value) -> bool {
        false
    }

    fn mcp_limits(&self) -> McpLimits {
        // No MCP server of ours is offered here; no cap the protocol knows of.
        McpLimits { listed: usize::MAX, combined: usize::MAX }
    }

    fn tools_listed_within(&self) -> Duration {
        Duration::from_secs(5)
    }
}
