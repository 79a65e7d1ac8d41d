//! One e2e session: a fresh VS Code profile in the run folder, both extensions installed from their
//! VSIX files, code-server on a free loopback port, the Playwright driver, then the checker. Runs
//! inside the private network namespace (see `mod.rs`), so it reads its inputs from `plan.txt`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// How long the driver may take in all (the API half and every Chat view step; the whole takes
/// about 6 minutes, of which the Copilot tools phase about 4, two of them the person waiting
/// before Allow).
const DRIVER_DEADLINE: Duration = Duration::from_secs(25 * 60);
/// The double's start-up delay: small, but not zero, so the warm spares have something to hide.
const DOUBLE_STARTUP_MS: &str = "50";
/// How long the double takes to list models (a real CLI: 2–3 s).
const MODELS_DELAY_MS: &str = "1500";

/// Where to look when something failed (relative to the run folder).
pub const LOGS: &[(&str, &str)] = &[
    ("checks", "check.log"),
    ("code-server", "logs/code-server.log"),
    ("extension host", "logs/extension-host.log"),
    ("the extension's log", "logs/cursor-bridge-extension.log"),
    ("Copilot Chat", "logs/copilot-chat.log"),
    ("sidecar", "logs/sidecar/"),
    ("CLI double record", "double-record.jsonl"),
    ("results", "results/"),
    ("driver", "results/driver.log"),
    ("screenshots", "screenshots/"),
];

/// The e2e consumer extension (`vscode-client/e2e/consumer/package.json`: publisher.name).
const CONSUMER_ID: &str = "cursor-bridge-e2e.cursor-bridge-e2e-consumer";

pub struct Plan {
    pub root: PathBuf,
    pub run_dir: PathBuf,
    /// `cursorBridge.backend` of the session (`print` or `acp`).
    pub backend: String,
    pub bridge_vsix: PathBuf,
    pub consumer_vsix: PathBuf,
    pub double: PathBuf,
    pub node: PathBuf,
    pub code_server: PathBuf,
    pub playwright: PathBuf,
    pub chromium: PathBuf,
}

