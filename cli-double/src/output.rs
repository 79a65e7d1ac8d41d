//! Writing to stdout/stderr the way a Node process does: every NDJSON event is written (and
//! flushed) as one complete `\n`-terminated line as soon as it exists, so a parent reading the pipe
//! sees events in real time and a killed double leaves only whole lines behind.

use std::io::Write;
use std::time::Duration;

use crate::json::Json;
use crate::process;

/// Writes raw bytes to stdout and flushes. If the reader has gone away (EPIPE) the double exits
/// quietly with status 1 — Node dies on an unhandled EPIPE as well, and panicking would only add
/// noise to the test output.
pub fn stdout_bytes(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if out.write_all(bytes).and_then(|()| out.flush()).is_err() {
        std::process::exit(1);
    }
}

/// Writes text to stderr, adding the final newline when missing.
pub fn stderr_line(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
    let _ = err.flush();
}

/// Writes raw bytes to stderr.
pub fn stderr_bytes(bytes: &[u8]) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(bytes);
    let _ = err.flush();
}

/// The stream of stdout lines of one print-mode run.
///
/// Every event goes through [`EventStream::emit`] whatever the output format, because the pacing
/// (`deltaDelayMs`) models the model's thinking time, which passes in `json`/`text` mode too; only
/// `stream-json` actually prints events.
pub struct EventStream {
    pub print_events: bool,
    pub delay: Duration,
    pub garbage: bool,
    emitted: usize,
}

impl EventStream {
    pub fn new(print_events: bool, delay: Duration, garbage: bool) -> EventStream {
        EventStream { print_events, delay, garbage, emitted: 0 }
    }

    pub fn emit(&mut self, event: &Json) {
        if self.emitted > 0 {
            process::sleep(self.delay);
        }
        if self.print_events {
            if self.garbage && self.emitted > 0 {
                stdout_bytes(&garbage_line(self.emitted));
            }
            let mut line = event.to_compact().into_bytes();
            line.push(b'\n');
            stdout_bytes(&line);
        }
        self.emitted += 1;
    }

    /// A verbatim line (replay mode); same pacing as events.
    pub fn emit_raw(&mut self, line: &[u8]) {
        if self.emitted > 0 {
            process::sleep(self.delay);
        }
        let mut buf = line.to_vec();
        if !buf.ends_with(b"\n") {
            buf.push(b'\n');
        }
        stdout_bytes(&buf);
        self.emitted += 1;
    }
}

/// The non-JSON noise of the `garbage` scenario, cycling through the kinds a robust reader must
/// skip: a log line, invalid UTF-8, an empty line, and a truncated JSON object.
fn garbage_line(n: usize) -> Vec<u8> {
    match n % 4 {
        1 => format!("[agent] heartbeat {n}\n").into_bytes(),
        2 => b"\xff\xfe invalid utf-8 \xc3\x28 \xed\xa0\x80\n".to_vec(),
        3 => b"\n".to_vec(),
        _ => b"{\"type\":\"assistant\",\"message\":{\"role\":\n".to_vec(),
    }
}
