//! Parser for the stdout of `cursor-agent -p --output-format stream-json [--stream-partial-output]`.
//!
//! The wire format is NDJSON, one event per line (reference `cursor-cli.md` §4.3, schema §5). This
//! module turns those lines into [`StreamEvent`]s an editor can show as they arrive, plus one
//! [`TurnResult`] for the terminal `result` event. It is pure: no I/O, no logging; the caller feeds
//! lines and reads the counters ([`StreamParser::ignored_lines`] …) to log at debug level.
//!
//! Decisions where the reference is unsure (each has a test):
//! * Partial mode (§5.6): an `assistant` event is a delta iff it has `timestamp_ms` and no
//!   `model_call_id`. Flushes are reconciled against what was streamed instead of being dropped
//!   blindly: a flush only ever contributes text that was *not* streamed yet (a segment that had no
//!   deltas, or the missing tail of one), so text is never emitted twice; a flush that contradicts
//!   the deltas is dropped. The end-of-turn flush may be the last segment or the whole response
//!   (§15.5); both are recognised (rules in `StreamParser::reconcile_flush`).
//! * Non-partial mode: every `assistant` event is a whole segment. If a delta-shaped event shows up
//!   anyway (the CLI streamed partials although the caller did not ask), the parser switches to
//!   partial handling for the rest of the turn; in true cumulative output that shape never occurs
//!   (§5.5: pre-tool segments carry both fields, the last one neither).
//! * `result.result` is authoritative (§5.6): on a successful `result`, text it holds beyond what
//!   was streamed (compared without the inserted paragraph breaks) is emitted as a last `Text`.
//!   With nothing streamed at all that is the whole answer (e.g. `--output-format json` output).
//! * Lone UTF-16 surrogate escapes (§12, §15.13, never observed) are repaired, see
//!   [`repair_lone_surrogates`].
//!
//! The `result` event comes out of [`StreamParser::push_line`] as [`StreamEvent::Result`], after
//! any fallback text, so the caller can stop reading at once (the child may linger, §5.8).
//! [`StreamParser::finish`] returns the same value after EOF for callers that prefer that.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::protocol::Usage;

/// A tool summary is at most this many characters (one line in the editor's tool list).
const SUMMARY_MAX_CHARS: usize = 200;
/// Failure/rejection/error details of a tool are at most this many characters.
const DETAIL_MAX_CHARS: usize = 300;

/// Something the editor can show, in stream order.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// `system/init` (§5.2). `model` is a display name ("Claude 4 Sonnet"), not the requested id.
    Init {
        session_id: String,
        model: Option<String>,
    },
    /// New answer text only, never cumulative. May start with an inserted paragraph break
    /// (`"\n\n"` or `"\n"`) when it follows tool calls, see [`StreamParser`].
    Text(String),
    /// New reasoning text only (§5.4).
    Thinking(String),
    /// The open thinking block is complete: a `thinking/completed` event, or implied because text,
    /// a tool call, the result or EOF came while thinking text was open.
    ThinkingDone,
    /// `tool_call/started` (§5.7). `tool` is a short human name ("shell", "read", …), `summary` one
    /// line (command, path, pattern, url …; may be empty).
    ToolStarted {
        call_id: String,
        tool: String,
        summary: String,
    },
    /// `tool_call/completed`; may arrive without a `ToolStarted` (denials, §5.7).
    ToolCompleted {
        call_id: String,
        tool: String,
        summary: String,
        outcome: ToolOutcome,
    },
    /// `interaction_query/request` (§5.9): the CLI asks permission (non-`--force` runs). With stdin
    /// closed it is auto-rejected and the tool completes as [`ToolOutcome::Rejected`].
    PermissionRequested { query_type: String, summary: String },
    /// `{"type":"error","message":..}` on the stream (§5.9); the caller classifies it with
    /// `errors::classify`.
    ErrorEnvelope { message: String },
    /// The terminal `result` event (§5.8), once per turn and always the last event of a turn that
    /// has one; its fallback text (if any) was emitted as `Text` just before.
    Result(TurnResult),
}

/// How a tool call ended (`result` one-key union of §5.7).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// `success`, or a completed event with no recognisable outcome at all.
    Success,
    /// `failure`, e.g. a shell command's non-zero exit (`detail`: "exit code 1").
    Failure { detail: Option<String> },
    /// `rejected` (permission denied, auto-rejected query).
    Rejected { reason: Option<String> },
    /// `error` (the tool itself could not run, e.g. unreadable file).
    Error { message: Option<String> },
}

impl ToolOutcome {
    pub fn is_success(&self) -> bool {
        matches!(self, ToolOutcome::Success)
    }

    /// The detail/reason/message, whichever this outcome carries.
    pub fn detail(&self) -> Option<&str> {
        match self {
            ToolOutcome::Success => None,
            ToolOutcome::Failure { detail } => detail.as_deref(),
            ToolOutcome::Rejected { reason } => reason.as_deref(),
            ToolOutcome::Error { message } => message.as_deref(),
        }
    }
}

/// The terminal `result` event (§5.8).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    /// `subtype == "success" && !is_error`. The caller must still check the exit status (§6).
    pub success: bool,
    /// `result.result`: all segments glued with no separator (§4.2).
    pub text: String,
    pub session_id: Option<String>,
    pub request_id: Option<String>,
    pub duration_ms: Option<u64>,
    /// `usage` (camelCase on the wire; missing counters are 0); `None` when absent (pre-2026.07).
    pub usage: Option<Usage>,
}

/// What a partial-mode flush adds to the streamed text (see `reconcile_flush`).
#[derive(Debug, PartialEq)]
enum FlushVerdict<'t> {
    Duplicate,
    Unseen(&'t str),
    NewSegment,
    Conflict,
}

/// Which output a held-back high surrogate belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    Text,
    Thinking,
}

/// Incremental parser for one turn. Feed every stdout line to [`push_line`](Self::push_line),
/// then call [`finish`](Self::finish) once after EOF.
///
/// Paragraph breaks: the CLI glues segments without a separator (§11.2), which runs sentences
/// together around tool calls. Before the first text of a segment that follows one or more tool
/// calls — and only if text was streamed before — the parser inserts newlines so that exactly one
/// blank line separates the two: `"\n\n"`, or `"\n"`/nothing when the previous text already ends
/// with, or the new text starts with, newlines (only `\n` is counted; `\r` is not special).
#[derive(Debug)]
pub struct StreamParser {
    /// The caller's flag, or switched on when a delta-shaped event showed up (module docs).
    partial: bool,
    /// All `Text` emitted so far, inserted breaks included: exactly what the user saw.
    streamed: String,
    /// `(offset, len)` in `streamed` of each inserted paragraph break, so the raw CLI text
    /// (= `result.result`) can be compared without keeping a second copy.
    breaks: Vec<(usize, usize)>,
    /// Offset in `streamed` where the current segment's text starts; `None` until the segment has
    /// text. A segment ends at a tool call; in partial mode a flush closes it for deltas too.
    segment_start: Option<usize>,
    /// The current segment has been flushed (partial mode): later deltas start a new segment.
    segment_flushed: bool,
    /// A tool call happened since the last text: the next text gets a paragraph break.
    tool_since_text: bool,
    /// Thinking text was emitted and no `ThinkingDone` yet.
    thinking_open: bool,
    /// A lone high surrogate that ended the previous delta, waiting for its low half.
    pending_high: Option<(Channel, u16)>,
    /// Started tool calls by `call_id`: `(tool, summary)`, for a `completed` lacking its args.
    open_tools: HashMap<String, (String, String)>,
    saw_tools: bool,
    synthetic_ids: u64,
    result: Option<TurnResult>,
    ignored: u64,
    malformed: u64,
    repaired: u64,
}

impl StreamParser {
    /// `partial`: the CLI was run with `--stream-partial-output`.
    pub fn new(partial: bool) -> Self {
        StreamParser {
            partial,
            streamed: String::new(),
            breaks: Vec::new(),
            segment_start: None,
            segment_flushed: false,
            tool_since_text: false,
            thinking_open: false,
            pending_high: None,
            open_tools: HashMap::new(),
            saw_tools: false,
            synthetic_ids: 0,
            result: None,
            ignored: 0,
            malformed: 0,
            repaired: 0,
        }
    }

    /// Feed one stdout line (without the trailing `\n`; a trailing `\r` and surrounding whitespace
    /// are ignored). Never panics: lines that are not UTF-8, not JSON or not an object are counted
    /// in [`malformed_lines`](Self::malformed_lines); events this parser does not use are counted
    /// in [`ignored_lines`](Self::ignored_lines).
    pub fn push_line(&mut self, line: &[u8], out: &mut Vec<StreamEvent>) {
        let Ok(line) = std::str::from_utf8(line) else {
            self.malformed += 1;
            return;
        };
        let line = line.trim().trim_start_matches('\u{feff}');
        if line.is_empty() {
            return;
        }
        match serde_json::from_str::<Obj<EventWire>>(line) {
            Ok(Obj(Some(event))) => self.dispatch(event, Edges::default(), out),
            Ok(Obj(None)) => self.malformed += 1,
            Err(_) => self.push_repaired(line, out),
        }
    }

    /// Text streamed so far (all `Text` events joined, paragraph breaks included).
    pub fn streamed_text(&self) -> &str {
        &self.streamed
    }

    /// A `tool_call` event (started or completed) was seen: a turn with an empty answer still did
    /// something.
    pub fn saw_tools(&self) -> bool {
        self.saw_tools
    }

    /// Partial-output handling is in effect (asked for, or detected).
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// Well-formed lines this parser does not use: unknown `type`/`subtype` (`connection`,
    /// `retry`, `system` other than init, `user`, query responses, a second `result`, …).
    pub fn ignored_lines(&self) -> u64 {
        self.ignored
    }

    /// Lines that are not UTF-8, not JSON, or not a JSON object.
    pub fn malformed_lines(&self) -> u64 {
        self.malformed
    }

    /// Lines that needed the lone-surrogate repair.
    pub fn repaired_lines(&self) -> u64 {
        self.repaired
    }

    /// After EOF: closes an open thinking block, resolves a held-back surrogate, and returns the
    /// result already emitted as [`StreamEvent::Result`] (`None` = the stream stopped without one,
    /// i.e. the turn failed, §6).
    pub fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Option<TurnResult> {
        self.flush_pending_surrogate(out);
        self.close_thinking(out);
        self.result.clone()
    }

    // -----------------------------------------------------------------------------------------

    /// serde_json rejected the line; the only failure we can repair is a lone surrogate escape.
    fn push_repaired(&mut self, line: &str, out: &mut Vec<StreamEvent>) {
        let Some(repaired) = repair_lone_surrogates(line, true) else {
            self.malformed += 1;
            return;
        };
        let Ok(Obj(Some(event))) = serde_json::from_str::<Obj<EventWire>>(&repaired.line) else {
            self.malformed += 1;
            return;
        };
        self.repaired += 1;
        if repaired.edges.is_empty() || event.carries_stream_text() {
            self.dispatch(event, repaired.edges, out);
            return;
        }
        // Edge surrogates only pair up across text deltas; anywhere else they are just lone.
        let Some(plain) = repair_lone_surrogates(line, false) else {
            self.malformed += 1;
            return;
        };
        match serde_json::from_str::<Obj<EventWire>>(&plain.line) {
            Ok(Obj(Some(event))) => self.dispatch(event, Edges::default(), out),
            _ => self.malformed += 1,
        }
    }

    fn dispatch(&mut self, event: EventWire<'_>, edges: Edges, out: &mut Vec<StreamEvent>) {
        let kind = event.kind.as_deref().unwrap_or("");
        let subtype = event.subtype.as_deref().unwrap_or("");
        if !event.carries_stream_text() {
            self.flush_pending_surrogate(out);
        }
        match (kind, subtype) {
            ("system", "init") => self.on_init(event, out),
            ("assistant", _) => self.on_assistant(event, edges, out),
            ("thinking", "delta") => {
                if let Some(text) = event.text {
                    self.emit(Channel::Thinking, &text, edges, out);
                }
            }
            ("thinking", "completed") => self.close_thinking(out),
            ("tool_call", "started") => self.on_tool_started(event, out),
            ("tool_call", "completed") => self.on_tool_completed(event, out),
            ("interaction_query", "request") => self.on_permission_query(event, out),
            ("result", _) => self.on_result(event, out),
            ("error", _) => {
                let message = event.message.and_then(|m| m.text).or(event.error);
                out.push(StreamEvent::ErrorEnvelope {
                    message: message.map(Cow::into_owned).unwrap_or_default(),
                });
            }
            _ => self.ignored += 1,
        }
    }

