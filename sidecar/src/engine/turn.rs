//! One chat turn, end to end: pick the session (resume, replay or new), build the prompt, wait for
//! a pool slot, run the CLI with the prompt on stdin, stream its events to the client as
//! `chat/delta`, watch for silence and overruns, classify failures, and record the session.
//!
//! Dropping the future (cancel) drops the child, which kills its process group.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use std::sync::Arc;

use crate::engine::state::{App, Ready};
use crate::backend::cursor_print::args::{turn_args, TurnArgs};
use crate::backend::cursor_print::commands::{spawn_error, spawn_spec};
use crate::backend::cursor_print::discovery::CliCommand;
use crate::backend::cursor_print::errors::classify;
use crate::backend::cursor_print::stream::{StreamEvent, StreamParser, ToolOutcome, TurnResult};
use crate::error::{BridgeError, Result};
use crate::backend::process::{self, SpawnSpec};
use crate::engine::prompt::Conversation;
use crate::protocol::{
    notification, ChatDelta, ChatSendParams, ChatSendResult, DeltaBody, ErrorKind, Mode, StopReason,
};
use crate::engine::sessions::{new_session_id, Lookup, Match, Session};

/// A stdout line longer than this fails the turn (file contents arrive inside tool results, so
/// lines of several MiB are normal; 16 MiB is not).
pub const MAX_LINE: usize = 16 * 1024 * 1024;
/// stderr kept for diagnosis (the tail, where the error is).
const STDERR_KEEP: usize = 64 * 1024;
/// After SIGTERM, how long the CLI gets before SIGKILL.
const TERMINATE_GRACE: Duration = Duration::from_millis(500);
/// After `result`, how long the CLI may linger before it is stopped (reference §5.8).
const LINGER_AFTER_RESULT: Duration = Duration::from_secs(3);
/// After the CLI exits, how long to keep reading output a descendant may still be writing.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Where a turn's output goes. The engine is shared by two front doors: the stdio server sends
/// `chat/delta` notifications through the app's outbox; the HTTP server (`http/`) takes the bodies
/// from a channel and writes them as OpenAI chunks.
pub enum DeltaTarget {
    /// `chat/delta` notifications on the app's outbox (the stdio protocol).
    Notify,
    /// The bodies, in order, on a bounded channel (a slow reader slows the turn down, as the
    /// outbox does). A closed channel drops them: its reader has gone, and so will the turn.
    Channel(mpsc::Sender<DeltaBody>),
}

/// Streams one turn's deltas to its target, numbering them.
pub struct DeltaSink<'a> {
    app: &'a App,
    turn_id: &'a str,
    target: DeltaTarget,
    seq: u64,
    text_sent: bool,
}

impl<'a> DeltaSink<'a> {
    pub fn new(app: &'a App, turn_id: &'a str, target: DeltaTarget) -> Self {
        DeltaSink { app, turn_id, target, seq: 0, text_sent: false }
    }

    pub async fn send(&mut self, body: DeltaBody) {
        self.seq += 1;
        if matches!(body, DeltaBody::Text { .. }) {
            self.text_sent = true;
        }
        match &self.target {
            DeltaTarget::Notify => {
                let delta = ChatDelta { turn_id: self.turn_id, seq: self.seq, body };
                self.app.outbox.notify(notification::CHAT_DELTA, &delta).await;
            }
            DeltaTarget::Channel(tx) => {
                let _ = tx.send(body).await;
            }
        }
    }
}

/// How the turn meets its CLI chat.
struct Plan {
    session: Option<Session>,
    resume: Option<String>,
    resumed: bool,
    replayed: bool,
    prompt: String,
    mode: Mode,
    model: String,
    /// A warm spare already started with this plan's exact command line.
    prestarted: Option<process::ChildProcess>,
}

/// The CLI command line of a turn. One function, so a spare started ahead matches the turn that
/// later wants it byte for byte.
pub fn turn_spec(ready: &Ready, cli: &CliCommand, model: &str, mode: Mode, workspace: &Path, resume: Option<&str>) -> SpawnSpec {
    let args = turn_args(&TurnArgs {
        model,
        mode,
        workspace,
        resume,
        force: ready.options.force && mode == Mode::Agent,
        partial: true,
    });
    let args: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    spawn_spec(cli, &args, &ready.child_env(), Some(workspace))
}

/// A `chat/send` turn whose deltas go to the stdio client as `chat/delta` notifications.
pub async fn chat_send(app: &App, params: ChatSendParams) -> Result<ChatSendResult> {
    chat_send_to(app, params, DeltaTarget::Notify).await
}

