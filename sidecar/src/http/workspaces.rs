//! Where an HTTP turn runs. A request never chooses a folder: with `--workspace` every turn runs
//! there; without it each conversation gets a private folder of its own, so a client of the API
//! cannot make the CLI (which reads, writes and runs commands in its workspace) touch the
//! server's files. The folder is named by a hash of the conversation's first user message: every
//! request of a conversation re-sends that message, so they all land in the same folder, which is
//! what lets the session store match them (sessions are per workspace) and resume the CLI chat.

use std::path::{Path, PathBuf};

use crate::engine::sessions::request_hash;

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
                Ok(Workspaces::Private { root: root.canonicalize()?, _temp: None })
            }
            None => {
                // tempfile creates it 0700 with an unpredictable name.
                let temp = tempfile::Builder::new().prefix("cursor-bridge-workspaces-").tempdir()?;
                Ok(Workspaces::Private { root: temp.path().canonicalize()?, _temp: Some(temp) })
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

    /// The folder for a conversation whose first user message is `first_user_message`; `None`:
    /// the engine's default (the fixed workspace).
    pub fn for_conversation(&self, first_user_message: &str) -> std::io::Result<Option<PathBuf>> {
        match self {
            Workspaces::Fixed(_) => Ok(None),
            Workspaces::Private { root, .. } => {
                let dir = root.join(format!("c-{:016x}", request_hash(first_user_message)));
                match create_private(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
                Ok(Some(dir))
            }
        }
    }
}

#[cfg(unix)]
fn create_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn create_private(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir(dir)
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
    fn one_private_folder_per_conversation() {
        let state = tempfile::tempdir().unwrap();
        let w = Workspaces::private(Some(state.path())).unwrap();
        let a = w.for_conversation("hello").unwrap().unwrap();
        let again = w.for_conversation("hello").unwrap().unwrap();
        let b = w.for_conversation("something else").unwrap().unwrap();
        assert_eq!(a, again);
        assert_ne!(a, b);
        assert!(a.is_dir() && a.starts_with(&w.roots()[0]));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&a).unwrap().permissions().mode() & 0o777, 0o700);
            assert_eq!(std::fs::metadata(&w.roots()[0]).unwrap().permissions().mode() & 0o777, 0o700);
        }
    }

    #[test]
    fn a_fixed_workspace_is_the_engine_default() {
        let w = Workspaces::Fixed(PathBuf::from("/somewhere"));
        assert_eq!(w.for_conversation("x").unwrap(), None);
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
