//! The one place that starts processes. Every child gets its own process group, piped stdio and a
//! guard that kills the whole group (and any descendant that left the group) when dropped, so a
//! cancelled or timed-out turn never leaves a CLI, a shell it started, or a zombie behind.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// What to run. Environment: inherited, then `env_remove`, then `env`.
#[derive(Debug, Clone, Default)]
pub struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(OsString, OsString)>,
    pub env_remove: Vec<OsString>,
    /// Linux: the kernel kills the child if the sidecar dies without cleaning up (SIGKILL, OOM).
    /// Only for processes that would misbehave as orphans (a warm spare would read end of input
    /// and run an empty prompt): the pre-exec hook turns a ~0.1 ms posix_spawn into a ~0.6 ms fork,
    /// which a turn's first token should not pay.
    pub die_with_parent: bool,
}

/// A running child in its own process group. Dropping it kills the group.
pub struct ChildProcess {
    child: Child,
    pid: u32,
    exited: bool,
}

/// Pids of direct children started through [`spawn`]. Anything else that is our child is an
/// orphan we adopted as subreaper (a grandchild that outlived its parent) — see [`sweep_orphans`].
fn tracked() -> &'static Mutex<HashSet<u32>> {
    static TRACKED: OnceLock<Mutex<HashSet<u32>>> = OnceLock::new();
    TRACKED.get_or_init(Default::default)
}

fn lock_tracked() -> std::sync::MutexGuard<'static, HashSet<u32>> {
    tracked().lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn spawn(spec: &SpawnSpec) -> io::Result<ChildProcess> {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Our guard kills the group; tokio's flag is a second line of defence for the leader.
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    for key in &spec.env_remove {
        cmd.env_remove(key);
    }
    for (key, value) in &spec.env {
        cmd.env(key, value);
    }
    #[cfg(unix)]
    {
        // A new process group per child: the CLI spawns shells and tools, and cancel must reach them.
        cmd.process_group(0);
    }
    #[cfg(target_os = "linux")]
    if spec.die_with_parent {
        // SAFETY: the closure runs in the forked child before exec and only calls prctl(2), which
        // is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                Ok(())
            });
        }
    }
    #[cfg(windows)]
    {
        // CREATE_NO_WINDOW: no console flashes up for each turn.
        cmd.creation_flags(0x0800_0000);
    }
    // Spawn and register under one lock: a concurrent orphan sweep must never see this child
    // running before it is known as ours (it would take it for an orphan and kill it).
    let mut tracked = lock_tracked();
    let child = cmd.spawn()?;
    let pid = child.id().ok_or_else(|| io::Error::other("child exited before it had a pid"))?;
    tracked.insert(pid);
    drop(tracked);
    Ok(ChildProcess { child, pid, exited: false })
}

