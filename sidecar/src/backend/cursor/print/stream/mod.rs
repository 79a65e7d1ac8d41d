//! Parser for the stdout of `cursor-agent -p --output-format stream-json [--stream-partial-output]`.
//!
//! The wire format is NDJSON, one event per line (docs/cursor-cli.md §4.1, schema §4). This
//! module turns those lines into [`StreamEvent`]s an editor can show as they arrive, plus one
//! [`TurnResult`] for the terminal `result` event. It is pure: no I/O, no logging; the caller feeds
//! lines and reads the counters ([`StreamParser::ignored_lines`] …) to log at debug level.
//!
//! Decisions where docs/cursor-cli.md is unsure (each has a test):
//! * Partial mode (docs/cursor-cli.md §4.7): an `assistant` event is a delta iff it has
//!   `timestamp_ms` and no `model_call_id`. Flushes are reconciled against what was streamed
//!   instead of being dropped blindly: a flush only ever contributes text that was *not* streamed
//!   yet (a segment that had no deltas, or the missing tail of one), so text is never emitted
//!   twice; a flush that contradicts the deltas is dropped. The end-of-turn flush may be the last
//!   segment or the whole response (docs/cursor-cli.md §10 #5); both are recognised (rules in
//!   `StreamParser::reconcile_flush`).
//! * Non-partial mode: every `assistant` event is a whole segment. If a delta-shaped event shows up
//!   anyway (the CLI streamed partials although the caller did not ask), the parser switches to
//!   partial handling for the rest of the turn; in true cumulative output that shape never occurs
//!   (docs/cursor-cli.md §4.6: pre-tool segments carry both fields, the last one neither).
//! * `result.result` is authoritative (docs/cursor-cli.md §4.7): on a successful `result`, text it
//!   holds beyond what was streamed (compared without the inserted paragraph breaks) is emitted as
//!   a last `Text`. With nothing streamed at all that is the whole answer (e.g. `--output-format
//!   json` output).
//! * Lone UTF-16 surrogate escapes (docs/cursor-cli.md §4.1, §10 #13; never observed) are
//!   repaired, see [`repair_lone_surrogates`].
//!
//! The `result` event comes out of [`StreamParser::push_line`] as [`StreamEvent::Result`], after
//! any fallback text, so the caller can stop reading at once (the child may linger,
//! docs/cursor-cli.md §5.3). [`StreamParser::finish`] returns the same value after EOF for callers
//! that prefer that.

mod event;
pub mod invariants;
mod lenient;
mod raw;
mod surrogates;
mod tools;

use std::borrow::Cow;
use std::collections::HashMap;

use crate::vocab::Usage;

