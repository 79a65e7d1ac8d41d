//! The host in process, driven over real TCP by a minimal HTTP/1.1 client (the agent's side):
//! what an agent sees for a whole session, parallel parked calls, refusals, and stopping.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::server::{MAX_BODY, NOBODY, NO_RESULT, STOPPED};
use super::{McpCall, McpHost, McpReply, OfferedTool, TEST_LIMITS};

/// Long enough for a loaded machine, short enough that a hang fails the test.
const PATIENCE: Duration = Duration::from_secs(20);

struct HttpReply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl HttpReply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

/// One request on its own connection (`Connection: close`), the whole response read.
async fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpReply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw)).await.expect("response in time").unwrap();
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, rest) = text.split_once("\r\n\r\n").expect("a header block");
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| l.split_once(':').unwrap())
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_string() };
    HttpReply { status, headers, body }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").expect("chunk size line");
        let size = usize::from_str_radix(size.trim(), 16).expect("hex chunk size");
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

/// The agent's MCP client: the URL and headers the host gave, the session once opened.
#[derive(Clone)]
struct Agent {
    port: u16,
    path: String,
    authorization: String,
    session: Option<String>,
}

impl Agent {
    fn of(host: &McpHost) -> Agent {
        let url = host.url();
        let rest = url.strip_prefix("http://127.0.0.1:").expect("a loopback URL");
        let (port, path) = rest.split_once('/').unwrap();
        let (name, authorization) = host.headers().remove(0);
        assert_eq!(name, "Authorization");
        Agent { port: port.parse().unwrap(), path: format!("/{path}"), authorization, session: None }
    }

    async fn post(&self, body: &Value) -> HttpReply {
        self.post_raw(body.to_string().as_bytes()).await
    }

    async fn post_raw(&self, body: &[u8]) -> HttpReply {
        let mut headers = vec![
            ("Authorization", self.authorization.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id", session));
        }
        http(self.port, "POST", &self.path, &headers, body).await
    }

    /// `initialize` and `notifications/initialized`, as Cursor's client starts.
    async fn open(&mut self) -> Value {
        let init = self
            .post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cursor-vscode", "version": "1.0.0"}}}))
            .await;
        assert_eq!(init.status, 200, "{}", init.body);
        assert_eq!(init.header("content-type"), Some("application/json"));
        self.session = Some(init.header("mcp-session-id").expect("a session id").to_string());
        let initialized = self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        assert_eq!((initialized.status, initialized.body.as_str()), (202, ""));
        init.json()
    }

    async fn call(&self, id: u64, name: &str, arguments: Value) -> HttpReply {
        self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}))
            .await
    }
}

fn tools() -> Vec<OfferedTool> {
    let schema = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"filePath": {"type": "string"}, "content": {"type": "string"}}, "required": ["filePath"]});
    vec![
        OfferedTool { name: "create_file".into(), description: "Create a file".into(), input_schema: schema.clone() },
        OfferedTool {
            name: "mcp_github_search_issues_and_pull_requests_in_every_repository".into(),
            description: "Search GitHub".into(),
            input_schema: json!({"properties": {"q": {"type": "string"}}}),
        },
    ]
}

async fn next_call(calls: &mut mpsc::Receiver<McpCall>) -> McpCall {
    tokio::time::timeout(PATIENCE, calls.recv()).await.expect("a call in time").expect("the channel is open")
}

fn text_of(reply: &HttpReply) -> (String, bool) {
    let v = reply.json();
    assert_eq!(v["result"]["content"].as_array().map(Vec::len), Some(1), "one text block: {v}");
    assert_eq!(v["result"]["content"][0]["type"], "text");
    (v["result"]["content"][0]["text"].as_str().unwrap().to_string(), v["result"]["isError"].as_bool().unwrap())
}

