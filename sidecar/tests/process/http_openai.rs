//! `cursor-bridge serve`, the OpenAI-compatible HTTP server, against the CLI double: driven by the
//! official `openai` Python package (tests/http/openai_client.py, installed into a cached venv
//! under target/py-openai), plus plain HTTP checks from here.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::*;
use serde_json::Value;

/// A running `cursor-bridge serve` on a free loopback port.
pub(crate) struct Server {
    child: Child,
    pub(crate) addr: SocketAddr,
    pub(crate) stderr: Arc<Mutex<String>>,
}

impl Server {
    pub(crate) fn start(dir: &TestDir, extra_env: &[(&str, &str)]) -> Server {
        Server::start_with_args(dir, &[], extra_env)
    }

    pub(crate) fn start_with_args(dir: &TestDir, args: &[&str], extra_env: &[(&str, &str)]) -> Server {
        let mut cmd = launcher(dir, "debug")
            .env("CURSOR_BRIDGE_CLI_PATH", double_exe())
            .env_remove("CURSOR_BRIDGE_API_KEY")
            // `serve` hands the CLI only what it needs; the double's knobs are passed on purpose.
            .env("CURSOR_BRIDGE_PASS_ENV", "CURSOR_DOUBLE_*")
            .envs(extra_env.iter().copied())
            .command();
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start cursor-bridge serve");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut addr = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            stderr.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(rest) = line.split("listening on http://").nth(1) {
                addr = Some(rest.trim_end_matches("/v1").parse().expect("the listening line has the address"));
                break;
            }
        }
        let Some(addr) = addr else {
            let _ = child.kill();
            panic!("the server did not start:\n{}", stderr.lock().unwrap());
        };
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Server { child, addr, stderr }
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// One HTTP/1.1 request, answered and closed: (status, lower-cased headers, body).
    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, Vec<(String, String)>, String) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        stream.write_all(req.as_bytes()).unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut head_lines = head.lines();
        let status = head_lines.next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
        let headers = head_lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        (status, headers, body.to_string())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM first: the server stops its turns and their CLIs on the way out.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        if wait_with_timeout(&mut self.child, Duration::from_secs(5)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The workspace's target folder (where the binaries are), for the cached venv.
fn target_dir() -> PathBuf {
    sidecar_exe().parent().and_then(Path::parent).expect("target/<profile>/cursor-bridge").to_path_buf()
}

/// A venv with the `openai` package, made once and reused (`target/py-openai`).
pub(crate) fn openai_venv() -> Result<PathBuf, String> {
    python_venv("py-openai", &["openai"])
}

/// A venv `target/<name>` with `packages` (pip requirements), made once and reused. Concurrent
/// test runs share it, so making it is serialized by a lock file; `.complete` marks a finished
/// install (of the packages it lists).
pub(crate) fn python_venv(name: &str, packages: &[&str]) -> Result<PathBuf, String> {
    let venv = target_dir().join(name);
    let python = venv.join("bin/python");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(target_dir().join(format!("{name}.lock")))
        .map_err(|e| format!("cannot create the venv lock: {e}"))?;
    // Held until `lock` is dropped (closing the file releases it).
    unsafe {
        use std::os::unix::io::AsRawFd;
        libc::flock(lock.as_raw_fd(), libc::LOCK_EX);
    }
    let marker = venv.join(".complete");
    let wanted = packages.join(" ");
    let done = std::fs::read_to_string(&marker).ok();
    // An older marker is empty: it stood for the openai package alone.
    if python.is_file()
        && (done.as_deref() == Some(wanted.as_str()) || done.as_deref() == Some("") && wanted == "openai")
    {
        return Ok(python);
    }
    let _ = std::fs::remove_dir_all(&venv);
    let run = |cmd: &mut Command, what: &str| -> Result<String, String> {
        let out = cmd.output().map_err(|e| format!("{what}: cannot run: {e}"))?;
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!("{what} failed ({}):\n{text}", out.status))
        }
    };
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv), "python3 -m venv")?;
    eprintln!("installing {wanted} into {}", venv.display());
    let pip = run(
        Command::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input"])
            .args(packages),
        &format!("pip install {wanted}"),
    )?;
    for line in pip.lines().filter(|l| l.starts_with("Successfully installed") || l.contains("already satisfied")) {
        eprintln!("pip: {line}");
    }
    std::fs::write(&marker, &wanted).map_err(|e| format!("cannot mark the venv complete: {e}"))?;
    Ok(python)
}

