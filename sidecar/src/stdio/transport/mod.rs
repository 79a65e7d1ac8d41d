//! LSP base-protocol framing: `Content-Length: N\r\n\r\n` followed by N bytes of UTF-8 JSON.
//!
//! The decoder never gives up on a stream: malformed headers, oversized frames and garbage between
//! frames come out as [`FrameError`] items, and decoding resumes at the next header. That is what
//! keeps the sidecar alive when a client (or a human at a terminal) sends something odd.
//!
//! An oversized frame's header is valid, so its length is trusted: the body is counted off as it
//! arrives and never searched (a body holding `Content-Length:` text, a pasted log or a hostile
//! one, must not turn into frames). Only bytes that are not a header are searched for the next one.

pub mod invariants;

use crate::util::text::cut_chars;
use bytes_helpers::{find, find_ignore_ascii_case};
use tokio_util::bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// Default cap for one frame. A Copilot request with a long history is a few MiB; 64 MiB leaves
/// room for pasted files while keeping a bogus `Content-Length` from exhausting memory.
pub const DEFAULT_MAX_FRAME: usize = 64 * 1024 * 1024;

/// A header block (everything before the blank line) longer than this is garbage. Only this much
/// of the buffer is ever searched for the blank line, so a `decode` call in the header state costs
/// O(8 KiB) however much is buffered (a whole-buffer search per attempt made a megabyte of
/// `Content-Length: x` lines take minutes).
const MAX_HEADER_BLOCK: usize = 8 * 1024;

const HEADER_END: &[u8] = b"\r\n\r\n";
const CONTENT_LENGTH: &[u8] = b"content-length:";

/// A problem with one frame; the stream itself is still usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A header block without a valid `Content-Length`, or bytes that are not a header at all.
    Malformed(String),
    /// `Content-Length` above the cap; the body is skipped (counted off, not read).
    TooLarge { length: usize, max: usize },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Malformed(why) => write!(f, "malformed frame: {why}"),
            FrameError::TooLarge { length, max } => {
                write!(f, "frame of {length} bytes exceeds the {max}-byte limit")
            }
        }
    }
}

pub struct FrameCodec {
    max_frame: usize,
    state: State,
    /// In the header state: the first `searched` bytes of the buffer hold no start of `\r\n\r\n`
    /// (they were searched before), so a header arriving in small pieces is scanned once, not
    /// once per piece.
    searched: usize,
}

enum State {
    Header,
    Body(usize),
    /// Discarding the body of an oversized frame: this many bytes are still to come. They are
    /// dropped as they arrive, so neither memory nor search time grows with the body.
    Skip(usize),
}

impl FrameCodec {
    pub fn new(max_frame: usize) -> Self {
        FrameCodec { max_frame, state: State::Header, searched: 0 }
    }
}

impl Default for FrameCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME)
    }
}

