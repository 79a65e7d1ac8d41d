//! `cargo xtask fuzz`: a bounded run of every coverage-guided fuzz target in `fuzz/` (cargo fuzz /
//! libFuzzer), one after the other, each seeded from `fuzz/seeds/<target>/`.
//!
//! On a stable toolchain cargo fuzz's default AddressSanitizer build needs `-Zsanitizer=address`,
//! which stable rustc accepts only with `RUSTC_BOOTSTRAP=1`; this module sets that for the cargo
//! fuzz commands it runs and nowhere else. `CURSOR_BRIDGE_FUZZ_SANITIZER=none` builds without a
//! sanitizer instead (about 3x the executions per second, and no `RUSTC_BOOTSTRAP`); the parsers
//! under test are safe Rust, so a panic is what a finding looks like either way. Switching between
//! the two rebuilds everything (one `fuzz/target` directory).
//!
//! Files: new corpus entries go to `fuzz/corpus/<target>/` (git-ignored, kept between runs so
//! later runs start where earlier ones stopped), crashes to `fuzz/artifacts/<target>/`
//! (git-ignored), libFuzzer's output to `fuzz/target/xtask-logs/<target>.log`. See
//! `fuzz/README.md`.

use std::fmt;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// The fuzz targets, in the order they run (`fuzz/fuzz_targets/<name>.rs`).
pub const TARGETS: &[&str] = &["frame_codec", "stream_parser", "model_list", "mcp_request", "tool_calls"];

/// Overrides the seconds per target given to [`run`].
pub const SECONDS_ENV: &str = "CURSOR_BRIDGE_FUZZ_SECONDS";

/// `address` (the default) or `none`.
pub const SANITIZER_ENV: &str = "CURSOR_BRIDGE_FUZZ_SANITIZER";

/// One input that takes longer than this is reported as a hang (libFuzzer `-timeout`).
const UNIT_TIMEOUT_SECS: u64 = 20;

/// What a bounded run found, one entry per target.
#[derive(Debug, Clone, Default)]
pub struct FuzzSummary {
    pub targets: Vec<TargetSummary>,
}

#[derive(Debug, Clone, Default)]
pub struct TargetSummary {
    pub name: String,
    pub sanitizer: String,
    /// Wall-clock seconds of the fuzzing itself (the build is not counted).
    pub seconds: f64,
    /// Inputs executed (`stat::number_of_executed_units`).
    pub runs: u64,
    pub execs_per_sec: u64,
    /// Coverage counters (`cov:`) and features (`ft:`) of the last status line.
    pub coverage: Option<u64>,
    pub features: Option<u64>,
    /// Inputs in the corpus at the end, and how many this run added.
    pub corpus: Option<u64>,
    pub new_units: Option<u64>,
    pub peak_rss_mb: Option<u64>,
    /// Crash, timeout, leak and out-of-memory inputs written by this run (the run fails if any).
    pub crashes: Vec<PathBuf>,
    pub log: PathBuf,
}

impl fmt::Display for FuzzSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for t in &self.targets {
            writeln!(f, "{t}")?;
        }
        Ok(())
    }
}

impl fmt::Display for TargetSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |v: Option<u64>| v.map_or_else(|| "?".to_owned(), |v| v.to_string());
        write!(
            f,
            "{:<14} {:>4.0} s  {:>9} runs  {:>6}/s  cov {:>5}  ft {:>6}  corpus {:>5} (+{})  rss {} MB  [{}]  crashes {}",
            self.name,
            self.seconds,
            self.runs,
            self.execs_per_sec,
            opt(self.coverage),
            opt(self.features),
            opt(self.corpus),
            opt(self.new_units),
            opt(self.peak_rss_mb),
            self.sanitizer,
            self.crashes.len(),
        )?;
        for c in &self.crashes {
            write!(f, "\n    {}", c.display())?;
        }
        Ok(())
    }
}

