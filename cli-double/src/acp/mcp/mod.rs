//! A session's MCP servers (`mcpServers` of `session/new` / `session/load`): connected as the
//! `CURSOR_DOUBLE_ACP_SESSION_MCP` knob says, on a thread of their own (a turn that needs them
//! waits until connecting has settled), and the tools the model may see.

pub mod approvals;
pub mod client;
pub mod http;

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::knobs::SessionMcp;
use super::{lock, Server, TurnCtl};
use crate::json::{obj, Json};
use crate::tool_script::Call;
use crate::tool_state::List;
use client::{Conn, Entry};

/// Cursor shows the model only the first 40 tools (old Cursor docs; whether the CLI still does is
/// unknown, knob `CURSOR_DOUBLE_ACP_MCP_TOOL_LIMITS`) …
pub const MAX_TOOLS: usize = 40;
/// … and drops tools whose server name + tool name is longer than this.
pub const MAX_NAME_CHARS: usize = 60;

#[derive(Default)]
struct Inner {
    started: bool,
    settled: bool,
    entries: Vec<Entry>,
    /// Entries the approval gate kept out (looked at again at each prompt).
    gated: Vec<Entry>,
    conns: Vec<Arc<Conn>>,
    /// (server, tool) the model sees.
    visible: Vec<(String, String)>,
}

#[derive(Default)]
pub struct Link {
    inner: Mutex<Inner>,
    cv: Condvar,
}

impl Link {
    pub fn new(entries: Vec<Entry>) -> Arc<Link> {
        let link = Link::default();
        {
            let mut i = lock(&link.inner);
            i.settled = entries.is_empty();
            i.started = entries.is_empty();
            i.entries = entries;
        }
        Arc::new(link)
    }

    /// Starts connecting (once), on a thread of its own.
    pub fn start(self: &Arc<Self>, server: &Arc<Server>, sid: &str, cwd: &str) {
        let entries = {
            let mut i = lock(&self.inner);
            if i.started {
                return;
            }
            i.started = true;
            i.entries.clone()
        };
        let (link, server, sid, cwd) = (Arc::clone(self), Arc::clone(server), sid.to_owned(), cwd.to_owned());
        std::thread::spawn(move || {
            let (conns, gated) = connect(&server, &sid, &entries, &cwd);
            let entries = {
                let mut i = lock(&link.inner);
                i.conns = conns;
                i.gated = gated;
                i.visible = visible(&i.conns, server.knobs.mcp_tool_limits);
                records(&i.conns, &i.visible)
            };
            // On record before it counts as settled: the exit line, written once connecting has
            // settled, must have it.
            for e in entries {
                server.state().tool_log.push(List::McpServers, &sid, e);
            }
            lock(&link.inner).settled = true;
            link.cv.notify_all();
        });
    }

    /// Waits until connecting has settled; true when the turn was cancelled meanwhile.
    pub fn wait(&self, ctl: &TurnCtl, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut i = lock(&self.inner);
        while !i.settled && Instant::now() < deadline {
            if ctl.is_cancelled() {
                return true;
            }
            i = self.cv.wait_timeout(i, Duration::from_millis(10)).unwrap_or_else(|e| e.into_inner()).0;
        }
        ctl.is_cancelled()
    }