#[test]
#[ignore = "heavy tier (installs the `openai` Python package, up to a minute): `cargo xtask test` runs it; alone: `cargo test -p cursor-bridge --test process -- --ignored the_openai_python_client_works_against_serve`"]
fn the_openai_python_client_works_against_serve() {
    let python = openai_venv().unwrap_or_else(|e| panic!("could not set up the openai package: {e}"));
    let installed = Command::new(&python)
        .args(["-m", "pip", "list", "--disable-pip-version-check", "--format=freeze"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).replace('\n', " "))
        .unwrap_or_default();
    eprintln!("venv packages: {installed}");

    let open_dir = TestDir::new();
    let keyed_dir = TestDir::new();
    // Token counts: print mode's result event has them; on ACP only an unstable field of the
    // prompt's answer can, which the double sends when asked (whether Cursor does is unknown).
    let usage = ("CURSOR_DOUBLE_ACP_PROMPT_USAGE", "tokens");
    let open = Server::start(&open_dir, &[usage]);
    let key = "test-client-key-1f6e";
    let keyed = Server::start(&keyed_dir, &[("CURSOR_BRIDGE_API_KEY", &format!("  {key}\n")), usage]);

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/http/openai_client.py");
    let out = Command::new(&python)
        .arg(&script)
        .env("OPEN_URL", open.base_url())
        .env("OPEN_RECORD", open_dir.record_file())
        .env("OPEN_ACP_SESSIONS", open_dir.path().join("home/.cursor/acp-sessions"))
        .env("BACKEND", test_backend())
        .env("KEYED_URL", keyed.base_url())
        .env("KEY", key)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    let last = stdout.lines().last().unwrap_or_default().to_string();
    // Every check ran and passed (none turned into a no-op on this backend).
    let checks = stdout.lines().next().and_then(|l| l.rsplit(", ").next()).and_then(|c| c.strip_suffix(" checks"));
    let all = checks.map(|n| format!("{n} passed, 0 failed"));
    assert!(
        out.status.success() && all.as_deref() == Some(last.as_str()),
        "the openai client checks failed ({}): {last}\nstderr:\n{stderr}\nserver stderr:\n{}",
        out.status,
        open.stderr.lock().unwrap()
    );
    // The client key never reaches the log.
    assert!(!keyed_dir.log_text().contains(key), "the client key is in the log");
}

#[test]
fn every_response_carries_a_request_id_that_is_in_the_log() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[("CURSOR_BRIDGE_API_KEY", "sekrit")]);
    let auth = ("Authorization", "Bearer sekrit");

    let (status, headers, body) = server.request("GET", "/health", &[auth, ("X-Request-Id", "client-id-42")], "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(header(&headers, "x-request-id"), Some("client-id-42"), "the client's id is echoed");

    let (status, headers, _) = server.request("GET", "/v1/models", &[auth], "");
    assert_eq!(status, 200);
    let generated = header(&headers, "x-request-id").expect("an id is generated").to_string();
    assert!(generated.starts_with("req_"), "{generated}");

    // Refusals carry one too: no key, an unknown route, a bad body.
    let (status, headers, body) = server.request("GET", "/v1/models", &[("X-Request-Id", "no-key-7")], "");
    assert_eq!(status, 401, "{body}");
    assert_eq!(header(&headers, "x-request-id"), Some("no-key-7"));
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], "invalid_api_key", "{body}");
    let (status, headers, _) = server.request("GET", "/nowhere", &[auth], "");
    assert_eq!(status, 404);
    assert!(header(&headers, "x-request-id").is_some());

    let chat = r#"{"model":"auto","messages":[{"role":"user","content":"hello over plain HTTP"}]}"#;
    let (status, headers, body) = server.request(
        "POST",
        "/v1/chat/completions",
        &[auth, ("X-Request-Id", "turn-id-99"), ("Content-Type", "application/json")],
        chat,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(header(&headers, "x-request-id"), Some("turn-id-99"));
    let completion: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(completion["choices"][0]["message"]["content"], "Echo: hello over plain HTTP");

    let logged = eventually(TIMEOUT, || {
        let log = dir.log_text();
        log.lines().any(|l| l.contains("client-id-42"))
            && log.lines().any(|l| l.contains(&generated))
            && log.lines().any(|l| l.contains("turn-id-99") && l.contains("turn starts"))
    });
    assert!(logged, "the request ids are in the log lines of their requests:\n{}", dir.log_text());
    assert!(!dir.log_text().contains("sekrit"), "the client key is never logged");
}

