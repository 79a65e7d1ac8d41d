//! LSP base-protocol framing: `Content-Length: N\r\n\r\n` followed by N bytes of UTF-8 JSON.
//!
//! The decoder never gives up on a stream: malformed headers, oversized frames and garbage between
//! frames come out as [`FrameError`] items, and decoding resumes at the next header. That is what
//! keeps the sidecar alive when a client (or a human at a terminal) sends something odd.

use bytes_helpers::find;
use tokio_util::bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// Default cap for one frame. A Copilot request with a long history is a few MiB; 64 MiB leaves
/// room for pasted files while keeping a bogus `Content-Length` from exhausting memory.
pub const DEFAULT_MAX_FRAME: usize = 64 * 1024 * 1024;

/// Headers longer than this without a blank line are garbage, not a header block.
const MAX_HEADER_BLOCK: usize = 8 * 1024;

const HEADER_END: &[u8] = b"\r\n\r\n";
const CONTENT_LENGTH: &[u8] = b"content-length:";

/// A problem with one frame; the stream itself is still usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A header block without a valid `Content-Length`, or bytes that are not a header at all.
    Malformed(String),
    /// `Content-Length` above the cap; the body is skipped.
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
}

enum State {
    Header,
    Body(usize),
    /// Dropping bytes until the next `Content-Length:` (after garbage or an oversized frame: a
    /// bogus length must not swallow the rest of the stream, so the body is not trusted).
    Resync,
}

impl FrameCodec {
    pub fn new(max_frame: usize) -> Self {
        FrameCodec { max_frame, state: State::Header }
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
                State::Resync => {
                    let lower: Vec<u8> = buf.iter().map(u8::to_ascii_lowercase).collect();
                    match find(&lower, CONTENT_LENGTH) {
                        Some(i) => {
                            buf.advance(i);
                            self.state = State::Header;
                        }
                        None => {
                            // Keep a tail that could be the start of a split header name.
                            let keep = (CONTENT_LENGTH.len() - 1).min(buf.len());
                            buf.advance(buf.len() - keep);
                            return Ok(None);
                        }
                    }
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
                    while buf.first().is_some_and(|b| *b == b'\r' || *b == b'\n') {
                        buf.advance(1);
                    }
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    let Some(end) = find(buf, HEADER_END) else {
                        if buf.len() > MAX_HEADER_BLOCK {
                            return Ok(Some(Err(self.resync(buf, "header block too long"))));
                        }
                        return Ok(None);
                    };
                    match parse_content_length(&buf[..end]) {
                        Ok(len) if len > self.max_frame => {
                            buf.advance(end + HEADER_END.len());
                            self.state = State::Resync;
                            return Ok(Some(Err(FrameError::TooLarge {
                                length: len,
                                max: self.max_frame,
                            })));
                        }
                        Ok(len) => {
                            buf.advance(end + HEADER_END.len());
                            self.state = State::Body(len);
                        }
                        Err(why) => {
                            // Garbage glued in front of a real header: keep the header.
                            let lower: Vec<u8> = buf[1..end].iter().map(u8::to_ascii_lowercase).collect();
                            let skip = match find(&lower, CONTENT_LENGTH) {
                                Some(i) => i + 1,
                                None => end + HEADER_END.len(),
                            };
                            buf.advance(skip);
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
                let truncated = matches!(self.state, State::Body(_));
                self.state = State::Header;
                if truncated || leftover > 0 {
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
    /// Drop bytes up to the next thing that looks like a header (or everything), so that one bad
    /// write does not poison the rest of the stream.
    fn resync(&mut self, buf: &mut BytesMut, why: &str) -> FrameError {
        let lower: Vec<u8> = buf.iter().map(u8::to_ascii_lowercase).collect();
        let skip = find(&lower[1..], CONTENT_LENGTH).map(|i| i + 1).unwrap_or(buf.len());
        buf.advance(skip);
        FrameError::Malformed(format!("{why}; skipped {skip} bytes"))
    }
}

fn parse_content_length(header: &[u8]) -> Result<usize, String> {
    let text = std::str::from_utf8(header).map_err(|_| "header is not UTF-8".to_string())?;
    let mut length = None;
    for line in text.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("header line without a colon: {:?}", truncate(line, 80)));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| format!("bad Content-Length: {:?}", truncate(value, 40)))?,
            );
        }
        // Content-Type and unknown headers are allowed and ignored, as in LSP.
    }
    length.ok_or_else(|| "no Content-Length header".to_string())
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
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

    #[test]
    fn a_bogus_huge_length_does_not_swallow_the_stream() {
        let input = format!("Content-Length: 99999999999\r\n\r\n{{\"x\":1}}{}", frame("{}"));
        let out = decode_all(input.as_bytes(), 1024);
        assert_eq!(out[0], Err(FrameError::TooLarge { length: 99999999999, max: 1024 }));
        assert_eq!(out[1], Ok("{}".into()), "{out:?}");
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
}
