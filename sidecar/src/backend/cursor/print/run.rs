//! One print-mode turn on a started CLI process: write the prompt to its stdin, read its
//! stream-json stdout line by line, turn parsed events into [`Event`]s, and classify how it ended.
//! Timeouts are the engine's (it drops this future, which kills the process group); what is
//! bounded here is waiting for a CLI that lingers after its answer or after it exited.

use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};

use super::stream::{StreamEvent, StreamParser, ToolOutcome, TurnResult};
use crate::backend::contract::{TurnEnd, TurnFailure};
use crate::backend::cursor::failures::classify;
use crate::backend::events::{Event, EventSink};
use crate::backend::process::{self, ChildProcess};
use crate::error::BridgeError;
use crate::util::io::{keep_tail, read_line_bounded, LineRead};
use crate::util::sync::AbortOnDrop;
use crate::vocab::ErrorKind;

/// A stdout line longer than this fails the turn (file contents arrive inside tool results, so
/// lines of several MiB are normal; 16 MiB is not).
pub const MAX_LINE: usize = 16 * 1024 * 1024;
/// stderr kept for diagnosis (the tail, where the error is).
const STDERR_KEEP: usize = 64 * 1024;
/// After SIGTERM, how long the CLI gets before SIGKILL.
const TERMINATE_GRACE: Duration = Duration::from_millis(500);
/// After `result`, how long the CLI may linger before it is stopped (docs/cursor-cli.md §5.3).
const LINGER_AFTER_RESULT: Duration = Duration::from_secs(3);
/// After the CLI exits, how long to keep reading output a descendant may still be writing.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

const PERMISSION_HINT: &str = "Cursor asked for approval, which the bridge cannot give interactively. \
     To let agent mode run commands without asking, enable `cursorBridge.allowUnattended` (passes --force).";

/// `resuming`: the chat the turn must continue; an init event that names another means the CLI
/// silently started a fresh chat, and the turn stops before any of it reaches the client.
pub async fn drive(
    mut child: ChildProcess,
    prompt: &str,
    resuming: Option<&str>,
    idle: Duration,
    sink: &mut EventSink,
) -> Result<TurnEnd, TurnFailure> {
    tracing::debug!(pid = child.pid(), "CLI runs the turn");
    let stdin = child.take_stdin();
    let prompt = prompt.to_owned();
    // Write the prompt concurrently with reading: a CLI that streams before it has read a large
    // prompt must not deadlock against us.
    let writer = tokio::spawn(async move {
        if let Some(mut stdin) = stdin {
            if let Err(e) = stdin.write_all(prompt.as_bytes()).await {
                tracing::debug!(error = %e, "CLI closed stdin before reading the whole prompt");
            }
            let _ = stdin.shutdown().await;
        }
    });
    let _writer_guard = AbortOnDrop(writer.abort_handle());
    let stderr_task = tokio::spawn(keep_tail(child.take_stderr(), STDERR_KEEP));
    let _stderr_guard = AbortOnDrop(stderr_task.abort_handle());
    let stdout = child.take_stdout().ok_or_else(|| BridgeError::internal("no stdout"))?;
    let mut stdout = BufReader::with_capacity(64 * 1024, stdout);

    let mut parser = StreamParser::new(true);
    let mut events = Vec::new();
    let mut line = Vec::with_capacity(4096);
    let mut state = Seen::default();
    let mut exit_status = None;
    // Once the CLI has exited, a descendant may still hold its stdout open; read what is left for
    // a moment, then stop (the group is killed on exit, escapees by the orphan sweep).
    let mut drain_until: Option<tokio::time::Instant> = None;
    let stop: Option<BridgeError> = loop {
        let read = tokio::select! {
            r = read_line_bounded(&mut stdout, &mut line, MAX_LINE) => r,
            status = child.wait(), if exit_status.is_none() => {
                exit_status = Some(status);
                drain_until = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                continue;
            }
            _ = sleep_until_opt(drain_until) => break None,
        };
        match read {
            Ok(LineRead::Eof) => break None,
            Ok(LineRead::TooLong) => {
                break Some(
                    BridgeError::new(
                        ErrorKind::CliFailed,
                        format!("The Cursor CLI printed a line longer than {} MiB", MAX_LINE / (1024 * 1024)),
                    )
                    .hint("See Cursor Bridge logs for details."),
                )
            }
            Err(e) => {
                break Some(BridgeError::new(ErrorKind::CliFailed, format!("Reading the CLI's output failed: {e}")))
            }
            Ok(LineRead::Line) => {}
        }
        sink.alive();
        parser.push_line(&line, &mut events);
        line.clear();
        for event in events.drain(..) {
            if let (StreamEvent::Init { session_id, .. }, Some(expected)) = (&event, resuming) {
                if session_id != expected {
                    tracing::warn!(expected, started = %session_id, "the CLI started a new chat instead of resuming");
                    return Err(TurnFailure::chat_lost("The Cursor CLI no longer has this chat"));
                }
            }
            state.apply(event, sink).await;
        }
        if state.result.is_some() {
            // Anything after `result` is noise; don't wait long for a lingering CLI.
            break None;
        }
    };

    if parser.ignored_lines() > 0 {
        tracing::debug!(count = parser.ignored_lines(), "ignored non-event lines from the CLI");
    }
    if let Some(error) = stop {
        child.terminate(TERMINATE_GRACE).await;
        tokio::task::spawn_blocking(process::sweep_orphans);
        return Err(TurnFailure {
            error,
            spoke: state.spoke,
            chat_lost: false,
            tools_not_hosted: false,
            unstartable: false,
        });
    }
    let status = match exit_status {
        Some(Ok(status)) => Some(status),
        _ => match tokio::time::timeout(if state.result.is_some() { LINGER_AFTER_RESULT } else { idle }, child.wait())
            .await
        {
            Ok(Ok(status)) => Some(status),
            _ => child.terminate(TERMINATE_GRACE).await,
        },
    };
    // Tools that left the process group and outlived the CLI were re-parented to us: end them.
    tokio::task::spawn_blocking(process::sweep_orphans);
    if state.result.is_none() {
        let mut tail = Vec::new();
        parser.finish(&mut tail);
        state.result = tail.into_iter().find_map(|e| match e {
            StreamEvent::Result(r) => Some(r),
            _ => None,
        });
    }
    let stderr = match tokio::time::timeout(Duration::from_secs(2), stderr_task).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    let code = status.and_then(|s| s.code());
    let spoke = state.spoke;
    let exited_ok = code == Some(0) || code.is_none() && state.result.is_some();
    match state.result {
        Some(r) if r.success && exited_ok => Ok(TurnEnd { chat_id: state.chat_id, usage: r.usage, final_text: r.text }),
        Some(r) if !r.success => {
            let mut failure = classify(code, &stderr, state.stream_error.as_deref().or(Some(r.text.as_str())));
            if failure.kind == ErrorKind::CliFailed && failure.detail.is_none() && !r.text.is_empty() {
                failure.detail = Some(crate::util::text::cut_chars(&r.text, 2000).to_string());
            }
            Err(TurnFailure {
                error: failure.into(),
                spoke,
                chat_lost: false,
                tools_not_hosted: false,
                unstartable: false,
            })
        }
        _ => {
            let mut error: BridgeError = classify(code, &stderr, state.stream_error.as_deref()).into();
            if code == Some(0) && error.kind == ErrorKind::CliFailed {
                error.message = "The Cursor CLI stopped without finishing the turn".into();
            }
            Err(TurnFailure { error, spoke, chat_lost: false, tools_not_hosted: false, unstartable: false })
        }
    }
}

