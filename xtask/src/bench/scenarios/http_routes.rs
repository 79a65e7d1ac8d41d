//! HTTP routes: a streamed answer on each of `serve`'s dialects — chat completions, the Responses
//! API, Anthropic's Messages — next to spawning the CLI double directly, and each new route's
//! overhead against chat completions' (issue 23: within 1 ms). All four run interleaved in one
//! loop, in a rotating order, so the differences are paired per iteration.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::json;

use crate::bench::direct::{base_env, run_double_direct};
use crate::bench::report::{Row, Target, Unit};
use crate::bench::{scratch, since, Bins, Ctx};

/// A streamed request of one dialect: its path, body, and the bytes that mark its first text delta
/// and its end.
struct Route {
    name: &'static str,
    path: &'static str,
    body: String,
    first: fn(&[u8]) -> bool,
    end: &'static [u8],
}

/// Chat completions' first chunk carries the role and an empty content; the first text is the
/// first non-empty `content`.
fn chat_text(got: &[u8]) -> bool {
    let key = br#""content":""#;
    got.windows(key.len() + 1).any(|w| w.starts_with(key) && w[key.len()] != b'"')
}

fn routes() -> [Route; 3] {
    let user = json!([{"role": "user", "content": "hi"}]);
    [
        Route {
            name: "chat completions",
            path: "/v1/chat/completions",
            body: json!({"model": "auto", "stream": true, "stream_options": {"include_usage": true}, "messages": user})
                .to_string(),
            first: chat_text,
            end: b"data: [DONE]",
        },
        Route {
            name: "/v1/responses",
            path: "/v1/responses",
            body: json!({"model": "auto", "stream": true, "input": "hi"}).to_string(),
            first: |got| contains(got, b"event: response.output_text.delta"),
            end: b"event: response.completed",
        },
        Route {
            name: "/v1/messages",
            path: "/v1/messages",
            body: json!({"model": "auto", "stream": true, "max_tokens": 100, "messages": user}).to_string(),
            first: |got| contains(got, br#""type":"text_delta""#),
            end: b"event: message_stop",
        },
    ]
}

/// `cursor-bridge serve` on a free loopback port; stopped (SIGTERM, then killed) when dropped.
struct Serve {
    child: Child,
    addr: SocketAddr,
}

impl Serve {
    fn start(root: &Path, bins: &Bins, dir: &Path, ws: &Path) -> Result<Serve> {
        let mut child = Command::new(&bins.bridge)
            .args(["serve", "--listen", "127.0.0.1:0", "--backend", "print", "--workspace"])
            .arg(ws)
            .env_clear()
            .envs(base_env(dir))
            .env("CURSOR_BRIDGE_STATE_DIR", dir.join("state"))
            .env("CURSOR_BRIDGE_LOG_DIR", dir.join("logs"))
            .env("CURSOR_BRIDGE_LOG", "info")
            .env("CURSOR_BRIDGE_CLI_PATH", &bins.double)
            // As `cargo xtask dist` ships it: the input's token estimate is made on every request.
            .env("CURSOR_BRIDGE_TOKENIZER", root.join("sidecar/assets/o200k_base.tiktoken"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting cursor-bridge serve")?;
        let mut stderr = child.stderr.take().ok_or_else(|| anyhow!("no stderr"))?;
        let (mut seen, mut buf) = (Vec::new(), [0u8; 4096]);
        let addr = loop {
            let n = stderr.read(&mut buf)?;
            if n == 0 {
                let _ = child.kill();
                let _ = child.wait();
                bail!("serve did not start: {}", String::from_utf8_lossy(&seen));
            }
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen);
            if let Some(rest) = text.split("listening on http://").nth(1).filter(|r| r.contains('\n')) {
                let addr = rest.lines().next().unwrap_or_default().trim().trim_end_matches("/v1");
                break addr.parse().with_context(|| format!("the listening line: {addr}"))?;
            }
        };
        // The rest of its stderr is drained, so it never blocks on a full pipe.
        std::thread::spawn(move || while stderr.read(&mut buf).is_ok_and(|n| n > 0) {});
        Ok(Serve { child, addr })
    }

    /// One streamed request: (request sent → first text delta, → end of the answer), in ms.
    fn stream(&self, route: &Route) -> Result<(f64, f64)> {
        let mut stream = TcpStream::connect(self.addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nanthropic-version: 2023-06-01\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{}",
            route.path,
            self.addr,
            route.body.len(),
            route.body
        );
        let sent = Instant::now();
        stream.write_all(request.as_bytes())?;
        let (mut got, mut buf, mut first) = (Vec::new(), [0u8; 16 * 1024], None);
        loop {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                bail!("{}: the answer ended without its end marker: {}", route.name, String::from_utf8_lossy(&got));
            }
            // Search only what may hold a marker that straddles two reads.
            let from = got.len().saturating_sub(64);
            got.extend_from_slice(&buf[..n]);
            let now = Instant::now();
            if first.is_none() && (route.first)(&got[from..]) {
                first = Some(now);
            }
            if contains(&got[from..], route.end) {
                let first =
                    first.ok_or_else(|| anyhow!("{}: no text delta: {}", route.name, String::from_utf8_lossy(&got)))?;
                return Ok((since(first, sent), since(now, sent)));
            }
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // SIGTERM: serve stops its turns and the CLIs it started on the way out.
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    if !cfg!(unix) {
        return Ok(vec![Row::missing(
            "http routes",
            "HTTP routes' overhead",
            "Unix only (serve is stopped with SIGTERM)",
        )]);
    }
    let (bins, plan) = (ctx.bins, ctx.plan);
    let dir = scratch()?;
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws)?;
    let ws = ws.canonicalize()?;
    let serve = Serve::start(ctx.root, bins, dir.path(), &ws)?;
    std::thread::sleep(Duration::from_millis(300)); // the warm start's chat id and model list
    let routes = routes();
    let warmup = if plan.smoke { 1 } else { 3 };
    // Per route: first delta and whole answer, absolute and minus the direct spawn's.
    let (mut direct_first, mut direct_whole) = (Vec::new(), Vec::new());
    let mut first = [Vec::new(), Vec::new(), Vec::new()];
    let mut whole = [Vec::new(), Vec::new(), Vec::new()];
    for i in 0..warmup + plan.first_delta {
        let (mut d, mut r) = ((f64::NAN, f64::NAN), [(f64::NAN, f64::NAN); 3]);
        for step in 0..4 {
            match (i + step) % 4 {
                0 => {
                    let run = run_double_direct(bins, dir.path(), &ws, &[], "hi")?;
                    let text = |t: Option<Instant>| t.ok_or_else(|| anyhow!("the double printed no text delta"));
                    d = (since(text(run.first_text)?, run.spawned), since(text(run.last_text)?, run.spawned));
                }
                k => r[k - 1] = serve.stream(&routes[k - 1])?,
            }
            // Room for what serve does after a turn (the chat-id refill, the orphan sweep).
            std::thread::sleep(Duration::from_millis(40));
        }
        if i >= warmup {
            direct_first.push(d.0);
            direct_whole.push(d.1);
            for k in 0..3 {
                first[k].push(r[k].0 - d.0);
                whole[k].push(r[k].1 - d.1);
            }
        }
    }
    let minus = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<f64>>();
    let setting = "`serve --backend print --workspace <ws>` with the CLI double answering at once; each request a new conversation (`hi`, streamed), so each takes the prefetched chat id, like the direct spawn's new `--resume` id.";
    let measures = [
        ("first delta", &first, "direct spawn → first text line", &direct_first, format!("Request sent → first text delta read on the socket, minus the double spawned directly → its first text line, paired per iteration. {setting}")),
        ("whole answer", &whole, "direct spawn → last text line", &direct_whole, "Request sent → the stream's end marker (`[DONE]`, `response.completed`, `message_stop`), minus the direct spawn's last text line: serve's answer also waits for the CLI's result and exit.".to_string()),
    ];
    let mut rows = Vec::new();
    for (what, samples, direct_label, direct, note) in &measures {
        let figure = |name: &str| format!("HTTP {what} overhead, {name} (serve − direct)");
        rows.push(
            Row::new("http routes", &figure(routes[0].name), Unit::Ms, &samples[0])
                .reference(direct_label, direct)
                .note(note.as_str()),
        );
        for k in 1..3 {
            rows.push(
                Row::new("http routes", &figure(routes[k].name), Unit::Ms, &samples[k])
                    .reference("chat completions' overhead", &samples[0]),
            );
        }
    }
    for (k, (what, samples, ..)) in (1..3).flat_map(|k| measures.iter().map(move |m| (k, m))) {
        let figure = format!("{} − chat completions, {what} (paired)", routes[k].name);
        let row = Row::new("http routes", &figure, Unit::Ms, &minus(&samples[k], &samples[0]))
            .target(Target::below(1.0, "≤ 1 ms median"));
        rows.push(if figure.starts_with("/v1/responses − chat completions, first") {
            row.note("Issue 23: each new route's overhead over a direct backend turn stays within 1 ms of chat completions' (the same iteration's, so the double's own variation cancels out).")
        } else {
            row
        });
    }
    drop(serve);
    Ok(rows)
}
