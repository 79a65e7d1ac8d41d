//! One real turn under Wine: `cursor-bridge.exe` (the sidecar built for Windows) speaking
//! JSON-RPC on its pipes to this process, driving the CLI double built for Windows in print mode,
//! the way the extension drives it on a Windows machine: initialize (the CLI found at a Windows
//! path), one `chat/send`, its text deltas and its answer, then end of input ends the sidecar.
//!
//! The double is told its answer (`CURSOR_DOUBLE_SCENARIO`), and the turn must stream exactly that
//! text back: the Windows spawn (Job Object, suspended start, pipes), the double's stream-json
//! parsing and the stdio framing are all on the path.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cursor_bridge_test_client::{initialize_params, user, wait_with_timeout, Launcher, RecvError};
use serde_json::{json, Value};

use super::Wine;

/// What the double answers; the turn must show exactly this.
const ANSWER: &str = "Hello from cursor-bridge.exe under Wine, through the Windows CLI double.";

/// Starting the sidecar and the double under Wine is slow the first time (a few seconds each).
const TURN_TIMEOUT: Duration = Duration::from_secs(120);

/// `path` as Windows sees it under Wine: the prefix maps Z: to `/`.
pub fn windows_path(path: &Path) -> String {
    format!("Z:{}", path.display().to_string().replace('/', "\\"))
}

/// The turn; `bridge` and `double` are the Windows binaries, `dir` a scratch folder.
pub fn run(wine: &Wine, bridge: &Path, double: &Path, dir: &Path) -> Result<()> {
    let started = Instant::now();
    let _ = std::fs::remove_dir_all(dir);
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws)?;
    let scenario = json!({ "answer": ANSWER }).to_string();
    let mut launcher = Launcher::new("wine", dir).arg(bridge);
    for (key, value) in wine.env() {
        launcher = match value {
            Some(v) => launcher.env(key, v),
            None => launcher.env_remove(key),
        };
    }
    let mut process = launcher
        .log_level("info")
        // The folders as Windows paths (the launcher's defaults are this machine's).
        .env("CURSOR_BRIDGE_STATE_DIR", windows_path(&dir.join("state")))
        .env("CURSOR_BRIDGE_LOG_DIR", windows_path(&dir.join("logs")))
        .env("CURSOR_DATA_DIR", windows_path(&dir.join("data")))
        .env("CURSOR_BRIDGE_BACKEND", "print")
        .env("CURSOR_DOUBLE_SCENARIO", &scenario)
        .env_remove("CURSOR_API_KEY")
        .env_remove("CURSOR_BRIDGE_CLI_PATH")
        .stderr_file(dir.join("sidecar.stderr"))
        .start(|body| serde_json::from_slice::<Value>(body).ok())
        .context("starting cursor-bridge.exe under Wine")?;
    let stderr = || std::fs::read_to_string(dir.join("sidecar.stderr")).unwrap_or_default();
    let deadline = started + TURN_TIMEOUT;
    let answer = |conn: &mut cursor_bridge_test_client::Connection<Value>, id: u64, text: &mut String| loop {
        let m = match conn.recv(deadline.saturating_duration_since(Instant::now())) {
            Ok(m) => m.message,
            Err(RecvError::Timeout) => bail!("no answer within {TURN_TIMEOUT:?}; its stderr:\n{}", stderr()),
            Err(RecvError::Closed) => bail!("cursor-bridge.exe closed its output; its stderr:\n{}", stderr()),
        };
        if m["method"] == "chat/delta" && m["params"]["kind"] == "text" {
            text.push_str(m["params"]["text"].as_str().unwrap_or_default());
        }
        if m["id"] == id {
            if !m["error"].is_null() {
                bail!("request {id} failed: {}", m["error"]);
            }
            return Ok(m["result"].clone());
        }
    };

    let result = (|| {
        let params = initialize_params(
            ("xtask-wine-test", "1"),
            Path::new(&windows_path(&ws)),
            Path::new(&windows_path(double)),
            json!({}),
        );
        let (id, _) = process.conn.request("initialize", params)?;
        let init = answer(&mut process.conn, id, &mut String::new())?;
        if init["capabilities"]["cli"]["found"] != json!(true) {
            bail!("cursor-bridge.exe did not find the Windows CLI double: {init}");
        }
        let send = json!({
            "turnId": "wine-1", "model": "auto", "mode": "ask", "conversationId": "wine",
            "messages": [user("Say hello from Windows.")],
        });
        let (id, _) = process.conn.request("chat/send", send)?;
        let mut text = String::new();
        answer(&mut process.conn, id, &mut text)?;
        if text != ANSWER {
            bail!("the turn streamed {text:?}, the double answered {ANSWER:?}");
        }
        process.conn.close_stdin();
        match wait_with_timeout(&mut process.child, Duration::from_secs(30)) {
            Some(status) if status.success() => Ok(()),
            Some(status) => bail!("cursor-bridge.exe exited with {status} at end of input; its stderr:\n{}", stderr()),
            None => bail!("cursor-bridge.exe did not exit within 30 s of end of input"),
        }
    })();
    if result.is_err() {
        let _ = process.child.kill();
        let _ = process.child.wait();
    }
    result.context("one print-mode turn of cursor-bridge.exe against the Windows CLI double under Wine")?;
    eprintln!("xtask: wine-test: one print-mode turn of cursor-bridge.exe against the Windows CLI double streamed its answer and ended cleanly in {:.1?}", started.elapsed());
    Ok(())
}
