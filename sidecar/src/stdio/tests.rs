//! The protocol in process: the real dispatch loop, handlers and writer over `tokio::io::duplex`,
//! with a scripted backend (as typos-lsp tests its server). What needs a real process (signals,
//! pipes, process trees) is tested against the binary in `sidecar/tests/`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::dispatch::serve_connection;
use super::outbox::outbox;
use super::state::Connection;
use crate::backend::scripted::{model, Scripted};
use crate::backend::Backend;
use crate::startup::Paths;

struct Client {
    input: DuplexStream,
    output: DuplexStream,
    next_id: i64,
    server: tokio::task::JoinHandle<i32>,
    /// Frames read while waiting for something else.
    pending: Vec<Value>,
}

impl Client {
    fn start(backend: Arc<Scripted>, state_dir: Option<std::path::PathBuf>) -> Client {
        let (tx, rx) = outbox();
        let paths = Paths { state_dir, log_file: None };
        let conn =
            Arc::new(Connection::with_backend(tx, paths, Box::new(move |_| backend.clone() as Arc<dyn Backend>)));
        let (input, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, output) = tokio::io::duplex(1 << 20);
        let server = tokio::spawn(serve_connection(server_in, server_out, conn, rx));
        Client { input, output, next_id: 0, server, pending: Vec::new() }
    }

    async fn write(&mut self, v: Value) {
        let body = v.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.input.write_all(frame.as_bytes()).await.unwrap();
    }

    /// A body written as is (ids a `Value` cannot hold exactly).
    async fn write_raw(&mut self, body: &str) {
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.input.write_all(frame.as_bytes()).await.unwrap();
    }

    async fn read(&mut self) -> Value {
        if !self.pending.is_empty() {
            return self.pending.remove(0);
        }
        let body = self.read_raw().await.expect("a frame, not the end of output");
        serde_json::from_str(&body).unwrap()
    }

    /// The next frame's body as sent; `None` at the end of output.
    async fn read_raw(&mut self) -> Option<String> {
        let read = async {
            let mut header = Vec::new();
            while !header.ends_with(b"\r\n\r\n") {
                match self.output.read_u8().await {
                    Ok(b) => header.push(b),
                    Err(_) if header.is_empty() => return None,
                    Err(e) => panic!("output ended inside a header: {e}"),
                }
            }
            let text = String::from_utf8(header).unwrap();
            let len: usize = text.trim().trim_start_matches("Content-Length:").trim().parse().unwrap();
            let mut body = vec![0; len];
            self.output.read_exact(&mut body).await.unwrap();
            Some(String::from_utf8(body).unwrap())
        };
        tokio::time::timeout(Duration::from_secs(10), read).await.expect("a frame within 10 s")
    }

    /// Every frame until the sidecar closes its output (after `exit` or end of input).
    async fn read_to_end(&mut self) -> Vec<Value> {
        let mut all = std::mem::take(&mut self.pending);
        while let Some(body) = self.read_raw().await {
            all.push(serde_json::from_str(&body).unwrap());
        }
        all
    }

    async fn send(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        id
    }

    /// Frames up to and including the response to `id`.
    async fn until_response(&mut self, id: i64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let frame = self.read().await;
            if frame["id"] == id && frame.get("method").is_none() {
                return (before, frame);
            }
            before.push(frame);
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        let (before, response) = self.until_response(id).await;
        self.pending.extend(before);
        response
    }

    async fn initialize(&mut self, workspace: &std::path::Path) -> Value {
        self.request("initialize", json!({"protocolVersion": 1, "workspaceFolders": [workspace]})).await
    }

    async fn finish(mut self) -> i32 {
        self.write(json!({"jsonrpc": "2.0", "method": "exit"})).await;
        tokio::time::timeout(Duration::from_secs(10), self.server).await.unwrap().unwrap()
    }
}

fn chat(turn: &str, text: &str) -> Value {
    json!({"turnId": turn, "model": "auto", "mode": "ask", "messages": [{"role": "user", "text": text}]})
}