/// Installs cargo-fuzz if it is missing, builds the targets, fuzzes each for `seconds_per_target`
/// (or `$CURSOR_BRIDGE_FUZZ_SECONDS`), prints a line per target and returns the summary. Fails,
/// naming the input and how to reproduce it, if any target crashed, hung or ran out of memory.
pub fn run(root: &Path, seconds_per_target: u64) -> Result<FuzzSummary> {
    let seconds = match std::env::var(SECONDS_ENV) {
        Ok(s) => s.trim().parse::<u64>().with_context(|| format!("{SECONDS_ENV}={s:?} is not a number of seconds"))?,
        Err(_) => seconds_per_target,
    };
    if seconds == 0 {
        bail!("fuzzing for 0 seconds per target would run nothing");
    }
    let sanitizer = std::env::var(SANITIZER_ENV).unwrap_or_else(|_| "address".to_owned());
    if !matches!(sanitizer.as_str(), "address" | "none") {
        bail!("{SANITIZER_ENV}={sanitizer:?}: expected `address` or `none`");
    }
    let fuzz_dir = root.join("fuzz");
    if !fuzz_dir.join("Cargo.toml").is_file() {
        bail!("{} has no Cargo.toml", fuzz_dir.display());
    }

    ensure_cargo_fuzz()?;

    // Build once with the output shown (the first build takes minutes); the runs reuse it.
    let build_started = Instant::now();
    run_visible(&mut cargo_fuzz(root, "build", &sanitizer))?;
    eprintln!("xtask: fuzz targets built in {:.0?}", build_started.elapsed());

    let log_dir = fuzz_dir.join("target").join("xtask-logs");
    fs::create_dir_all(&log_dir).with_context(|| format!("creating {}", log_dir.display()))?;
    let mut summary = FuzzSummary::default();
    for &name in TARGETS {
        let target = run_target(root, name, seconds, &sanitizer, &log_dir)?;
        eprintln!("xtask: fuzz {target}");
        summary.targets.push(target);
    }

    println!("fuzzing summary ({seconds} s per target):\n{summary}");
    let crashed: Vec<&TargetSummary> = summary.targets.iter().filter(|t| !t.crashes.is_empty()).collect();
    if !crashed.is_empty() {
        let mut msg = String::from("fuzzing found crashes:");
        for t in crashed {
            for c in &t.crashes {
                msg.push_str(&format!(
                    "\n  {}: {}\n    reproduce: cd {} && {}cargo fuzz run --sanitizer {sanitizer} {} {}\n    log: {}",
                    t.name,
                    c.display(),
                    root.display(),
                    if sanitizer == "address" { "RUSTC_BOOTSTRAP=1 " } else { "" },
                    t.name,
                    c.display(),
                    t.log.display(),
                ));
            }
        }
        bail!("{msg}");
    }
    Ok(summary)
}

