//! The parent-death watchdog (macOS; built and tested on every Unix). macOS has no
//! `PR_SET_PDEATHSIG`, so a sidecar killed outright (SIGKILL, a crash, VS Code force-quit) would
//! leave its CLIs running. Worse, a warm spare waits on stdin for its prompt: the sidecar's death
//! closes that pipe, and a CLI that reads end-of-input as "the prompt is complete" would send an
//! empty prompt into the user's chat.
//!
//! The design: each child gets a tiny watchdog, `/bin/sh` running [`SCRIPT`], forked from the
//! child after it joined its own process group and before it execs the CLI, so the watchdog is in
//! the CLI's group from its first instruction. It holds two descriptors:
//!
//! * fd 3, the read end of a *control* pipe whose only write end the sidecar holds (close-on-exec,
//!   so no CLI or tool inherits it). End-of-file there means the sidecar is gone (the kernel
//!   closes a dead process's descriptors), and the watchdog SIGKILLs its whole group.
//! * fd 4, a copy of the write end of the CLI's stdin. While the watchdog holds it the CLI cannot
//!   see end-of-input, whatever happens to the sidecar. So the sidecar's death never reaches a
//!   spare as "prompt complete": the spare is still waiting for more input when the watchdog
//!   kills it. When the sidecar has written the whole prompt it sends `go` on the control pipe
//!   ([`Release`]); the watchdog closes fd 4, and the CLI sees end-of-input once the sidecar's own
//!   stdin handle is closed too.
//!
//! After `go` the watchdog keeps reading: end-of-file (sidecar gone, or the child's guard
//! dropped) kills the group, so a running turn also dies with the sidecar. A normal end kills the
//! group anyway (see `ChildProcess::end_group`), the watchdog with it. Its stdout and stderr are
//! /dev/null: it must not hold the CLI's output pipes open, or the sidecar would wait for an
//! end-of-file that never comes.
//!
//! Everything in the forked watchdog before `execve` is async-signal-safe (fcntl, open, dup2,
//! execve, _exit) and allocates nothing: the strings are static and the descriptors are plain
//! numbers captured before the fork.

use std::ffi::CStr;
use std::io::{self, PipeReader, PipeWriter, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// fd 3: control (EOF = sidecar gone); fd 4: our copy of the CLI's stdin. `kill -KILL 0` signals
/// the watchdog's own process group, which is the CLI's.
pub(super) const SCRIPT: &CStr = c"read line <&3 || kill -KILL 0; exec 4>&-; read line <&3; kill -KILL 0";
const SH: &CStr = c"/bin/sh";

/// The pipes of one watched child, made before it is spawned.
pub(super) struct Pipes {
    control_read: PipeReader,
    control_write: PipeWriter,
    stdin_read: Option<PipeReader>,
    stdin_write: PipeWriter,
}

/// What the sidecar keeps: the control pipe's write end, held for the child's lifetime (closing
/// it tells the watchdog to kill the group).
pub(super) struct Watch {
    _control: PipeWriter,
}

/// Sends `go` once the child's whole input is written: the watchdog lets go of the CLI's stdin.
/// Dropped unsent (only a test does that) it is what a dead sidecar looks like.
pub(super) struct Release(Option<PipeWriter>);

impl Release {
    pub fn send(&mut self) {
        if let Some(mut control) = self.0.take() {
            // Three bytes into an empty pipe never block; a dead watchdog (EPIPE) needs nothing.
            let _ = control.write_all(b"go\n");
        }
    }
}

impl Pipes {
    pub fn new() -> io::Result<Pipes> {
        // std's pipes are close-on-exec: neither the CLI nor anything it starts inherits them.
        let (control_read, control_write) = std::io::pipe()?;
        let (stdin_read, stdin_write) = std::io::pipe()?;
        Ok(Pipes { control_read, control_write, stdin_read: Some(stdin_read), stdin_write })
    }

    /// The child's stdin (the read end of our stdin pipe); once.
    pub fn child_stdin(&mut self) -> std::process::Stdio {
        self.stdin_read.take().expect("child_stdin is called once").into()
    }

    /// The hook for `pre_exec` (and only that: it forks): in the child, after it joined its own
    /// process group and before it execs, it forks the watchdog. A spawn whose watchdog could not
    /// be forked fails.
    pub fn pre_exec_hook(&self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        let (control, input): (RawFd, RawFd) = (self.control_read.as_raw_fd(), self.stdin_write.as_raw_fd());
        move || {
            // SAFETY: runs in the child between fork and exec (see the module comment): only
            // async-signal-safe calls on descriptors this process has, no allocation.
            unsafe {
                match libc::fork() {
                    -1 => Err(io::Error::last_os_error()),
                    0 => become_watchdog(control, input),
                    _ => Ok(()),
                }
            }
        }
    }

    /// After spawning: the sidecar keeps the control write end and the CLI's stdin write end
    /// (with its release); the read ends are the children's alone now.
    pub fn into_parts(self) -> io::Result<(Watch, OwnedFd, Release)> {
        let release = Release(Some(self.control_write.try_clone()?));
        drop(self.control_read);
        Ok((Watch { _control: self.control_write }, self.stdin_write.into(), release))
    }
}

/// In the forked watchdog: fds 3 and 4 as [`SCRIPT`] expects, /dev/null for 0–2, exec sh.
///
/// # Safety
/// Only in a freshly forked child; never returns.
unsafe fn become_watchdog(control: RawFd, input: RawFd) -> ! {
    // SAFETY: async-signal-safe calls only; every descriptor is ours in this process.
    unsafe {
        // Move both above 9 first, so neither dup2 below overwrites the other's source.
        let control = libc::fcntl(control, libc::F_DUPFD_CLOEXEC, 10);
        let input = libc::fcntl(input, libc::F_DUPFD_CLOEXEC, 10);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        // dup2 clears close-on-exec on the new descriptor: exactly 0–4 survive the exec.
        let ok = control >= 0
            && input >= 0
            && null >= 0
            && libc::dup2(null, 0) >= 0
            && libc::dup2(null, 1) >= 0
            && libc::dup2(null, 2) >= 0
            && libc::dup2(control, 3) >= 0
            && libc::dup2(input, 4) >= 0;
        if ok {
            let argv = [SH.as_ptr(), c"-c".as_ptr(), SCRIPT.as_ptr(), std::ptr::null()];
            let envp = [std::ptr::null::<libc::c_char>()];
            libc::execve(SH.as_ptr(), argv.as_ptr(), envp.as_ptr());
        }
        libc::_exit(127)
    }
}
