//! What a chat's tool-calling model remembers between prompts (stored with the chat: a print-mode
//! chat folder or an ACP session of the store), and what a process puts in its record about tools.

use std::path::Path;

use crate::json::{arr, obj, Json};
use crate::prompt_protocol::Received;

/// The record keeps this much of a result's text.
pub const RECORDED_CHARS: usize = 200;

/// Per-chat state of the model (*invented* file: `cursor-agent-double-tools.json`).
#[derive(Clone, Debug, Default)]
pub struct ChatTools {
    /// The tool fields of the chat's first prompt (`tool_script::CHAT_FIELDS`).
    pub stored: Option<Json>,
    /// Tool-result rounds received so far: the index of the step to play.
    pub rounds: u64,
    /// Every result the model has seen, oldest first.
    pub results: Vec<Received>,
    /// The tool names of the latest `<client_tools>` block.
    pub offered: Option<Vec<String>>,
    /// `malformedToolCallsOnce`: the broken block went out (never again in this chat) …
    pub malformed_sent: bool,
    /// … and the repair prompt has not come yet.
    pub malformed_pending: bool,
}

pub const FILE: &str = "cursor-agent-double-tools.json";

impl ChatTools {
    pub fn to_json(&self) -> Json {
        obj([
            ("stored", self.stored.clone().unwrap_or(Json::Null)),
            ("rounds", self.rounds.into()),
            (
                "results",
                arr(self.results.iter().map(|r| {
                    obj([
                        ("callId", r.call_id.as_str().into()),
                        ("name", r.name.as_str().into()),
                        ("isError", r.is_error.into()),
                        ("text", r.text.as_str().into()),
                    ])
                })),
            ),
            ("offered", self.offered.as_ref().map(|o| arr(o.iter().map(|n| n.as_str().into()))).unwrap_or(Json::Null)),
            ("malformedSent", self.malformed_sent.into()),
            ("malformedPending", self.malformed_pending.into()),
        ])
    }

    pub fn from_json(v: &Json) -> ChatTools {
        let s = |j: &Json, k: &str| j.get(k).and_then(Json::as_str).unwrap_or("").to_owned();
        let b = |k: &str| matches!(v.get(k), Some(Json::Bool(true)));
        ChatTools {
            stored: v.get("stored").filter(|s| !matches!(s, Json::Null)).cloned(),
            rounds: match v.get("rounds") {
                Some(Json::Num(n)) => n.as_u64().unwrap_or(0),
                _ => 0,
            },
            results: match v.get("results") {
                Some(Json::Arr(items)) => items
                    .iter()
                    .map(|r| Received {
                        call_id: s(r, "callId"),
                        name: s(r, "name"),
                        is_error: matches!(r.get("isError"), Some(Json::Bool(true))),
                        text: s(r, "text"),
                    })
                    .collect(),
                _ => Vec::new(),
            },
            offered: match v.get("offered") {
                Some(Json::Arr(items)) => Some(items.iter().filter_map(Json::as_str).map(str::to_owned).collect()),
                _ => None,
            },
            malformed_sent: b("malformedSent"),
            malformed_pending: b("malformedPending"),
        }
    }

    pub fn load(dir: &Path) -> Option<ChatTools> {
        let text = std::fs::read_to_string(dir.join(FILE)).ok()?;
        Some(ChatTools::from_json(&Json::parse(&text).ok()?))
    }

    /// Best-effort, through a rename so a concurrent reader never sees half a file.
    pub fn save(&self, dir: &Path) {
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let tmp = dir.join(format!("{FILE}.{}.tmp", std::process::id()));
        if std::fs::write(&tmp, self.to_json().to_compact()).is_ok() {
            let _ = std::fs::rename(&tmp, dir.join(FILE));
        }
    }
}

/// The lists of the record's `tools` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum List {
    Offered,
    McpServers,
    Calls,
    Results,
    Permissions,
    Builtins,
}

/// What a process saw and did with tools, for the record (README "Client-owned tools").
#[derive(Clone, Debug, Default)]
pub struct ToolLog {
    offered: Vec<Json>,
    mcp_servers: Vec<Json>,
    calls: Vec<Json>,
    results: Vec<Json>,
    permissions: Vec<Json>,
    builtins: Vec<Json>,
}

impl ToolLog {
    /// Appends `{sessionId, …entry}` to a list.
    pub fn push(&mut self, list: List, session_id: &str, entry: Json) {
        let mut e = obj([("sessionId", session_id.into())]);
        e.merge_from(&entry);
        match list {
            List::Offered => self.offered.push(e),
            List::McpServers => self.mcp_servers.push(e),
            List::Calls => self.calls.push(e),
            List::Results => self.results.push(e),
            List::Permissions => self.permissions.push(e),
            List::Builtins => self.builtins.push(e),
        }
    }

    pub fn is_empty(&self) -> bool {
        [&self.offered, &self.mcp_servers, &self.calls, &self.results, &self.permissions, &self.builtins]
            .iter()
            .all(|l| l.is_empty())
    }

    pub fn to_json(&self) -> Json {
        obj([
            ("offered", Json::Arr(self.offered.clone())),
            ("mcpServers", Json::Arr(self.mcp_servers.clone())),
            ("calls", Json::Arr(self.calls.clone())),
            ("results", Json::Arr(self.results.clone())),
            ("permissions", Json::Arr(self.permissions.clone())),
            ("builtins", Json::Arr(self.builtins.clone())),
        ])
    }
}

/// A result as the record shows it: the first [`RECORDED_CHARS`] characters.
pub fn result_entry(r: &Received, via: &str) -> Json {
    obj([
        ("via", via.into()),
        ("callId", r.call_id.as_str().into()),
        ("name", r.name.as_str().into()),
        ("isError", r.is_error.into()),
        ("text", r.text.chars().take(RECORDED_CHARS).collect::<String>().into()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips() {
        let s = ChatTools {
            stored: Some(Json::parse(r#"{"toolScript":[]}"#).unwrap()),
            rounds: 2,
            results: vec![Received { call_id: "c".into(), name: "n".into(), is_error: true, text: "t".into() }],
            offered: Some(vec!["a".into()]),
            malformed_sent: true,
            malformed_pending: false,
        };
        let back = ChatTools::from_json(&s.to_json());
        assert_eq!(back.to_json().to_compact(), s.to_json().to_compact());
    }
}
