//! The double as the MCP client of a session's HTTP server, doing what the research saw Cursor do
//! against one: `GET /.well-known/oauth-protected-resource[<path>]` probes (404 expected and
//! ignored), `initialize` with clientInfo `cursor-vscode`, `notifications/initialized`,
//! `tools/list` (following `nextCursor`), `resources/list`, `prompts/list`; every request with the
//! session's `headers` and, once the server gave one, its `Mcp-Session-Id`. Responses may be plain
//! JSON or an SSE stream (Streamable HTTP allows both).

use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::http::{self, Abort, Target};
use crate::json::{arr, obj, Json};

/// The protocol version the double's client asks for (*invented*: the CLI's is not recorded).
pub const PROTOCOL_VERSION: &str = "2025-06-18";
pub const CLIENT_NAME: &str = "cursor-vscode";
/// `clientInfo.version` (*invented*).
pub const CLIENT_VERSION: &str = "1.0.0";

/// One `mcpServers` entry of `session/new` / `session/load`.
#[derive(Clone, Debug)]
pub struct Entry {
    pub kind: String,
    pub name: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
}

impl Entry {
    /// The entries that are HTTP servers; the others are returned as `{name?, type, error}` notes
    /// for the record (stdio and SSE servers are not connected by the double).
    pub fn parse_all(v: &Json) -> (Vec<Entry>, Vec<Json>) {
        let mut ok = Vec::new();
        let mut skipped = Vec::new();
        for item in match v {
            Json::Arr(items) => items.as_slice(),
            _ => &[],
        } {
            let s = |k: &str| item.get(k).and_then(Json::as_str).map(str::to_owned);
            let kind = s("type").unwrap_or_else(|| if item.get("command").is_some() { "stdio" } else { "?" }.into());
            let name = s("name").unwrap_or_default();
            let note = |why: &str| {
                obj([("name", name.as_str().into()), ("type", kind.as_str().into()), ("error", why.into())])
            };
            if kind != "http" {
                skipped.push(note("only HTTP servers are connected by the test double"));
                continue;
            }
            let Some(url) = s("url") else {
                skipped.push(note("no url"));
                continue;
            };
            let headers = match item.get("headers") {
                Some(Json::Arr(hs)) => hs
                    .iter()
                    .filter_map(|h| Some((h.get("name")?.as_str()?.to_owned(), h.get("value")?.as_str()?.to_owned())))
                    .collect(),
                _ => Vec::new(),
            };
            ok.push(Entry { kind, name, url, headers });
        }
        (ok, skipped)
    }
}

/// Why a request failed.
#[derive(Clone, Debug)]
pub enum Fail {
    Rpc { code: i64, message: String },
    Http(u16, String),
    Transport(String),
}

impl Fail {
    pub fn describe(&self) -> String {
        match self {
            Fail::Rpc { code, message } => format!("MCP error {code}: {message}"),
            Fail::Http(status, body) if body.is_empty() => format!("HTTP {status}"),
            Fail::Http(status, body) => format!("HTTP {status}: {body}"),
            Fail::Transport(e) => e.clone(),
        }
    }
}

/// A connection (in MCP's sense: an initialized session) to one server.
pub struct Conn {
    pub name: String,
    pub url: String,
    target: Target,
    headers: Vec<(String, String)>,
    session_id: Mutex<Option<String>>,
    protocol: Mutex<Option<String>>,
    next_id: AtomicU64,
    /// The listed tools, in the server's order.
    pub tools: Vec<String>,
    /// Each listed tool's `inputSchema` (what a call the model makes up must fit).
    pub schemas: Vec<(String, Json)>,
    /// The discovery probes made before connecting: `{path, status}`.
    pub probes: Vec<Json>,
    /// Every request made, for the record.
    log: Mutex<Vec<Json>>,
}