/// A turn whose deltas go to `target`. The channel (if any) closes when this returns.
pub async fn chat_send_to(app: &App, params: ChatSendParams, target: DeltaTarget) -> Result<ChatSendResult> {
    let ready = app.ready()?.clone();
    ready.in_flight.fetch_add(1, Ordering::SeqCst);
    let _in_flight = scopeguard(|| {
        ready.in_flight.fetch_sub(1, Ordering::SeqCst);
    });
    let started = Instant::now();
    if params.model.trim().is_empty() {
        return Err(BridgeError::invalid_params("`model` must not be empty"));
    }
    let workspace = ready.workspace_for(params.workspace.as_deref())?;
    let conversation = Conversation::parse(&params.messages)?;
    let cli = ready.cli().await?;
    let mut sink = DeltaSink::new(app, &params.turn_id, target);

    let mut plan = plan_turn(&ready, &cli, &params, &conversation, &workspace).await;
    tracing::info!(
        turn = %params.turn_id, model = %plan.model, mode = plan.mode.as_str(), utility = params.utility,
        resumed = plan.resumed, replayed = plan.replayed, prompt_bytes = plan.prompt.len(), "turn starts"
    );
    tracing::trace!(target: "cursor_bridge::content", turn = %params.turn_id, prompt = %plan.prompt);
    if let Some(session) = &plan.session {
        sink.send(DeltaBody::Session { session_id: session.id.clone(), resumed: plan.resumed, replayed: plan.replayed })
            .await;
    }

    let mut outcome = run_cli(&ready, &cli, &mut plan, &workspace, &mut sink).await;

    // A chat the CLI no longer has (garbage-collected, other machine) fails before it says
    // anything; start a new chat with the history replayed rather than lose the conversation.
    if plan.resumed && matches!(&outcome, Err(f) if !f.cli_spoke && f.error.kind == ErrorKind::CliFailed) {
        tracing::warn!(turn = %params.turn_id, "resume failed before any output; replaying into a new chat");
        let mut retry = Plan {
            resume: ready.chat_ids.take(&cli, ready.child_env(), &workspace).await,
            resumed: false,
            replayed: conversation.has_history(),
            prompt: conversation.new_chat_prompt(ready.options.replay_max_chars, ready.options.send_system_messages),
            prestarted: None,
            ..plan
        };
        outcome = run_cli(&ready, &cli, &mut retry, &workspace, &mut sink).await;
        return finish(&ready, &cli, &workspace, &params, retry, outcome, &conversation, started);
    }
    finish(&ready, &cli, &workspace, &params, plan, outcome, &conversation, started)
}

/// After a turn: start a spare for the conversation's likely follow-up and, with room for more,
/// one for a new conversation. In the background: the answer does not wait for it.
fn start_spares(ready: &Arc<Ready>, cli: &CliCommand, workspace: &Path, model: &str, mode: Mode, chat_id: &str) {
    if !ready.spares.enabled() {
        return;
    }
    ready.spares.start(&turn_spec(ready, cli, model, mode, workspace, Some(chat_id)), None);
    if ready.options.spares >= 2 {
        let (ready, cli, workspace, model) = (ready.clone(), cli.clone(), workspace.to_path_buf(), model.to_string());
        tokio::spawn(async move {
            if let Some(chat) = ready.chat_ids.take(&cli, ready.child_env(), &workspace).await {
                let spec = turn_spec(&ready, &cli, &model, mode, &workspace, Some(&chat));
                ready.spares.start(&spec, Some(chat));
            }
        });
    }
}

#[allow(clippy::too_many_arguments)]
fn finish(
    ready: &Arc<Ready>,
    cli: &CliCommand,
    workspace: &Path,
    params: &ChatSendParams,
    plan: Plan,
    outcome: std::result::Result<Completed, Failed>,
    conversation: &Conversation<'_>,
    started: Instant,
) -> Result<ChatSendResult> {
    let done = match outcome {
        Ok(done) => done,
        Err(failed) => {
            tracing::warn!(turn = %params.turn_id, kind = %failed.error.kind, error = %failed.error.message, "turn failed");
            return Err(failed.error);
        }
    };
    let session_id = plan.session.map(|mut session| {
        if let Some(chat) = done.chat_id.clone().or(plan.resume.clone()) {
            session.chat_id = chat;
        }
        let mut requests = conversation.history_hashes();
        requests.push(conversation.new_request_hash());
        session.requests = requests;
        session.turns += 1;
        session.model = plan.model.clone();
        session.mode = plan.mode;
        let id = session.id.clone();
        start_spares(ready, cli, workspace, &session.model, session.mode, &session.chat_id);
        ready.sessions.lock().unwrap_or_else(|p| p.into_inner()).record(session);
        id
    });
    let duration_ms = started.elapsed().as_millis() as u64;
    tracing::info!(turn = %params.turn_id, duration_ms, "turn done");
    Ok(ChatSendResult {
        turn_id: params.turn_id.clone(),
        session_id,
        resumed: plan.resumed,
        stop_reason: StopReason::End,
        usage: done.result.usage,
        duration_ms,
    })
}

