//! `cargo xtask dist` and `install`: the release sidecar (Linux gnu builds linked against glibc
//! 2.28, `glibc.rs`), the token vocabulary beside it, and the VS Code extension packaged around
//! them, a VSIX per platform in `dist/`; `install` puts it into VS Code or says how.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::{cargo, glibc, project_root, run_cmd};

pub fn npm() -> Command {
    // npm is a .cmd script on Windows, which Command does not find by the bare name.
    let mut cmd = Command::new(if cfg!(windows) { "npm.cmd" } else { "npm" });
    cmd.current_dir(project_root());
    cmd
}

/// `npm ci` at the root when node_modules is missing or was installed from another lockfile.
/// A copy of the lockfile it was installed from is kept inside node_modules and compared byte for
/// byte, so a changed lockfile (a pull, a dependency bump) always reinstalls and nothing else does.
pub fn npm_ci_if_needed() -> Result<()> {
    let root = project_root();
    let lock = root.join("package-lock.json");
    let stamp = root.join("node_modules").join(".xtask-installed-package-lock.json");
    let wanted = std::fs::read(&lock).with_context(|| format!("reading {}", lock.display()))?;
    if std::fs::read(&stamp).is_ok_and(|installed| installed == wanted) {
        eprintln!("xtask: node_modules matches package-lock.json; skipping npm ci");
        return Ok(());
    }
    run_cmd(npm().arg("ci")).context("the VS Code extension needs Node.js 20+ with npm (https://nodejs.org)")?;
    std::fs::write(&stamp, &wanted).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(())
}

pub fn host_triple() -> Result<String> {
    let out = Command::new("rustc").arg("-vV").output().context("running rustc -vV")?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| l.strip_prefix("host: ")).map(str::to_string).context("rustc -vV printed no host triple")
}

/// The `vsce --target` for a Rust target triple (the platforms VS Code publishes builds for).
pub fn vsce_target(triple: &str) -> Result<&'static str> {
    Ok(match triple {
        "x86_64-unknown-linux-gnu" => "linux-x64",
        "aarch64-unknown-linux-gnu" => "linux-arm64",
        "armv7-unknown-linux-gnueabihf" | "arm-unknown-linux-gnueabihf" => "linux-armhf",
        "x86_64-unknown-linux-musl" => "alpine-x64",
        "aarch64-unknown-linux-musl" => "alpine-arm64",
        "x86_64-apple-darwin" => "darwin-x64",
        "aarch64-apple-darwin" => "darwin-arm64",
        "x86_64-pc-windows-msvc" | "x86_64-pc-windows-gnu" => "win32-x64",
        "aarch64-pc-windows-msvc" => "win32-arm64",
        other => bail!("no VS Code platform for the target `{other}`; supported: Linux, Alpine (musl), macOS and Windows on x64/arm64, Linux on armhf"),
    })
}

/// The token estimates' vocabulary, shipped beside the sidecar (`util::tokens::VOCABULARY_FILE`).
const VOCABULARY: &str = "o200k_base.tiktoken";

