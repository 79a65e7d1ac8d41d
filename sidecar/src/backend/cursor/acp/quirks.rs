//! Cursor's reading of the Agent Client Protocol, as the generic client asks for it
//! ([`AgentQuirks`]): its words for a start or session that failed (and which of those mean ACP
//! does not work with the build), its login policy, its errors streamed as answer text and its
//! turn failures, its `cursor/*` requests, how it reports a refused tool call, how it names a call of our MCP
//! server, how much of an MCP server it shows its model and how soon a session lists it (docs/cursor-acp.md,
//! docs/client-tools.md).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::backend::acp::{
    cancelled_outcome, AgentQuirks, ExtensionAnswer, RpcError, StartError, StartFailure, TurnError,
};
use crate::backend::cursor::failures::{classify, HINT_AUTH, HINT_CLI_VERSION, HINT_NETWORK};
use crate::backend::mcp::McpLimits;
use crate::error::BridgeError;
use crate::util::text::one_line;
use crate::vocab::ErrorKind;

/// How the message of a start the CLI refused over the project's `.cursor/cli.json` begins: the
/// project's problem, which print mode would meet the same way (`auto` shows it as it is).
pub const PROJECT_CONFIG_REJECTED: &str = "The Cursor CLI rejected the project's configuration";

/// Cursor's quirks, for every ACP session of the Cursor CLI.
pub static CURSOR: CursorQuirks = CursorQuirks;

/// Cursor gives the model the first 40 tools of a server, and hides a tool whose server name
/// and tool name together are 60 characters or more: its warning reads "Combined server and
/// tool name length (60) exceeds 60 characters" for exactly 60, and servers that fit it cap
/// their tool names at 59 minus their server name's length (docs/client-tools.md, the MCP path).
pub const MCP_LIMITS: McpLimits = McpLimits { listed: 40, combined: 59 };

/// How long a new session may take to list our tools before the build is taken to ignore the
/// MCP servers of a session (2026.06.04 did; later builds gate them silently). A build the probe
/// saw list them later is waited for as long as it took (`probe_notes.rs`).
pub const LISTED_WITHIN: Duration = Duration::from_secs(5);

/// Answers that are errors in disguise start like one of these (docs/cursor-acp.md §6, §11).
const ERROR_OPENERS: &[&str] = &["Error:", "Upgrade your plan"];
/// Transport drops the ACP session does not retry itself (docs/cursor-acp.md §6).
const TRANSPORT_DROPS: &[&str] = &["ping timed out", "stream closed", "exceeded max retries", "econnreset"];

pub const PERMISSION_HINT: &str = "Cursor asked for approval, which the bridge cannot give interactively. \
     To let agent mode run commands without asking, enable `cursorBridge.allowUnattended`.";

pub struct CursorQuirks;

impl AgentQuirks for CursorQuirks {
    fn start_error(&self, what: StartError<'_>) -> BridgeError {
        match what {
            StartError::InitializeRefused(e) => {
                BridgeError::new(ErrorKind::CliFailed, format!("Cursor's ACP mode refused `initialize`: {e}"))
                    .hint(HINT_CLI_VERSION)
            }
            StartError::InitializeTimeout(bound) => BridgeError::new(
                ErrorKind::Timeout,
                format!("Cursor's ACP mode did not answer `initialize` within {} s", bound.as_secs()),
            )
            .hint(HINT_CLI_VERSION),
            StartError::ProtocolVersion(init) => BridgeError::new(
                ErrorKind::CliFailed,
                "Cursor's ACP mode speaks a protocol version the bridge does not",
            )
            .hint(HINT_CLI_VERSION)
            .detail(init.to_string()),
            StartError::AuthenticateTimeout(bound) => BridgeError::new(
                ErrorKind::Timeout,
                format!("Cursor's ACP mode did not answer `authenticate` within {} s", bound.as_secs()),
            )
            .hint(
                "Cursor may be slow or unreachable: try again. If the Cursor CLI is not signed in, run \
                     `agent login` (or set an API key); `agent status` says which.",
            ),
            StartError::NotSignedIn(message) => not_signed_in(message),
            StartError::SessionWithoutId => {
                BridgeError::new(ErrorKind::CliFailed, "Cursor's ACP mode answered `session/new` without a session id")
            }
            StartError::SessionTimeout(bound) => BridgeError::new(
                ErrorKind::Timeout,
                format!("Cursor did not open a session within {} s", bound.as_secs()),
            )
            .hint("Cursor's servers may be slow or unreachable; check the network and try again."),
            StartError::LoadTimeout(bound) => BridgeError::new(
                ErrorKind::Timeout,
                format!(
                    "Cursor did not finish loading this conversation's session (no answer for {} s)",
                    bound.as_secs()
                ),
            )
            .hint(
                "Cursor's servers may be slow or unreachable. The conversation is kept: send the message \
                     again to try once more.",
            ),
        }
    }

