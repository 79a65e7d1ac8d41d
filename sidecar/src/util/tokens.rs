//! Token counts with OpenAI's `o200k_base` encoding (GPT-4o, GPT-5): the estimate `serve` reports
//! when the CLI reports no counts (Cursor's ACP mode). Cursor's models are Claude, GPT and Gemini,
//! each with its own tokenizer, so for a non-GPT model this stays an estimate; it is still far
//! closer than characters / 4, which counts code too low and prose too high.
//!
//! The vocabulary (`o200k_base.tiktoken`, 3.6 MB, the upstream file unchanged) is not in the binary,
//! which has a size budget (docs/performance.md): `cargo xtask dist` ships it beside the binary,
//! and it is read once, at the first count. Where it is missing the counts fall back to
//! characters / 4 and say so ([`Tokenizer::name`]), so a client can tell the two estimates apart.
//!
//! The pieces come from o200k's pre-tokenizer pattern, written out by hand (the binary has no
//! regex engine); Unicode categories are read through `char`'s properties, which agree with the
//! pattern's for letters, numbers and spaces (combining marks that are not alphabetic count as
//! symbols here, a difference of a token at most). Each piece is byte-pair merged as tiktoken does.

use std::collections::HashMap;
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The vocabulary's file name, beside the binary.
pub const VOCABULARY_FILE: &str = "o200k_base.tiktoken";
/// The environment variable naming another vocabulary file (packagers, the tests).
pub const VOCABULARY_ENV: &str = "CURSOR_BRIDGE_TOKENIZER";
/// What counted when the vocabulary was found.
pub const O200K: &str = "o200k_base";
/// What counted when it was not.
pub const CHARS: &str = "chars/4";

/// Longest piece merged as a whole: byte-pair merging is quadratic in a piece's length, and a
/// megabyte of base64 is one piece. Longer pieces are counted in windows of this many bytes
/// (a token or so too many per window).
const WINDOW: usize = 256;

/// Texts at least this long have their counts remembered ([`CACHED`] of them): HTTP clients
/// send the whole conversation with every request, so its earlier messages come again and again.
const CACHE_FROM: usize = 1024;
const CACHED: usize = 4096;

/// The vocabulary: token bytes → rank, and the merge that uses it.
pub struct Tokenizer {
    ranks: Option<Vocabulary>,
    /// Counts of long texts, by their hash (a collision costs an estimate's accuracy, nothing else).
    cache: Mutex<HashMap<u64, u64>>,
}

impl Tokenizer {
    /// Reads a tiktoken vocabulary file (`<base64 token> <rank>` a line).
    pub fn load(path: &Path) -> Result<Tokenizer, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        // Decoded straight into one buffer: 200,000 small allocations would stay in the heap
        // after they were freed.
        let lines = text.lines().filter(|l| !l.is_empty()).count();
        let mut ranks = Vocabulary {
            bytes: Vec::with_capacity(text.len() / 2),
            ends: Vec::with_capacity(lines),
            ranks: Vec::with_capacity(lines),
            slots: Vec::new(),
        };
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
            let bad = || format!("{} line {}: not `<base64> <rank>`", path.display(), n + 1);
            let (token, rank) = line.split_once(' ').ok_or_else(bad)?;
            ranks.ranks.push(rank.parse().map_err(|_| bad())?);
            base64(token, &mut ranks.bytes).ok_or_else(bad)?;
            ranks.ends.push(ranks.bytes.len() as u32);
        }
        if ranks.ends.is_empty() {
            return Err(format!("{}: no tokens", path.display()));
        }
        ranks.index();
        Ok(Tokenizer { ranks: Some(ranks), cache: Mutex::default() })
    }

    /// The fallback: characters / 4.
    pub fn chars() -> Tokenizer {
        Tokenizer { ranks: None, cache: Mutex::default() }
    }

    /// Which estimate this is: [`O200K`] or [`CHARS`].
    pub fn name(&self) -> &'static str {
        if self.ranks.is_some() {
            O200K
        } else {
            CHARS
        }
    }

    /// The token count of `text` (no special tokens: text that spells one is plain text).
    pub fn count(&self, text: &str) -> u64 {
        let Some(ranks) = &self.ranks else {
            return (text.chars().count() as u64).div_ceil(4);
        };
        if text.len() < CACHE_FROM {
            return Self::merged(ranks, text);
        }
        let key = {
            let mut h = Fnv::default();
            h.write(text.as_bytes());
            h.finish()
        };
        if let Some(&n) = crate::util::sync::lock(&self.cache).get(&key) {
            return n;
        }
        let n = Self::merged(ranks, text);
        let mut cache = crate::util::sync::lock(&self.cache);
        if cache.len() >= CACHED {
            cache.clear(); // a new conversation's worth: simpler than an LRU, and as good here
        }
        cache.insert(key, n);
        n
    }

    fn merged(ranks: &Vocabulary, text: &str) -> u64 {
        pieces(text)
            .map(|piece| {
                piece
                    .as_bytes()
                    .chunks(WINDOW)
                    .map(|w| if ranks.get(w).is_some() { 1 } else { merge(ranks, w) })
                    .sum::<u64>()
            })
            .sum()
    }
}