#[tokio::test]
async fn a_turn_streams_numbered_deltas_then_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::start(Scripted::new(), None);
    let init = c.initialize(dir.path()).await;
    assert_eq!(init["result"]["capabilities"]["cli"]["found"], true, "{init}");
    let id = c.send("chat/send", chat("t1", "[[think:hm|text:Hello, |text:world]]")).await;
    let (deltas, response) = c.until_response(id).await;
    let kinds: Vec<&str> = deltas.iter().map(|d| d["params"]["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["session", "thinking", "text", "text", "usage"]);
    let seqs: Vec<u64> = deltas.iter().map(|d| d["params"]["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    assert!(deltas.iter().all(|d| d["method"] == "chat/delta" && d["params"]["turnId"] == "t1"));
    let text: String =
        deltas.iter().filter_map(|d| d["params"]["text"].as_str().filter(|_| d["params"]["kind"] == "text")).collect();
    assert_eq!(text, "Hello, world");
    let result = &response["result"];
    assert_eq!(
        (result["turnId"].as_str(), result["resumed"].as_bool(), result["stopReason"].as_str()),
        (Some("t1"), Some(false), Some("end"))
    );
    assert!(result["sessionId"].as_str().unwrap().starts_with("cb-"));
    assert_eq!(c.finish().await, 0);
}

#[tokio::test]
async fn cancel_answers_minus_32800_once_and_stops_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Scripted::new();
    let mut c = Client::start(backend.clone(), None);
    c.initialize(dir.path()).await;
    let id = c.send("chat/send", chat("t1", "[[text:start|busy:100]]")).await;
    // The first delta shows the turn is running.
    let first = c.read().await;
    assert_eq!(first["method"], "chat/delta");
    c.write(json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}})).await;
    let (_, response) = c.until_response(id).await;
    assert_eq!(response["error"]["code"], -32800, "{response}");
    // Exactly one answer: the next request's answer is the next response on the wire.
    let list = c.request("sessions/list", json!({})).await;
    assert_eq!(list["result"]["sessions"], json!([]), "a cancelled turn records no session");
    assert!(c.pending.iter().all(|f| f["id"] != id), "{:?}", c.pending);
    assert_eq!(backend.dropped.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(c.finish().await, 0);
}

#[tokio::test]
async fn protocol_errors_are_typed_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::start(Scripted::new(), None);
    let early = c.request("models/list", json!({})).await;
    assert_eq!(early["error"]["code"], -32002, "{early}");
    c.initialize(dir.path()).await;
    let unknown = c.request("no/such", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    let bad = c.request("chat/send", json!({"turnId": 5})).await;
    assert_eq!(
        (bad["error"]["code"].as_i64(), bad["error"]["data"]["kind"].as_str()),
        (Some(-32602), Some("invalidParams"))
    );
    let failed = c.request("chat/send", chat("t", "[[fail:rateLimited]]")).await;
    assert_eq!(
        (failed["error"]["code"].as_i64(), failed["error"]["data"]["kind"].as_str()),
        (Some(-32000), Some("rateLimited"))
    );
    assert_eq!(failed["error"]["data"]["hint"], "scripted");
    c.pending.clear(); // the failed turn's session delta
    c.input.write_all(b"Content-Length: 5\r\n\r\n{oops").await.unwrap();
    let parse = c.read().await;
    assert_eq!(parse["id"], Value::Null);
    assert_eq!(parse["error"]["code"], -32700);
    let ok = c.request("sessions/list", json!({})).await;
    assert!(ok.get("result").is_some());
    assert_eq!(c.finish().await, 0);
}

#[tokio::test]
async fn a_changed_model_list_reaches_the_client_as_models_changed() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let backend = Scripted::new();
    *backend.models.lock().unwrap() = vec![model("old")];
    let mut first = Client::start(backend.clone(), Some(state.clone()));
    first.initialize(dir.path()).await;
    let listed = first.request("models/list", json!({})).await;
    assert_eq!(listed["result"]["models"][0]["id"], "old");
    assert_eq!(first.finish().await, 0);

    *backend.models.lock().unwrap() = vec![model("new")];
    let mut second = Client::start(backend, Some(state));
    second.initialize(dir.path()).await;
    let cached = second.request("models/list", json!({})).await;
    assert_eq!(cached["result"]["models"][0]["id"], "old", "served from the file at once");
    let changed = second.read().await;
    assert_eq!(changed["method"], "models/changed");
    assert_eq!(changed["params"]["models"][0]["id"], "new");
    assert_eq!(second.finish().await, 0);
}

#[tokio::test]
async fn shutdown_stops_running_turns_and_exit_ends_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Scripted::new();
    let mut c = Client::start(backend.clone(), None);
    c.initialize(dir.path()).await;
    c.send("chat/send", chat("t1", "[[busy:100]]")).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let down = c.request("shutdown", json!(null)).await;
    assert!(down.get("result").is_some(), "{down}");
    let after = c.request("sessions/list", json!({})).await;
    assert_eq!(after["error"]["code"], -32600, "refused while shutting down: {after}");
    assert_eq!(c.finish().await, 0);
    assert_eq!(backend.running.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn options_a_newer_client_sends_are_ignored_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::start(Scripted::new(), None);
    let params = json!({"protocolVersion": 1, "workspaceFolders": [dir.path()], "options": {"maxConcurrent": 2, "fromTheFuture": {"x": 1}}});
    let init = c.request("initialize", params).await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["ignoredOptions"], json!(["fromTheFuture"]), "{init}");
    let understood: Vec<&str> = caps["options"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    assert!(understood.contains(&"maxConcurrent") && understood.contains(&"workspaceTrusted"), "{understood:?}");
    let r = c.request("chat/send", chat("t", "still works")).await;
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(c.finish().await, 0);
}