#[tokio::test]
async fn a_session_lists_the_tools_and_parks_parallel_calls_independently() {
    let (host, mut calls) = McpHost::start(tools(), TEST_LIMITS).await.unwrap();
    assert_eq!(host.server_name(), "cb");
    let url = host.url();
    let id = url.rsplit('/').next().unwrap();
    assert!(url.starts_with("http://127.0.0.1:") && url.contains("/mcp/"), "{url}");
    assert_eq!(id.split('-').map(str::len).collect::<Vec<_>>(), [8, 4, 4, 4, 12], "{url}");
    let (name, value) = host.headers().remove(0);
    let token = value.strip_prefix("Bearer ").unwrap();
    assert!(token.len() >= 32 && token.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
    assert_eq!(
        host.mcp_server_json(),
        json!({"type": "http", "name": "cb", "url": url, "headers": [{"name": "Authorization", "value": value}]})
    );
    assert!(!format!("{host:?}").contains(token) && !format!("{host:?}").contains(id), "Debug hides the secrets");

    let mut agent = Agent::of(&host);
    let init = agent.open().await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["capabilities"], json!({"tools": {"listChanged": false}}));
    let mut listed = host.listed();
    assert!(!*listed.borrow(), "not listed before tools/list");

    // What Cursor asks next, in its order.
    for (method, key) in [("resources/list", "resources"), ("prompts/list", "prompts")] {
        let reply = agent.post(&json!({"jsonrpc": "2.0", "id": 1, "method": method})).await;
        assert_eq!(reply.json()["result"][key], json!([]), "{method}");
    }
    let subscribe =
        agent.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "x"}})).await;
    assert_eq!(subscribe.json()["error"]["code"], -32601);
    let list = agent.post(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})).await.json();
    tokio::time::timeout(PATIENCE, listed.wait_for(|l| *l)).await.expect("listed in time").unwrap();
    let offered = list["result"]["tools"].as_array().unwrap();
    assert_eq!(offered[0]["name"], "create_file");
    assert_eq!(offered[0]["inputSchema"].get("$schema"), None);
    assert_eq!(offered[0]["inputSchema"]["required"], json!(["filePath"]));
    let short = offered[1]["name"].as_str().unwrap().to_string();
    assert!(short.len() + "cb".len() < 60 && short.starts_with("mcp_github_search_issues"), "{short}");
    assert_eq!(offered[1]["inputSchema"]["type"], "object");

    // Two calls at once; the second is answered first, and the first still waits for its own.
    let (a, b) = (agent.clone(), agent.clone());
    let first =
        tokio::spawn(async move { a.call(10, "create_file", json!({"filePath": "/w/a.txt", "content": "hi"})).await });
    let short_name = short.clone();
    let second = tokio::spawn(async move { b.call(11, &short_name, json!({"q": "is:open"})).await });
    let mut parked = vec![next_call(&mut calls).await, next_call(&mut calls).await];
    parked.sort_by(|x, y| x.tool.cmp(&y.tool));
    let [create, search]: [McpCall; 2] = parked.try_into().unwrap();
    assert_eq!(
        (create.tool.as_str(), &create.arguments),
        ("create_file", &json!({"filePath": "/w/a.txt", "content": "hi"}))
    );
    assert_eq!(search.tool, "mcp_github_search_issues_and_pull_requests_in_every_repository", "the client's own name");
    assert_eq!(search.arguments, json!({"q": "is:open"}));

    search.reply.send(McpReply::error("rate limited")).unwrap();
    let second = tokio::time::timeout(PATIENCE, second).await.expect("second in time").unwrap();
    assert_eq!(second.json()["id"], 11);
    assert_eq!(text_of(&second), ("rate limited".to_string(), true));
    assert!(!first.is_finished(), "the first call is still parked");
    assert!(!create.reply.is_closed(), "and its agent still waits");

    create.reply.send(McpReply::ok("The following files were successfully edited: /w/a.txt")).unwrap();
    let first = tokio::time::timeout(PATIENCE, first).await.expect("first in time").unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(first.json()["id"], 10);
    assert_eq!(text_of(&first), ("The following files were successfully edited: /w/a.txt".to_string(), false));

    // An unknown tool never reaches the client.
    let unknown = agent.call(12, "delete_everything", json!({})).await;
    let (text, is_error) = text_of(&unknown);
    assert!(is_error && text.contains("`delete_everything`"), "{text}");
    assert!(calls.try_recv().is_err(), "no call for an unknown tool");
}

#[tokio::test]
async fn more_than_forty_tools_come_with_a_dispatcher_that_calls_the_rest() {
    let many: Vec<OfferedTool> = (0..50)
        .map(|i| OfferedTool {
            name: format!("tool_{i}"),
            description: format!("Tool number {i}"),
            input_schema: json!({"type": "object"}),
        })
        .collect();
    let (host, mut calls) = McpHost::start(many, TEST_LIMITS).await.unwrap();
    let mut agent = Agent::of(&host);
    agent.open().await;
    let list = agent.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await.json();
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 40);
    assert_eq!(names[38], "tool_38");
    assert_eq!(names[39], "call_tool");

    let agent2 = agent.clone();
    let pending =
        tokio::spawn(
            async move { agent2.call(2, "call_tool", json!({"name": "tool_45", "arguments": {"x": 1}})).await },
        );
    let call = next_call(&mut calls).await;
    assert_eq!((call.tool.as_str(), &call.arguments), ("tool_45", &json!({"x": 1})));
    call.reply.send(McpReply::ok("done")).unwrap();
    let reply = tokio::time::timeout(PATIENCE, pending).await.unwrap().unwrap();
    assert_eq!(text_of(&reply), ("done".to_string(), false));
}

