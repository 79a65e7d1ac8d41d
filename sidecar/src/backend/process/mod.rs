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
//! Linux, the rules this file keeps (docs/architecture.md, invariants):
//!
//! * **Every child dies with the sidecar.** Each gets `PR_SET_PDEATHSIG` = SIGKILL, so a sidecar
//!   killed without cleaning up (SIGKILL, OOM, a crash) takes its children along. The child arms
//!   it itself before exec, started without a fork of the sidecar (`process/vfork.rs`). The kernel sends
//!   it when the *thread* that forked exits, not the process: so never start a process from a
//!   thread that may end before the child. tokio's runtime workers (async tasks) and the main
//!   thread live as long as the sidecar; tokio's blocking pool (`spawn_blocking`) ends threads
//!   that sat idle for 10 s, which would SIGKILL a turn in mid-answer. Start processes from async
//!   code only (`tests::no_process_starts_on_a_blocking_pool_thread` checks the call sites).
//! * **Orphans are attributed before they are killed.** We are a child subreaper: a grandchild
//!   whose parent exited (a dev server a turn's shell started) is re-parented to us. The sweep
//!   leaves alone every orphan a running turn may own (see [`sweep_orphans`]).
//! * **No signal reaches a reused pid.** The leader is signalled through a pidfd opened right after
//!   spawn; its group only while the leader is not reaped (a zombie still holds its pid, which is
//!   the group id, so no other group can have it); processes found in `/proc` through a pidfd
//!   opened first and then checked against the start time seen. Without pidfds (Linux < 5.3, and
//!   other Unix) it falls back to kill(2), and the group is signalled after the leader is reaped,
//!   as before.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::{ready, Context, Poll};
use std::time::Duration;

#[cfg(target_os = "linux")]
use tokio::io::unix::AsyncFd;
use tokio::io::AsyncWrite;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use crate::util::sync::OnDrop;

#[cfg(windows)]
mod job;
mod memory;
mod table;
#[cfg(target_os = "linux")]
mod vfork;
#[cfg(unix)]
mod watchdog;

pub use memory::memory_is_tight;
#[cfg(unix)]
use table::own_children;
use table::{descendants_in, proc_table, read_proc, Proc};

/// What to run. Environment: inherited, then `env_remove`, then `env`.
#[derive(Debug, Clone, Default)]
pub struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(OsString, OsString)>,
    pub env_remove: Vec<OsString>,
}

/// A child's stdin. Writing and shutting down work as on tokio's `ChildStdin`; when a watchdog
/// guards the child, shutting it down or dropping it also tells the watchdog the input is
/// complete (so the CLI sees end-of-input only when the sidecar means it, see `watchdog.rs`).
pub struct ChildInput {
    inner: ChildStdin,
    #[cfg(unix)]
    release: Option<watchdog::Release>,
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
    stdin: Option<ChildInput>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    pid: u32,
    /// Names this child's entry in the registry (a pid alone could be a later process's).
    token: u64,
    /// Linux ≥ 5.3: the leader's pidfd, opened before anything could reap it. It is readable once
    /// the leader has exited, before it is reaped: that is when its group is killed.
    #[cfg(target_os = "linux")]
    pidfd: Option<AsyncFd<OwnedFd>>,
    /// macOS: the control pipe of the child's watchdog; closing it (dropping this, or the sidecar
    /// dying) makes the watchdog kill the group.
    #[cfg(unix)]
    _watch: Option<watchdog::Watch>,
    /// Windows: the Job Object holding the whole tree (`None` if the child could not be put in
    /// one: then only the leader can be stopped, and a warning says so).
    #[cfg(windows)]
    job: Option<job::Job>,
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
enum Leader {
    Tokio(Child),
    #[cfg(target_os = "linux")]
    Cloned(vfork::Leader),
}

/// What a registered child is doing, for the orphan sweep.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    /// Running a turn or a command: its processes, and orphans it may own, are left alone.
    Busy,
    /// A warm spare waiting for its prompt: it owns its own group, nothing more.
    Standby,
    /// Killed by a drop and waiting to be reaped by tokio: owns nothing, but the sweep must not
    /// reap it behind tokio's back.
    Released,
}

