//! Starting a child: [`spawn`] runs a [`SpawnSpec`] in its own process group (Unix) or Job Object
//! (Windows), armed to die with the sidecar, and registers it before any sweep can see it.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(unix)]
use tokio::process::ChildStdin;
use tokio::process::Command;
#[cfg(target_os = "linux")]
use tokio::process::{ChildStderr, ChildStdout};

use super::child::{ChildInput, ChildProcess, Leader};
#[cfg(windows)]
use super::job;
use super::registry::{registry, Role};
#[cfg(target_os = "linux")]
use super::vfork;
#[cfg(unix)]
use super::watchdog;

/// What to run. Environment: inherited, then `env_remove`, then `env`.
#[derive(Debug, Clone, Default)]
pub struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(OsString, OsString)>,
    pub env_remove: Vec<OsString>,
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

/// Unix tests; those for what only Linux has (the parent-death signal) say so.
#[cfg(all(test, unix))]
mod tests {
    use std::time::Duration;

    use super::*;
    #[cfg(target_os = "linux")]
    use crate::backend::process::child::untrack;
    #[cfg(target_os = "linux")]
    use crate::backend::process::signal::{signal_pid, Signal};
    use crate::backend::process::table::proc_table;
    #[cfg(target_os = "linux")]
    use crate::backend::process::tests::alive;
    use crate::backend::process::tests::{first_line, sh};

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
}
