//! Starting the sidecar, and the connection on its pipes.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::framing::{frames, read_frames, Stamped};
use crate::message::{notification, request};

/// How to start `cursor-bridge` (or another of its commands): its home, state and log folders in
/// one scratch folder (`home/`, `state/`, `logs/`), logging at `info` unless told otherwise.
pub struct Launcher {
    exe: PathBuf,
    /// Arguments before any the command adds (`wine` runs the sidecar's .exe given as one).
    args: Vec<OsString>,
    dir: PathBuf,
    inherit_env: bool,
    log_level: String,
    /// Set (`Some`) or removed (`None`), in this order, after the folders.
    env: Vec<(OsString, Option<OsString>)>,
    stderr_file: Option<PathBuf>,
    first_id: u64,
    cwd: Option<PathBuf>,
}

impl Launcher {
    pub fn new(exe: impl Into<PathBuf>, dir: &Path) -> Self {
        Launcher {
            exe: exe.into(),
            args: Vec::new(),
            dir: dir.to_path_buf(),
            inherit_env: true,
            log_level: "info".into(),
            env: Vec::new(),
            stderr_file: None,
            first_id: 1,
            cwd: None,
        }
    }

    /// An argument of the program (a wrapper's: the sidecar itself takes none on stdio).
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().into());
        self
    }

    /// Inherit nothing from this process's environment (`env` what it needs).
    pub fn clear_env(mut self) -> Self {
        self.inherit_env = false;
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().into(), Some(value.as_ref().into())));
        self
    }

    pub fn envs<K: AsRef<OsStr>, V: AsRef<OsStr>>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self {
        for (k, v) in vars {
            self = self.env(k, v);
        }
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().into(), None));
        self
    }

    /// `CURSOR_BRIDGE_LOG` (empty: the sidecar's default).
    pub fn log_level(mut self, level: &str) -> Self {
        self.log_level = level.into();
        self
    }

    /// A state folder other than `state/` in the scratch folder (another run's, with its caches).
    pub fn state_dir(self, state: &Path) -> Self {
        self.env("CURSOR_BRIDGE_STATE_DIR", state)
    }

    /// Its stderr into this file (else: kept in memory, [`Stderr::Captured`]).
    pub fn stderr_file(mut self, path: PathBuf) -> Self {
        self.stderr_file = Some(path);
        self
    }

    /// Start it in this folder (else this process's current one), as an editor may.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The id of the first request (each next one is one more).
    pub fn first_id(mut self, id: u64) -> Self {
        self.first_id = id;
        self
    }

    /// The command with its environment and [`arg`](Self::arg)s, without stdio.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.exe);
        cmd.args(&self.args);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        if !self.inherit_env {
            cmd.env_clear();
        }
        cmd.env("HOME", self.dir.join("home"))
            .env("CURSOR_BRIDGE_STATE_DIR", self.dir.join("state"))
            .env("CURSOR_BRIDGE_LOG_DIR", self.dir.join("logs"))
            .env("CURSOR_BRIDGE_LOG", &self.log_level);
        for (key, value) in &self.env {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        cmd
    }

    /// Start it with JSON-RPC on stdio; `decode` turns each frame it writes into a `T` (`None`:
    /// skip the frame).
    pub fn start<T: Send + 'static>(self, decode: fn(&[u8]) -> Option<T>) -> io::Result<Process<T>> {
        let mut cmd = self.command();
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        match &self.stderr_file {
            Some(path) => cmd.stderr(File::create(path)?),
            None => cmd.stderr(Stdio::piped()),
        };
        let spawned = Instant::now();
        let mut child =
            cmd.spawn().map_err(|e| io::Error::new(e.kind(), format!("starting {}: {e}", self.exe.display())))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || read_frames(stdout, decode, tx));
        let stderr = match self.stderr_file {
            Some(path) => Stderr::File(path),
            None => {
                let text = Arc::new(Mutex::new(String::new()));
                let sink = text.clone();
                let pipe = child.stderr.take().expect("stderr is piped");
                std::thread::spawn(move || {
                    for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                        sink.lock().unwrap_or_else(|p| p.into_inner()).push_str(&(line + "\n"));
                    }
                });
                Stderr::Captured(text)
            }
        };
        let conn =
            Connection { stdin: child.stdin.take(), incoming: rx, queue: VecDeque::new(), next_id: self.first_id };
        Ok(Process { child, conn, spawned, stderr })
    }
}

/// A started sidecar. Dropping it drops the handles only: the owner decides how the process ends.
pub struct Process<T> {
    pub child: Child,
    pub conn: Connection<T>,
    /// Just before the spawn.
    pub spawned: Instant,
    pub stderr: Stderr,
}

/// Where a sidecar's stderr went.
pub enum Stderr {
    Captured(Arc<Mutex<String>>),
    File(PathBuf),
}

impl Stderr {
    /// All it wrote so far.
    pub fn text(&self) -> String {
        match self {
            Stderr::Captured(text) => text.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            Stderr::File(path) => std::fs::read_to_string(path).unwrap_or_default(),
        }
    }
}

#[derive(Debug, PartialEq)]
pub enum RecvError {
    /// Nothing arrived in time.
    Timeout,
    /// The sidecar closed its stdout (and everything before was received).
    Closed,
}

/// JSON-RPC over the sidecar's stdin and stdout.
pub struct Connection<T> {
    stdin: Option<ChildStdin>,
    incoming: Receiver<Vec<Stamped<T>>>,
    /// Received, not yet taken.
    queue: VecDeque<Stamped<T>>,
    next_id: u64,
}

impl<T> Connection<T> {
    /// Write `bytes` as they are; returns the time just before the write.
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<Instant> {
        let stdin = self.stdin.as_mut().ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "stdin closed"))?;
        let at = Instant::now();
        stdin.write_all(bytes)?;
        stdin.flush()?;
        Ok(at)
    }

    /// Write the frames of `messages` in one go; returns the time just before the write.
    pub fn send(&mut self, messages: &[Value]) -> io::Result<Instant> {
        self.send_raw(&frames(messages))
    }

    /// Take `n` consecutive request ids; returns the first.
    pub fn take_ids(&mut self, n: u64) -> u64 {
        let first = self.next_id;
        self.next_id += n;
        first
    }

    /// Send a request; returns its id and the time it was sent.
    pub fn request(&mut self, method: &str, params: Value) -> io::Result<(u64, Instant)> {
        let id = self.take_ids(1);
        let sent = self.send(&[request(id, method, params)])?;
        Ok((id, sent))
    }

    pub fn notify(&mut self, method: &str, params: Value) -> io::Result<Instant> {
        self.send(&[notification(method, params)])
    }

    /// The next frame from the sidecar, in the order written.
    pub fn recv(&mut self, timeout: Duration) -> Result<Stamped<T>, RecvError> {
        if let Some(m) = self.queue.pop_front() {
            return Ok(m);
        }
        match self.incoming.recv_timeout(timeout) {
            Ok(batch) => {
                self.queue.extend(batch);
                self.queue.pop_front().ok_or(RecvError::Timeout)
            }
            Err(RecvTimeoutError::Timeout) => Err(RecvError::Timeout),
            Err(RecvTimeoutError::Disconnected) => Err(RecvError::Closed),
        }
    }

    /// End of input for the sidecar.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }
}

/// Wait for `child` to exit, at most `timeout`.
pub fn wait_with_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().ok()? {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