async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What the stream has told us so far.
#[derive(Default)]
struct Seen {
    chat_id: Option<String>,
    result: Option<TurnResult>,
    stream_error: Option<String>,
    /// The CLI emitted at least one event (so it knew the chat).
    spoke: bool,
    permission_told: bool,
}

impl Seen {
    async fn apply(&mut self, event: StreamEvent, sink: &mut EventSink) {
        self.spoke = true;
        match event {
            StreamEvent::Init { session_id, .. } => self.chat_id = Some(session_id),
            StreamEvent::Text(text) => {
                tracing::trace!(target: "cursor_bridge::content", text = %text);
                sink.emit(Event::Text(text)).await
            }
            StreamEvent::Thinking(text) => sink.emit(Event::Thinking(text)).await,
            StreamEvent::ThinkingDone => sink.emit(Event::ThinkingDone).await,
            StreamEvent::ToolStarted { call_id, tool, summary } => {
                sink.emit(Event::ToolStarted { call_id, tool, summary }).await
            }
            StreamEvent::ToolCompleted { call_id, tool, summary, outcome } => {
                let rejected = matches!(outcome, ToolOutcome::Rejected { .. });
                let (ok, detail) = match outcome {
                    ToolOutcome::Success => (true, None),
                    ToolOutcome::Failure { detail } => (false, detail),
                    ToolOutcome::Rejected { reason } => (false, reason.or(Some("rejected".into()))),
                    ToolOutcome::Error { message } => (false, message),
                };
                sink.emit(Event::ToolCompleted { call_id, tool, summary, ok, detail, rejected }).await
            }
            StreamEvent::PermissionRequested { query_type, summary } => {
                // stdin is closed in print mode, so the CLI rejects the request itself; tell the
                // person once per turn why the action did not happen and how to allow it.
                if !self.permission_told {
                    self.permission_told = true;
                    let tool = permission_tool(&query_type);
                    sink.emit(Event::PermissionDenied { tool, summary, hint: PERMISSION_HINT.into() }).await;
                }
            }
            StreamEvent::ErrorEnvelope { message } => self.stream_error = Some(message),
            StreamEvent::Result(r) => self.result = Some(r),
        }
    }
}

fn permission_tool(query_type: &str) -> String {
    let t = query_type.trim_end_matches("RequestQuery").trim_end_matches("Query");
    if t.is_empty() {
        "tool".into()
    } else {
        t.to_string()
    }
}
