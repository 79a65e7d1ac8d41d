//! Chat stores on disk, laid out like the real CLI's (docs/cursor-cli.md §6):
//! `<data>/chats/<md5(workspace)>/<chatId>/meta.json`, where `<data>` is `CURSOR_DATA_DIR` or
//! `$HOME/.cursor`. The double writes them so tests can simulate Cursor garbage-collecting a chat
//! (delete the folder) and, with `CURSOR_DOUBLE_UNKNOWN_RESUME=fail`, see `--resume` of a chat that
//! is gone fail.
//!
//! `create-chat` writes nothing under `chats/` (the real one doesn't either); it leaves a marker in
//! a double-only folder, `<data>/cursor-agent-double/created-chats/<id>`, so the first `--resume`
//! of a freshly minted id is accepted. All disk errors are ignored: the store is best-effort.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::json::{obj, Json};
use crate::{md5, settings, sha256};

pub fn data_root() -> Option<PathBuf> {
    settings::non_empty("CURSOR_DATA_DIR")
        .map(PathBuf::from)
        .or_else(|| settings::non_empty("HOME").map(|h| PathBuf::from(h).join(".cursor")))
}

/// A chat id must be a single path component.
pub fn safe_id(id: &str) -> bool {
    !id.is_empty() && !id.contains(['/', '\\']) && id != "." && id != ".."
}

pub fn chat_dir(id: &str, workspace: &str) -> Option<PathBuf> {
    let root = data_root().filter(|_| safe_id(id))?;
    // `CURSOR_DOUBLE_CHAT_STORE=sha256`: another CLI build's layout (the workspace folder named by
    // the SHA-256 of its path), for the bridge's calibration of its "is this chat gone?" check.
    let key = match settings::var("CURSOR_DOUBLE_CHAT_STORE").as_deref() {
        Some("sha256") => sha256::hex_digest(workspace.as_bytes()),
        _ => md5::hex_digest(workspace.as_bytes()),
    };
    Some(root.join("chats").join(key).join(id))
}

fn created_marker(id: &str) -> Option<PathBuf> {
    let root = data_root().filter(|_| safe_id(id))?;
    Some(root.join("cursor-agent-double").join("created-chats").join(id))
}

/// Remembers an id minted by `create-chat`.
pub fn note_created(id: &str) {
    if let Some(marker) = created_marker(id) {
        if let Some(parent) = marker.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(marker, b"");
    }
}

/// Whether `--resume <id>` names a chat the double knows for this workspace.
pub fn exists(id: &str, workspace: &str) -> bool {
    chat_dir(id, workspace).is_some_and(|d| d.join("meta.json").is_file())
        || created_marker(id).is_some_and(|m| m.is_file())
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Creates or updates the chat's `meta.json` (the chat is "used" by this turn).
pub fn touch(id: &str, workspace: &str, prompt: &str) {
    let Some(dir) = chat_dir(id, workspace) else {
        return;
    };
    let meta_path = dir.join("meta.json");
    let now = now_ms();
    let mut meta = std::fs::read_to_string(&meta_path).ok().and_then(|t| Json::parse(&t).ok()).unwrap_or_else(|| {
        let title: String =
            prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").chars().take(60).collect();
        obj([
            ("schemaVersion", 1u64.into()),
            ("createdAtMs", now.into()),
            ("updatedAtMs", now.into()),
            ("hasConversation", true.into()),
            ("title", title.into()),
            ("cwd", workspace.into()),
        ])
    });
    meta.set("updatedAtMs", now.into());
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(&meta_path, meta.to_compact());
    }
    if let Some(marker) = created_marker(id) {
        let _ = std::fs::remove_file(marker);
    }
}
