//! One `session/prompt` turn, run on a thread of its own so that `session/cancel` and the client's
//! answers to the double's requests are read while it streams.
//!
//! Order of a turn (README "ACP mode"): directive `startupMs` → scripted failure (a JSON-RPC
//! error, or an error streamed as text + `end_turn`) → `available_commands_update` (knob
//! `after-prompt`) → `extraUpdates` → `hang: beforeOutput` → thought chunks → `hang: afterInit` →
//! `plan` → `cursor/update_todos` → `cursor/create_plan` → `cursor/ask_question` → segments and
//! tool calls (permission requests) → `plan` again, all completed → `usage_update` → the answer
//! `{stopReason}`. A cancel at any point ends the turn with `stopReason: "cancelled"`.

use std::sync::Arc;
use std::time::Duration;

use super::{
    commands_update, prompt_scenario, send_commands, str_param, Answer, CommandsTiming, Req, RpcError, Server, TurnCtl,
    AUTH_REQUIRED,
};
use crate::json::{arr, obj, Json};
use crate::output::stderr_line;
use crate::print_mode::{self, Item, CONNECTION_LOST, MAX_RETRIES, NETWORK, PING_TIMEOUT, RATE_LIMIT, STREAM_CLOSED};
use crate::scenario::{Failure, HangPoint, Outcome, Scenario, ToolSpec};
use crate::{auth, ids, tool_model, tools};

/// The soft reject of a model the account cannot use (openab #493, 2026.04.15); the text after
/// `AI Model Not Found` is *invented*.
fn model_not_found(model: &str) -> String {
    format!("Error: I: AI Model Not Found: {model}")
}

/// The first line of the print-mode usage-limit text, streamed as the answer.
const USAGE_LIMIT_TEXT: &str = "Error: You've hit your usage limit";

pub(super) enum Stop {
    Cancelled,
    Error(RpcError),
}

impl From<RpcError> for Stop {
    fn from(e: RpcError) -> Stop {
        Stop::Error(e)
    }
}

/// Checks and starts a turn. Err: answer the request with that error now.
pub fn start(server: &Arc<Server>, req: &Req, params: &Json) -> Result<(), RpcError> {
    let sid = str_param(params, "sessionId")?.to_owned();
    let Some(Json::Arr(blocks)) = params.get("prompt") else {
        return Err(RpcError::zod("prompt", "array"));
    };
    let mut texts = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Json::as_str) {
            Some("text") => texts.push(b.get("text").and_then(Json::as_str).unwrap_or("").to_owned()),
            Some("image") | Some("resource_link") => {}
            Some(other @ ("audio" | "resource")) => {
                return Err(RpcError::invalid_params(&format!(
                    "{other} content is not supported (see promptCapabilities)"
                )))
            }
            _ => return Err(RpcError::zod("prompt", "ContentBlock")),
        }
    }
    let raw = texts.join("\n");
    // The tool fields the chat's first prompt stored apply to this one too.
    let stored = {
        let st = server.state();
        st.sessions.get(&sid).map(|s| s.tools.stored.clone())
    };
    let Some(stored) = stored else {
        return Err(RpcError::session_not_found(&sid));
    };
    let (prompt, sc, directives) = prompt_scenario(server, &raw, stored.as_ref()).map_err(|e| {
        stderr_line(&format!("cursor-agent-double: {e}"));
        RpcError::invalid_params(&format!("cursor-agent-double: {e}"))
    })?;
    let ctl = Arc::new(TurnCtl::default());
    let (cwd, model, mode, first, tool_state, link) = {
        let mut st = server.state();
        let p = st.parameterized;
        let Some(s) = st.sessions.get_mut(&sid) else {
            return Err(RpcError::session_not_found(&sid));
        };
        if s.turn.is_some() {
            return Err(RpcError::invalid_params(&format!("session {sid} already has a prompt running")));
        }
        s.turn = Some(Arc::clone(&ctl));
        s.prompts += 1;
        if s.title.is_empty() {
            s.title = prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").chars().take(60).collect();
        }
        if s.tools.stored.is_none() {
            s.tools.stored = Some(crate::tool_script::chat_fields(&directives));
        }
        let model = server.catalogue.effective(&s.model, p);
        (s.cwd.clone(), model, s.mode.clone(), s.prompts == 1, s.tools.clone(), Arc::clone(&s.link))
    };
    let parsed = crate::prompt_protocol::parse(&prompt);
    let directive_startup = directives.iter().rev().find_map(|d| match d.get("startupMs") {
        Some(Json::Num(n)) => n.as_u64(),
        _ => None,
    });
    let turn = Turn {
        server: Arc::clone(server),
        req: Req { id: req.id.clone(), method: req.method.clone(), log: req.log },
        sid,
        ctl,
        sc,
        raw,
        prompt,
        directive_startup,
        cwd,
        model,
        mode,
        first,
        streamed: String::new(),
        thought_chars: 0,
        chunks: 0,
        updates: 0,
        tool_state,
        link,
        parsed,
        commands: Vec::new(),
    };
    std::thread::spawn(move || turn.run());
    Ok(())
}

