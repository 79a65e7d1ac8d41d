//! The promises the parser keeps for any input, checked in one place: the fuzz target
//! (`fuzz/fuzz_targets/stream_parser.rs`) runs arbitrary bytes through [`run_checked`], and the
//! golden and regression tests (`tests.rs`) run every fixture through it, so a rule added here
//! guards both at once.
//!
//! 1. no panic (`push_line` documents "never panics" for any bytes);
//! 2. the concatenated `Text` events equal `streamed_text()`, after every line and after
//!    `finish()`, which only ever adds a U+FFFD for a held-back lone surrogate (after a paragraph
//!    break when it opens a segment that follows tool calls); no `Text` or `Thinking` is empty;
//! 3. at most one `Result` event, and `finish()` returns that same result (or `None` without one);
//! 4. `ThinkingDone` only closes an open thinking block: never two without `Thinking` between,
//!    never before the first `Thinking`; after `finish()` no thinking block is left open.
//!
//! A broken rule panics with its number and the events so far: that is what the fuzzer reports.

use super::{StreamEvent, StreamParser, TurnResult};

/// What a checked run produced.
pub struct Checked {
    pub events: Vec<StreamEvent>,
    pub result: Option<TurnResult>,
    pub parser: StreamParser,
}

/// Feeds `lines` (each without its `\n`) to a new parser, then `finish()`, checking every rule of
/// the module docs on the way.
pub fn run_checked<'a>(lines: impl IntoIterator<Item = &'a [u8]>, partial: bool) -> Checked {
    let mut parser = StreamParser::new(partial);
    let mut events = Vec::new();
    let mut text = String::new();
    for line in lines {
        let from = events.len();
        parser.push_line(line, &mut events);
        for event in &events[from..] {
            if let StreamEvent::Text(t) = event {
                assert!(!t.is_empty(), "rule 2: an empty Text event (partial={partial}): {events:?}");
                text.push_str(t);
            }
        }
        assert_eq!(text, parser.streamed_text(), "rule 2: Text events != streamed_text() (partial={partial})");
    }
    let from = events.len();
    let result = parser.finish(&mut events);
    for event in &events[from..] {
        if let StreamEvent::Text(t) = event {
            assert!(
                t == "\u{fffd}" || t == "\n\n\u{fffd}",
                "rule 2: finish() emitted text other than a replacement character: {t:?} (partial={partial})"
            );
            text.push_str(t);
        }
    }
    assert_eq!(
        text,
        parser.streamed_text(),
        "rule 2: Text events != streamed_text() after finish() (partial={partial})"
    );

    let results: Vec<&TurnResult> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Result(r) => Some(r),
            _ => None,
        })
        .collect();
    assert!(results.len() <= 1, "rule 3: {} Result events (partial={partial})", results.len());
    assert_eq!(results.first().copied(), result.as_ref(), "rule 3: finish() != the Result emitted (partial={partial})");

    let mut thinking_open = false;
    for event in &events {
        match event {
            StreamEvent::Thinking(t) => {
                assert!(!t.is_empty(), "rule 2: an empty Thinking event (partial={partial}): {events:?}");
                thinking_open = true;
            }
            StreamEvent::ThinkingDone => {
                assert!(
                    thinking_open,
                    "rule 4: ThinkingDone without an open thinking block (partial={partial}): {events:?}"
                );
                thinking_open = false;
            }
            _ => {}
        }
    }
    assert!(!thinking_open, "rule 4: a thinking block left open after finish() (partial={partial}): {events:?}");
    Checked { events, result, parser }
}
