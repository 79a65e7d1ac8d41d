//! A running child: its pipes, its process group (or Job Object), and what ends them. Dropping a
//! [`ChildProcess`] kills its whole tree; waiting for it, or terminating it, kills what its leader
//! left running. It is made by `start.rs` and listed in the registry until its leader is reaped.

use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::process::ExitStatus;
use std::task::{ready, Context, Poll};
use std::time::Duration;

#[cfg(target_os = "linux")]
use tokio::io::unix::AsyncFd;
use tokio::io::AsyncWrite;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

#[cfg(windows)]
use super::job;
use super::registry::{registry, Role};
#[cfg(target_os = "linux")]
use super::signal::pidfd;
use super::signal::{signal_group, signal_pid, signal_seen, Signal};
use super::sweep::{kill_orphan_tree, sweep_if_deferred, sweep_in_background};
use super::table::{descendants, descendants_in, proc_table, Proc};
#[cfg(target_os = "linux")]
use super::vfork;
#[cfg(unix)]
use super::watchdog;
use crate::util::sync::OnDrop;

/// A child's stdin. Writing and shutting down work as on tokio's `ChildStdin`; when a watchdog
/// guards the child, shutting it down or dropping it also tells the watchdog the input is
/// complete (so the CLI sees end-of-input only when the sidecar means it, see `watchdog.rs`).
pub struct ChildInput {
    pub(super) inner: ChildStdin,
    #[cfg(unix)]
    pub(super) release: Option<watchdog::Release>,
}

impl ChildInput {
    fn release(&mut self) {
        #[cfg(unix)]
        if let Some(mut release) = self.release.take() {
            release.send();
        }
    }
}

impl AsyncWrite for ChildInput {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = ready!(Pin::new(&mut self.inner).poll_shutdown(cx));
        self.release();
        Poll::Ready(result)
    }
}

impl Drop for ChildInput {
    fn drop(&mut self) {
        // The sidecar's own handle closes right after this (the field drops next): the CLI sees
        // end-of-input once both are closed, in either order.
        self.release();
    }
}

/// A running child in its own process group. Dropping it kills the group.
pub struct ChildProcess {
    /// `None` only inside `drop`, which hands it to a task that reaps it.
    child: Option<Leader>,
    pub(super) stdin: Option<ChildInput>,
    pub(super) stdout: Option<ChildStdout>,
    pub(super) stderr: Option<ChildStderr>,
    pid: u32,
    /// Names this child's entry in the registry (a pid alone could be a later process's).
    pub(super) token: u64,
    /// Linux ≥ 5.3: the leader's pidfd, opened before anything could reap it. It is readable once
    /// the leader has exited, before it is reaped: that is when its group is killed.
    #[cfg(target_os = "linux")]
    pub(super) pidfd: Option<AsyncFd<OwnedFd>>,
    /// macOS: the control pipe of the child's watchdog; closing it (dropping this, or the sidecar
    /// dying) makes the watchdog kill the group.
    #[cfg(unix)]
    pub(super) _watch: Option<watchdog::Watch>,
    /// Windows: the Job Object holding the whole tree (`None` if the child could not be put in
    /// one: then only the leader can be stopped, and a warning says so).
    #[cfg(windows)]
    pub(super) job: Option<job::Job>,
    /// tokio has reaped the leader: its pid may belong to someone else now.
    reaped: bool,
    /// The group (and the orphans adopted for this child) got their SIGKILL.
    group_ended: bool,
    /// Exit handled: no longer in the registry, nothing left to kill.
    finished: bool,
}

/// What ran under a child at one moment ([`ChildProcess::mark_tree`]).
pub struct TreeMark(Vec<Proc>);

/// The leader process: started by tokio, or on Linux by `vfork.rs` (waited for through the pidfd).
pub(super) enum Leader {
    Tokio(Child),
    #[cfg(target_os = "linux")]
    Cloned(vfork::Leader),
}

/// Stop tracking `pid` if its entry is still the one `token` names (the pid may have been reused
/// by a newer child between the reap and this call).
pub(super) fn untrack(pid: u32, token: u64) {
    let mut registry = registry();
    if registry.children.get(&pid).is_some_and(|(t, _)| *t == token) {
        registry.children.remove(&pid);
        registry.adopted.remove(&pid);
    }
    sweep_if_deferred(registry);
}

