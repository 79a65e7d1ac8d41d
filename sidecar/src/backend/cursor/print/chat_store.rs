//! The CLI's chat store, read only to answer one question: is a chat we are about to resume
//! still there? The layout is `<CURSOR_DATA_DIR or ~/.cursor>/chats/<md5 of the workspace
//! path>/<chat id>/` (docs/cursor-cli.md §6). What `--resume` of a gone chat does is unknown (it
//! may carry on with an empty history), so a missing folder is the evidence we act on; where the
//! layout is not there at all (another platform or CLI version) nothing is concluded.
//!
//! The layout is an observation, not a contract, so the check is calibrated per CLI build
//! ([`Calibration`]): after a turn that created or resumed a chat succeeds, its folder must be where
//! the check looks. A build whose chats are elsewhere is never checked again (a different layout
//! would otherwise make every follow-up a replay); until a build is calibrated, a chat counts as
//! gone only when this workspace's folder of the layout is there.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

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

/// A CLI build, told apart by its program file (an update replaces it, or the link to it).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Build {
    program: PathBuf,
    modified: Option<SystemTime>,
}

impl Build {
    fn of(program: &Path) -> Build {
        let program = dunce::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
        let modified = std::fs::metadata(&program).and_then(|m| m.modified()).ok();
        Build { program, modified }
    }
}

/// What a successful turn showed about a build's chat store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Its chat was where the check looks: a missing folder means a gone chat.
    Found,
    /// Its chat was not: this build keeps chats elsewhere, the check says nothing about it.
    Elsewhere,
}

/// Whether the chat store check can be trusted with the CLI build in use.
#[derive(Debug, Default)]
pub struct Calibration(Mutex<Option<(Build, Verdict)>>);

impl Calibration {
    /// `chat_id` is gone from `workspace`'s chats, as far as this build's store can tell.
    pub fn is_gone(&self, program: &Path, chat_id: &str, workspace: &Path) -> bool {
        self.is_gone_under(data_root().as_deref(), &Build::of(program), chat_id, workspace)
    }

    /// A turn of `program` that used `chat_id` in `workspace` succeeded: see whether its folder is
    /// where the check looks.
    pub fn learn(&self, program: &Path, chat_id: &str, workspace: &Path) {
        self.learn_under(data_root().as_deref(), Build::of(program), chat_id, workspace)
    }

    /// What `doctor --probe` found for `program`'s build (its chat was where the check looks, or
    /// not), taken while this backend has not seen a turn of that build itself.
    pub fn adopt(&self, program: &Path, found: bool) {
        let build = Build::of(program);
        let mut known = crate::util::sync::lock(&self.0);
        if known.as_ref().is_none_or(|(b, _)| *b != build) {
            *known = Some((build, if found { Verdict::Found } else { Verdict::Elsewhere }));
        }
    }

    fn verdict(&self, build: &Build) -> Option<Verdict> {
        crate::util::sync::lock(&self.0).as_ref().filter(|(b, _)| b == build).map(|(_, v)| *v)
    }

    fn is_gone_under(&self, root: Option<&Path>, build: &Build, chat_id: &str, workspace: &Path) -> bool {
        match self.verdict(build) {
            Some(Verdict::Elsewhere) => false,
            Some(Verdict::Found) => is_gone_under(root, chat_id, workspace),
            // Not calibrated yet: only with this workspace's folder there as evidence of the layout.
            None => {
                root.is_some_and(|r| r.join("chats").join(workspace_key(workspace)).is_dir())
                    && is_gone_under(root, chat_id, workspace)
            }
        }
    }

    fn learn_under(&self, root: Option<&Path>, build: Build, chat_id: &str, workspace: &Path) {
        let seen = root.is_some_and(|r| r.join("chats").join(workspace_key(workspace)).join(chat_id).is_dir());
        let verdict = if seen { Verdict::Found } else { Verdict::Elsewhere };
        let mut known = crate::util::sync::lock(&self.0);
        let before = known.as_ref().filter(|(b, _)| *b == build).map(|(_, v)| *v);
        // Once elsewhere, a build stays so: a chat found later may be an older build's folder.
        if before == Some(Verdict::Elsewhere) || before == Some(verdict) {
            return;
        }
        match verdict {
            Verdict::Found => {
                tracing::info!(cli = %build.program.display(), "the CLI keeps its chats where the bridge looks")
            }
            Verdict::Elsewhere => tracing::warn!(
                cli = %build.program.display(),
                chat = chat_id,
                "the CLI does not keep its chats where the bridge looks (another store layout); lost chats are \
                 now noticed only by the chat id the CLI reports"
            ),
        }
        *known = Some((build, verdict));
    }
}

