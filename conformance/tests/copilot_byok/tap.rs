//! A wire tap between Copilot CLI and `cursor-bridge serve`: a loopback HTTP/1.1 relay that
//! passes every request and response through unchanged, byte for byte, and keeps a copy. So the
//! test can say what Copilot sent (its tools, its `role: "tool"` messages) and what it got back
//! (the streamed `tool_calls` chunks, `finish_reason`), not only what it did with it.
//!
//! One exchange per connection: the relay asks serve to close after its answer (`Connection:
//! close`, which serve honours), and tells Copilot the same, so a response ends where serve's
//! connection does and no framing has to be understood to pass it on.

use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use cursor_bridge::util::sync::AbortOnDrop;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Largest request head we accept (Copilot's are ~1 KB).
const MAX_HEAD: usize = 64 * 1024;

/// One request and its response.
#[derive(Debug, Clone, Default)]
pub struct Exchange {
    pub method: String,
    pub path: String,
    /// The request body as JSON (`Null` when it is empty or not JSON).
    pub request: Value,
    pub status: u16,
    /// Lower-cased names.
    pub response_headers: Vec<(String, String)>,
    /// The response body, de-chunked.
    pub response: String,
    /// Set when relaying failed (the exchange is then incomplete).
    pub error: Option<String>,
}

impl Exchange {
    pub fn response_header(&self, name: &str) -> Option<&str> {
        self.response_headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The `data:` payloads of an SSE response, in order (`[DONE]` included as text).
    pub fn sse_data(&self) -> Vec<String> {
        self.response.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.trim().to_string()).collect()
    }

    /// One line for a failure message.
    pub fn summary(&self) -> String {
        let messages = self.request.get("messages").and_then(Value::as_array).map(Vec::len).unwrap_or(0);
        let tools = self.request.get("tools").and_then(Value::as_array).map(Vec::len).unwrap_or(0);
        let tail: String = self.response.chars().rev().take(300).collect::<String>().chars().rev().collect();
        format!(
            "{} {} ({messages} messages, {tools} tools) → {} {}{}",
            self.method,
            self.path,
            self.status,
            tail.replace('\n', "⏎"),
            self.error.as_ref().map(|e| format!(" [relay error: {e}]")).unwrap_or_default()
        )
    }
}

pub struct Tap {
    pub base_url: String,
    log: Arc<Mutex<Vec<Exchange>>>,
    _server: AbortOnDrop,
}

impl Tap {
    /// Listen on a free loopback port and relay to `upstream` (`host:port`).
    pub async fn start(upstream: String) -> Result<Tap> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let base_url = format!("http://{}/v1", listener.local_addr()?);
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let server = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (sink, upstream) = (sink.clone(), upstream.clone());
                tokio::spawn(async move {
                    let mut exchange = Exchange::default();
                    if let Err(e) = relay(client, &upstream, &mut exchange).await {
                        exchange.error = Some(format!("{e:#}"));
                    }
                    if !exchange.method.is_empty() {
                        sink.lock().unwrap().push(exchange);
                    }
                });
            }
        });
        Ok(Tap { base_url, log, _server: AbortOnDrop(server.abort_handle()) })
    }

    /// Every exchange so far, in the order their responses ended.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().unwrap().clone()
    }
}