    /// -32000 is Cursor's "authentication required"; anything else is classified by its text
    /// as print mode's failures are.
    fn refused(&self, method: &str, code: i64, message: &str, data: Option<&Value>) -> BridgeError {
        if code == -32000 {
            return not_signed_in(message);
        }
        let mut failure: BridgeError = classify(Some(1), "", Some(message)).into();
        if failure.kind == ErrorKind::CliFailed {
            failure.message = format!("Cursor refused `{method}`: {message}");
            if let Some(data) = data {
                failure = failure.detail(crate::util::text::cut_chars(&data.to_string(), 2000).to_string());
            }
        }
        failure
    }

    /// What stderr said: a `.cli.json` schema error, or nothing at all (docs/cursor-acp.md §11).
    /// A project configuration the CLI rejects is that project's problem, fixed by editing the
    /// file, not the build's: it never marks ACP as not working with the build.
    fn exited_at_start(&self, code: Option<i32>, stderr: &str, workspace: &Path) -> StartFailure {
        let trimmed = stderr.trim();
        if trimmed.contains("cli.json") {
            let first = trimmed.lines().next().unwrap_or(trimmed);
            let file = workspace.join(".cursor").join("cli.json");
            return StartFailure::shared(
                BridgeError::new(ErrorKind::CliFailed, format!("{PROJECT_CONFIG_REJECTED}: {first}"))
                    .hint(format!(
                        "Fix or remove {} (the CLI accepts only the keys it knows), then send the message again. \
                     If that folder is one of Cursor Bridge's own (under its state folder), this CLI build does \
                     not accept the permissions file the bridge writes there: update the CLI, or set \
                     `cursorBridge.tools` to \"cursor\".",
                        file.display()
                    ))
                    .detail(crate::util::text::bounded_tail(trimmed, 2000).unwrap_or_default()),
            );
        }
        if trimmed.is_empty() {
            let how = code.map_or("was stopped".to_owned(), |c| format!("exited with status {c}"));
            return StartFailure::broken(
                BridgeError::new(ErrorKind::CliFailed, format!("Cursor's ACP mode {how} at start without a message"))
                    .hint(HINT_CLI_VERSION),
            );
        }
        let mut error: BridgeError = classify(code, stderr, None).into();
        if error.kind == ErrorKind::CliFailed {
            error.message = "Cursor's ACP mode stopped at start".into();
            return StartFailure::broken(error);
        }
        // A login, a limit, the network: print mode would say the same.
        StartFailure::shared(error)
    }

    /// -32000, or an error text print mode would read as a missing login.
    fn is_not_signed_in(&self, code: i64, message: &str) -> bool {
        code == -32000 || classify(Some(1), "", Some(message)).kind == ErrorKind::AuthRequired
    }