impl Plan {
    fn fields(&self) -> [(&'static str, &PathBuf); 9] {
        [
            ("root", &self.root),
            ("run_dir", &self.run_dir),
            ("bridge_vsix", &self.bridge_vsix),
            ("consumer_vsix", &self.consumer_vsix),
            ("double", &self.double),
            ("node", &self.node),
            ("code_server", &self.code_server),
            ("playwright", &self.playwright),
            ("chromium", &self.chromium),
        ]
    }

    pub fn save(&self) -> Result<()> {
        let mut text: String = self.fields().iter().map(|(k, v)| format!("{k}={}\n", v.display())).collect();
        text.push_str(&format!("backend={}\n", self.backend));
        std::fs::write(self.run_dir.join("plan.txt"), text)?;
        Ok(())
    }

    pub fn load(run_dir: &Path) -> Result<Plan> {
        let file = run_dir.join("plan.txt");
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        let get = |key: &str| -> Result<PathBuf> {
            text.lines()
                .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
                .map(PathBuf::from)
                .with_context(|| format!("{} has no {key}", file.display()))
        };
        Ok(Plan {
            root: get("root")?,
            run_dir: get("run_dir")?,
            backend: get("backend")?.to_string_lossy().into_owned(),
            bridge_vsix: get("bridge_vsix")?,
            consumer_vsix: get("consumer_vsix")?,
            double: get("double")?,
            node: get("node")?,
            code_server: get("code_server")?,
            playwright: get("playwright")?,
            chromium: get("chromium")?,
        })
    }

    fn e2e_dir(&self) -> PathBuf {
        self.root.join("vscode-client").join("e2e")
    }
}

/// Folders of the run (all inside the run folder, so a run leaves nothing elsewhere).
struct Dirs {
    run: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
    user_data: PathBuf,
    extensions: PathBuf,
    workspace: PathBuf,
    results: PathBuf,
    screenshots: PathBuf,
    logs: PathBuf,
    sidecar_state: PathBuf,
    sidecar_logs: PathBuf,
}

impl Dirs {
    fn create(run: &Path) -> Result<Dirs> {
        let d = Dirs {
            run: run.to_path_buf(),
            home: run.join("home"),
            tmp: run.join("tmp"),
            user_data: run.join("user-data"),
            extensions: run.join("extensions"),
            workspace: run.join("workspace"),
            results: run.join("results"),
            screenshots: run.join("screenshots"),
            logs: run.join("logs"),
            sidecar_state: run.join("sidecar-state"),
            sidecar_logs: run.join("logs").join("sidecar"),
        };
        for dir in [
            &d.home,
            &d.tmp,
            &d.user_data.join("User"),
            &d.extensions,
            &d.workspace,
            &d.results,
            &d.screenshots,
            &d.sidecar_state,
            &d.sidecar_logs,
        ] {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(d)
    }
}

/// Returns whether every check passed.
pub fn run(plan: &Plan) -> Result<bool> {
    let d = Dirs::create(&plan.run_dir)?;
    // Marks every process of this run (the run folder's path is unique, also across clones).
    let run_name = d.run.to_string_lossy().into_owned();
    std::fs::write(d.workspace.join("README.md"), "# e2e workspace\n\nA folder for the Chat view to work in.\n")?;
    std::fs::copy(plan.e2e_dir().join("models").join("before.txt"), d.run.join("models.txt"))?;
    std::fs::write(d.user_data.join("User").join("settings.json"), user_settings(&plan.backend))?;
    // `cursorBridge.cliPath` is machine-scoped, and code-server's windows are remote ones: VS Code
    // takes such settings from the machine's settings (the Settings editor's "Remote" tab), not
    // the user's. (From the user's file it is applied at first, then dropped.)
    std::fs::create_dir_all(d.user_data.join("Machine"))?;
    let machine = format!("{{\n  \"cursorBridge.cliPath\": {}\n}}\n", json_string(&plan.double.to_string_lossy()));
    std::fs::write(d.user_data.join("Machine").join("settings.json"), machine)?;

    let env = Env::new(plan, &d);
    let code_server_args = |cmd: &mut Command| {
        cmd.arg(plan.code_server.join("out").join("node").join("entry.js"))
            .arg("--config")
            .arg(d.run.join("code-server.yaml"))
            .arg("--user-data-dir")
            .arg(&d.user_data)
            .arg("--extensions-dir")
            .arg(&d.extensions);
    };

    // Install both extensions from their VSIX files, as a person would.
    let t = Instant::now();
    let mut install = Command::new(&plan.node);
    code_server_args(&mut install);
    install.arg("--install-extension").arg(&plan.bridge_vsix).arg("--install-extension").arg(&plan.consumer_vsix);
    env.apply(&mut install);
    let log = d.logs.join("install-extensions.log");
    std::fs::create_dir_all(&d.logs)?;
    let status = install
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log)?)
        .stderr(std::fs::File::create(d.logs.join("install-extensions.err.log"))?)
        .status()
        .context("running code-server --install-extension")?;
    if !status.success() {
        bail!("installing the extensions failed ({status}); see {}", log.display());
    }
    eprintln!("e2e: extensions installed in {:.1?}", t.elapsed());

    // code-server on a free loopback port, in a process group of its own (so that what is left of
    // it can be killed at the end). The marker in its environment, inherited by the extension
    // host, the sidecar and the CLI processes, finds them all.
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let t = Instant::now();
    let mut server = Command::new(&plan.node);
    code_server_args(&mut server);
    server
        .arg("--bind-addr")
        .arg(format!("127.0.0.1:{port}"))
        .args(["--auth", "none", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust"])
        .arg("--disable-getting-started-override")
        // The consumer emulates VS Code's Copilot harness, whose System messages are proposed API.
        .args(["--enable-proposed-api", CONSUMER_ID])
        .arg(&d.workspace);
    env.apply(&mut server);
    server.env("CURSOR_BRIDGE_E2E_RUN", &run_name);
    let server_log = d.logs.join("code-server.log");
    // The e2e run is Linux only (setup.rs); the cfg lets `cargo xtask dist` build on Windows.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut server, 0);
    let mut server = server
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&server_log)?)
        .stderr(std::fs::File::create(d.logs.join("code-server.stderr.log"))?)
        .spawn()
        .context("starting code-server")?;
    let outcome = (|| -> Result<Option<i32>> {
        wait_healthy(&mut server, port, Duration::from_secs(60))?;
        eprintln!("e2e: code-server listening on 127.0.0.1:{port} after {:.1?}", t.elapsed());
        let t = Instant::now();
        let mut driver = Command::new(&plan.node);
        driver
            .arg(plan.e2e_dir().join("driver.cjs"))
            .arg(format!("http://127.0.0.1:{port}/?folder={}", d.workspace.display()))
            .arg(&d.results)
            .arg(&d.screenshots);
        env.apply(&mut driver);
        driver
            .env("PLAYWRIGHT_CORE", &plan.playwright)
            .env("CHROMIUM", &plan.chromium)
            .env("CURSOR_BRIDGE_E2E_RUN", &run_name)
            // The Copilot tools phase switches `cursorBridge.tools` in this file (and sets `.backend`
            // to the session's), as a person editing their settings.json would.
            .env("E2E_USER_SETTINGS", d.user_data.join("User").join("settings.json"))
            // The Copilot tools phase runs on the session's backend.
            .env("E2E_TOOLS_BACKENDS", &plan.backend);
        let mut driver = driver.stdin(Stdio::null()).spawn().context("starting the driver")?;
        let code = wait_deadline(&mut driver, DRIVER_DEADLINE)?;
        eprintln!(
            "e2e: driver finished in {:.1?} ({})",
            t.elapsed(),
            code.map_or("killed at its deadline".into(), |c| format!("exit {c}"))
        );
        Ok(code)
    })();
    let leftovers = stop_server(&mut server, &run_name);
    std::fs::write(d.results.join("leftover-processes.txt"), leftovers.join("\n"))?;
    let driver_exit = match outcome {
        Ok(code) => code.map_or_else(|| "deadline".to_string(), |c| c.to_string()),
        Err(e) => {
            eprintln!("e2e: {e:#}");
            format!("error: {e:#}")
        }
    };
    std::fs::write(d.results.join("driver-exit.txt"), &driver_exit)?;
    collect_extension_logs(&d);

