//! Client-tools mode runs the agent where it can use no tool of its own (docs/client-tools.md,
//! "Isolation"): a private empty folder whose project permissions deny every built-in tool and
//! the user's own MCP servers, and allow only ours. Only `permissions` goes in the project file:
//! Cursor rejects a project `cli.json` with any other key (docs/cursor-cli.md). `HOME` and the
//! config folder stay as they are, so the user's login keeps working.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// The MCP server name our loopback host registers under (docs/client-tools.md).
pub const OUR_SERVER: &str = "cb";

/// Built-in tools, in both spellings Cursor's builds have been seen to read (path globs with
/// and without a leading `/`).
const DENY: &[&str] = &["Shell(*)", "Read(**)", "Read(/**)", "Write(**)", "Write(/**)", "WebFetch(*)", "WebSearch(*)"];

/// Write the project permissions into `folder/.cursor/cli.json` (made if missing).
pub fn lock_down(folder: &Path) -> std::io::Result<()> {
    let dir = folder.join(".cursor");
    std::fs::create_dir_all(&dir)?;
    let text = serde_json::to_string_pretty(&permissions(&user_mcp_servers()))?;
    let path = dir.join("cli.json");
    // Rewritten only when it differs, so a folder reused turn after turn is not touched.
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&path, text)?;
    }
    Ok(())
}

/// The project file's content: deny wins in Cursor's permission rules, so our server's allow
/// entry cannot be widened by the user's global configuration, and nothing else is allowed.
pub fn permissions(user_servers: &[String]) -> Value {
    let mut deny: Vec<String> = DENY.iter().map(|s| s.to_string()).collect();
    deny.extend(user_servers.iter().filter(|s| *s != OUR_SERVER).map(|s| format!("Mcp({s}:*)")));
    json!({"permissions": {"allow": [format!("Mcp({OUR_SERVER}:*)")], "deny": deny}})
}

/// The servers of the user's global `~/.cursor/mcp.json` (they load in every folder), by name.
fn user_mcp_servers() -> Vec<String> {
    let Some(path) = home().map(|h| h.join(".cursor").join("mcp.json")) else { return Vec::new() };
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let Ok(value) = serde_json::from_str::<Value>(&text) else { return Vec::new() };
    value.get("mcpServers").and_then(Value::as_object).map(|m| m.keys().cloned().collect()).unwrap_or_default()
}

fn home() -> Option<PathBuf> {
    std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" }).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_server_is_allowed_and_the_users_are_denied() {
        let p = permissions(&["github".into(), "cb".into()]);
        assert_eq!(p["permissions"]["allow"], json!(["Mcp(cb:*)"]));
        let deny: Vec<&str> = p["permissions"]["deny"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        for want in ["Shell(*)", "Read(**)", "Write(/**)", "WebFetch(*)", "Mcp(github:*)"] {
            assert!(deny.contains(&want), "{want} in {deny:?}");
        }
        assert!(!deny.contains(&"Mcp(cb:*)"));
        // Only `permissions`: any other key makes Cursor reject the project file.
        assert_eq!(p.as_object().unwrap().keys().collect::<Vec<_>>(), ["permissions"]);
    }

    #[test]
    fn the_folder_gets_the_project_file() {
        let dir = tempfile::tempdir().unwrap();
        lock_down(dir.path()).unwrap();
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(".cursor/cli.json")).unwrap()).unwrap();
        assert_eq!(written["permissions"]["allow"], json!(["Mcp(cb:*)"]));
    }
}
