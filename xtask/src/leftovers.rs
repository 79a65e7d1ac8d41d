//! No process `cargo xtask test` started may outlive it. After the last stage, `/proc` is scanned
//! (Linux) for this checkout's sidecar and CLI double — a process whose executable or `argv[0]` is
//! a `cursor-bridge` or `cursor-agent-double` anywhere under the target folder (`debug/`,
//! `release/`, a cross target, the e2e run's installed extension), or the conformance stage's
//! `copilot` in the agent cache, and that started after this run did. Survivors get a few seconds to go; then each is listed (pid, ppid, age, argv) and the run
//! fails. The closing line `leftover processes: N` joins the reliability figures of the tally.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The binaries the tests start (`copilot`: the ACP conformance stage's agent, in its cache).
const NAMES: [&str; 3] = ["cursor-bridge", "cursor-agent-double", "copilot"];
/// How long survivors get to exit after the last stage.
const GRACE: Duration = Duration::from_secs(5);
/// `/proc/<pid>/stat` counts in clock ticks of USER_HZ, which is 100 on every Linux port Rust
/// targets.
const TICKS_PER_SECOND: f64 = 100.0;

/// A process of ours still running.
#[derive(Debug, Clone, PartialEq)]
pub struct Leftover {
    pub pid: u32,
    pub ppid: u32,
    pub age: Duration,
    pub argv: Vec<String>,
}

/// Started when the run begins: remembers when that was and where the binaries live.
pub struct Watch {
    dirs: Vec<PathBuf>,
    since: Option<u64>,
}

impl Watch {
    pub fn start(root: &Path) -> Watch {
        let mut dirs = vec![root.join("target"), crate::conformance::cache_dir(root)];
        if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from) {
            dirs.push(if dir.is_absolute() { dir } else { root.join(dir) });
        }
        let dirs = dirs.into_iter().map(|d| d.canonicalize().unwrap_or(d)).collect();
        Watch { dirs, since: own_start() }
    }

    /// Wait for this run's processes to go, print the survivors and the closing line, write the
    /// line for the tally; returns how many survived (0 where this cannot be checked).
    pub fn finish(&self, root: &Path) -> usize {
        let (line, count) = match self.since {
            None => {
                eprintln!("xtask: leftover processes not checked: no /proc (the check is Linux-only)");
                ("leftover processes: not checked (no /proc)".to_string(), 0)
            }
            Some(since) => {
                let deadline = Instant::now() + GRACE;
                let mut left = scan(&self.dirs, since);
                while !left.is_empty() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(100));
                    left = scan(&self.dirs, since);
                }
                for l in &left {
                    eprintln!(
                        "xtask: leftover process {} (ppid {}, {:.0} s old): {}",
                        l.pid,
                        l.ppid,
                        l.age.as_secs_f64(),
                        l.argv.join(" ")
                    );
                }
                (format!("leftover processes: {}", left.len()), left.len())
            }
        };
        eprintln!("xtask: {line}");
        let dir = root.join("target").join("reliability");
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join("leftovers.txt"), format!("{line}\n"));
        count
    }
}

/// `(ppid, state, start ticks)` from a `/proc/<pid>/stat` line (comm may hold spaces and ')').
fn parse_stat(stat: &str) -> Option<(u32, char, u64)> {
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    Some((fields.get(1)?.parse().ok()?, fields.first()?.chars().next()?, fields.get(19)?.parse().ok()?))
}

/// This process's start, in clock ticks after boot; `None` without `/proc`.
fn own_start() -> Option<u64> {
    parse_stat(&std::fs::read_to_string("/proc/self/stat").ok()?).map(|(_, _, start)| start)
}

/// Is `path` one of our binaries under one of `dirs`?
fn is_ours(path: &Path, dirs: &[PathBuf]) -> bool {
    let named = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| NAMES.contains(&n));
    named && dirs.iter().any(|d| path.starts_with(d))
}

/// Running (not zombie) processes started at or after `since` whose executable or `argv[0]` is
/// one of our binaries under `dirs`.
pub fn scan(dirs: &[PathBuf], since: u64) -> Vec<Leftover> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let uptime: Option<f64> = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split_whitespace().next().and_then(|s| s.parse().ok()));
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let proc_dir = entry.path();
        let Some((ppid, state, start)) =
            std::fs::read_to_string(proc_dir.join("stat")).ok().as_deref().and_then(parse_stat)
        else {
            continue;
        };
        if state == 'Z' || start < since || pid == std::process::id() {
            continue;
        }
        let argv: Vec<String> = std::fs::read(proc_dir.join("cmdline"))
            .map(|c| {
                c.split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        // A binary rebuilt while it ran reads as "<path> (deleted)".
        let exe = std::fs::read_link(proc_dir.join("exe"))
            .ok()
            .map(|p| PathBuf::from(p.to_string_lossy().trim_end_matches(" (deleted)").to_string()));
        let arg0 = argv.first().map(PathBuf::from).map(|a| {
            if a.is_absolute() {
                a
            } else {
                std::fs::read_link(proc_dir.join("cwd")).map(|cwd| cwd.join(&a)).unwrap_or(a)
            }
        });
        if exe.iter().chain(arg0.iter()).any(|p| is_ours(p, dirs)) {
            let age = uptime.map(|up| (up - start as f64 / TICKS_PER_SECOND).max(0.0)).unwrap_or(0.0);
            out.push(Leftover { pid, ppid, age: Duration::from_secs_f64(age), argv });
        }
    }
    out.sort_by_key(|l| l.pid);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse() {
        let line = "42 (cursor (x)) S 7 42 40 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 0 0";
        assert_eq!(parse_stat(line), Some((7, 'S', 98765)));
    }

    #[test]
    fn only_our_binaries_under_the_target_folder_count() {
        let dirs = [PathBuf::from("/src/checkout/target")];
        assert!(is_ours(Path::new("/src/checkout/target/debug/cursor-agent-double"), &dirs));
        assert!(is_ours(Path::new("/src/checkout/target/release/cursor-bridge"), &dirs));
        assert!(is_ours(Path::new("/src/checkout/target/e2e/run/extensions/x/server/cursor-bridge"), &dirs));
        assert!(!is_ours(Path::new("/other/checkout/target/debug/cursor-bridge"), &dirs), "another checkout");
        assert!(!is_ours(Path::new("/src/checkout/target/debug/xtask"), &dirs));
        assert!(!is_ours(Path::new("/usr/bin/sleep"), &dirs));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_process_started_from_the_target_folder_is_left_over_until_it_ends() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let dirs = [dir.path().canonicalize().unwrap()];
        let fake = dirs[0].join("debug").join("cursor-agent-double");
        let since = own_start().unwrap();
        // `sleep` posing as the double: argv[0] is what a test launching the double would show.
        let mut child = std::process::Command::new("sleep").arg("30").arg0(&fake).spawn().unwrap();
        let found = scan(&dirs, since);
        let mine: Vec<_> = found.iter().filter(|l| l.pid == child.id()).collect();
        assert_eq!(mine.len(), 1, "{found:?}");
        assert_eq!(mine[0].ppid, std::process::id());
        assert_eq!(mine[0].argv, vec![fake.display().to_string(), "30".to_string()]);
        assert!(scan(&[PathBuf::from("/nowhere")], since).iter().all(|l| l.pid != child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(scan(&dirs, since).iter().all(|l| l.pid != child.id()), "a reaped process is no leftover");
    }
}
