//! Text helpers shared by every layer: cutting to a length, one-line summaries, case-insensitive
//! search, and removing terminal escapes. Each exists once, here.

use std::borrow::Cow;

/// FNV-1a of `text`: stable across Rust releases and machines (std's hasher is not), for names
/// and hashes that are persisted.
pub fn fnv1a(text: &str) -> u64 {
    let mut h = Fnv::default();
    h.write(text);
    h.h
}

/// FNV-1a fed in pieces.
#[derive(Debug, Clone, Copy)]
pub struct Fnv {
    h: u64,
    fed: bool,
}

impl Default for Fnv {
    fn default() -> Self {
        Fnv { h: 0xcbf2_9ce4_8422_2325, fed: false }
    }
}

impl Fnv {
    pub fn write(&mut self, text: &str) {
        for b in text.as_bytes() {
            self.h ^= u64::from(*b);
            self.h = self.h.wrapping_mul(0x0100_0000_01b3);
        }
        self.fed |= !text.is_empty();
    }

    /// Feed `text` without its whitespace (an answer's identity survives re-wrapping).
    pub fn write_non_whitespace(&mut self, text: &str) {
        let mut buf = [0u8; 4];
        for c in text.chars().filter(|c| !c.is_whitespace()) {
            self.write(c.encode_utf8(&mut buf));
        }
    }

    /// The hash, or `None` when nothing (or only empty text) was fed.
    pub fn finish_non_empty(&self) -> Option<u64> {
        self.fed.then_some(self.h)
    }
}

/// At most `max` characters of `s` (cut at a char boundary, no marker).
pub fn cut_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// `text` on one line (control characters as spaces), at most `max_chars` characters, ending in
/// `…` when cut.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let mut line: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).take(max_chars).collect();
    if text.chars().count() > max_chars {
        line.pop();
        line.push('…');
    }
    line
}

/// The last `max_chars` characters of `text` (starting with `…` when cut), `None` when empty.
pub fn bounded_tail(text: &str, max_chars: usize) -> Option<String> {
    if text.is_empty() {
        return None;
    }
    let count = text.chars().count();
    if count <= max_chars {
        return Some(text.to_owned());
    }
    let tail: String = text.chars().skip(count - (max_chars - 1)).collect();
    Some(format!("…{tail}"))
}

/// Byte offset of the first ASCII-case-insensitive match of `needle` (which must be ASCII, so
/// the offset is a char boundary).
pub fn find_ignore_case(haystack: &str, needle: &str) -> Option<usize> {
    let needle = needle.as_bytes();
    if needle.is_empty() {
        return Some(0);
    }
    haystack.as_bytes().windows(needle.len()).position(|w| w.eq_ignore_ascii_case(needle))
}

pub fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
    find_ignore_case(haystack, needle).is_some()
}

/// Removes terminal escape sequences (the CLI colours its output when `FORCE_COLOR` is inherited):
/// CSI (`ESC [` params/intermediates, final byte 0x40–0x7E; also the 8-bit `0x9B` form), OSC /
/// DCS / SOS / PM / APC strings (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _`, 8-bit `0x9D`; ended
/// by BEL, `ESC \` or 8-bit ST), and two/three-character escapes (`ESC 7`, `ESC ( B`). An
/// unterminated string sequence stops at the end of its line, so it cannot swallow the rest of
/// the output; a lone trailing ESC is dropped. Text without ESC/0x9B/0x9D is returned borrowed.
pub fn strip_ansi(s: &str) -> Cow<'_, str> {
    if !s.contains(['\u{1b}', '\u{9b}', '\u{9d}']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek().copied() {
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_control_string(&mut chars);
                }
                Some(' '..='/') => {
                    // nF: intermediates, then one final byte.
                    while chars.next_if(|c| matches!(c, ' '..='/')).is_some() {}
                    chars.next_if(|c| matches!(c, '0'..='~'));
                }
                Some('0'..='~') => {
                    chars.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' => skip_control_string(&mut chars),
            other => out.push(other),
        }
    }
    Cow::Owned(out)
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_csi(chars: &mut Chars<'_>) {
    while chars.next_if(|c| matches!(c, ' '..='?')).is_some() {}
    chars.next_if(|c| matches!(c, '@'..='~'));
}

fn skip_control_string(chars: &mut Chars<'_>) {
    while let Some(&c) = chars.peek() {
        match c {
            '\u{7}' | '\u{9c}' => {
                chars.next();
                return;
            }
            '\u{1b}' => {
                let mut ahead = chars.clone();
                ahead.next();
                if ahead.peek() == Some(&'\\') {
                    chars.next();
                    chars.next();
                }
                return; // an ESC that is not ST starts the next sequence
            }
            '\n' => return,
            _ => {
                chars.next();
            }
        }
    }
}

/// Newlines to insert between `before` and `after` so that one blank line separates them (an
/// agent glues text segments around tool calls without one).
pub fn paragraph_break(before: &str, after: &str) -> &'static str {
    let trailing = before.bytes().rev().take_while(|&b| b == b'\n').count().min(2);
    let leading = after.bytes().take_while(|&b| b == b'\n').count().min(2);
    match trailing + leading {
        0 => "\n\n",
        1 => "\n",
        _ => "",
    }
}
