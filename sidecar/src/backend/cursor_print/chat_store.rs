//! The CLI's chat store, read only to answer one question: is a chat we are about to resume
//! still there? The layout is `<CURSOR_DATA_DIR or ~/.cursor>/chats/<md5 of the workspace
//! path>/<chat id>/` (docs/cursor-cli.md §6). What `--resume` of a gone chat does is unknown (it
//! may carry on with an empty history), so a missing folder is the evidence we act on; where the
//! layout is not there at all (another platform or CLI version) nothing is concluded.

use std::path::{Path, PathBuf};

use md5::{Digest, Md5};

fn data_root() -> Option<PathBuf> {
    std::env::var_os("CURSOR_DATA_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cursor")))
}

fn workspace_key(workspace: &Path) -> String {
    Md5::digest(workspace.to_string_lossy().as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The chat store exists and has no folder for `chat_id` in `workspace`.
pub fn is_gone(chat_id: &str, workspace: &Path) -> bool {
    is_gone_under(data_root().as_deref(), chat_id, workspace)
}

fn is_gone_under(root: Option<&Path>, chat_id: &str, workspace: &Path) -> bool {
    let Some(chats) = root.map(|r| r.join("chats")).filter(|c| c.is_dir()) else { return false };
    if chat_id.is_empty() || chat_id.contains(['/', '\\']) || chat_id == "." || chat_id == ".." {
        return false;
    }
    !chats.join(workspace_key(workspace)).join(chat_id).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_is_gone_only_when_the_store_is_there_without_it() {
        let root = tempfile::tempdir().unwrap();
        let ws = Path::new("/home/dev/project");
        // No store at all: the layout is unknown here, so nothing is concluded.
        assert!(!is_gone_under(Some(root.path()), "c-1", ws));
        let folder = root.path().join("chats").join(workspace_key(ws)).join("c-1");
        std::fs::create_dir_all(&folder).unwrap();
        assert!(!is_gone_under(Some(root.path()), "c-1", ws));
        assert!(is_gone_under(Some(root.path()), "c-2", ws));
        assert!(is_gone_under(Some(root.path()), "c-1", Path::new("/elsewhere")), "chats belong to their folder");
        assert!(!is_gone_under(None, "c-1", ws));
    }

    #[test]
    fn the_folder_name_is_the_md5_of_the_path() {
        // md5("/home/dev/project"), as the CLI (and its double) name the folder.
        assert_eq!(workspace_key(Path::new("/home/dev/project")), format!("{:x}", Md5::digest(b"/home/dev/project")));
        assert_eq!(workspace_key(Path::new("")), "d41d8cd98f00b204e9800998ecf8427e");
    }
}