    fn on_init(&mut self, event: EventWire<'_>, out: &mut Vec<StreamEvent>) {
        match event.session_id {
            Some(session_id) => out.push(StreamEvent::Init {
                session_id: session_id.into_owned(),
                model: event.model.map(Cow::into_owned),
            }),
            None => self.ignored += 1,
        }
    }

    /// §5.5 (cumulative) and §5.6 (partial).
    fn on_assistant(&mut self, event: EventWire<'_>, edges: Edges, out: &mut Vec<StreamEvent>) {
        let text = event.message.and_then(|m| m.text).unwrap_or_default();
        let is_delta = event.has_timestamp && !event.has_model_call_id;
        if !self.partial && is_delta {
            self.partial = true;
        }
        if !self.partial {
            // Cumulative mode: each event is one whole segment.
            self.emit(Channel::Text, &text, edges, out);
            self.segment_start = None;
            return;
        }
        if is_delta {
            if self.segment_flushed {
                // Deltas after a flush belong to a new segment.
                self.segment_start = None;
                self.segment_flushed = false;
            }
            self.emit(Channel::Text, &text, edges, out);
            return;
        }
        // A flush: segment flush (has model_call_id) or end-of-turn flush (neither field).
        let end_of_turn = !event.has_model_call_id;
        match self.reconcile_flush(&text, end_of_turn) {
            FlushVerdict::Duplicate => {}
            FlushVerdict::Unseen(unseen) => self.emit(Channel::Text, unseen, Edges::default(), out),
            FlushVerdict::NewSegment => {
                self.segment_start = None;
                self.emit(Channel::Text, &text, Edges::default(), out);
            }
            FlushVerdict::Conflict => return,
        }
        self.segment_flushed = true;
    }

    /// Compares a flush with what was streamed. In order:
    /// 1. an end-of-turn flush that starts with everything streamed this turn (raw, without
    ///    inserted breaks) is the whole response: its remainder is unseen;
    /// 2. a flush that starts with the current segment's text repeats it: its remainder is unseen
    ///    (for a segment that had no deltas, that is the whole flush);
    /// 3. a flush that differs from a segment that was already flushed is the next segment, come
    ///    without deltas and without a tool call in between (cumulative output): all unseen;
    /// 4. otherwise it contradicts the deltas, and deltas win (§5.6 safe rule): nothing.
    fn reconcile_flush<'t>(&self, flush: &'t str, end_of_turn: bool) -> FlushVerdict<'t> {
        let rest = if end_of_turn {
            self.strip_streamed_prefix(flush)
        } else {
            None
        };
        match rest.or_else(|| flush.strip_prefix(self.segment_text())) {
            Some("") => FlushVerdict::Duplicate,
            Some(unseen) => FlushVerdict::Unseen(unseen),
            None if self.segment_flushed => FlushVerdict::NewSegment,
            None => FlushVerdict::Conflict,
        }
    }

    fn segment_text(&self) -> &str {
        self.segment_start
            .and_then(|start| self.streamed.get(start..))
            .unwrap_or("")
    }

    /// `text` minus a prefix equal to the raw streamed text (inserted breaks skipped).
    fn strip_streamed_prefix<'t>(&self, mut text: &'t str) -> Option<&'t str> {
        let mut from = 0;
        for &(at, len) in &self.breaks {
            text = text.strip_prefix(self.streamed.get(from..at)?)?;
            from = at + len;
        }
        text.strip_prefix(self.streamed.get(from..)?)
    }

    fn on_tool_started(&mut self, event: EventWire<'_>, out: &mut Vec<StreamEvent>) {
        self.close_thinking(out);
        self.tool_boundary();
        let call = event.tool_call.unwrap_or_default();
        let call_id = self.call_id(event.call_id, &call);
        let (tool, summary) =
            describe_tool(&call).unwrap_or_else(|| ("unknown".into(), String::new()));
        self.open_tools
            .insert(call_id.clone(), (tool.clone(), summary.clone()));
        out.push(StreamEvent::ToolStarted {
            call_id,
            tool,
            summary,
        });
    }

    fn on_tool_completed(&mut self, event: EventWire<'_>, out: &mut Vec<StreamEvent>) {
        self.close_thinking(out);
        self.tool_boundary();
        let call = event.tool_call.unwrap_or_default();
        let call_id = self.call_id(event.call_id, &call);
        let described = describe_tool(&call);
        let started = self.open_tools.remove(&call_id);
        let (tool, summary) = match (described, started) {
            (Some((tool, summary)), Some((_, started_summary))) if summary.is_empty() => {
                (tool, started_summary)
            }
            (Some(described), _) => described,
            (None, Some(started)) => started,
            (None, None) => ("unknown".into(), String::new()),
        };
        // A top-level `"result":"rejected"` string is one of the liberal forms of §5.7.
        let outcome = call
            .body
            .outcome()
            .or_else(|| event.result.as_deref().and_then(outcome_from_word))
            .unwrap_or(ToolOutcome::Success);
        out.push(StreamEvent::ToolCompleted {
            call_id,
            tool,
            summary,
            outcome,
        });
    }

    fn on_permission_query(&mut self, event: EventWire<'_>, out: &mut Vec<StreamEvent>) {
        let query = event.query.unwrap_or_default();
        let query_type = event
            .query_type
            .or(query.kind)
            .unwrap_or(Cow::Borrowed("unknown"));
        // `shellRequestQuery` → shell, `webFetchRequestQuery` → webFetch (§5.9).
        let short = query_type
            .strip_suffix("RequestQuery")
            .or_else(|| query_type.strip_suffix("Query"))
            .unwrap_or(&query_type);
        let summary = summarize(&tool_display_name(short), &query.args);
        out.push(StreamEvent::PermissionRequested {
            query_type: query_type.into_owned(),
            summary,
        });
    }

    fn on_result(&mut self, event: EventWire<'_>, out: &mut Vec<StreamEvent>) {
        if self.result.is_some() {
            self.ignored += 1; // "exactly one result" (§5.8); keep the first
            return;
        }
        self.close_thinking(out);
        let result = TurnResult {
            success: event.subtype.as_deref() == Some("success") && event.is_error != Some(true),
            text: event.result.map(Cow::into_owned).unwrap_or_default(),
            session_id: event.session_id.map(Cow::into_owned),
            request_id: event.request_id.map(Cow::into_owned),
            duration_ms: event.duration_ms,
            usage: event.usage.map(Usage::from),
        };
        if result.success {
            if let Some(unseen) = self.strip_streamed_prefix(&result.text) {
                self.emit(Channel::Text, unseen, Edges::default(), out);
            }
        }
        out.push(StreamEvent::Result(result.clone()));
        self.result = Some(result);
    }

    fn call_id(&mut self, top_level: Option<Cow<'_, str>>, call: &ToolCallWire<'_>) -> String {
        if let Some(id) = top_level
            .or_else(|| call.tool_call_id.clone())
            .or_else(|| call.body.args.tool_call_id.clone())
        {
            return id.into_owned();
        }
        self.synthetic_ids += 1;
        format!("tool-{}", self.synthetic_ids)
    }

    fn tool_boundary(&mut self) {
        self.saw_tools = true;
        self.tool_since_text = true;
        self.segment_start = None;
        self.segment_flushed = false;
    }

    fn close_thinking(&mut self, out: &mut Vec<StreamEvent>) {
        if self.thinking_open {
            self.thinking_open = false;
            out.push(StreamEvent::ThinkingDone);
        }
    }

    fn flush_pending_surrogate(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some((channel, _)) = self.pending_high.take() {
            self.emit_piece(channel, String::from(char::REPLACEMENT_CHARACTER), out);
        }
    }

    /// Emits new text of one channel, pairing surrogate halves split across deltas.
    fn emit(&mut self, channel: Channel, text: &str, edges: Edges, out: &mut Vec<StreamEvent>) {
        let mut piece = String::with_capacity(text.len() + 4);
        let mut leading_low = edges.leading_low;
        if let Some((pending_channel, high)) = self.pending_high.take() {
            if pending_channel != channel {
                self.emit_piece(
                    pending_channel,
                    String::from(char::REPLACEMENT_CHARACTER),
                    out,
                );
            } else if let Some(low) = leading_low.take() {
                piece.push(combine_surrogates(high, low));
            } else {
                piece.push(char::REPLACEMENT_CHARACTER);
            }
        }
        if leading_low.is_some() {
            piece.push(char::REPLACEMENT_CHARACTER);
        }
        piece.push_str(text);
        if let Some(high) = edges.trailing_high {
            self.pending_high = Some((channel, high));
        }
        self.emit_piece(channel, piece, out);
    }

    fn emit_piece(&mut self, channel: Channel, mut piece: String, out: &mut Vec<StreamEvent>) {
        if piece.is_empty() {
            return;
        }
        if channel == Channel::Thinking {
            self.thinking_open = true;
            out.push(StreamEvent::Thinking(piece));
            return;
        }
        self.close_thinking(out);
        let mut break_len = 0;
        if self.tool_since_text && !self.streamed.is_empty() {
            let separator = paragraph_break(&self.streamed, &piece);
            if !separator.is_empty() {
                break_len = separator.len();
                self.breaks.push((self.streamed.len(), break_len));
                piece.insert_str(0, separator);
            }
        }
        self.tool_since_text = false;
        if self.segment_start.is_none() {
            self.segment_start = Some(self.streamed.len() + break_len);
        }
        self.streamed.push_str(&piece);
        out.push(StreamEvent::Text(piece));
    }
}

/// Newlines to insert between `before` and `after` so that one blank line separates them.
fn paragraph_break(before: &str, after: &str) -> &'static str {
    let trailing = before
        .bytes()
        .rev()
        .take_while(|&b| b == b'\n')
        .count()
        .min(2);
    let leading = after.bytes().take_while(|&b| b == b'\n').count().min(2);
    match trailing + leading {
        0 => "\n\n",
        1 => "\n",
        _ => "",
    }
}

/// The character of a UTF-16 surrogate pair; U+FFFD if the halves are not a high and a low.
fn combine_surrogates(high: u16, low: u16) -> char {
    let high_bits = u32::from(high).checked_sub(0xD800).filter(|&h| h < 0x400);
    let low_bits = u32::from(low).checked_sub(0xDC00).filter(|&l| l < 0x400);
    match (high_bits, low_bits) {
        (Some(h), Some(l)) => char::from_u32(0x10000 + (h << 10) + l),
        _ => None,
    }
    .unwrap_or(char::REPLACEMENT_CHARACTER)
}