impl Conn {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::SeqCst)
    }

    pub fn log(&self) -> Vec<Json> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn session_id(&self) -> Option<String> {
        self.session_id.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn note(&self, method: &str, status: Option<u16>, error: Option<String>) {
        let mut e = obj([("method", method.into()), ("status", status.map(u64::from).into())]);
        if let Some(err) = error {
            e.set("error", err.into());
        }
        self.log.lock().unwrap_or_else(|e| e.into_inner()).push(e);
    }

    fn post_headers(&self) -> Vec<(String, String)> {
        let mut h = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("Accept".to_owned(), "application/json, text/event-stream".to_owned()),
        ];
        h.extend(self.headers.iter().cloned());
        if let Some(id) = self.session_id() {
            h.push(("Mcp-Session-Id".to_owned(), id));
        }
        if let Some(v) = self.protocol.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            h.push(("MCP-Protocol-Version".to_owned(), v));
        }
        h
    }

    fn post(&self, body: &Json, timeout: Option<Duration>, abort: Option<&Abort>) -> Result<http::Reply, Fail> {
        let bytes = body.to_compact().into_bytes();
        let reply = http::request(&self.target, "POST", &self.post_headers(), Some(&bytes), timeout, abort)
            .map_err(Fail::Transport)?;
        if let Some(id) = reply.header("mcp-session-id") {
            *self.session_id.lock().unwrap_or_else(|e| e.into_inner()) = Some(id.to_owned());
        }
        Ok(reply)
    }

    /// A request; its result, or why it failed.
    pub fn rpc(
        &self,
        id: u64,
        method: &str,
        params: Json,
        timeout: Option<Duration>,
        abort: Option<&Abort>,
    ) -> Result<Json, Fail> {
        let msg = obj([("jsonrpc", "2.0".into()), ("id", id.into()), ("method", method.into()), ("params", params)]);
        let outcome = self.post(&msg, timeout, abort).and_then(|reply| read_response(reply, id));
        match &outcome {
            Ok(_) => self.note(method, Some(200), None),
            Err(Fail::Http(status, _)) => self.note(method, Some(*status), Some(outcome_text(&outcome))),
            Err(_) => self.note(method, None, Some(outcome_text(&outcome))),
        }
        outcome
    }

    pub fn notify(&self, method: &str, params: Json, timeout: Option<Duration>) {
        let msg = obj([("jsonrpc", "2.0".into()), ("method", method.into()), ("params", params)]);
        match self.post(&msg, timeout, None) {
            Ok(reply) => {
                let status = reply.status;
                let _ = reply.text();
                self.note(method, Some(status), None)
            }
            Err(e) => self.note(method, None, Some(e.describe())),
        }
    }

    /// Probes, `initialize`, `notifications/initialized` and the lists. Err: not connected.
    pub fn connect(entry: &Entry, timeout: Duration) -> (Result<Conn, String>, Vec<Json>) {
        let target = match Target::parse(&entry.url) {
            Ok(t) => t,
            Err(e) => return (Err(e), Vec::new()),
        };
        // Protected-resource discovery: the path-aware form first, then the root (RFC 9728).
        let mut probes = Vec::new();
        let path = target.path.split('?').next().unwrap_or("/").trim_end_matches('/').to_owned();
        for p in
            [format!("/.well-known/oauth-protected-resource{path}"), "/.well-known/oauth-protected-resource".into()]
        {
            let probe = Target { path: p.clone(), ..target.clone() };
            let headers = [("MCP-Protocol-Version".to_owned(), PROTOCOL_VERSION.to_owned())];
            let status = match http::request(&probe, "GET", &headers, None, Some(timeout), None) {
                Ok(r) => {
                    let s = r.status;
                    let _ = r.text();
                    Json::from(u64::from(s))
                }
                Err(e) => Json::from(e),
            };
            probes.push(obj([("path", p.into()), ("status", status)]));
        }
        let conn = Conn {
            name: entry.name.clone(),
            url: entry.url.clone(),
            target,
            headers: entry.headers.clone(),
            session_id: Mutex::new(None),
            protocol: Mutex::new(None),
            next_id: AtomicU64::new(0),
            tools: Vec::new(),
            schemas: Vec::new(),
            probes: probes.clone(),
            log: Mutex::new(Vec::new()),
        };
        let init = conn.rpc(
            conn.next_id(),
            "initialize",
            obj([
                ("protocolVersion", PROTOCOL_VERSION.into()),
                ("capabilities", obj([("roots", obj([("listChanged", false.into())]))])),
                ("clientInfo", obj([("name", CLIENT_NAME.into()), ("version", CLIENT_VERSION.into())])),
            ]),
            Some(timeout),
            None,
        );
        let result = match init {
            Ok(r) => r,
            Err(e) => return (Err(format!("initialize: {}", e.describe())), probes),
        };
        let version = result.get("protocolVersion").and_then(Json::as_str).unwrap_or(PROTOCOL_VERSION).to_owned();
        *conn.protocol.lock().unwrap_or_else(|e| e.into_inner()) = Some(version);
        conn.notify("notifications/initialized", obj([]), Some(timeout));
        let mut tools = Vec::new();
        let mut schemas = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => obj([("cursor", c.as_str().into())]),
                None => obj([]),
            };
            match conn.rpc(conn.next_id(), "tools/list", params, Some(timeout), None) {
                Ok(r) => {
                    if let Some(Json::Arr(items)) = r.get("tools") {
                        tools.extend(items.iter().filter_map(|t| t.get("name")?.as_str().map(str::to_owned)));
                        schemas.extend(items.iter().filter_map(|t| {
                            Some((
                                t.get("name")?.as_str()?.to_owned(),
                                t.get("inputSchema").cloned().unwrap_or(obj([])),
                            ))
                        }));
                    }
                    match r.get("nextCursor").and_then(Json::as_str) {
                        Some(c) if !c.is_empty() && cursor.as_deref() != Some(c) => cursor = Some(c.to_owned()),
                        _ => break,
                    }
                }
                Err(_) => break, // on record; the server simply offers nothing
            }
        }
        for method in ["resources/list", "prompts/list"] {
            let _ = conn.rpc(conn.next_id(), method, obj([]), Some(timeout), None);
        }
        (Ok(Conn { tools, schemas, ..conn }), probes)
    }
}

