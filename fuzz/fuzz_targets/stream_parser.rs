//! `StreamParser` (the CLI's `stream-json` NDJSON) fed arbitrary bytes split into lines at `\n`,
//! once in cumulative and once in partial mode. Seeds: the fixture transcripts, whole.
//!
//! Invariants checked: those of `cursor_bridge::backend::cursor::print::stream::invariants` (no
//! panic; `Text` events == `streamed_text()`, nothing empty; at most one `Result`, the one
//! `finish()` returns; `ThinkingDone` only closes an open block). The golden and regression tests
//! of the parser run every fixture through the same check.
#![no_main]

use cursor_bridge::backend::cursor::print::stream::invariants::run_checked;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for partial in [false, true] {
        run_checked(data.split(|&b| b == b'\n'), partial);
    }
});