pub(super) struct Turn {
    pub(super) server: Arc<Server>,
    req: Req,
    pub(super) sid: String,
    pub(super) ctl: Arc<TurnCtl>,
    pub(super) sc: Scenario,
    /// The prompt text as received (directives in), kept for replays.
    raw: String,
    /// Without directives: the default answer is computed from it.
    prompt: String,
    directive_startup: Option<u64>,
    pub(super) cwd: String,
    /// The wire id the turn runs on.
    model: String,
    /// The session's mode when the prompt came.
    mode: String,
    first: bool,
    /// Message text sent so far.
    streamed: String,
    /// Characters of reasoning streamed (for `thoughtTokens`).
    thought_chars: usize,
    /// Message chunks sent so far (`crashAfterDeltas`, `hang: midStream`).
    chunks: u64,
    updates: usize,
    /// The tool model's state for this chat, written back when the turn ends (cancelled or not).
    tool_state: crate::tool_state::ChatTools,
    pub(super) link: Arc<super::mcp::Link>,
    /// What the prompt carries for the tool model.
    parsed: crate::prompt_protocol::Parsed,
    /// Processes the turn started (`turnGrandchild`), which a cancel may stop.
    commands: Vec<u32>,
}

fn text(t: &str) -> Json {
    obj([("type", "text".into()), ("text", t.into())])
}

