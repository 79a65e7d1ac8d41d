//! Running a process to its end and seeing what it left behind. The test process is a child
//! subreaper, so whatever outlives its parent is re-parented to us and shows among our
//! descendants. A process is waited for by looking at `/proc` (it stays a zombie until reaped:
//! the spawn helper keeps it so, its pidfd open), and the leftovers are listed *before* the helper
//! reaps it, since reaping also kills what is left in its process group.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cursor_bridge::backend::process::{self, ChildProcess};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// What a process printed, collected as it runs.
#[derive(Clone, Default)]
pub struct Output(Arc<Mutex<Vec<u8>>>);

impl Output {
    /// Read `pipe` to its end into a new `Output`; the task ends at end of file.
    pub fn collect(pipe: Option<impl AsyncRead + Unpin + Send + 'static>) -> (Output, JoinHandle<()>) {
        let out = Output::default();
        let sink = out.clone();
        let task = tokio::spawn(async move {
            let Some(mut pipe) = pipe else { return };
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
                sink.0.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        (out, task)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Until `pid` has exited (a zombie, or gone), at most `bound`; false when it is still running.
pub async fn exited(pid: u32, bound: Duration) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        match state(pid) {
            None | Some('Z') | Some('X') => return true,
            Some(_) if Instant::now() >= deadline => return false,
            Some(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// The processes below this test that still run (zombies aside), but `except` and their
/// descendants, each as `pid argv`. Waits up to `grace` for them to go first.
pub async fn left_over(except: &[u32], grace: Duration) -> Vec<String> {
    let deadline = Instant::now() + grace;
    loop {
        let spared: Vec<u32> =
            except.iter().flat_map(|&pid| std::iter::once(pid).chain(process::descendants_of(pid))).collect();
        let left: Vec<u32> = process::descendants_of(std::process::id())
            .into_iter()
            .filter(|pid| !spared.contains(pid) && !matches!(state(*pid), None | Some('Z') | Some('X')))
            .collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left.iter().map(|pid| format!("{pid} {}", cmdline(*pid))).collect();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reap `child`, or stop it (SIGTERM, then SIGKILL) when it is still running; its exit code.
pub async fn reap(child: &mut ChildProcess) -> Option<i32> {
    if child.is_running() {
        child.terminate(Duration::from_secs(2)).await.and_then(|s| s.code())
    } else {
        child.wait().await.ok().and_then(|s| s.code())
    }
}

/// Once every child is reaped: kill what [`left_over`] found (orphans no running child owns, so
/// one failure does not spoil the next test) and reap zombies.
pub fn clean_up() {
    process::sweep_orphans();
}

fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.trim_start().chars().next()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " ").trim().to_string())
        .unwrap_or_default()
}
