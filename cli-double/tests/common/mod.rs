//! Helpers shared by the integration tests: run the built double with a clean environment, feed
//! stdin from a thread (so big prompts cannot deadlock against a full stdout pipe), parse output.

#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The double's own ordered JSON type, so tests can check key ORDER (serde_json's `Value` sorts).
#[path = "../../src/json.rs"]
pub mod json;

pub mod acp;
pub mod mcp_server;

pub use json::Json;

pub const BIN: &str = env!("CARGO_BIN_EXE_cursor-agent-double");

pub struct Double {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

/// A command for the double with an empty environment apart from PATH and HOME, so variables of
/// the machine running the tests (`CURSOR_API_KEY`, `FORCE_COLOR`, `CURSOR_CONVERSATION_ID`, ...)
/// cannot change the outcome.
pub fn double() -> Double {
    let mut cmd = Command::new(BIN);
    cmd.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    // A HOME of its own: the double keeps chat folders under $HOME/.cursor.
    cmd.env("HOME", std::env::temp_dir().join(format!("cli-double-test-home-{}", std::process::id())));
    Double { cmd, stdin: None }
}

impl Double {
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(mut self, args: I) -> Self {
        self.cmd.args(args);
        self
    }
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.cmd.env(k, v);
        self
    }
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }
    pub fn command(self) -> Command {
        self.cmd
    }

    pub fn run(mut self) -> Output {
        self.cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.cmd.spawn().expect("spawn double");
        let mut pipe = child.stdin.take().expect("stdin pipe");
        let input = self.stdin.unwrap_or_default();
        let writer = std::thread::spawn(move || {
            // EPIPE is fine: some scenarios close stdin early on purpose.
            let _ = pipe.write_all(&input);
        });
        let out = child.wait_with_output().expect("wait double");
        writer.join().expect("stdin writer");
        Output { code: out.status.code(), stdout: out.stdout, stderr: out.stderr }
    }
}

pub struct Output {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    pub fn stdout(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("stdout is UTF-8")
    }
    pub fn stderr(&self) -> String {
        String::from_utf8(self.stderr.clone()).expect("stderr is UTF-8")
    }
    /// stdout as NDJSON events; every line must parse.
    pub fn events(&self) -> Vec<Json> {
        self.stdout().lines().map(|l| Json::parse(l).unwrap_or_else(|e| panic!("bad NDJSON line {l:?}: {e}"))).collect()
    }
}

pub fn str_at<'a>(v: &'a Json, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Json::as_str)
}

pub fn at<'a>(v: &'a Json, path: &[&str]) -> Option<&'a Json> {
    path.iter().try_fold(v, |cur, key| cur.get(key))
}

/// Text of an assistant event (`message.content[0].text`).
pub fn assistant_text(v: &Json) -> &str {
    match at(v, &["message", "content"]) {
        Some(Json::Arr(items)) => items.first().and_then(|i| i.get("text")).and_then(Json::as_str).unwrap_or(""),
        _ => "",
    }
}

pub fn kind(v: &Json) -> (String, String) {
    (str_at(v, &["type"]).unwrap_or_default().to_owned(), str_at(v, &["subtype"]).unwrap_or_default().to_owned())
}

/// A fresh path under the temp dir (no tempfile crate in this package).
pub fn temp_path(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("cli-double-test-{}-{n}-{name}", std::process::id()))
}

pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The key structure of an event, in order: values of `type`/`subtype`/`query_type` are kept,
/// other leaves are reduced to their JSON type. With `opaque_args`, tool `args` are not descended.
pub fn shape(v: &Json, opaque_args: bool) -> String {
    fn walk(v: &Json, key: &str, opaque_args: bool, out: &mut String) {
        match v {
            Json::Obj(pairs) if !(opaque_args && key == "args") => {
                out.push('{');
                for (k, child) in pairs {
                    out.push_str(k);
                    out.push(':');
                    walk(child, k, opaque_args, out);
                    out.push(',');
                }
                out.push('}');
            }
            Json::Obj(_) => out.push_str("{..}"),
            Json::Arr(items) => {
                out.push('[');
                if let Some(first) = items.first() {
                    walk(first, "", opaque_args, out);
                }
                out.push(']');
            }
            Json::Str(s) if matches!(key, "type" | "subtype" | "query_type") => out.push_str(s),
            Json::Str(_) => out.push('s'),
            Json::Num(_) => out.push('n'),
            Json::Bool(_) => out.push('b'),
            Json::Null => out.push_str("null"),
        }
    }
    let mut out = String::new();
    walk(v, "", opaque_args, &mut out);
    out
}

/// Shapes of a whole stream with consecutive repeats collapsed (delta counts differ by design).
pub fn stream_shape(events: &[Json], opaque_args: bool) -> Vec<String> {
    let mut shapes: Vec<String> = events.iter().map(|e| shape(e, opaque_args)).collect();
    shapes.dedup();
    shapes
}

/// Removes CSI and OSC (BEL- or ST-terminated) sequences.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('[') => {
                for c in it.by_ref() {
                    if ('\x40'..='\x7e').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = it.next() {
                    if c == '\x07' || (c == '\x1b' && it.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

pub fn is_uuid_v4(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() == 36
        && [8, 13, 18, 23].iter().all(|i| b[*i] == b'-')
        && s.chars().enumerate().all(|(i, c)| [8, 13, 18, 23].contains(&i) || matches!(c, '0'..='9' | 'a'..='f'))
        && b[14] == b'4'
        && matches!(b[19], b'8' | b'9' | b'a' | b'b')
}