fn run_target(root: &Path, name: &str, seconds: u64, sanitizer: &str, log_dir: &Path) -> Result<TargetSummary> {
    let fuzz_dir = root.join("fuzz");
    let seeds = fuzz_dir.join("seeds").join(name);
    let corpus = fuzz_dir.join("corpus").join(name);
    let artifacts = fuzz_dir.join("artifacts").join(name);
    fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
    fs::create_dir_all(&artifacts).with_context(|| format!("creating {}", artifacts.display()))?;
    if !seeds.is_dir() {
        bail!("no seed corpus at {}", seeds.display());
    }
    let before = findings(&artifacts)?;

    let log = log_dir.join(format!("{name}.log"));
    let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd = cargo_fuzz(root, "run", sanitizer);
    // The first corpus directory is where libFuzzer writes new inputs; the seeds are only read.
    cmd.arg(name)
        .arg(&corpus)
        .arg(&seeds)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-timeout={UNIT_TIMEOUT_SECS}"))
        .arg("-print_final_stats=1")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    eprintln!("$ {}  (for {seconds} s, output in {})", describe(&cmd), log.display());
    let started = Instant::now();
    let status = cmd.status().with_context(|| format!("could not start {}", describe(&cmd)))?;
    let elapsed = started.elapsed().as_secs_f64();
    let text = fs::read_to_string(&log).unwrap_or_default();

    let mut crashes: Vec<PathBuf> = findings(&artifacts)?.into_iter().filter(|p| !before.contains(p)).collect();
    crashes.sort();
    if !status.success() && crashes.is_empty() {
        // A failure that left no input behind (build error, bad flag, ...): show why.
        bail!("{} failed ({status}); last lines of {}:\n{}", describe(&cmd), log.display(), tail(&text, 30));
    }
    if !crashes.is_empty() {
        eprintln!("xtask: fuzz target {name} found a problem (full output in {}):\n{}", log.display(), why(&text));
    }

    let status_line = text.lines().rev().find(|l| l.starts_with('#') && l.contains(" cov: "));
    let field = |line: Option<&str>, key: &str| -> Option<u64> {
        let rest = line?.split(key).nth(1)?;
        let digits: String = rest.trim_start().chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    let stat = |key: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(&format!("stat::{key}:")))?;
        line.rsplit(':').next()?.trim().parse().ok()
    };
    let runs = stat("number_of_executed_units").unwrap_or(0);
    Ok(TargetSummary {
        name: name.to_owned(),
        sanitizer: sanitizer.to_owned(),
        seconds: elapsed,
        runs,
        execs_per_sec: stat("average_exec_per_sec").unwrap_or_else(|| (runs as f64 / elapsed.max(1.0)) as u64),
        coverage: field(status_line, " cov:"),
        features: field(status_line, " ft:"),
        corpus: field(status_line, " corp:"),
        new_units: stat("new_units_added"),
        peak_rss_mb: stat("peak_rss_mb"),
        crashes,
        log,
    })
}

/// Inputs libFuzzer saves when something went wrong (`slow-unit-*` is only a warning).
fn findings(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if ["crash-", "timeout-", "oom-", "leak-"].iter().any(|p| name.starts_with(p)) {
            found.push(path);
        }
    }
    Ok(found)
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `cargo fuzz <subcommand>` in the project root, with the sanitizer chosen.
fn cargo_fuzz(root: &Path, subcommand: &str, sanitizer: &str) -> Command {
    let mut cmd = cargo();
    cmd.current_dir(root).args(["fuzz", subcommand, "--sanitizer", sanitizer]);
    if sanitizer == "address" {
        // `-Zsanitizer=address` on a stable toolchain (see the module docs).
        cmd.env("RUSTC_BOOTSTRAP", "1");
    }
    cmd
}

fn ensure_cargo_fuzz() -> Result<()> {
    let found = cargo()
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Ok(());
    }
    eprintln!("xtask: cargo-fuzz is not installed; installing it from crates.io (about a minute)");
    run_visible(cargo().args(["install", "cargo-fuzz", "--locked"]))
}

fn run_visible(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {}", describe(cmd));
    let status = cmd.status().with_context(|| format!("could not start {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed ({status})", describe(cmd));
    }
    Ok(())
}

fn describe(cmd: &Command) -> String {
    let envs = cmd.get_envs().filter_map(|(k, v)| Some(format!("{}={} ", k.to_string_lossy(), v?.to_string_lossy())));
    envs.chain(std::iter::once(cmd.get_program().to_string_lossy().into_owned()))
        .chain(cmd.get_args().map(|a| format!(" {}", a.to_string_lossy())))
        .collect()
}

/// The panic message or sanitizer report of a failed run, else its last lines.
fn why(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let report: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l.contains("panicked at")
                || l.contains("ERROR: AddressSanitizer")
                || l.starts_with("SUMMARY:")
                || l.contains("ERROR: libFuzzer: timeout")
                || l.contains("out-of-memory")
        })
        .flat_map(|(i, _)| lines[i..(i + 3).min(lines.len())].iter().copied())
        .collect();
    if report.is_empty() {
        tail(text, 30)
    } else {
        report.join("\n")
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
