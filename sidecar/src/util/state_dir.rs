//! Where the state folder (sessions, the model cache, logs, scratch and `serve`'s conversation
//! folders) lives when `CURSOR_BRIDGE_STATE_DIR` does not say. Linux: the XDG state folder
//! (`~/.local/state`). macOS: Application Support, because Caches is for what can be rebuilt and
//! the OS and cleaners purge it, which would lose every session; a folder an older sidecar left in
//! Caches is moved over once. Elsewhere (Windows): the local app-data folder.

use std::path::{Path, PathBuf};

pub const APP: &str = "cursor-bridge";

/// What choosing the folder did, to log once logging (which lives in that folder) is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Moved {
    /// Nothing to move.
    Nothing,
    /// An older sidecar's folder was moved to the new place.
    From(PathBuf),
    /// An older sidecar's folder could not be moved: it is used where it is, so no session is lost.
    KeptAt { old: PathBuf, error: String },
}

/// The state folder, from `CURSOR_BRIDGE_STATE_DIR` (`explicit`), else this platform's default.
pub fn choose(explicit: Option<PathBuf>) -> (Option<PathBuf>, Moved) {
    if let Some(dir) = explicit {
        return (Some(dir), Moved::Nothing);
    }
    #[cfg(target_os = "macos")]
    {
        match dirs::home_dir() {
            Some(home) => {
                let (dir, moved) = macos(&home);
                (Some(dir), moved)
            }
            None => (None, Moved::Nothing),
        }
    }
    #[cfg(not(target_os = "macos"))]
    {
        (dirs::state_dir().or_else(dirs::cache_dir).map(|d| d.join(APP)), Moved::Nothing)
    }
}

/// macOS, for a home folder: `~/Library/Application Support/cursor-bridge`, with the folder of
/// sidecars before it (`~/Library/Caches/cursor-bridge`) moved there first. Compiled everywhere so
/// its tests run on every OS.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub fn macos(home: &Path) -> (PathBuf, Moved) {
    let library = home.join("Library");
    let new = library.join("Application Support").join(APP);
    let old = library.join("Caches").join(APP);
    let moved = move_once(&old, &new);
    match moved {
        Moved::KeptAt { .. } => (old, moved),
        _ => (new, moved),
    }
}

/// Moves `old` to `new` when only `old` exists. A rename keeps the files' modes (0600 sessions in
/// a 0700 folder) and is atomic, so two sidecars starting together cannot split the sessions: the
/// one that loses the race finds `new` already there.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
fn move_once(old: &Path, new: &Path) -> Moved {
    if new.exists() || !old.is_dir() {
        return Moved::Nothing;
    }
    let renamed = match new.parent() {
        Some(parent) => std::fs::create_dir_all(parent).and_then(|()| std::fs::rename(old, new)),
        None => std::fs::rename(old, new),
    };
    match renamed {
        Ok(()) => {
            // An older sidecar still running (another window, before its reload) keeps writing
            // to the old path: a link there sends its sessions and folders to the new one
            // instead of a second, forgotten copy.
            #[cfg(unix)]
            if let Err(e) = std::os::unix::fs::symlink(new, old) {
                tracing::warn!(error = %e, old = %old.display(), "could not leave a link at the old state folder");
            }
            Moved::From(old.to_path_buf())
        }
        Err(_) if new.exists() => Moved::Nothing,
        Err(e) => Moved::KeptAt { old: old.to_path_buf(), error: e.to_string() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn on_macos_the_state_folder_is_application_support_not_caches() {
        let home = tempfile::tempdir().unwrap();
        let (dir, moved) = macos(home.path());
        assert_eq!(dir, home.path().join("Library/Application Support/cursor-bridge"));
        assert_eq!(moved, Moved::Nothing);
    }

    #[test]
    fn on_macos_an_older_sidecars_folder_in_caches_is_moved_with_its_sessions() {
        let home = tempfile::tempdir().unwrap();
        let old = home.path().join("Library/Caches/cursor-bridge");
        write(&old.join("sessions.json"), "{\"sessions\":[]}");
        let (dir, moved) = macos(home.path());
        assert_eq!(dir, home.path().join("Library/Application Support/cursor-bridge"));
        assert_eq!(moved, Moved::From(old.clone()));
        assert_eq!(std::fs::read_to_string(dir.join("sessions.json")).unwrap(), "{\"sessions\":[]}");
        assert!(!old.is_dir() || old.is_symlink(), "moved, not copied");
        // An older sidecar that still writes to the old path writes into the new folder.
        #[cfg(unix)]
        {
            std::fs::write(old.join("written-by-an-older-sidecar"), "x").unwrap();
            assert!(dir.join("written-by-an-older-sidecar").is_file());
        }
        // Once moved, the next start uses it and moves nothing.
        assert_eq!(macos(home.path()), (dir, Moved::Nothing));
    }

    #[test]
    fn on_macos_a_folder_already_in_application_support_wins_over_an_old_one() {
        let home = tempfile::tempdir().unwrap();
        let new = home.path().join("Library/Application Support/cursor-bridge");
        write(&new.join("sessions.json"), "new");
        write(&home.path().join("Library/Caches/cursor-bridge/sessions.json"), "old");
        let (dir, moved) = macos(home.path());
        assert_eq!((dir.clone(), moved), (new, Moved::Nothing));
        assert_eq!(std::fs::read_to_string(dir.join("sessions.json")).unwrap(), "new");
    }

    #[test]
    fn on_macos_an_old_folder_that_cannot_be_moved_is_used_where_it_is() {
        let home = tempfile::tempdir().unwrap();
        let old = home.path().join("Library/Caches/cursor-bridge");
        write(&old.join("sessions.json"), "old");
        // A file where Application Support should be: the folder cannot be made (even by root).
        write(&home.path().join("Library/Application Support"), "not a folder");
        let (dir, moved) = macos(home.path());
        assert_eq!(dir, old);
        assert!(matches!(moved, Moved::KeptAt { .. }), "{moved:?}");
        assert_eq!(std::fs::read_to_string(dir.join("sessions.json")).unwrap(), "old");
    }
}