impl From<UsageWire> for Usage {
    fn from(wire: UsageWire) -> Self {
        Usage {
            input_tokens: wire.input_tokens,
            output_tokens: wire.output_tokens,
            cache_read_tokens: wire.cache_read_tokens,
            cache_write_tokens: wire.cache_write_tokens,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tool names and summaries (§5.7)

/// `(tool, summary)` of a `tool_call` object; `None` when it names no tool at all.
fn describe_tool(call: &ToolCallWire<'_>) -> Option<(String, String)> {
    if let Some(key) = &call.kind {
        let tool = tool_display_name(key.strip_suffix("ToolCall").unwrap_or(key));
        let summary = summarize(&tool, &call.body.args);
        return Some((tool, summary));
    }
    // Legacy `{"function":{"name","arguments"}}`: keep the name as given.
    let legacy = call.legacy.as_ref()?;
    let tool = legacy
        .name
        .as_deref()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or("function");
    Some((
        one_line(tool, SUMMARY_MAX_CHARS),
        summarize("", &legacy.arguments),
    ))
}

/// `shell` for `shellToolCall` etc.; unknown kinds keep their key minus `ToolCall`.
fn tool_display_name(short: &str) -> String {
    let name = match short {
        "updateTodos" => "todos",
        "semSearch" => "search",
        "" => "unknown",
        other => other,
    };
    name.to_owned()
}

/// One line a person understands. Known tools show their main argument; anything else shows the
/// first of command/path/pattern/url/search term/query it has (so new tool kinds still say
/// something), or nothing.
fn summarize(tool: &str, args: &ToolArgsWire<'_>) -> String {
    let specific: Option<Cow<'_, str>> = match tool {
        "shell" => args.command.clone(),
        "read" | "edit" | "write" | "delete" | "ls" => args.path.clone(),
        "grep" => args
            .pattern
            .as_ref()
            .map(|pattern| match args.path.as_deref() {
                Some(path) if !path.is_empty() => Cow::Owned(format!("{pattern} in {path}")),
                _ => pattern.clone(),
            }),
        "glob" => args.glob_pattern.clone().or_else(|| args.pattern.clone()),
        "webFetch" => args.url.clone(),
        "webSearch" => args.search_term.clone().or_else(|| args.query.clone()),
        "search" => args.query.clone(),
        "mcp" => {
            let tool_name = args.tool_name.as_ref().or(args.name.as_ref());
            match (args.provider_identifier.as_deref(), tool_name) {
                (Some(provider), Some(name)) if !provider.is_empty() => {
                    Some(Cow::Owned(format!("{provider}/{name}")))
                }
                (_, Some(name)) => Some(name.clone()),
                (Some(provider), None) => Some(Cow::Borrowed(provider)),
                (None, None) => None,
            }
        }
        _ => None,
    };
    let chosen = specific.filter(|s| !s.trim().is_empty()).or_else(|| {
        [
            &args.command,
            &args.path,
            &args.pattern,
            &args.glob_pattern,
            &args.url,
            &args.search_term,
            &args.query,
        ]
        .into_iter()
        .flatten()
        .find(|s| !s.trim().is_empty())
        .cloned()
    });
    chosen
        .map(|s| one_line(&s, SUMMARY_MAX_CHARS))
        .unwrap_or_default()
}

/// Control characters (newlines, tabs …) become spaces; trimmed; at most `max_chars` characters,
/// the last being `…` when cut.
fn one_line(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    let mut line = String::with_capacity(text.len().min(max_chars * 4));
    for (count, c) in text.chars().enumerate() {
        if count + 1 == max_chars && text.chars().nth(max_chars).is_some() {
            line.push('…');
            break;
        }
        line.push(if c.is_control() { ' ' } else { c });
    }
    line
}

/// `"rejected"`, `"success"` … as a whole outcome (liberal forms, §5.7). Unknown words → `None`.
fn outcome_from_word(word: &str) -> Option<ToolOutcome> {
    match word.trim().to_ascii_lowercase().as_str() {
        "success" | "succeeded" | "ok" | "completed" => Some(ToolOutcome::Success),
        "failure" | "failed" => Some(ToolOutcome::Failure { detail: None }),
        "error" => Some(ToolOutcome::Error { message: None }),
        "rejected" | "denied" => Some(ToolOutcome::Rejected { reason: None }),
        _ => None,
    }
}

/// One entry of the outcome union: `key` is `success|failure|error|rejected`, `body` its value
/// (`None` for `null`). `"success": false` counts as a failure; `"error": false` etc. as nothing.
fn outcome_from_entry(key: &str, body: Option<OutcomeBody<'_>>) -> Option<ToolOutcome> {
    let body = body?;
    let detail = |s: &Option<Cow<'_, str>>| {
        s.as_deref()
            .map(|s| one_line(s, DETAIL_MAX_CHARS))
            .filter(|s| !s.is_empty())
    };
    match key {
        "success" if body.is_false => Some(ToolOutcome::Failure { detail: None }),
        "success" => Some(ToolOutcome::Success),
        _ if body.is_false => None,
        "failure" => {
            let mut parts = Vec::new();
            if let Some(code) = body.exit_code {
                parts.push(format!("exit code {code}"));
            }
            if let Some(signal) = body.signal.as_deref().filter(|s| !s.is_empty()) {
                parts.push(format!("signal {signal}"));
            }
            if body.aborted {
                parts.push("aborted".to_owned());
            }
            if parts.is_empty() {
                parts.extend(detail(&body.message).or_else(|| detail(&body.error)));
            }
            let joined = parts.join(", ");
            Some(ToolOutcome::Failure {
                detail: (!joined.is_empty()).then(|| one_line(&joined, DETAIL_MAX_CHARS)),
            })
        }
        "error" => Some(ToolOutcome::Error {
            message: detail(&body.message).or_else(|| detail(&body.error)),
        }),
        "rejected" => Some(ToolOutcome::Rejected {
            reason: detail(&body.reason).or_else(|| detail(&body.message)),
        }),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Lone surrogate repair (§12, §15.13)

/// Surrogate halves cut off at the edges of a string value, to be paired across deltas.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Edges {
    /// A lone low surrogate opened a string value (removed from the line).
    leading_low: Option<u16>,
    /// A lone high surrogate closed a string value (removed from the line).
    trailing_high: Option<u16>,
}

impl Edges {
    fn is_empty(&self) -> bool {
        self.leading_low.is_none() && self.trailing_high.is_none()
    }
}

#[derive(Debug)]
struct Repaired {
    line: String,
    edges: Edges,
}

/// Node's `JSON.stringify` writes an unpaired UTF-16 surrogate as an escape (`\ud83d`), which
/// serde_json rejects. If a partial delta ever split a surrogate pair (§15.13: not observed), the
/// high half would end one delta and the low half start the next. This rewrites such a line:
/// * with `keep_edges`, a lone high escape right before a string's closing quote and a lone low
///   escape right after its opening quote are removed and reported in [`Edges`] (only when there
///   is at most one of each; more is ambiguous and treated as below);
/// * every other lone surrogate escape becomes `\ufffd`.
///
/// Returns `None` when the line has no lone surrogate escape (so it is broken some other way).
fn repair_lone_surrogates(line: &str, keep_edges: bool) -> Option<Repaired> {
    struct Lone {
        start: usize,
        unit: u16,
        edge: Option<bool>, // Some(true) = leading low, Some(false) = trailing high
    }
    let bytes = line.as_bytes();
    let mut lones: Vec<Lone> = Vec::new();
    let mut in_string = false;
    let mut string_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !in_string {
            if b == b'"' {
                in_string = true;
                string_start = i + 1;
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = false;
                i += 1;
            }
            b'\\' => {
                let Some(unit) = hex_escape(bytes, i) else {
                    i += 2; // `\n`, `\"`, … (or a malformed escape: serde_json reports it)
                    continue;
                };
                match unit {
                    0xD800..=0xDBFF => {
                        if matches!(hex_escape(bytes, i + 6), Some(0xDC00..=0xDFFF)) {
                            i += 12; // a proper pair
                            continue;
                        }
                        let at_end = bytes.get(i + 6) == Some(&b'"');
                        lones.push(Lone {
                            start: i,
                            unit,
                            edge: at_end.then_some(false),
                        });
                    }
                    0xDC00..=0xDFFF => {
                        let at_start = i == string_start;
                        lones.push(Lone {
                            start: i,
                            unit,
                            edge: at_start.then_some(true),
                        });
                    }
                    _ => {}
                }
                i += 6;
            }
            _ => i += 1,
        }
    }
    if lones.is_empty() {
        return None;
    }
    let leading = lones.iter().filter(|l| l.edge == Some(true)).count();
    let trailing = lones.iter().filter(|l| l.edge == Some(false)).count();
    let keep_edges = keep_edges && leading <= 1 && trailing <= 1;
    let mut edges = Edges::default();
    let mut fixed = String::with_capacity(line.len() + 4 * lones.len());
    let mut copied = 0;
    for lone in &lones {
        // `start` and `start + 6` sit on ASCII bytes of the escape, so they are char boundaries.
        fixed.push_str(line.get(copied..lone.start)?);
        copied = lone.start + 6;
        match (keep_edges, lone.edge) {
            (true, Some(true)) => edges.leading_low = Some(lone.unit),
            (true, Some(false)) => edges.trailing_high = Some(lone.unit),
            _ => fixed.push_str("\\ufffd"),
        }
    }
    fixed.push_str(line.get(copied..)?);
    Some(Repaired { line: fixed, edges })
}

/// The code unit of a `\uXXXX` escape starting at `at` (the backslash), if there is one.
fn hex_escape(bytes: &[u8], at: usize) -> Option<u16> {
    if bytes.get(at) != Some(&b'\\') || bytes.get(at + 1) != Some(&b'u') {
        return None;
    }
    let hex = std::str::from_utf8(bytes.get(at + 2..at + 6)?).ok()?;
    u16::from_str_radix(hex, 16).ok()
}

// ---------------------------------------------------------------------------------------------
// Wire types. Everything is optional and loosely typed: a field of an unexpected type is treated
// as absent instead of failing the line (§4.3: fields are added over time). Strings borrow from
// the line when they have no escapes; subtrees this parser does not need (file contents inside
// tool results, diffs …) are skipped without allocating.

/// Any JSON value, keeping only scalars.
#[derive(Debug)]
enum Loose<'a> {
    Str(Cow<'a, str>),
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Null,
    Nested,
}

impl<'a> Loose<'a> {
    fn into_str(self) -> Option<Cow<'a, str>> {
        match self {
            Loose::Str(s) => Some(s),
            _ => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match self {
            Loose::Int(n) => Some(*n),
            Loose::UInt(n) => i64::try_from(*n).ok(),
            Loose::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            Loose::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn as_u64(&self) -> Option<u64> {
        match self {
            Loose::UInt(n) => Some(*n),
            other => other.as_i64().and_then(|n| u64::try_from(n).ok()),
        }
    }

    /// Present and meaningful: not `null`, not `""`.
    fn is_present(&self) -> bool {
        match self {
            Loose::Null => false,
            Loose::Str(s) => !s.is_empty(),
            _ => true,
        }
    }
}

impl<'de> Deserialize<'de> for Loose<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LooseVisitor)
    }
}

/// Implements every `visit_*` of a `deserialize_any` visitor except `visit_map` (and, where
/// the visitor needs it, `visit_seq`) by handing the value, as a [`Loose`], to `self.other`.
/// Serde's defaults would reject these types and with them the whole line.
macro_rules! visit_other_as_loose {
    () => {
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Bool(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Int(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(self.other(Loose::UInt(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Float(v)))
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Str(Cow::Borrowed(v))))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Str(Cow::Owned(v.to_owned()))))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Str(Cow::Owned(v))))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Null))
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Null))
        }
    };
}

/// Drains a JSON array without allocating.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

struct LooseVisitor;

impl LooseVisitor {
    fn other(self, value: Loose<'_>) -> Loose<'_> {
        value
    }
}

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Loose<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    visit_other_as_loose!();
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Loose::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|()| Loose::Nested)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Loose::Nested)
    }
}

/// A map key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A JSON object read field by field. `field` must consume the value of every key it is given.
trait Fields<'de>: Default {
    fn field<A: MapAccess<'de>>(&mut self, key: Cow<'de, str>, map: &mut A)
        -> Result<(), A::Error>;

    /// Where an object was expected but something else came; `None` = treat as absent.
    fn from_other(_value: Loose<'de>) -> Option<Self> {
        None
    }
}

/// `T` if the value was an object (or something `T::from_other` accepts), else `None`.
struct Obj<T>(Option<T>);

impl<'de, T: Fields<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ObjVisitor(PhantomData))
    }
}

struct ObjVisitor<T>(PhantomData<T>);

impl<'de, T: Fields<'de>> ObjVisitor<T> {
    fn other(self, value: Loose<'de>) -> Obj<T> {
        Obj(T::from_other(value))
    }
}

impl<'de, T: Fields<'de>> Visitor<'de> for ObjVisitor<T> {
    type Value = Obj<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    visit_other_as_loose!();
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Obj::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|()| self.other(Loose::Nested))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut value = T::default();
        while let Some(Key(key)) = map.next_key()? {
            value.field(key, &mut map)?;
        }
        Ok(Obj(Some(value)))
    }
}

fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(drop)
}

fn next_str<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    Ok(map.next_value::<Loose<'de>>()?.into_str())
}

fn next_obj<'de, A: MapAccess<'de>, T: Fields<'de>>(map: &mut A) -> Result<Option<T>, A::Error> {
    Ok(map.next_value::<Obj<T>>()?.0)
}

