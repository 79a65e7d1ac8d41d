//! The tool model inside an ACP turn: text goes out as `agent_message_chunk`s, builtin tools as
//! the usual tool updates, and calls to a tool of a connected MCP server as Cursor's sequence
//! (README "Client-owned tools"; the research's harness that emulates one call):
//!
//! 1. `tool_call {title:"MCP: tool", kind:"other", status:"pending"}`
//! 2. `tool_call_update {title:"<server>: <tool>", rawInput:{providerIdentifier, toolName, args}}`
//! 3. `tool_call_update {status:"in_progress"}`
//! 4. `session/request_permission {toolCall:{title:"<server>-<tool>: <tool>", kind:"other"}}` unless
//!    the configuration lets it run without asking (knob `CURSOR_DOUBLE_ACP_MCP_ASK`)
//! 5. `tools/call {name, arguments}` on the server
//! 6. `tool_call_update {status:"completed", rawOutput:{success, content}}` (or `failed`)
//!
//! A call that takes longer than `mcpCallTimeoutMs` fails with -32001 `Request timed out` (the MCP
//! TypeScript client's answer; it also sends `notifications/cancelled`); a cancelled turn aborts
//! its calls the same way.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::mcp::client::{cancelled_params, Conn, Fail};
use super::mcp::http::Abort;
use super::turn::{content_text, permission_options, Stop, Turn};
use crate::builtins;
use crate::json::{arr, obj, Json};
use crate::permissions::{self, Action, Decision};
use crate::prompt_protocol::Received;
use crate::tool_model::{self, Host, McpRound};
use crate::tool_script::{Builtin, Call};
use crate::tool_state::{result_entry, ChatTools, List};

use super::knobs::{McpAsk, SessionMcp};

/// The MCP TypeScript client's timeout error.
const TIMEOUT_CODE: i64 = -32001;
const TIMEOUT_MESSAGE: &str = "Request timed out";

fn failed_text(name: &str, why: &str) -> String {
    format!("The tool \"{name}\" failed: {why}")
}

fn rejected_text(name: &str) -> String {
    format!("I could not use the tool \"{name}\": the permission request was rejected.")
}

fn denied_text(name: &str) -> String {
    format!("I could not use the tool \"{name}\": {}", builtins::DENIED)
}

fn pending_text(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    format!("The tool {} is still running; I will wait for its result.", quoted.join(", "))
}

/// How one call ended.
enum Done {
    Result(Received),
    Failed(String),
    Rejected,
    Denied,
}

/// A call that may go to its server.
#[derive(Clone)]
struct Ready {
    call: Call,
    conn: Arc<Conn>,
    tool: String,
    tool_call_id: String,
}

impl Host for Turn {
    type Stop = Stop;

    fn say(&mut self, pieces: Vec<String>) -> Result<(), Stop> {
        for p in pieces.iter().filter(|p| !p.is_empty()) {
            self.message(p)?;
        }
        Ok(())
    }

    fn builtin(&mut self, step: usize, b: &Builtin) -> Result<(), Stop> {
        let config = permissions::load(&self.cwd);
        let force = self.server.launch.force;
        let plan = builtins::plan(b, &self.cwd, &config, self.sc.tools_model.builtin_bypass, force);
        self.record(List::Builtins, builtins::entry(b, &plan, step));
        builtins::perform(&plan.write);
        let gated = plan.gated && !(force && self.server.knobs.force_skips_permission);
        self.tool(&plan.spec, gated)
    }

    fn mcp_server_for(&self, call: &Call) -> Option<String> {
        self.link.find(call).map(|(c, _)| c.name.clone())
    }

    fn visible_tools(&self) -> Vec<(String, Json)> {
        self.link.visible_tools()
    }

    fn call_mcp(&mut self, step: usize, calls: &[(String, Call)], state: &mut ChatTools) -> Result<McpRound, Stop> {
        let mut outcomes: Vec<(Call, Done)> = Vec::new();
        if self.sc.tools_model.parallel_mcp_calls {
            let mut ready = Vec::new();
            for (_, call) in calls {
                match self.prepare(step, call)? {
                    Ok(r) => ready.push(r),
                    Err(done) => outcomes.push((call.clone(), done)),
                }
            }
            outcomes.extend(self.execute(step, ready)?);
        } else {
            for (_, call) in calls {
                match self.prepare(step, call)? {
                    Ok(r) => outcomes.extend(self.execute(step, vec![r])?),
                    Err(done) => outcomes.push((call.clone(), done)),
                }
            }
        }
        if self.sc.drop_after_calls && !outcomes.is_empty() {
            // The connection to Cursor's servers drops after the tools ran (docs/cursor-acp.md §6).
            return Err(Stop::Error(super::RpcError::new(-32603, crate::print_mode::PING_TIMEOUT)));
        }
        let mut texts = Vec::new();
        let mut waiting = Vec::new();
        for (call, done) in outcomes {
            match done {
                Done::Result(r) if tool_model::is_pending(&r.text) => waiting.push(call.name),
                Done::Result(r) => state.results.push(r),
                Done::Failed(text) => texts.push(text),
                Done::Rejected => texts.push(rejected_text(&call.name)),
                Done::Denied => texts.push(denied_text(&call.name)),
            }
        }
        Ok(if !texts.is_empty() {
            McpRound::Ended(texts.join(" "))
        } else if !waiting.is_empty() {
            McpRound::Ended(pending_text(&waiting))
        } else {
            McpRound::Complete
        })
    }

