//! `CURSOR_DOUBLE_RECORD`: one JSON line per invocation, for test assertions.
//!
//! The line is appended with a single `write()` on an `O_APPEND` descriptor, so records of
//! concurrent doubles never interleave, and it is written before the double answers, so a process
//! the sidecar kills mid-answer is still on record.

use std::io::Write;

use crate::json::{obj, Json};
use crate::{process, settings};

/// Environment variables copied into the record when present.
const RECORDED_ENV: &[&str] = &[
    "CURSOR_API_KEY",
    "CURSOR_AUTH_TOKEN",
    "NO_COLOR",
    "FORCE_COLOR",
    "TERM",
    "CURSOR_CONVERSATION_ID",
    "CURSOR_INVOKED_AS",
    "CURSOR_CONFIG_DIR",
    "CURSOR_DATA_DIR",
    "HOME",
];

/// What the invocation received.
#[derive(Default)]
pub struct Record {
    pub argv: Vec<String>,
    pub subcommand: String,
    /// Raw bytes read from stdin; `None` when stdin was not read.
    pub stdin: Option<Vec<u8>>,
    /// The prompt the double answered (positional words or stdin, directives still in).
    pub prompt: Option<String>,
    pub session_id: Option<String>,
    pub grandchild_pid: Option<u32>,
    /// What the process saw and did with client-owned tools (README "Client-owned tools").
    pub tools: Option<Json>,
    /// ACP processes only: the `acp` key (start or exit line, see README "ACP mode").
    pub acp: Option<Json>,
}

impl Record {
    pub fn to_json(&self) -> Json {
        let env = Json::Obj(
            RECORDED_ENV
                .iter()
                .filter_map(|name| settings::var(name).map(|v| ((*name).to_owned(), Json::Str(v))))
                .collect(),
        );
        // The bridge's own variables (its client key above all) must never reach the CLI: record
        // any that did, by name, so a test can say which.
        let bridge_env = Json::Arr(
            std::env::vars_os()
                .filter_map(|(k, _)| k.into_string().ok())
                .filter(|k| k.starts_with("CURSOR_BRIDGE_"))
                .map(Json::Str)
                .collect(),
        );
        // Every variable's name (never a value): what of its parent's environment the CLI, and
        // so every command it runs, inherits.
        let mut names: Vec<String> = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()).collect();
        names.sort();
        let env_names = Json::Arr(names.into_iter().map(Json::Str).collect());
        let cwd = std::env::current_dir().map(|p| p.to_string_lossy().into_owned()).ok();
        let mut record = obj([
            ("pid", std::process::id().into()),
            ("ppid", process::ppid().into()),
            ("pgid", process::pgid().into()),
            ("argv", Json::Arr(self.argv.iter().map(Json::from).collect())),
            ("cwd", cwd.into()),
            ("subcommand", self.subcommand.as_str().into()),
            ("stdin", self.stdin.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()).into()),
            ("stdinBytes", self.stdin.as_ref().map_or(0, Vec::len).into()),
            ("prompt", self.prompt.clone().into()),
            ("env", env),
            ("bridgeEnv", bridge_env),
            ("sessionId", self.session_id.clone().into()),
            ("grandchildPid", self.grandchild_pid.into()),
            ("envNames", env_names),
        ]);
        if let Some(tools) = &self.tools {
            record.set("tools", tools.clone());
        }
        if let Some(acp) = &self.acp {
            record.set("acp", acp.clone());
        }
        record
    }

    /// Appends the record when `CURSOR_DOUBLE_RECORD` is set. Failures are reported on stderr but
    /// do not change the double's behaviour.
    pub fn append(&self) {
        let Some(path) = settings::non_empty("CURSOR_DOUBLE_RECORD") else {
            return;
        };
        let mut line = self.to_json().to_compact().into_bytes();
        line.push(b'\n');
        let written = std::fs::OpenOptions::new().create(true).append(true).open(&path).and_then(|mut f| {
            // One write() call for the whole line; loop only if the kernel wrote a short count
            // (it does not for regular files short of a full disk).
            let n = f.write(&line)?;
            f.write_all(&line[n..])
        });
        if let Err(e) = written {
            crate::output::stderr_line(&format!("cursor-agent-double: cannot write record to {path}: {e}"));
        }
    }
}
