//! Finding the Cursor CLI: the client's explicit path, `CURSOR_BRIDGE_CLI_PATH`, `cursor-agent` on
//! PATH, `agent` on PATH (only when it prints a Cursor-shaped version: xAI's CLI is also called
//! `agent`), then the installer's default folder (an editor started from a desktop menu often lacks
//! `~/.local/bin` on PATH). On Windows the `.cmd`/`.ps1` launchers are unwrapped to
//! `node.exe index.js`, because cmd.exe mangles long and multi-line arguments
//! (docs/cursor-cli.md §9).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How to start the CLI: `program prefix_args… <our args…>`, plus env it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliCommand {
    pub program: PathBuf,
    pub prefix_args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    /// The path the user would recognise (the launcher, not node.exe).
    pub display: PathBuf,
}

impl CliCommand {
    pub fn plain(path: PathBuf) -> Self {
        CliCommand { program: path.clone(), prefix_args: Vec::new(), env: Vec::new(), display: path }
    }

    /// This build's identity without running it: its path, size and modification time (an update
    /// replaces the file). What the bridge learnt about a build holds for this identity only.
    pub fn build_id(&self) -> String {
        let meta = std::fs::metadata(&self.program).ok();
        let size = meta.as_ref().map(|m| m.len()).unwrap_or(0);
        let modified = meta.and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        format!("{}|{:?}|{size}|{}", self.program.display(), self.prefix_args, modified.map_or(0, |d| d.as_secs()))
    }
}

/// Where a candidate came from, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Setting,
    EnvVar,
    Path,
    InstallDir,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryError {
    /// An explicitly configured path does not exist or is not a file.
    ConfiguredPathMissing { path: PathBuf, source: Source },
    /// Nothing found anywhere.
    NotFound { searched: Vec<String> },
}

pub const ENV_CLI_PATH: &str = "CURSOR_BRIDGE_CLI_PATH";

/// Inputs of discovery, so tests can run it without touching the real PATH or home.
pub struct Lookup<'a> {
    pub configured: Option<&'a str>,
    pub env_path: Option<OsString>,
    pub path_var: Option<OsString>,
    pub home: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Runs `<program> --version` and returns its stdout, or None when it fails or times out.
    pub version_of: &'a dyn Fn(&Path) -> Option<String>,
}

pub fn discover(lookup: &Lookup<'_>) -> Result<CliCommand, DiscoveryError> {
    let explicit =
        [(lookup.configured.map(OsString::from), Source::Setting), (lookup.env_path.clone(), Source::EnvVar)];
    for (value, source) in explicit {
        let Some(value) = value.filter(|v| !v.is_empty()) else { continue };
        let path = expand_home(Path::new(&value), lookup.home.as_deref());
        // A bare name ("agent") in the setting means "look it up on PATH".
        let resolved =
            if path.components().count() == 1 && !path.exists() { which_in(&path, lookup) } else { Some(path.clone()) };
        return match resolved.filter(|p| p.is_file()) {
            Some(p) => Ok(unwrap_launcher(&p)),
            None => Err(DiscoveryError::ConfiguredPathMissing { path, source }),
        };
    }

    let mut searched = vec!["cursor-agent on PATH".to_string(), "agent on PATH".to_string()];
    if let Some(p) = which_in(Path::new("cursor-agent"), lookup) {
        return Ok(unwrap_launcher(&p));
    }
    if let Some(p) = which_in(Path::new("agent"), lookup) {
        if looks_like_cursor_version((lookup.version_of)(&p).as_deref().unwrap_or("")) {
            return Ok(unwrap_launcher(&p));
        }
        searched.push(format!("{} (not Cursor's CLI)", p.display()));
    }
    for dir in install_dirs(lookup.home.as_deref()) {
        for name in launcher_names() {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(unwrap_launcher(&candidate));
            }
        }
        searched.push(dir.display().to_string());
    }
    Err(DiscoveryError::NotFound { searched })
}

fn which_in(name: &Path, lookup: &Lookup<'_>) -> Option<PathBuf> {
    which::which_in(name, lookup.path_var.clone(), &lookup.cwd).ok()
}

fn expand_home(path: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
    }
}

