//! Process-level behaviour the sidecar must survive: hangs, ignored SIGTERM, grandchildren that stay
//! in (or escape) the process group, stdin closed early. Unix-only pieces are `cfg(unix)`; elsewhere
//! they degrade to no-ops so the crate still builds.

use std::time::Duration;

pub fn sleep(d: Duration) {
    if !d.is_zero() {
        std::thread::sleep(d);
    }
}

/// Sleeps until killed. Used by the `hang` scenarios and `CURSOR_DOUBLE_STATUS_HANG`.
pub fn hang_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[cfg(unix)]
fn is_tty(fd: i32) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd) == 1 }
}

#[cfg(not(unix))]
fn is_tty(_fd: i32) -> bool {
    false
}

pub fn stdin_is_tty() -> bool {
    is_tty(0)
}

pub fn stdout_is_tty() -> bool {
    is_tty(1)
}

/// Makes SIGTERM a no-op, like a CLI stuck in a handler that never exits.
pub fn ignore_sigterm() {
    #[cfg(unix)]
    // SAFETY: installing SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
    }
}

/// Closes fd 0 so a parent still writing the prompt gets EPIPE.
pub fn close_stdin() {
    #[cfg(unix)]
    // SAFETY: fd 0 is owned by this process; nothing else in the double uses it afterwards.
    unsafe {
        libc::close(0);
    }
}

pub fn ppid() -> Option<u32> {
    #[cfg(unix)]
    {
        Some(std::os::unix::process::parent_id())
    }
    #[cfg(not(unix))]
    {
        None
    }
}

pub fn pgid() -> Option<u32> {
    #[cfg(unix)]
    {
        // SAFETY: getpgrp cannot fail.
        Some(unsafe { libc::getpgrp() } as u32)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// With `CURSOR_DOUBLE_GRANDCHILD_VIA_SHELL=1` the grandchild is started the way a shell tool
/// leaves a background job behind: through `sh -c 'sleep 600 &'`, a shell that exits at once. The
/// `sleep` then has no living parent and is re-parented (to the nearest subreaper, the sidecar)
/// while the double keeps running; it stays in the shell's process group (the double's, unless
/// `escape`).
#[cfg(unix)]
pub const ENV_GRANDCHILD_VIA_SHELL: &str = "CURSOR_DOUBLE_GRANDCHILD_VIA_SHELL";

/// Starts `sleep 600` as a child of the double (a grandchild of the sidecar) and returns its pid.
///
/// * `escape`: the child calls `setsid()` so it leaves the double's process group and session —
///   killing the group then misses it, which is what the test wants to observe.
/// * `inherit_stdio`: the child keeps the double's stdout/stderr open, so the parent sees no EOF on
///   the pipes until the grandchild dies.
///
/// The child's SIGTERM disposition is reset to default, so `ignoreSigterm` (an ignored signal is
/// inherited across exec) only protects the double itself.
pub fn spawn_grandchild(escape: bool, inherit_stdio: bool) -> Option<u32> {
    #[cfg(unix)]
    if crate::settings::enabled(ENV_GRANDCHILD_VIA_SHELL) {
        return spawn_orphaned_grandchild(escape, inherit_stdio);
    }
    use std::process::{Command, Stdio};
    let mut cmd = Command::new("sleep");
    cmd.arg("600").stdin(Stdio::null());
    if !inherit_stdio {
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: only async-signal-safe calls (signal, setsid) run between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                if escape {
                    libc::setsid();
                }
                Ok(())
            });
        }
    }
    #[cfg(not(unix))]
    let _ = escape;
    match cmd.spawn() {
        // The handle is dropped without waiting: the double must not reap or wait for it.
        Ok(child) => Some(child.id()),
        Err(e) => {
            eprintln!("cursor-agent-double: could not start grandchild: {e}");
            None
        }
    }
}

/// [`spawn_grandchild`] through a shell that exits at once (see [`ENV_GRANDCHILD_VIA_SHELL`]). The
/// shell reports the background job's pid on fd 3, a pipe the double reads to its end.
#[cfg(unix)]
fn spawn_orphaned_grandchild(escape: bool, inherit_stdio: bool) -> Option<u32> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let (mut reader, writer) = match std::io::pipe() {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("cursor-agent-double: could not start grandchild: {e}");
            return None;
        }
    };
    let fd = writer.as_raw_fd();
    let mut cmd = Command::new("sh");
    // The job closes fd 3 so that only the shell holds the pipe: its exit ends the read.
    cmd.args(["-c", "sleep 600 3>&- & echo $! >&3"]).stdin(Stdio::null());
    if !inherit_stdio {
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
    }
    // SAFETY: only async-signal-safe calls (signal, setsid, dup2, fcntl) run between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            if escape {
                libc::setsid();
            }
            // dup2 clears close-on-exec on its target, except when the pipe already is fd 3.
            let ok = if fd == 3 { libc::fcntl(3, libc::F_SETFD, 0) } else { libc::dup2(fd, 3) };
            if ok < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let shell = cmd.spawn();
    drop(cmd);
    drop(writer);
    let mut shell = match shell {
        Ok(shell) => shell,
        Err(e) => {
            eprintln!("cursor-agent-double: could not start grandchild: {e}");
            return None;
        }
    };
    let mut pid = String::new();
    let _ = reader.read_to_string(&mut pid);
    // Reap the shell: the job must be an orphan, not the child of a zombie.
    let _ = shell.wait();
    pid.trim().parse().ok()
}

/// Kill `pid` (a command a cancelled turn started), where signals exist.
pub fn kill(pid: u32) {
    #[cfg(unix)]
    // SAFETY: kill(2) with a pid this process started; a stale pid only fails with ESRCH.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
    #[cfg(not(unix))]
    let _ = pid;
}
