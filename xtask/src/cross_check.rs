//! `cargo xtask cross-check` (and a stage of `test`): the workspace type-checked and linted with
//! warnings denied for every non-Linux release target, on this Linux machine, so a Windows or
//! macOS error shows here rather than on GitHub's runners (shared/recipes/cross-check.md).
//!
//! rustup cannot fetch other targets' std here, so the compiler comes from Debian's archive:
//! `rustc-web` with its *matching* std source `rust-web-src` and clippy `rust-web-clippy`,
//! downloaded with `apt-get download` (no root needed, nothing installed system-wide) and unpacked
//! into `target/cross/root`. Package names carry versions (`libstd-rust-web-1.96`, `libllvm22`),
//! so they are read from `apt-cache depends`, never written here; the unpacked tree is reused
//! while the archive offers the same versions. `-Zbuild-std` (allowed on this stable compiler by
//! `RUSTC_BOOTSTRAP=1`, for these checks only) builds each target's std from that source.
//!
//! The targets are the release's (`.github/release-targets.json`, which the release workflow's
//! matrix is read from): one list, so what ships is what was checked. The host's own clippy (the
//! toolchain CI uses) also runs here, warnings denied.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// The packages asked for by name; everything else is what they depend on.
const ROOTS: &[&str] = &["rustc-web", "rust-web-clippy", "rust-web-src"];

/// One release build: what `.github/release-targets.json` lists (the release workflow's matrix).
#[derive(serde::Deserialize, Debug, Clone)]
pub struct ReleaseTarget {
    pub os: String,
    pub target: String,
    /// Read by the test that ties this list to `dist`'s packaging.
    #[serde(rename = "code-target")]
    #[cfg_attr(not(test), allow(dead_code))]
    pub code_target: String,
}