    fn fallback_auth_method(&self) -> &'static str {
        "cursor_login"
    }

    /// `session/new` right after `initialize` can fail once with -32603 (docs/cursor-acp.md §11).
    fn retries_session_new(&self, code: i64, message: &str) -> bool {
        code == -32603 && message.contains("initialize session services")
    }

    fn turn_error(&self, what: TurnError<'_>) -> BridgeError {
        match what {
            TurnError::CancelledByAgent => {
                BridgeError::new(ErrorKind::CliFailed, "The Cursor CLI cancelled the turn itself").hint("Try again.")
            }
            TurnError::SessionGone => BridgeError::new(ErrorKind::CliFailed, "Cursor no longer has this session"),
            TurnError::PromptFailed { code: -32000, message } => {
                classify(Some(1), "", Some(&format!("authentication required: {message}"))).into()
            }
            TurnError::PromptFailed { message, .. } if self.is_transport_drop(message) => {
                BridgeError::new(ErrorKind::Network, "The connection to Cursor's servers dropped during the turn.")
                    .hint(HINT_NETWORK)
                    .detail(crate::util::text::cut_chars(message, 500).to_string())
            }
            TurnError::PromptFailed { message, .. } => {
                let mut error: BridgeError = classify(Some(1), "", Some(message)).into();
                if error.kind == ErrorKind::CliFailed {
                    error.message = format!("Cursor's ACP mode failed the turn: {}", one_line(message, 200));
                }
                error
            }
            TurnError::AgentExited { stderr } => {
                let mut error: BridgeError = classify(Some(1), stderr, None).into();
                if error.kind == ErrorKind::CliFailed {
                    error.message = "Cursor's ACP agent stopped during the turn".into();
                }
                error
            }
            TurnError::ConfigRefused {
                method: "session/set_config_option",
                error: RpcError::Remote { code: -32602, message, .. },
            } => BridgeError::new(ErrorKind::InvalidModel, format!("Cursor's ACP mode refused the model: {message}"))
                .hint(crate::backend::cursor::failures::HINT_MODEL),
            TurnError::ConfigRefused { method, error } => {
                BridgeError::new(ErrorKind::CliFailed, format!("Cursor's ACP mode refused `{method}`: {error}"))
                    .hint("See Cursor Bridge logs for details.")
            }
            TurnError::ConfigTimeout { method, within } => BridgeError::new(
                ErrorKind::Timeout,
                format!("Cursor's ACP mode did not answer `{method}` within {} s", within.as_secs()),
            ),
            TurnError::OtherBackendsChat => {
                BridgeError::new(ErrorKind::CliFailed, "This conversation's chat belongs to print mode")
            }
            TurnError::LoadStopped => BridgeError::new(
                ErrorKind::CliFailed,
                "Cursor's agent stopped while loading this conversation's session",
            ),
            TurnError::LoadRefused => {
                BridgeError::new(ErrorKind::CliFailed, "Cursor could not load this conversation's session")
            }
            TurnError::ToolsNotListed => {
                BridgeError::new(ErrorKind::CliFailed, "Cursor's session did not take the client's tools")
            }
            TurnError::ImagesNotTaken => BridgeError::invalid_params(
                "this Cursor CLI's ACP mode does not take images (its `initialize` does not advertise \
                 `promptCapabilities.image`)",
            )
            .hint("Send text only, or update the Cursor CLI."),
        }
    }

    fn permission_hint(&self) -> &'static str {
        PERMISSION_HINT
    }

    fn extension_request(&self, method: &str, params: &Value) -> Option<ExtensionAnswer> {
        match method {
            // Plan mode's plan, as text the person can read; not accepted (accepting could start
            // building it), so the agent ends the turn.
            "cursor/create_plan" => {
                let plan = ["name", "overview", "plan"]
                    .iter()
                    .filter_map(|k| params.get(*k).and_then(Value::as_str))
                    .filter(|s| !s.trim().is_empty())
                    .collect::<Vec<_>>()
                    .join("\n\n");
                Some(ExtensionAnswer { show: Some(plan), result: cancelled_outcome() })
            }
            // A question only the person could answer: the bridge cannot ask it mid-turn.
            "cursor/ask_question" => Some(ExtensionAnswer { show: None, result: cancelled_outcome() }),
            _ => None,
        }
    }

    fn may_become_error_text(&self, start: &str) -> bool {
        ERROR_OPENERS.iter().any(|o| o.starts_with(start) || start.starts_with(o))
    }

    /// Cursor streams some errors as answer text and ends with `end_turn` (docs/cursor-acp.md
    /// §6, §11): held text that reads as a known failure, or starts like one.
    fn answer_is_error(&self, held: &str) -> Option<BridgeError> {
        let failure = classify(Some(0), "", Some(held));
        let known = !matches!(failure.kind, ErrorKind::CliFailed | ErrorKind::Network)
            || ERROR_OPENERS.iter().any(|o| held.trim_start().starts_with(o));
        if !known {
            return None;
        }
        let mut error: BridgeError = failure.into();
        if error.kind == ErrorKind::CliFailed {
            error.message = one_line(held.trim(), 300);
        }
        if held.contains("Upgrade your plan") {
            error = BridgeError::new(ErrorKind::UsageLimit, "This model needs a higher Cursor plan.")
                .hint("Pick another model, or upgrade your Cursor plan.");
        }
        Some(error)
    }

    fn is_transport_drop(&self, message: &str) -> bool {
        let lower = message.to_ascii_lowercase();
        TRANSPORT_DROPS.iter().any(|p| lower.contains(p))
    }

    /// Cursor ends a rejected tool `completed` with `rawOutput.rejected` (docs/cursor-acp.md): it
    /// did not run.
    fn completed_but_rejected(&self, update: &Value) -> bool {
        update.pointer("/rawOutput/rejected").is_some_and(|r| !r.is_null())
    }

    /// Tool status is not to be trusted for denials (docs/cursor-acp.md §11): a built-in the
    /// permissions configuration refused may come back `failed`. It did not run, so it is a
    /// rejection, not a tool that ran and failed. Not for a shell: a command's own output may
    /// say anything.
    fn failure_is_refusal(&self, tool: &str, detail: &str) -> bool {
        tool != "shell" && says_denied(detail)
    }

    /// Cursor titles our server's calls `<server>: <tool>` and `<server>-<tool>: <tool>` and
    /// names the server in `rawInput.providerIdentifier` (docs/client-tools.md).
    fn is_our_tool_call(&self, call: &Value) -> bool {
        let server = crate::backend::cursor::isolation::OUR_SERVER;
        if call.pointer("/rawInput/providerIdentifier").and_then(Value::as_str) == Some(server) {
            return true;
        }
        let title = call.get("title").and_then(Value::as_str).unwrap_or("").trim_matches('`');
        title.strip_prefix(server).is_some_and(|rest| rest.starts_with(": ") || rest.starts_with('-'))
    }

    fn tools_listed_within(&self) -> Duration {
        LISTED_WITHIN
    }

    fn mcp_limits(&self) -> McpLimits {
        MCP_LIMITS
    }
}

