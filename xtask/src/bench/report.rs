//! The report: one row per figure (its samples, a reference measured in the same run, a target),
//! printed as a table and written as Markdown and JSON.

use std::fmt::Write as _;
use std::process::Command;

use serde_json::{json, Value};

use super::stats::Stat;
use super::ONLY;

#[derive(Clone, Copy, PartialEq)]
pub enum Unit {
    Ms,
    MiB,
    KiB,
    MBps,
    PerSec,
}

impl Unit {
    fn higher_is_better(self) -> bool {
        matches!(self, Unit::MBps | Unit::PerSec)
    }

    fn suffix(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::MiB => "MiB",
            Unit::KiB => "KiB",
            Unit::MBps => "MB/s",
            Unit::PerSec => "/s",
        }
    }

    fn fmt(self, x: f64) -> String {
        if !x.is_finite() {
            return "—".into();
        }
        let v = match self {
            Unit::Ms if x.abs() < 10.0 => format!("{x:.2}"),
            Unit::Ms if x.abs() < 100.0 => format!("{x:.1}"),
            Unit::Ms => format!("{x:.0}"),
            Unit::MiB => format!("{x:.2}"),
            Unit::KiB => format!("{x:.0}"),
            Unit::MBps => format!("{x:.1}"),
            Unit::PerSec => format!("{:.0}k", x / 1e3),
        };
        format!("{v} {}", self.suffix())
    }
}

pub struct Target {
    text: &'static str,
    below: Option<f64>,
    at_least: Option<f64>,
    /// The target is on the p95, not the median (a tail that must stay short).
    on_p95: bool,
}

impl Target {
    pub fn below(x: f64, text: &'static str) -> Target {
        Target { text, below: Some(x), at_least: None, on_p95: false }
    }
    pub fn at_least(x: f64, text: &'static str) -> Target {
        Target { text, below: None, at_least: Some(x), on_p95: false }
    }
    /// The p95 at most `x`.
    pub fn p95_below(x: f64, text: &'static str) -> Target {
        Target { text, below: Some(x), at_least: None, on_p95: true }
    }
    fn holds(&self, stat: &Stat) -> bool {
        let v = if self.on_p95 { stat.p95 } else { stat.median };
        v.is_finite() && self.below.is_none_or(|b| v <= b) && self.at_least.is_none_or(|a| v >= a)
    }
}

pub struct Row {
    section: &'static str,
    pub figure: String,
    unit: Unit,
    samples: Vec<f64>,
    stat: Stat,
    reference: Option<(String, Vec<f64>, Stat)>,
    target: Option<Target>,
    pub pass: Option<bool>,
    note: Option<String>,
    missing: Option<&'static str>,
}

impl Row {
    pub fn new(section: &'static str, figure: &str, unit: Unit, samples: &[f64]) -> Row {
        Row {
            section,
            figure: figure.into(),
            unit,
            samples: samples.to_vec(),
            stat: Stat::of(samples, unit.higher_is_better()),
            reference: None,
            target: None,
            pass: None,
            note: None,
            missing: None,
        }
    }

    pub fn missing(section: &'static str, figure: &str, why: &'static str) -> Row {
        Row { missing: Some(why), ..Row::new(section, figure, Unit::MiB, &[]) }
    }

    pub fn reference(mut self, label: &str, samples: &[f64]) -> Row {
        self.reference = Some((label.into(), samples.to_vec(), Stat::of(samples, self.unit.higher_is_better())));
        self
    }