/// The children started through [`spawn`] and the orphans attributed to them. Anything else that
/// is our child is an orphan we adopted as subreaper (a grandchild that outlived its parent).
#[derive(Default)]
#[cfg_attr(not(unix), allow(dead_code))]
struct Registry {
    children: HashMap<u32, (u64, Role)>,
    /// Orphans a sweep attributed to a running child (by leader pid); killed when it ends.
    adopted: HashMap<u32, Vec<Proc>>,
    /// A sweep left an escapee alone because a child was busy: sweep again once none is.
    deferred: bool,
    /// The sidecar is stopping: every orphan dies, whoever it belongs to.
    stopping: bool,
}

impl Registry {
    fn busy(&self) -> bool {
        self.children.values().any(|(_, role)| *role == Role::Busy)
    }
}

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    crate::util::sync::lock(REGISTRY.get_or_init(Default::default))
}

/// Stop tracking `pid` if its entry is still the one `token` names (the pid may have been reused
/// by a newer child between the reap and this call).
fn untrack(pid: u32, token: u64) {
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

/// The last busy child is done and a sweep had to leave an escapee alone: sweep now (on the
/// blocking pool; the sweep starts no process).
fn sweep_if_deferred(mut registry: std::sync::MutexGuard<'static, Registry>) {
    let due = registry.deferred && !registry.busy();
    if due {
        registry.deferred = false;
    }
    drop(registry);
    if due {
        sweep_in_background();
    }
}

fn sweep_in_background() {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(sweep_orphans)),
        Err(_) => {
            sweep_orphans();
        }
    }
}

/// Start `spec` in its own process group (Unix) or Job Object (Windows). The parent-death
/// watchdog (`watchdog.rs`) guards every child on macOS, which has no parent-death signal; Linux
/// has one (`PR_SET_PDEATHSIG`), and its tests turn the watchdog on to exercise it.
pub fn spawn(spec: &SpawnSpec) -> io::Result<ChildProcess> {
    spawn_guarded(spec, cfg!(target_os = "macos"))
}