/// Set the role of the child `(pid, token)` names, if it is still registered.
fn set_role(pid: u32, token: u64, role: Role) {
    let mut registry = registry();
    if let Some(entry) = registry.children.get_mut(&pid).filter(|(t, _)| *t == token) {
        entry.1 = role;
    }
    sweep_if_deferred(registry);
}

impl ChildProcess {
    /// A registered child, its pipes not yet attached.
    pub(super) fn new(leader: Leader, pid: u32, token: u64) -> Self {
        ChildProcess {
            child: Some(leader),
            stdin: None,
            stdout: None,
            stderr: None,
            pid,
            token,
            // Nothing has waited for the child yet, so this pidfd is certainly this child's.
            #[cfg(target_os = "linux")]
            pidfd: pidfd::open(pid).ok().and_then(|fd| {
                // SAFETY: the AsyncFd owns the OwnedFd, which stays open (the same descriptor)
                // until the AsyncFd is dropped.
                unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.ok()
            }),
            #[cfg(unix)]
            _watch: None,
            #[cfg(windows)]
            job: None,
            reaped: false,
            group_ended: false,
            finished: false,
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }
    pub fn take_stdin(&mut self) -> Option<ChildInput> {
        self.stdin.take()
    }
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.stderr.take()
    }

    fn child(&mut self) -> &mut Leader {
        self.child.as_mut().expect("the child is only taken in drop")
    }

    /// Reap the leader (once it has exited).
    async fn reap(&mut self) -> io::Result<ExitStatus> {
        match self.child.as_mut().expect("the child is only taken in drop") {
            Leader::Tokio(child) => child.wait().await,
            #[cfg(target_os = "linux")]
            Leader::Cloned(leader) => match &self.pidfd {
                Some(fd) => leader.wait(fd).await,
                None => Err(io::Error::other("no pidfd")), // never: spawn requires one
            },
        }
    }

    /// A warm spare (standby) owns no orphans but its own group; a turn that takes it makes it
    /// busy again.
    pub fn set_standby(&mut self, standby: bool) {
        set_role(self.pid, self.token, if standby { Role::Standby } else { Role::Busy });
    }

    /// What runs under this child now, to tell apart later what starts after (see
    /// [`ChildProcess::end_started_since`]).
    pub fn mark_tree(&self) -> TreeMark {
        TreeMark(self.under(&proc_table()))
    }

    /// Kill what this child started since `mark` and left running (a dev server or a watcher a
    /// shell tool put in the background), leaving the child itself and whatever ran under it at
    /// the mark alone: a warm agent stays usable while its turn's processes end as a print-mode
    /// turn's do. With `keep_helpers` (a turn that ended, not one stopped), only what left the
    /// child's tree ends: a job whose shell exited (re-parented, still in the child's group, or
    /// an orphan attributed to it). Whatever still runs under the child is the child's own then
    /// (an MCP server of the user's configuration, connected after the mark; a terminal it keeps,
    /// and what runs in it), and ends with Stop or with the child. Nothing here knows how a
    /// program names its helpers, so none is guessed at. Returns how many it signalled. Windows has no process table (the Job Object can only be
    /// ended whole): nothing is found there.
    pub fn end_started_since(&mut self, mark: &TreeMark, keep_helpers: bool) -> usize {
        // The leader's pid names its group only while the leader is not reaped.
        if self.reaped || self.finished {
            return 0;
        }
        let table = proc_table();
        let kept: Vec<u32> =
            if keep_helpers { descendants_in(&table, self.pid).iter().map(|p| p.pid).collect() } else { Vec::new() };
        let started: Vec<Proc> = self
            .under(&table)
            .into_iter()
            .filter(|p| p.state != 'Z' && !mark.0.iter().any(|m| m.pid == p.pid && m.start == p.start))
            .filter(|p| !kept.contains(&p.pid))
            .collect();
        for p in &started {
            signal_seen(p, Signal::Kill);
        }
        if let Some(adopted) = registry().adopted.get_mut(&self.pid) {
            // Matched as processes (pid and start time), and what no longer runs goes too.
            adopted.retain(|o| {
                !started.iter().any(|p| p.pid == o.pid && p.start == o.start)
                    && table.iter().any(|p| p.pid == o.pid && p.start == o.start)
            });
        }
        // Always, as print mode does after every turn: it reaps what was just killed and was
        // re-parented to us, and it finds a job that left the agent's group and session as well
        // as its tree (a daemon a shell tool started), which only a sweep can name.
        sweep_in_background();
        started.len()
    }

