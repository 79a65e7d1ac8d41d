//! Signals that never reach a reused pid: a leader through its pidfd, a process seen in the table
//! only if it is still that process (pidfd first, then its start time checked), and kill(2) where
//! there are no pidfds (Linux < 5.3, other Unix). Windows signals nothing here (the Job Object
//! ends the tree, `job.rs`).

use super::table::{read_proc, Proc};

#[derive(Clone, Copy)]
pub(super) enum Signal {
    Term,
    Kill,
}

impl Signal {
    #[cfg(unix)]
    pub(super) fn number(self) -> i32 {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

#[cfg(unix)]
pub(super) fn signal_group(pgid: u32, signal: Signal) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
    unsafe {
        libc::kill(-(pgid as i32), signal.number());
    }
}

#[cfg(unix)]
pub(super) fn signal_pid(pid: u32, signal: Signal) {
    // SAFETY: plain kill(2).
    unsafe {
        libc::kill(pid as i32, signal.number());
    }
}

#[cfg(not(unix))]
pub(super) fn signal_group(_pgid: u32, _signal: Signal) {}
#[cfg(not(unix))]
pub(super) fn signal_pid(_pid: u32, _signal: Signal) {}

/// Signal a process seen in `/proc`, only if it is still that process: a pidfd is opened first,
/// then the start time is checked, so a pid reused in between is never signalled.
pub(super) fn signal_seen(p: &Proc, signal: Signal) {
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
pub(super) mod pidfd {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

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

#[cfg(all(test, unix))]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backend::process::spawn;
    use crate::backend::process::tests::sh;

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
}