fn chunks(t: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = t.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

impl Turn {
    /// The prompt's answer: the stop reason and, with `CURSOR_DOUBLE_ACP_PROMPT_USAGE=tokens`, the
    /// token counts of ACP's unstable end-of-turn usage (the same figures as print mode's `usage`).
    fn answer(&self, stop_reason: String) -> Json {
        let mut answer = obj([("stopReason", stop_reason.into())]);
        if self.server.knobs.prompt_usage {
            let input = 1000 + self.prompt.chars().count() as u64 / 4;
            let output = (self.streamed.chars().count() as u64 / 4).max(1);
            let mut usage = obj([
                ("totalTokens", (input + output).into()),
                ("inputTokens", input.into()),
                ("outputTokens", output.into()),
                ("cachedReadTokens", 17920u64.into()),
                ("cachedWriteTokens", 0u64.into()),
            ]);
            // ACP's `thoughtTokens`: the reasoning among the output, when the turn reasoned.
            if self.thought_chars > 0 {
                usage.set("thoughtTokens", (self.thought_chars as u64 / 4).max(1).into());
            }
            answer.set("usage", usage);
        }
        answer
    }

    fn run(mut self) {
        let outcome = self.play();
        let server = Arc::clone(&self.server);
        if matches!(outcome, Err(Stop::Cancelled)) && server.knobs.cancel_stops_commands {
            for pid in std::mem::take(&mut self.commands) {
                crate::process::kill(pid);
            }
        }
        let result = match outcome {
            Ok(reason) => Ok(self.answer(reason)),
            Err(Stop::Cancelled) => Ok(self.answer("cancelled".into())),
            Err(Stop::Error(e)) => Err(e),
        };
        // History and the end of the turn are settled before the answer, so a client that reacts
        // to it (a new prompt, a load in another process) sees them.
        let stored = {
            let mut st = server.state();
            match st.sessions.get_mut(&self.sid) {
                Some(s) => {
                    if s.turn.as_ref().is_some_and(|t| Arc::ptr_eq(t, &self.ctl)) {
                        s.turn = None;
                    }
                    s.tools = std::mem::take(&mut self.tool_state);
                    if let Ok(answer) = &result {
                        s.turns.push(super::store::Turn {
                            user: self.raw.clone(),
                            agent: self.streamed.clone(),
                            pid: std::process::id(),
                            at_ms: super::now_ms(),
                            mode: self.mode.clone(),
                            model: self.model.clone(),
                            stop_reason: answer.get("stopReason").and_then(Json::as_str).unwrap_or("").to_owned(),
                        });
                    }
                    Some(s.stored())
                }
                None => None,
            }
        };
        if let Some(stored) = stored {
            super::store::save(&stored);
        }
        // `after-turn`: right behind the answer, so even a client that closes stdin on it sees it.
        let after = if self.first && server.knobs.commands == CommandsTiming::AfterTurn {
            commands_update(&server, &self.sid).into_iter().collect()
        } else {
            Vec::new()
        };
        server.reply_then(&self.req, result, after);
    }

    pub(super) fn emit(&mut self, update: Json) -> Result<(), Stop> {
        if self.updates > 0
            && self.sc.delta_delay_ms > 0
            && self.ctl.sleep(Duration::from_millis(self.sc.delta_delay_ms))
        {
            return Err(Stop::Cancelled);
        }
        if self.ctl.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        self.server.update(&self.sid, update);
        self.updates += 1;
        Ok(())
    }

    fn hang(&self, point: HangPoint) -> Result<(), Stop> {
        if self.sc.hang == Some(point) {
            self.ctl.wait_for_cancel();
            return Err(Stop::Cancelled);
        }
        Ok(())
    }

    fn crash(&self) -> ! {
        stderr_line(self.sc.stderr.as_deref().unwrap_or(CONNECTION_LOST));
        self.server.finish("crash", self.sc.exit_code.unwrap_or(1))
    }

    /// Whether a scripted failure applies to this turn (`failTimes`: only the first N turns of
    /// the process that carry it).
    fn applies(&self, key: &str) -> bool {
        let Some(limit) = self.sc.fail_times else {
            return true;
        };
        let mut st = self.server.state();
        let used = st.fail_counts.entry(key.to_owned()).or_insert(0);
        if *used < limit {
            *used += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn message(&mut self, piece: &str) -> Result<(), Stop> {
        if self.sc.crash_after_deltas == Some(self.chunks) {
            self.crash();
        }
        if self.chunks == 1 {
            self.hang(HangPoint::MidStream)?;
        }
        self.emit(obj([("sessionUpdate", "agent_message_chunk".into()), ("content", text(piece))]))?;
        self.chunks += 1;
        self.streamed.push_str(piece);
        Ok(())
    }

    fn segment(&mut self, t: &str, first: bool) -> Result<(), Stop> {
        let mut rest = t;
        if first {
            if let Some(n) = self.sc.huge_line_bytes.filter(|n| *n > 0 && *n <= t.len()) {
                self.message(&t[..n])?;
                rest = &t[n..];
            }
        }
        for piece in chunks(rest, self.sc.chunk_chars) {
            self.message(&piece)?;
        }
        Ok(())
    }

    /// A turn whose whole answer is `t` (errors the real CLI reports as text + `end_turn`).
    fn text_turn(&mut self, t: &str) -> Result<String, Stop> {
        self.segment(t, false)?;
        Ok("end_turn".to_owned())
    }

    fn play(&mut self) -> Result<String, Stop> {
        let sc = self.sc.clone();
        if let Some(ms) = self.directive_startup {
            if self.ctl.sleep(Duration::from_millis(ms)) {
                return Err(Stop::Cancelled);
            }
        }
        if sc.ignore_sigterm {
            self.server.ignore_sigterm.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        // What a shell tool leaves running (a dev server, a watcher): started by the turn.
        if sc.turn_grandchild {
            let pid = crate::process::spawn_grandchild(sc.grandchild_escapes, sc.grandchild_stdio_inherit);
            let mut record =
                self.server.record(obj([("phase", "grandchild".into()), ("sessionId", self.sid.as_str().into())]));
            record.grandchild_pid = pid;
            record.append();
            self.commands.extend(pid);
        }
        if let Some(n) = sc.stderr_bytes {
            crate::output::stderr_bytes(&print_mode::junk(n));
        }
        if let Some(f) = sc.fail.filter(|f| self.applies(f.name())) {
            let internal = |m: &str| Stop::Error(RpcError::new(-32603, m));
            match f {
                Failure::Auth => return Err(RpcError::new(-32000, AUTH_REQUIRED).into()),
                Failure::InvalidKey => return Err(RpcError::new(-32000, auth::INVALID_KEY).into()),
                Failure::RateLimit => return Err(internal(RATE_LIMIT)),
                Failure::Network => return Err(internal(NETWORK)),
                Failure::Ping => return Err(internal(PING_TIMEOUT)),
                Failure::StreamClosed => return Err(internal(STREAM_CLOSED)),
                Failure::MaxRetries => return Err(internal(MAX_RETRIES)),
                Failure::UsageLimit => return self.text_turn(USAGE_LIMIT_TEXT),
                Failure::Model => return self.text_turn(&model_not_found(&self.model.clone())),
                Failure::PlanGated => {} // print_mode::plan makes the answer the gate text
            }
        }
        if let Some(spec) = sc.rpc_error.as_ref().filter(|_| self.applies("rpcError")) {
            let code = match spec.get("code") {
                Some(Json::Num(n)) => n.as_i64().unwrap_or(-32603),
                _ => -32603,
            };
            let message = spec.get("message").and_then(Json::as_str).unwrap_or("Internal error");
            let mut e = RpcError::new(code, message);
            if let Some(d) = spec.get("data") {
                e = e.with_data(d.clone());
            }
            return Err(e.into());
        }
        if let Some(m) = sc.error_envelope.as_ref().filter(|_| self.applies("errorEnvelope")) {
            return Err(RpcError::new(-32603, m).into());
        }
        let unroutable = {
            let st = self.server.state();
            let value = st.sessions.get(&self.sid).map(|s| s.model.value.clone()).unwrap_or_default();
            self.server.knobs.unroutable.iter().any(|u| *u == value || *u == self.model)
        };
        if unroutable {
            return self.text_turn(&model_not_found(&self.model.clone()));
        }
        if self.first && self.server.knobs.commands == CommandsTiming::AfterPrompt {
            send_commands(&self.server, &self.sid);
        }
        for u in &sc.extra_updates {
            self.emit(u.clone())?;
        }
        self.hang(HangPoint::BeforeOutput)?;
        if let Some(thinking) = &sc.thinking {
            self.thought_chars += thinking.chars().count();
            for piece in chunks(thinking, sc.chunk_chars) {
                self.emit(obj([("sessionUpdate", "agent_thought_chunk".into()), ("content", text(&piece))]))?;
            }
        }
        self.hang(HangPoint::AfterInit)?;
        // Asked in words to run a command that takes a while (`doctor --probe`'s cancel
        // question): a model runs it through the shell tool and waits for it.
        if let Some(secs) = long_command(&self.prompt) {
            return self.run_long_command(secs);
        }
        if let Some(entries) = &sc.plan {
            self.emit(plan_update(entries, false))?;
        }
        if let Some(todos) = &sc.todos {
            // A notification without sessionId (MeldShell doc).
            self.server.notify(
                "cursor/update_todos",
                obj([("toolCallId", ids::tool_call_id().into()), ("todos", todo_list(todos)), ("merge", false.into())]),
            );
        }
        if let Some(over) = &sc.create_plan {
            let mut params = obj([
                ("toolCallId", ids::tool_call_id().into()),
                ("name", "Plan".into()),
                ("overview", "What the agent intends to do".into()),
                ("plan", "1. Read the code\n2. Make the change\n3. Run the tests".into()),
                ("todos", todo_list(sc.todos.as_deref().unwrap_or(&[]))),
                ("isProject", false.into()),
            ]);
            params.merge_from(over);
            self.ask("cursor/create_plan", params, None)?;
        }
        if let Some(over) = &sc.ask_question {
            let mut params = obj([
                ("toolCallId", ids::tool_call_id().into()),
                ("title", "A question".into()),
                (
                    "questions",
                    arr([obj([
                        ("id", "q1".into()),
                        ("prompt", "Which approach should I take?".into()),
                        (
                            "options",
                            arr([
                                obj([("id", "a".into()), ("label", "The small fix".into())]),
                                obj([("id", "b".into()), ("label", "The rewrite".into())]),
                            ]),
                        ),
                        ("allowMultiple", false.into()),
                    ])]),
                ),
            ]);
            params.merge_from(over);
            self.ask("cursor/ask_question", params, None)?;
        }

        // The tool model, when it answers this prompt.
        let parsed = std::mem::take(&mut self.parsed);
        let mut state = std::mem::take(&mut self.tool_state);
        tool_model::absorb(self, &mut state, &parsed);
        let played = if tool_model::active(&sc.tools_model, &parsed) {
            let r = self.connect_mcp().and_then(|()| tool_model::play(self, &sc.tools_model, &mut state, &parsed));
            Some(r)
        } else {
            None
        };
        self.tool_state = state;
        if let Some(r) = played {
            r?;
            return self.finish_turn(&sc);
        }

        // Segments and tools, as print mode plans them; ACP kind names are accepted as aliases.
        let mut planned = sc.clone();
        for t in &mut planned.tools {
            t.kind = match t.kind.as_str() {
                "execute" => "shell".to_owned(),
                "search" => "grep".to_owned(),
                other => other.to_owned(),
            };
        }
        let skip_permission = self.server.launch.force && self.server.knobs.force_skips_permission;
        let items = print_mode::plan(&planned, &self.prompt, skip_permission);
        let mut first_segment = true;
        for item in items {
            match item {
                Item::Segment(t) => {
                    if !t.is_empty() {
                        self.segment(&t, first_segment)?;
                    }
                    first_segment = false;
                }
                Item::Pieces(pieces) => {
                    for piece in pieces.iter().filter(|p| !p.is_empty()) {
                        self.message(piece)?;
                    }
                    first_segment = false;
                }
                Item::Tool { spec, gated } => self.tool(&spec, gated)?,
                Item::WriteFile(path, content) => {
                    crate::builtins::perform(&Some((path, content)));
                }
            }
        }
        self.finish_turn(&sc)
    }

    /// The end of a turn: `plan` completed, `usage_update`, crash and hang knobs, the stop reason.
    fn finish_turn(&mut self, sc: &Scenario) -> Result<String, Stop> {
        if let Some(entries) = &sc.plan {
            self.emit(plan_update(entries, true))?;
        }
        if let Some(over) = &sc.usage_update {
            let mut u = obj([
                ("sessionUpdate", "usage_update".into()),
                ("used", (1000 + self.prompt.chars().count() / 4 + self.streamed.chars().count() / 4).into()),
                ("size", 200_000u64.into()),
            ]);
            u.merge_from(over);
            u.set("sessionUpdate", "usage_update".into());
            self.emit(u)?;
        }
        if sc.crash_after_deltas.is_some() {
            self.crash(); // fewer chunks than asked for: crash where the answer would be
        }
        self.hang(HangPoint::MidStream)?;
        Ok(sc.stop_reason.clone().unwrap_or_else(|| "end_turn".to_owned()))
    }

    /// A blocking request to the client; whatever it answers, the turn goes on.
    pub(super) fn ask(&self, method: &str, params: Json, sid: Option<&str>) -> Result<Json, Stop> {
        if self.ctl.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        match self.server.request(method, params, sid, &self.ctl) {
            Answer::Reply(msg) => Ok(msg),
            Answer::Cancelled => Err(Stop::Cancelled),
        }
    }

    pub(super) fn tool(&mut self, spec: &ToolSpec, gated: bool) -> Result<(), Stop> {
        let call_id = ids::tool_call_id();
        let args = tools::args(spec, &self.cwd, &call_id);
        let t = describe(spec, &args, &self.cwd);
        let mut call = obj([
            ("sessionUpdate", "tool_call".into()),
            ("toolCallId", call_id.as_str().into()),
            ("title", t.title.as_str().into()),
            ("kind", t.kind.into()),
            ("status", "pending".into()),
            ("rawInput", t.raw_input.clone()),
        ]);
        if let Some(p) = &t.path {
            call.set("locations", arr([obj([("path", p.as_str().into())])]));
        }
        self.emit(call)?;
        let mut outcome = spec.outcome;
        let mut reason = spec.reason.clone();
        let command = args.get("command").and_then(Json::as_str).unwrap_or("").to_owned();
        let allowed =
            self.server.state().sessions.get(&self.sid).is_some_and(|s| s.allowed_commands.contains(&command));
        if gated && !allowed {
            let params = obj([
                ("sessionId", self.sid.as_str().into()),
                (
                    "toolCall",
                    obj([
                        ("toolCallId", call_id.as_str().into()),
                        ("title", t.title.as_str().into()),
                        ("kind", t.kind.into()),
                        ("status", "pending".into()),
                        ("rawInput", t.raw_input.clone()),
                    ]),
                ),
                ("options", permission_options()),
            ]);
            let sid = self.sid.clone();
            let reply = self.ask("session/request_permission", params, Some(&sid))?;
            let result = reply.get("result");
            let picked = result
                .and_then(|r| r.get("outcome"))
                .filter(|o| o.get("outcome").and_then(Json::as_str) == Some("selected"))
                .and_then(|o| o.get("optionId"))
                .and_then(Json::as_str);
            match picked {
                Some("allow-once") => {}
                Some("allow-always") => {
                    if let Some(s) = self.server.state().sessions.get_mut(&self.sid) {
                        s.allowed_commands.push(command.clone());
                    }
                }
                _ => {
                    outcome = Outcome::Rejected;
                    reason = Some("User rejected the request".to_owned());
                }
            }
        }
        if outcome == Outcome::Rejected {
            // Known Cursor bug: a rejected tool still ends `completed` (knob).
            let reason = reason.unwrap_or_else(|| tools::AUTO_REJECT_REASON.to_owned());
            let status = self.server.knobs.rejected_status.clone();
            return self.emit(obj([
                ("sessionUpdate", "tool_call_update".into()),
                ("toolCallId", call_id.as_str().into()),
                ("status", status.into()),
                ("rawOutput", tools::rejected(&reason)),
            ]));
        }
        self.emit(obj([
            ("sessionUpdate", "tool_call_update".into()),
            ("toolCallId", call_id.as_str().into()),
            ("status", "in_progress".into()),
        ]))?;
        let (status, content, raw_output) = if outcome == Outcome::Failure {
            ("failed", arr([content_text(&t.failure)]), t.raw_failure.clone())
        } else {
            ("completed", t.content.clone(), t.raw_output.clone())
        };
        let mut done = obj([
            ("sessionUpdate", "tool_call_update".into()),
            ("toolCallId", call_id.as_str().into()),
            ("status", status.into()),
            ("content", content),
        ]);
        let raw_output = spec.result.clone().or(raw_output);
        if let Some(r) = raw_output {
            done.set("rawOutput", r);
        }
        self.emit(done)
    }
}

fn permission_option(id: &str, name: &str, kind: &str) -> Json {
    obj([("optionId", id.into()), ("name", name.into()), ("kind", kind.into())])
}

/// The options of every `session/request_permission` Cursor sends.
/// `sleep N` in backticks in a prompt asking to run a shell command.
fn long_command(prompt: &str) -> Option<u64> {
    if !prompt.contains("shell command") {
        return None;
    }
    let rest = &prompt[prompt.find("`sleep ")? + "`sleep ".len()..];
    rest[..rest.find('`')?].trim().parse().ok()
}

impl Turn {
    /// Runs `sleep secs` as the shell tool would: announced, asked about (`session/request_permission`),
    /// started under the agent, waited for; a cancel ends the turn and, with
    /// `CURSOR_DOUBLE_ACP_CANCEL_COMMANDS=stop`, the command (`run`).
    fn run_long_command(&mut self, secs: u64) -> Result<String, Stop> {
        let command = format!("sleep {secs}");
        let call_id = ids::tool_call_id();
        let raw = obj([("command", command.as_str().into())]);
        let call = || {
            obj([
                ("toolCallId", call_id.as_str().into()),
                ("title", format!("`{command}`").into()),
                ("kind", "execute".into()),
                ("status", "pending".into()),
                ("rawInput", raw.clone()),
            ])
        };
        let mut announced = call();
        announced.set("sessionUpdate", "tool_call".into());
        self.emit(announced)?;
        let params =
            obj([("sessionId", self.sid.as_str().into()), ("toolCall", call()), ("options", permission_options())]);
        let sid = self.sid.clone();
        let reply = self.ask("session/request_permission", params, Some(&sid))?;
        let picked = reply
            .get("result")
            .and_then(|r| r.get("outcome"))
            .and_then(|o| o.get("optionId"))
            .and_then(Json::as_str)
            .unwrap_or("");
        if !picked.starts_with("allow") {
            self.emit(obj([
                ("sessionUpdate", "tool_call_update".into()),
                ("toolCallId", call_id.as_str().into()),
                ("status", "failed".into()),
            ]))?;
            return self.text_turn("The command was not run.");
        }
        let child = std::process::Command::new("sleep")
            .arg(secs.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        // The handle is dropped without waiting, as a shell's background job's would be.
        if let Ok(child) = child {
            self.commands.push(child.id());
        }
        self.emit(obj([
            ("sessionUpdate", "tool_call_update".into()),
            ("toolCallId", call_id.as_str().into()),
            ("status", "in_progress".into()),
        ]))?;
        if self.ctl.sleep(Duration::from_secs(secs)) {
            return Err(Stop::Cancelled);
        }
        self.emit(obj([
            ("sessionUpdate", "tool_call_update".into()),
            ("toolCallId", call_id.as_str().into()),
            ("status", "completed".into()),
        ]))?;
        self.text_turn("The command finished.")
    }
}

pub(super) fn permission_options() -> Json {
    arr([
        permission_option("allow-once", "Allow once", "allow_once"),
        permission_option("allow-always", "Allow always", "allow_always"),
        permission_option("reject-once", "Reject", "reject_once"),
    ])
}

pub(super) fn content_text(t: &str) -> Json {
    obj([("type", "content".into()), ("content", text(t))])
}

/// `todos` items: a string is `{id, content, status:"pending"}`; objects go as they are.
fn todo_list(items: &[Json]) -> Json {
    arr(items.iter().enumerate().map(|(i, t)| match t {
        Json::Str(s) => obj([
            ("id", format!("todo-{}", i + 1).into()),
            ("content", s.as_str().into()),
            ("status", "pending".into()),
        ]),
        other => other.clone(),
    }))
}

/// A `plan` update: the full list every time; before the work the first entry is
/// `in_progress`, after it all are `completed`.
fn plan_update(items: &[Json], done: bool) -> Json {
    let entries = items.iter().enumerate().map(|(i, e)| match e {
        Json::Str(s) => obj([
            ("content", s.as_str().into()),
            ("priority", "medium".into()),
            (
                "status",
                match (done, i) {
                    (true, _) => "completed",
                    (false, 0) => "in_progress",
                    _ => "pending",
                }
                .into(),
            ),
        ]),
        other => other.clone(),
    });
    obj([("sessionUpdate", "plan".into()), ("entries", arr(entries))])
}

/// How a print-mode tool kind looks over ACP (*invented* titles and contents; kinds as observed:
/// `execute`, `read`, `edit` with `diff` content, `search`).
struct AcpTool {
    kind: &'static str,
    title: String,
    raw_input: Json,
    path: Option<String>,
    content: Json,
    raw_output: Option<Json>,
    failure: String,
    raw_failure: Option<Json>,
}

fn describe(spec: &ToolSpec, args: &Json, cwd: &str) -> AcpTool {
    let s = |k: &str| args.get(k).and_then(Json::as_str).unwrap_or("").to_owned();
    let short = |p: &str| {
        p.strip_prefix(cwd)
            .map(|r| r.trim_start_matches('/').to_owned())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| p.to_owned())
    };
    let output = spec.output.clone();
    let path = s("path");
    let mut t = AcpTool {
        kind: "other",
        title: spec.kind.clone(),
        raw_input: args.clone(),
        path: None,
        content: arr([content_text(output.as_deref().unwrap_or("ok"))]),
        raw_output: None,
        failure: format!("Error: {} failed", spec.kind),
        raw_failure: None,
    };
    match spec.kind.as_str() {
        "shell" => {
            let command = s("command");
            let stdout = output.unwrap_or_else(|| "ok\n".to_owned());
            t.kind = "execute";
            t.title = format!("`{command}`");
            t.raw_input = obj([("command", command.as_str().into())]);
            t.content = arr([content_text(&stdout)]);
            t.raw_output =
                Some(obj([("exitCode", 0u64.into()), ("stdout", stdout.as_str().into()), ("stderr", "".into())]));
            t.failure = format!("Command failed with exit code 1: {command}");
            t.raw_failure = Some(obj([("exitCode", 1u64.into()), ("stdout", "".into()), ("stderr", "".into())]));
        }
        "read" => {
            t.kind = "read";
            t.title = format!("Read {}", short(&path));
            t.raw_input = obj([("path", path.as_str().into())]);
            t.content = arr([content_text(output.as_deref().unwrap_or(tools::DEFAULT_FILE))]);
            t.failure = format!("File not found: {path}");
            t.path = Some(path);
        }
        "edit" | "write" => {
            let (old, new) = match args.get("strReplace") {
                Some(r) => (
                    r.get("oldText").and_then(Json::as_str).map(str::to_owned),
                    r.get("newText").and_then(Json::as_str).unwrap_or("").to_owned(),
                ),
                None => (None, {
                    let f = s("fileText");
                    if f.is_empty() {
                        s("streamContent")
                    } else {
                        f
                    }
                }),
            };
            t.kind = "edit";
            t.title = format!("{} {}", if spec.kind == "write" { "Write" } else { "Edit" }, short(&path));
            let mut input = obj([("path", path.as_str().into())]);
            let mut diff = obj([("type", "diff".into()), ("path", path.as_str().into())]);
            if let Some(o) = &old {
                input.set("oldText", o.as_str().into());
                diff.set("oldText", o.as_str().into());
            }
            input.set("newText", new.as_str().into());
            diff.set("newText", new.as_str().into());
            t.raw_input = input;
            t.content = arr([diff]);
            t.failure = format!("Could not edit {path}");
            t.path = Some(path);
        }
        "delete" => {
            t.kind = "delete";
            t.title = format!("Delete {}", short(&path));
            t.raw_input = obj([("path", path.as_str().into())]);
            t.content = arr([content_text(&format!("Deleted {path}"))]);
            t.failure = format!("File not found: {path}");
            t.path = Some(path);
        }
        "ls" | "grep" | "glob" => {
            t.kind = "search";
            let (title, found) = match spec.kind.as_str() {
                "ls" => (format!("List {}", short(&path)), "a.txt\nb.txt".to_owned()),
                "grep" => (format!("grep {}", s("pattern")), "app.ts:1: // TODO".to_owned()),
                _ => (format!("Find {}", s("globPattern")), "app.ts".to_owned()),
            };
            t.title = title;
            t.content = arr([content_text(output.as_deref().unwrap_or(&found))]);
        }
        "mcp" => {
            t.title = format!("{}: {}", s("providerIdentifier"), s("toolName"));
        }
        _ => {}
    }
    t
}
