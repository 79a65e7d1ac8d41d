//! `parse_model_list` and `strip_ansi` (the output of `agent models`) fed arbitrary text. Bytes
//! that are not UTF-8 are replaced (`from_utf8_lossy`), as a caller reading the child's stdout would.
//!
//! Invariants checked:
//! 1. no panic;
//! 2. `strip_ansi` leaves no ESC, no 8-bit CSI (U+009B) and no 8-bit OSC (U+009D), so it is
//!    idempotent (stripping again borrows and changes nothing); text without them is borrowed;
//! 3. `Ok(models)`: non-empty list; ids non-empty, unique, `[A-Za-z0-9][A-Za-z0-9._:/-]*`; names
//!    non-empty and trimmed;
//! 4. `Unrecognised` excerpts: at most 200 characters, no control characters.
#![no_main]

use std::borrow::Cow;
use std::collections::HashSet;

use cursor_bridge::backend::cursor::models::{parse_model_list, ModelListError};
use cursor_bridge::util::text::strip_ansi;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let input = String::from_utf8_lossy(data);

    let stripped = strip_ansi(&input);
    assert!(
        !stripped.contains(['\u{1b}', '\u{9b}', '\u{9d}']),
        "escape left in {stripped:?}"
    );
    if !input.contains(['\u{1b}', '\u{9b}', '\u{9d}']) {
        assert!(matches!(stripped, Cow::Borrowed(_)));
    }
    assert!(matches!(strip_ansi(&stripped), Cow::Borrowed(s) if s == stripped));

    match parse_model_list(&input) {
        Ok(models) => {
            assert!(!models.is_empty(), "Ok(empty list)");
            let mut seen = HashSet::new();
            for m in &models {
                assert!(!m.id.is_empty(), "empty id: {m:?}");
                assert!(
                    m.id.starts_with(|c: char| c.is_ascii_alphanumeric()),
                    "{m:?}"
                );
                assert!(
                    m.id.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._:/-".contains(c)),
                    "bad id char: {m:?}"
                );
                assert!(seen.insert(m.id.as_str()), "duplicate id {:?}", m.id);
                assert!(
                    !m.name.is_empty() && m.name.trim() == m.name,
                    "bad name: {m:?}"
                );
            }
        }
        Err(ModelListError::Unrecognised { excerpt }) => {
            assert!(excerpt.chars().count() <= 200, "excerpt too long");
            assert!(
                !excerpt.chars().any(char::is_control),
                "control char in {excerpt:?}"
            );
        }
        Err(ModelListError::AuthRequired | ModelListError::NoModels) => {}
    }
});
