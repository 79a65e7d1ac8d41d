//! Files and folders only this user may read: private folders (0700) for scratch workspaces and
//! state, and files (0600) written atomically so a reader never sees half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Create `dir` (and its parents) if needed, make it 0700, and return its canonical path.
pub fn private_dir(dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    restrict(dir, 0o700)?;
    dunce::canonicalize(dir)
}

/// Write `bytes` to `path` through a temporary file in the same folder and a rename; the file
/// is 0600 and its folder 0700.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}-{:x}", std::process::id(), super::ids::random_u64()));
    let result = (|| {
        let mut file = open_private(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(unix)]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}

#[cfg(not(unix))]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).create_new(true).open(path)
}

#[cfg(unix)]
fn restrict(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn restrict(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_files_and_folders_are_for_this_user_only() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("state").join("sessions.json");
        write_private(&file, b"{}").unwrap();
        write_private(&file, b"{\"again\":1}").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"{\"again\":1}");
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
        let leftovers: Vec<_> = std::fs::read_dir(file.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }
}