    // The verdict, after code-server stopped: the sidecar has written its last state and logs.
    let check_log = d.run.join("check.log");
    let mut check = Command::new(&plan.node);
    check.arg(plan.e2e_dir().join("check.cjs")).arg(&d.run);
    env.apply(&mut check);
    check.env("E2E_BACKEND", &plan.backend);
    let out = check.stdin(Stdio::null()).stderr(Stdio::inherit()).output().context("running check.cjs")?;
    std::io::stdout().write_all(&out.stdout)?;
    std::fs::write(&check_log, &out.stdout)?;
    Ok(out.status.success())
}

/// Copies the logs VS Code wrote under user-data/logs/<session>/exthost1/ next to the others, under
/// names that say what they are.
fn collect_extension_logs(d: &Dirs) {
    let wanted = [
        ("remoteexthost.log", "extension-host.log"),
        ("Cursor Bridge.log", "cursor-bridge-extension.log"),
        ("GitHub Copilot Chat.log", "copilot-chat.log"),
    ];
    let Ok(sessions) = std::fs::read_dir(d.user_data.join("logs")) else { return };
    for session in sessions.flatten() {
        let mut stack = vec![session.path()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if let Some((_, to)) =
                    wanted.iter().find(|(from, _)| path.file_name().is_some_and(|n| n == *from))
                {
                    let _ = std::fs::copy(&path, d.logs.join(to));
                }
            }
        }
    }
}

/// The environment of everything the session starts: home, temp and config folders inside the
/// run; the double's and the sidecar's files in the run; nothing inherited that could steer the
/// CLI, the sidecar or VS Code elsewhere.
struct Env {
    set: Vec<(String, std::ffi::OsString)>,
}

impl Env {
    fn new(plan: &Plan, d: &Dirs) -> Env {
        let p = |p: &Path| p.as_os_str().to_owned();
        let home = &d.home;
        let set = vec![
            ("HOME".into(), p(home)),
            ("TMPDIR".into(), p(&d.tmp)),
            ("XDG_CONFIG_HOME".into(), p(&home.join(".config"))),
            ("XDG_DATA_HOME".into(), p(&home.join(".local").join("share"))),
            ("XDG_STATE_HOME".into(), p(&home.join(".local").join("state"))),
            ("XDG_CACHE_HOME".into(), p(&home.join(".cache"))),
            // No extension gallery: VS Code would otherwise ask open-vsx.org for updates.
            ("EXTENSIONS_GALLERY".into(), "{}".into()),
            ("CURSOR_DOUBLE_RECORD".into(), p(&d.run.join("double-record.jsonl"))),
            ("CURSOR_DOUBLE_STARTUP_MS".into(), DOUBLE_STARTUP_MS.into()),
            ("CURSOR_DOUBLE_MODELS_FILE".into(), p(&d.run.join("models.txt"))),
            // Listing models takes the real CLI 2–3 s: the first ask for models must wait for it.
            ("CURSOR_DOUBLE_MODELS_DELAY_MS".into(), MODELS_DELAY_MS.into()),
            ("CURSOR_BRIDGE_STATE_DIR".into(), p(&d.sidecar_state)),
            ("CURSOR_BRIDGE_LOG_DIR".into(), p(&d.sidecar_logs)),
            ("CURSOR_BRIDGE_E2E_OUT".into(), p(&d.results)),
            ("CURSOR_BRIDGE_E2E_MODELS_AFTER".into(), p(&plan.e2e_dir().join("models").join("after.txt"))),
        ];
        Env { set }
    }