/// The process's tokenizer: the vocabulary at [`VOCABULARY_ENV`], else beside the binary, read at
/// the first call; the characters / 4 fallback (logged once, with where it looked) if it cannot
/// be read.
pub fn shared() -> &'static Tokenizer {
    static SHARED: OnceLock<Tokenizer> = OnceLock::new();
    SHARED.get_or_init(|| {
        let Some(path) = vocabulary_path() else {
            tracing::warn!(
                "token estimates count characters / 4: no path for {VOCABULARY_FILE} (set {VOCABULARY_ENV})"
            );
            return Tokenizer::chars();
        };
        match Tokenizer::load(&path) {
            Ok(t) => {
                tracing::debug!(path = %path.display(), "token estimates use {O200K}");
                t
            }
            Err(e) => {
                tracing::warn!(
                    "token estimates count characters / 4: the {O200K} vocabulary could not be read ({e}); \
                     `cargo xtask dist` puts {VOCABULARY_FILE} beside the binary, {VOCABULARY_ENV} names another"
                );
                Tokenizer::chars()
            }
        }
    })
}

fn vocabulary_path() -> Option<PathBuf> {
    // The library's own tests count with the repository's copy, whatever the environment says.
    if cfg!(test) {
        return Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("assets").join(VOCABULARY_FILE));
    }
    if let Some(p) = std::env::var_os(VOCABULARY_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    Some(std::env::current_exe().ok()?.parent()?.join(VOCABULARY_FILE))
}

/// Token bytes → rank in about 5 MB for o200k's 200,000 tokens (a `HashMap` of boxed slices
/// takes 12): the tokens back to back, and an open-addressing table of their indices.
struct Vocabulary {
    bytes: Vec<u8>,
    /// Token `i` is `bytes[ends[i - 1]..ends[i]]` (from 0 for the first).
    ends: Vec<u32>,
    ranks: Vec<u32>,
    /// Index + 1 of a token, 0 for an empty slot; a power of two, at most half full.
    slots: Vec<u32>,
}

impl Vocabulary {
    /// Fills the table from the tokens.
    fn index(&mut self) {
        self.bytes.shrink_to_fit();
        self.slots = vec![0; (self.ends.len() * 2).next_power_of_two()];
        for i in 0..self.ends.len() {
            let mut slot = self.home(self.token(i));
            while self.slots[slot] != 0 {
                slot = (slot + 1) & (self.slots.len() - 1);
            }
            self.slots[slot] = i as u32 + 1;
        }
    }

    fn home(&self, key: &[u8]) -> usize {
        let mut h = Fnv::default();
        h.write(key);
        h.finish() as usize & (self.slots.len() - 1)
    }