fn install_dirs(home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if cfg!(windows) {
        if let Some(local) = std::env::var_os("LOCALAPPDATA") {
            dirs.push(PathBuf::from(local).join("cursor-agent"));
        }
    }
    if let Some(home) = home {
        dirs.push(home.join(".local").join("bin"));
        dirs.push(home.join(".cursor").join("bin"));
    }
    dirs
}

fn launcher_names() -> &'static [&'static str] {
    if cfg!(windows) {
        &["cursor-agent.cmd", "agent.cmd", "cursor-agent.exe", "agent.exe"]
    } else {
        &["cursor-agent", "agent"]
    }
}

/// `2026.09.28-64d2043` or `2026.06.15-03-48-54-da23e37` (docs/cursor-cli.md §7.3).
pub fn looks_like_cursor_version(output: &str) -> bool {
    let v = output.trim();
    let mut parts = v.splitn(4, ['.', '-']);
    let year = parts.next().unwrap_or("");
    let month = parts.next().unwrap_or("");
    let day = parts.next().unwrap_or("");
    year.len() == 4
        && year.bytes().all(|b| b.is_ascii_digit())
        && (1..=2).contains(&month.len())
        && month.bytes().all(|b| b.is_ascii_digit())
        && (1..=2).contains(&day.len())
        && day.bytes().all(|b| b.is_ascii_digit())
        && v.len() > 10
        && v.as_bytes().get(4 + 1 + month.len() + 1 + day.len()) == Some(&b'-')
}

/// A Windows `.cmd`/`.ps1` launcher becomes `node.exe index.js` from the same folder, else from the
/// newest `versions\<ver>` folder; anything else runs as is.
pub fn unwrap_launcher(path: &Path) -> CliCommand {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if !matches!(ext.as_deref(), Some("cmd") | Some("ps1") | Some("bat")) {
        return CliCommand::plain(path.to_path_buf());
    }
    let Some(dir) = path.parent() else { return CliCommand::plain(path.to_path_buf()) };
    let runtime_dir = if has_node_runtime(dir) { Some(dir.to_path_buf()) } else { newest_version_dir(dir) };
    match runtime_dir {
        Some(rt) => CliCommand {
            program: rt.join("node.exe"),
            prefix_args: vec![rt.join("index.js").into_os_string()],
            env: vec![("CURSOR_INVOKED_AS".into(), path.file_name().map(OsString::from).unwrap_or_default())],
            display: path.to_path_buf(),
        },
        None => CliCommand::plain(path.to_path_buf()),
    }
}

fn has_node_runtime(dir: &Path) -> bool {
    dir.join("node.exe").is_file() && dir.join("index.js").is_file()
}

fn newest_version_dir(dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir.join("versions")).ok()?;
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(looks_like_cursor_version) && has_node_runtime(p)
        })
        // Version names sort chronologically as strings (zero-padded dates come first).
        .max_by_key(|p| version_sort_key(p))
}