    /// At the end of the process: lets connecting that is under way finish (bounded), so its
    /// record is complete.
    pub fn settle(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut i = lock(&self.inner);
        while i.started && !i.settled && Instant::now() < deadline {
            i = self.cv.wait_timeout(i, Duration::from_millis(10)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// The gate is looked at again before each prompt: servers approved since are connected now.
    pub fn retry_gated(&self, server: &Arc<Server>, sid: &str, cwd: &str) {
        let gated = {
            let i = lock(&self.inner);
            if !i.settled || i.gated.is_empty() {
                return;
            }
            i.gated.clone()
        };
        let approved: Vec<Entry> = gated.iter().filter(|e| approvals::check(e, cwd).0).cloned().collect();
        if approved.is_empty() {
            return;
        }
        let (conns, still) = connect(server, sid, &approved, cwd);
        let fresh: Vec<String> = conns.iter().map(|c| c.name.clone()).collect();
        let mut i = lock(&self.inner);
        i.gated.retain(|e| !approved.iter().any(|a| a.name == e.name) || still.iter().any(|s| s.name == e.name));
        i.conns.extend(conns);
        i.visible = visible(&i.conns, server.knobs.mcp_tool_limits);
        let entries: Vec<Json> = records(&i.conns, &i.visible)
            .into_iter()
            .filter(|e| e.get("name").and_then(Json::as_str).is_some_and(|n| fresh.iter().any(|f| f == n)))
            .collect();
        drop(i);
        for e in entries {
            server.state().tool_log.push(List::McpServers, sid, e);
        }
    }

    /// The tools the model can see, with their input schemas, in the servers' order.
    pub fn visible_tools(&self) -> Vec<(String, Json)> {
        let i = lock(&self.inner);
        let schema = |server: &str, tool: &str| {
            let conn = i.conns.iter().find(|c| c.name == server)?;
            conn.schemas.iter().find(|(n, _)| n == tool).map(|(_, s)| s.clone())
        };
        i.visible.iter().map(|(s, t)| (t.clone(), schema(s, t).unwrap_or(Json::Obj(Vec::new())))).collect()
    }

    /// The server and the listed tool a call means, if the model can see it.
    pub fn find(&self, call: &Call) -> Option<(Arc<Conn>, String)> {
        let i = lock(&self.inner);
        let (server, tool) = i
            .visible
            .iter()
            .find(|(s, t)| *t == call.name && call.server.as_ref().is_none_or(|want| want == s))?
            .clone();
        let conn = i.conns.iter().find(|c| c.name == server)?;
        Some((Arc::clone(conn), tool))
    }
}

/// Connects the entries the knob lets through; records the ones it does not. Returns the
/// connections and the entries the approval gate held back.
fn connect(server: &Arc<Server>, sid: &str, entries: &[Entry], cwd: &str) -> (Vec<Arc<Conn>>, Vec<Entry>) {
    let policy = server.knobs.session_mcp;
    let policy_name = match policy {
        SessionMcp::Honoured => "honoured",
        SessionMcp::Ignored => "ignored",
        SessionMcp::Gated => "gated",
    };
    let mut conns = Vec::new();
    let mut gated = Vec::new();
    for e in entries {
        let mut note = obj([
            ("name", e.name.as_str().into()),
            ("url", e.url.as_str().into()),
            ("type", e.kind.as_str().into()),
            ("policy", policy_name.into()),
        ]);
        if policy == SessionMcp::Ignored {
            note.set("connected", false.into());
            server.state().tool_log.push(List::McpServers, sid, note);
            continue;
        }
        if policy == SessionMcp::Gated {
            let (ok, key, file) = approvals::check(e, cwd);
            note.set("approvalKey", key.into());
            note.set("approvalFile", file.map(|f| f.to_string_lossy().into_owned()).into());
            if !ok {
                note.set("connected", false.into());
                server.state().tool_log.push(List::McpServers, sid, note);
                gated.push(e.clone());
                continue;
            }
        }
        match Conn::connect(e, server.knobs.mcp_connect_timeout) {
            (Ok(c), _) => conns.push(Arc::new(c)),
            (Err(why), probes) => {
                crate::output::stderr_line(&format!("cursor-agent-double: MCP server {}: {why}", e.name));
                note.set("connected", false.into());
                note.set("error", why.into());
                note.set("probes", Json::Arr(probes));
                server.state().tool_log.push(List::McpServers, sid, note);
            }
        }
    }
    (conns, gated)
}

/// The first [`MAX_TOOLS`] listed tools whose server + tool name fit in [`MAX_NAME_CHARS`].
fn visible(conns: &[Arc<Conn>], limits: bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut index = 0;
    for c in conns {
        for t in &c.tools {
            let fits = c.name.chars().count() + t.chars().count() <= MAX_NAME_CHARS;
            if !limits || (index < MAX_TOOLS && fits) {
                out.push((c.name.clone(), t.clone()));
            }
            index += 1;
        }
    }
    out
}

fn records(conns: &[Arc<Conn>], visible: &[(String, String)]) -> Vec<Json> {
    conns
        .iter()
        .map(|c| {
            let seen: Vec<String> = visible.iter().filter(|(s, _)| *s == c.name).map(|(_, t)| t.clone()).collect();
            obj([
                ("name", c.name.as_str().into()),
                ("url", c.url.as_str().into()),
                ("type", "http".into()),
                ("connected", true.into()),
                ("mcpSessionId", c.session_id().into()),
                ("probes", Json::Arr(c.probes.clone())),
                ("requests", Json::Arr(c.log())),
                ("tools", client::names(&c.tools)),
                ("visibleTools", client::names(&seen)),
            ])
        })
        .collect()
}
