//! The closing lines of `cargo xtask test`: one per test group (what the reliability suites
//! measured), then the total over every runner, so the end of a long log says what ran.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};

/// Tests counted so far, per runner.
#[derive(Default)]
pub struct Tally {
    rows: Vec<(String, u64, u64)>,
}

impl Tally {
    pub fn add(&mut self, runner: &str, passed: u64, failed: u64) {
        self.rows.push((runner.to_string(), passed, failed));
    }

    /// The counts a runner's closing line gives (`… 637 passed, 0 failed`, nextest's or e2e's).
    pub fn add_closing_line(&mut self, runner: &str, line: &str) {
        self.add(runner, number_before(line, " passed").unwrap_or(0), number_before(line, " failed").unwrap_or(0));
    }

    /// Reliability figures the suites wrote to target/reliability/*.txt, then the totals.
    pub fn print(&self, root: &Path) {
        let dir = root.join("target").join("reliability");
        let mut lines: Vec<String> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                    .flat_map(|t| t.lines().map(str::to_string).collect::<Vec<_>>())
                    .collect()
            })
            .unwrap_or_default();
        lines.sort();
        for line in lines {
            println!("{line}");
        }
        for (runner, passed, failed) in &self.rows {
            println!("{runner}: {passed} passed, {failed} failed");
        }
        let passed: u64 = self.rows.iter().map(|r| r.1).sum();
        let failed: u64 = self.rows.iter().map(|r| r.2).sum();
        println!("total: {passed} passed, {failed} failed");
    }
}

/// Run `cmd`, forwarding its output as it comes, and return the lines for which `keep` is true.
/// Fails like `run_cmd` when the command fails.
pub fn run_scanned(cmd: &mut Command, keep: fn(&str) -> bool) -> Result<Vec<String>> {
    eprintln!("$ {}", crate::describe(cmd));
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("could not start {}", crate::describe(cmd)))?;
    let kept = Arc::new(Mutex::new(Vec::new()));
    let forward = |pipe: Box<dyn std::io::Read + Send>, to_stderr: bool| {
        let kept = kept.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if to_stderr {
                    let _ = writeln!(std::io::stderr(), "{line}");
                } else {
                    let _ = writeln!(std::io::stdout(), "{line}");
                }
                if keep(&line) {
                    kept.lock().unwrap_or_else(|p| p.into_inner()).push(line);
                }
            }
        })
    };
    let out = forward(Box::new(child.stdout.take().expect("piped")), false);
    let err = forward(Box::new(child.stderr.take().expect("piped")), true);
    let status = child.wait()?;
    let _ = out.join();
    let _ = err.join();
    if !status.success() {
        bail!("{} failed ({status})", crate::describe(cmd));
    }
    let lines = kept.lock().unwrap_or_else(|p| p.into_inner()).clone();
    Ok(lines)
}

/// The number right after `label` in `line` (`"… 205 tests run: 205 passed, 1 skipped"`).
pub fn number_before(line: &str, label: &str) -> Option<u64> {
    let i = line.find(label)?;
    line[..i].trim_end().rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// The number after `prefix` (`"ℹ pass 216"`).
pub fn number_after(line: &str, prefix: &str) -> Option<u64> {
    let rest = line.trim_start().strip_prefix(prefix)?;
    rest.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_runner_counts() {
        let nextest = "     Summary [  23.1s] 205 tests run: 204 passed, 1 failed, 0 skipped";
        assert_eq!(number_before(nextest, " passed"), Some(204));
        assert_eq!(number_before(nextest, " failed"), Some(1));
        assert_eq!(number_after("ℹ pass 216", "ℹ pass"), Some(216));
        assert_eq!(number_after("ℹ fail 0", "ℹ fail"), Some(0));
        assert_eq!(number_before("e2e: 33 passed, 0 failed", " passed"), Some(33));
        assert_eq!(number_before("nothing here", " passed"), None);
    }
}