#[tokio::test]
async fn a_value_a_newer_client_sends_for_a_known_option_is_ignored_not_refused() {
    for (options, ignored) in [
        (json!({"backend": "sdk"}), json!(["backend"])),
        (json!({"backend": "print", "maxSessions": "lots"}), json!(["maxSessions"])),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Client::start(Scripted::new(), None);
        let params = json!({"protocolVersion": 1, "workspaceFolders": [dir.path()], "options": options});
        let init = c.request("initialize", params).await;
        assert_eq!(init["result"]["capabilities"]["ignoredOptions"], ignored, "{init}");
        let r = c.request("chat/send", chat("t", "still works")).await;
        assert!(r.get("result").is_some(), "{r}");
        assert_eq!(c.finish().await, 0);
    }
}

/// The `id` of a response body exactly as written (a `Value` would round a big number).
fn raw_id(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Id<'a> {
        #[serde(borrow)]
        id: &'a serde_json::value::RawValue,
    }
    serde_json::from_str::<Id<'_>>(body).unwrap().id.get().to_owned()
}

/// Ids JSON-RPC allows that are easy to get wrong: negative, fractional, past `u64`, exponents,
/// strings with escapes.
const ODD_IDS: [&str; 9] = [
    "-7",
    "0",
    "1.5",
    "-0.25",
    "1e3",
    "18446744073709551616",
    "123456789012345678901234567890",
    r#""abc""#,
    r#""a \"quoted\" é id""#,
];

#[tokio::test]
async fn any_valid_id_is_echoed_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::start(Scripted::new(), None);
    c.initialize(dir.path()).await;
    for id in ODD_IDS {
        c.write_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"sessions/list"}}"#)).await;
        let body = c.read_raw().await.unwrap();
        assert_eq!(raw_id(&body), id, "{body}");
        assert!(serde_json::from_str::<Value>(&body).unwrap().get("result").is_some(), "{body}");
        // Errors too: jsonrpsee's own (method not found) and the sidecar's.
        c.write_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"no/such"}}"#)).await;
        let body = c.read_raw().await.unwrap();
        assert_eq!(raw_id(&body), id, "{body}");
        c.write_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"chat/send","params":{{"turnId":1}}}}"#)).await;
        let body = c.read_raw().await.unwrap();
        assert_eq!(raw_id(&body), id, "{body}");
    }
    assert_eq!(c.finish().await, 0);
}

