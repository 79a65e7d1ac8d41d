//! Where an HTTP turn runs. A request never chooses a folder: with `--workspace` every turn runs
//! there; without it each conversation gets a private, empty folder of its own under one root
//! (the engine makes it with the conversation's session and finds it again with the session),
//! so two clients never share a folder, and a client's CLI starts in a folder with nothing of
//! the server's in it. (The CLI's own tools can still reach anything this user can outside that
//! folder; use `--mode ask`, the default, for clients you do not trust.)

use std::path::{Path, PathBuf};

pub enum Workspaces {
    /// `--workspace DIR`: every turn runs there (the engine's default folder).
    Fixed(PathBuf),
    /// One private folder per conversation under `root` (0700, owned by this server).
    Private {
        root: PathBuf,
        /// Removed when the server exits, when `root` is a temporary folder (no state folder).
        _temp: Option<tempfile::TempDir>,
    },
}

impl Workspaces {
    /// Private folders under `<state>/http-workspaces` (kept, like the sessions that point into
    /// them, across restarts), else under a temporary folder that lives as long as the server.
    pub fn private(state_dir: Option<&Path>) -> std::io::Result<Self> {
        match state_dir {
            Some(state) => {
                let root = state.join("http-workspaces");
                std::fs::create_dir_all(&root)?;
                restrict(&root)?;
                Ok(Workspaces::Private { root: dunce::canonicalize(&root)?, _temp: None })
            }
            None => {
                // tempfile creates it 0700 with an unpredictable name.
                let temp = tempfile::Builder::new().prefix("cursor-bridge-workspaces-").tempdir()?;
                Ok(Workspaces::Private { root: dunce::canonicalize(temp.path())?, _temp: Some(temp) })
            }
        }
    }

    /// The folders to give `initialize`: turns may only run inside them.
    pub fn roots(&self) -> Vec<PathBuf> {
        match self {
            Workspaces::Fixed(dir) => vec![dir.clone()],
            Workspaces::Private { root, .. } => vec![root.clone()],
        }
    }
}

#[cfg(unix)]
fn restrict(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

#[cfg(not(unix))]
fn restrict(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_private_root_is_for_this_user_only() {
        let state = tempfile::tempdir().unwrap();
        let w = Workspaces::private(Some(state.path())).unwrap();
        let root = w.roots()[0].clone();
        assert!(root.is_dir() && root.starts_with(dunce::canonicalize(state.path()).unwrap()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&root).unwrap().permissions().mode() & 0o777, 0o700);
        }
    }

    #[test]
    fn a_fixed_workspace_is_the_engine_default() {
        let w = Workspaces::Fixed(PathBuf::from("/somewhere"));
        assert_eq!(w.roots(), vec![PathBuf::from("/somewhere")]);
    }

    #[test]
    fn without_a_state_folder_the_root_is_temporary() {
        let w = Workspaces::private(None).unwrap();
        let root = w.roots()[0].clone();
        assert!(root.is_dir());
        drop(w);
        assert!(!root.exists());
    }
}
