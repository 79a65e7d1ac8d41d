//! The promises the frame codec keeps for any bytes, checked in one place: the fuzz target
//! (`fuzz/fuzz_targets/frame_codec.rs`) runs every input through [`check_input`], and the
//! regression test below runs every `frame-codec-*` fixture (`mod.rs` has a test of its own for
//! each) through [`check_stream`], so a rule added here guards both at once. `FrameCodec` (LSP `Content-Length` framing) is fed
//! arbitrary bytes, split at chosen points.
//!
//! The fuzz input's layout (all of it fuzzer-controlled; seeds in `fuzz/seeds/frame_codec/` start
//! with two ASCII characters so they stay readable):
//! * byte 0: low 3 bits pick the frame cap from `CAPS`; bits 3–4 pick a padding mode that makes
//!   the stream longer than the 8 KiB header-block limit without needing a 9 KB input;
//! * byte 1: `k = byte % 16` chunk lengths follow (0 = feed the whole stream at once);
//! * `k` bytes: chunk lengths, used cyclically (0 counts as 1);
//! * the rest: "garbage", which is followed by `\r\n\r\n` and one valid sentinel frame.
//!
//! Invariants checked:
//! 1. no panic; `decode`/`decode_eof` never return an `io::Error`;
//! 2. progress: every item `decode` yields consumes at least one byte (so the `while let Some`
//!    loop of `FramedRead` terminates), and `decode_eof` yields at most one item that consumes
//!    nothing;
//! 3. no `Ok` frame is longer than the cap; `TooLarge` reports a length above the cap;
//! 4. recovery: the sentinel frame appended after the garbage is the last item, ending at the end
//!    of the stream, unless the garbage ends in a frame header whose body legitimately claims the
//!    sentinel's bytes (see `swallowed`). No decoder can tell such a header from a real one whose
//!    body is still coming, so that case is not a bug (README.md);
//! 5. chunking does not matter for the valid frames: the sentinel outcome is the same whether the
//!    stream arrives in one piece or in the fuzzer's chunks.

use tokio_util::bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use super::{FrameCodec, FrameError, DEFAULT_MAX_FRAME};

const SENTINEL: &[u8] = br#"{"jsonrpc":"2.0","method":"fuzz/sentinel"}"#;
const CAPS: [usize; 8] = [DEFAULT_MAX_FRAME, SENTINEL.len(), 0, 1, 16, 256, 4096, 65536];
/// Longer than the codec's 8 KiB header-block limit.
const PAD: usize = 9000;

#[derive(Debug)]
struct Item {
    item: Result<Vec<u8>, FrameError>,
    /// Stream offset just after the bytes this item consumed.
    end: usize,
    /// Yielded by `decode_eof` after `decode` had returned `None`: the stream ended mid-frame.
    at_eof: bool,
}

/// One fuzz input (the layout above), decoded and checked.
pub fn check_input(data: &[u8]) {
    let Some((&ctl, rest)) = data.split_first() else {
        return;
    };
    let cap = CAPS[usize::from(ctl & 7)];
    let (chunks, garbage) = match rest.split_first() {
        Some((&k, rest)) => {
            let k = usize::from(k % 16).min(rest.len());
            rest.split_at(k)
        }
        None => (&[][..], rest),
    };
    let garbage: Vec<u8> = match (ctl >> 3) & 3 {
        1 => [vec![b'z'; PAD], garbage.to_vec()].concat(),
        2 if !garbage.is_empty() => garbage.iter().copied().cycle().take(PAD.max(garbage.len())).collect(),
        _ => garbage.to_vec(),
    };

    check_stream(&garbage, chunks, cap);
}

/// `garbage`, then `\r\n\r\n` and one valid sentinel frame, decoded as one read and in reads of
/// `chunks`' lengths (cyclically; empty: one read), each checked against every rule above.
pub fn check_stream(garbage: &[u8], chunks: &[u8], cap: usize) {
    let mut stream = garbage.to_vec();
    stream.extend_from_slice(b"\r\n\r\n");
    let mut frame = BytesMut::new();
    FrameCodec::new(cap).encode(SENTINEL, &mut frame).unwrap();
    stream.extend_from_slice(&frame);

    let chunked = decode(&stream, chunks, cap);
    check(&chunked, garbage, stream.len(), cap);
    if !chunks.is_empty() {
        let whole = decode(&stream, &[], cap);
        check(&whole, garbage, stream.len(), cap);
        assert_eq!(
            recovered(&chunked, stream.len()),
            recovered(&whole, stream.len()),
            "chunking changed whether the sentinel was recovered\nchunked: {chunked:?}\nwhole: {whole:?}"
        );
    }
}