async fn plan_turn(
    ready: &Ready,
    cli: &CliCommand,
    params: &ChatSendParams,
    conversation: &Conversation<'_>,
    workspace: &Path,
) -> Plan {
    if params.utility {
        // Titles and progress messages: one shot, ask mode, no session touched.
        return Plan {
            session: None,
            resume: None,
            resumed: false,
            replayed: false,
            prompt: conversation.utility_prompt(),
            mode: Mode::Ask,
            model: ready.options.utility_model.clone().unwrap_or_else(|| params.model.clone()),
            prestarted: None,
        };
    }
    let workspace_str = workspace.to_string_lossy().into_owned();
    let history = conversation.history_hashes();
    let found = ready.sessions.lock().unwrap_or_else(|p| p.into_inner()).find(&Lookup {
        conversation_id: params.conversation_id.as_deref(),
        session_id: params.session_id.as_deref(),
        mode: params.mode,
        workspace: &workspace_str,
        history: &history,
    });
    let new_chat_prompt =
        || conversation.new_chat_prompt(ready.options.replay_max_chars, ready.options.send_system_messages);
    match found {
        Match::Resume(mut session) => {
            if params.conversation_id.is_some() {
                session.conversation_id = params.conversation_id.clone();
            }
            Plan {
                resume: Some(session.chat_id.clone()),
                session: Some(session),
                resumed: true,
                replayed: false,
                prompt: conversation.resume_prompt(),
                mode: params.mode,
                model: params.model.clone(),
                prestarted: None,
            }
        }
        found => {
            let now = ready.sessions.lock().unwrap_or_else(|p| p.into_inner()).now_ms();
            let session = match found {
                Match::Diverged(s) => Session { requests: Vec::new(), ..s },
                _ => Session {
                    id: new_session_id(),
                    chat_id: String::new(),
                    conversation_id: params.conversation_id.clone(),
                    mode: params.mode,
                    model: params.model.clone(),
                    workspace: workspace_str,
                    requests: Vec::new(),
                    turns: 0,
                    created_ms: now,
                    last_used_ms: now,
                },
            };
            // A fresh spare brings its own chat id; otherwise take a prefetched one.
            let fresh = ready
                .spares
                .take_fresh(|chat| turn_spec(ready, cli, &params.model, params.mode, workspace, Some(chat)));
            let (resume, prestarted) = match fresh {
                Some(spare) => (Some(spare.chat_id), Some(spare.child)),
                None => (ready.chat_ids.take(cli, ready.child_env(), workspace).await, None),
            };
            Plan {
                resume,
                session: Some(session),
                resumed: false,
                replayed: conversation.has_history(),
                prompt: new_chat_prompt(),
                mode: params.mode,
                model: params.model.clone(),
                prestarted,
            }
        }
    }
}

struct Completed {
    result: TurnResult,
    chat_id: Option<String>,
}

struct Failed {
    error: BridgeError,
    /// The CLI emitted at least one event (so it knew the chat).
    cli_spoke: bool,
}

impl From<BridgeError> for Failed {
    fn from(error: BridgeError) -> Self {
        Failed { error, cli_spoke: false }
    }
}