/// One line of the stream: the union of the fields of every event type this parser reads.
#[derive(Default)]
struct EventWire<'a> {
    kind: Option<Cow<'a, str>>,
    subtype: Option<Cow<'a, str>>,
    session_id: Option<Cow<'a, str>>,
    /// `system/init` display name.
    model: Option<Cow<'a, str>>,
    has_timestamp: bool,
    has_model_call_id: bool,
    /// `thinking/delta` text.
    text: Option<Cow<'a, str>>,
    /// `assistant` content text, or the `error` envelope's message string.
    message: Option<MessageWire<'a>>,
    error: Option<Cow<'a, str>>,
    call_id: Option<Cow<'a, str>>,
    tool_call: Option<ToolCallWire<'a>>,
    query_type: Option<Cow<'a, str>>,
    query: Option<QueryWire<'a>>,
    /// `result.result` (a string on `result` events).
    result: Option<Cow<'a, str>>,
    is_error: Option<bool>,
    duration_ms: Option<u64>,
    request_id: Option<Cow<'a, str>>,
    usage: Option<UsageWire>,
}

impl EventWire<'_> {
    /// Events whose text may continue a surrogate pair held back from the previous delta.
    fn carries_stream_text(&self) -> bool {
        match self.kind.as_deref() {
            Some("assistant") => true,
            Some("thinking") => self.subtype.as_deref() == Some("delta"),
            _ => false,
        }
    }
}

impl<'de> Fields<'de> for EventWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "type" => self.kind = next_str(map)?,
            "subtype" => self.subtype = next_str(map)?,
            "session_id" => self.session_id = next_str(map)?,
            "model" => self.model = next_str(map)?,
            "timestamp_ms" => self.has_timestamp = map.next_value::<Loose>()?.is_present(),
            "model_call_id" => self.has_model_call_id = map.next_value::<Loose>()?.is_present(),
            "text" => self.text = next_str(map)?,
            "message" => self.message = next_obj(map)?,
            "error" => self.error = next_str(map)?,
            "call_id" => self.call_id = next_str(map)?,
            "tool_call" => self.tool_call = next_obj(map)?,
            "query_type" => self.query_type = next_str(map)?,
            "query" => self.query = next_obj(map)?,
            "result" => self.result = next_str(map)?,
            "is_error" => {
                self.is_error = match map.next_value::<Loose>()? {
                    Loose::Bool(b) => Some(b),
                    _ => None,
                }
            }
            "duration_ms" => self.duration_ms = map.next_value::<Loose>()?.as_u64(),
            "request_id" => self.request_id = next_str(map)?,
            "usage" => self.usage = next_obj(map)?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// `message`: `{"role","content":[blocks]}` on `assistant`, a plain string on `error`.
#[derive(Default)]
struct MessageWire<'a> {
    text: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for MessageWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "content" => self.text = map.next_value::<ContentText>()?.0,
            _ => skip(map)?,
        }
        Ok(())
    }

    fn from_other(value: Loose<'de>) -> Option<Self> {
        value
            .into_str()
            .map(|text| MessageWire { text: Some(text) })
    }
}

/// The concatenated `text` of the `type == "text"` blocks of `content` (§5.5); a bare string or a
/// single block object is accepted too.
struct ContentText<'a>(Option<Cow<'a, str>>);

fn append_text<'a>(acc: &mut Option<Cow<'a, str>>, text: Cow<'a, str>) {
    match acc {
        None => *acc = Some(text),
        Some(existing) => existing.to_mut().push_str(&text),
    }
}

impl<'de> Deserialize<'de> for ContentText<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl ContentVisitor {
    fn other(self, value: Loose<'_>) -> ContentText<'_> {
        ContentText(value.into_str())
    }
}

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = ContentText<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("message content")
    }
    visit_other_as_loose!();
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut text = None;
        while let Some(Obj(block)) = seq.next_element::<Obj<BlockWire>>()? {
            if let Some(block_text) = block.and_then(BlockWire::into_text) {
                append_text(&mut text, block_text);
            }
        }
        Ok(ContentText(text))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let Obj(block) = ObjVisitor::<BlockWire>(PhantomData).visit_map(map)?;
        Ok(ContentText(block.and_then(BlockWire::into_text)))
    }
}

#[derive(Default)]
struct BlockWire<'a> {
    kind: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
}

impl<'a> BlockWire<'a> {
    /// Text of a text block (a block without `type` but with `text` counts as one).
    fn into_text(self) -> Option<Cow<'a, str>> {
        match self.kind.as_deref() {
            None | Some("text") => self.text,
            Some(_) => None,
        }
    }
}

impl<'de> Fields<'de> for BlockWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "type" => self.kind = next_str(map)?,
            "text" => self.text = next_str(map)?,
            _ => skip(map)?,
        }
        Ok(())
    }

    fn from_other(value: Loose<'de>) -> Option<Self> {
        value.into_str().map(|text| BlockWire {
            kind: None,
            text: Some(text),
        })
    }
}

/// `tool_call`: the one key ending in `ToolCall` (siblings `toolCallId`, `startedAtMs`,
/// `completedAtMs`, `hookAdditionalContexts` skipped), or the legacy `function` shape.
#[derive(Default)]
struct ToolCallWire<'a> {
    /// e.g. `shellToolCall`; the first such key wins.
    kind: Option<Cow<'a, str>>,
    body: ToolBodyWire<'a>,
    legacy: Option<LegacyFunctionWire<'a>>,
    tool_call_id: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for ToolCallWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        if key.ends_with("ToolCall") && self.kind.is_none() {
            self.body = next_obj(map)?.unwrap_or_default();
            self.kind = Some(key);
        } else if key == "function" && self.legacy.is_none() {
            self.legacy = next_obj(map)?;
        } else if key == "toolCallId" {
            self.tool_call_id = next_str(map)?;
        } else {
            skip(map)?;
        }
        Ok(())
    }
}

#[derive(Default)]
struct ToolBodyWire<'a> {
    args: ToolArgsWire<'a>,
    /// From `result`.
    result: Option<ToolOutcome>,
    /// From an outcome key directly in the body (`"success": true`), a liberal form.
    direct: Option<ToolOutcome>,
}

impl ToolBodyWire<'_> {
    fn outcome(&self) -> Option<ToolOutcome> {
        self.result.clone().or_else(|| self.direct.clone())
    }
}

impl<'de> Fields<'de> for ToolBodyWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "args" => self.args = next_obj(map)?.unwrap_or_default(),
            "result" => self.result = next_obj::<_, ResultWire>(map)?.and_then(|r| r.outcome),
            "success" | "failure" | "error" | "rejected" if self.direct.is_none() => {
                self.direct = outcome_from_entry(&key, next_obj(map)?);
            }
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// `tool_call.<kind>.args`: only the fields summaries use.
#[derive(Default, Clone)]
struct ToolArgsWire<'a> {
    command: Option<Cow<'a, str>>,
    path: Option<Cow<'a, str>>,
    pattern: Option<Cow<'a, str>>,
    glob_pattern: Option<Cow<'a, str>>,
    url: Option<Cow<'a, str>>,
    search_term: Option<Cow<'a, str>>,
    query: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    tool_name: Option<Cow<'a, str>>,
    provider_identifier: Option<Cow<'a, str>>,
    tool_call_id: Option<Cow<'a, str>>,
}

impl ToolArgsWire<'_> {
    fn into_owned(self) -> ToolArgsWire<'static> {
        let own = |s: Option<Cow<'_, str>>| s.map(|s| Cow::Owned(s.into_owned()));
        ToolArgsWire {
            command: own(self.command),
            path: own(self.path),
            pattern: own(self.pattern),
            glob_pattern: own(self.glob_pattern),
            url: own(self.url),
            search_term: own(self.search_term),
            query: own(self.query),
            name: own(self.name),
            tool_name: own(self.tool_name),
            provider_identifier: own(self.provider_identifier),
            tool_call_id: own(self.tool_call_id),
        }
    }
}

impl<'de> Fields<'de> for ToolArgsWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let slot = match &*key {
            "command" => &mut self.command,
            "path" => &mut self.path,
            "pattern" => &mut self.pattern,
            "globPattern" => &mut self.glob_pattern,
            "url" => &mut self.url,
            "searchTerm" => &mut self.search_term,
            "query" => &mut self.query,
            "name" => &mut self.name,
            "toolName" => &mut self.tool_name,
            "providerIdentifier" => &mut self.provider_identifier,
            "toolCallId" => &mut self.tool_call_id,
            _ => return skip(map),
        };
        *slot = next_str(map)?;
        Ok(())
    }

    /// The legacy shape carries `arguments` as a JSON-encoded string.
    fn from_other(value: Loose<'de>) -> Option<Self> {
        let text = value.into_str()?;
        let Obj(args) = serde_json::from_str::<Obj<ToolArgsWire>>(&text).ok()?;
        args.map(ToolArgsWire::into_owned)
    }
}

/// Legacy `{"function":{"name":..,"arguments":"<json string>"}}` (§5.7).
#[derive(Default)]
struct LegacyFunctionWire<'a> {
    name: Option<Cow<'a, str>>,
    arguments: ToolArgsWire<'a>,
}

impl<'de> Fields<'de> for LegacyFunctionWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "name" => self.name = next_str(map)?,
            "arguments" => self.arguments = next_obj(map)?.unwrap_or_default(),
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// `tool_call.<kind>.result`: a one-key union, or a bare word/boolean (liberal forms, §5.7).
#[derive(Default)]
struct ResultWire {
    outcome: Option<ToolOutcome>,
}

impl<'de> Fields<'de> for ResultWire {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "success" | "failure" | "error" | "rejected" if self.outcome.is_none() => {
                self.outcome = outcome_from_entry(&key, next_obj(map)?);
            }
            _ => skip(map)?,
        }
        Ok(())
    }

    fn from_other(value: Loose<'de>) -> Option<Self> {
        let outcome = match value {
            Loose::Str(word) => outcome_from_word(&word),
            Loose::Bool(true) => Some(ToolOutcome::Success),
            Loose::Bool(false) => Some(ToolOutcome::Failure { detail: None }),
            _ => None,
        };
        Some(ResultWire { outcome })
    }
}

/// The value of one outcome key: `{"exitCode":1,..}`, `{"reason":..}`, `{"message":..}`, a
/// string (taken as the message) or a boolean.
#[derive(Default)]
struct OutcomeBody<'a> {
    exit_code: Option<i64>,
    signal: Option<Cow<'a, str>>,
    aborted: bool,
    message: Option<Cow<'a, str>>,
    reason: Option<Cow<'a, str>>,
    error: Option<Cow<'a, str>>,
    /// The value was `false`.
    is_false: bool,
}

impl<'de> Fields<'de> for OutcomeBody<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "exitCode" | "exit_code" => self.exit_code = map.next_value::<Loose>()?.as_i64(),
            "signal" => self.signal = next_str(map)?,
            "aborted" => self.aborted = matches!(map.next_value::<Loose>()?, Loose::Bool(true)),
            "message" => self.message = next_str(map)?,
            "reason" => self.reason = next_str(map)?,
            // `{"error":{"message":..}}` or `{"error":"text"}`.
            "error" => {
                self.error = next_obj::<_, OutcomeBody>(map)?.and_then(|inner| inner.message)
            }
            _ => skip(map)?,
        }
        Ok(())
    }

    fn from_other(value: Loose<'de>) -> Option<Self> {
        match value {
            Loose::Null => None,
            Loose::Str(text) => Some(OutcomeBody {
                message: Some(text),
                ..OutcomeBody::default()
            }),
            Loose::Bool(false) => Some(OutcomeBody {
                is_false: true,
                ..OutcomeBody::default()
            }),
            _ => Some(OutcomeBody::default()),
        }
    }
}

/// `interaction_query.query`: `{"id":7,"<query_type>":{"args":{..},..}}` (§5.9).
#[derive(Default)]
struct QueryWire<'a> {
    kind: Option<Cow<'a, str>>,
    args: ToolArgsWire<'a>,
}

impl<'de> Fields<'de> for QueryWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        if key == "id" || self.kind.is_some() {
            return skip(map);
        }
        if let Some(body) = next_obj::<_, QueryBodyWire>(map)? {
            self.args = body.args;
            self.kind = Some(key);
        }
        Ok(())
    }
}

#[derive(Default)]
struct QueryBodyWire<'a> {
    args: ToolArgsWire<'a>,
}

impl<'de> Fields<'de> for QueryBodyWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "args" => self.args = next_obj(map)?.unwrap_or_default(),
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// `result.usage` (camelCase in 2026 builds; snake_case accepted too).
#[derive(Default)]
struct UsageWire {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_tokens: u64,
    cache_write_tokens: u64,
}