    /// Everything under this child in `table`: its descendants, the other processes of its group
    /// (a background job whose shell exited is re-parented to us but stays in the group), and
    /// the orphans a sweep attributed to it, with their descendants.
    fn under(&self, table: &[Proc]) -> Vec<Proc> {
        let mut out = descendants_in(table, self.pid);
        let grouped = table.iter().filter(|p| p.pgid == self.pid && p.pid != self.pid).copied();
        let adopted = registry().adopted.get(&self.pid).cloned().unwrap_or_default();
        // Only an orphan that still runs as the process it was (pid and start time): one that
        // ended may have its pid given to someone else, whose processes are none of ours.
        let adopted = adopted
            .into_iter()
            .filter_map(|o| table.iter().find(|p| p.pid == o.pid && p.start == o.start).copied())
            .flat_map(|o| std::iter::once(o).chain(descendants_in(table, o.pid)));
        for p in grouped.chain(adopted).collect::<Vec<_>>() {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    /// Wait for the leader to exit. Whatever it left running in its group is killed afterwards:
    /// a finished turn owns no processes.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.exited().await?;
        self.end_group();
        let status = self.reap().await?;
        self.reaped = true;
        self.finish();
        Ok(status)
    }

    /// Still running (not exited, not killed)? Reaps it if it has exited.
    pub fn is_running(&mut self) -> bool {
        if self.finished {
            return false;
        }
        #[cfg(target_os = "linux")]
        if let Some(exited) = self.pidfd.as_ref().map(|fd| pidfd::is_readable(fd.get_ref())) {
            if !exited {
                return true;
            }
            self.end_group();
        }
        let exited = match self.child() {
            Leader::Tokio(child) => child.try_wait(),
            #[cfg(target_os = "linux")]
            Leader::Cloned(leader) => leader.try_wait(),
        };
        match exited {
            Ok(None) => true,
            _ => {
                self.reaped = true;
                self.finish();
                false
            }
        }
    }

    /// Ask politely (SIGTERM to the group), then SIGKILL everything after `grace`.
    pub async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.finished {
            return None;
        }
        let descendants = descendants(self.pid);
        if !self.reaped {
            signal_group(self.pid, Signal::Term);
        }
        // Windows has no polite request a console-less process could get: the job is killed at
        // once (kill_tree), so there is no grace to wait for.
        if cfg!(unix) {
            let _ = tokio::time::timeout(grace, self.exited()).await;
        }
        self.kill_tree(&descendants);
        let status = self.reap().await.ok();
        self.reaped = true;
        self.finish();
        status
    }