fn outcome_text(o: &Result<Json, Fail>) -> String {
    match o {
        Ok(_) => String::new(),
        Err(e) => e.describe(),
    }
}

/// The JSON-RPC response to `id` in a reply: a JSON body (one message or a batch) or an SSE
/// stream whose events are read until it comes.
fn read_response(reply: http::Reply, id: u64) -> Result<Json, Fail> {
    let status = reply.status;
    if !(200..300).contains(&status) {
        let body = reply.text().unwrap_or_default();
        return Err(Fail::Http(status, body.chars().take(200).collect()));
    }
    let sse = reply.header("content-type").is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
    if !sse {
        let text = reply.text().map_err(Fail::Transport)?;
        let msg = Json::parse(&text).map_err(|e| Fail::Transport(format!("the response is not JSON: {e}")))?;
        let found = match msg {
            Json::Arr(items) => items.into_iter().find(|m| is_response_to(m, id)),
            m if is_response_to(&m, id) => Some(m),
            _ => None,
        };
        return found
            .ok_or_else(|| Fail::Transport(format!("no response to request {id} (HTTP {status})")))
            .and_then(unwrap);
    }
    let mut lines = BufReader::new(reply.body);
    let mut data = String::new();
    loop {
        let mut line = String::new();
        match lines.read_line(&mut line) {
            Ok(0) => return Err(Fail::Transport("the event stream ended without a response".to_owned())),
            Ok(_) => {}
            Err(e) => return Err(Fail::Transport(format!("reading the event stream: {e}"))),
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        } else if line.is_empty() && !data.is_empty() {
            if let Ok(m) = Json::parse(&data) {
                if is_response_to(&m, id) {
                    return unwrap(m);
                }
            }
            data.clear();
        }
    }
}

fn is_response_to(m: &Json, id: u64) -> bool {
    m.get("method").is_none() && m.get("id") == Some(&Json::from(id))
}

fn unwrap(m: Json) -> Result<Json, Fail> {
    if let Some(e) = m.get("error") {
        let code = match e.get("code") {
            Some(Json::Num(n)) => n.as_i64().unwrap_or(0),
            _ => 0,
        };
        let message = e.get("message").and_then(Json::as_str).unwrap_or("").to_owned();
        return Err(Fail::Rpc { code, message });
    }
    Ok(m.get("result").cloned().unwrap_or(Json::Null))
}

/// `notifications/cancelled` for an abandoned request (the MCP TypeScript client sends it on a
/// timeout and on an abort).
pub fn cancelled_params(request_id: u64, reason: &str) -> Json {
    obj([("requestId", request_id.into()), ("reason", reason.into())])
}

/// The record's view of a server list for one session: names only.
pub fn names(items: &[String]) -> Json {
    arr(items.iter().map(|n| n.as_str().into()))
}