pub use event::{StreamEvent, ToolOutcome, TurnResult};
use lenient::Lenient;
use raw::{EventKind, EventWire, ToolCallWire};
use surrogates::{combine_surrogates, repair_lone_surrogates, Edges};
use tools::{describe_tool, outcome_from_word, summarize, tool_display_name, tool_outcome};

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
/// Paragraph breaks: the CLI glues segments without a separator (docs/cursor-cli.md §4.9), which
/// runs sentences together around tool calls. Before the first text of a segment that follows one
/// or more tool calls — and only if text was streamed before — the parser inserts newlines so that
/// exactly one blank line separates the two: `"\n\n"`, or `"\n"`/nothing when the previous text
/// already ends with, or the new text starts with, newlines (only `\n` is counted; `\r` is not
/// special).
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
        match serde_json::from_str::<Lenient<EventWire>>(line) {
            Ok(Lenient(Some(event))) => self.dispatch(event, Edges::default(), out),
            Ok(Lenient(None)) => self.malformed += 1,
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
    /// i.e. the turn failed, docs/cursor-cli.md §5.1).
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
        let Ok(Lenient(Some(event))) = serde_json::from_str::<Lenient<EventWire>>(&repaired.line) else {
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
        match serde_json::from_str::<Lenient<EventWire>>(&plain.line) {
            Ok(Lenient(Some(event))) => self.dispatch(event, Edges::default(), out),
            _ => self.malformed += 1,
        }
    }

    fn dispatch(&mut self, event: EventWire<'_>, edges: Edges, out: &mut Vec<StreamEvent>) {
        if !event.carries_stream_text() {
            self.flush_pending_surrogate(out);
        }
        match event.kind() {
            EventKind::Init => self.on_init(event, out),
            EventKind::Assistant => self.on_assistant(event, edges, out),
            EventKind::ThinkingDelta => {
                if let Some(text) = event.text {
                    self.emit(Channel::Thinking, &text, edges, out);
                }
            }
            EventKind::ThinkingCompleted => self.close_thinking(out),
            EventKind::ToolStarted => self.on_tool_started(event, out),
            EventKind::ToolCompleted => self.on_tool_completed(event, out),
            EventKind::PermissionRequest => self.on_permission_query(event, out),
            EventKind::Result => self.on_result(event, out),
            EventKind::Error => {
                let message = event.message.and_then(|m| m.text).or(event.error);
                out.push(StreamEvent::ErrorEnvelope { message: message.map(Cow::into_owned).unwrap_or_default() });
            }
            EventKind::Other => self.ignored += 1,
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

    /// docs/cursor-cli.md §4.6 (cumulative) and §4.7 (partial).
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
    /// 4. otherwise it contradicts the deltas, and deltas win (the safe rule of
    ///    docs/cursor-cli.md §4.7): nothing.
    fn reconcile_flush<'t>(&self, flush: &'t str, end_of_turn: bool) -> FlushVerdict<'t> {
        let rest = if end_of_turn { self.strip_streamed_prefix(flush) } else { None };
        match rest.or_else(|| flush.strip_prefix(self.segment_text())) {
            Some("") => FlushVerdict::Duplicate,
            Some(unseen) => FlushVerdict::Unseen(unseen),
            None if self.segment_flushed => FlushVerdict::NewSegment,
            None => FlushVerdict::Conflict,
        }
    }

    fn segment_text(&self) -> &str {
        self.segment_start.and_then(|start| self.streamed.get(start..)).unwrap_or("")
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
        let (tool, summary) = describe_tool(&call).unwrap_or_else(|| ("unknown".into(), String::new()));
        self.open_tools.insert(call_id.clone(), (tool.clone(), summary.clone()));
        out.push(StreamEvent::ToolStarted { call_id, tool, summary });
    }

    fn on_tool_completed(&mut self, event: EventWire<'_>, out: &mut Vec<StreamEvent>) {
        self.close_thinking(out);
        self.tool_boundary();
        let call = event.tool_call.unwrap_or_default();
        let call_id = self.call_id(event.call_id, &call);
        let described = describe_tool(&call);
        let started = self.open_tools.remove(&call_id);
        let (tool, summary) = match (described, started) {
            (Some((tool, summary)), Some((_, started_summary))) if summary.is_empty() => (tool, started_summary),
            (Some(described), _) => described,
            (None, Some(started)) => started,
            (None, None) => ("unknown".into(), String::new()),
        };
        // A top-level `"result":"rejected"` string is one of the liberal forms
        // (docs/cursor-cli.md §4.8).
        let outcome = tool_outcome(&call.body)
            .or_else(|| event.result.as_deref().and_then(outcome_from_word))
            .unwrap_or(ToolOutcome::Success);
        out.push(StreamEvent::ToolCompleted { call_id, tool, summary, outcome });
    }

    fn on_permission_query(&mut self, event: EventWire<'_>, out: &mut Vec<StreamEvent>) {
        let query = *event.query.unwrap_or_default();
        let query_type = event.query_type.or(query.kind).unwrap_or(Cow::Borrowed("unknown"));
        // `shellRequestQuery` → shell, `webFetchRequestQuery` → webFetch
        // (docs/cursor-cli.md §4.10).
        let short =
            query_type.strip_suffix("RequestQuery").or_else(|| query_type.strip_suffix("Query")).unwrap_or(&query_type);
        let summary = summarize(&tool_display_name(short), &query.args);
        out.push(StreamEvent::PermissionRequested { query_type: query_type.into_owned(), summary });
    }

    fn on_result(&mut self, event: EventWire<'_>, out: &mut Vec<StreamEvent>) {
        if self.result.is_some() {
            self.ignored += 1; // "exactly one result" (docs/cursor-cli.md §4.9); keep the first
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
        if let Some(id) =
            top_level.or_else(|| call.tool_call_id.clone()).or_else(|| call.body.args.tool_call_id.clone())
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
                self.emit_piece(pending_channel, String::from(char::REPLACEMENT_CHARACTER), out);
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

use crate::util::text::paragraph_break;

#[cfg(test)]
mod tests;