    fn apply(&self, cmd: &mut Command) {
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            // Another Cursor set-up (key, chat id, CLI path), another test's double settings, or the
            // VS Code this runs inside (its CLI hooks would turn code-server into a client of it).
            let foreign = k.starts_with("CURSOR_")
                || k.starts_with("VSCODE_")
                || k == "ELECTRON_RUN_AS_NODE"
                || k == "NODE_OPTIONS";
            if foreign {
                cmd.env_remove(&key);
            }
        }
        for (k, v) in &self.set {
            cmd.env(k, v);
        }
    }
}

/// The user's settings: no start-up editor, nothing that phones home, no trust prompt, no offer to
/// open the project's own repository (the run folder is inside it), and the
/// Chat view's title/progress requests (utility requests) sent to a Cursor model, so they reach
/// the provider (and can be seen not to disturb sessions): the picker entry Composer 2.5, whose
/// utility requests the extension runs on the SKU composer-2.5-fast (`cursorBridge.utilityModel`).
/// The session's backend (`cursorBridge.backend`) and Cursor's own tools (`cursorBridge.tools`) for
/// every phase but the last, which drive Cursor's agent mode (its tool deltas, `--force` absent). The
/// last phase, the Copilot tools one (`vscode-client/e2e/tools.cjs`), switches to `tools: "copilot"`
/// (the default outside the test) in the Settings JSON editor.
fn user_settings(backend: &str) -> String {
    USER_SETTINGS
        .replace("\"cursorBridge.backend\": \"print\"", &format!("\"cursorBridge.backend\": {}", json_string(backend)))
}

const USER_SETTINGS: &str = r#"{
  "workbench.startupEditor": "none",
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "security.workspace.trust.enabled": false,
  "git.openRepositoryInParentFolders": "never",
  "chat.utilityModel": "cursor/composer-2.5",
  "chat.utilitySmallModel": "cursor/composer-2.5",
  "cursorBridge.utilityModel": "composer-2.5-fast",
  "cursorBridge.logLevel": "debug",
  "cursorBridge.backend": "print",
  "cursorBridge.tools": "cursor"
}
"#;

fn json_string(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Polls `GET /healthz` until code-server answers (or exits, or the time is up).
fn wait_healthy(server: &mut Child, port: u16, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = server.try_wait()? {
            bail!("code-server exited before it listened ({status})");
        }
        if healthz(port) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("code-server did not answer on 127.0.0.1:{port} within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn healthz(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 16];
    s.read(&mut head).is_ok_and(|n| head[..n].starts_with(b"HTTP/1.1 200") || head[..n].starts_with(b"HTTP/1.0 200"))
}

/// The child's exit code, or None when it had to be killed at the deadline.
fn wait_deadline(child: &mut Child, limit: Duration) -> Result<Option<i32>> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status.code().unwrap_or(-1)));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Stops code-server the way its service manager would: SIGTERM to the server alone, which then
/// shuts its extension host down (and with it, through the closed pipe, the sidecar and its CLI
/// processes). Whatever of the run is still alive a few seconds later is left behind: it is listed
/// (for check.cjs), then killed.
fn stop_server(child: &mut Child, run_name: &str) -> Vec<String> {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).stderr(Stdio::null()).status();
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && !matches!(child.try_wait(), Ok(Some(_))) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && !survivors(run_name).is_empty() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left: Vec<String> = survivors(run_name).into_iter().map(|(pid, cmd)| format!("{pid} {cmd}")).collect();
    let group = format!("-{}", child.id());
    let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
    for (pid, _) in survivors(run_name) {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).stderr(Stdio::null()).status();
    }
    let _ = child.wait();
    left
}

/// Processes of this run that are still alive (found by the marker in their environment, which
/// every process of the session inherits), with their command lines. Zombies have no environment
/// left and are not listed.
fn survivors(run_name: &str) -> Vec<(u32, String)> {
    let marker = format!("CURSOR_BRIDGE_E2E_RUN={run_name}");
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return found };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ").trim().to_string()));
        }
    }
    found
}
