//! What a probe learnt about a CLI build, kept in the state folder (`cli-probe.json`) so every
//! window's backend acts on it until the build changes: the file is read again whenever it
//! changed, and a note holds only for the build identity it was taken on
//! ([`CliCommand::build_id`]), so an updated CLI starts from the bridge's defaults again.
//!
//! What the backends do with it: ACP sessions that did not list our tools send the client's
//! tools through the prompt protocol from the first turn (no 5 s wait), a build that lists them
//! late is waited for as long as it took (bounded), a build whose ACP mode did not start sends
//! new chats to print mode for a while, and print mode's chat-store check starts calibrated.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::backend::cursor::discovery::CliCommand;
use crate::util::sync::lock;

/// Builds remembered at most (a person may switch between a few CLIs).
const KEPT_BUILDS: usize = 8;
/// The longest a session's tool listing is waited for, however late the probe saw it.
pub const LONGEST_TOOLS_WAIT: Duration = Duration::from_secs(20);

/// How a build's new session took the MCP server it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "listed")]
pub enum SessionTools {
    /// It listed our tools this long after `session/new` answered.
    Within { ms: u64 },
    /// It never listed them within the probe's wait.
    Never,
}

/// One build's notes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Learnt {
    /// [`CliCommand::build_id`] of the build probed.
    pub build: String,
    pub version: Option<String>,
    /// When (seconds since the epoch).
    pub probed_at: u64,
    /// ACP mode did not start with it: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acp_start_failed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_tools: Option<SessionTools>,
    /// A print-mode chat was where the chat-store check looks (`false`: elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_store_found: Option<bool>,
}

impl Learnt {
    pub fn new(cli: &CliCommand, version: Option<String>) -> Learnt {
        let probed_at = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Learnt { build: cli.build_id(), version, probed_at, ..Learnt::default() }
    }

    /// How long ago it was probed (zero for a clock that went back).
    pub fn age(&self) -> Duration {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Duration::from_secs(now.saturating_sub(self.probed_at))
    }

    /// How long a new session of this build may take to list our tools before the bridge
    /// concludes it will not: the default, or what this build took (doubled, bounded).
    pub fn tools_wait(&self, default: Duration) -> Duration {
        match self.session_tools {
            Some(SessionTools::Within { ms }) => {
                default.max(Duration::from_millis(ms.saturating_mul(2))).min(LONGEST_TOOLS_WAIT)
            }
            _ => default,
        }
    }
}

/// The notes file, read when it changed.
pub struct Notes {
    path: Option<PathBuf>,
    read: Mutex<Option<(Option<SystemTime>, Vec<Learnt>)>>,
}

impl Notes {
    pub fn new(path: Option<PathBuf>) -> Notes {
        Notes { path, read: Mutex::new(None) }
    }

    /// What was learnt about `cli`'s build, if it was probed.
    pub fn of(&self, cli: &CliCommand) -> Option<Learnt> {
        let path = self.path.as_ref()?;
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let mut read = lock(&self.read);
        if read.as_ref().is_none_or(|(at, _)| *at != modified) {
            *read = Some((modified, load(path)));
        }
        let build = cli.build_id();
        read.as_ref().and_then(|(_, all)| all.iter().find(|l| l.build == build).cloned())
    }

    /// Keep `learnt` (replacing the same build's older notes). `false` when there is no state
    /// folder or it could not be written (the report says so; nothing else depends on it).
    pub fn keep(&self, learnt: Learnt) -> bool {
        let Some(path) = &self.path else { return false };
        let mut all = load(path);
        all.retain(|l| l.build != learnt.build);
        all.insert(0, learnt);
        all.truncate(KEPT_BUILDS);
        match write(path, &all) {
            Ok(()) => {
                lock(&self.read).take();
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, file = %path.display(), "cannot keep what the probe learnt");
                false
            }
        }
    }
}

fn load(path: &Path) -> Vec<Learnt> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            // A damaged file only loses the notes: the bridge acts on its defaults.
            tracing::warn!(error = %e, file = %path.display(), "ignoring an unreadable probe notes file");
            Vec::new()
        }),
        Err(_) => Vec::new(),
    }
}

/// Written whole beside the old file, then renamed over it, so a reader never sees half.
fn write(path: &Path, all: &[Learnt]) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(all).map_err(std::io::Error::other)?;
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(dir: &Path, name: &str) -> CliCommand {
        let program = dir.join(name);
        std::fs::write(&program, name).unwrap();
        CliCommand::plain(program)
    }

    #[test]
    fn notes_hold_for_their_build_only_and_survive_a_new_reader() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cli-probe.json");
        let (a, b) = (cli(dir.path(), "agent-a"), cli(dir.path(), "agent-b"));
        let notes = Notes::new(Some(file.clone()));
        assert_eq!(notes.of(&a), None, "nothing probed yet");
        let learnt =
            Learnt { session_tools: Some(SessionTools::Never), ..Learnt::new(&a, Some("2026.11.20-x".into())) };
        assert!(notes.keep(learnt.clone()));
        assert_eq!(notes.of(&a), Some(learnt.clone()));
        assert_eq!(notes.of(&b), None, "another build");
        // Another window's backend reads the same file.
        assert_eq!(Notes::new(Some(file.clone())).of(&a), Some(learnt));
        // The CLI updated itself: its notes no longer apply.
        std::fs::write(&a.program, "a newer and longer build").unwrap();
        assert_eq!(notes.of(&a), None);
        // A damaged file loses the notes, nothing else.
        std::fs::write(&file, b"{not json").unwrap();
        assert_eq!(Notes::new(Some(file)).of(&b), None);
        assert!(!Notes::new(None).keep(Learnt::default()), "no state folder: nothing kept");
    }

    #[test]
    fn a_late_listing_is_waited_for_as_long_as_it_took_bounded() {
        let five = Duration::from_secs(5);
        let with = |t: Option<SessionTools>| Learnt { session_tools: t, ..Learnt::default() }.tools_wait(five);
        assert_eq!(with(None), five);
        assert_eq!(with(Some(SessionTools::Never)), five);
        assert_eq!(with(Some(SessionTools::Within { ms: 300 })), five);
        assert_eq!(with(Some(SessionTools::Within { ms: 4_000 })), Duration::from_secs(8));
        assert_eq!(with(Some(SessionTools::Within { ms: 60_000 })), LONGEST_TOOLS_WAIT);
    }
}