/// [`spawn`], with or without the parent-death watchdog (Unix; ignored elsewhere).
fn spawn_guarded(spec: &SpawnSpec, watchdog: bool) -> io::Result<ChildProcess> {
    static TOKENS: AtomicU64 = AtomicU64::new(0);
    // Linux: without a fork of the sidecar (vfork.rs), unless a watchdog is wanted (tests) or
    // the kernel has no pidfds to wait with.
    #[cfg(target_os = "linux")]
    if !watchdog && vfork::usable() {
        // Spawn and register under one lock (see below).
        let mut registry = registry();
        let spawned = vfork::spawn(spec)?;
        let token = TOKENS.fetch_add(1, Ordering::Relaxed);
        registry.children.insert(spawned.pid, (token, Role::Busy));
        drop(registry);
        let pipes = (|| {
            Ok::<_, io::Error>((
                ChildStdin::from_std(std::process::ChildStdin::from(spawned.stdin))?,
                ChildStdout::from_std(std::process::ChildStdout::from(spawned.stdout))?,
                ChildStderr::from_std(std::process::ChildStderr::from(spawned.stderr))?,
            ))
        })();
        let mut process = ChildProcess::new(Leader::Cloned(vfork::Leader::new(spawned.pid)), spawned.pid, token);
        // A failure here drops `process`, which kills the child.
        let (stdin, stdout, stderr) = pipes?;
        process.stdin = Some(ChildInput { inner: stdin, release: None });
        process.stdout = Some(stdout);
        process.stderr = Some(stderr);
        if process.pidfd.is_none() {
            return Err(io::Error::other("no pidfd for the child"));
        }
        return Ok(process);
    }
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
    {
        // Every child dies with the sidecar (the fallback of vfork.rs, which does the same
        // without a fork). The pre-exec hook makes std fork the sidecar instead of posix_spawn.
        let sidecar = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec and only makes raw syscalls
        // (prctl, getppid, _exit), which are async-signal-safe; it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The sidecar died between fork and prctl: we were re-parented before the death
                // signal was armed, so it would never come. Do not run as an orphan.
                if libc::getppid() != sidecar {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    #[cfg(unix)]
    let mut watch = if watchdog { Some(watchdog::Pipes::new()?) } else { None };
    #[cfg(unix)]
    if let Some(pipes) = &mut watch {
        cmd.stdin(pipes.child_stdin());
        let hook = pipes.pre_exec_hook();
        // SAFETY: the hook forks the watchdog and makes only async-signal-safe calls in it
        // (watchdog.rs); in the child itself it only returns.
        unsafe {
            cmd.pre_exec(hook);
        }
    }
    #[cfg(not(unix))]
    let _ = watchdog;
    // Windows: started suspended, so it is in its Job Object before it can start anything.
    #[cfg(windows)]
    let tree = job::Job::new()?;
    #[cfg(windows)]
    cmd.creation_flags(job::CREATION_FLAGS);
    // Spawn and register under one lock: a concurrent orphan sweep must never see this child
    // running before it is known as ours (it would take it for an orphan and kill it).
    let mut registry = registry();
    let mut child = cmd.spawn()?;
    let Some(pid) = child.id() else {
        let _ = child.start_kill();
        return Err(io::Error::other("child exited before it had a pid"));
    };
    #[cfg(windows)]
    let tree = {
        let adopted = match child.raw_handle() {
            Some(handle) => tree.adopt(handle),
            None => Err(io::Error::other("no process handle")),
        };
        if let Err(e) = job::resume(pid) {
            let _ = child.start_kill();
            return Err(e);
        }
        match adopted {
            Ok(()) => Some(tree),
            Err(e) => {
                tracing::warn!(pid, error = %e, "the CLI runs outside a Job Object: what it starts cannot be stopped with it");
                None
            }
        }
    };
    let token = TOKENS.fetch_add(1, Ordering::Relaxed);
    registry.children.insert(pid, (token, Role::Busy));
    drop(registry);
    let stdin = child.stdin.take().map(|inner| ChildInput {
        inner,
        #[cfg(unix)]
        release: None,
    });
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let mut process = ChildProcess::new(Leader::Tokio(child), pid, token);
    (process.stdin, process.stdout, process.stderr) = (stdin, stdout, stderr);
    #[cfg(windows)]
    {
        process.job = tree;
    }
    // The watched child's stdin is our own pipe (the watchdog holds a copy of its write end).
    // A failure here drops `process`, which kills the child.
    #[cfg(unix)]
    if let Some(pipes) = watch {
        let (watch, stdin_fd, release) = pipes.into_parts()?;
        process._watch = Some(watch);
        let inner = ChildStdin::from_std(std::process::ChildStdin::from(stdin_fd))?;
        process.stdin = Some(ChildInput { inner, release: Some(release) });
    }
    Ok(process)
}

impl ChildProcess {
    /// A registered child, its pipes not yet attached.
    fn new(leader: Leader, pid: u32, token: u64) -> Self {
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

#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

impl Signal {
    #[cfg(unix)]
    fn number(self) -> i32 {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

#[cfg(unix)]
fn signal_group(pgid: u32, signal: Signal) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
    unsafe {
        libc::kill(-(pgid as i32), signal.number());
    }
}

#[cfg(unix)]
fn signal_pid(pid: u32, signal: Signal) {
    // SAFETY: plain kill(2).
    unsafe {
        libc::kill(pid as i32, signal.number());
    }
}

#[cfg(not(unix))]
fn signal_group(_pgid: u32, _signal: Signal) {}
#[cfg(not(unix))]
fn signal_pid(_pid: u32, _signal: Signal) {}

/// Signal a process seen in `/proc`, only if it is still that process: a pidfd is opened first,
/// then the start time is checked, so a pid reused in between is never signalled.
fn signal_seen(p: &Proc, signal: Signal) {
    #[cfg(target_os = "linux")]
    match pidfd::open(p.pid) {
        Ok(fd) => {
            if read_proc(p.pid).is_some_and(|now| now.start == p.start) {
                pidfd::send_signal(&fd, signal.number());
            }
            return;
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {}
        Err(_) => return, // gone
    }
    // No pidfds: check, then kill(2) (the pid could still be reused in between, barely).
    if read_proc(p.pid).is_some_and(|now| now.start == p.start) {
        signal_pid(p.pid, signal);
    }
}

/// pidfd_open(2) and pidfd_send_signal(2) through `libc::syscall` (glibc wrappers are recent).
#[cfg(target_os = "linux")]
mod pidfd {
    use super::*;

    /// Fails with ENOSYS on kernels without pidfds (< 5.3), ESRCH when the process is gone.
    pub fn open(pid: u32) -> io::Result<OwnedFd> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor is new and nobody else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }

    /// Signal the process the pidfd names; a no-op once it has exited (never another process).
    pub fn send_signal(fd: &OwnedFd, sig: i32) {
        // SAFETY: a valid descriptor, a signal number, no siginfo, no flags.
        unsafe {
            libc::syscall(libc::SYS_pidfd_send_signal, fd.as_raw_fd(), sig, std::ptr::null::<libc::siginfo_t>(), 0);
        }
    }

    /// Has the process exited (zombie or reaped)?
    pub fn is_readable(fd: &OwnedFd) -> bool {
        let mut poll = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, zero timeout.
        unsafe { libc::poll(&mut poll, 1, 0) > 0 }
    }
}

fn descendants(pid: u32) -> Vec<Proc> {
    descendants_in(&proc_table(), pid)
}

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

/// Make this process a child subreaper (Linux), so grandchildren whose parent died are re-parented
/// to us instead of init, where [`sweep_orphans`] can kill and reap them.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) only sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Who may own an orphan: the groups of registered children (busy or standby) and of their live
/// descendants, and the sessions of busy ones and their live descendants — except the sidecar's
/// own session, which every child shares and which therefore says nothing about whose it is.
// Windows sweeps nothing (the job holds the tree), so the sweep's helpers go unused there.
#[cfg_attr(not(unix), allow(dead_code))]
fn owners(registry: &Registry, table: &[Proc], own_session: Option<u32>) -> (HashMap<u32, u32>, HashMap<u32, u32>) {
    let (mut groups, mut sessions) = (HashMap::new(), HashMap::new());
    for (&leader, &(_, role)) in &registry.children {
        if role == Role::Released {
            continue;
        }
        let me = table.iter().find(|p| p.pid == leader).copied();
        for p in me.into_iter().chain(descendants_in(table, leader)) {
            groups.entry(p.pgid).or_insert(leader);
            if role == Role::Busy && Some(p.sid) != own_session {
                sessions.entry(p.sid).or_insert(leader);
            }
        }
    }
    (groups, sessions)
}

/// Kill and reap the orphans (children of ours that [`spawn`] did not start) no running child can
/// own. An orphan in the process group of a registered child, or of one of its live descendants,
/// or in the session of a busy one (other than ours), belongs to that child: it is left alone,
/// remembered, and killed when that child ends. An escapee nobody can be named for is killed only
/// when no child is busy (it may be a running turn's): then the sweep runs again as soon as the
/// last busy child is done. Once the sidecar is [`stopping`], every orphan dies. Zombies are
/// reaped. Returns how many it killed or reaped.
pub fn sweep_orphans() -> usize {
    #[cfg(unix)]
    {
        let me = std::process::id();
        // Every turn's end sweeps, and reading the whole table costs a read of every process on
        // the machine (milliseconds of a core, more on a busy one, next to the next turn's
        // start-up). An orphan is a child of ours that is not registered: when the kernel's lists
        // of our children name none, there is nothing to do.
        if let Some(children) = own_children() {
            let registry = registry();
            if children.iter().all(|pid| registry.children.contains_key(pid)) {
                return 0;
            }
        }
        // Read /proc before taking the lock (a scan takes milliseconds, and a turn's spawn waits
        // for the lock): a child that is not in this snapshot is not considered at all, and one
        // that is was registered by the time we hold the lock (spawn registers it under the lock
        // it already held while forking). Decide and kill under the lock; reap after it.
        let table = proc_table();
        let ended: Vec<u32> = {
            let mut registry = registry();
            let orphans: Vec<Proc> =
                table.iter().filter(|p| p.ppid == me && !registry.children.contains_key(&p.pid)).copied().collect();
            if orphans.is_empty() {
                return 0;
            }
            let own_session = table.iter().find(|p| p.pid == me).map(|p| p.sid);
            let (groups, sessions) = owners(&registry, &table, own_session);
            let (busy, stopping) = (registry.busy(), registry.stopping);
            let mut ended = Vec::new();
            for orphan in orphans {
                if orphan.state == 'Z' {
                    ended.push(orphan.pid);
                } else if stopping {
                    kill_orphan_tree(&table, &orphan);
                    ended.push(orphan.pid);
                } else if let Some(&leader) = groups.get(&orphan.pgid).or_else(|| sessions.get(&orphan.sid)) {
                    let adopted = registry.adopted.entry(leader).or_default();
                    if !adopted.contains(&orphan) {
                        adopted.push(orphan);
                    }
                } else if busy {
                    registry.deferred = true;
                } else {
                    kill_orphan_tree(&table, &orphan);
                    ended.push(orphan.pid);
                }
            }
            ended
        };
        for pid in &ended {
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
        ended.len()
    }
    #[cfg(not(unix))]
    {
        0
    }
}

/// SIGKILL an orphan seen earlier and its descendants in `table`, if it is still that process.
fn kill_orphan_tree(table: &[Proc], orphan: &Proc) {
    if !table.iter().any(|p| p.pid == orphan.pid && p.start == orphan.start) {
        return; // gone, and its pid maybe someone else's
    }
    for d in descendants_in(table, orphan.pid) {
        signal_seen(&d, Signal::Kill);
    }
    signal_seen(orphan, Signal::Kill);
}

/// The sidecar is stopping (the backend shuts down): from now on a sweep kills every orphan, also
/// those a running turn owns — running turns are being stopped too, and a turn stuck past the
/// runtime's shutdown must not leave its tools behind.
pub fn stopping() {
    registry().stopping = true;
}

/// How long a shutdown waits for the last orphans to end and be reaped.
pub const STOP_ORPHANS_WITHIN: Duration = Duration::from_secs(2);

/// The backend shuts down: mark the sidecar [`stopping`], then sweep until no orphan is left and
/// every killed child is reaped, or `within` has passed. One sweep is not enough on a loaded
/// machine: the members of a group killed a moment earlier (an agent's shell, a turn's tools) may
/// die only after the sweep read the table, and then, their leader reaped, become zombies of
/// ours that nothing reaps until the sidecar exits (the fault matrix saw one under CI's load).
pub fn end_orphans(within: Duration) {
    stopping();
    // Killed leaders are reaped by tasks this thread may just have spawned: on a worker of the
    // multi-thread runtime they sit in its own slot, which no other worker takes, until this
    // returns. Hand the worker over while we wait.
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker {
        tokio::task::block_in_place(|| settle(within));
    } else {
        settle(within);
    }
}

fn settle(within: Duration) {
    let deadline = std::time::Instant::now() + within;
    loop {
        let swept = sweep_orphans();
        let left = unsettled();
        if swept == 0 && left.is_empty() {
            return;
        }
        if std::time::Instant::now() >= deadline {
            tracing::warn!(
                ?left,
                "orphans or killed children still there {} ms after shutdown began",
                within.as_millis()
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The children of ours that are orphans (one [`spawn`] did not start, or its zombie) or killed
/// children not yet reaped (whose group-mates may still become orphans), with their role.
fn unsettled() -> Vec<(u32, Option<Role>)> {
    #[cfg(unix)]
    {
        let me = std::process::id();
        let registry = registry();
        let children =
            own_children().unwrap_or_else(|| proc_table().iter().filter(|p| p.ppid == me).map(|p| p.pid).collect());
        children
            .into_iter()
            .map(|pid| (pid, registry.children.get(&pid).map(|(_, role)| *role)))
            .filter(|(_, role)| role.is_none_or(|r| r == Role::Released))
            .collect()
    }
    #[cfg(not(unix))]
    {
        Vec::new()
    }
}

/// How many children started through [`spawn`] are alive (for `status` and tests).
pub fn live_children() -> usize {
    registry().children.values().filter(|(_, role)| *role != Role::Released).count()
}

/// Unix tests; those for what only Linux has (subreaper, parent-death signal) say so. On macOS
/// every spawn here goes through the watchdog, so these tests check it does not get in the way.
#[cfg(all(test, unix))]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sh(script: &str) -> SpawnSpec {
        SpawnSpec { program: "/bin/sh".into(), args: vec!["-c".into(), script.into()], ..Default::default() }
    }

    pub(crate) fn alive(pid: u32) -> bool {
        // A zombie counts as dead: it no longer runs.
        read_proc(pid).is_some_and(|p| p.state != 'Z')
    }

    async fn first_line(child: &mut ChildProcess) -> String {
        let mut out = tokio::io::BufReader::new(child.take_stdout().unwrap());
        let mut line = String::new();
        tokio::io::AsyncBufReadExt::read_line(&mut out, &mut line).await.unwrap();
        line
    }

    /// The sweep's first look: the kernel's lists of our children name what we started (a sweep
    /// that found none there would skip the orphans it must end).
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn own_children_are_listed() {
        let child = spawn(&sh("sleep 5")).unwrap();
        let listed = own_children().expect("this kernel keeps children lists");
        assert!(listed.contains(&child.pid()), "{} not in {listed:?}", child.pid());
    }

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

    // Linux only: orphans are re-parented to a subreaper; macOS has none (docs/platforms.md).
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_sweep_leaves_a_running_childs_orphans_and_its_end_kills_them() {
        let (mut child, job) = child_with_an_orphaned_job().await;
        sweep_orphans();
        assert!(alive(job), "the sweep killed the background job of a running child");
        // Another child dropped (a cancelled turn, an expired spare) sweeps too.
        drop(spawn(&sh("sleep 30")).unwrap());
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(alive(job), "a dropped child's sweep killed another child's background job");
        child.terminate(Duration::from_millis(100)).await;
        assert!(gone_within(job, Duration::from_secs(2)).await, "the job outlived its child");
    }

    // Linux only: PR_SET_PDEATHSIG; macOS's watchdog is tested below.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_dies_when_the_thread_that_started_it_ends() {
        // Every child gets PR_SET_PDEATHSIG, which the kernel fires when the forking *thread*
        // ends: a sidecar killed outright takes its children along (and nothing may be spawned
        // from a blocking-pool thread, see below).
        let (pid, token) = std::thread::spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let child = spawn(&sh("sleep 30")).unwrap();
                let ids = (child.pid(), child.token);
                std::mem::forget(child); // no guard left: only the kernel can end it now
                ids
            })
        })
        .join()
        .unwrap();
        untrack(pid, token);
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let survived = alive(pid);
        signal_pid(pid, Signal::Kill);
        // SAFETY: waitpid on our own child, which nothing else waits for (its guard was forgotten).
        unsafe { libc::waitpid(pid as i32, &mut 0, 0) };
        assert!(!survived, "a child outlived the thread that started it: no PR_SET_PDEATHSIG");
    }

    #[tokio::test]
    async fn a_stale_snapshot_never_signals_the_process_that_has_its_pid_now() {
        let mut bystander = spawn(&sh("exec sleep 30")).unwrap();
        let now = read_proc(bystander.pid()).unwrap();
        // What a snapshot of an earlier process with the same pid would hold: another start time.
        let stale = Proc { start: now.start.saturating_sub(1), ..now };
        signal_seen(&stale, Signal::Kill);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(bystander.is_running(), "a signal meant for a gone process reached the pid's new owner");
        signal_seen(&now, Signal::Kill);
        assert!(!bystander.wait().await.unwrap().success(), "the process itself is signalled");
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

    /// The processes in `pgid`'s group that still run.
    fn group_members(pgid: u32) -> Vec<u32> {
        proc_table().into_iter().filter(|p| p.pgid == pgid && p.state != 'Z').map(|p| p.pid).collect()
    }

    async fn group_gone_within(pgid: u32, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while !group_members(pgid).is_empty() {
            if std::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    async fn read_all(child: &mut ChildProcess) -> String {
        let mut out = String::new();
        let mut stdout = child.take_stdout().unwrap();
        tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn a_watched_child_gets_its_whole_input_and_its_watchdog_ends_with_it() {
        use tokio::io::AsyncWriteExt;
        let mut child = spawn_guarded(&sh("cat; echo end-of-input"), true).unwrap();
        let leader = child.pid();
        // The watchdog runs in the child's group beside it.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while group_members(leader).len() < 2 {
            assert!(std::time::Instant::now() < deadline, "no watchdog in the group: {:?}", group_members(leader));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut stdin = child.take_stdin().unwrap();
        stdin.write_all(b"the prompt\n").await.unwrap();
        stdin.shutdown().await.unwrap();
        drop(stdin);
        assert_eq!(read_all(&mut child).await, "the prompt\nend-of-input\n");
        assert!(child.wait().await.unwrap().success());
        assert!(group_gone_within(leader, Duration::from_secs(2)).await, "the watchdog outlived its child");
    }

    /// What a killed sidecar looks like to a watched spare: its stdin's write end closes without
    /// the release, then the control pipe closes. The CLI must be killed while still waiting for
    /// input, never see end-of-input (it would run an empty prompt).
    #[tokio::test]
    async fn a_watched_spare_dies_with_the_sidecar_before_it_sees_end_of_input() {
        let mut child = spawn_guarded(&sh("cat; echo ran-the-prompt"), true).unwrap();
        let leader = child.pid();
        let mut stdin = child.take_stdin().unwrap();
        drop(stdin.release.take()); // the sidecar dies: no release is ever sent
        drop(stdin);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(child.is_running(), "the CLI saw end-of-input while the watchdog held its stdin");
        drop(child._watch.take()); // the kernel closes the dead sidecar's control pipe
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .expect("the watchdog did not kill the CLI");
        assert!(!status.unwrap().success(), "the CLI was killed, not finished");
        assert_eq!(read_all(&mut child).await, "", "the CLI ran on its empty input");
        assert!(group_gone_within(leader, Duration::from_secs(2)).await);
    }

    #[tokio::test]
    async fn a_watched_turn_dies_with_the_sidecar_too() {
        let mut child = spawn_guarded(&sh("echo started; exec sleep 30"), true).unwrap();
        first_line(&mut child).await;
        drop(child.take_stdin()); // the prompt was delivered (released)
        drop(child._watch.take());
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .expect("the watchdog did not kill the turn");
        assert!(!status.unwrap().success());
    }

    /// PR_SET_PDEATHSIG fires when the forking thread exits, and tokio's blocking pool ends idle
    /// threads: a process started inside `spawn_blocking` could be killed mid-turn. Every
    /// `spawn_blocking` in the crate must be one of these, each safe for the reason given.
    #[test]
    fn no_process_starts_on_a_blocking_pool_thread() {
        let allowed: &[(&str, &str)] = &[
            ("backend/process/mod.rs", "runtime.spawn_blocking(sweep_orphans)"),
            ("backend/cursor/print/run.rs", "tokio::task::spawn_blocking(process::sweep_orphans)"),
            // CLI discovery probes candidates with `--version` from the blocking pool; each probe
            // is awaited (block_on) before the closure returns, so none outlives the thread.
            ("backend/cursor/locate.rs", "tokio::task::spawn_blocking(move || {"),
            // Removing folders; starts nothing.
            ("http/mod.rs", "spawn_blocking(move || engine.sweep_conversation_folders(FOLDER_GRACE))"),
            // Reading and writing the session file; starts nothing.
            ("engine/session_io.rs", "runtime.spawn_blocking(run)"),
            ("engine/session_io.rs", "tokio::task::spawn_blocking(work)"),
        ];
        let needle = concat!("spawn_", "blocking(");
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        let mut stack = vec![src.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let rel = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
                    for line in text.lines().map(str::trim) {
                        if line.contains(needle) && !line.starts_with("//") && !line.starts_with("(\"") {
                            found.push((rel.clone(), line.to_string()));
                        }
                    }
                }
            }
        }
        let unexplained: Vec<_> =
            found.iter().filter(|(file, line)| !allowed.iter().any(|(f, l)| f == file && line.contains(l))).collect();
        assert!(
            unexplained.is_empty(),
            "spawn_blocking that may start a process (see the module comment): {unexplained:?}"
        );
    }
}

/// Windows: the Job Object holds the whole tree (run by CI's Windows runner; see docs/platforms.md).
#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;

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