impl<'de> Fields<'de> for UsageWire {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let slot = match &*key {
            "inputTokens" | "input_tokens" => &mut self.input_tokens,
            "outputTokens" | "output_tokens" => &mut self.output_tokens,
            "cacheReadTokens" | "cache_read_tokens" => &mut self.cache_read_tokens,
            "cacheWriteTokens" | "cache_write_tokens" => &mut self.cache_write_tokens,
            _ => return skip(map),
        };
        *slot = map.next_value::<Loose>()?.as_u64().unwrap_or(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cursor-cli/");

    impl StreamParser {
        /// The streamed text without the inserted paragraph breaks (= what the CLI sent).
        fn raw_streamed(&self) -> String {
            let mut raw = String::new();
            let mut from = 0;
            for &(at, len) in &self.breaks {
                raw.push_str(&self.streamed[from..at]);
                from = at + len;
            }
            raw.push_str(&self.streamed[from..]);
            raw
        }
    }

    struct Run {
        events: Vec<StreamEvent>,
        result: Option<TurnResult>,
        parser: StreamParser,
    }

    impl Run {
        fn text(&self) -> String {
            self.events
                .iter()
                .filter_map(|e| {
                    if let StreamEvent::Text(t) = e {
                        Some(t.as_str())
                    } else {
                        None
                    }
                })
                .collect()
        }
        fn thinking(&self) -> String {
            self.events
                .iter()
                .filter_map(|e| {
                    if let StreamEvent::Thinking(t) = e {
                        Some(t.as_str())
                    } else {
                        None
                    }
                })
                .collect()
        }
        fn started(&self) -> Vec<(&str, &str)> {
            self.events
                .iter()
                .filter_map(|e| match e {
                    StreamEvent::ToolStarted { tool, summary, .. } => {
                        Some((tool.as_str(), summary.as_str()))
                    }
                    _ => None,
                })
                .collect()
        }
        fn completed(&self) -> Vec<(&str, &str, ToolOutcome)> {
            self.events
                .iter()
                .filter_map(|e| match e {
                    StreamEvent::ToolCompleted {
                        tool,
                        summary,
                        outcome,
                        ..
                    } => Some((tool.as_str(), summary.as_str(), outcome.clone())),
                    _ => None,
                })
                .collect()
        }
        fn permissions(&self) -> Vec<(&str, &str)> {
            self.events
                .iter()
                .filter_map(|e| match e {
                    StreamEvent::PermissionRequested {
                        query_type,
                        summary,
                    } => Some((query_type.as_str(), summary.as_str())),
                    _ => None,
                })
                .collect()
        }
        fn position(&self, wanted: impl Fn(&StreamEvent) -> bool) -> Option<usize> {
            self.events.iter().position(wanted)
        }
    }

    fn run_lines<L: AsRef<[u8]>>(partial: bool, lines: &[L]) -> Run {
        let mut parser = StreamParser::new(partial);
        let mut events = Vec::new();
        for line in lines {
            parser.push_line(line.as_ref(), &mut events);
        }
        let result = parser.finish(&mut events);
        Run {
            events,
            result,
            parser,
        }
    }

    fn run_fixture(fixture: &str, partial: bool) -> Run {
        let bytes = std::fs::read(format!("{FIXTURES}{fixture}"))
            .unwrap_or_else(|e| panic!("{fixture}: {e}"));
        let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        run_lines(partial, &lines)
    }

    #[derive(Default)]
    struct Expected {
        text: String,
        thinking: &'static str,
        /// `(tool, summary)`
        started: Vec<(&'static str, &'static str)>,
        completed: Vec<(&'static str, &'static str, ToolOutcome)>,
        permissions: Vec<(&'static str, &'static str)>,
        /// A successful `result` event ends the transcript.
        result: bool,
        ignored: u64,
    }

    /// Runs a transcript in both modes (a cumulative transcript fed to a partial-mode parser and
    /// vice versa must give the same output, see the module docs) and checks every event.
    fn check(fixture: &str, expected: Expected) {
        for partial in [false, true] {
            let run = run_fixture(fixture, partial);
            let label = format!("{fixture} (partial={partial})");
            let text = run.text();
            assert_eq!(text, expected.text, "{label}: text");
            assert_eq!(run.parser.streamed_text(), text, "{label}: streamed_text");
            assert_eq!(run.thinking(), expected.thinking, "{label}: thinking");
            assert_eq!(run.started(), expected.started, "{label}: started");
            assert_eq!(run.completed(), expected.completed, "{label}: completed");
            assert_eq!(
                run.permissions(),
                expected.permissions,
                "{label}: permissions"
            );
            assert_eq!(
                run.parser.ignored_lines(),
                expected.ignored,
                "{label}: ignored"
            );
            assert_eq!(run.parser.malformed_lines(), 0, "{label}: malformed");
            assert_eq!(
                run.parser.saw_tools(),
                !expected.started.is_empty() || !expected.completed.is_empty(),
                "{label}: saw_tools"
            );
            for event in &run.events {
                match event {
                    StreamEvent::Text(t) | StreamEvent::Thinking(t) => {
                        assert!(!t.is_empty(), "{label}: empty")
                    }
                    StreamEvent::ToolStarted { call_id, .. }
                    | StreamEvent::ToolCompleted { call_id, .. } => {
                        assert!(
                            call_id.contains('\n'),
                            "{label}: call_id decoded with its newline (§11.3)"
                        )
                    }
                    _ => {}
                }
            }
            // Thinking: one block, closed before the answer starts.
            let done_count = run
                .events
                .iter()
                .filter(|e| **e == StreamEvent::ThinkingDone)
                .count();
            assert_eq!(
                done_count,
                usize::from(!expected.thinking.is_empty()),
                "{label}: ThinkingDone"
            );
            if let Some(done) = run.position(|e| *e == StreamEvent::ThinkingDone) {
                assert!(run.position(|e| matches!(e, StreamEvent::Thinking(_))) < Some(done));
                assert!(run.position(|e| matches!(e, StreamEvent::Text(_))) > Some(done));
            }
            let result_events: Vec<&StreamEvent> = run
                .events
                .iter()
                .filter(|e| matches!(e, StreamEvent::Result(_)))
                .collect();
            match &run.result {
                Some(result) => {
                    assert_eq!(result_events, vec![&StreamEvent::Result(result.clone())]);
                    assert_eq!(
                        run.events.last(),
                        result_events.first().copied(),
                        "{label}: last"
                    );
                }
                None => assert!(result_events.is_empty(), "{label}"),
            }
            match (&run.result, expected.result) {
                (Some(result), true) => {
                    assert!(result.success, "{label}");
                    assert_eq!(
                        run.parser.raw_streamed(),
                        result.text,
                        "{label}: text minus breaks = result.result"
                    );
                    if let Some(StreamEvent::Init { session_id, .. }) = run.events.first() {
                        assert_eq!(
                            Some(session_id),
                            result.session_id.as_ref(),
                            "{label}: session id"
                        );
                    }
                }
                (None, false) => {}
                (result, _) => panic!("{label}: unexpected result {result:?}"),
            }
        }
    }

    fn paragraphs(parts: &[&str]) -> String {
        parts.join("\n\n")
    }

    #[test]
    fn transcript_01_plain_answer_cumulative() {
        check(
            "01-plain-answer-cumulative.jsonl",
            Expected {
                text: "4".into(),
                result: true,
                ignored: 1,
                ..Expected::default()
            },
        );
        let run = run_fixture("01-plain-answer-cumulative.jsonl", false);
        assert_eq!(
            run.events.first(),
            Some(&StreamEvent::Init {
                session_id: "5f0c2b7e-8d41-4a3c-9e6b-1c2d3e4f5a61".into(),
                model: Some("Auto".into())
            })
        );
        assert_eq!(
            run.result,
            Some(TurnResult {
                success: true,
                text: "4".into(),
                session_id: Some("5f0c2b7e-8d41-4a3c-9e6b-1c2d3e4f5a61".into()),
                request_id: Some("9b1e4c2a-7f30-4d8e-a1b2-c3d4e5f60718".into()),
                duration_ms: Some(3184),
                usage: Some(Usage {
                    input_tokens: 1203,
                    output_tokens: 2,
                    cache_read_tokens: 17920,
                    cache_write_tokens: 0
                }),
            })
        );
    }

    #[test]
    fn transcript_01_json_format_uses_result_text() {
        // `--output-format json` prints only the result object: its text is the fallback.
        check(
            "01-plain-answer.json-format.json",
            Expected {
                text: "4".into(),
                result: true,
                ..Expected::default()
            },
        );
    }

    #[test]
    fn transcript_02_partial_deltas() {
        check(
            "02-partial-output-deltas.jsonl",
            Expected {
                text: paragraphs(&[
                    "I'll list the files.",
                    "There are two files: `a.txt` and `b.txt`.",
                ]),
                started: vec![("ls", "/home/dev/project")],
                completed: vec![("ls", "/home/dev/project", ToolOutcome::Success)],
                result: true,
                ignored: 1,
                ..Expected::default()
            },
        );
        let run = run_fixture("02-partial-output-deltas.jsonl", true);
        let texts: Vec<&StreamEvent> = run
            .events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Text(_)))
            .collect();
        assert_eq!(texts.len(), 8, "one Text per delta, flushes dropped");
        assert_eq!(texts[4], &StreamEvent::Text("\n\nThere".into()));
        // A parser not told about partial output detects the delta shape and switches.
        assert!(run_fixture("02-partial-output-deltas.jsonl", false)
            .parser
            .is_partial());
    }

    #[test]
    fn transcript_03_thinking() {
        check(
            "03-thinking-model.jsonl",
            Expected {
                text: "No. 91 is not prime: 91 = 7 × 13.".into(),
                thinking: "**Checking the claim**\n\nThe user asks whether 91 is prime. 91 = 7 × 13, so it is composite.",
                result: true,
                ignored: 1,
                ..Expected::default()
            },
        );
    }

    #[test]
    fn transcript_04_tool_calls() {
        let path = "/home/dev/project/app.ts";
        check(
            "04-tool-calls-shell-edit-read.jsonl",
            Expected {
                text: paragraphs(&[
                    "I'll read app.ts first.",
                    "Now I'll update the version.",
                    "Running the tests.",
                    "Bumped `version` to 2 in app.ts; all 3 tests pass.",
                ]),
                started: vec![("read", path), ("edit", path), ("shell", "npm test")],
                completed: vec![
                    ("read", path, ToolOutcome::Success),
                    ("edit", path, ToolOutcome::Success),
                    ("shell", "npm test", ToolOutcome::Success),
                ],
                result: true,
                ignored: 1,
                ..Expected::default()
            },
        );
        let run = run_fixture("04-tool-calls-shell-edit-read.jsonl", false);
        assert!(run.events.contains(&StreamEvent::ToolStarted {
            call_id: "call_Xq3kF9sLm2Pz8TvN1rYc0aBd\nfc_0d2609f619ccdca801698ca0a51c6481a0aaa34fcf724631a9".into(),
            tool: "read".into(),
            summary: path.into(),
        }));
        // The text format shows only the last segment; it is the end of what we streamed.
        let last = std::fs::read_to_string(format!("{FIXTURES}04-tool-calls.text-format.txt"))
            .unwrap_or_default();
        assert!(!last.trim().is_empty() && run.text().ends_with(last.trim_end()));
    }

    #[test]
    fn transcript_05_stream_ends_early() {
        check(
            "05-failure-stream-ends-early.jsonl",
            Expected {
                text: "Let me run the tests.".into(),
                started: vec![("shell", "pytest -q")],
                completed: vec![(
                    "shell",
                    "pytest -q",
                    ToolOutcome::Failure {
                        detail: Some("exit code 1".into()),
                    },
                )],
                result: false,
                ignored: 4, // user, connection, retry, connection
                ..Expected::default()
            },
        );
    }

    #[test]
    fn transcript_06_auth_failure_has_empty_stdout() {
        check("06-auth-failure.stdout.jsonl", Expected::default());
        assert!(run_fixture("06-auth-failure.stdout.jsonl", true)
            .events
            .is_empty());
    }

    #[test]
    fn transcript_07_unicode() {
        let expected = "こんにちは、世界！🌍 Grüße aus Köln — naïve café (e\u{301}) 👩\u{200d}💻 coder, RTL: שלום / مرحبا, tab:\t| quote: \"hi\", backslash: C:\\temp, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, flag 🇯🇵.";
        check(
            "07-unicode-emoji.jsonl",
            Expected {
                text: expected.into(),
                result: true,
                ignored: 1,
                ..Expected::default()
            },
        );
        // The ZWJ sequence arrives split over two deltas and is passed through untouched.
        let run = run_fixture("07-unicode-emoji.jsonl", true);
        let woman = run.position(|e| *e == StreamEvent::Text(" 👩".into()));
        let rest = run.position(|e| *e == StreamEvent::Text("\u{200d}💻 coder".into()));
        assert!(
            woman.is_some() && rest == woman.map(|i| i + 1),
            "{:?}",
            run.events
        );
    }

    #[test]
    fn transcript_08_long_multiline() {
        let mut text = String::from(
            "# Migration plan\n\nBelow is a step-by-step plan for moving the service to Rust.\n\n",
        );
        for step in 1..=30 {
            text.push_str(&format!(
                "{step}. Step {step}: port module `mod_{step:02}` and add tests (est. {}h).\n",
                step % 5 + 1
            ));
        }
        text.push_str("\n## Example\n\n```rust\nfn main() {\n    println!(\"hello, {}\", \"world\");\n    let path = r\"C:\\\\Users\\\\dev\";\n}\n```\n\n| Phase | Weeks |\n|---|---|\n| Port | 3 |\n| Harden | 2 |\n\nTrailing line without newline");
        check(
            "08-long-multiline-answer.jsonl",
            Expected {
                text,
                result: true,
                ignored: 1,
                ..Expected::default()
            },
        );
    }

    #[test]
    fn transcript_09_resume() {
        check(
            "09-resume-second-turn.jsonl",
            Expected {
                text: "12".into(),
                result: true,
                ignored: 1,
                ..Expected::default()
            },
        );
    }

    #[test]
    fn transcript_10_permission_rejected() {
        check(
            "10-permission-query-rejected.jsonl",
            Expected {
                text: paragraphs(&[
                    "I'll remove the build directory.",
                    "I wasn't allowed to run `rm -rf build`, so the directory is unchanged.",
                ]),
                started: vec![("shell", "rm -rf build")],
                completed: vec![(
                    "shell",
                    "rm -rf build",
                    ToolOutcome::Rejected {
                        reason: Some("permission mode does not allow interactive approval".into()),
                    },
                )],
                permissions: vec![("shellRequestQuery", "rm -rf build")],
                result: true,
                ignored: 1,
                ..Expected::default()
            },
        );
    }

    // -----------------------------------------------------------------------------------------
    // Targeted cases. Builders for the event shapes of §5.

    fn content(text: &str) -> Value {
        json!({"role": "assistant", "content": [{"type": "text", "text": text}]})
    }
    /// Partial-mode delta: `timestamp_ms`, no `model_call_id`.
    fn delta(text: &str) -> String {
        json!({"type": "assistant", "message": content(text), "session_id": "s", "timestamp_ms": 1})
            .to_string()
    }
    /// Segment (flush): `model_call_id` + `timestamp_ms`.
    fn segment(text: &str) -> String {
        json!({"type": "assistant", "message": content(text), "session_id": "s", "model_call_id": "r-0-abcd", "timestamp_ms": 2})
            .to_string()
    }
    /// Last segment / end-of-turn flush: neither field.
    fn last(text: &str) -> String {
        json!({"type": "assistant", "message": content(text), "session_id": "s"}).to_string()
    }
    fn tool(subtype: &str, call_id: &str, tool_call: Value) -> String {
        json!({"type": "tool_call", "subtype": subtype, "call_id": call_id, "tool_call": tool_call, "session_id": "s"})
            .to_string()
    }
    fn shell_pair(call_id: &str) -> [String; 2] {
        let body = json!({"shellToolCall": {"args": {"command": "true"}}});
        [
            tool("started", call_id, body.clone()),
            tool("completed", call_id, body),
        ]
    }
    fn result(text: &str) -> String {
        json!({"type": "result", "subtype": "success", "is_error": false, "result": text, "session_id": "s"}).to_string()
    }
    fn thinking(text: &str) -> String {
        json!({"type": "thinking", "subtype": "delta", "text": text, "session_id": "s", "timestamp_ms": 1}).to_string()
    }
    fn thinking_done() -> String {
        json!({"type": "thinking", "subtype": "completed", "session_id": "s"}).to_string()
    }

    fn lines(parts: &[&[String]]) -> Vec<String> {
        parts.iter().flat_map(|p| p.iter().cloned()).collect()
    }

    #[test]
    fn partial_flushes_never_duplicate_and_never_lose_text() {
        let [s1, c1] = shell_pair("c1");
        // (label, lines, expected text)
        let cases: Vec<(&str, Vec<String>, &str)> = vec![
            (
                "segment flush without deltas (CLI ignored the flag)",
                lines(&[
                    &[segment("Checking.")],
                    &[s1.clone(), c1.clone()],
                    &[delta("Done"), last("Done"), result("Checking.Done")],
                ]),
                "Checking.\n\nDone",
            ),
            (
                "end-of-turn flush = whole response",
                lines(&[
                    &[delta("A"), segment("A")],
                    &[s1.clone(), c1.clone()],
                    &[delta("B"), last("AB"), result("AB")],
                ]),
                "A\n\nB",
            ),
            (
                "end-of-turn flush = whole response, last segment had no deltas",
                lines(&[
                    &[delta("A"), segment("A")],
                    &[s1.clone(), c1.clone()],
                    &[last("AB"), result("AB")],
                ]),
                "A\n\nB",
            ),
            (
                "end-of-turn flush = last segment, which had no deltas",
                lines(&[
                    &[delta("A"), segment("A")],
                    &[s1.clone(), c1.clone()],
                    &[last("B"), result("AB")],
                ]),
                "A\n\nB",
            ),
            (
                "flush longer than its deltas adds the tail",
                lines(&[&[delta("Hel"), last("Hello")]]),
                "Hello",
            ),
            (
                "flush that disagrees with the deltas is dropped",
                lines(&[&[delta("Hello"), last("Goodbye")]]),
                "Hello",
            ),
            (
                "repeated flushes",
                lines(&[&[
                    delta("A"),
                    segment("A"),
                    segment("A"),
                    last("A"),
                    last("A"),
                    result("A"),
                ]]),
                "A",
            ),
            (
                "missing end-of-turn flush: result.result fills the gap",
                lines(&[&[delta("A")], &[s1.clone(), c1.clone()], &[result("AB")]]),
                "A\n\nB",
            ),
            (
                "result that disagrees adds nothing",
                lines(&[&[delta("A"), result("Something else")]]),
                "A",
            ),
            (
                "contradicting flushes are all dropped",
                lines(&[&[
                    delta("Hello"),
                    segment("Goodbye"),
                    last("Goodbye"),
                    result("Hello"),
                ]]),
                "Hello",
            ),
            (
                "cumulative output: two segments without a tool between",
                lines(&[&[segment("First."), last("Second."), result("First.Second.")]]),
                "First.Second.",
            ),
            (
                "deltas after a flush without a tool start a new segment",
                lines(&[&[
                    delta("A"),
                    segment("A"),
                    delta("B"),
                    segment("B"),
                    last("AB"),
                    result("AB"),
                ]]),
                "AB",
            ),
        ];
        for (label, input, expected) in cases {
            let run = run_lines(true, &input);
            assert_eq!(run.text(), expected, "{label}");
        }
    }

    #[test]
    fn cumulative_segments_are_emitted_whole() {
        let [s1, c1] = shell_pair("c1");
        let input = lines(&[
            &[segment("First.")],
            &[s1, c1],
            &[
                segment("Second."),
                last("Third."),
                result("First.Second.Third."),
            ],
        ]);
        let run = run_lines(false, &input);
        assert_eq!(run.text(), "First.\n\nSecond.Third.");
        assert!(!run.parser.is_partial());
    }

    #[test]
    fn paragraph_breaks() {
        let [s1, c1] = shell_pair("c1");
        let [s2, c2] = shell_pair("c2");
        // (label, lines, text as streamed, text as the CLI sent it)
        let cases: Vec<(&str, Vec<String>, &str, &str)> = vec![
            (
                "never at the very start",
                lines(&[&[s1.clone(), c1.clone(), delta("Hi")]]),
                "Hi",
                "Hi",
            ),
            (
                "one break for several tools",
                lines(&[
                    &[delta("A")],
                    &[s1.clone(), c1.clone(), s2.clone(), c2.clone()],
                    &[delta("B"), delta("C")],
                ]),
                "A\n\nBC",
                "ABC",
            ),
            (
                "previous text ends with a newline",
                lines(&[&[delta("A\n")], &[s1.clone(), c1.clone()], &[delta("B")]]),
                "A\n\nB",
                "A\nB",
            ),
            (
                "previous text ends with a blank line",
                lines(&[&[delta("A\n\n")], &[s1.clone(), c1.clone()], &[delta("B")]]),
                "A\n\nB",
                "A\n\nB",
            ),
            (
                "next text starts with a newline",
                lines(&[&[delta("A")], &[s1.clone(), c1.clone()], &[delta("\nB")]]),
                "A\n\nB",
                "A\nB",
            ),
            (
                "next text starts with a blank line",
                lines(&[
                    &[delta("A")],
                    &[s1.clone(), c1.clone()],
                    &[delta("\n\n\nB")],
                ]),
                "A\n\n\nB",
                "A\n\n\nB",
            ),
            (
                "no tool, no break",
                lines(&[&[delta("A"), delta("B")]]),
                "AB",
                "AB",
            ),
            (
                "a tool completing without a start still separates",
                lines(&[&[delta("A"), c1.clone(), delta("B")]]),
                "A\n\nB",
                "AB",
            ),
        ];
        for (label, input, expected, raw) in cases {
            let run = run_lines(true, &input);
            assert_eq!(run.text(), expected, "{label}");
            assert_eq!(run.parser.raw_streamed(), raw, "{label}: raw");
        }
    }

    #[test]
    fn thinking_blocks_are_closed() {
        let [s1, c1] = shell_pair("c1");
        let cases: Vec<(&str, Vec<String>, Vec<StreamEvent>)> = vec![
            (
                "text without thinking/completed",
                vec![thinking("hmm"), delta("Answer")],
                vec![
                    StreamEvent::Thinking("hmm".into()),
                    StreamEvent::ThinkingDone,
                    StreamEvent::Text("Answer".into()),
                ],
            ),
            (
                "tool call without thinking/completed",
                vec![thinking("hmm"), s1.clone()],
                vec![
                    StreamEvent::Thinking("hmm".into()),
                    StreamEvent::ThinkingDone,
                    StreamEvent::ToolStarted {
                        call_id: "c1".into(),
                        tool: "shell".into(),
                        summary: "true".into(),
                    },
                ],
            ),
            (
                "EOF without thinking/completed",
                vec![thinking("hmm")],
                vec![
                    StreamEvent::Thinking("hmm".into()),
                    StreamEvent::ThinkingDone,
                ],
            ),
            (
                "completed without deltas",
                vec![thinking_done(), delta("A")],
                vec![StreamEvent::Text("A".into())],
            ),
            (
                "two blocks",
                vec![
                    thinking("a"),
                    thinking_done(),
                    s1.clone(),
                    c1.clone(),
                    thinking("b"),
                    thinking_done(),
                    thinking_done(),
                ],
                vec![
                    StreamEvent::Thinking("a".into()),
                    StreamEvent::ThinkingDone,
                    StreamEvent::ToolStarted {
                        call_id: "c1".into(),
                        tool: "shell".into(),
                        summary: "true".into(),
                    },
                    StreamEvent::ToolCompleted {
                        call_id: "c1".into(),
                        tool: "shell".into(),
                        summary: "true".into(),
                        outcome: ToolOutcome::Success,
                    },
                    StreamEvent::Thinking("b".into()),
                    StreamEvent::ThinkingDone,
                ],
            ),
            (
                "empty thinking text",
                vec![thinking(""), delta("A")],
                vec![StreamEvent::Text("A".into())],
            ),
        ];
        for (label, input, expected) in cases {
            assert_eq!(run_lines(true, &input).events, expected, "{label}");
        }
    }

    #[test]
    fn garbage_and_invalid_utf8_are_counted_not_fatal() {
        let deep = "[".repeat(100_000);
        let garbage: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"   \r".to_vec(),
            b"not json at all".to_vec(),
            b"{".to_vec(),
            b"[1,2]".to_vec(),
            b"42".to_vec(),
            b"\"string\"".to_vec(),
            b"null".to_vec(),
            b"{\"type\":".to_vec(),
            b"T: Named models unavailable".to_vec(),
            deep.into_bytes(),
            b"\xff\xfe\x00garbage".to_vec(),
            b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\"}]},\"timestamp_ms\":1}".to_vec(),
            b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"bad escape \\x\"}]}}".to_vec(),
        ];
        let mut input = garbage.clone();
        input.push(delta("still works").into_bytes());
        input.push(
            b"\xef\xbb\xbf"
                .iter()
                .copied()
                .chain(delta(" after a BOM").into_bytes())
                .collect(),
        );
        input.push(format!("{}\r", delta(" and CRLF")).into_bytes());
        let run = run_lines(true, &input);
        assert_eq!(run.text(), "still works after a BOM and CRLF");
        assert_eq!(run.parser.malformed_lines(), 12);
        assert_eq!(run.parser.ignored_lines(), 0);
        assert!(run.result.is_none());
    }

    #[test]
    fn unknown_events_are_ignored_and_counted() {
        let input = [
            r#"{"type":"connection","subtype":"reconnecting","session_id":"s","timestamp_ms":1,"attempt":1,"endpoint_url":"https://x"}"#,
            r#"{"type":"retry","subtype":"starting","session_id":"s","timestamp_ms":1,"attempt":1,"is_resume":true}"#,
            r#"{"type":"system","subtype":"task_notification","session_id":"s"}"#,
            r#"{"type":"system","subtype":"init"}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"prompt echo"}]},"session_id":"s"}"#,
            r#"{"type":"interaction_query","subtype":"response","query_type":"shellRequestQuery","response":{"id":7}}"#,
            r#"{"type":"tool_call","subtype":"updated","call_id":"x","tool_call":{}}"#,
            r#"{"type":"thinking","subtype":"summary","text":"?"}"#,
            r#"{"type":"brand_new_thing","payload":{"deep":[1,2,{"x":null}]}}"#,
            r#"{"no_type":true}"#,
            r#"{"type":42}"#,
        ];
        let run = run_lines(false, &input);
        assert_eq!(run.events, vec![]);
        assert_eq!(run.parser.ignored_lines(), input.len() as u64);
        assert_eq!(run.parser.malformed_lines(), 0);
    }

    #[test]
    fn content_blocks() {
        let cases: &[(Value, &str)] = &[
            (
                json!([{"type":"text","text":"Hello, "},{"type":"image","source":{"data":"..."}},{"type":"tool_use","text":"NOT"},{"type":"text","text":"world"}]),
                "Hello, world",
            ),
            (json!("a bare string"), "a bare string"),
            (
                json!({"type":"text","text":"a single block"}),
                "a single block",
            ),
            (
                json!([1, null, {"type":"text","text":5}, "bare element", {"text":"untyped block"}]),
                "bare elementuntyped block",
            ),
            (json!([]), ""),
            (json!(null), ""),
        ];
        for (content, expected) in cases {
            let line = json!({"type":"assistant","message":{"role":"assistant","content":content},"extra":{"future":[1]}}).to_string();
            assert_eq!(run_lines(false, &[line]).text(), *expected, "{content}");
        }
    }

    fn completed_with(tool_call: Value) -> (String, String, ToolOutcome) {
        let run = run_lines(false, &[tool("completed", "id", tool_call.clone())]);
        match run.events.as_slice() {
            [StreamEvent::ToolCompleted {
                tool,
                summary,
                outcome,
                ..
            }] => (tool.clone(), summary.clone(), outcome.clone()),
            other => panic!("{tool_call}: {other:?}"),
        }
    }

    #[test]
    fn tool_names_and_summaries() {
        let cases: &[(Value, &str, &str)] = &[
            (
                json!({"shellToolCall":{"args":{"command":"cargo test \\\n  --all"}}}),
                "shell",
                "cargo test \\   --all",
            ),
            (
                json!({"readToolCall":{"args":{"path":"src/main.rs","offset":10}}}),
                "read",
                "src/main.rs",
            ),
            (
                json!({"editToolCall":{"args":{"path":"/a/b.rs","streamContent":"fn main() {}"}}}),
                "edit",
                "/a/b.rs",
            ),
            (
                json!({"writeToolCall":{"args":{"path":"new.txt","fileText":"x"}}}),
                "write",
                "new.txt",
            ),
            (
                json!({"deleteToolCall":{"args":{"path":"old.txt"}}}),
                "delete",
                "old.txt",
            ),
            (
                json!({"grepToolCall":{"args":{"pattern":"TODO","path":"src"}}}),
                "grep",
                "TODO in src",
            ),
            (
                json!({"grepToolCall":{"args":{"pattern":"fn\\s+main","path":""}}}),
                "grep",
                "fn\\s+main",
            ),
            (
                json!({"globToolCall":{"args":{"globPattern":"**/*.rs","targetDirectory":"/p"}}}),
                "glob",
                "**/*.rs",
            ),
            (
                json!({"lsToolCall":{"args":{"path":"/p","ignore":[]}}}),
                "ls",
                "/p",
            ),
            (
                json!({"mcpToolCall":{"args":{"name":"github-create_issue","args":{"title":"t"},"providerIdentifier":"github","toolName":"create_issue"}}}),
                "mcp",
                "github/create_issue",
            ),
            (
                json!({"mcpToolCall":{"args":{"name":"lookup"}}}),
                "mcp",
                "lookup",
            ),
            (
                json!({"webFetchToolCall":{"args":{"url":"https://example.com/a"}}}),
                "webFetch",
                "https://example.com/a",
            ),
            (
                json!({"webSearchToolCall":{"args":{"searchTerm":"rust serde borrow"}}}),
                "webSearch",
                "rust serde borrow",
            ),
            (
                json!({"updateTodosToolCall":{"args":{"todos":[{"id":"1","content":"x","status":"TODO_STATUS_PENDING"}]}}}),
                "todos",
                "",
            ),
            (
                json!({"semSearchToolCall":{"args":{"query":"where is auth handled","targetDirectories":[]}}}),
                "search",
                "where is auth handled",
            ),
            (
                json!({"readLintsToolCall":{"args":{"paths":["a.rs"]}}}),
                "readLints",
                "",
            ),
            (
                json!({"futureThingToolCall":{"args":{"url":"https://x"}}}),
                "futureThing",
                "https://x",
            ),
            (json!({"shellToolCall":{}}), "shell", ""),
            (
                json!({"shellToolCall":{"args":{"command":42}}}),
                "shell",
                "",
            ),
            (json!({"shellToolCall":"not an object"}), "shell", ""),
            // Sibling keys first, in any order (§5.7, §11.4).
            (
                json!({"toolCallId":"x","startedAtMs":"1","hookAdditionalContexts":[],"completedAtMs":"2","readToolCall":{"args":{"path":"p"}}}),
                "read",
                "p",
            ),
            // Legacy function shape: arguments as a JSON string, or as an object.
            (
                json!({"function":{"name":"run_terminal_cmd","arguments":"{\"command\":\"ls -la\"}"}}),
                "run_terminal_cmd",
                "ls -la",
            ),
            (
                json!({"function":{"name":"read_file","arguments":{"path":"/x"}}}),
                "read_file",
                "/x",
            ),
            (
                json!({"function":{"name":"odd","arguments":"not json"}}),
                "odd",
                "",
            ),
            (json!({"function":{"arguments":"{}"}}), "function", ""),
            (json!({}), "unknown", ""),
        ];
        for (tool_call, tool, summary) in cases {
            let (got_tool, got_summary, _) = completed_with(tool_call.clone());
            assert_eq!(
                (got_tool.as_str(), got_summary.as_str()),
                (*tool, *summary),
                "{tool_call}"
            );
        }

        let long = "x".repeat(500);
        let (_, summary, _) = completed_with(json!({"shellToolCall":{"args":{"command":long}}}));
        assert_eq!(summary.chars().count(), SUMMARY_MAX_CHARS);
        assert!(summary.ends_with('…'));
        let exact = "y".repeat(SUMMARY_MAX_CHARS);
        assert_eq!(
            completed_with(json!({"shellToolCall":{"args":{"command":exact.clone()}}})).1,
            exact
        );
    }

    #[test]
    fn tool_outcomes() {
        let failure = |detail: &str| ToolOutcome::Failure {
            detail: Some(detail.into()),
        };
        let cases: Vec<(Value, ToolOutcome)> = vec![
            (json!({"success":{"exitCode":0}}), ToolOutcome::Success),
            (
                json!({"failure":{"command":"x","exitCode":2,"signal":"","stderr":"boom\n","aborted":false}}),
                failure("exit code 2"),
            ),
            (
                json!({"failure":{"signal":"SIGKILL","aborted":true}}),
                failure("signal SIGKILL, aborted"),
            ),
            (
                json!({"failure":{"message":"disk full"}}),
                failure("disk full"),
            ),
            (json!({"failure":{}}), ToolOutcome::Failure { detail: None }),
            (
                json!({"error":{"message":"File not found: x"}}),
                ToolOutcome::Error {
                    message: Some("File not found: x".into()),
                },
            ),
            (
                json!({"error":{"error":{"message":"nested"}}}),
                ToolOutcome::Error {
                    message: Some("nested".into()),
                },
            ),
            (
                json!({"error":"plain text"}),
                ToolOutcome::Error {
                    message: Some("plain text".into()),
                },
            ),
            (
                json!({"rejected":{"reason":"User said no"}}),
                ToolOutcome::Rejected {
                    reason: Some("User said no".into()),
                },
            ),
            (
                json!({"rejected":{}}),
                ToolOutcome::Rejected { reason: None },
            ),
            (json!("rejected"), ToolOutcome::Rejected { reason: None }),
            (json!("Success"), ToolOutcome::Success),
            (json!("failed"), ToolOutcome::Failure { detail: None }),
            (json!(true), ToolOutcome::Success),
            (json!(false), ToolOutcome::Failure { detail: None }),
            (json!({"success":true}), ToolOutcome::Success),
            (
                json!({"success":false}),
                ToolOutcome::Failure { detail: None },
            ),
            (
                json!({"isBackground":false,"failure":{"exitCode":1}}),
                failure("exit code 1"),
            ),
            (json!({"weird":{}}), ToolOutcome::Success),
            (json!({"error":null}), ToolOutcome::Success),
            (json!("something new"), ToolOutcome::Success),
            (
                json!({"rejected":{"reason":"line one\nline two"}}),
                ToolOutcome::Rejected {
                    reason: Some("line one line two".into()),
                },
            ),
        ];
        for (result, expected) in cases {
            let tool_call =
                json!({"shellToolCall":{"args":{"command":"x"},"result":result.clone()}});
            assert_eq!(completed_with(tool_call).2, expected, "{result}");
        }
        // Outcome keys directly in the tool body, and a top-level `"result":"rejected"`.
        assert_eq!(
            completed_with(json!({"shellToolCall":{"args":{},"success":true}})).2,
            ToolOutcome::Success
        );
        assert_eq!(
            completed_with(json!({"shellToolCall":{"args":{},"rejected":{"reason":"no"}}})).2,
            ToolOutcome::Rejected {
                reason: Some("no".into())
            }
        );
        let line = json!({"type":"tool_call","subtype":"completed","call_id":"id","tool_call":{"shellToolCall":{"args":{}}},"result":"rejected"}).to_string();
        assert!(matches!(
            run_lines(false, &[line]).events.as_slice(),
            [StreamEvent::ToolCompleted {
                outcome: ToolOutcome::Rejected { reason: None },
                ..
            }]
        ));
    }

    #[test]
    fn tool_call_ids() {
        let body = json!({"shellToolCall":{"args":{"command":"ls"}}});
        let no_args = json!({"shellToolCall":{"result":{"rejected":{}}}});
        let without_call_id = |tool_call: Value| {
            json!({"type":"tool_call","subtype":"started","tool_call":tool_call}).to_string()
        };
        let input = vec![
            tool("started", "call_1\nfc_1", body.clone()),
            // completed without args: tool and summary come from the start.
            tool("completed", "call_1\nfc_1", no_args.clone()),
            // completed without a start.
            tool("completed", "call_2", body.clone()),
            without_call_id(
                json!({"toolCallId":"sibling\nid","shellToolCall":{"args":{"command":"a"}}}),
            ),
            without_call_id(
                json!({"shellToolCall":{"args":{"command":"b","toolCallId":"inside-args"}}}),
            ),
            without_call_id(json!({"shellToolCall":{"args":{"command":"c"}}})),
        ];
        let run = run_lines(false, &input);
        let rejected = ToolOutcome::Rejected { reason: None };
        assert_eq!(
            run.events,
            vec![
                StreamEvent::ToolStarted {
                    call_id: "call_1\nfc_1".into(),
                    tool: "shell".into(),
                    summary: "ls".into()
                },
                StreamEvent::ToolCompleted {
                    call_id: "call_1\nfc_1".into(),
                    tool: "shell".into(),
                    summary: "ls".into(),
                    outcome: rejected
                },
                StreamEvent::ToolCompleted {
                    call_id: "call_2".into(),
                    tool: "shell".into(),
                    summary: "ls".into(),
                    outcome: ToolOutcome::Success
                },
                StreamEvent::ToolStarted {
                    call_id: "sibling\nid".into(),
                    tool: "shell".into(),
                    summary: "a".into()
                },
                StreamEvent::ToolStarted {
                    call_id: "inside-args".into(),
                    tool: "shell".into(),
                    summary: "b".into()
                },
                StreamEvent::ToolStarted {
                    call_id: "tool-1".into(),
                    tool: "shell".into(),
                    summary: "c".into()
                },
            ]
        );
    }

    #[test]
    fn permission_requests() {
        let cases: &[(Value, &str, &str)] = &[
            (
                json!({"type":"interaction_query","subtype":"request","query_type":"webFetchRequestQuery","query":{"id":3,"webFetchRequestQuery":{"args":{"url":"https://example.com"},"skipApproval":false}}}),
                "webFetchRequestQuery",
                "https://example.com",
            ),
            (
                json!({"type":"interaction_query","subtype":"request","query":{"webSearchRequestQuery":{"args":{"searchTerm":"weather"}},"id":4}}),
                "webSearchRequestQuery",
                "weather",
            ),
            (
                json!({"type":"interaction_query","subtype":"request","query_type":"shellRequestQuery","query":{"id":1,"shellRequestQuery":{"args":{"command":"rm -rf /tmp/x\necho done"}}}}),
                "shellRequestQuery",
                "rm -rf /tmp/x echo done",
            ),
            (
                json!({"type":"interaction_query","subtype":"request"}),
                "unknown",
                "",
            ),
        ];
        for (line, query_type, summary) in cases {
            let run = run_lines(false, &[line.to_string()]);
            assert_eq!(run.permissions(), vec![(*query_type, *summary)], "{line}");
        }
    }

    #[test]
    fn results() {
        let base = json!({"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","request_id":"r","duration_ms":12});
        let with = |patch: Value| {
            let mut line = base.clone();
            if let (Some(line), Some(patch)) = (line.as_object_mut(), patch.as_object()) {
                for (k, v) in patch {
                    line.insert(k.clone(), v.clone());
                }
            }
            run_lines(false, &[line.to_string()])
        };
        let cases: Vec<(Value, bool, Option<Usage>, &str)> = vec![
            (json!({}), true, None, "ok"),
            (json!({"is_error":true}), false, None, ""),
            (json!({"subtype":"error_during_execution"}), false, None, ""),
            (json!({"subtype":null}), false, None, ""),
            (json!({"is_error":"yes"}), true, None, "ok"),
            (
                json!({"usage":{"inputTokens":5}}),
                true,
                Some(Usage {
                    input_tokens: 5,
                    ..Usage::default()
                }),
                "ok",
            ),
            (
                json!({"usage":{"input_tokens":1,"output_tokens":2,"cache_read_tokens":3,"cache_write_tokens":4}}),
                true,
                Some(Usage {
                    input_tokens: 1,
                    output_tokens: 2,
                    cache_read_tokens: 3,
                    cache_write_tokens: 4,
                }),
                "ok",
            ),
            (
                json!({"usage":{"inputTokens":"7","outputTokens":-1,"cacheReadTokens":2.0,"cacheWriteTokens":null}}),
                true,
                Some(Usage {
                    input_tokens: 7,
                    cache_read_tokens: 2,
                    ..Usage::default()
                }),
                "ok",
            ),
            (json!({"usage":"n/a"}), true, None, "ok"),
        ];
        for (patch, success, usage, fallback_text) in cases {
            let run = with(patch.clone());
            let result = run
                .result
                .clone()
                .unwrap_or_else(|| panic!("{patch}: no result"));
            assert_eq!((result.success, result.usage), (success, usage), "{patch}");
            assert_eq!(
                run.text(),
                fallback_text,
                "{patch}: fallback only for a successful turn"
            );
            assert_eq!(
                (result.request_id.as_deref(), result.duration_ms),
                (Some("r"), Some(12))
            );
        }
        // A second result is ignored; the first one stays.
        let mut parser = StreamParser::new(false);
        let mut events = Vec::new();
        parser.push_line(result("first").as_bytes(), &mut events);
        // Emitted at once (the caller stops reading), after its fallback text.
        let first = match events.as_slice() {
            [StreamEvent::Text(text), StreamEvent::Result(first)] if text == "first" => {
                first.clone()
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(first.text, "first");
        parser.push_line(result("second").as_bytes(), &mut events);
        assert_eq!(parser.ignored_lines(), 1);
        assert_eq!(parser.finish(&mut events), Some(first));
        assert_eq!(events.len(), 2);
    }

    #[test]
    fn error_envelope_and_init() {
        let input = [
            r#"{"type":"error","message":"quota exceeded for this workspace"}"#,
            r#"{"type":"error","error":"other shape"}"#,
            r#"{"type":"error"}"#,
            r#"{"type":"system","subtype":"init","session_id":"abc","model":null}"#,
        ];
        assert_eq!(
            run_lines(false, &input).events,
            vec![
                StreamEvent::ErrorEnvelope {
                    message: "quota exceeded for this workspace".into()
                },
                StreamEvent::ErrorEnvelope {
                    message: "other shape".into()
                },
                StreamEvent::ErrorEnvelope {
                    message: String::new()
                },
                StreamEvent::Init {
                    session_id: "abc".into(),
                    model: None
                },
            ]
        );
    }

    fn raw_delta(escaped_text: &str) -> String {
        format!(
            r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"{escaped_text}"}}]}},"session_id":"s","timestamp_ms":1}}"#
        )
    }
    fn raw_thinking(escaped_text: &str) -> String {
        format!(
            r#"{{"type":"thinking","subtype":"delta","text":"{escaped_text}","session_id":"s","timestamp_ms":1}}"#
        )
    }

    #[test]
    fn lone_surrogates_are_repaired() {
        let text = |t: &str| StreamEvent::Text(t.into());
        let think = |t: &str| StreamEvent::Thinking(t.into());
        let cases: Vec<(&str, Vec<String>, Vec<StreamEvent>)> = vec![
            (
                "pair split across two deltas",
                vec![raw_delta(r"smile \ud83d"), raw_delta(r"\ude00 ok")],
                vec![text("smile "), text("😀 ok")],
            ),
            (
                "upper-case hex",
                vec![raw_delta(r"a\uD83D"), raw_delta(r"\uDE00b")],
                vec![text("a"), text("😀b")],
            ),
            (
                "delta holding only the high half",
                vec![raw_delta(r"\ud83d"), raw_delta(r"\ude00")],
                vec![text("😀")],
            ),
            (
                "lone high inside a delta",
                vec![raw_delta(r"a\ud83db")],
                vec![text("a\u{fffd}b")],
            ),
            (
                "lone low inside a delta",
                vec![raw_delta(r"a\ude00b")],
                vec![text("a\u{fffd}b")],
            ),
            (
                "low half with nothing pending",
                vec![raw_delta(r"\ude00x")],
                vec![text("\u{fffd}x")],
            ),
            (
                "high half not followed by its low",
                vec![raw_delta(r"a\ud83d"), delta("next")],
                vec![text("a"), text("\u{fffd}next")],
            ),
            (
                "high half at EOF",
                vec![raw_delta(r"end\ud83d")],
                vec![text("end"), text("\u{fffd}")],
            ),
            (
                "high half then a tool",
                vec![raw_delta(r"a\ud83d"), shell_pair("c")[0].clone()],
                vec![
                    text("a"),
                    text("\u{fffd}"),
                    StreamEvent::ToolStarted {
                        call_id: "c".into(),
                        tool: "shell".into(),
                        summary: "true".into(),
                    },
                ],
            ),
            (
                "thinking pair split across deltas",
                vec![raw_thinking(r"x\ud83e"), raw_thinking(r"\udd14y")],
                vec![think("x"), think("🤔y"), StreamEvent::ThinkingDone],
            ),
            (
                "pending text half, then thinking",
                vec![raw_delta(r"a\ud83d"), thinking("t")],
                vec![
                    text("a"),
                    text("\u{fffd}"),
                    think("t"),
                    StreamEvent::ThinkingDone,
                ],
            ),
            (
                "proper pair needs no repair",
                vec![raw_delta(r"\ud83d\ude00")],
                vec![text("😀")],
            ),
            (
                "two trailing halves are ambiguous",
                vec![format!(
                    r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"a\ud83d"}},{{"type":"text","text":"b\ud83d"}}]}},"timestamp_ms":1}}"#
                )],
                vec![text("a\u{fffd}b\u{fffd}")],
            ),
            (
                "escaped backslash is not an escape",
                vec![raw_delta(r"C:\\ud83d")],
                vec![text(r"C:\ud83d")],
            ),
        ];
        for (label, input, expected) in cases {
            let run = run_lines(true, &input);
            assert_eq!(run.events, expected, "{label}");
            assert_eq!(run.parser.malformed_lines(), 0, "{label}");
        }
        assert_eq!(
            run_lines(true, &[raw_delta(r"\ud83d\ude00")])
                .parser
                .repaired_lines(),
            0
        );
        assert_eq!(
            run_lines(true, &[raw_delta(r"a\ud83d"), raw_delta(r"\ude00")])
                .parser
                .repaired_lines(),
            2
        );

        // Outside text deltas an edge surrogate is just lone: U+FFFD in the summary.
        let line = r#"{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{"shellToolCall":{"args":{"command":"echo \ud83d"}}}}"#;
        assert_eq!(
            run_lines(false, &[line]).started(),
            vec![("shell", "echo \u{fffd}")]
        );
        // And the result text (used as fallback) is repaired the same way.
        let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"x\ud83d"}"#;
        assert_eq!(run_lines(false, &[line]).text(), "x\u{fffd}");
        // A broken line that has nothing to do with surrogates stays malformed.
        assert_eq!(
            run_lines(false, &[r#"{"text":"\ud83d", oops}"#])
                .parser
                .malformed_lines(),
            1
        );
    }

    #[test]
    fn never_panics_on_truncated_or_mutated_lines() {
        let fixtures = [
            "02-partial-output-deltas.jsonl",
            "04-tool-calls-shell-edit-read.jsonl",
            "07-unicode-emoji.jsonl",
            "10-permission-query-rejected.jsonl",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let specials = [
            b'"', b'\\', b'{', b'}', b'[', b']', b':', b',', b'u', b'd', b'8', 0xff, 0xc3, b'\n',
        ];
        for fixture in fixtures {
            let bytes = std::fs::read(format!("{FIXTURES}{fixture}")).unwrap_or_default();
            for partial in [false, true] {
                let mut parser = StreamParser::new(partial);
                let mut events = Vec::new();
                for line in bytes.split(|&b| b == b'\n') {
                    // Every prefix of the line (cut inside escapes and multi-byte characters).
                    for cut in 0..line.len() {
                        parser.push_line(&line[..cut], &mut events);
                    }
                    // Random byte substitutions.
                    for _ in 0..40 {
                        let mut mutated = line.to_vec();
                        for _ in 0..=(next() % 4) {
                            if mutated.is_empty() {
                                break;
                            }
                            let at = (next() % mutated.len() as u64) as usize;
                            mutated[at] = specials[(next() % specials.len() as u64) as usize];
                        }
                        parser.push_line(&mutated, &mut events);
                    }
                    parser.push_line(line, &mut events);
                }
                let _ = parser.finish(&mut events);
            }
        }
    }
}