async fn relay(mut client: TcpStream, upstream: &str, exchange: &mut Exchange) -> Result<()> {
    let (head, mut rest) = read_head(&mut client).await?;
    let Some(head) = head else { return Ok(()) }; // a connection opened and closed unused
    let (start, headers) = parse_head(&head)?;
    let mut parts = start.split_whitespace();
    exchange.method = parts.next().unwrap_or("").to_string();
    exchange.path = parts.next().unwrap_or("").to_string();
    if header(&headers, "transfer-encoding").is_some() {
        bail!("a chunked request body (Copilot sends Content-Length)");
    }
    let length: usize = header(&headers, "content-length").map(|v| v.parse()).transpose()?.unwrap_or(0);
    while rest.len() < length {
        let mut buf = vec![0u8; length - rest.len()];
        let n = client.read(&mut buf).await?;
        if n == 0 {
            bail!("the client closed before its body ended");
        }
        rest.extend_from_slice(&buf[..n]);
    }
    exchange.request = serde_json::from_slice(&rest).unwrap_or(Value::Null);

    let mut server = TcpStream::connect(upstream).await.with_context(|| format!("connecting to {upstream}"))?;
    server.write_all(&with_close(&start, &headers)).await?;
    server.write_all(&rest).await?;

    let (response_head, mut body) = read_head(&mut server).await?;
    let response_head = response_head.context("serve closed without answering")?;
    let (status_line, response_headers) = parse_head(&response_head)?;
    exchange.status = status_line.split_whitespace().nth(1).unwrap_or("0").parse().unwrap_or(0);
    exchange.response_headers = response_headers.clone();
    client.write_all(&with_close(&status_line, &response_headers)).await?;
    client.write_all(&body).await?;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = server.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        client.write_all(&buf[..n]).await?;
        body.extend_from_slice(&buf[..n]);
    }
    client.shutdown().await.ok();
    let chunked = header(&response_headers, "transfer-encoding").is_some_and(|v| v.contains("chunked"));
    exchange.response =
        String::from_utf8_lossy(&if chunked { dechunk(&body).context("serve's chunked body")? } else { body })
            .into_owned();
    Ok(())
}

/// The head (up to the blank line, excluded) and the bytes read after it; `None` on EOF first.
async fn read_head(stream: &mut (impl AsyncRead + Unpin)) -> Result<(Option<String>, Vec<u8>)> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = seen.split_off(end + 4);
            seen.truncate(end);
            return Ok((Some(String::from_utf8(seen).context("a head that is not UTF-8")?), rest));
        }
        if seen.len() > MAX_HEAD {
            bail!("a head longer than {MAX_HEAD} bytes");
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            if seen.is_empty() {
                return Ok((None, Vec::new()));
            }
            bail!("the connection closed inside a head");
        }
        seen.extend_from_slice(&buf[..n]);
    }
}

/// The start line and the headers (names lower-cased).
fn parse_head(head: &str) -> Result<(String, Vec<(String, String)>)> {
    let mut lines = head.split("\r\n");
    let start = lines.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    for line in lines {
        let (k, v) = line.split_once(':').with_context(|| format!("a header line without a colon: {line:?}"))?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    Ok((start, headers))
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The head again, its `Connection` header replaced by `close`.
fn with_close(start: &str, headers: &[(String, String)]) -> Vec<u8> {
    let mut out = format!("{start}\r\n");
    for (k, v) in headers.iter().filter(|(k, _)| k != "connection" && k != "keep-alive") {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("connection: close\r\n\r\n");
    out.into_bytes()
}

/// A `Transfer-Encoding: chunked` body decoded (extensions and trailers ignored).
fn dechunk(mut body: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n").context("a chunk size line without CRLF")?;
        let size_text = std::str::from_utf8(&body[..line_end])?;
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .with_context(|| format!("a chunk size {size_text:?}"))?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if body.len() < size + 2 {
            bail!("a chunk cut short ({} of {size} bytes)", body.len());
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_is_decoded_and_a_cut_one_refused() {
        assert_eq!(dechunk(b"5\r\nhello\r\n1;x=y\r\n!\r\n0\r\n\r\n").unwrap(), b"hello!");
        assert!(dechunk(b"5\r\nhel").is_err());
    }

    #[test]
    fn the_head_says_close_whatever_the_client_asked() {
        let (start, headers) = parse_head("POST /v1/x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive").unwrap();
        let head = String::from_utf8(with_close(&start, &headers)).unwrap();
        assert_eq!(head, "POST /v1/x HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n");
    }
}