    fn token(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    fn get(&self, key: &[u8]) -> Option<u32> {
        let mut slot = self.home(key);
        loop {
            let i = self.slots[slot].checked_sub(1)? as usize;
            if self.token(i) == key {
                return Some(self.ranks[i]);
            }
            slot = (slot + 1) & (self.slots.len() - 1);
        }
    }
}

/// Byte-pair merging, tiktoken's way: merge the adjacent pair of lowest rank (the leftmost of
/// equals) until no pair is a token; the parts left are the tokens.
fn merge(ranks: &Vocabulary, piece: &[u8]) -> u64 {
    // Start of each part, and the piece's end.
    let mut bounds: Vec<usize> = (0..=piece.len()).collect();
    let rank = |bounds: &[usize], i: usize| bounds.get(i + 2).and_then(|&end| ranks.get(&piece[bounds[i]..end]));
    let mut pair: Vec<Option<u32>> = (0..bounds.len()).map(|i| rank(&bounds, i)).collect();
    loop {
        let best = pair.iter().enumerate().filter_map(|(i, r)| r.map(|r| (r, i))).min();
        let Some((_, i)) = best else { break };
        bounds.remove(i + 1);
        pair.remove(i + 1);
        pair[i] = rank(&bounds, i);
        if i > 0 {
            pair[i - 1] = rank(&bounds, i - 1);
        }
    }
    (bounds.len() - 1) as u64
}

// --- o200k's pre-tokenizer ---------------------------------------------------------------------
//
// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
// |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
// |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+

fn letter(c: char) -> bool {
    c.is_alphabetic()
}
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`: letters that are not lower case.
fn upper(c: char) -> bool {
    c.is_alphabetic() && !c.is_lowercase()
}
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`: letters that are not upper case.
fn lower(c: char) -> bool {
    c.is_alphabetic() && !c.is_uppercase()
}
fn number(c: char) -> bool {
    c.is_numeric()
}
fn newline(c: char) -> bool {
    c == '\r' || c == '\n'
}

/// The pieces of `text`, in order, covering all of it.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let len = piece_len(rest);
        let (piece, tail) = rest.split_at(len);
        rest = tail;
        Some(piece)
    })
}

/// Byte length of the piece at the start of `s` (not empty): the first alternative that matches.
fn piece_len(s: &str) -> usize {
    let ch = |b: usize| s[b..].chars().next();
    // Byte end of the run of `f` characters from byte `from`, and how many there are.
    let run = |from: usize, f: &dyn Fn(char) -> bool| {
        let (mut b, mut n) = (from, 0);
        while let Some(c) = ch(b).filter(|&c| f(c)) {
            b += c.len_utf8();
            n += 1;
        }
        (b, n)
    };
    let first = ch(0).unwrap_or(' ');

    // 1 and 2: a word, with one leading non-letter, non-number (a space, a symbol).
    let lead = if !newline(first) && !letter(first) && !number(first) { first.len_utf8() } else { 0 };
    if ch(lead).is_some_and(letter) {
        let (caps_end, caps) = run(lead, &upper);
        let (tail_end, tail) = run(caps_end, &lower);
        let word_end = if tail > 0 {
            Some(tail_end)
        } else {
            // U*W+ backtracks into the capitals: it ends after the last that is also lower;
            // where none is, alternative 2 (U+W*) takes the capitals alone.
            s[lead..caps_end]
                .char_indices()
                .rev()
                .find(|&(_, c)| lower(c))
                .map(|(i, c)| lead + i + c.len_utf8())
                .or((caps > 0).then_some(caps_end))
        };
        if let Some(e) = word_end {
            return e + contraction(&s[e..]);
        }
    }
    // 3: up to three digits.
    if number(first) {
        return s
            .char_indices()
            .take_while(|&(_, c)| number(c))
            .take(3)
            .map(|(i, c)| i + c.len_utf8())
            .last()
            .unwrap_or(0);
    }
    // 4: symbols, with one leading space, and the line breaks or slashes right after them.
    let symbol = |c: char| !c.is_whitespace() && !letter(c) && !number(c);
    let space = usize::from(first == ' ');
    if ch(space).is_some_and(symbol) {
        let (syms_end, _) = run(space, &symbol);
        return run(syms_end, &|c| newline(c) || c == '/').0;
    }
    // 5, 6, 7: spaces.
    let (spaces_end, spaces) = run(0, &char::is_whitespace);
    if let Some(last_break) = s[..spaces_end].rfind(['\r', '\n']) {
        return last_break + 1;
    }
    if spaces > 1 && spaces_end < s.len() {
        // `\s+(?!\S)`: the last space is left to the word after it.
        let last = s[..spaces_end].chars().next_back().map_or(1, char::len_utf8);
        return spaces_end - last;
    }
    if spaces > 0 {
        return spaces_end;
    }
    first.len_utf8() // the pattern covers every character; this only makes progress regardless
}

