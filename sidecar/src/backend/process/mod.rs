//! The one place that starts processes. Every child gets its own process group, piped stdio and a
//! guard that kills the whole group (and any descendant that left the group) when dropped, so a
//! cancelled or timed-out turn never leaves a CLI, a shell it started, or a zombie behind.
//!
//! How each guarantee is kept on Linux, macOS and Windows, and where each is tested, is the table
//! in docs/platforms.md. In short: Linux as below; macOS process groups and parent links as on
//! Linux (libproc instead of `/proc`, see `table.rs`), no subreaper, and a watchdog per child
//! instead of the parent-death signal (`watchdog.rs`); Windows a Job Object per child that kills
//! the tree when asked or when the sidecar's handle closes (`job.rs`).
//!
//! Linux, the rules this folder keeps (docs/architecture.md, invariants):
//!
//! * **Every child dies with the sidecar.** Each gets `PR_SET_PDEATHSIG` = SIGKILL, so a sidecar
//!   killed without cleaning up (SIGKILL, OOM, a crash) takes its children along. The child arms
//!   it itself before exec, started without a fork of the sidecar (`vfork.rs`). The kernel sends it
//!   when the *thread* that forked exits, not the process: so never start a process from a
//!   thread that may end before the child. tokio's runtime workers (async tasks) and the main
//!   thread live as long as the sidecar; tokio's blocking pool (`spawn_blocking`) ends threads
//!   that sat idle for 10 s, which would SIGKILL a turn in mid-answer. Start processes from async
//!   code only (`tidy::no_process_starts_on_a_blocking_pool_thread` checks the call sites).
//! * **Orphans are attributed before they are killed.** We are a child subreaper: a grandchild
//!   whose parent exited (a dev server a turn's shell started) is re-parented to us. The sweep
//!   leaves alone every orphan a running turn may own (see [`sweep_orphans`]).
//! * **No signal reaches a reused pid.** The leader is signalled through a pidfd opened right after
//!   spawn; its group only while the leader is not reaped (a zombie still holds its pid, which is
//!   the group id, so no other group can have it); processes found in `/proc` through a pidfd
//!   opened first and then checked against the start time seen. Without pidfds (Linux < 5.3, and
//!   other Unix) it falls back to kill(2), and the group is signalled after the leader is reaped,
//!   as before.
//!
//! The folder: `start.rs` starts a child (`SpawnSpec`, [`spawn`]), `child.rs` is the running child
//! and what ends it (`ChildProcess`), `registry.rs` which children are ours and what each is doing,
//! `sweep.rs` the orphans (subreaper, sweep, [`end_orphans`] at shutdown), `signal.rs` signals
//! that never reach a reused pid (pidfd), `table.rs` the process table; per platform `vfork.rs`
//! (Linux: no fork of the sidecar), `watchdog.rs` (macOS: parent-death watchdog), `job.rs`
//! (Windows: Job Objects); `memory.rs` whether memory is tight.

mod child;
#[cfg(windows)]
mod job;
mod memory;
mod registry;
mod signal;
mod start;
mod sweep;
mod table;
#[cfg(target_os = "linux")]
mod vfork;
#[cfg(unix)]
mod watchdog;

pub use child::{ChildInput, ChildProcess, TreeMark};
pub use memory::memory_is_tight;
pub use registry::live_children;
pub use start::{spawn, SpawnSpec};
pub use sweep::{become_subreaper, end_orphans, stopping, sweep_orphans, STOP_ORPHANS_WITHIN};
use table::{descendants, read_proc};

/// Whether this platform's process table can be read (Linux, macOS): where it cannot (Windows),
/// [`descendants_of`] finds nothing and [`pid_runs`] says no.
pub const SEES_PROCESSES: bool = cfg!(any(target_os = "linux", target_os = "macos"));

/// `pid` still runs (a zombie, exited but not reaped, does not).
pub fn pid_runs(pid: u32) -> bool {
    read_proc(pid).is_some_and(|p| p.state != 'Z')
}

/// All descendants of `pid` (children, grandchildren, …).
pub fn descendants_of(pid: u32) -> Vec<u32> {
    descendants(pid).into_iter().map(|p| p.pid).collect()
}

/// What the tests of this folder share, and the print backend's spare tests use. On macOS every
/// spawn in these tests goes through the watchdog, so they also check it does not get in the way.
#[cfg(all(test, unix))]
pub(crate) mod tests {
    use std::time::Duration;

    use super::*;

    pub(crate) fn sh(script: &str) -> SpawnSpec {
        SpawnSpec { program: "/bin/sh".into(), args: vec!["-c".into(), script.into()], ..Default::default() }
    }

    pub(crate) fn alive(pid: u32) -> bool {
        // A zombie counts as dead: it no longer runs.
        read_proc(pid).is_some_and(|p| p.state != 'Z')
    }

    pub(crate) async fn first_line(child: &mut ChildProcess) -> String {
        let mut out = tokio::io::BufReader::new(child.take_stdout().unwrap());
        let mut line = String::new();
        tokio::io::AsyncBufReadExt::read_line(&mut out, &mut line).await.unwrap();
        line
    }

    /// A child whose shell left a background job behind (the job's parent exited, the child runs
    /// on): the job is an orphan of ours, in the child's group. Returns the child and the job.
    #[cfg(target_os = "linux")]
    pub(crate) async fn child_with_an_orphaned_job() -> (ChildProcess, u32) {
        become_subreaper();
        let mut child = spawn(&sh("sh -c 'sleep 30 & echo $!'; exec sleep 30")).unwrap();
        let job: u32 = first_line(&mut child).await.trim().parse().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while read_proc(job).is_none_or(|p| p.ppid != std::process::id()) {
            assert!(std::time::Instant::now() < deadline, "the job was not re-parented to us");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        (child, job)
    }

    pub(crate) async fn gone_within(pid: u32, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while alive(pid) {
            if std::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    #[tokio::test]
    async fn descendants_are_found_through_parent_links() {
        // The grandchild moves to its own session (setsid(2) through perl, which Linux and macOS
        // both have, unlike the setsid command), leaving the group: parent links still find it.
        let mut child = spawn(&sh("perl -MPOSIX -e 'POSIX::setsid(); exec @ARGV' sleep 30 & echo $!; wait")).unwrap();
        let escaped: u32 = first_line(&mut child).await.trim().parse().unwrap();
        let d = descendants_of(child.pid());
        assert!(d.contains(&escaped), "{d:?}");
        drop(child);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!alive(escaped), "an escaped grandchild survived the drop");
    }
}