    pub fn target(mut self, t: Target) -> Row {
        self.pass = Some(t.holds(&self.stat));
        self.target = Some(t);
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Row {
        self.note = Some(note.into());
        self
    }

    fn cells(&self) -> Vec<String> {
        let u = self.unit;
        let (median, p95, p99) = match self.missing {
            Some(why) => (why.to_string(), "—".to_string(), "—".to_string()),
            None if self.stat.n <= 1 => (u.fmt(self.stat.median), "—".into(), "—".into()),
            None => (u.fmt(self.stat.median), u.fmt(self.stat.p95), u.fmt(self.stat.p99)),
        };
        let reference = match &self.reference {
            None => "—".into(),
            Some((label, _, s)) if s.n <= 1 => format!("{label}: {}", u.fmt(s.median)),
            Some((label, _, s)) => format!("{label}: {} / {} / {}", u.fmt(s.median), u.fmt(s.p95), u.fmt(s.p99)),
        };
        vec![
            self.figure.clone(),
            median,
            p95,
            p99,
            reference,
            self.target.as_ref().map_or("—".into(), |t| t.text.to_string()),
            match self.pass {
                Some(true) => "PASS".into(),
                Some(false) => "FAIL".into(),
                None => "—".into(),
            },
            self.stat.n.to_string(),
        ]
    }
}

pub struct Report {
    pub smoke: bool,
    pub rows: Vec<Row>,
    pub build_secs: f64,
    pub measure_secs: f64,
    pub total_secs: f64,
    /// Load average (1, 5, 15 min) around the measurements: other work on the machine skews them.
    pub load: String,
    /// The sections measured when not all were (`CURSOR_BRIDGE_BENCH_ONLY`).
    pub only: Option<Vec<String>>,
}

impl Report {
    /// The table as Markdown with padded columns (readable on a terminal too).
    pub fn table(&self) -> String {
        let header: Vec<String> =
            ["Figure", "Median", "p95", "p99", "Reference (median / p95 / p99)", "Target", "Result", "n"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let mut lines: Vec<Vec<String>> = vec![header];
        lines.extend(self.rows.iter().map(Row::cells));
        let widths: Vec<usize> =
            (0..lines[0].len()).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
        let fmt_line = |cells: &[String]| {
            let padded: Vec<String> =
                cells.iter().zip(&widths).map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count()))).collect();
            format!("| {} |", padded.join(" | "))
        };
        let mut out = String::new();
        let _ = writeln!(out, "{}", fmt_line(&lines[0]));
        let _ = writeln!(out, "|{}|", widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("|"));
        for l in &lines[1..] {
            let _ = writeln!(out, "{}", fmt_line(l));
        }
        if self.smoke {
            out.push_str("\n(smoke run: one iteration per figure, figures not comparable, targets not enforced)\n");
        }
        if let Some(only) = &self.only {
            let _ = writeln!(out, "\n(only the sections {} were measured, {ONLY})", only.join(", "));
        }
        out
    }

    pub fn markdown(&self, table: &str) -> String {
        let mut md = format!(
            "# cursor-bridge benchmark ({} run)\n\n{}\n\nMeasured in {:.0} s (release build {:.0} s, total {:.0} s) on {}; load average {}.\n\n",
            if self.smoke { "smoke" } else { "full" },
            machine_line(),
            self.measure_secs,
            self.build_secs,
            self.total_secs,
            git_line(),
            self.load,
        );
        md.push_str(table);
        md.push_str("\n## Notes\n\n");
        md.push_str("- p95 and p99 are the 95th and 99th percentiles of the samples (nearest rank); for rates (deltas/s, MB/s) they are the slow end, the 5th and 1st percentiles. With fewer than 100 samples p99 is the worst or next-to-worst sample. `n` is the number of samples.\n");
        for r in &self.rows {
            if let Some(note) = &r.note {
                let _ = writeln!(md, "- **{}**: {note}", r.figure);
            }
        }
        md
    }

    pub fn json(&self) -> Value {
        let stat = |s: &Stat| json!({"median": finite(s.median), "p95": finite(s.p95), "p99": finite(s.p99), "n": s.n});
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "section": r.section,
                    "figure": r.figure,
                    "unit": r.unit.suffix(),
                    "value": if r.missing.is_some() { Value::Null } else { stat(&r.stat) },
                    "missing": r.missing,
                    "samples": r.samples.iter().map(|x| finite(*x)).collect::<Vec<_>>(),
                    "reference": r.reference.as_ref().map(|(label, samples, s)| json!({
                        "label": label,
                        "value": stat(s),
                        "samples": samples.iter().map(|x| finite(*x)).collect::<Vec<_>>(),
                    })),
                    "target": r.target.as_ref().map(|t| if t.on_p95 {
                        json!({"text": t.text, "p95AtMost": t.below})
                    } else {
                        json!({"text": t.text, "medianAtMost": t.below, "medianAtLeast": t.at_least})
                    }),
                    "pass": r.pass,
                    "note": r.note,
                })
            })
            .collect();
        json!({
            "mode": if self.smoke { "smoke" } else { "full" },
            "date": command_line("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]),
            "machine": machine_line(),
            "git": git_line(),
            "seconds": {"build": self.build_secs, "measure": self.measure_secs, "total": self.total_secs},
            "loadAverage": self.load,
            "onlySections": self.only,
            "rows": rows,
            "failed": self.rows.iter().filter(|r| r.pass == Some(false)).map(|r| r.figure.clone()).collect::<Vec<_>>(),
        })
    }
}

fn finite(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 1000.0).round() / 1000.0)
    } else {
        Value::Null
    }
}

fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn machine_line() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string());
    let mem = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    });
    format!(
        "{} CPU(s){}{}, {} {}",
        cpus,
        model.map(|m| format!(" ({m})")).unwrap_or_default(),
        mem.map(|k| format!(", {:.0} GiB RAM", k as f64 / 1024.0 / 1024.0)).unwrap_or_default(),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn git_line() -> String {
    let rev = command_line("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown commit".into());
    let dirty = command_line("git", &["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
    format!("commit {rev}{}", if dirty { " (with uncommitted changes)" } else { "" })
}