/// Every release target, in the file's order.
pub fn release_targets(root: &Path) -> Result<Vec<ReleaseTarget>> {
    let path = root.join(".github").join("release-targets.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The release targets this machine cannot run: those built on a non-Linux runner.
pub fn cross_targets(root: &Path) -> Result<Vec<String>> {
    let targets: Vec<String> =
        release_targets(root)?.into_iter().filter(|t| !t.os.starts_with("ubuntu")).map(|t| t.target).collect();
    if targets.is_empty() {
        bail!(".github/release-targets.json lists no Windows or macOS target: nothing to cross-check");
    }
    Ok(targets)
}

/// The unpacked toolchain: wrapper scripts that run Debian's rustc and clippy-driver with their
/// own shared libraries.
pub struct Toolchain {
    pub rustc: PathBuf,
    pub clippy_driver: PathBuf,
    pub dir: PathBuf,
}

impl Toolchain {
    /// cargo with this toolchain's rustc, its own target folder and build-std for `target`.
    pub fn cargo(&self, subcommand: &str, target: &str) -> Command {
        let mut cmd = crate::cargo();
        cmd.arg(subcommand)
            .args(["-Zbuild-std=std,panic_abort", "--target", target, "--locked"])
            .env("RUSTC", &self.rustc)
            .env("RUSTC_BOOTSTRAP", "1")
            .env("CARGO_TARGET_DIR", self.dir.join("build"))
            // Only the clippy run below wraps the compiler, and only with Debian's clippy-driver.
            .env_remove("RUSTC_WRAPPER")
            .env_remove("RUSTC_WORKSPACE_WRAPPER");
        cmd
    }
}

fn apt_output(args: &[&str]) -> Result<String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .env("LC_ALL", "C")
        .output()
        .with_context(|| format!("could not run `{}` (Debian's apt is needed)", args.join(" ")))?;
    if !out.status.success() {
        bail!("`{}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The toolchain's packages with their candidate versions: the roots and, transitively, the
/// dependencies that belong to the same build (`libstd-rust-web-*`, `libllvm*`); the rest (libc,
/// gcc) is the machine's own.
fn resolve() -> Result<Vec<(String, String)>> {
    let mut wanted: Vec<String> = ROOTS.iter().map(|s| s.to_string()).collect();
    let mut i = 0;
    while i < wanted.len() {
        let text = apt_output(&["apt-cache", "depends", "--no-recommends", "--no-suggests", &wanted[i]])?;
        for line in text.lines() {
            let Some(dep) = line.trim().strip_prefix("Depends: ") else { continue };
            let dep = dep.trim_matches(|c| c == '<' || c == '>');
            let ours = dep.starts_with("libstd-rust-web") || dep.starts_with("libllvm") || dep.starts_with("rust-web");
            if ours && !wanted.iter().any(|w| w == dep) {
                wanted.push(dep.to_string());
            }
        }
        i += 1;
    }
    let mut out = Vec::new();
    for name in wanted {
        let policy = apt_output(&["apt-cache", "policy", &name])?;
        let version = policy
            .lines()
            .find_map(|l| l.trim().strip_prefix("Candidate: "))
            .filter(|v| *v != "(none)")
            .with_context(|| format!("Debian's archive offers no `{name}`"))?;
        out.push((name, version.to_string()));
    }
    Ok(out)
}

/// The workspace's `rust-version` (`[workspace.package]` in the root `Cargo.toml`): cargo refuses
/// an older compiler for every member.
fn workspace_rust_version(root: &Path) -> Result<(u32, u32, u32)> {
    let path = root.join("Cargo.toml");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("rust-version = ").map(|v| v.trim_matches('"').to_string()))
        .and_then(|v| version_triple(&v))
        .with_context(|| format!("{} names no `rust-version = \"X.Y\"`", path.display()))
}

/// `1.85.0+dfsg3-1~deb12u3` (a Debian version, an epoch `N:` before it left out), `1.89` or
/// `1.89.1` → (1, 85, 0) / (1, 89, 0) / (1, 89, 1).
fn version_triple(version: &str) -> Option<(u32, u32, u32)> {
    let version = version.split_once(':').map_or(version, |(_, v)| v);
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let (major, minor) = (parts.next()?.parse().ok()?, parts.next()?.parse().ok()?);
    Some((major, minor, parts.next().and_then(|p| p.parse().ok()).unwrap_or(0)))
}

/// The packages, if the archive's `rustc-web` is at least the workspace's `rust-version`.
fn new_enough(packages: Vec<(String, String)>, needed: (u32, u32, u32)) -> Result<Vec<(String, String)>> {
    let offered = packages.iter().find(|(n, _)| n == "rustc-web").map(|(_, v)| v.clone()).unwrap_or_default();
    match version_triple(&offered) {
        Some(v) if v >= needed => Ok(packages),
        _ => bail!(
            "Debian's archive offers rustc-web {offered}, older than the workspace's rust-version {}.{}.{} \
             (rustc-web's updates ship in bookworm-security: have it in the apt sources and run \
             `apt-get update`)",
            needed.0,
            needed.1,
            needed.2
        ),
    }
}

/// `rustc` and `clippy-driver` in `target/cross`: Debian's, run with their own shared libraries.
///
/// With -Zbuild-std, cargo gives integration tests no `CARGO_BIN_EXE_<name>` (seen with cargo
/// 1.95 on every target, the host's too) and removes any such variable from the compiler's
/// environment, so a test's `env!` of it would fail. A check never runs the binary, so the
/// wrappers set each one to a path that says so. Rewritten only when the workspace's binaries change.
fn write_wrappers(toolchain: &Toolchain) -> Result<()> {
    let bins: String =
        bins()?.iter().map(|b| format!(" \\\n  'CARGO_BIN_EXE_{b}=/not-built-by-cross-check/{b}'")).collect();
    for (name, tool) in [("rustc", &toolchain.rustc), ("clippy-driver", &toolchain.clippy_driver)] {
        let script = format!(
            "#!/bin/sh\n# Written by `cargo xtask cross-check` (xtask/src/cross_check.rs).\n\
             here=$(dirname \"$0\")\n\
             exec env LD_LIBRARY_PATH=\"$here/root/usr/lib/x86_64-linux-gnu\"{bins} \\\n  \"$here/root/usr/bin/{name}\" \"$@\"\n"
        );
        if std::fs::read_to_string(tool).is_ok_and(|s| s == script) {
            continue;
        }
        std::fs::write(tool, script)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(tool, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

/// The names of the workspace's binary targets (`cargo metadata`).
fn bins() -> Result<Vec<String>> {
    let out = crate::cargo()
        .args(["metadata", "--no-deps", "--format-version", "1", "--locked"])
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).context("parsing cargo metadata")?;
    let mut names = Vec::new();
    for package in meta["packages"].as_array().into_iter().flatten() {
        for target in package["targets"].as_array().into_iter().flatten() {
            if target["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "bin")) {
                names.extend(target["name"].as_str().map(str::to_string));
            }
        }
    }
    Ok(names)
}

/// Download and unpack the toolchain into `target/cross` unless these exact versions are there.
pub fn ensure(root: &Path) -> Result<Toolchain> {
    let dir = root.join("target").join("cross");
    let toolchain = Toolchain { rustc: dir.join("rustc"), clippy_driver: dir.join("clippy-driver"), dir: dir.clone() };
    let stamp = dir.join("root").join(".xtask-packages");
    let needed = workspace_rust_version(root)?;
    let packages = match resolve().and_then(|p| new_enough(p, needed)) {
        Ok(p) => p,
        // Stale or missing package lists (a new machine's are as old as its image, and offer
        // an older rustc-web than the workspace builds with): refresh them once.
        Err(first) => {
            eprintln!("xtask: cross-check: {first:#}; running apt-get update");
            crate::run_cmd(Command::new("apt-get").arg("update").arg("-qq"))
                .context("the cross-check toolchain cannot be set up: `apt-get update` failed")?;
            resolve()
                .and_then(|p| new_enough(p, needed))
                .context("the cross-check toolchain cannot be set up from Debian's archive")?
        }
    };
    let listing: String = packages.iter().map(|(n, v)| format!("{n}={v}\n")).collect();
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == listing) {
        write_wrappers(&toolchain)?;
        return Ok(toolchain);
    }
    eprintln!("xtask: cross-check: unpacking {} into {}", listing.trim().replace('\n', " "), dir.display());
    let debs = dir.join("debs");
    let _ = std::fs::remove_dir_all(&debs);
    let _ = std::fs::remove_dir_all(dir.join("root"));
    std::fs::create_dir_all(&debs)?;
    let specs: Vec<String> = packages.iter().map(|(n, v)| format!("{n}={v}")).collect();
    crate::run_cmd(Command::new("apt-get").arg("download").arg("-qq").args(&specs).current_dir(&debs))
        .context("the cross-check toolchain cannot be set up: `apt-get download` failed")?;
    for deb in std::fs::read_dir(&debs)?.flatten().map(|e| e.path()) {
        crate::run_cmd(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(dir.join("root")))
            .context("the cross-check toolchain cannot be set up: unpacking a package failed")?;
    }
    write_wrappers(&toolchain)?;
    let version = Command::new(&toolchain.rustc).arg("--version").output();
    match version {
        Ok(out) if out.status.success() => eprint!("xtask: cross-check: {}", String::from_utf8_lossy(&out.stdout)),
        _ => bail!("the cross-check toolchain cannot be set up: {} --version fails", toolchain.rustc.display()),
    }
    std::fs::write(&stamp, listing)?;
    Ok(toolchain)
}

/// The host's clippy over the whole workspace, warnings denied.
pub fn clippy_host() -> Result<()> {
    crate::run_cmd(crate::cargo().args(["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"]))
        .context("clippy found problems on the host (listed above)")
}

/// check, then clippy with warnings denied, for every cross target; the first failure stops.
/// `only`: just these targets (`cross-check --target <triple>`); each must be a cross target.
pub fn run(root: &Path, only: &[String]) -> Result<()> {
    let started = Instant::now();
    let mut targets = cross_targets(root)?;
    if !only.is_empty() {
        if let Some(other) = only.iter().find(|t| !targets.contains(t)) {
            bail!("`{other}` is not a cross-checked target; they are: {}", targets.join(", "));
        }
        targets.retain(|t| only.contains(t));
    }
    clippy_host()?;
    let toolchain = ensure(root)?;
    for target in &targets {
        let target_started = Instant::now();
        // One `cargo check` with clippy-driver wrapping the workspace's own crates: it reports
        // the compiler's errors as a plain check does, plus clippy's lints (so a second, plain
        // check of the same crates would only cost time). std and the dependencies are checked
        // by the plain compiler. CLIPPY_ARGS is how cargo-clippy hands it its lint flags.
        crate::run_cmd(
            toolchain
                .cargo("check", target)
                .args(["--workspace", "--all-targets"])
                .env("RUSTC_WORKSPACE_WRAPPER", &toolchain.clippy_driver)
                .env("CLIPPY_ARGS", "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"),
        )
        .with_context(|| format!("check and clippy for {target} found problems (listed above)"))?;
        eprintln!("xtask: cross-check: {target} passed check and clippy in {:.0?}", target_started.elapsed());
    }
    eprintln!("xtask: cross-check passed for {} in {:.0?}", targets.join(", "), started.elapsed());
    Ok(())
}

/// An xtask command running beside other stages of `test` (`cross-check`, `wine-test`): this
/// xtask again, on one core (the other stays with the stages in front), its output in a log.
pub struct Background {
    child: std::process::Child,
    command: &'static str,
    /// The stages it runs beside, for the closing line.
    beside: &'static str,
    log: PathBuf,
    started: Instant,
}

pub fn start_in_background(root: &Path) -> Result<Background> {
    let log = root.join("target").join("cross").join("cross-check.log");
    Background::start(root, "cross-check", "fuzzing and the extension's tests", log)
}

impl Background {
    pub fn start(root: &Path, command: &'static str, beside: &'static str, log: PathBuf) -> Result<Background> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let out = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        // Through cargo, not this process's own file: the workspace build before this stage may have
        // rebuilt xtask (other members unify its dependencies' features), and then the file this
        // process started from is gone (`current_exe` names it "… (deleted)").
        let child = crate::cargo()
            .current_dir(root)
            .args(["run", "--quiet", "--locked", "--package", "xtask", "--bin", "xtask", "--", command])
            .env("CARGO_BUILD_JOBS", "1")
            .stdin(std::process::Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting `cargo xtask {command}` in the background"))?;
        eprintln!("xtask: {command} started beside the next stages (log: {})", log.display());
        Ok(Background { child, command, beside, log, started: Instant::now() })
    }

    /// Wait for it; a failure shows the end of its log.
    pub fn finish(mut self) -> Result<()> {
        let status = self.child.wait()?;
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(if status.success() { 6 } else { 80 })..];
        for line in tail {
            eprintln!("{}| {line}", self.command);
        }
        if !status.success() {
            bail!(
                "{} failed ({status}) after {:.0?}; its whole log: {}",
                self.command,
                self.started.elapsed(),
                self.log.display()
            );
        }
        eprintln!("xtask: {} (beside {}) passed in {:.0?}", self.command, self.beside, self.started.elapsed());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_older_than_the_workspace_is_refused_so_the_lists_are_refreshed() {
        // A new machine's package lists offered bookworm's 1.85 while the workspace needs 1.89.
        assert_eq!(version_triple("1.85.0+dfsg3-1~deb12u3"), Some((1, 85, 0)));
        assert_eq!(version_triple("1.89"), Some((1, 89, 0)));
        assert_eq!(version_triple("1:1.96.2-1"), Some((1, 96, 2)), "an epoch is not the version");
        let with =
            |v: &str| vec![("rustc-web".to_string(), v.to_string()), ("libllvm19".to_string(), "1:19".to_string())];
        let refused = new_enough(with("1.85.0+dfsg3-1~deb12u3"), (1, 89, 0)).unwrap_err().to_string();
        assert!(refused.contains("rustc-web 1.85.0+dfsg3-1~deb12u3") && refused.contains("1.89.0"), "{refused}");
        assert!(new_enough(with("1.96.0+dfsg1-1~deb12u1"), (1, 89, 0)).is_ok());
        assert!(new_enough(with("1.89.0+dfsg1-1"), (1, 89, 0)).is_ok());
        assert!(new_enough(with("1.89.0+dfsg1-1"), (1, 89, 1)).is_err(), "the patch level counts");
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert!(workspace_rust_version(root).unwrap() >= (1, 85, 0));
    }

    /// Every release target is one `cargo xtask dist --target` can package, under the VS Code
    /// platform the workflow names its artifact after.
    #[test]
    fn release_targets_match_the_packaging() {
        let root = crate::project_root();
        let targets = release_targets(&root).unwrap();
        assert!(!targets.is_empty());
        for t in &targets {
            assert_eq!(crate::dist::vsce_target(&t.target).unwrap(), t.code_target, "{t:?}");
        }
        let cross = cross_targets(&root).unwrap();
        for wanted in
            ["x86_64-pc-windows-msvc", "aarch64-pc-windows-msvc", "x86_64-apple-darwin", "aarch64-apple-darwin"]
        {
            assert!(cross.iter().any(|t| t == wanted), "{wanted} is not cross-checked");
        }
    }
}