impl ChildProcess {
    pub fn pid(&self) -> u32 {
        self.pid
    }
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Wait for the leader to exit. Whatever it left running in its group is killed afterwards:
    /// a finished turn owns no processes.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        self.mark_exited();
        Ok(status)
    }

    /// Still running (not exited, not killed)? Reaps it if it has exited.
    pub fn is_running(&mut self) -> bool {
        if self.exited {
            return false;
        }
        match self.child.try_wait() {
            Ok(None) => true,
            _ => {
                self.mark_exited();
                false
            }
        }
    }

    /// Ask politely (SIGTERM to the group), then SIGKILL everything after `grace`.
    pub async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.exited {
            return None;
        }
        let descendants = descendants_of(self.pid);
        signal_group(self.pid, Signal::Term);
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => {
                kill_all(self.pid, &descendants);
                self.mark_exited();
                Some(status)
            }
            _ => {
                kill_all(self.pid, &descendants);
                let status = self.child.wait().await.ok();
                self.mark_exited();
                status
            }
        }
    }

    fn mark_exited(&mut self) {
        if !self.exited {
            self.exited = true;
            // The group may still hold grandchildren (a background shell); they die with the turn.
            signal_group(self.pid, Signal::Kill);
            lock_tracked().remove(&self.pid);
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if !self.exited {
            let descendants = descendants_of(self.pid);
            kill_all(self.pid, &descendants);
            // tokio reaps the leader only when its next SIGCHLD arrives; stop tracking it and sweep
            // now, so no zombie lingers after a cancel or a dropped spare.
            lock_tracked().remove(&self.pid);
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn_blocking(sweep_orphans);
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

#[cfg(unix)]
fn signal_group(pgid: u32, signal: Signal) {
    let sig = match signal {
        Signal::Term => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    };
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
    unsafe {
        libc::kill(-(pgid as i32), sig);
    }
}

#[cfg(unix)]
fn signal_pid(pid: u32, signal: Signal) {
    let sig = match signal {
        Signal::Term => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    };
    // SAFETY: plain kill(2).
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

#[cfg(not(unix))]
fn signal_group(_pgid: u32, _signal: Signal) {}
#[cfg(not(unix))]
fn signal_pid(_pid: u32, _signal: Signal) {}

/// SIGKILL the group led by `leader` and every listed descendant (some may have left the group).
fn kill_all(leader: u32, descendants: &[u32]) {
    signal_group(leader, Signal::Kill);
    signal_pid(leader, Signal::Kill);
    for pid in descendants {
        signal_pid(*pid, Signal::Kill);
    }
}

/// Parent → children for every process we can see (Linux `/proc`); empty elsewhere.
fn process_tree() -> HashMap<u32, Vec<u32>> {
    let mut tree: HashMap<u32, Vec<u32>> = HashMap::new();
    for (pid, ppid, _) in proc_table() {
        tree.entry(ppid).or_default().push(pid);
    }
    tree
}

/// `(pid, ppid, state)` of every process in `/proc`.
fn proc_table() -> Vec<(u32, u32, char)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid …`; comm may contain spaces and parentheses, so split at the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let mut fields = rest.split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let Some(ppid) = fields.next().and_then(|s| s.parse().ok()) else { continue };
        out.push((pid, ppid, state));
    }
    out
}

/// All descendants of `pid` (children, grandchildren, …), found through parent links, so that
/// processes that moved to another group or session are still found.
pub fn descendants_of(pid: u32) -> Vec<u32> {
    let tree = process_tree();
    let mut out = Vec::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        if let Some(children) = tree.get(&p) {
            for c in children {
                out.push(*c);
                stack.push(*c);
            }
        }
    }
    out
}

/// Make this process a child subreaper (Linux), so grandchildren whose parent died are re-parented
/// to us instead of init, where [`sweep_orphans`] can kill and reap them.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) only sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Kill and reap every child of ours that [`spawn`] did not start: orphans adopted as subreaper.
/// The sidecar starts nothing else, so such a process is always left over from a finished turn.
/// Returns how many it found.
pub fn sweep_orphans() -> usize {
    #[cfg(unix)]
    {
        let me = std::process::id();
        // Hold the lock while deciding and killing, so no child can be spawned (and be mistaken
        // for an orphan) in between; reap after releasing it.
        let orphans: Vec<u32> = {
            let tracked = lock_tracked();
            let orphans: Vec<(u32, char)> = proc_table()
                .into_iter()
                .filter(|(pid, ppid, _)| *ppid == me && !tracked.contains(pid))
                .map(|(pid, _, state)| (pid, state))
                .collect();
            for (pid, state) in &orphans {
                if *state != 'Z' {
                    for d in descendants_of(*pid) {
                        signal_pid(d, Signal::Kill);
                    }
                    signal_pid(*pid, Signal::Kill);
                }
            }
            orphans.into_iter().map(|(pid, _)| pid).collect()
        };
        for pid in &orphans {
            // SAFETY: waitpid on a specific pid that is our child and not owned by tokio.
            unsafe {
                let mut status = 0;
                // A just-killed process may need a moment to become a zombie.
                for _ in 0..50 {
                    if libc::waitpid(*pid as i32, &mut status, libc::WNOHANG) != 0 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
        orphans.len()
    }
    #[cfg(not(unix))]
    {
        0
    }
}

/// How many children started through [`spawn`] are alive (for `status` and tests).
pub fn live_children() -> usize {
    lock_tracked().len()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn sh(script: &str) -> SpawnSpec {
        SpawnSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            ..Default::default()
        }
    }

    fn alive(pid: u32) -> bool {
        // A zombie counts as dead: it no longer runs.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                let state = s.rfind(')').and_then(|i| s[i + 1..].split_whitespace().next());
                state != Some("Z")
            })
            .unwrap_or(false)
    }

    #[tokio::test]
    async fn drop_kills_the_whole_group_including_grandchildren() {
        let mut child = spawn(&sh("sleep 30 & echo $!; wait")).unwrap();
        let mut out = tokio::io::BufReader::new(child.take_stdout().unwrap());
        let mut line = String::new();
        tokio::io::AsyncBufReadExt::read_line(&mut out, &mut line).await.unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let leader = child.pid();
        assert!(alive(grandchild));
        drop(child);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!alive(grandchild), "grandchild {grandchild} survived");
        assert!(!alive(leader), "leader {leader} survived");
    }

    #[tokio::test]
    async fn terminate_escalates_when_sigterm_is_ignored() {
        let mut child = spawn(&sh("trap '' TERM; echo ready; sleep 30")).unwrap();
        let mut out = tokio::io::BufReader::new(child.take_stdout().unwrap());
        let mut line = String::new();
        tokio::io::AsyncBufReadExt::read_line(&mut out, &mut line).await.unwrap();
        let started = std::time::Instant::now();
        let status = child.terminate(Duration::from_millis(200)).await;
        assert!(status.is_some());
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!alive(child.pid()));
    }

    #[tokio::test]
    async fn descendants_are_found_through_parent_links() {
        // The grandchild moves to its own session (setsid), leaving the group: parent links still find it.
        let mut child = spawn(&sh("setsid sleep 30 & echo $!; wait")).unwrap();
        let mut out = tokio::io::BufReader::new(child.take_stdout().unwrap());
        let mut line = String::new();
        tokio::io::AsyncBufReadExt::read_line(&mut out, &mut line).await.unwrap();
        let escaped: u32 = line.trim().parse().unwrap();
        let d = descendants_of(child.pid());
        assert!(d.contains(&escaped), "{d:?}");
        drop(child);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!alive(escaped), "an escaped grandchild survived the drop");
    }
}