/// Bytes of an English contraction at the start of `s` (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`,
/// `'d`, any case).
fn contraction(s: &str) -> usize {
    let b = s.as_bytes();
    if b.first() != Some(&b'\'') {
        return 0;
    }
    let lower = |i: usize| b.get(i).map(u8::to_ascii_lowercase);
    match (lower(1), lower(2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => 2,
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => 3,
        _ => 0,
    }
}

/// Standard base64 with padding, as the vocabulary writes its tokens, appended to `out`.
fn base64(s: &str, out: &mut Vec<u8>) -> Option<()> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let (mut acc, mut bits) = (0u32, 0);
    for &c in s.trim_end_matches('=').as_bytes() {
        acc = (acc << 6) | u32::from(value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(())
}

/// FNV-1a: the vocabulary's keys are short byte strings, hashed millions of times a long prompt.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary() -> Tokenizer {
        Tokenizer::load(&vocabulary_path().unwrap()).unwrap()
    }

    /// tests/fixtures/tokens/o200k.json: texts and tiktoken's own counts of them.
    #[test]
    fn counts_agree_with_tiktoken_on_known_texts() {
        let fixture: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/tokens/o200k.json")).unwrap();
        let t = vocabulary();
        assert_eq!(t.name(), O200K);
        for case in fixture["cases"].as_array().unwrap() {
            let (name, text, want) = (&case["name"], case["text"].as_str().unwrap(), case["tokens"].as_u64().unwrap());
            let got = t.count(text);
            // Exact but for pieces longer than the merge window (a token or so per window).
            let slack = text.len() as u64 / WINDOW as u64;
            assert!(got.abs_diff(want) <= slack, "{name}: {got} tokens, tiktoken counts {want}: {text:?}");
        }
    }

    #[test]
    fn a_long_text_sent_again_is_counted_once() {
        let t = vocabulary();
        let history = "The same earlier message, sent again with every request. ".repeat(40);
        let first = t.count(&history);
        assert_eq!(crate::util::sync::lock(&t.cache).len(), 1);
        assert_eq!((t.count(&history), crate::util::sync::lock(&t.cache).len()), (first, 1));
        assert_eq!(t.count("short"), 1);
        assert_eq!(crate::util::sync::lock(&t.cache).len(), 1, "short texts are not kept");
    }

    #[test]
    fn pieces_cover_the_text_as_the_pattern_cuts_it() {
        let cut = |s| pieces(s).collect::<Vec<_>>();
        assert_eq!(cut("Hello world's  end\n\n  x"), ["Hello", " world's", " ", " end", "\n\n", " ", " x"]);
        assert_eq!(cut("getUserName 12345 (job);\n"), ["get", "User", "Name", " ", "123", "45", " (", "job", ");\n"]);
        assert_eq!(cut("HTTPServer"), ["HTTPServer"]);
    }

    #[test]
    fn without_the_vocabulary_the_count_is_characters_over_four_and_says_so() {
        let missing = Tokenizer::load(Path::new("/nonexistent/o200k_base.tiktoken"));
        assert!(missing.is_err_and(|e| e.contains("/nonexistent/o200k_base.tiktoken")));
        let t = Tokenizer::chars();
        assert_eq!((t.name(), t.count(""), t.count("abcd"), t.count("abcde"), t.count("✓✓")), (CHARS, 0, 1, 2, 1));
    }

    #[test]
    fn a_malformed_vocabulary_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.tiktoken");
        std::fs::write(&path, "IQ== 0\nnot-base64! 1\n").unwrap();
        let err = Tokenizer::load(&path).err().unwrap();
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn the_vocabulary_is_the_upstream_file() {
        // o200k_base.tiktoken as OpenAI publishes it: 199,998 tokens, rank = line.
        let text = std::fs::read_to_string(vocabulary_path().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 199_998);
        assert!(lines.iter().enumerate().all(|(i, l)| l.ends_with(&format!(" {i}"))));
        assert_eq!((lines[0], lines[199_997]), ("IQ== 0", "IGNvY29z 199997"));
    }
}