    /// Until the leader has exited. With a pidfd it is left unreaped (its group can still be
    /// signalled safely); without one, tokio reaps it here.
    async fn exited(&mut self) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.pidfd {
            // Readiness is never cleared: once exited, the pidfd stays readable.
            let _ = fd.readable().await?;
            return Ok(());
        }
        self.reap().await?;
        self.reaped = true;
        Ok(())
    }

    /// SIGKILL the group and the orphans attributed to this child, once. With a pidfd this runs
    /// before the leader is reaped; without, after (the best kill(2) alone can do).
    fn end_group(&mut self) {
        if self.group_ended {
            return;
        }
        self.group_ended = true;
        if !self.reaped || !self.has_pidfd() {
            signal_group(self.pid, Signal::Kill);
        }
        #[cfg(windows)]
        if let Some(job) = &self.job {
            job.terminate();
        }
        let adopted = registry().adopted.remove(&self.pid).unwrap_or_default();
        if !adopted.is_empty() {
            let table = proc_table();
            for orphan in &adopted {
                kill_orphan_tree(&table, orphan);
            }
            sweep_in_background(); // reap them
        }
    }

    /// SIGKILL the leader, its group, its orphans and every listed descendant (some may have left
    /// the group).
    fn kill_tree(&mut self, descendants: &[Proc]) {
        self.signal_leader(Signal::Kill);
        self.end_group();
        for p in descendants {
            signal_seen(p, Signal::Kill);
        }
    }

    fn signal_leader(&mut self, signal: Signal) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.pidfd {
            pidfd::send_signal(fd.get_ref(), signal.number());
            return;
        }
        // Windows: TerminateProcess through the handle tokio holds (valid until reaped). The job
        // does the same for the whole tree; this covers a child that is in none.
        #[cfg(windows)]
        if let Some(Leader::Tokio(child)) = self.child.as_mut() {
            let _ = child.start_kill();
            return;
        }
        if !self.reaped {
            signal_pid(self.pid, signal);
        }
    }

    #[cfg(target_os = "linux")]
    fn has_pidfd(&self) -> bool {
        self.pidfd.is_some()
    }
    #[cfg(not(target_os = "linux"))]
    fn has_pidfd(&self) -> bool {
        false
    }

    /// The leader is reaped: kill what is left of its group, stop tracking it.
    fn finish(&mut self) {
        if !self.finished {
            self.end_group();
            self.finished = true;
            untrack(self.pid, self.token);
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if self.child.is_none() || self.finished {
            return;
        }
        let descendants = descendants(self.pid);
        self.kill_tree(&descendants);
        let Some(child) = self.child.take() else { return };
        // An untaken stdin closes only once the killed leader is reaped: a spare must never see
        // end-of-input (an empty prompt) while it could still act on it.
        let stdin = self.stdin.take();
        set_role(self.pid, self.token, Role::Released);
        let (pid, token) = (self.pid, self.token);
        let untrack = OnDrop(move || untrack(pid, token));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                // Reap the killed leader through tokio (never behind its back), then stop tracking
                // it, also when the runtime drops the task unpolled at shutdown. Sweep for
                // escapees the kill left as zombies; the sweep spares running turns' processes.
                #[cfg(target_os = "linux")]
                let pidfd = self.pidfd.take();
                runtime.spawn(async move {
                    let untrack = untrack;
                    match child {
                        Leader::Tokio(mut child) => drop(child.wait().await),
                        #[cfg(target_os = "linux")]
                        Leader::Cloned(mut leader) => {
                            if let Some(fd) = &pidfd {
                                let _ = leader.wait(fd).await;
                            }
                        }
                    }
                    drop(stdin);
                    drop(untrack);
                    // Group-mates that died after the leader are zombies of ours now: reap them.
                    sweep_in_background();
                });
                sweep_in_background();
            }
            // Shutting down without a runtime: a cloned leader left unreaped is a zombie until
            // the sidecar exits a moment later.
            Err(_) => drop((child, stdin, untrack)),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::backend::process::table::read_proc;
    use crate::backend::process::tests::{alive, first_line, gone_within, sh};
    use crate::backend::process::{descendants_of, spawn};

    #[tokio::test]
    async fn drop_kills_the_whole_group_including_grandchildren() {
        let mut child = spawn(&sh("sleep 30 & echo $!; wait")).unwrap();
        let grandchild: u32 = first_line(&mut child).await.trim().parse().unwrap();
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
        first_line(&mut child).await;
        let started = std::time::Instant::now();
        let status = child.terminate(Duration::from_millis(200)).await;
        assert!(status.is_some());
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(!alive(child.pid()));
    }

    #[tokio::test]
    async fn what_a_child_started_since_a_mark_ends_and_the_child_stays() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        // A helper from before the mark (a warm agent's own), then, once told, a background job
        // (what a turn's shell tool leaves running).
        let mut child = spawn(&sh("sleep 30 & echo $!; read go; sleep 30 & echo $!; wait")).unwrap();
        let mut out = tokio::io::BufReader::new(child.take_stdout().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).await.unwrap();
        let helper: u32 = line.trim().parse().unwrap();
        let mark = child.mark_tree();
        let mut stdin = child.take_stdin().unwrap();
        stdin.write_all(b"go\n").await.unwrap();
        line.clear();
        out.read_line(&mut line).await.unwrap();
        let job: u32 = line.trim().parse().unwrap();
        assert_eq!(child.end_started_since(&mark, false), 1, "only the job is new");
        assert!(gone_within(job, Duration::from_secs(2)).await, "the job outlived the end of its turn");
        assert!(alive(helper), "what ran before the mark was killed");
        assert!(child.is_running(), "the child itself was killed");
    }

    #[tokio::test]
    async fn a_turn_that_ends_keeps_what_still_runs_under_the_child_but_not_what_left_it() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        // After the mark the child starts a helper of its own (an MCP server, say), and a shell
        // that leaves a job behind and exits (the job is re-parented, still in the group).
        let script = "read go; sleep 30 & echo $!; sh -c 'sleep 31 & echo $!'; wait";
        let mut child = spawn(&sh(script)).unwrap();
        let mark = child.mark_tree();
        let mut out = tokio::io::BufReader::new(child.take_stdout().unwrap());
        child
            .take_stdin()
            .unwrap()
            .write_all(
                b"go
",
            )
            .await
            .unwrap();
        let mut line = String::new();
        out.read_line(&mut line).await.unwrap();
        let helper: u32 = line.trim().parse().unwrap();
        line.clear();
        out.read_line(&mut line).await.unwrap();
        let job: u32 = line.trim().parse().unwrap();
        // Once its shell has exited, the job is no longer under the child's tree.
        for _ in 0..200 {
            if !descendants_of(child.pid()).contains(&job) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(child.end_started_since(&mark, true), 1, "only the job its shell left");
        assert!(gone_within(job, Duration::from_secs(2)).await, "the job outlived its turn");
        assert!(alive(helper), "the child's own helper was killed at the end of a turn");
        // Stop ends the helper too: it started during the turn.
        assert_eq!(child.end_started_since(&mark, false), 1, "the helper");
        assert!(gone_within(helper, Duration::from_secs(2)).await);
    }

    #[tokio::test]
    async fn a_normal_exit_kills_the_group_it_leaves_behind() {
        let mut child = spawn(&sh("sleep 30 & echo $!")).unwrap();
        let grandchild: u32 = first_line(&mut child).await.trim().parse().unwrap();
        assert!(child.wait().await.unwrap().success());
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!alive(grandchild), "the group outlived its leader");
        assert!(!child.is_running());
    }

    #[tokio::test]
    async fn an_orphan_that_ended_never_names_the_process_that_has_its_pid_now() {
        use tokio::io::AsyncBufReadExt;
        let mut agent = spawn(&sh("exec sleep 30")).unwrap();
        let mark = agent.mark_tree();
        // Someone else's process, with a child started after the mark, holding a pid an orphan
        // of the agent's once had (its start time is the orphan's, not its own).
        let mut bystander = spawn(&sh("sleep 30 & echo $!; wait")).unwrap();
        let mut out = tokio::io::BufReader::new(bystander.take_stdout().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).await.unwrap();
        let its_child: u32 = line.trim().parse().unwrap();
        let now = read_proc(bystander.pid()).unwrap();
        let ended = Proc { start: now.start.saturating_sub(1), ..now };
        registry().adopted.entry(agent.pid()).or_default().push(ended);
        assert_eq!(agent.end_started_since(&mark, false), 0, "nothing of the bystander's is the agent's");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(alive(its_child), "a process of the pid's new owner was killed");
        assert!(registry().adopted.get(&agent.pid()).is_none_or(|a| a.is_empty()), "the ended orphan is forgotten");
        drop(bystander);
    }
}

