//! The prompt protocol's reading of a model's reply (sidecar/src/engine/tools/): the reply's
//! text, cut into chunks where the fuzzer says, goes through the hold-back filter; what it took
//! out is parsed as a block of calls and checked against a fixed tool set.
//!
//! Invariants checked:
//! 1. no panic;
//! 2. nothing is lost or invented: what was shown (and flushed) plus the block is the reply, in
//!    order, but for the whitespace just before the block;
//! 3. the client never sees the marker: the shown text never contains `[TOOL_CALLS:`, and a block,
//!    when one was taken out, starts with it;
//! 4. parsed calls have non-empty names, and a call that validates names an offered tool.
#![no_main]

use cursor_bridge::backend::TextHold;
use cursor_bridge::engine::tools::calls::{parse_block, validate};
use cursor_bridge::engine::tools::prompt_protocol::MARKER;
use cursor_bridge::engine::tools::hold::Hold;
use cursor_bridge::engine::tools::ToolSet;
use cursor_bridge::vocab::{ToolChoice, ToolDefinition};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the chunk size and whether every word is held (a required call).
    let Some((&knobs, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let chunk = 1 + (knobs & 0x0f) as usize;
    let mut hold = Hold::new(knobs & 0x80 != 0);
    let mut shown = String::new();
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(chunk) {
        let piece: String = piece.iter().collect();
        shown.push_str(&hold.push(&piece));
    }
    let flushed = hold.flush();
    let block = hold.block().map(str::to_string);
    assert!(!shown.contains(MARKER), "the marker reached the client: {shown:?}");
    // Held text before the block is flushed after it (a required call holds everything).
    let before = format!("{shown}{flushed}");
    match &block {
        Some(b) => {
            assert!(b.starts_with(MARKER), "a block not starting with the marker: {b:?}");
            // Only whitespace between the text and the block may be dropped.
            assert!(text.starts_with(&before) && text.ends_with(b.as_str()), "text lost or invented");
            assert!(text[before.len()..text.len() - b.len()].trim().is_empty(), "text lost before the block");
        }
        None => assert_eq!(before, text, "text lost or invented"),
    }

    if let Some(block) = block {
        if let Ok(calls) = parse_block(&block) {
            assert!(calls.iter().all(|c| !c.name.is_empty()));
            let set = ToolSet {
                tools: vec![ToolDefinition {
                    name: "create_file".into(),
                    description: String::new(),
                    input_schema: serde_json::json!({"type": "object", "properties": {"filePath": {"type": "string"}},
                        "required": ["filePath"]}),
                }],
                choice: ToolChoice::Auto,
                parallel: true,
            };
            if validate(&calls, &set).is_ok() {
                assert!(calls.iter().all(|c| c.name == "create_file"));
            }
        }
    }
});
