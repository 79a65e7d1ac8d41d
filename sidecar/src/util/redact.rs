//! Credential-looking words replaced by `[redacted]` before text reaches a log or an error's
//! detail (the CLI's stderr can echo a key), and secrets compared without a timing leak.

use std::borrow::Cow;

const REDACTED: &str = "[redacted]";
/// Prefixes of credential formats: Cursor (`key_`, `crsr_`), OpenAI-style (`sk-`, `sk_`), JWTs.
const SECRET_PREFIXES: &[&str] = &["key_", "crsr_", "sk-", "sk_", "eyJ"];
/// A word ending like this announces a secret in the next word (`CURSOR_API_KEY=…`,
/// `Authorization: Bearer …`, `"token":"…"`, `--api-key …`).
const SECRET_KEYWORDS: &[&str] =
    &["key", "token", "secret", "password", "passwd", "bearer", "authorization", "credential", "credentials"];

fn is_secret_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+' | '/' | '~')
}

/// Long enough and mixed enough to be a credential rather than a word.
fn looks_random(word: &str) -> bool {
    let has_digit = word.bytes().any(|b| b.is_ascii_digit());
    let has_letter = word.bytes().any(|b| b.is_ascii_alphabetic());
    (word.len() >= 16 && has_digit && has_letter) || word.len() >= 32
}

/// Replaces credential-looking words with `[redacted]`: words with a known secret prefix
/// followed by a random-looking rest, and random-looking words right after a key/token word
/// (separated only by spaces, `:`, `=` or quotes).
pub fn redact_secrets(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut previous_word: Option<(usize, usize)> = None; // byte range of the previous word
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if !is_secret_char(c) {
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, next)) = chars.peek() {
            if !is_secret_char(next) {
                break;
            }
            end = i + next.len_utf8();
            chars.next();
        }
        let word = &text[start..end];
        let prefixed = SECRET_PREFIXES.iter().any(|prefix| word.strip_prefix(prefix).is_some_and(looks_random));
        let announced = previous_word.is_some_and(|(p_start, p_end)| {
            let separator = &text[p_end..start];
            let previous = text[p_start..p_end].to_ascii_lowercase();
            separator.len() <= 4
                && separator.chars().all(|c| matches!(c, ' ' | '\t' | ':' | '=' | '"' | '\''))
                && SECRET_KEYWORDS.iter().any(|keyword| previous.ends_with(keyword))
                && looks_random(word)
        });
        if prefixed || announced {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = end;
        }
        previous_word = Some((start, end));
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Compares without an early exit, so the time taken does not tell an attacker how many leading
/// bytes of a guess were right. (The length may show; a key's length is not the secret.)
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= u64::from(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

/// The bearer token of an `Authorization` header value (scheme case-insensitive).
pub fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_whole_keys() {
        assert!(constant_time_eq(b"secret-key", b"secret-key"));
        assert!(!constant_time_eq(b"secret-key", b"secret-kez"));
        assert!(!constant_time_eq(b"secret-key", b"secret-key-longer"));
        assert!(!constant_time_eq(b"secret", b""));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn bearer_tokens() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("abc"), None);
    }
}
