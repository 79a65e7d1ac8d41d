//! Linux: start a child the way posix_spawn does, with what posix_spawn cannot do.
//!
//! Every child must arm its parent-death signal itself, between fork and exec (`mod.rs`). Done
//! in a `pre_exec` hook, that makes std *fork* the sidecar: its page tables are copied, and until
//! the child execs, every page either side writes is copied again. That was ~2 ms per turn, most
//! of a new conversation's first-delta overhead (docs/performance.md). Here the child is made with
//! `clone(CLONE_VM | CLONE_VFORK)`, as glibc's posix_spawn does: it runs on a stack of its own in
//! the sidecar's memory while the calling thread waits, makes raw system calls only (new process
//! group, parent-death signal, stdio, working folder, signal state), and execs. Nothing is copied.
//!
//! The rules the child keeps, since it shares the sidecar's memory: everything it reads is built
//! before the clone (paths, argv, envp as C strings, the descriptors); it allocates nothing, takes
//! no lock and calls no Rust code that could; it reports a failure through an atomic the parent
//! reads after the clone returns (the parent is suspended until the child execs or exits). All
//! signals are blocked around the clone, and the child resets caught signals to their default
//! before unblocking, so no handler of the sidecar ever runs in it.
//!
//! The child has no tokio handle: [`Leader`] waits for it through its pidfd (a kernel without
//! pidfds gets the std spawn instead, see [`usable`]).

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

use super::SpawnSpec;

/// The child's stack. It runs a handful of system calls; glibc's posix_spawn uses less.
const STACK: usize = 64 * 1024;

/// The child's ends of its three pipes, and the parent's.
pub struct Spawned {
    pub pid: u32,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Pidfds work on this kernel (≥ 5.3): the only way this module waits for a child, so without
/// them every spawn takes the std path.
pub fn usable() -> bool {
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(|| {
        // SAFETY: pidfd_open of ourselves; the descriptor is closed right away.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
        if fd >= 0 {
            // SAFETY: the descriptor was just opened here.
            unsafe { libc::close(fd as i32) };
        }
        fd >= 0
    })
}

/// What the child reads. Built before the clone; the child only reads it (and writes `error`).
struct Plan {
    program: CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: Option<CString>,
    /// The child's stdin, stdout, stderr.
    fds: [RawFd; 3],
    sidecar: libc::pid_t,
    /// The parent thread's signal mask, which the child restores just before exec.
    mask: libc::sigset_t,
    /// errno of the step that failed in the child; 0 if it exec'd.
    error: AtomicI32,
}

/// Start `spec` with stdin, stdout and stderr piped, in its own process group, its parent-death
/// signal armed. Not found or not executable fail here with the kinds std's spawn gives.
pub fn spawn(spec: &SpawnSpec) -> io::Result<Spawned> {
    let program = resolve(&spec.program, spec.cwd.as_deref(), child_path(spec).as_deref())?;
    let argv_c: Vec<CString> = std::iter::once(spec.program.as_os_str())
        .chain(spec.args.iter().map(OsString::as_os_str))
        .map(c_string)
        .collect::<io::Result<_>>()?;
    let envp_c = environment(spec)?;
    let (stdin_child, stdin) = pipe()?;
    let (stdout, stdout_child) = pipe()?;
    let (stderr, stderr_child) = pipe()?;
    let mut plan = Plan {
        program: c_string(program.as_os_str())?,
        argv: argv_c.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect(),
        envp: envp_c.iter().map(|e| e.as_ptr()).chain(std::iter::once(std::ptr::null())).collect(),
        cwd: spec.cwd.as_deref().map(|c| c_string(c.as_os_str())).transpose()?,
        fds: [stdin_child.as_raw_fd(), stdout_child.as_raw_fd(), stderr_child.as_raw_fd()],
        // SAFETY: getpid cannot fail.
        sidecar: unsafe { libc::getpid() },
        // SAFETY: an all-zero sigset_t is a valid (empty) set; it is overwritten below.
        mask: unsafe { std::mem::zeroed() },
        error: AtomicI32::new(0),
    };
    let mut stack = vec![0u8; STACK];
    // SAFETY: the top of the allocation, rounded down to the 16 bytes x86-64 and aarch64 want.
    let top = unsafe { stack.as_mut_ptr().add(STACK) as usize & !15 } as *mut libc::c_void;
    // SAFETY: the child (child_main) only reads `plan` and writes its atomic, on its own stack,
    // and makes async-signal-safe system calls; this thread is suspended until it has exec'd or
    // exited (CLONE_VFORK), so `plan`, `stack` and the C strings outlive every use.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut plan.mask);
        let pid = libc::clone(
            child_main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &plan as *const Plan as *mut libc::c_void,
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &plan.mask, std::ptr::null_mut());
        if pid < 0 {
            return Err(clone_error);
        }
        pid
    };
    drop((stdin_child, stdout_child, stderr_child, stack, argv_c, envp_c));
    match plan.error.load(Ordering::Acquire) {
        0 => Ok(Spawned { pid: pid as u32, stdin, stdout, stderr }),
        errno => {
            // SAFETY: our child, which exited without exec; nothing else waits for it.
            unsafe { libc::waitpid(pid, &mut 0, 0) };
            Err(io::Error::from_raw_os_error(errno))
        }
    }
}