    fn record(&mut self, list: List, entry: Json) {
        self.server.state().tool_log.push(list, &self.sid, entry);
    }

    fn chunk_chars(&self) -> usize {
        self.sc.chunk_chars
    }
}

impl Turn {
    /// Before the model plays: the session's servers are connected (at the first prompt, if the
    /// knob says so; servers the approval gate has let through since), and connecting settled.
    pub(super) fn connect_mcp(&mut self) -> Result<(), Stop> {
        if self.server.knobs.mcp_connect_at_prompt {
            self.link.start(&self.server, &self.sid, &self.cwd);
        }
        // Every request of connecting may take the connect timeout.
        let limit = self.server.knobs.mcp_connect_timeout * 8;
        if self.link.wait(&self.ctl, limit) {
            return Err(Stop::Cancelled);
        }
        if self.server.knobs.session_mcp == SessionMcp::Gated {
            self.link.retry_gated(&self.server, &self.sid, &self.cwd);
        }
        Ok(())
    }

    fn log_call(&mut self, step: usize, r: &Ready, request_id: Option<u64>, outcome: &str, error: Option<&str>) {
        let mut e = obj([
            ("step", step.into()),
            ("path", "mcp".into()),
            ("name", r.call.name.as_str().into()),
            ("server", r.conn.name.as_str().into()),
            ("arguments", r.call.arguments.clone()),
            ("toolCallId", r.tool_call_id.as_str().into()),
            ("requestId", request_id.into()),
            ("outcome", outcome.into()),
        ]);
        if let Some(why) = error {
            e.set("error", why.into());
        }
        self.record(List::Calls, e);
    }