async fn run_cli(
    ready: &Ready,
    cli: &CliCommand,
    plan: &mut Plan,
    workspace: &Path,
    sink: &mut DeltaSink<'_>,
) -> std::result::Result<Completed, Failed> {
    let options = &ready.options;
    let spec = turn_spec(ready, cli, &plan.model, plan.mode, workspace, plan.resume.as_deref());

    // Queue for a slot; FIFO (tokio's semaphore is fair).
    let _permit = ready.pool.acquire().await.map_err(|_| BridgeError::internal("process pool closed"))?;
    let spare = plan.prestarted.take().or_else(|| ready.spares.take(&spec));
    let warm = spare.is_some();
    let mut child = match spare {
        Some(child) => child,
        None => process::spawn(&spec).map_err(|e| spawn_error(cli, &e))?,
    };
    let pid = child.pid();
    tracing::debug!(pid, warm, "CLI started");

    let stdin = child.take_stdin();
    let prompt = plan.prompt.clone();
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
    let mut stdout = BufReader::with_capacity(64 * 1024, child.take_stdout().ok_or_else(|| BridgeError::internal("no stdout"))?);

    let mut parser = StreamParser::new(true);
    let mut events = Vec::new();
    let mut line = Vec::with_capacity(4096);
    let mut chat_id = None;
    let mut result: Option<TurnResult> = None;
    let mut stream_error: Option<String> = None;
    let mut cli_spoke = false;
    let mut permission_told = false;
    let idle = Duration::from_secs(options.idle_timeout_seconds);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(options.request_timeout_seconds);

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
            _ = tokio::time::sleep_until(drain_until.unwrap_or(deadline)), if drain_until.is_some() => break None,
            _ = tokio::time::sleep(idle) => break Some(BridgeError::new(
                ErrorKind::Timeout,
                format!("The Cursor CLI produced no output for {} s", idle.as_secs()),
            ).hint("The model or the network may be stuck. Try again, or raise `idleTimeoutSeconds` (cursorBridge.idleTimeoutSeconds).")),
            _ = tokio::time::sleep_until(deadline) => break Some(BridgeError::new(
                ErrorKind::Timeout,
                format!("The turn took longer than {} s", options.request_timeout_seconds),
            ).hint("Split the task, or raise `requestTimeoutSeconds` (cursorBridge.requestTimeoutSeconds).")),
        };
        match read {
            Ok(LineRead::Eof) => break None,
            Ok(LineRead::TooLong) => {
                break Some(BridgeError::new(
                    ErrorKind::CliFailed,
                    format!("The Cursor CLI printed a line longer than {} MiB", MAX_LINE / (1024 * 1024)),
                ).hint("See Cursor Bridge logs for details."))
            }
            Err(e) => break Some(BridgeError::new(ErrorKind::CliFailed, format!("Reading the CLI's output failed: {e}"))),
            Ok(LineRead::Line) => {}
        }
        parser.push_line(&line, &mut events);
        line.clear();
        for event in events.drain(..) {
            cli_spoke = true;
            match event {
                StreamEvent::Init { session_id, .. } => chat_id = Some(session_id),
                StreamEvent::Text(text) => {
                    tracing::trace!(target: "cursor_bridge::content", text = %text);
                    sink.send(DeltaBody::Text { text }).await
                }
                StreamEvent::Thinking(text) => sink.send(DeltaBody::Thinking { text }).await,
                StreamEvent::ThinkingDone => sink.send(DeltaBody::ThinkingDone).await,
                StreamEvent::ToolStarted { call_id, tool, summary } => {
                    sink.send(DeltaBody::ToolStarted { call_id, tool, summary }).await
                }
                StreamEvent::ToolCompleted { call_id, tool, summary, outcome } => {
                    let (ok, detail) = match outcome {
                        ToolOutcome::Success => (true, None),
                        ToolOutcome::Failure { detail } => (false, detail),
                        ToolOutcome::Rejected { reason } => (false, reason.or(Some("rejected".into()))),
                        ToolOutcome::Error { message } => (false, message),
                    };
                    sink.send(DeltaBody::ToolCompleted { call_id, tool, summary, ok, detail }).await
                }
                StreamEvent::PermissionRequested { query_type, summary } => {
                    // stdin is closed in print mode, so the CLI rejects the request itself; tell the
                    // person once per turn why the action did not happen and how to allow it.
                    if !permission_told {
                        permission_told = true;
                        sink.send(DeltaBody::PermissionDenied {
                            tool: permission_tool(&query_type),
                            summary,
                            hint: "Cursor asked for approval, which the bridge cannot give interactively. \
                                   To let agent mode run commands without asking, enable `cursorBridge.allowUnattended` (passes --force)."
                                .into(),
                        })
                        .await;
                    }
                }
                StreamEvent::ErrorEnvelope { message } => stream_error = Some(message),
                StreamEvent::Result(r) => result = Some(r),
            }
        }
        if result.is_some() {
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
        return Err(Failed { error, cli_spoke });
    }
    let status = match exit_status {
        Some(Ok(status)) => Some(status),
        _ => match tokio::time::timeout(
            if result.is_some() { LINGER_AFTER_RESULT } else { Duration::from_secs(options.idle_timeout_seconds) },
            child.wait(),
        )
        .await
        {
            Ok(Ok(status)) => Some(status),
            _ => child.terminate(TERMINATE_GRACE).await,
        },
    };
    // Tools that left the process group and outlived the CLI were re-parented to us: end them.
    tokio::task::spawn_blocking(process::sweep_orphans);
    if result.is_none() {
        let mut tail = Vec::new();
        parser.finish(&mut tail);
        for event in tail {
            if let StreamEvent::Result(r) = event {
                result = Some(r);
            }
        }
    }
    let stderr = match tokio::time::timeout(Duration::from_secs(2), stderr_task).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    let code = status.and_then(|s| s.code());
    let exited_ok = code == Some(0) || (status.is_none() && result.is_some()) || (result.is_some() && code.is_none());
    match result {
        Some(r) if r.success && exited_ok => {
            if !sink.text_sent && r.text.trim().is_empty() && !parser.saw_tools() {
                return Err(Failed {
                    error: BridgeError::new(ErrorKind::EmptyResponse, "The model returned an empty answer")
                        .hint("Try again, or pick another model."),
                    cli_spoke,
                });
            }
            if let Some(usage) = r.usage {
                sink.send(DeltaBody::Usage { usage }).await;
            }
            Ok(Completed { result: r, chat_id })
        }
        Some(r) if !r.success => {
            let mut failure = classify(code, &stderr, stream_error.as_deref().or(Some(r.text.as_str())));
            if failure.kind == ErrorKind::CliFailed && failure.detail.is_none() && !r.text.is_empty() {
                failure.detail = Some(r.text.chars().take(2000).collect());
            }
            Err(Failed { error: failure.into(), cli_spoke })
        }
        _ => {
            let failure = classify(code, &stderr, stream_error.as_deref());
            let mut error: BridgeError = failure.into();
            if code == Some(0) && error.kind == ErrorKind::CliFailed {
                error.message = "The Cursor CLI stopped without finishing the turn".into();
            }
            Err(Failed { error, cli_spoke })
        }
    }
}

