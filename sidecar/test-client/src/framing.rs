//! Content-Length framing as the sidecar speaks it (protocol.md): `Content-Length: N\r\n\r\n` and
//! N bytes of JSON.

use std::io::Read;
use std::sync::mpsc::Sender;
use std::time::Instant;

use serde_json::Value;

/// `body` behind its header.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The frames of `messages`, back to back, to be written in one go.
pub fn frames(messages: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for message in messages {
        out.extend(frame(&serde_json::to_vec(message).expect("a JSON value serializes")));
    }
    out
}

/// The body of the first whole frame in `data` and the offset just past it; `Ok(None)` while the
/// frame is not all there. A header other than `Content-Length` is an error: the sidecar writes no
/// other.
pub fn next_frame(data: &[u8]) -> Result<Option<(&[u8], usize)>, String> {
    let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else { return Ok(None) };
    let header =
        std::str::from_utf8(&data[..end]).map_err(|_| format!("a header that is not UTF-8: {:?}", &data[..end]))?;
    let mut len = None;
    for line in header.lines() {
        let (name, value) = line.split_once(':').ok_or_else(|| format!("header line {line:?} without a colon"))?;
        if !name.trim().eq_ignore_ascii_case("content-length") {
            return Err(format!("unexpected header {line:?} on stdout"));
        }
        len = Some(value.trim().parse::<usize>().map_err(|_| format!("bad Content-Length in {line:?}"))?);
    }
    let len = len.ok_or_else(|| format!("a header without Content-Length: {header:?}"))?;
    let body_start = end + 4;
    Ok((data.len() >= body_start + len).then(|| (&data[body_start..body_start + len], body_start + len)))
}

/// A frame from the sidecar, stamped with the time its last byte was read from the pipe.
pub struct Stamped<T> {
    pub at: Instant,
    /// The length of its body.
    pub bytes: usize,
    pub message: T,
}

/// Reader thread: frames from the sidecar's stdout until it closes, each body turned into a `T` by
/// `decode` (`None`: skip it). Everything read in one `read` is parsed and handed over as one
/// batch, each frame stamped with the time of that read, so the client keeps up with hundreds of
/// thousands of frames per second on a small machine. Panics on a malformed header.
pub fn read_frames<T>(mut stdout: impl Read, decode: fn(&[u8]) -> Option<T>, tx: Sender<Vec<Stamped<T>>>) {
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
    let mut chunk = vec![0u8; 256 * 1024];
    let mut start = 0; // first unconsumed byte of `buf`
    loop {
        let n = match stdout.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let at = Instant::now();
        if start > 0 && start == buf.len() {
            buf.clear();
            start = 0;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut batch = Vec::new();
        while let Some((body, next)) = next_frame(&buf[start..]).unwrap_or_else(|e| panic!("{e}")) {
            if let Some(message) = decode(body) {
                batch.push(Stamped { at, bytes: body.len(), message });
            }
            start += next;
        }
        if start > buf.len() / 2 {
            buf.drain(..start);
            start = 0;
        }
        if !batch.is_empty() && tx.send(batch).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_read_back_whole_and_only_whole() {
        let data = frames(&[serde_json::json!({"a": 1}), serde_json::json!("é")]);
        let (body, next) = next_frame(&data).unwrap().unwrap();
        assert_eq!(body, br#"{"a":1}"#);
        let (body, rest) = next_frame(&data[next..]).unwrap().unwrap();
        assert_eq!(body, "\"é\"".as_bytes());
        assert_eq!(next + rest, data.len());
        assert_eq!(next_frame(&data[..next - 1]).unwrap(), None);
        assert_eq!(next_frame(b"Content-Len").unwrap(), None);
    }

    #[test]
    fn other_headers_are_errors() {
        assert!(next_frame(b"Content-Type: x\r\n\r\n{}").is_err());
        assert!(next_frame(b"hello\r\n\r\n").is_err());
        assert!(next_frame(b"Content-Length: -1\r\n\r\n").is_err());
    }
}