    /// Steps 1–4 of the sequence: updates, the configuration, the permission question (asked a
    /// second time after a rejection when the model retries). Err(done): the call will not run.
    fn prepare(&mut self, step: usize, call: &Call) -> Result<Result<Ready, Done>, Stop> {
        let Some((conn, tool)) = self.link.find(call) else {
            return Ok(Err(Done::Failed(crate::prompt_protocol::unavailable(&call.name))));
        };
        let config = permissions::load(&self.cwd);
        let decision = config.decide(&Action::Mcp(&conn.name, &tool), &self.cwd);
        let key = format!("{}:{tool}", conn.name);
        let retries = if self.sc.tools_model.retry_rejected_once { 1 } else { 0 };
        for attempt in 0..=retries {
            let id = crate::ids::tool_call_id();
            let raw_input = obj([
                ("providerIdentifier", conn.name.as_str().into()),
                ("toolName", tool.as_str().into()),
                ("args", call.arguments.clone()),
            ]);
            self.mcp_update(obj([
                ("sessionUpdate", "tool_call".into()),
                ("toolCallId", id.as_str().into()),
                ("title", "MCP: tool".into()),
                ("kind", "other".into()),
                ("status", "pending".into()),
            ]))?;
            self.mcp_update(obj([
                ("sessionUpdate", "tool_call_update".into()),
                ("toolCallId", id.as_str().into()),
                ("title", format!("{}: {tool}", conn.name).into()),
                ("rawInput", raw_input.clone()),
            ]))?;
            self.mcp_update(obj([
                ("sessionUpdate", "tool_call_update".into()),
                ("toolCallId", id.as_str().into()),
                ("status", "in_progress".into()),
            ]))?;
            let ready =
                Ready { call: call.clone(), conn: Arc::clone(&conn), tool: tool.clone(), tool_call_id: id.clone() };
            if decision == Decision::Denied {
                self.reject_update(&id, builtins::DENIED)?;
                self.log_call(step, &ready, None, "denied", None);
                return Ok(Err(Done::Denied));
            }
            let always = self.server.state().sessions.get(&self.sid).is_some_and(|s| s.allowed_mcp.contains(&key));
            let force = self.server.launch.force && self.server.knobs.force_skips_permission;
            let allowlist = config.approval_mode == "allowlist";
            let ask = !always
                && !force
                && match self.server.knobs.mcp_ask {
                    McpAsk::AllowlistMode => allowlist,
                    McpAsk::UnlessAllowed => allowlist && decision != Decision::Allowed,
                    McpAsk::Never => false,
                };
            if !ask {
                return Ok(Ok(ready));
            }
            let title = format!("{}-{tool}: {tool}", conn.name);
            let params = obj([
                ("sessionId", self.sid.as_str().into()),
                (
                    "toolCall",
                    obj([
                        ("toolCallId", id.as_str().into()),
                        ("title", title.as_str().into()),
                        ("kind", "other".into()),
                        ("status", "pending".into()),
                        ("rawInput", raw_input),
                    ]),
                ),
                ("options", permission_options()),
            ]);
            let sid = self.sid.clone();
            let asked = self.ask("session/request_permission", params, Some(&sid));
            let reply = match asked {
                Ok(r) => r,
                Err(stop) => {
                    self.record(
                        List::Permissions,
                        obj([
                            ("toolCallId", id.as_str().into()),
                            ("title", title.as_str().into()),
                            ("answer", "cancelled".into()),
                        ]),
                    );
                    return Err(stop);
                }
            };
            let outcome = reply.get("result").and_then(|r| r.get("outcome"));
            let picked = outcome
                .filter(|o| o.get("outcome").and_then(Json::as_str) == Some("selected"))
                .and_then(|o| o.get("optionId"))
                .and_then(Json::as_str)
                .map(str::to_owned);
            let answer = match (&picked, outcome.and_then(|o| o.get("outcome")).and_then(Json::as_str)) {
                (Some(p), _) => p.clone(),
                (None, Some(other)) => other.to_owned(),
                (None, None) if reply.get("error").is_some() => "error".to_owned(),
                _ => "none".to_owned(),
            };
            self.record(
                List::Permissions,
                obj([
                    ("toolCallId", id.as_str().into()),
                    ("title", title.as_str().into()),
                    ("answer", answer.as_str().into()),
                ]),
            );
            match picked.as_deref() {
                Some("allow-once") => return Ok(Ok(ready)),
                Some("allow-always") => {
                    if let Some(s) = self.server.state().sessions.get_mut(&self.sid) {
                        s.allowed_mcp.push(key.clone());
                    }
                    return Ok(Ok(ready));
                }
                _ => {
                    self.reject_update(&id, "User rejected the request")?;
                    self.log_call(step, &ready, None, "rejected", None);
                    if attempt == retries {
                        return Ok(Err(Done::Rejected));
                    }
                }
            }
        }
        Ok(Err(Done::Rejected))
    }

    /// An update of an MCP call, unless `CURSOR_DOUBLE_ACP_MCP_UPDATES=off`.
    fn mcp_update(&mut self, update: Json) -> Result<(), Stop> {
        if !self.server.knobs.mcp_updates {
            return Ok(());
        }
        self.emit(update)
    }

    fn reject_update(&mut self, id: &str, reason: &str) -> Result<(), Stop> {
        let status = self.server.knobs.rejected_status.clone();
        self.mcp_update(obj([
            ("sessionUpdate", "tool_call_update".into()),
            ("toolCallId", id.into()),
            ("status", status.into()),
            ("rawOutput", crate::tools::rejected(reason)),
        ]))
    }

