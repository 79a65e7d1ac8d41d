//! A small Streamable-HTTP MCP server on 127.0.0.1 for the double to connect to: it answers what
//! the bridge's loopback server will answer (404 to discovery probes, `initialize` with an
//! `Mcp-Session-Id`, 202 to notifications, the configured tools, empty resource and prompt lists)
//! and does per tool what a test asks (answer, wait, never answer, fail), recording every request.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::json::{obj, Json};

pub const SESSION_ID: &str = "mcp-session-1";
pub const TOKEN: &str = "Bearer test-token";

#[derive(Clone, Debug)]
pub enum Behaviour {
    Text(String),
    /// Answer after this long.
    Delayed(Duration, String),
    /// Never answer; the request ends when the client closes the connection.
    Hang,
    IsError(String),
    RpcError(i64, String),
    /// `structuredContent` beside the text.
    Structured(String),
}

#[derive(Clone, Debug)]
pub struct Seen {
    pub http_method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Json>,
    pub at: Instant,
}

impl Seen {
    pub fn rpc_method(&self) -> Option<&str> {
        self.body.as_ref().and_then(|b| b.get("method")).and_then(Json::as_str)
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn params(&self) -> Option<&Json> {
        self.body.as_ref().and_then(|b| b.get("params"))
    }
}

#[derive(Default)]
pub struct State {
    pub seen: Vec<Seen>,
    pub tools: Vec<String>,
    pub behaviours: HashMap<String, Behaviour>,
    /// Answer requests as SSE streams (chunked) instead of JSON bodies.
    pub sse: bool,
    pub in_flight: usize,
    pub max_in_flight: usize,
    /// `tools/call` requests whose connection the client closed before the answer.
    pub aborted_calls: usize,
    /// JSON-RPC methods never answered (the connection stays open until the client closes it).
    pub hang_methods: Vec<String>,
}

pub struct McpServer {
    pub url: String,
    pub state: Arc<(Mutex<State>, Condvar)>,
}

impl McpServer {
    pub fn start(tools: &[&str]) -> McpServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new((
            Mutex::new(State { tools: tools.iter().map(|t| (*t).to_owned()).collect(), ..State::default() }),
            Condvar::new(),
        ));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || serve(conn, &shared));
            }
        });
        McpServer { url: format!("http://127.0.0.1:{port}/mcp/0f2c"), state }
    }

    pub fn behave(&self, tool: &str, b: Behaviour) {
        self.state.0.lock().unwrap().behaviours.insert(tool.to_owned(), b);
    }

    pub fn hang_on(&self, method: &str) {
        self.state.0.lock().unwrap().hang_methods.push(method.to_owned());
    }

    pub fn sse(&self) {
        self.state.0.lock().unwrap().sse = true;
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.0.lock().unwrap().seen.clone()
    }

    pub fn methods(&self) -> Vec<String> {
        self.seen()
            .iter()
            .map(|s| s.rpc_method().map(str::to_owned).unwrap_or_else(|| format!("{} {}", s.http_method, s.path)))
            .collect()
    }

    pub fn calls(&self) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.rpc_method() == Some("tools/call")).collect()
    }

    pub fn max_in_flight(&self) -> usize {
        self.state.0.lock().unwrap().max_in_flight
    }

    /// Waits until `pred` holds (or `limit` passes); returns whether it did.
    pub fn wait_for(&self, limit: Duration, pred: impl Fn(&State) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        let (m, cv) = &*self.state;
        let mut st = m.lock().unwrap();
        while !pred(&st) {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st = cv.wait_timeout(st, deadline - now).unwrap().0;
        }
        true
    }

    /// The `mcpServers` entry naming this server.
    pub fn entry(&self, name: &str) -> String {
        format!(
            r#"{{"type":"http","name":"{name}","url":"{}","headers":[{{"name":"Authorization","value":"{TOKEN}"}}]}}"#,
            self.url
        )
    }
}