fn permission_tool(query_type: &str) -> String {
    let t = query_type.trim_end_matches("RequestQuery").trim_end_matches("Query");
    if t.is_empty() { "tool".into() } else { t.to_string() }
}

pub enum LineRead {
    Line,
    Eof,
    TooLong,
}

/// Read one `\n`-terminated line into `buf` (without the newline), refusing to hold more than
/// `max` bytes. Cancel-safe in the sense that matters here: a cancelled read ends the turn.
pub async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if buf.is_empty() { LineRead::Eof } else { LineRead::Line });
        }
        match available.iter().position(|b| *b == b'\n') {
            Some(i) => {
                if buf.len() + i > max {
                    return Ok(LineRead::TooLong);
                }
                buf.extend_from_slice(&available[..i]);
                reader.consume(i + 1);
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                return Ok(LineRead::Line);
            }
            None => {
                let n = available.len();
                if buf.len() + n > max {
                    return Ok(LineRead::TooLong);
                }
                buf.extend_from_slice(available);
                reader.consume(n);
            }
        }
    }
}

/// Read a pipe to its end, keeping only the last `keep` bytes.
async fn keep_tail<R: AsyncRead + Unpin>(reader: Option<R>, keep: usize) -> String {
    let Some(mut reader) = reader else { return String::new() };
    let mut tail: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 8192];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > keep * 2 {
                    tail.drain(..tail.len() - keep);
                }
            }
        }
    }
    if tail.len() > keep {
        tail.drain(..tail.len() - keep);
    }
    String::from_utf8_lossy(&tail).into_owned()
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct ScopeGuard<F: FnMut()>(F);

impl<F: FnMut()> Drop for ScopeGuard<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

fn scopeguard<F: FnMut()>(f: F) -> ScopeGuard<F> {
    ScopeGuard(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut r = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match read_line_bounded(&mut r, &mut buf, max).await.unwrap() {
                LineRead::Eof => break,
                LineRead::TooLong => {
                    out.push("<too long>".into());
                    break;
                }
                LineRead::Line => out.push(String::from_utf8_lossy(&buf).into_owned()),
            }
        }
        out
    }

    #[tokio::test]
    async fn bounded_lines() {
        assert_eq!(lines(b"a\r\nbb\n\nlast", 10).await, ["a", "bb", "", "last"]);
        assert_eq!(lines(b"short\nwaaaaay too long\nnext\n", 8).await, ["short", "<too long>"]);
    }

    #[tokio::test]
    async fn stderr_keeps_the_tail() {
        let data = format!("{}END", "x".repeat(100_000));
        let kept = keep_tail(Some(data.as_bytes()), 10).await;
        assert_eq!(kept, "xxxxxxxEND");
    }
}
