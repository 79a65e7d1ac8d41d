//! `StreamParser` (the CLI's `stream-json` NDJSON) fed arbitrary bytes split into lines at `\n`,
//! once in cumulative and once in partial mode. Seeds: the fixture transcripts, whole.
//!
//! Invariants checked:
//! 1. no panic (push_line documents "never panics" for any bytes);
//! 2. the concatenated `Text` events equal `streamed_text()`, after every line and after
//!    `finish()` (which only ever adds a U+FFFD for a held-back lone surrogate, after a paragraph
//!    break when it opens a segment that follows tool calls); no `Text` event
//!    is empty;
//! 3. at most one `Result` event, and `finish()` returns that same result (or `None` without one);
//! 4. `ThinkingDone` only closes an open thinking block: never two without `Thinking` in between,
//!    never before the first `Thinking`; after `finish()` no thinking block is left open.
#![no_main]

use cursor_bridge::backend::cursor::print::stream::{StreamEvent, StreamParser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for partial in [false, true] {
        run(data, partial);
    }
});

fn run(data: &[u8], partial: bool) {
    let mut parser = StreamParser::new(partial);
    let mut events = Vec::new();
    let mut text = String::new();
    for line in data.split(|&b| b == b'\n') {
        let from = events.len();
        parser.push_line(line, &mut events);
        for event in &events[from..] {
            if let StreamEvent::Text(t) = event {
                assert!(!t.is_empty(), "empty Text event");
                text.push_str(t);
            }
        }
        assert_eq!(
            text,
            parser.streamed_text(),
            "Text events != streamed_text()"
        );
    }
    let from = events.len();
    let finished = parser.finish(&mut events);
    for event in &events[from..] {
        // finish() may resolve a held-back lone high surrogate as U+FFFD; when that is the first
        // text after tool calls, the paragraph break comes with it.
        if let StreamEvent::Text(t) = event {
            assert!(
                t == "\u{fffd}" || t == "\n\n\u{fffd}",
                "finish() emitted text other than a replacement character: {t:?}"
            );
            text.push_str(t);
        }
    }
    assert_eq!(
        text,
        parser.streamed_text(),
        "Text events != streamed_text() after finish()"
    );

    let results: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Result(r) => Some(r),
            _ => None,
        })
        .collect();
    assert!(results.len() <= 1, "{} Result events", results.len());
    assert_eq!(
        results.first().copied(),
        finished.as_ref(),
        "finish() != emitted Result"
    );

    let mut thinking_open = false;
    for e in &events {
        match e {
            StreamEvent::Thinking(t) => {
                assert!(!t.is_empty(), "empty Thinking event");
                thinking_open = true;
            }
            StreamEvent::ThinkingDone => {
                assert!(
                    thinking_open,
                    "ThinkingDone without an open thinking block: {events:?}"
                );
                thinking_open = false;
            }
            _ => {}
        }
    }
    assert!(
        !thinking_open,
        "thinking block left open after finish(): {events:?}"
    );
}