#[tokio::test]
async fn any_valid_id_can_be_cancelled_and_is_answered_once() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Scripted::new();
    let mut c = Client::start(backend.clone(), None);
    c.initialize(dir.path()).await;
    for (i, id) in ODD_IDS.iter().enumerate() {
        let params = chat(&format!("t{i}"), "[[text:start|busy:100]]");
        c.write_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"chat/send","params":{params}}}"#)).await;
        let first = c.read().await;
        assert_eq!(first["method"], "chat/delta", "{first}");
        // While it runs, the same id again is a duplicate.
        c.write_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"sessions/list"}}"#)).await;
        c.write_raw(&format!(r#"{{"jsonrpc":"2.0","method":"$/cancelRequest","params":{{"id":{id}}}}}"#)).await;
        let mut answers = Vec::new();
        while answers.len() < 2 {
            let body = c.read_answer_raw().await;
            assert_eq!(raw_id(&body), *id, "{body}");
            answers.push(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"].as_i64());
        }
        assert_eq!(answers, [Some(-32600), Some(-32800)], "duplicate refused, then the turn cancelled ({id})");
    }
    // A string id is found by its value, however the cancel spells it.
    let params = chat("esc", "[[text:start|busy:100]]");
    c.write_raw(&format!(r#"{{"jsonrpc":"2.0","id":"ab","method":"chat/send","params":{params}}}"#)).await;
    assert_eq!(c.read().await["method"], "chat/delta");
    c.write_raw(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"a\u0062"}}"#).await;
    let body = c.read_answer_raw().await;
    assert_eq!(
        (raw_id(&body).as_str(), serde_json::from_str::<Value>(&body).unwrap()["error"]["code"].as_i64()),
        (r#""ab""#, Some(-32800))
    );
    // Exactly one answer each: nothing more for any of them.
    let rest = c.read_to_end_after_exit().await;
    assert!(rest.iter().all(|f| f.get("method").is_some()), "{rest:?}");
    assert_eq!(backend.dropped.load(std::sync::atomic::Ordering::SeqCst), ODD_IDS.len() + 1);
}

impl Client {
    /// The next answer (not a notification) as sent.
    async fn read_answer_raw(&mut self) -> String {
        loop {
            let body = self.read_raw().await.expect("an answer, not the end of output");
            if serde_json::from_str::<Value>(&body).unwrap().get("method").is_none() {
                return body;
            }
        }
    }

    /// Send `exit`, then every frame until the output closes; the loop must have returned 0.
    async fn read_to_end_after_exit(&mut self) -> Vec<Value> {
        self.write(json!({"jsonrpc": "2.0", "method": "exit"})).await;
        let frames = self.read_to_end().await;
        assert_eq!(tokio::time::timeout(Duration::from_secs(10), &mut self.server).await.unwrap().unwrap(), 0);
        frames
    }
}

/// The answers (not notifications) among `frames` whose id is `id`.
fn answers_to(frames: &[Value], id: i64) -> Vec<&Value> {
    frames.iter().filter(|f| f.get("method").is_none() && f["id"] == id).collect()
}

fn assert_stopped_by_shutdown(answer: &Value) {
    let e = &answer["error"];
    assert_eq!(
        (e["code"].as_i64(), e["message"].as_str(), e["data"]["kind"].as_str()),
        (Some(-32800), Some("the sidecar is shutting down"), Some("cancelled")),
        "{answer}"
    );
}

#[tokio::test]
async fn shutdown_answers_every_request_it_stops_before_its_own_result() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Scripted::new();
    let mut c = Client::start(backend.clone(), None);
    c.initialize(dir.path()).await;
    let turn = c.send("chat/send", chat("t1", "[[text:start|busy:100]]")).await;
    let queued = c.send("chat/send", chat("t2", "[[busy:100]]")).await;
    assert_eq!(c.read().await["method"], "chat/delta", "t1 is running");
    let down = c.send("shutdown", json!(null)).await;
    let (before, result) = c.until_response(down).await;
    assert_eq!(result["result"], Value::Null, "{result}");
    assert!(result.get("error").is_none(), "{result}");
    for id in [turn, queued] {
        let answers = answers_to(&before, id);
        assert_eq!(answers.len(), 1, "request {id} is answered once, before `shutdown`'s result: {before:?}");
        assert_stopped_by_shutdown(answers[0]);
    }
    let rest = c.read_to_end_after_exit().await;
    assert!(answers_to(&rest, turn).is_empty() && answers_to(&rest, queued).is_empty(), "{rest:?}");
    assert_eq!(backend.running.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn end_of_input_answers_every_request_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Scripted::new();
    let mut c = Client::start(backend.clone(), None);
    c.initialize(dir.path()).await;
    let turn = c.send("chat/send", chat("t1", "[[text:start|busy:100]]")).await;
    assert_eq!(c.read().await["method"], "chat/delta", "t1 is running");
    let status = c.send("chat/send", chat("t2", "[[busy:100]]")).await;
    c.input.shutdown().await.unwrap();
    let frames = c.read_to_end().await;
    for id in [turn, status] {
        let answers = answers_to(&frames, id);
        assert_eq!(answers.len(), 1, "request {id}: {frames:?}");
        assert_stopped_by_shutdown(answers[0]);
    }
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), c.server).await.unwrap().unwrap(), 0);
    assert_eq!(backend.running.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_turn_id_already_in_flight_is_refused_and_the_first_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::start(Scripted::new(), None);
    c.initialize(dir.path()).await;
    let first = c.send("chat/send", chat("t1", "[[text:start|busy:1|text: done]]")).await;
    let delta = c.read().await;
    assert_eq!((delta["method"].as_str(), delta["params"]["turnId"].as_str()), (Some("chat/delta"), Some("t1")));
    let again = c.send("chat/send", chat("t1", "a second turn with the same id")).await;
    let (mut deltas, refused) = c.until_response(again).await;
    deltas.insert(0, delta);
    let e = &refused["error"];
    assert_eq!((e["code"].as_i64(), e["data"]["kind"].as_str()), (Some(-32602), Some("invalidParams")), "{refused}");
    assert!(e["message"].as_str().unwrap().contains("t1"), "the message names the turnId: {refused}");
    let (rest, done) = c.until_response(first).await;
    deltas.extend(rest);
    assert_eq!(done["result"]["turnId"], "t1", "{done}");
    let seqs: Vec<u64> = deltas.iter().map(|d| d["params"]["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "one numbering: {deltas:?}");
    let text: String = deltas
        .iter()
        .filter(|d| d["params"]["kind"] == "text")
        .map(|d| d["params"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "start done", "only the first turn's deltas: {deltas:?}");
    // Once answered, the turnId is free again.
    let later = c.request("chat/send", chat("t1", "again")).await;
    assert!(later.get("result").is_some(), "{later}");
    assert_eq!(c.finish().await, 0);
}
