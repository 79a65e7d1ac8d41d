//! A small blocking HTTP/1.1 client, enough for a Streamable-HTTP MCP server on loopback: one
//! connection per request (`Connection: close`), `Content-Length` or chunked bodies, and an
//! [`Abort`] handle another thread uses to cut a request off (a timeout, a cancelled turn) the way
//! an aborted `fetch` closes its socket.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `http://host:port/path` split up.
#[derive(Clone, Debug)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, String> {
        let rest = match url.split_once("://") {
            Some(("http", rest)) => rest,
            Some((scheme, _)) => return Err(format!("{scheme}:// is not supported by the test double (http only)")),
            None => return Err(format!("not a URL: {url}")),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| format!("bad host in {url}"))?;
            (h.to_owned(), after.strip_prefix(':').unwrap_or("80"))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_owned(), p),
                None => (authority.to_owned(), "80"),
            }
        };
        let port = port.parse().map_err(|_| format!("bad port in {url}"))?;
        if host.is_empty() {
            return Err(format!("no host in {url}"));
        }
        Ok(Target { host, port, path: path.to_owned() })
    }

    fn host_header(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Lets another thread end a request: the socket is shut down, the blocked read fails.
#[derive(Clone, Default)]
pub struct Abort(Arc<Mutex<(bool, Option<TcpStream>)>>);

impl Abort {
    pub fn abort(&self) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.0 = true;
        if let Some(s) = &g.1 {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    pub fn aborted(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    fn register(&self, s: &TcpStream) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.1 = s.try_clone().ok();
        if g.0 {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

enum Framing {
    Length(u64),
    Chunked { left: u64, done: bool },
    Close,
}

/// A response body, de-chunked.
pub struct Body {
    r: BufReader<TcpStream>,
    framing: Framing,
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.framing {
            Framing::Close => self.r.read(buf),
            Framing::Length(left) => {
                if *left == 0 || buf.is_empty() {
                    return Ok(0);
                }
                let n = (buf.len() as u64).min(*left) as usize;
                let got = self.r.read(&mut buf[..n])?;
                *left -= got as u64;
                Ok(got)
            }
            Framing::Chunked { left, done } => {
                if *done {
                    return Ok(0);
                }
                if *left == 0 {
                    let mut line = String::new();
                    self.r.read_line(&mut line)?;
                    let size = line.trim().split(';').next().unwrap_or("");
                    let size = u64::from_str_radix(size, 16)
                        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "bad chunk size"))?;
                    if size == 0 {
                        loop {
                            let mut trailer = String::new();
                            if self.r.read_line(&mut trailer)? == 0 || trailer.trim().is_empty() {
                                break;
                            }
                        }
                        *done = true;
                        return Ok(0);
                    }
                    *left = size;
                }
                let n = (buf.len() as u64).min(*left) as usize;
                let got = self.r.read(&mut buf[..n])?;
                if got == 0 {
                    return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed mid-chunk"));
                }
                *left -= got as u64;
                if *left == 0 {
                    let mut crlf = String::new();
                    self.r.read_line(&mut crlf)?;
                }
                Ok(got)
            }
        }
    }
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn text(mut self) -> Result<String, String> {
        let mut bytes = Vec::new();
        self.body.read_to_end(&mut bytes).map_err(|e| format!("reading the response: {e}"))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// One request. `timeout` bounds connecting and each read; `abort` can end it from elsewhere.
pub fn request(
    target: &Target,
    method: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
    timeout: Option<Duration>,
    abort: Option<&Abort>,
) -> Result<Reply, String> {
    let addrs: Vec<_> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", target.host))?
        .collect();
    let mut last = String::from("no address");
    let mut stream = None;
    for a in addrs {
        let attempt = match timeout {
            Some(t) => TcpStream::connect_timeout(&a, t),
            None => TcpStream::connect(a),
        };
        match attempt {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("connect to {a}: {e}"),
        }
    }
    let mut stream = stream.ok_or(last)?;
    if let Some(a) = abort {
        a.register(&stream);
    }
    let _ = stream.set_read_timeout(timeout);
    let _ = stream.set_nodelay(true);
    let mut head =
        format!("{method} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", target.path, target.host_header());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.unwrap_or_default());
    stream.write_all(&bytes).map_err(|e| format!("sending the request: {e}"))?;
    let mut r = BufReader::new(stream);
    let mut status_line = String::new();
    r.read_line(&mut status_line).map_err(|e| format!("reading the response: {e}"))?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {:?}", status_line.trim()))?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).map_err(|e| format!("reading the response: {e}"))? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let find = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    let framing = if find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        Framing::Chunked { left: 0, done: false }
    } else if let Some(n) = find("content-length").and_then(|v| v.parse().ok()) {
        Framing::Length(n)
    } else if status == 204 || status == 304 || method == "HEAD" {
        Framing::Length(0)
    } else {
        Framing::Close
    };
    Ok(Reply { status, headers, body: Body { r, framing } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn urls_parse() {
        let t = Target::parse("http://127.0.0.1:4321/mcp/abc?x=1").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("127.0.0.1", 4321, "/mcp/abc?x=1"));
        let t = Target::parse("http://[::1]:9/").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9));
        assert!(Target::parse("https://x/").is_err());
    }

    /// A chunked answer from a one-shot server is read back whole.
    #[test]
    fn chunked_bodies_are_decoded() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nMcp-Session-Id: s1\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n")
                .unwrap();
        });
        let t = Target::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
        let r = request(&t, "POST", &[], Some(b"{}"), Some(Duration::from_secs(5)), None).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.header("mcp-session-id"), Some("s1"));
        assert_eq!(r.text().unwrap(), "hello world");
        server.join().unwrap();
    }
}