impl Decoder for FrameCodec {
    type Item = Result<Vec<u8>, FrameError>;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        loop {
            match self.state {
                State::Skip(left) => {
                    let n = left.min(buf.len());
                    self.advance(buf, n);
                    if n < left {
                        self.state = State::Skip(left - n);
                        return Ok(None);
                    }
                    self.state = State::Header;
                }
                State::Body(len) => {
                    if buf.len() < len {
                        buf.reserve(len - buf.len());
                        return Ok(None);
                    }
                    self.state = State::Header;
                    return Ok(Some(Ok(buf.split_to(len).to_vec())));
                }
                State::Header => {
                    // Blank lines between frames are harmless (people type them); skip them.
                    let blank = buf.iter().take_while(|b| **b == b'\r' || **b == b'\n').count();
                    self.advance(buf, blank);
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    let window = buf.len().min(MAX_HEADER_BLOCK + HEADER_END.len());
                    let from = self.searched.min(window);
                    let Some(end) = find(&buf[from..window], HEADER_END).map(|i| from + i) else {
                        self.searched = window.saturating_sub(HEADER_END.len() - 1);
                        if window == MAX_HEADER_BLOCK + HEADER_END.len() {
                            return Ok(Some(Err(self.resync(buf, "header block too long"))));
                        }
                        return Ok(None);
                    };
                    // No blank line starts before `end`; that stays true across the skips below.
                    self.searched = end;
                    match parse_content_length(&buf[..end]) {
                        Ok(len) if len > self.max_frame => {
                            self.advance(buf, end + HEADER_END.len());
                            self.state = State::Skip(len);
                            return Ok(Some(Err(FrameError::TooLarge { length: len, max: self.max_frame })));
                        }
                        Ok(len) => {
                            self.advance(buf, end + HEADER_END.len());
                            self.state = State::Body(len);
                        }
                        Err(why) => {
                            // Garbage glued in front of a real header: keep the header.
                            let skip = match find_ignore_ascii_case(&buf[1..end], CONTENT_LENGTH) {
                                Some(i) => i + 1,
                                None => end + HEADER_END.len(),
                            };
                            self.advance(buf, skip);
                            return Ok(Some(Err(FrameError::Malformed(why))));
                        }
                    }
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        match self.decode(buf)? {
            Some(item) => Ok(Some(item)),
            None => {
                let leftover = buf.len();
                buf.clear();
                self.searched = 0;
                let state = std::mem::replace(&mut self.state, State::Header);
                if let State::Body(len) = state {
                    Ok(Some(Err(FrameError::Malformed(format!(
                        "stream ended inside a frame body ({leftover} of {len} bytes)"
                    )))))
                } else if let State::Skip(_) = state {
                    // Already reported as `TooLarge`; nothing of it was kept.
                    Ok(None)
                } else if leftover > 0 {
                    Ok(Some(Err(FrameError::Malformed(format!(
                        "stream ended inside a frame ({leftover} bytes left over)"
                    )))))
                } else {
                    Ok(None)
                }
            }
        }
    }
}

impl FrameCodec {
    /// Drop bytes up to the next thing that looks like a header (or all but a tail that may be
    /// the start of one, cut off by the read), so that one bad write does not poison the rest of
    /// the stream. Only called with more than `MAX_HEADER_BLOCK` bytes buffered.
    fn resync(&mut self, buf: &mut BytesMut, why: &str) -> FrameError {
        let skip = match find_ignore_ascii_case(&buf[1..], CONTENT_LENGTH) {
            Some(i) => i + 1,
            None => buf.len() - (CONTENT_LENGTH.len() - 1),
        };
        self.advance(buf, skip);
        FrameError::Malformed(format!("{why}; skipped {skip} bytes"))
    }

    /// `buf.advance(n)`, keeping `searched` relative to the start of the buffer.
    fn advance(&mut self, buf: &mut BytesMut, n: usize) {
        buf.advance(n);
        self.searched = self.searched.saturating_sub(n);
    }
}

fn parse_content_length(header: &[u8]) -> Result<usize, String> {
    let text = std::str::from_utf8(header).map_err(|_| "header is not UTF-8".to_string())?;
    let mut length = None;
    for line in text.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("header line without a colon: {:?}", cut_chars(line, 80)));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            length =
                Some(value.parse::<usize>().map_err(|_| format!("bad Content-Length: {:?}", cut_chars(value, 40)))?);
        }
        // Content-Type and unknown headers are allowed and ignored, as in LSP.
    }
    length.ok_or_else(|| "no Content-Length header".to_string())
}

impl Encoder<&[u8]> for FrameCodec {
    type Error = std::io::Error;

    fn encode(&mut self, body: &[u8], dst: &mut BytesMut) -> Result<(), Self::Error> {
        dst.reserve(body.len() + 32);
        dst.put_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        dst.put_slice(body);
        Ok(())
    }
}

