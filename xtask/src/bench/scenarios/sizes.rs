//! Sizes: the release binary against its budget, what each crate puts in it, and the VSIX when one
//! was packaged.
//!
//! The per-crate breakdown is cargo-bloat's (`--crates`, pinned, installed once into the tool
//! cache), over a build of the same release profile that keeps its symbols (stripped, nothing can
//! be attributed), in a target folder of its own so the shipped build is never rebuilt for it. That
//! build is a second LTO build of the sidecar (minutes on a small machine), so it runs in full mode
//! and when the section is asked for by name, not in smoke runs of everything.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::bench::report::{Row, Target, Unit};
use crate::bench::{cargo, Ctx};

/// cargo-bloat, installed from crates.io at exactly this version.
const CARGO_BLOAT: &str = "0.12.1";
/// The stripped release binary's budget on linux-x64 (issue 26: it grew 3.29 → 4.47 MiB in a round).
const BUDGET_MIB: f64 = 5.0;
/// Crates listed by name; the rest are summed as one row.
const LISTED: usize = 14;

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let (root, bins) = (ctx.root, ctx.bins);
    let mib = |p: &Path| std::fs::metadata(p).map(|m| m.len() as f64 / (1024.0 * 1024.0)).ok();
    let mut rows = Vec::new();
    let linux_x64 = cfg!(all(target_os = "linux", target_arch = "x86_64"));
    let (limit, text) = if linux_x64 { (BUDGET_MIB, "≤ 5 MiB (linux-x64)") } else { (8.0, "< 8 MiB") };
    let mut bin =
        Row::new("footprint", "Release binary size (MiB)", Unit::MiB, &[mib(&bins.bridge).unwrap_or(f64::NAN)])
            .target(Target::below(limit, text))
            .note(format!(
                "{} (stripped, LTO, as `cargo build --release` makes it). The budget holds on linux-x64; \
             the rows `.text of <crate>` below say where the size goes.",
                rel(root, &bins.bridge)
            ));
    if let Some(d) = mib(&bins.double) {
        bin = bin.reference("the CLI double, same profile", &[d]);
    }
    rows.push(bin);
    // Shipped beside the binary, outside its budget: `serve`'s token estimates (util/tokens.rs).
    let vocabulary = root.join("sidecar/assets/o200k_base.tiktoken");
    rows.push(match mib(&vocabulary) {
        Some(m) => Row::new("footprint", "Token vocabulary beside the binary (MiB)", Unit::MiB, &[m]).note(
            "sidecar/assets/o200k_base.tiktoken, which `cargo xtask dist` puts beside the binary (and in the VSIX, \
             zipped): `serve` reads it at start for its token estimates, so it is not in the binary's budget.",
        ),
        None => Row::missing(
            "footprint",
            "Token vocabulary beside the binary (MiB)",
            "sidecar/assets/o200k_base.tiktoken is missing",
        ),
    });
    let asked = std::env::var(crate::bench::ONLY).is_ok_and(|v| v.split(',').any(|s| s.trim() == "sizes"));
    if ctx.plan.smoke && !asked {
        rows.push(Row::missing("footprint", ".text by crate (KiB)", "full runs only (a second LTO build)"));
    } else {
        rows.extend(by_crate(root)?);
    }
    let vsix = std::fs::read_dir(root.join("dist"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "vsix"))
        .min();
    rows.push(match vsix.as_deref().and_then(|p| mib(p).map(|m| (p, m))) {
        Some((p, m)) => Row::new("footprint", "VSIX size (MiB)", Unit::MiB, &[m])
            .note(format!("{} as found (not rebuilt by the bench).", rel(root, p))),
        None => Row::missing("footprint", "VSIX size (MiB)", "n/a (run cargo xtask dist)"),
    });
    Ok(rows)
}