/// The child. Shares the sidecar's memory: raw system calls only (see the module comment).
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `Plan`, alive and unchanged until this process execs or exits.
    let plan = unsafe { &*(arg as *const Plan) };
    // SAFETY: each call is a plain system call on values built by the parent; errno is read
    // right after the call that failed.
    unsafe {
        let fail = |plan: &Plan| -> ! {
            plan.error.store(*libc::__errno_location(), Ordering::Release);
            libc::_exit(127)
        };
        // A signal caught by the sidecar would run its handler here, in its memory: default for
        // all of them (exec would reset them anyway). SIGPIPE: Rust ignores it; a spawn resets it.
        for signal in 1..=64 {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
                continue; // a signal number glibc keeps for itself
            }
            let caught = current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN;
            if caught || (signal == libc::SIGPIPE && current.sa_sigaction == libc::SIG_IGN) {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        // Its own process group: cancel must reach the shells and tools the CLI starts.
        if libc::setpgid(0, 0) != 0 {
            fail(plan);
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            fail(plan);
        }
        // The sidecar died before the signal was armed: it would never come. Do not run as an orphan.
        if libc::getppid() != plan.sidecar {
            libc::_exit(1);
        }
        for (target, &fd) in plan.fds.iter().enumerate() {
            let target = target as RawFd;
            let ok = if fd == target {
                libc::fcntl(fd, libc::F_SETFD, 0) == 0 // dup2 onto itself would keep close-on-exec
            } else {
                libc::dup2(fd, target) == target
            };
            if !ok {
                fail(plan);
            }
        }
        if let Some(cwd) = &plan.cwd {
            if libc::chdir(cwd.as_ptr()) != 0 {
                fail(plan);
            }
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &plan.mask, std::ptr::null_mut());
        libc::execve(plan.program.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
        fail(plan)
    }
}

/// The leader of a child started here: waited for through its pidfd, reaped with waitpid.
pub struct Leader {
    pid: libc::pid_t,
    status: Option<ExitStatus>,
}

impl Leader {
    pub fn new(pid: u32) -> Self {
        Leader { pid: pid as libc::pid_t, status: None }
    }

    /// Reap it if it has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            let mut status = 0;
            // SAFETY: waitpid on our own child, which only this handle reaps.
            match unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) } {
                0 => return Ok(None),
                pid if pid == self.pid => self.status = Some(ExitStatus::from_raw(status)),
                _ => return Err(io::Error::last_os_error()),
            }
        }
        Ok(self.status)
    }

    /// Until it has exited (the pidfd turns readable), then reap it.
    pub async fn wait(&mut self, pidfd: &tokio::io::unix::AsyncFd<OwnedFd>) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            // Readable once it has exited; the readiness is never cleared after that.
            let _ = pidfd.readable().await?;
        }
    }
}

/// Where the program is, as execvp would find it (a relative path is the child's working
/// folder's), checked the way a spawn would fail: not there, or not executable.
fn resolve(program: &Path, cwd: Option<&Path>, path: Option<&OsStr>) -> io::Result<PathBuf> {
    if program.as_os_str().as_bytes().contains(&b'/') {
        let full = match cwd {
            Some(cwd) if program.is_relative() => cwd.join(program),
            _ => program.to_path_buf(),
        };
        return executable(&full).map(|()| full);
    }
    let mut denied = None;
    for dir in std::env::split_paths(path.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"))) {
        let candidate = if dir.as_os_str().is_empty() { PathBuf::from(".").join(program) } else { dir.join(program) };
        match executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => denied = Some(e),
            Err(_) => {}
        }
    }
    Err(denied
        .unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{} is not on PATH", program.display()))))
}

fn executable(path: &Path) -> io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() || meta.permissions().mode() & 0o111 == 0 {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("{} is not executable", path.display())));
    }
    Ok(())
}

/// The PATH the child will have (a bare program name is looked up in it).
fn child_path(spec: &SpawnSpec) -> Option<OsString> {
    if let Some((_, value)) = spec.env.iter().rev().find(|(k, _)| k == "PATH") {
        return Some(value.clone());
    }
    if spec.env_remove.iter().any(|k| k == "PATH") {
        return None;
    }
    std::env::var_os("PATH")
}

/// Inherited, then `env_remove`, then `env`, as `KEY=value` C strings.
fn environment(spec: &SpawnSpec) -> io::Result<Vec<CString>> {
    let mut vars: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for key in &spec.env_remove {
        vars.remove(key);
    }
    for (key, value) in &spec.env {
        vars.insert(key.clone(), value.clone());
    }
    vars.into_iter()
        .map(|(k, v)| {
            let mut entry = k.into_vec();
            entry.push(b'=');
            entry.extend_from_slice(v.as_bytes());
            CString::new(entry)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an environment variable holds a NUL byte"))
        })
        .collect()
}

fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an argument holds a NUL byte"))
}

/// A pipe, both ends close-on-exec: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two new descriptors, owned by us from here on.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_unrunnable_program_fails_like_a_spawn_would() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        let runnable = dir.path().join("runnable");
        std::fs::write(&runnable, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&runnable, std::fs::Permissions::from_mode(0o755)).unwrap();
        let kind = |r: io::Result<PathBuf>| r.unwrap_err().kind();
        assert_eq!(kind(resolve(&dir.path().join("nothing"), None, None)), io::ErrorKind::NotFound);
        assert_eq!(kind(resolve(&plain, None, None)), io::ErrorKind::PermissionDenied);
        assert_eq!(kind(resolve(dir.path(), None, None)), io::ErrorKind::PermissionDenied);
        assert_eq!(resolve(Path::new("./runnable"), Some(dir.path()), None).unwrap(), dir.path().join("./runnable"));
        let path = std::env::join_paths([dir.path().join("none"), dir.path().to_path_buf()]).unwrap();
        assert_eq!(resolve(Path::new("runnable"), None, Some(&path)).unwrap(), runnable);
        assert_eq!(kind(resolve(Path::new("plain"), None, Some(&path))), io::ErrorKind::PermissionDenied);
        assert_eq!(kind(resolve(Path::new("nothing"), None, Some(&path))), io::ErrorKind::NotFound);
    }
}
