//! The CLI double run directly, the way the sidecar runs a turn's CLI: the reference of the
//! first-delta and streaming figures. And what every process started here shares.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};

use crate::bench::Bins;

/// Environment of every process started here: nothing inherited but PATH; home and Cursor data in
/// the scratch folder.
pub fn base_env(dir: &Path) -> Vec<(OsString, OsString)> {
    vec![
        ("PATH".into(), std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into())),
        ("HOME".into(), dir.join("home").into_os_string()),
        ("CURSOR_DATA_DIR".into(), dir.join("data").into_os_string()),
    ]
}

/// Kills and reaps the child when dropped (if it is still running).
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A stream-json line that is a text delta of partial output: an `assistant` event with
/// `timestamp_ms` and no `model_call_id` (flushes have one or lack the other).
fn is_text_delta(line: &[u8]) -> bool {
    line.starts_with(br#"{"type":"assistant""#)
        && contains(line, b"\"timestamp_ms\"")
        && !contains(line, b"\"model_call_id\"")
}

pub struct DirectRun {
    pub spawned: Instant,
    pub first_text: Option<Instant>,
    pub last_text: Option<Instant>,
    pub deltas: usize,
    /// stdout bytes from the start of the first delta line to the end of the last.
    pub window_bytes: usize,
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let h = format!("{:032x}", nanos ^ ((std::process::id() as u128) << 64));
    format!("{}-{}-4{}-a{}-{}", &h[0..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
}

/// Run the double the way the sidecar runs a new chat's turn, reading its stdout directly.
pub fn run_double_direct(
    bins: &Bins,
    dir: &Path,
    ws: &Path,
    env: &[(&str, String)],
    prompt: &str,
) -> Result<DirectRun> {
    let mut cmd = Command::new(&bins.double);
    cmd.args(["-p", "--output-format", "stream-json", "--stream-partial-output", "--model", "auto", "--workspace"])
        .arg(ws)
        .args(["--resume", &uuid_like(), "--trust"])
        .current_dir(ws)
        .env_clear()
        .envs(base_env(dir))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let spawned = Instant::now();
    let mut child = Guard(cmd.spawn().context("starting the CLI double")?);
    let mut stdin = child.0.stdin.take().ok_or_else(|| anyhow!("no stdin"))?;
    stdin.write_all(prompt.as_bytes())?;
    drop(stdin);
    let mut out = BufReader::with_capacity(64 * 1024, child.0.stdout.take().ok_or_else(|| anyhow!("no stdout"))?);
    let mut run = DirectRun { spawned, first_text: None, last_text: None, deltas: 0, window_bytes: 0 };
    let (mut offset, mut window_start) = (0usize, 0usize);
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        let n = out.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        if is_text_delta(&line) {
            let now = Instant::now();
            if run.first_text.is_none() {
                run.first_text = Some(now);
                window_start = offset;
            }
            run.last_text = Some(now);
            run.deltas += 1;
            run.window_bytes = offset + n - window_start;
        }
        offset += n;
    }
    let status = child.0.wait()?;
    if !status.success() {
        bail!("the CLI double failed ({status})");
    }
    Ok(run)
}