/// One row per crate of the sidecar's `.text`, largest first, printed as they are found.
fn by_crate(root: &Path) -> Result<Vec<Row>> {
    let bloat = ensure_cargo_bloat(root)?;
    let target_dir = root.join("target").join("bench").join("bloat");
    eprintln!("bench: cargo-bloat --crates over a release build with symbols (in {})", rel(root, &target_dir));
    let out = Command::new(&bloat)
        .args(["bloat", "--release", "-p", "cursor-bridge", "--bin", "cursor-bridge", "--crates", "-n", "0"])
        .args(["--message-format", "json", "--target-dir"])
        .arg(&target_dir)
        .env("CARGO_PROFILE_RELEASE_STRIP", "false")
        .current_dir(root)
        .output()
        .context("running cargo-bloat")?;
    if !out.status.success() {
        bail!("cargo-bloat failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    let report: Value = serde_json::from_slice(&out.stdout).context("reading cargo-bloat's JSON")?;
    let (crates, text) = parse(&report)?;
    let kib = |b: u64| b as f64 / 1024.0;
    let mut rows = Vec::new();
    eprintln!("bench: .text {:.0} KiB, by crate:", kib(text));
    for (name, size) in crates.iter().take(LISTED) {
        eprintln!("bench:   {:>8.1} KiB  {name}", kib(*size));
        rows.push(
            Row::new("footprint", &format!(".text of {name} (KiB)"), Unit::KiB, &[kib(*size)])
                .reference(".text, all crates", &[kib(text)]),
        );
    }
    let rest: u64 = crates.iter().skip(LISTED).map(|(_, s)| s).sum();
    let others = crates.len().saturating_sub(LISTED);
    eprintln!("bench:   {:>8.1} KiB  {others} other crates", kib(rest));
    rows.push(
        Row::new("footprint", &format!(".text of {others} other crates (KiB)"), Unit::KiB, &[kib(rest)])
            .reference(".text, all crates", &[kib(text)])
            .note("cargo-bloat --crates: each crate's functions in `.text` of a release build with symbols (the rest of the file is data, tables and what cannot be attributed); `[Unknown]` is code whose crate the symbol does not name."),
    );
    Ok(rows)
}

/// cargo-bloat's `--crates --message-format json`: `{"text-section-size", "crates": [{"name", "size"}]}`.
fn parse(report: &Value) -> Result<(Vec<(String, u64)>, u64)> {
    let text = report["text-section-size"].as_u64().context("cargo-bloat's JSON has no text-section-size")?;
    let mut crates: Vec<(String, u64)> = report["crates"]
        .as_array()
        .context("cargo-bloat's JSON has no crates")?
        .iter()
        .filter_map(|c| Some((c["name"].as_str()?.to_string(), c["size"].as_u64()?)))
        .collect();
    crates.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok((crates, text))
}

/// `$CURSOR_BRIDGE_TOOL_CACHE`, else `target/tool-cache`: cargo-bloat at [`CARGO_BLOAT`], installed
/// from crates.io the first time (`cargo install --locked`, about a minute).
fn ensure_cargo_bloat(root: &Path) -> Result<PathBuf> {
    let cache = match std::env::var_os("CURSOR_BRIDGE_TOOL_CACHE").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => root.join("target").join("tool-cache"),
    };
    let dir = cache.join(format!("cargo-bloat-{CARGO_BLOAT}"));
    let bin = dir.join("bin").join(format!("cargo-bloat{}", std::env::consts::EXE_SUFFIX));
    if bin.is_file() {
        return Ok(bin);
    }
    eprintln!("bench: installing cargo-bloat {CARGO_BLOAT} from crates.io into {}", rel(root, &dir));
    let status = cargo()
        .args(["install", "cargo-bloat", "--version", &format!("={CARGO_BLOAT}"), "--locked", "--no-default-features"])
        .arg("--root")
        .arg(&dir)
        .status()
        .context("running cargo install cargo-bloat")?;
    if !status.success() || !bin.is_file() {
        bail!("cargo install cargo-bloat --version ={CARGO_BLOAT} failed ({status})");
    }
    Ok(bin)
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn crates_are_read_largest_first() {
        let report = serde_json::json!({
            "file-size": 100, "text-section-size": 60,
            "crates": [{"name": "std", "size": 10}, {"name": "tokio", "size": 30}, {"name": "serde_json", "size": 20}],
        });
        let (crates, text) = super::parse(&report).unwrap();
        assert_eq!(text, 60);
        let names: Vec<&str> = crates.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["tokio", "serde_json", "std"]);
    }
}