    /// Steps 5–6 for calls that may run: in flight together, finished as they come back.
    fn execute(&mut self, step: usize, ready: Vec<Ready>) -> Result<Vec<(Call, Done)>, Stop> {
        struct Flight {
            r: Ready,
            request_id: u64,
            abort: Abort,
            deadline: Instant,
            done: Option<Done>,
        }
        let timeout = Duration::from_millis(self.sc.tools_model.mcp_call_timeout_ms);
        let (tx, rx) = mpsc::channel::<(usize, Result<Json, Fail>)>();
        let mut flights: Vec<Flight> = Vec::new();
        for (i, r) in ready.into_iter().enumerate() {
            let request_id = r.conn.next_id();
            let abort = Abort::default();
            let (conn, tool, args, a, tx) =
                (Arc::clone(&r.conn), r.tool.clone(), r.call.arguments.clone(), abort.clone(), tx.clone());
            std::thread::spawn(move || {
                let params = obj([("name", tool.into()), ("arguments", args)]);
                let _ = tx.send((i, conn.rpc(request_id, "tools/call", params, None, Some(&a))));
            });
            flights.push(Flight { r, request_id, abort, deadline: Instant::now() + timeout, done: None });
        }
        drop(tx);
        while flights.iter().any(|f| f.done.is_none()) {
            if self.ctl.is_cancelled() {
                for f in flights.iter().filter(|f| f.done.is_none()) {
                    abandon(&f.r.conn, &f.abort, f.request_id, "AbortError: This operation was aborted");
                }
                let open: Vec<(Ready, u64)> =
                    flights.iter().filter(|f| f.done.is_none()).map(|f| (f.r.clone(), f.request_id)).collect();
                for (r, id) in open {
                    self.log_call(step, &r, Some(id), "cancelled", None);
                }
                return Err(Stop::Cancelled);
            }
            let now = Instant::now();
            for f in flights.iter_mut().filter(|f| f.done.is_none() && now >= f.deadline) {
                let (r, req) = (f.r.clone(), f.request_id);
                let why = format!("MCP error {TIMEOUT_CODE}: {TIMEOUT_MESSAGE}");
                abandon(&r.conn, &f.abort, req, &format!("McpError: {why}"));
                self.failed_update(&r.tool_call_id, &why)?;
                self.log_call(step, &r, Some(req), "timeout", Some(&why));
                f.done = Some(Done::Failed(failed_text(&r.call.name, &why)));
            }
            let (i, outcome) = match rx.recv_timeout(Duration::from_millis(10)) {
                Ok(m) => m,
                Err(_) => continue,
            };
            if flights[i].done.is_some() || flights[i].abort.aborted() {
                continue; // answered after it timed out: nobody is listening any more
            }
            let (r, req) = (flights[i].r.clone(), flights[i].request_id);
            match outcome {
                Ok(result) => {
                    if self.server.knobs.mcp_structured_hangs && structured(&result) {
                        continue; // the CLI's client hangs on these (forum report): the deadline ends it
                    }
                    let text = result_text(&result);
                    let is_error = matches!(result.get("isError"), Some(Json::Bool(true)));
                    let content = result.get("content").cloned().unwrap_or_else(|| arr([]));
                    self.mcp_update(obj([
                        ("sessionUpdate", "tool_call_update".into()),
                        ("toolCallId", r.tool_call_id.as_str().into()),
                        ("status", "completed".into()),
                        ("content", arr([content_text(&text)])),
                        ("rawOutput", obj([("success", (!is_error).into()), ("content", content)])),
                    ]))?;
                    let received =
                        Received { call_id: r.tool_call_id.clone(), name: r.call.name.clone(), is_error, text };
                    let mut entry = result_entry(&received, "mcp");
                    entry.set("pending", tool_model::is_pending(&received.text).into());
                    self.record(List::Results, entry);
                    let label = if tool_model::is_pending(&received.text) { "pending" } else { "result" };
                    self.log_call(step, &r, Some(req), label, None);
                    flights[i].done = Some(Done::Result(received));
                }
                Err(fail) => {
                    let why = fail.describe();
                    self.failed_update(&r.tool_call_id, &why)?;
                    self.log_call(step, &r, Some(req), "error", Some(&why));
                    flights[i].done = Some(Done::Failed(failed_text(&r.call.name, &why)));
                }
            }
        }
        Ok(flights.into_iter().map(|f| (f.r.call, f.done.unwrap_or(Done::Rejected))).collect())
    }

    fn failed_update(&mut self, id: &str, why: &str) -> Result<(), Stop> {
        self.mcp_update(obj([
            ("sessionUpdate", "tool_call_update".into()),
            ("toolCallId", id.into()),
            ("status", "failed".into()),
            ("content", arr([content_text(why)])),
            ("rawOutput", obj([("success", false.into()), ("error", why.into())])),
        ]))
    }
}

/// Cuts the request off and tells the server (on a thread: the turn does not wait for it).
fn abandon(conn: &Arc<Conn>, abort: &Abort, request_id: u64, reason: &str) {
    abort.abort();
    let (conn, params) = (Arc::clone(conn), cancelled_params(request_id, reason));
    std::thread::spawn(move || conn.notify("notifications/cancelled", params, Some(Duration::from_secs(2))));
}

/// The text items of a `tools/call` result, one per line.
fn result_text(result: &Json) -> String {
    match result.get("content") {
        Some(Json::Arr(items)) => items
            .iter()
            .filter(|i| i.get("type").and_then(Json::as_str) == Some("text"))
            .filter_map(|i| i.get("text").and_then(Json::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Structured content: `structuredContent`, or content items that are not text.
fn structured(result: &Json) -> bool {
    result.get("structuredContent").is_some()
        || matches!(result.get("content"), Some(Json::Arr(items))
            if items.iter().any(|i| i.get("type").and_then(Json::as_str) != Some("text")))
}