mod bytes_helpers {
    pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
        haystack.windows(needle.len()).position(|w| w == needle)
    }

    /// The first match of a lower-case `needle`, ignoring ASCII case; no copy of the haystack.
    pub fn find_ignore_ascii_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
        haystack.windows(needle.len()).position(|w| w.eq_ignore_ascii_case(needle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8], max: usize) -> Vec<Result<String, FrameError>> {
        let mut codec = FrameCodec::new(max);
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(item) = codec.decode_eof(&mut buf).unwrap() {
            out.push(item.map(|b| String::from_utf8(b).unwrap()));
        }
        out
    }

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn decodes_consecutive_frames_and_ignores_content_type() {
        let input = format!(
            "{}Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{{}}",
            frame(r#"{"a":1}"#)
        );
        assert_eq!(decode_all(input.as_bytes(), 1024), vec![Ok(r#"{"a":1}"#.into()), Ok("{}".into())]);
    }

    #[test]
    fn body_split_across_reads_is_reassembled() {
        let mut codec = FrameCodec::new(1024);
        let whole = frame("{\"text\":\"héllo wörld\"}");
        let mut buf = BytesMut::new();
        let mut got = None;
        for b in whole.as_bytes() {
            buf.put_u8(*b);
            if let Some(item) = codec.decode(&mut buf).unwrap() {
                got = Some(item.unwrap());
            }
        }
        assert_eq!(String::from_utf8(got.unwrap()).unwrap(), "{\"text\":\"héllo wörld\"}");
    }

    #[test]
    fn oversized_frame_is_reported_and_skipped() {
        let input = format!("{}{}", frame(&"x".repeat(100)), frame("{}"));
        let out = decode_all(input.as_bytes(), 10);
        assert_eq!(out, vec![Err(FrameError::TooLarge { length: 100, max: 10 }), Ok("{}".into())]);
    }

    /// The body of an oversized frame is counted off, not searched: a frame inside it (a pasted
    /// log, a hostile body) is not decoded, and the frame after it is.
    #[test]
    fn an_oversized_body_is_skipped_by_count_not_searched() {
        let inner = frame(r#"{"inner":1}"#);
        let body = format!("{inner}{}", " ".repeat(100 - inner.len()));
        let input = format!("Content-Length: 100\r\n\r\n{body}{}", frame("{}"));
        let whole = decode_all(input.as_bytes(), 64);
        assert_eq!(whole, vec![Err(FrameError::TooLarge { length: 100, max: 64 }), Ok("{}".into())]);
        // Byte by byte: the skip counts what arrives, whatever the read sizes.
        let mut codec = FrameCodec::new(64);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for b in input.as_bytes() {
            buf.put_u8(*b);
            while let Some(item) = codec.decode(&mut buf).unwrap() {
                out.push(item.map(|b| String::from_utf8(b).unwrap()));
            }
            assert!(buf.len() <= 64, "a skipped body is not buffered ({} bytes held)", buf.len());
        }
        assert_eq!(out, whole);
    }

    /// A length is trusted even when it is bogus: the bytes after the header are its body, so a
    /// huge one takes the rest of the stream (what LSP framing means); end of input still ends it.
    #[test]
    fn a_bogus_huge_length_takes_the_rest_of_the_stream() {
        let input = format!("Content-Length: 99999999999\r\n\r\n{{\"x\":1}}{}", frame("{}"));
        let out = decode_all(input.as_bytes(), 1024);
        assert_eq!(out, vec![Err(FrameError::TooLarge { length: 99999999999, max: 1024 })]);
    }

    #[test]
    fn garbage_then_valid_frame_recovers() {
        let garbage = "this is not a header at all\r\n\r\n";
        let input = format!("{garbage}{}", frame("{}"));
        let out = decode_all(input.as_bytes(), 1024);
        assert!(matches!(out[0], Err(FrameError::Malformed(_))), "{out:?}");
        assert_eq!(out[1], Ok("{}".into()));
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn endless_garbage_without_blank_line_resyncs_at_next_header() {
        let input = format!("{}{}", "z".repeat(MAX_HEADER_BLOCK + 10), frame("{}"));
        let out = decode_all(input.as_bytes(), 1024);
        assert!(matches!(out[0], Err(FrameError::Malformed(_))));
        assert_eq!(out.last().unwrap(), &Ok("{}".to_string()));
    }

    #[test]
    fn bad_content_length_values() {
        for header in ["Content-Length: -1", "Content-Length: abc", "Content-Type: x"] {
            let input = format!("{header}\r\n\r\n{}", frame("{}"));
            let out = decode_all(input.as_bytes(), 1024);
            assert!(matches!(out[0], Err(FrameError::Malformed(_))), "{header}: {out:?}");
            assert_eq!(out[1], Ok("{}".into()), "{header}");
        }
    }

    #[test]
    fn truncated_frame_at_eof_is_an_error_not_a_hang() {
        let out = decode_all(b"Content-Length: 50\r\n\r\n{\"partial\"", 1024);
        assert!(matches!(out[0], Err(FrameError::Malformed(_))));
    }

    #[test]
    fn encoder_writes_byte_length_not_char_length() {
        let mut codec = FrameCodec::default();
        let mut dst = BytesMut::new();
        codec.encode("é".as_bytes(), &mut dst).unwrap();
        assert_eq!(&dst[..], "Content-Length: 2\r\n\r\né".as_bytes());
    }

    fn regression(name: &str) -> Vec<u8> {
        let path = format!("{}/tests/fixtures/fuzz-regressions/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// Found while fuzzing (`fuzz/`, target `frame_codec`): a header block made of many
    /// `Content-Length:` lines was searched and lower-cased in full once per line, so a 250 KB one
    /// arriving in one read took seconds (a megabyte, minutes). Now each attempt looks at most
    /// 8 KiB ahead.
    #[test]
    fn a_flood_of_content_length_lines_decodes_in_linear_time() {
        let flood = regression("frame-codec-content-length-flood.txt").repeat(50);
        let input = [flood, b"\r\n\r\n".to_vec(), frame("{}").into_bytes()].concat();
        let started = std::time::Instant::now();
        let out = decode_all(&input, 1024);
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(2), "{} bytes took {took:?}", input.len());
        assert_eq!(out.last(), Some(&Ok("{}".to_string())));
        assert!(out[..out.len() - 1].iter().all(|i| matches!(i, Err(FrameError::Malformed(_)))));
    }

    /// Found while writing the `frame_codec` fuzz target (its rule: read sizes must not change
    /// which frames come out), then reproduced directly: after more than `MAX_HEADER_BLOCK` bytes
    /// of garbage, a read that ended inside the next `Content-Length` lost that frame, because the
    /// resync dropped the whole buffer.
    #[test]
    fn a_header_cut_by_a_read_after_long_garbage_is_kept() {
        let input = regression("frame-codec-header-cut-after-long-garbage.txt");
        let cut = input.len() - "ngth: 2\r\n\r\n{}".len();
        assert_eq!(&input[cut - 10..cut], b"Content-Le");
        let splits = [vec![input.len()], vec![cut, input.len() - cut], vec![cut - 3, 1, 1, 1, 99]];
        for reads in splits {
            let mut codec = FrameCodec::new(1024);
            let mut buf = BytesMut::new();
            let mut out = Vec::new();
            let mut rest = &input[..];
            for n in reads.iter().copied() {
                let (read, tail) = rest.split_at(n.min(rest.len()));
                rest = tail;
                buf.extend_from_slice(read);
                while let Some(item) = codec.decode(&mut buf).unwrap() {
                    out.push(item);
                }
            }
            while let Some(item) = codec.decode_eof(&mut buf).unwrap() {
                out.push(item);
            }
            assert_eq!(out.last(), Some(&Ok(b"{}".to_vec())), "reads {reads:?}: {out:?}");
        }
    }
}