#[test]
fn without_a_key_only_local_json_requests_are_served() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[]);
    let json = ("Content-Type", "application/json");
    let chat = r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#;

    // A web page that rebinds its name to 127.0.0.1 still sends its own name as Host.
    let (status, headers, body) = server.request("GET", "/v1/models", &[("Host", "evil.example:9997")], "");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("host_not_allowed"), "{body}");
    assert!(header(&headers, "x-request-id").is_some());
    let (status, _, _) = server.request("GET", "/v1/models", &[("Host", "localhost")], "");
    assert_eq!(status, 200);

    // A cross-origin form or text/plain POST (no preflight) cannot start a turn.
    let (status, _, body) =
        server.request("POST", "/v1/chat/completions", &[("Content-Type", "text/plain;charset=UTF-8")], chat);
    assert_eq!(status, 415, "{body}");
    let (status, _, body) = server.request("POST", "/v1/chat/completions", &[json], chat);
    assert_eq!(status, 200, "{body}");
    assert!(dir.turn_records().len() == 1, "only the JSON request ran the CLI");
}

#[test]
fn a_non_loopback_address_needs_a_client_key() {
    let dir = TestDir::new();
    let mut child = Command::new(sidecar_exe())
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env("CURSOR_BRIDGE_STATE_DIR", dir.path().join("state"))
        .env("CURSOR_BRIDGE_LOG_DIR", dir.log_dir())
        .env("CURSOR_BRIDGE_CLI_PATH", double_exe())
        .env_remove("CURSOR_BRIDGE_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_with_timeout(&mut child, TIMEOUT).expect("serve refuses at once");
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("refusing to listen on 0.0.0.0:0 without a client key"), "{stderr}");

    // An empty key file is a mistake, not "no key".
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, "\n").unwrap();
    let out = Command::new(sidecar_exe())
        .args(["serve", "--listen", "127.0.0.1:0", "--api-key-file"])
        .arg(&key_file)
        .env_remove("CURSOR_BRIDGE_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is empty"));
}

#[test]
fn the_key_file_wins_over_the_environment() {
    let dir = TestDir::new();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, "from-the-file\n").unwrap();
    let key_arg = key_file.to_string_lossy().into_owned();
    let server =
        Server::start_with_args(&dir, &["--api-key-file", &key_arg], &[("CURSOR_BRIDGE_API_KEY", "from-the-env")]);
    let (status, _, _) = server.request("GET", "/health", &[("Authorization", "Bearer from-the-env")], "");
    assert_eq!(status, 401);
    let (status, _, body) = server.request("GET", "/health", &[("Authorization", "Bearer from-the-file")], "");
    assert_eq!(status, 200, "{body}");
}

#[test]
fn two_clients_that_open_alike_get_their_own_folder_and_chat_and_never_the_client_key() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[("CURSOR_BRIDGE_API_KEY", "client-key-never-for-the-cli")]);
    let auth = [("Content-Type", "application/json"), ("Authorization", "Bearer client-key-never-for-the-cli")];
    let hi = r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#;
    let (a, _, body_a) = server.request("POST", "/v1/chat/completions", &auth, hi);
    let (b, _, _) = server.request("POST", "/v1/chat/completions", &auth, hi);
    assert_eq!((a, b), (200, 200), "{body_a}");
    let turns = dir.turn_records();
    assert_eq!(turns.len(), 2);
    assert_ne!(turns[0]["cwd"], turns[1]["cwd"], "two conversations, two private folders");
    assert_ne!(turns[0]["sessionId"], turns[1]["sessionId"], "and two chats");
    for t in &turns {
        assert_eq!(t["bridgeEnv"], serde_json::json!([]), "the CLI saw {}", t["bridgeEnv"]);
    }
    // A follow-up continues one of them, in its folder.
    let answer: serde_json::Value = serde_json::from_str(&body_a).unwrap();
    let answer = answer["choices"][0]["message"]["content"].as_str().unwrap().to_string();
    let follow = serde_json::json!({"model": "auto", "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": answer}, {"role": "user", "content": "more"}]});
    let (status, headers, _) = server.request("POST", "/v1/chat/completions", &auth, &follow.to_string());
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "x-cursor-bridge-resumed"), Some("true"));
    let third = &dir.turn_records()[2];
    assert!(third["cwd"] == turns[0]["cwd"] || third["cwd"] == turns[1]["cwd"], "{third}");
}