/// Windows: the Job Object holds the whole tree (run by CI's Windows runner; see docs/platforms.md).
#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;
    use crate::backend::process::{spawn, SpawnSpec};

    /// `cmd.exe` starting `ping.exe`: a CLI with a grandchild. Waits until both are in the job.
    async fn cmd_with_a_grandchild() -> ChildProcess {
        let spec = SpawnSpec {
            program: "cmd.exe".into(),
            args: vec!["/d".into(), "/c".into(), "ping -n 60 127.0.0.1 >NUL".into()],
            ..Default::default()
        };
        let child = spawn(&spec).unwrap();
        let job = child.job.as_ref().expect("the child is in a Job Object");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while job.active_processes() < 2 {
            assert!(std::time::Instant::now() < deadline, "ping never started in the job");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        child
    }

    async fn job_empties(job: &job::Job) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while job.active_processes() > 0 {
            if std::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    #[tokio::test]
    async fn terminate_stops_the_whole_tree() {
        let mut child = cmd_with_a_grandchild().await;
        let started = std::time::Instant::now();
        assert!(child.terminate(Duration::from_millis(500)).await.is_some());
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(job_empties(child.job.as_ref().unwrap()).await, "a process of the tree survived terminate");
    }

    /// The pid of `parent`'s child named `exe` (a Toolhelp process snapshot), if it has one.
    /// By name: on Windows a console process also has a conhost.exe child.
    fn child_named(parent: u32, exe: &str) -> Option<u32> {
        use windows_sys::Win32::System::Diagnostics::ToolHelp::{
            CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
        };
        // SAFETY: a snapshot of all processes, read with an entry whose dwSize is set, closed once.
        unsafe {
            let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
            assert_ne!(snapshot, windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE);
            let mut entry =
                PROCESSENTRY32W { dwSize: std::mem::size_of::<PROCESSENTRY32W>() as u32, ..Default::default() };
            let mut found = None;
            let mut more = Process32FirstW(snapshot, &mut entry) != 0;
            while more && found.is_none() {
                let len = entry.szExeFile.iter().position(|&c| c == 0).unwrap_or(entry.szExeFile.len());
                let name = String::from_utf16_lossy(&entry.szExeFile[..len]);
                if entry.th32ParentProcessID == parent && name.eq_ignore_ascii_case(exe) {
                    found = Some(entry.th32ProcessID);
                }
                more = Process32NextW(snapshot, &mut entry) != 0;
            }
            windows_sys::Win32::Foundation::CloseHandle(snapshot);
            found
        }
    }

    /// A handle to wait on process `pid` with, opened while it runs (so a reused pid cannot fool it).
    struct Watched(windows_sys::Win32::Foundation::HANDLE);

    impl Watched {
        fn open(pid: u32) -> Watched {
            use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_SYNCHRONIZE};
            // SAFETY: a plain call; the handle is closed on drop.
            let handle = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, pid) };
            assert!(!handle.is_null(), "process {pid} is not there to watch");
            Watched(handle)
        }

        fn ends_within(&self, within: Duration) -> bool {
            use windows_sys::Win32::Foundation::WAIT_OBJECT_0;
            // SAFETY: our open process handle.
            let waited = unsafe {
                windows_sys::Win32::System::Threading::WaitForSingleObject(self.0, within.as_millis() as u32)
            };
            waited == WAIT_OBJECT_0
        }
    }

    impl Drop for Watched {
        fn drop(&mut self) {
            // SAFETY: our handle, closed once.
            unsafe { windows_sys::Win32::Foundation::CloseHandle(self.0) };
        }
    }

    /// Any exit status: the kernel ends a closed job's processes with STATUS_SUCCESS (0), so the
    /// leader's code says nothing; that it and its grandchild end is what counts.
    #[tokio::test]
    async fn closing_the_job_handle_kills_the_tree_as_the_sidecar_dying_would() {
        let mut child = cmd_with_a_grandchild().await;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let ping = loop {
            if let Some(pid) = child_named(child.pid(), "ping.exe") {
                break Watched::open(pid);
            }
            assert!(std::time::Instant::now() < deadline, "cmd.exe never started ping.exe");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        drop(child.job.take()); // what the kernel does to a dead sidecar's handles
        let status = tokio::time::timeout(Duration::from_secs(10), child.reap()).await;
        assert!(status.is_ok_and(|s| s.is_ok()), "the leader outlived its job");
        assert!(ping.ends_within(Duration::from_secs(10)), "the grandchild (ping.exe) outlived the job");
    }

    #[tokio::test]
    async fn input_reaches_the_child_and_a_normal_exit_is_reported() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let spec =
            SpawnSpec { program: "findstr.exe".into(), args: vec!["/L".into(), "y".into()], ..Default::default() };
        let mut child = spawn(&spec).unwrap();
        let mut stdin = child.take_stdin().unwrap();
        stdin.write_all(b"xyz\r\n").await.unwrap();
        stdin.shutdown().await.unwrap();
        drop(stdin);
        let mut out = String::new();
        child.take_stdout().unwrap().read_to_string(&mut out).await.unwrap();
        assert_eq!(out.trim(), "xyz");
        assert!(child.wait().await.unwrap().success());
    }
}