fn serve(conn: TcpStream, shared: &Arc<(Mutex<State>, Condvar)>) {
    let mut r = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let http_method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    let _ = r.read_exact(&mut body);
    let body = if len > 0 { Json::parse(&String::from_utf8_lossy(&body)).ok() } else { None };
    let seen =
        Seen { http_method: http_method.clone(), path: path.clone(), headers, body: body.clone(), at: Instant::now() };
    let (m, cv) = &**shared;
    {
        m.lock().unwrap().seen.push(seen.clone());
        cv.notify_all();
    }
    let mut out = conn;
    if http_method == "GET" {
        let _ = out.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nNot Found");
        return;
    }
    if seen.header("authorization") != Some(TOKEN) {
        let _ = out.write_all(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    }
    let Some(body) = body else {
        let _ = out.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let id = body.get("id").cloned();
    let method = body.get("method").and_then(Json::as_str).unwrap_or("").to_owned();
    let Some(id) = id else {
        let _ = out.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let (tools, behaviours, sse, hang) = {
        let st = m.lock().unwrap();
        (st.tools.clone(), st.behaviours.clone(), st.sse, st.hang_methods.contains(&method))
    };
    if hang {
        let mut buf = [0u8; 64];
        while out.read(&mut buf).map(|n| n > 0).unwrap_or(false) {}
        return;
    }
    let answer: Result<Json, (i64, String)> = match method.as_str() {
        "initialize" => Ok(obj([
            ("protocolVersion", "2025-06-18".into()),
            ("capabilities", obj([("tools", obj([]))])),
            ("serverInfo", obj([("name", "test".into()), ("version", "0".into())])),
        ])),
        "tools/list" => Ok(obj([(
            "tools",
            Json::Arr(
                tools
                    .iter()
                    .map(|t| {
                        obj([
                            ("name", t.as_str().into()),
                            ("description", "a tool".into()),
                            ("inputSchema", obj([("type", "object".into())])),
                        ])
                    })
                    .collect(),
            ),
        )])),
        "resources/list" => Ok(obj([("resources", Json::Arr(vec![]))])),
        "prompts/list" => Ok(obj([("prompts", Json::Arr(vec![]))])),
        "tools/call" => {
            let name = body.get("params").and_then(|p| p.get("name")).and_then(Json::as_str).unwrap_or("").to_owned();
            {
                let mut st = m.lock().unwrap();
                st.in_flight += 1;
                st.max_in_flight = st.max_in_flight.max(st.in_flight);
                cv.notify_all();
            }
            let text =
                |t: &str| obj([("content", Json::Arr(vec![obj([("type", "text".into()), ("text", t.into())])]))]);
            let outcome = match behaviours.get(&name).cloned().unwrap_or(Behaviour::Text(format!("{name} ok"))) {
                Behaviour::Text(t) => Ok(text(&t)),
                Behaviour::Delayed(d, t) => {
                    std::thread::sleep(d);
                    Ok(text(&t))
                }
                Behaviour::Hang => {
                    // Until the client gives up and closes its end.
                    let mut buf = [0u8; 64];
                    let mut probe = out.try_clone().unwrap();
                    while probe.read(&mut buf).map(|n| n > 0).unwrap_or(false) {}
                    let mut st = m.lock().unwrap();
                    st.in_flight -= 1;
                    st.aborted_calls += 1;
                    cv.notify_all();
                    return;
                }
                Behaviour::IsError(t) => {
                    let mut r = text(&t);
                    r.set("isError", true.into());
                    Ok(r)
                }
                Behaviour::RpcError(code, message) => Err((code, message)),
                Behaviour::Structured(t) => {
                    let mut r = text(&t);
                    r.set("structuredContent", obj([("value", t.as_str().into())]));
                    Ok(r)
                }
            };
            let mut st = m.lock().unwrap();
            st.in_flight -= 1;
            cv.notify_all();
            outcome
        }
        _ => Err((-32601, "Method not found".to_owned())),
    };
    let msg = match answer {
        Ok(result) => obj([("jsonrpc", "2.0".into()), ("id", id), ("result", result)]),
        Err((code, message)) => obj([
            ("jsonrpc", "2.0".into()),
            ("id", id),
            ("error", obj([("code", code.into()), ("message", message.into())])),
        ]),
    };
    let session = if method == "initialize" { format!("Mcp-Session-Id: {SESSION_ID}\r\n") } else { String::new() };
    if sse {
        // A progress notification first (to be skipped), then the answer, chunked.
        let events = format!(
            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progress\":1}}}}\n\nevent: message\ndata: {}\n\n",
            msg.to_compact()
        );
        let mut bytes = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n{session}Connection: close\r\n\r\n"
        )
        .into_bytes();
        for chunk in events.as_bytes().chunks(40) {
            bytes.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            bytes.extend_from_slice(chunk);
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"0\r\n\r\n");
        let _ = out.write_all(&bytes);
    } else {
        let text = msg.to_compact();
        let _ = out.write_all(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{session}Connection: close\r\n\r\n{text}",
                text.len()
            )
            .as_bytes(),
        );
    }
}
