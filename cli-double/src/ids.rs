//! Random identifiers shaped like the real CLI's: UUIDv4 session/request ids, `model_call_id`
//! suffixes and `call_id`s with their embedded newline.
//!
//! Randomness comes from `/dev/urandom` (no extra crate). If it cannot be read (odd sandboxes,
//! non-Unix hosts) a time/pid-seeded xorshift keeps ids unique enough for tests instead of panicking.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static FALLBACK_STATE: AtomicU64 = AtomicU64::new(0);

/// `n` random bytes.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    let filled = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)).is_ok();
    if !filled {
        for b in &mut buf {
            *b = fallback_next() as u8;
        }
    }
    buf
}

fn fallback_next() -> u64 {
    let mut x = FALLBACK_STATE.load(Ordering::Relaxed);
    if x == 0 {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
        x = nanos ^ (u64::from(std::process::id()) << 32) | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    FALLBACK_STATE.store(x, Ordering::Relaxed);
    x
}

/// A random RFC 4122 version-4 UUID, lower-case, hyphenated.
pub fn uuid_v4() -> String {
    let mut b = random_bytes(16);
    b[6] = (b[6] & 0x0f) | 0x40; // version 4
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

fn from_alphabet(alphabet: &[u8], n: usize) -> String {
    random_bytes(n).iter().map(|b| alphabet[usize::from(*b) % alphabet.len()] as char).collect()
}

/// Random lower-case hex digits.
pub fn hex(n: usize) -> String {
    from_alphabet(b"0123456789abcdef", n)
}

/// `<request_id>-<n>-<4 chars>`, e.g. `5bf03e32-...-0-otyz`.
pub fn model_call_id(request_id: &str, n: usize) -> String {
    format!("{request_id}-{n}-{}", from_alphabet(b"abcdefghijklmnopqrstuvwxyz0123456789", 4))
}

/// A tool `call_id` in the 2026 OpenAI-style shape `call_<24 chars>\nfc_<50 hex>` — the newline is
/// deliberate: real ids contain it and drivers must cope.
pub fn tool_call_id() -> String {
    let alnum = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    format!("call_{}\nfc_0d2609f619ccdca801698ca0{}", from_alphabet(alnum, 24), hex(26))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_has_v4_shape() {
        let u = uuid_v4();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(u, uuid_v4());
    }

    #[test]
    fn call_id_contains_newline() {
        let id = tool_call_id();
        assert!(id.starts_with("call_") && id.contains("\nfc_"));
        assert_eq!(id.len(), 5 + 24 + 4 + 50);
    }
}