#[tokio::test]
async fn requests_without_the_secret_path_or_token_are_refused() {
    let (host, _calls) = McpHost::start(tools(), TEST_LIMITS).await.unwrap();
    let agent = Agent::of(&host);
    let auth = agent.authorization.clone();
    let token = auth.strip_prefix("Bearer ").unwrap().to_string();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}).to_string();
    let with_auth = [("Authorization", auth.as_str())];
    let wrong_path = format!("{}x", agent.path);
    // (method, path, headers, the status the agent gets)
    type Case<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>, u16);
    let cases: Vec<Case> = vec![
        // OAuth discovery and wrong paths: 404, whether or not the token is right.
        ("GET", "/.well-known/oauth-protected-resource", vec![], 404),
        ("GET", "/.well-known/oauth-protected-resource/mcp", with_auth.to_vec(), 404),
        ("GET", "/.well-known/oauth-authorization-server", vec![], 404),
        ("POST", "/mcp", with_auth.to_vec(), 404),
        ("POST", &wrong_path, with_auth.to_vec(), 404),
        ("POST", "/", with_auth.to_vec(), 404),
        // The right path without the right token: 401, for every method.
        ("POST", &agent.path, vec![], 401),
        ("POST", &agent.path, vec![("Authorization", "Bearer wrong")], 401),
        ("POST", &agent.path, vec![("Authorization", &token)], 401),
        ("POST", &agent.path, vec![("Authorization", "Basic Y2I6Y2I=")], 401),
        ("GET", &agent.path, vec![], 401),
        // Authorised, but no SSE stream and no session deletion.
        ("GET", &agent.path, with_auth.to_vec(), 405),
        ("DELETE", &agent.path, with_auth.to_vec(), 405),
        ("PUT", &agent.path, with_auth.to_vec(), 405),
        // An unknown session is not found (the client initializes again).
        ("POST", &agent.path, vec![("Authorization", &auth), ("Mcp-Session-Id", "0123abcd")], 404),
    ];
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    for (method, path, headers, status) in cases {
        let session = headers.iter().any(|(name, _)| *name == "Mcp-Session-Id");
        let body = match (method, session) {
            ("POST", false) => init.as_bytes(),
            ("POST", true) => ping.as_bytes(),
            _ => b"",
        };
        let reply = http(agent.port, method, path, &headers, body).await;
        assert_eq!(reply.status, status, "{method} {path} {headers:?}: {}", reply.body);
        assert!(!reply.body.contains(&token), "the token never comes back");
        assert!(reply.header("mcp-session-id").is_none(), "{method} {path}: no session opened");
        if status == 401 {
            assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
        }
        if status == 405 {
            assert_eq!(reply.header("allow"), Some("POST"));
        }
    }
    let (mut reply, mut authorised) = (http(agent.port, "POST", &agent.path, &with_auth, init.as_bytes()).await, agent);
    assert_eq!(reply.status, 200, "the right path and token: {}", reply.body);
    // A session opened earlier goes on working after another initialize.
    authorised.session = reply.header("mcp-session-id").map(str::to_string);
    reply = authorised.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})).await;
    assert_eq!(reply.status, 200);
    assert_ne!(reply.header("mcp-session-id"), authorised.session.as_deref(), "a new session");
    assert_eq!(authorised.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await.status, 200);
}