/// The error of a Cursor CLI that needs a login; `detail` is what it said.
pub fn not_signed_in(detail: &str) -> BridgeError {
    BridgeError::new(ErrorKind::AuthRequired, "The Cursor CLI is not signed in.")
        .hint(HINT_AUTH)
        .detail(crate::util::text::cut_chars(detail, 500).to_string())
}

/// A tool failure's text that says the tool was not allowed to run (permissions, a denial), not
/// that it ran and failed.
fn says_denied(detail: &str) -> bool {
    let d = detail.to_ascii_lowercase();
    // Only a denial that names Cursor's permissions set-up: a tool that ran and could not open
    // a file ("EACCES: permission denied, open '.vscode/settings.json'") did run.
    d.contains("permissions configuration")
        || (d.contains("cli.json") && (d.contains("permission") || d.contains("not allowed")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::backend::acp::Updates;
    use crate::backend::events::Event;

    fn completed(updates: &[Value]) -> Option<(bool, bool)> {
        let mut u = Updates::new(&CURSOR);
        updates.iter().flat_map(|x| u.events(x)).find_map(|e| match e {
            Event::ToolCompleted { ok, rejected, .. } => Some((ok, rejected)),
            _ => None,
        })
    }

    #[test]
    fn a_built_in_that_failed_because_the_permissions_refused_it_counts_as_rejected() {
        let failed = |kind: &str, text: &str| {
            completed(&[
                json!({"sessionUpdate": "tool_call", "toolCallId": "r", "title": "Read a.rs", "kind": kind}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "r", "status": "failed",
                       "content": [{"type": "content", "content": {"type": "text", "text": text}}]}),
            ])
        };
        let denial = "Permission denied by your permissions configuration";
        assert_eq!(failed("read", denial), Some((false, true)));
        assert_eq!(failed("read", "ENOENT: no such file"), Some((false, false)), "a read that ran and failed");
        assert_eq!(failed("execute", denial), Some((false, false)), "a command's own output may say anything");
    }

    #[test]
    fn a_tool_cursor_rejected_did_not_run_though_it_completed() {
        let done = |output: Value| {
            completed(&[
                json!({"sessionUpdate": "tool_call", "toolCallId": "e", "title": "Edit a.rs", "kind": "edit"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "e", "status": "completed", "rawOutput": output}),
            ])
        };
        assert_eq!(done(json!({"rejected": {"reason": "user"}})), Some((false, true)));
        assert_eq!(done(json!({"rejected": null})), Some((true, false)));
        assert_eq!(done(json!({})), Some((true, false)));
    }

    #[test]
    fn our_calls_are_told_from_others() {
        let cases = [
            (json!({"title": "cb: create_file", "kind": "other"}), true),
            (json!({"title": "cb-create_file: create_file", "kind": "other"}), true),
            (json!({"title": "MCP: tool", "rawInput": {"providerIdentifier": "cb", "toolName": "x"}}), true),
            (json!({"title": "MCP: tool", "kind": "other"}), false),
            (json!({"title": "cbx: tool"}), false),
            (json!({"title": "github-search: search", "rawInput": {"providerIdentifier": "github"}}), false),
            (json!({"title": "`npm test`", "kind": "execute"}), false),
        ];
        for (call, ours) in cases {
            assert_eq!(CURSOR.is_our_tool_call(&call), ours, "{call}");
        }
    }

    #[test]
    fn a_denial_by_the_permissions_set_up_is_told_from_a_command_that_failed() {
        for (detail, denied) in [
            ("Permission denied by your permissions configuration: Read(**)", true),
            ("Shell(rm) is not allowed by permissions in .cursor/cli.json", true),
            ("cat: /root/secret: Permission denied", false),
            ("EACCES: permission denied, open '.vscode/settings.json'", false),
            ("blocked by the permission policy", false),
            ("error: failed to push some refs", false),
        ] {
            assert_eq!(says_denied(detail), denied, "{detail}");
        }
    }
}