/// Build the release sidecar, then package the extension around it; returns the VSIX's path.
pub fn dist(target: &Option<String>) -> Result<PathBuf> {
    let triple = match target {
        Some(t) => t.clone(),
        None => host_triple()?,
    };
    // Fail before a long build when the triple cannot be packaged.
    let platform = vsce_target(&triple)?;
    match glibc::zig_target(&triple) {
        // Linked against an old glibc whatever this machine's is, so it starts on every Linux
        // VS Code supports (glibc.rs); checked below.
        Some(zig_target) => run_cmd(glibc::ensure(&project_root())?.command().args([
            "--release",
            "--locked",
            "--package",
            "cursor-bridge",
            "--target",
            &zig_target,
        ]))?,
        None => run_cmd(cargo().args([
            "build",
            "--release",
            "--locked",
            "--package",
            "cursor-bridge",
            "--target",
            &triple,
        ]))?,
    }
    let exe = if triple.contains("windows") { "cursor-bridge.exe" } else { "cursor-bridge" };
    let built = project_root().join("target").join(&triple).join("release").join(exe);
    if !built.is_file() {
        bail!("expected the binary at {}", built.display());
    }
    if triple.ends_with("-linux-gnu") {
        glibc::check(&built)?;
    }
    let out_dir = project_root().join("dist");
    std::fs::create_dir_all(&out_dir)?;
    let dest = out_dir.join(format!("{}-{triple}{}", "cursor-bridge", if exe.ends_with(".exe") { ".exe" } else { "" }));
    std::fs::copy(&built, &dest)?;
    eprintln!("xtask: sidecar built: {} ({} KiB)", dest.display(), std::fs::metadata(&dest)?.len() / 1024);
    // The vocabulary of `serve`'s token estimates goes beside the binary (util/tokens.rs): 3.6 MB
    // the binary's size budget has no room for.
    let vocabulary = project_root().join("sidecar").join("assets").join(VOCABULARY);
    std::fs::copy(&vocabulary, out_dir.join(VOCABULARY))
        .with_context(|| format!("copying {}", vocabulary.display()))?;

    // The extension ships the sidecar in server/; a binary for another platform must not linger.
    let client = project_root().join("vscode-client");
    let server = client.join("server");
    if server.exists() {
        std::fs::remove_dir_all(&server).with_context(|| format!("removing {}", server.display()))?;
    }
    std::fs::create_dir_all(&server)?;
    std::fs::copy(&built, server.join(exe))?;
    std::fs::copy(&vocabulary, server.join(VOCABULARY))?;
    // Which platform this package is for, and on Linux gnu the oldest glibc it starts on: the
    // extension compares them with the machine it runs on and says so when they do not fit
    // (vscode-client/src/platform.ts).
    let mut record = serde_json::json!({ "target": platform, "triple": triple });
    if triple.ends_with("-linux-gnu") {
        record["glibc"] = format!("{}.{}", glibc::GLIBC_FLOOR.0, glibc::GLIBC_FLOOR.1).into();
    }
    std::fs::write(server.join("platform.json"), serde_json::to_string_pretty(&record)? + "\n")?;

    npm_ci_if_needed()?;
    run_cmd(npm().args(["run", "build", "--workspace", "vscode-client"]))?;
    let vsix = out_dir.join(format!("cursor-bridge-{platform}.vsix"));
    let vsce = project_root().join("node_modules").join("@vscode").join("vsce").join("vsce");
    // The bundle is self-contained, so no node_modules go in (--no-dependencies).
    run_cmd(
        Command::new("node")
            .arg(&vsce)
            .args(["package", "--target", platform, "--no-dependencies", "--allow-missing-repository", "--out"])
            .arg(&vsix)
            .current_dir(&client),
    )?;
    eprintln!("xtask: extension packaged: {} ({} KiB)", vsix.display(), std::fs::metadata(&vsix)?.len() / 1024);
    Ok(vsix)
}

/// `code` (VS Code's command-line launcher) on PATH, if any.
fn find_code() -> Option<PathBuf> {
    let names: &[&str] = if cfg!(windows) { &["code.cmd", "code.exe"] } else { &["code"] };
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|dir| names.iter().map(move |n| dir.join(n))).find(|p| p.is_file())
}

pub fn install(target: &Option<String>) -> Result<()> {
    let vsix = dist(target)?;
    match find_code() {
        Some(code) => {
            run_cmd(Command::new(code).arg("--install-extension").arg(&vsix).arg("--force"))?;
            println!(
                "Installed {} into VS Code. Reload open windows (Developer: Reload Window) to use it.",
                vsix.display()
            );
        }
        None => {
            println!("The extension is packaged: {}", vsix.display());
            println!("`code` is not on PATH, so install it yourself, either:");
            println!("  - in VS Code: Extensions view → … (Views and More Actions) → Install from VSIX… → pick the file above");
            println!("  - or in a terminal: code --install-extension {}", vsix.display());
        }
    }
    Ok(())
}
