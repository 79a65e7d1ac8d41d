//! ACP sessions on disk, so a second process can `session/load` a session another one created
//! (the real CLI keeps ACP sessions in `~/.cursor/acp-sessions/<uuid>/`, beside the chat folders
//! of docs/cursor-cli.md §6; docs/ does not record this folder yet, and what it stores there is
//! unknown). The double writes one file of its own per session,
//! `<data>/acp-sessions/<id>/cursor-agent-double.json` (*invented* content), where `<data>` is
//! `CURSOR_DATA_DIR` or `$HOME/.cursor` as for chat folders. Deleting the folder simulates Cursor
//! forgetting the session. Disk errors are ignored: the store is best-effort.

use std::path::PathBuf;

use crate::chats;
use crate::json::{arr, obj, Json};

pub const FILE: &str = "cursor-agent-double.json";

fn dir(id: &str) -> Option<PathBuf> {
    let root = chats::data_root().filter(|_| chats::safe_id(id))?;
    Some(root.join("acp-sessions").join(id))
}

/// One turn as the replay shows it.
#[derive(Clone, Debug)]
pub struct Turn {
    pub user: String,
    pub agent: String,
    /// The process that ran it and when it ended (ms since the epoch), so a test can order the
    /// turns of several sessions and processes.
    pub pid: u32,
    pub at_ms: u64,
    /// The session's mode and the model's wire id the turn ran with, and how it ended, so a test
    /// can see what a client's settings did while the process runs.
    pub mode: String,
    pub model: String,
    pub stop_reason: String,
    /// The prompt's `image` blocks, `{mimeType, data}` as sent.
    pub images: Vec<Json>,
}

#[derive(Clone, Debug)]
pub struct Stored {
    pub id: String,
    pub cwd: String,
    pub title: String,
    pub created_by_pid: u32,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    pub turns: Vec<Turn>,
    /// The tool model's state (`tool_state::ChatTools`).
    pub tools: Option<Json>,
}

impl Stored {
    fn to_json(&self) -> Json {
        obj([
            ("sessionId", self.id.as_str().into()),
            ("cwd", self.cwd.as_str().into()),
            ("title", self.title.as_str().into()),
            ("createdByPid", self.created_by_pid.into()),
            ("createdAtMs", self.created_at_ms.into()),
            ("updatedAtMs", self.updated_at_ms.into()),
            (
                "turns",
                arr(self.turns.iter().map(|t| {
                    obj([
                        ("user", t.user.as_str().into()),
                        ("agent", t.agent.as_str().into()),
                        ("pid", t.pid.into()),
                        ("atMs", t.at_ms.into()),
                        ("mode", t.mode.as_str().into()),
                        ("model", t.model.as_str().into()),
                        ("stopReason", t.stop_reason.as_str().into()),
                        ("images", arr(t.images.iter().cloned())),
                    ])
                })),
            ),
            ("tools", self.tools.clone().unwrap_or(Json::Null)),
        ])
    }

    fn from_json(v: &Json) -> Option<Stored> {
        let s = |k: &str| v.get(k).and_then(Json::as_str).map(str::to_owned);
        let n = |k: &str| match v.get(k) {
            Some(Json::Num(n)) => n.as_u64(),
            _ => None,
        };
        let turns = match v.get("turns") {
            Some(Json::Arr(items)) => items
                .iter()
                .filter_map(|t| {
                    let n = |k: &str| match t.get(k) {
                        Some(Json::Num(n)) => n.as_u64(),
                        _ => None,
                    };
                    Some(Turn {
                        user: t.get("user")?.as_str()?.to_owned(),
                        agent: t.get("agent")?.as_str()?.to_owned(),
                        pid: n("pid").unwrap_or(0) as u32,
                        at_ms: n("atMs").unwrap_or(0),
                        mode: t.get("mode").and_then(Json::as_str).unwrap_or("").to_owned(),
                        model: t.get("model").and_then(Json::as_str).unwrap_or("").to_owned(),
                        stop_reason: t.get("stopReason").and_then(Json::as_str).unwrap_or("").to_owned(),
                        images: match t.get("images") {
                            Some(Json::Arr(items)) => items.clone(),
                            _ => Vec::new(),
                        },
                    })
                })
                .collect(),
            _ => Vec::new(),
        };
        Some(Stored {
            id: s("sessionId")?,
            cwd: s("cwd").unwrap_or_default(),
            title: s("title").unwrap_or_default(),
            created_by_pid: n("createdByPid").unwrap_or(0) as u32,
            created_at_ms: n("createdAtMs").unwrap_or(0),
            updated_at_ms: n("updatedAtMs").unwrap_or(0),
            turns,
            tools: v.get("tools").filter(|t| !matches!(t, Json::Null)).cloned(),
        })
    }
}

/// Writes the session (whole file, through a rename so a concurrent reader never sees half).
pub fn save(s: &Stored) {
    let Some(dir) = dir(&s.id) else {
        return;
    };
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let tmp = dir.join(format!("{FILE}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, s.to_json().to_compact()).is_ok() {
        let _ = std::fs::rename(&tmp, dir.join(FILE));
    }
}

pub fn load(id: &str) -> Option<Stored> {
    let text = std::fs::read_to_string(dir(id)?.join(FILE)).ok()?;
    Stored::from_json(&Json::parse(&text).ok()?)
}

/// Every stored session, most recently updated first.
pub fn all() -> Vec<Stored> {
    let Some(root) = chats::data_root().map(|r| r.join("acp-sessions")) else {
        return Vec::new();
    };
    let mut found: Vec<Stored> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|id| load(&id))
        .collect();
    found.sort_by_key(|s| std::cmp::Reverse(s.updated_at_ms));
    found
}
