//! Reading a child's pipes without trusting it: one line at a time with a length cap (a CLI can
//! print a 50 MiB line), and stderr kept only as its tail (where the error is).

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt};

pub enum LineRead {
    Line,
    Eof,
    TooLong,
}

/// Read one `\n`-terminated line into `buf` (without the newline), refusing to hold more than
/// `max` bytes. Cancel-safe in the sense that matters here: a cancelled read ends the turn.
pub async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if buf.is_empty() { LineRead::Eof } else { LineRead::Line });
        }
        match available.iter().position(|b| *b == b'\n') {
            Some(i) => {
                if buf.len() + i > max {
                    return Ok(LineRead::TooLong);
                }
                buf.extend_from_slice(&available[..i]);
                reader.consume(i + 1);
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                return Ok(LineRead::Line);
            }
            None => {
                let n = available.len();
                if buf.len() + n > max {
                    return Ok(LineRead::TooLong);
                }
                buf.extend_from_slice(available);
                reader.consume(n);
            }
        }
    }
}

/// Read a pipe to its end, keeping only the last `keep` bytes.
pub async fn keep_tail<R: AsyncRead + Unpin>(reader: Option<R>, keep: usize) -> String {
    let Some(mut reader) = reader else { return String::new() };
    let mut tail: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 8192];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > keep * 2 {
                    tail.drain(..tail.len() - keep);
                }
            }
        }
    }
    if tail.len() > keep {
        tail.drain(..tail.len() - keep);
    }
    String::from_utf8_lossy(&tail).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut r = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match read_line_bounded(&mut r, &mut buf, max).await.unwrap() {
                LineRead::Eof => break,
                LineRead::TooLong => {
                    out.push("<too long>".into());
                    break;
                }
                LineRead::Line => out.push(String::from_utf8_lossy(&buf).into_owned()),
            }
        }
        out
    }

    #[tokio::test]
    async fn bounded_lines() {
        assert_eq!(lines(b"a\r\nbb\n\nlast", 10).await, ["a", "bb", "", "last"]);
        assert_eq!(lines(b"short\nwaaaaay too long\nnext\n", 8).await, ["short", "<too long>"]);
    }

    #[tokio::test]
    async fn stderr_keeps_the_tail() {
        let data = format!("{}END", "x".repeat(100_000));
        let kept = keep_tail(Some(data.as_bytes()), 10).await;
        assert_eq!(kept, "xxxxxxxEND");
    }
}