#[tokio::test]
async fn malformed_and_oversized_bodies_get_json_rpc_errors() {
    let (host, _calls) = McpHost::start(tools(), TEST_LIMITS).await.unwrap();
    let mut agent = Agent::of(&host);
    agent.open().await;
    let cases: &[(&[u8], u16, i64)] = &[
        (b"{\"jsonrpc\": \"2.0\", \"id\": 1,", 400, -32700),
        (b"", 400, -32700),
        (b"\xff\xfe", 400, -32700),
        (b"[]", 400, -32600),
        (b"{\"jsonrpc\": \"2.0\", \"id\": 1}", 400, -32600),
        (b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\"}", 200, -32602),
        (b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"nope\"}", 200, -32601),
    ];
    for (body, status, code) in cases {
        let reply = agent.post_raw(body).await;
        let shown = String::from_utf8_lossy(body);
        assert_eq!(reply.status, *status, "{shown}: {}", reply.body);
        assert_eq!(reply.json()["error"]["code"], *code, "{shown}");
    }
    let batch = agent.post_raw(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},"x"]"#).await;
    assert_eq!(batch.status, 200);
    assert_eq!(batch.json()[1]["error"]["code"], -32600);

    let huge = vec![b' '; MAX_BODY + 1];
    let reply = agent.post_raw(&huge).await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.json()["error"]["code"], -32600);
    // Just under the limit is read (and is then only whitespace: not JSON).
    let reply = agent.post_raw(&huge[1..]).await;
    assert_eq!((reply.status, reply.json()["error"]["code"].as_i64()), (400, Some(-32700)));
}

#[tokio::test]
async fn a_dropped_reply_a_cancel_and_a_gone_backend_each_end_the_call() {
    let (host, mut calls) = McpHost::start(tools(), TEST_LIMITS).await.unwrap();
    let mut agent = Agent::of(&host);
    agent.open().await;

    // The backend drops the reply sender: the agent gets an error result, not a hang.
    let a = agent.clone();
    let pending = tokio::spawn(async move { a.call(1, "create_file", json!({"filePath": "x"})).await });
    drop(next_call(&mut calls).await);
    let reply = tokio::time::timeout(PATIENCE, pending).await.unwrap().unwrap();
    assert_eq!(text_of(&reply), (NO_RESULT.to_string(), true));

    // The agent cancels: its request ends, and the backend sees that nobody waits any more.
    let a = agent.clone();
    let pending = tokio::spawn(async move { a.call(7, "create_file", json!({"filePath": "y"})).await });
    let mut call = next_call(&mut calls).await;
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "timeout"}});
    assert_eq!(agent.post(&cancel).await.status, 202);
    let reply = tokio::time::timeout(PATIENCE, pending).await.unwrap().unwrap();
    assert_eq!(reply.json()["error"]["code"], -32800);
    tokio::time::timeout(PATIENCE, call.reply.closed()).await.expect("the reply is closed");

    // The backend stops taking calls: an error result at once.
    drop(calls);
    let reply = agent.call(8, "create_file", json!({"filePath": "z"})).await;
    assert_eq!(text_of(&reply), (NOBODY.to_string(), true));
}

#[tokio::test]
async fn dropping_the_host_answers_parked_calls_and_closes_the_port() {
    let (host, mut calls) = McpHost::start(tools(), TEST_LIMITS).await.unwrap();
    let mut agent = Agent::of(&host);
    agent.open().await;
    let (a, b) = (agent.clone(), agent.clone());
    let first = tokio::spawn(async move { a.call(1, "create_file", json!({"filePath": "a"})).await });
    let second = tokio::spawn(async move { b.call(2, "create_file", json!({"filePath": "b"})).await });
    let parked = [next_call(&mut calls).await, next_call(&mut calls).await];

    drop(host);
    for pending in [first, second] {
        let reply = tokio::time::timeout(PATIENCE, pending).await.expect("answered in time").unwrap();
        assert_eq!(text_of(&reply), (STOPPED.to_string(), true));
    }
    for call in &parked {
        assert!(call.reply.is_closed(), "the backend sees nobody waits");
    }
    // Nothing arrives after, and the port is closed.
    let ended = tokio::time::timeout(PATIENCE, calls.recv()).await.expect("the channel ends");
    assert!(ended.is_none());
    let started = tokio::time::Instant::now();
    while TcpStream::connect(("127.0.0.1", agent.port)).await.is_ok() {
        assert!(started.elapsed() < PATIENCE, "the port is still open");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn an_agent_that_hangs_up_leaves_no_one_waiting() {
    let (host, mut calls) = McpHost::start(tools(), TEST_LIMITS).await.unwrap();
    let agent = Agent::of(&host);
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "create_file", "arguments": {}}})
            .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", agent.port)).await.unwrap();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nContent-Length: {}\r\n\r\n",
        agent.path,
        agent.authorization,
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut call = next_call(&mut calls).await;
    assert!(!call.reply.is_closed());
    drop(stream);
    tokio::time::timeout(PATIENCE, call.reply.closed()).await.expect("the backend learns the agent hung up");
}
