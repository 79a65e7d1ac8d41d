//! Cursor's reading of the Agent Client Protocol, as the generic client asks for it
//! ([`AgentQuirks`]): how it reports a refused tool call, how it names a call of our MCP
//! server, and how much of an MCP server it shows its model (docs/cursor-acp.md,
//! docs/client-tools.md).

use serde_json::Value;

use crate::backend::acp::quirks::AgentQuirks;
use crate::backend::mcp::McpLimits;

/// Cursor's quirks, for every ACP session of the Cursor CLI.
pub static CURSOR: CursorQuirks = CursorQuirks;

/// Cursor gives the model the first 40 tools of a server, and hides a tool whose server name
/// and tool name together are 60 characters or more: its warning reads "Combined server and
/// tool name length (60) exceeds 60 characters" for exactly 60, and servers that fit it cap
/// their tool names at 59 minus their server name's length (docs/client-tools.md, the MCP path).
pub const MCP_LIMITS: McpLimits = McpLimits { listed: 40, combined: 59 };

pub struct CursorQuirks;

impl AgentQuirks for CursorQuirks {
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

    fn mcp_limits(&self) -> McpLimits {
        MCP_LIMITS
    }
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
    use crate::backend::acp::updates::Updates;
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