/// Whether `chat_id`, which a turn in `workspace` just used, is where the check looks (`None`:
/// there is no chat store here at all: no `HOME`, no `CURSOR_DATA_DIR`).
pub fn kept_where_looked(chat_id: &str, workspace: &Path) -> Option<bool> {
    let root = data_root()?;
    Some(root.join("chats").join(workspace_key(workspace)).join(chat_id).is_dir())
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

    /// (the store's layout, whether the chat resumed later is gone there, what the check says
    /// after a successful turn on another chat)
    #[test]
    fn the_check_is_trusted_only_where_a_successful_turns_chat_was_found() {
        let ws = Path::new("/home/dev/project");
        // Non-capturing, so both are one `fn` type.
        let md5 =
            |root: &Path, id: &str| root.join("chats").join(workspace_key(Path::new("/home/dev/project"))).join(id);
        let sha = |root: &Path, id: &str| root.join("chats").join("0a1b2c-another-key").join(id);
        type Layout = fn(&Path, &str) -> PathBuf;
        let cases: [(&str, Layout, bool, bool); 4] = [
            ("the layout the check knows, chat gone", md5, false, true),
            ("the layout the check knows, chat there", md5, true, false),
            ("another layout, chat gone", sha, false, false),
            ("another layout, chat there", sha, true, false),
        ];
        for (what, layout, resumed_is_there, gone) in cases {
            let root = tempfile::tempdir().unwrap();
            let program = root.path().join("agent");
            std::fs::write(&program, "").unwrap();
            let build = Build::of(&program);
            let calibration = Calibration::default();
            std::fs::create_dir_all(layout(root.path(), "first")).unwrap();
            if resumed_is_there {
                std::fs::create_dir_all(layout(root.path(), "resumed")).unwrap();
            }
            calibration.learn_under(Some(root.path()), build.clone(), "first", ws);
            assert_eq!(calibration.is_gone_under(Some(root.path()), &build, "resumed", ws), gone, "{what}");
        }
    }

    #[test]
    fn an_uncalibrated_build_is_trusted_only_with_this_workspaces_folder_there() {
        let root = tempfile::tempdir().unwrap();
        let ws = Path::new("/home/dev/project");
        let build = Build { program: "/bin/agent".into(), modified: None };
        let calibration = Calibration::default();
        std::fs::create_dir_all(root.path().join("chats").join("another-layout").join("c-1")).unwrap();
        assert!(!calibration.is_gone_under(Some(root.path()), &build, "c-1", ws), "no folder of this layout");
        std::fs::create_dir_all(root.path().join("chats").join(workspace_key(ws)).join("c-2")).unwrap();
        assert!(calibration.is_gone_under(Some(root.path()), &build, "c-1", ws));
        // Another build (the CLI updated) is calibrated afresh.
        calibration.learn_under(Some(root.path()), build.clone(), "c-3", ws);
        assert!(!calibration.is_gone_under(Some(root.path()), &build, "c-1", ws), "this build keeps chats elsewhere");
        let updated = Build { program: "/bin/agent".into(), modified: Some(SystemTime::UNIX_EPOCH) };
        assert!(calibration.is_gone_under(Some(root.path()), &updated, "c-1", ws));
    }

    #[test]
    fn the_folder_name_is_the_md5_of_the_path() {
        // md5("/home/dev/project"), as the CLI (and its double) name the folder.
        assert_eq!(workspace_key(Path::new("/home/dev/project")), format!("{:x}", Md5::digest(b"/home/dev/project")));
        assert_eq!(workspace_key(Path::new("")), "d41d8cd98f00b204e9800998ecf8427e");
    }
}
