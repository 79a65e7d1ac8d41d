//! The project's build system (rust-analyzer style): `cargo xtask <command>`.
//!
//! - `test`     build everything and run every test (what CI runs)
//! - `dist`     release-build the sidecar for packaging
//! - `install`  `dist`, then install where an editor can use it
//!
//! Each command does its own set-up (tools, packages) so it works on a fresh machine.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

const USAGE: &str = "\
cargo xtask <command>

Commands:
  test      build the workspace and run every test (unit, integration, CLI double)
  dist      build the release sidecar (`cursor-bridge`) for the host or --target <triple>
  install   run dist, then print where the binary is and how to use it
";

fn main() {
    if let Err(e) = run() {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = project_root();
    std::env::set_current_dir(&root)?;
    match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("dist") => dist(&target_arg(&args[1..])?).map(|_| ()),
        Some("install") => install(&target_arg(&args[1..])?),
        Some("help") | Some("--help") | Some("-h") | None => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n\n{USAGE}"),
    }
}

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn target_arg(args: &[String]) -> Result<Option<String>> {
    match args {
        [] => Ok(None),
        [flag, triple] if flag == "--target" => Ok(Some(triple.clone())),
        _ => bail!("expected `--target <triple>` or nothing, got {args:?}"),
    }
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn run_cmd(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {}", describe(cmd));
    let status = cmd.status().with_context(|| format!("could not start {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed ({status})", describe(cmd));
    }
    Ok(())
}

fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program().to_string_lossy().into_owned())
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn has_nextest() -> bool {
    cargo().args(["nextest", "--version"]).output().is_ok_and(|o| o.status.success())
}

fn test(extra: &[String]) -> Result<()> {
    let started = Instant::now();
    // Build every binary first: integration tests run the real `cursor-bridge` against the CLI
    // double, both from target/debug.
    run_cmd(cargo().args(["build", "--workspace", "--all-targets", "--locked"]))?;
    if has_nextest() {
        run_cmd(cargo().args(["nextest", "run", "--workspace", "--locked", "--no-fail-fast"]).args(extra))?;
        // nextest does not run doctests.
        run_cmd(cargo().args(["test", "--workspace", "--locked", "--doc"]))?;
    } else {
        eprintln!("xtask: cargo-nextest not found; using `cargo test`");
        run_cmd(cargo().args(["test", "--workspace", "--locked", "--no-fail-fast"]).args(extra))?;
    }
    eprintln!("xtask: all tests passed in {:.0?}", started.elapsed());
    Ok(())
}

fn host_triple() -> Result<String> {
    let out = Command::new("rustc").arg("-vV").output().context("running rustc -vV")?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .context("rustc -vV printed no host triple")
}

/// Build the release sidecar; returns the binary's path.
fn dist(target: &Option<String>) -> Result<PathBuf> {
    let triple = match target {
        Some(t) => t.clone(),
        None => host_triple()?,
    };
    run_cmd(cargo().args(["build", "--release", "--locked", "--package", "cursor-bridge", "--target", &triple]))?;
    let exe = if triple.contains("windows") { "cursor-bridge.exe" } else { "cursor-bridge" };
    let built = project_root().join("target").join(&triple).join("release").join(exe);
    if !built.is_file() {
        bail!("expected the binary at {}", built.display());
    }
    let out_dir = project_root().join("dist");
    std::fs::create_dir_all(&out_dir)?;
    let dest = out_dir.join(format!("{}-{triple}{}", "cursor-bridge", if exe.ends_with(".exe") { ".exe" } else { "" }));
    std::fs::copy(&built, &dest)?;
    eprintln!("xtask: sidecar built: {} ({} KiB)", dest.display(), std::fs::metadata(&dest)?.len() / 1024);
    Ok(dest)
}

fn install(target: &Option<String>) -> Result<()> {
    let binary = dist(target)?;
    println!("cursor-bridge is built: {}", binary.display());
    println!("Run it by hand: {} --help", binary.display());
    Ok(())
}
