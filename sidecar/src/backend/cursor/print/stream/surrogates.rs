//! Lone surrogate repair (docs/cursor-cli.md §4.1, §10 #13).

/// Surrogate halves cut off at the edges of a string value, to be paired across deltas.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Edges {
    /// A lone low surrogate opened a string value (removed from the line).
    pub(super) leading_low: Option<u16>,
    /// A lone high surrogate closed a string value (removed from the line).
    pub(super) trailing_high: Option<u16>,
}

impl Edges {
    pub(super) fn is_empty(&self) -> bool {
        self.leading_low.is_none() && self.trailing_high.is_none()
    }
}

#[derive(Debug)]
pub(super) struct Repaired {
    pub(super) line: String,
    pub(super) edges: Edges,
}

/// Node's `JSON.stringify` writes an unpaired UTF-16 surrogate as an escape (`\ud83d`), which
/// serde_json rejects. If a partial delta ever split a surrogate pair (docs/cursor-cli.md §10 #13:
/// not observed), the high half would end one delta and the low half start the next. This rewrites
/// such a line:
/// * with `keep_edges`, a lone high escape right before a string's closing quote and a lone low
///   escape right after its opening quote are removed and reported in [`Edges`] (only when there
///   is at most one of each; more is ambiguous and treated as below);
/// * every other lone surrogate escape becomes `\ufffd`.
///
/// Returns `None` when the line has no lone surrogate escape (so it is broken some other way).
pub(super) fn repair_lone_surrogates(line: &str, keep_edges: bool) -> Option<Repaired> {
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
                        lones.push(Lone { start: i, unit, edge: at_end.then_some(false) });
                    }
                    0xDC00..=0xDFFF => {
                        let at_start = i == string_start;
                        lones.push(Lone { start: i, unit, edge: at_start.then_some(true) });
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

/// The character of a UTF-16 surrogate pair; U+FFFD if the halves are not a high and a low.
pub(super) fn combine_surrogates(high: u16, low: u16) -> char {
    let high_bits = u32::from(high).checked_sub(0xD800).filter(|&h| h < 0x400);
    let low_bits = u32::from(low).checked_sub(0xDC00).filter(|&l| l < 0x400);
    match (high_bits, low_bits) {
        (Some(h), Some(l)) => char::from_u32(0x10000 + (h << 10) + l),
        _ => None,
    }
    .unwrap_or(char::REPLACEMENT_CHARACTER)
}