fn version_sort_key(p: &Path) -> Vec<u32> {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.split(['.', '-']).take(3).map(|s| s.parse().unwrap_or(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn touch_exe(path: &Path) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    fn lookup<'a>(dir: &Path, version: &'a dyn Fn(&Path) -> Option<String>) -> Lookup<'a> {
        Lookup {
            configured: None,
            env_path: None,
            path_var: Some(dir.join("bin").into_os_string()),
            home: Some(dir.join("home")),
            cwd: dir.to_path_buf(),
            version_of: version,
        }
    }

    const CURSOR: &dyn Fn(&Path) -> Option<String> = &|_| Some("2026.09.28-64d2043\n".into());
    const GROK: &dyn Fn(&Path) -> Option<String> = &|_| Some("grok-build 1.4.2\n".into());

    #[test]
    fn version_shapes() {
        assert!(looks_like_cursor_version("2026.09.28-64d2043\n"));
        assert!(looks_like_cursor_version("2026.06.15-03-48-54-da23e37"));
        assert!(!looks_like_cursor_version("1.4.2"));
        assert!(!looks_like_cursor_version("grok-build 2026.09.28"));
        assert!(!looks_like_cursor_version(""));
    }

    /// The file name the CLI's installer writes: on Windows a `.cmd` launcher (PATH lookup
    /// only finds names with a PATHEXT extension), elsewhere the bare name.
    fn launcher(name: &str) -> String {
        if cfg!(windows) {
            format!("{name}.cmd")
        } else {
            name.to_string()
        }
    }

    #[test]
    fn prefers_cursor_agent_then_checks_agent_version() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        touch_exe(&bin.join(launcher("agent")));
        let found = discover(&lookup(dir.path(), CURSOR)).unwrap();
        assert_eq!(found.program, bin.join(launcher("agent")));
        assert!(matches!(discover(&lookup(dir.path(), GROK)), Err(DiscoveryError::NotFound { .. })));

        touch_exe(&bin.join(launcher("cursor-agent")));
        let found = discover(&lookup(dir.path(), GROK)).unwrap();
        assert_eq!(found.program, bin.join(launcher("cursor-agent")));
    }

    #[test]
    fn configured_path_wins_and_a_missing_one_is_an_error_not_a_fallback() {
        let dir = tempfile::tempdir().unwrap();
        touch_exe(&dir.path().join("bin/cursor-agent"));
        touch_exe(&dir.path().join("custom/agent"));
        let custom = dir.path().join("custom/agent");
        let custom_str = custom.to_str().unwrap().to_string();
        let mut l = lookup(dir.path(), CURSOR);
        l.configured = Some(&custom_str);
        assert_eq!(discover(&l).unwrap().program, custom);

        let missing = dir.path().join("nope/agent").to_str().unwrap().to_string();
        l.configured = Some(&missing);
        assert!(matches!(discover(&l), Err(DiscoveryError::ConfiguredPathMissing { source: Source::Setting, .. })));
    }

    #[test]
    fn env_var_is_used_when_no_setting() {
        let dir = tempfile::tempdir().unwrap();
        touch_exe(&dir.path().join("elsewhere/cursor-agent"));
        let mut l = lookup(dir.path(), CURSOR);
        l.env_path = Some(dir.path().join("elsewhere/cursor-agent").into_os_string());
        assert_eq!(discover(&l).unwrap().program, dir.path().join("elsewhere/cursor-agent"));
    }

    #[test]
    fn install_dir_is_searched_when_path_lacks_it() {
        let dir = tempfile::tempdir().unwrap();
        let installed = dir.path().join("home").join(".local").join("bin").join(launcher("cursor-agent"));
        touch_exe(&installed);
        let found = discover(&lookup(dir.path(), CURSOR)).unwrap();
        assert_eq!(found.program, installed);
    }

    #[test]
    fn nothing_found_lists_where_it_looked() {
        let dir = tempfile::tempdir().unwrap();
        match discover(&lookup(dir.path(), CURSOR)) {
            Err(DiscoveryError::NotFound { searched }) => {
                assert!(searched.iter().any(|s| s.contains("cursor-agent on PATH")))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn windows_launchers_unwrap_to_node_and_index_js() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cursor-agent");
        touch_exe(&root.join("agent.cmd"));
        // No runtime next to the launcher: the newest versions\ folder is used.
        for v in ["2026.08.25-aaaaaaa", "2026.09.28-64d2043", "2026.09.3-bbbbbbb"] {
            touch_exe(&root.join("versions").join(v).join("node.exe"));
            touch_exe(&root.join("versions").join(v).join("index.js"));
        }
        let cmd = unwrap_launcher(&root.join("agent.cmd"));
        let newest = root.join("versions").join("2026.09.28-64d2043");
        assert_eq!(cmd.program, newest.join("node.exe"));
        assert_eq!(cmd.prefix_args, vec![newest.join("index.js").into_os_string()]);
        assert_eq!(cmd.env, vec![("CURSOR_INVOKED_AS".into(), "agent.cmd".into())]);
        assert_eq!(cmd.display, root.join("agent.cmd"));

        // A runtime next to the launcher wins.
        touch_exe(&root.join("node.exe"));
        touch_exe(&root.join("index.js"));
        let cmd = unwrap_launcher(&root.join("cursor-agent.cmd"));
        assert_eq!(cmd.program, root.join("node.exe"));
        assert_eq!(cmd.env[0].1, OsString::from("cursor-agent.cmd"));
    }

    #[test]
    fn plain_binaries_are_not_unwrapped() {
        let cmd = unwrap_launcher(Path::new("/usr/local/bin/cursor-agent"));
        assert_eq!(cmd, CliCommand::plain("/usr/local/bin/cursor-agent".into()));
    }
}