/// Feeds `stream` the way `FramedRead` does: append a chunk, `decode` until `None`; at EOF
/// `decode_eof` until `None`.
fn decode(stream: &[u8], chunk_lens: &[u8], cap: usize) -> Vec<Item> {
    let mut codec = FrameCodec::new(cap);
    let mut buf = BytesMut::new();
    let mut fed = 0;
    let mut items = Vec::new();
    let mut lens = chunk_lens.iter().cycle();
    while fed < stream.len() {
        let n = match lens.next() {
            Some(&n) => usize::from(n).max(1).min(stream.len() - fed),
            None => stream.len(),
        };
        buf.extend_from_slice(&stream[fed..fed + n]);
        fed += n;
        loop {
            let before = buf.len();
            let Some(item) = codec.decode(&mut buf).expect("decode never fails") else {
                break;
            };
            assert!(buf.len() < before, "decode yielded {item:?} without consuming a byte");
            items.push(Item { item, end: fed - buf.len(), at_eof: false });
        }
    }
    let mut idle = 0;
    loop {
        let before = buf.len();
        let Some(item) = codec.decode_eof(&mut buf).expect("decode_eof never fails") else {
            break;
        };
        if buf.len() == before {
            idle += 1;
            assert!(idle <= 1, "decode_eof keeps yielding without consuming: {item:?}");
        }
        assert!(
            matches!(item, Err(FrameError::Malformed(_))),
            "decode_eof yielded {item:?} after decode had returned None"
        );
        items.push(Item { item, end: fed - buf.len(), at_eof: true });
    }
    assert!(buf.is_empty(), "decode_eof left {} bytes", buf.len());
    items
}

fn check(items: &[Item], garbage: &[u8], total: usize, cap: usize) {
    for it in items {
        match &it.item {
            Ok(body) => assert!(body.len() <= cap, "frame of {} bytes over the cap {cap}", body.len()),
            Err(FrameError::TooLarge { length, max }) => {
                assert_eq!(*max, cap);
                assert!(length > max, "TooLarge for {length} <= {max}");
            }
            Err(FrameError::Malformed(_)) => {}
        }
    }
    if cap < SENTINEL.len() {
        return; // the sentinel itself is too large: nothing to recover
    }
    if !swallowed(items, garbage.len(), total) {
        assert!(
            recovered(items, total),
            "valid frame after {} bytes of garbage was not recovered: {:?}",
            garbage.len(),
            items.iter().rev().take(4).collect::<Vec<_>>()
        );
    }
}

/// Whether a header in the garbage legitimately claimed the sentinel frame's bytes as its body:
/// an `Ok` frame that ends inside the sentinel frame (eating the `\r\n\r\n` before it is harmless),
/// a body still incomplete at EOF, or an oversized frame whose body (skipped by count, never
/// searched) reaches into the sentinel frame.
fn swallowed(items: &[Item], garbage_len: usize, total: usize) -> bool {
    let sentinel_start = garbage_len + 4;
    items.iter().any(|it| match &it.item {
        Ok(body) => it.end > sentinel_start && !(it.end == total && body == SENTINEL),
        Err(FrameError::Malformed(why)) => it.at_eof && why.contains("inside a frame body"),
        Err(FrameError::TooLarge { length, .. }) => it.end.saturating_add(*length) > sentinel_start,
    })
}

/// The sentinel frame came out as the last item, ending exactly at the end of the stream.
fn recovered(items: &[Item], total: usize) -> bool {
    matches!(items.last(), Some(Item { item: Ok(body), end, .. }) if body == SENTINEL && *end == total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every regression input of the fuzz target, as the garbage before a valid frame, through
    /// the fuzz target's own rules (`invariants.rs`), in one read and in many.
    #[test]
    fn every_frame_codec_regression_keeps_the_fuzz_targets_rules() {
        let dir = format!("{}/tests/fixtures/fuzz-regressions", env!("CARGO_MANIFEST_DIR"));
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("frame-codec-") {
                continue;
            }
            let garbage = std::fs::read(entry.path()).unwrap();
            for cap in [DEFAULT_MAX_FRAME, 1024, 16] {
                for chunks in [&[][..], &[1][..], &[7, 3, 200][..]] {
                    check_stream(&garbage, chunks, cap);
                }
            }
            checked += 1;
        }
        assert!(checked >= 2, "the frame-codec regressions are in {dir}");
    }
}