#[test]
fn v1_models_lists_every_sku_with_its_base_and_variant() {
    let dir = TestDir::new();
    let list = dir.path().join("models.txt");
    std::fs::write(
        &list,
        "Available models\n\ngpt-5.5 - GPT-5.5\ngpt-5.5-high - GPT-5.5 High\ngpt-5.5-high-fast - GPT-5.5 High Fast\ncomposer-2.5 - Composer 2.5 (current, default)\n",
    )
    .unwrap();
    let server = Server::start(&dir, &[("CURSOR_DOUBLE_MODELS_FILE", list.to_str().unwrap())]);
    let (status, _, body) = server.request("GET", "/v1/models", &[], "");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let rows: Vec<(String, String, String, bool)> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let s = |p: &str| m.pointer(p).and_then(|x| x.as_str()).unwrap_or_default().to_string();
            (s("/id"), s("/base/id"), s("/variant/label"), m["variant"]["default"] == true)
        })
        .collect();
    let want = [
        ("gpt-5.5", "gpt-5.5", "Standard", true),
        ("gpt-5.5-high", "gpt-5.5", "High", false),
        ("gpt-5.5-high-fast", "gpt-5.5", "High · Fast", false),
        ("composer-2.5", "composer-2.5", "Standard", true),
    ];
    let want: Vec<(String, String, String, bool)> =
        want.iter().map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), *d)).collect();
    assert_eq!(rows, want, "{body}");
    // Every variant keeps its family's context window.
    assert!(v["data"].as_array().unwrap()[..3].iter().all(|m| m["context_window"] == 272_000), "{body}");
}

#[test]
fn serve_hands_the_cli_only_what_it_needs_and_what_the_operator_passes() {
    let dir = TestDir::new();
    let server = Server::start(
        &dir,
        &[
            ("AWS_SECRET_ACCESS_KEY", "not-for-the-agent"),
            ("GITHUB_TOKEN", "not-for-the-agent"),
            ("JAVA_HOME", "/opt/jdk"),
            ("CURSOR_BRIDGE_PASS_ENV", "CURSOR_DOUBLE_*, JAVA_HOME"),
        ],
    );
    let chat = r#"{"model":"auto","messages":[{"role":"user","content":"hi"}]}"#;
    let (status, _, body) =
        server.request("POST", "/v1/chat/completions", &[("Content-Type", "application/json")], chat);
    assert_eq!(status, 200, "{body}");
    drop(server);
    let records = dir.records();
    assert!(!records.is_empty());
    for record in records {
        let names: Vec<&str> = record["envNames"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        for kept in ["PATH", "HOME", "JAVA_HOME", "CURSOR_DOUBLE_RECORD"] {
            assert!(names.contains(&kept), "{kept} reaches the CLI: {names:?}");
        }
        for secret in ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"] {
            assert!(!names.contains(&secret), "{secret} stays with the server: {names:?}");
        }
        assert!(!names.iter().any(|n| n.starts_with("CURSOR_BRIDGE_")), "{names:?}");
    }
}

/// A request to an unknown URL has its body read before the 404: a connection whose body was
/// left unread is closed after the answer, and a client that pools connections (llm-comply's,
/// after probing `/v1/responses/compact`) then fails its next request on it.
#[test]
fn a_refused_request_leaves_its_connection_usable() {
    let dir = TestDir::new();
    let server = Server::start(&dir, &[]);
    let mut stream = TcpStream::connect(server.addr).unwrap();
    // A server that stops reading the body must fail the test, not hang it.
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let body = format!("{{\"model\": \"auto\", \"input\": \"{}\"}}", "x".repeat(300_000));
    for (method, path, body) in [("POST", "/v1/responses/compact", body.as_str()), ("GET", "/v1/models", "")] {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            server.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).unwrap();
        let mut status = String::new();
        let read = reader.read_line(&mut status).unwrap_or(0);
        assert!(read > 0, "{method} {path}: the server closed the connection");
        let mut length = 0;
        loop {
            let mut line = String::new();
            assert!(reader.read_line(&mut line).unwrap() > 0, "{path}: the answer ends early");
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut answer = vec![0; length];
        reader.read_exact(&mut answer).unwrap();
        let want = if path == "/v1/models" { " 200 " } else { " 404 " };
        assert!(status.contains(want), "{path}: {status} {}", String::from_utf8_lossy(&answer));
    }
}
