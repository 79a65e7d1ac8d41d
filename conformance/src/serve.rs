//! `cursor-bridge serve` for one test: the debug binary of this checkout, the CLI double as its
//! Cursor CLI (`CURSOR_BRIDGE_CLI_PATH`), a client key, a private home, state and log folder, the
//! double's record file, a free loopback port. Nothing of the machine's environment reaches it but
//! a minimal `PATH`, so no real Cursor CLI or key is found by accident.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use cursor_bridge::backend::process::{self, ChildProcess, SpawnSpec};
use cursor_bridge::util::sync::AbortOnDrop;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

const START_BOUND: Duration = Duration::from_secs(30);

/// The binaries of this checkout next to this test's own (`target/<profile>/`): `cargo xtask
/// conformance` builds them first; a run by hand builds them here when they are missing.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    // target/<profile>/deps/<test target>-<hash>
    let profile = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
    let path = profile.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !path.is_file() {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--locked", "-p", "cursor-bridge", "--bin", "cursor-bridge"])
            .args(["-p", "cli-double", "--bin", "cursor-agent-double"])
            .status()
            .expect("run cargo to build the sidecar and the CLI double");
        assert!(status.success(), "building the sidecar and the CLI double failed");
    }
    path
}

/// The folders of one server, under the test's temporary folder.
pub struct Folders {
    pub root: PathBuf,
}

impl Folders {
    pub fn record_file(&self) -> PathBuf {
        self.root.join("record.jsonl")
    }
    pub fn log_dir(&self) -> PathBuf {
        self.root.join("logs")
    }
    /// What the double recorded, one line per CLI invocation (an ACP process: two).
    pub fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(self.record_file())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
    /// The server's log files, concatenated.
    pub fn log_text(&self) -> String {
        let mut all = String::new();
        for e in std::fs::read_dir(self.log_dir()).into_iter().flatten().flatten() {
            all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
        all
    }
}

pub struct Serve {
    pub child: ChildProcess,
    pub base_url: String,
    pub folders: Folders,
    stderr: Arc<Mutex<String>>,
    _stderr_reader: AbortOnDrop,
}

impl Serve {
    /// Start it with `--backend <backend>` and wait for its "listening on" line.
    #[allow(dead_code)] // not every test target that includes this file uses every way to start it
    pub async fn start(root: &Path, backend: &str, client_key: &str) -> Result<Serve> {
        Serve::start_with(root, backend, client_key, &[], &[]).await
    }

    /// The same, with more `serve` arguments and more variables (the double's knobs).
    pub async fn start_with(
        root: &Path,
        backend: &str,
        client_key: &str,
        args: &[&str],
        more_env: &[(&str, PathBuf)],
    ) -> Result<Serve> {
        let folders = Folders { root: root.to_path_buf() };
        let home = root.join("home");
        std::fs::create_dir_all(&home)?;
        let mut env: Vec<(&str, PathBuf)> = vec![
            ("PATH", "/usr/bin:/bin".into()),
            ("HOME", home),
            ("CURSOR_BRIDGE_STATE_DIR", root.join("state")),
            ("CURSOR_BRIDGE_LOG_DIR", folders.log_dir()),
            ("CURSOR_BRIDGE_LOG", "debug".into()),
            ("CURSOR_BRIDGE_CLI_PATH", binary("cursor-agent-double")),
            ("CURSOR_BRIDGE_API_KEY", client_key.into()),
            ("CURSOR_DOUBLE_RECORD", folders.record_file()),
            // `serve` hands the CLI only what it needs; the double's knobs are passed on purpose.
            ("CURSOR_BRIDGE_PASS_ENV", "CURSOR_DOUBLE_*".into()),
            // The token estimates' vocabulary, which `cargo xtask dist` ships beside the binary.
            (
                "CURSOR_BRIDGE_TOKENIZER",
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../sidecar/assets/o200k_base.tiktoken"),
            ),
        ];
        env.extend(more_env.iter().cloned());
        let spec = SpawnSpec {
            program: binary("cursor-bridge"),
            args: ["serve", "--listen", "127.0.0.1:0", "--backend", backend]
                .iter()
                .chain(args)
                .map(Into::into)
                .collect(),
            cwd: Some(root.to_path_buf()),
            env: env.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            env_remove: std::env::vars_os().map(|(k, _)| k).collect(),
        };
        let mut child = process::spawn(&spec).context("starting cursor-bridge serve")?;
        drop(child.take_stdin());
        let mut lines = BufReader::new(child.take_stderr().expect("piped")).lines();
        let stderr = Arc::new(Mutex::new(String::new()));
        let listening = tokio::time::timeout(START_BOUND, async {
            while let Ok(Some(line)) = lines.next_line().await {
                stderr.lock().unwrap().push_str(&format!("{line}\n"));
                if let Some(url) = line.split("listening on ").nth(1) {
                    return Some(url.trim().to_string());
                }
            }
            None
        })
        .await;
        let Ok(Some(base_url)) = listening else {
            bail!("cursor-bridge serve did not say where it listens:\n{}", stderr.lock().unwrap());
        };
        let sink = stderr.clone();
        let reader = tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Ok(Serve { child, base_url, folders, stderr, _stderr_reader: AbortOnDrop(reader.abort_handle()) })
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}
