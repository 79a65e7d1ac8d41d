//! The probe's ACP questions, asked through the same `Agent` the backend uses (its launch, its
//! handshake, its MCP host), so what the report says is what a turn would meet: does `agent acp`
//! start, does `session/new` advertise the model catalogue and list the client's tools given to
//! it (and how soon), does a prompt report token usage, what the permission request for one of
//! our MCP tools looks like and whether the bridge's rule recognises it, and what `session/load`
//! answers in another process, and whether `session/cancel` stops a command the agent runs. The
//! prompts are tiny and sent in ask mode, but the cancel question's, which runs in agent mode in a
//! folder of its own where only the one command asked for is allowed.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::agent::{self as cursor_agent, cancelled_outcome, permission_answer, Agent};
use super::quirks::{CURSOR, LISTED_WITHIN};
use crate::backend::acp::{AgentQuirks, Incoming};
use crate::backend::contract::{ClientCall, ToolReply};
use crate::backend::cursor::isolation::OUR_SERVER;
use crate::backend::cursor::probe_notes::{Learnt, SessionTools, LONGEST_TOOLS_WAIT};
use crate::backend::cursor::probing::{Asking, NO_CONSENT};
use crate::backend::reports::ProbeOutcome::{AsAssumed, Differs, Failed};
use crate::vocab::ToolDefinition;

/// One probe prompt may take this long (a real model answers "ok" in seconds).
const PROMPT_LIMIT: Duration = Duration::from_secs(90);
/// How long an agent gets to exit on end of input (and save its sessions) before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(3);
/// The text the probe's echo tool is asked to send back.
const ECHO_TEXT: &str = "cursor-bridge-probe";

fn echo_tool() -> ToolDefinition {
    ToolDefinition {
        name: "echo".into(),
        description: "Returns the text it is given. Used by cursor-bridge's set-up probe.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the text to return"}},
            "required": ["text"],
        }),
    }
}

/// What one prompt showed.
#[derive(Default)]
struct Seen {
    stop_reason: Option<String>,
    answer_chars: usize,
    updates: Vec<String>,
    usage_update: bool,
    prompt_usage: Option<Value>,
    permissions: Vec<Value>,
    tool_calls: Vec<Value>,
    echo_calls: usize,
    error: Option<String>,
}

pub async fn questions(a: &mut Asking<'_>, learnt: &mut Learnt) {
    let started = Instant::now();
    let mut agent = match start(a).await {
        Ok(agent) => agent,
        Err(failure) => {
            let why = failure.error.message.clone();
            if failure.broken {
                learnt.acp_start_failed = Some(why.clone());
                a.found(
                    "acpStart",
                    Differs,
                    format!("`agent acp` did not start: {why}"),
                    "New chats run in print mode with this build (`backend: auto`); `backend: acp` says so on each message. ACP is tried again after 30 minutes or with another build.",
                    json!({}),
                );
            } else {
                a.found(
                    "acpStart",
                    Failed,
                    format!("`agent acp` started but did not get ready: {why}"),
                    failure.error.hint.clone().unwrap_or_else(|| "Fix what the message says, then probe again.".into()),
                    json!({}),
                );
            }
            for id in ["catalogue", "sessionTools", "promptUsage", "toolPermission", "sessionLoad", "cancelCommands"] {
                a.not_asked(id, "`agent acp` did not start");
            }
            return;
        }
    };
    let start_ms = started.elapsed().as_millis() as u64;
    a.found(
        "acpStart",
        AsAssumed,
        format!("`agent acp` started and completed the handshake in {start_ms} ms."),
        "New chats use ACP mode (warm sessions).",
        json!({"startMs": start_ms, "loadSession": agent.load_session}),
    );

    if let Err(e) = agent.attach_tools(&[echo_tool()]).await {
        a.found(
            "sessionTools",
            Failed,
            format!("The bridge could not start its MCP server: {}", e.message),
            "",
            json!({}),
        );
    }
    let opened = Instant::now();
    if let Err(failure) = agent.new_session().await {
        let why = failure.error.message;
        a.found(
            "catalogue",
            Failed,
            format!("`session/new` failed: {why}"),
            "Fix what the message says, then probe again.",
            json!({}),
        );
        for id in ["sessionTools", "promptUsage", "toolPermission", "sessionLoad", "cancelCommands"] {
            a.not_asked(id, "`session/new` failed");
        }
        return;
    }
    let session_ms = opened.elapsed().as_millis() as u64;
    let models = agent.config.options.len();
    if models > 0 {
        a.found(
            "catalogue",
            AsAssumed,
            format!("`session/new` answered in {session_ms} ms with a catalogue of {models} models."),
            "The model picker's variants come from the session's catalogue.",
            json!({"sessionNewMs": session_ms, "models": models}),
        );
    } else {
        a.found(
            "catalogue",
            Differs,
            format!("`session/new` answered in {session_ms} ms without a model catalogue."),
            "The models come from `agent models` and `cursor/list_available_models`; a model is chosen by its id.",
            json!({"sessionNewMs": session_ms, "models": 0}),
        );
    }

    let tools_listed = listed(a, &agent, learnt).await;
    let session = agent.session_id.clone();
    if a.plan.spend {
        if tools_listed {
            tool_permission(a, &mut agent).await;
        } else {
            a.not_asked("toolPermission", "the session did not list the probe's tool");
        }
        prompt_usage(a, &mut agent).await;
    } else {
        a.not_asked("promptUsage", NO_CONSENT);
        a.not_asked("toolPermission", NO_CONSENT);
    }
    // The agent saves its session store when its input ends (docs/cursor-acp.md §8.2): it gets
    // to exit on its own before another process is asked to load the session.
    finish(agent).await;
    session_load(a, &session).await;
    if a.plan.spend {
        cancel_commands(a).await;
    } else {
        a.not_asked("cancelCommands", NO_CONSENT);
    }
}

/// Did the session list the tools given to it, and how soon after `session/new` answered?
async fn listed(a: &mut Asking<'_>, agent: &Agent, learnt: &mut Learnt) -> bool {
    let Some(host) = agent.tools.as_ref() else { return false };
    let at = Instant::now();
    let seen = host.listed_within(LONGEST_TOOLS_WAIT).await;
    let ms = at.elapsed().as_millis() as u64;
    let default = LISTED_WITHIN.as_secs();
    if !seen {
        learnt.session_tools = Some(SessionTools::Never);
        a.found(
            "sessionTools",
            Differs,
            format!("The session did not list the MCP server it was given within {} s.", LONGEST_TOOLS_WAIT.as_secs()),
            "Copilot's tools go to Cursor's model in the prompt (the prompt protocol) from the first message, without waiting for a listing that does not come.",
            json!({"listedMs": null}),
        );
        return false;
    }
    learnt.session_tools = Some(SessionTools::Within { ms });
    let late = Duration::from_millis(ms) > LISTED_WITHIN;
    a.found(
        "sessionTools",
        if late { Differs } else { AsAssumed },
        format!("The session listed the MCP server's tools {ms} ms after `session/new` answered."),
        if late {
            format!(
                "Later than the {default} s the bridge waits by default: with this build it waits up to {} s, so Copilot's tools stay Cursor's own.",
                learnt.tools_wait(LISTED_WITHIN).as_secs()
            )
        } else {
            "Copilot's tools are offered to Cursor's model as its own (our MCP server).".into()
        },
        json!({"listedMs": ms}),
    );
    true
}

async fn prompt_usage(a: &mut Asking<'_>, agent: &mut Agent) {
    let seen = prompt(a, agent, "Reply with the single word: ok").await;
    if let Some(error) = seen.error {
        a.found(
            "promptUsage",
            Failed,
            format!("The prompt failed: {error}"),
            "Fix what the message says, then probe again.",
            json!({}),
        );
        return;
    }
    let measured = json!({
        "stopReason": seen.stop_reason,
        "answerChars": seen.answer_chars,
        "usageUpdate": seen.usage_update,
        "promptUsage": seen.prompt_usage.as_ref().map(|u| u.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>())),
        "updates": seen.updates,
    });
    if seen.prompt_usage.is_some() || seen.usage_update {
        a.found(
            "promptUsage",
            AsAssumed,
            "The prompt's answer reported token usage.".to_string(),
            "Token counts shown to clients are Cursor's own.",
            measured,
        );
    } else {
        a.found(
            "promptUsage",
            Differs,
            "The prompt's answer reported no token usage (no `usage`, no `usage_update`).".to_string(),
            "Token counts are estimated from the text (OpenAI's o200k_base tokenizer; characters / 4 without its vocabulary file) and marked as estimates (`estimated: true`, `tokenizer`, headers `x-cursor-bridge-usage: estimate` and `x-cursor-bridge-tokenizer`).",
            measured,
        );
    }
}

async fn tool_permission(a: &mut Asking<'_>, agent: &mut Agent) {
    let text = format!(
        "Call the tool `echo` of the MCP server `{OUR_SERVER}` once, with text \"{ECHO_TEXT}\". Then reply with the single word: done"
    );
    let seen = prompt(a, agent, &text).await;
    if let Some(error) = &seen.error {
        a.found(
            "toolPermission",
            Failed,
            format!("The prompt failed: {error}"),
            "Fix what the message says, then probe again.",
            json!({}),
        );
        return;
    }
    let asked: Vec<Value> = seen
        .permissions
        .iter()
        .map(|p| {
            let call = p.get("toolCall").cloned().unwrap_or(Value::Null);
            let kinds: Vec<Value> = p
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|o| o.get("kind").cloned())
                .collect();
            json!({"kind": call.get("kind"), "recognised": is_ours(&call), "optionKinds": kinds})
        })
        .collect();
    let recognised_calls = seen.tool_calls.iter().filter(|c| is_ours(c)).count();
    let measured = json!({
        "permissionRequests": asked,
        "toolCallUpdates": seen.tool_calls.len(),
        "recognisedToolCalls": recognised_calls,
        "echoCalls": seen.echo_calls,
    });
    let unrecognised = asked.iter().any(|p| p["recognised"] == false);
    let (outcome, observed, bridge) = match (seen.echo_calls, asked.is_empty(), unrecognised) {
        (0, _, true) => (
            Differs,
            "Cursor asked permission for a tool call the bridge did not recognise as its own server's, and the tool was not called.".to_string(),
            "The bridge refuses permission for tools it does not recognise, so Copilot's tools would not run on ACP with this build: set `cursorBridge.backend` to \"print\" and report it with this report.".to_string(),
        ),
        (0, _, false) => (
            Failed,
            "The model did not call the probe's tool (models sometimes decline).".to_string(),
            "Nothing changes; run the probe again to ask once more.".to_string(),
        ),
        (_, true, _) => (
            AsAssumed,
            "The tool was called without a permission request (the project's allow rule for the bridge's server held).".to_string(),
            "Copilot's tools run without Cursor asking; Copilot asks the person where its tools do.".to_string(),
        ),
        (_, false, false) => (
            AsAssumed,
            format!(
                "Cursor asked permission first ({} request(s)); the bridge recognised its own server's tool and allowed it, and the tool was called.",
                asked.len()
            ),
            "Copilot's tools run; the bridge answers Cursor's permission requests for them itself.".to_string(),
        ),
        (_, false, true) => (
            Differs,
            "The tool was called, but a permission request came for a call the bridge did not recognise as its own.".to_string(),
            "That call was refused; report it with this report.".to_string(),
        ),
    };
    a.found("toolPermission", outcome, observed, bridge, measured);
}

async fn session_load(a: &mut Asking<'_>, session: &str) {
    let mut agent = match start(a).await {
        Ok(agent) => agent,
        Err(f) => {
            a.found(
                "sessionLoad",
                Failed,
                format!("A second `agent acp` did not start: {}", f.error.message),
                "",
                json!({}),
            );
            return;
        }
    };
    if !agent.load_session {
        a.found(
            "sessionLoad",
            Differs,
            "`agent acp` does not advertise `loadSession`.".to_string(),
            "After a restart of the editor (or an idle session's end) a conversation continues in a new session, with its history replayed into it.",
            json!({"loadSession": false}),
        );
        return;
    }
    let at = Instant::now();
    let loaded = agent.load(session).await;
    let ms = at.elapsed().as_millis() as u64;
    let models = agent.config.options.len();
    match loaded {
        Ok(true) => a.found(
            "sessionLoad",
            AsAssumed,
            if models > 0 {
                format!("Another process loaded the session in {ms} ms, with the model catalogue.")
            } else {
                format!("Another process loaded the session in {ms} ms; its answer had no model catalogue.")
            },
            if models > 0 {
                "A conversation continues in its own Cursor session after a restart.".to_string()
            } else {
                "A conversation continues in its own Cursor session after a restart; its models come from the catalogue this build advertised on `session/new`.".to_string()
            },
            json!({"loadMs": ms, "models": models}),
        ),
        Ok(false) => a.found(
            "sessionLoad",
            Differs,
            format!(
                "Another process did not have the session{}.",
                if a.plan.spend { "" } else { " (it had no prompt: a build may keep only sessions that had one)" }
            ),
            "After a restart a conversation continues in a new session, with its history replayed into it.",
            json!({"loadMs": ms, "found": false}),
        ),
        Err(f) => a.found("sessionLoad", Failed, format!("`session/load` failed: {}", f.error.message), "The conversation would continue in a new session with its history.", json!({"loadMs": ms})),
    }
    finish(agent).await;
}

/// The command the cancel question asks the agent to run: harmless, long, and easy to tell from
/// anything else the agent runs.
const LONG_COMMAND: &str = "sleep 97";
/// How long the agent may take to start the command before the question gives up.
const COMMAND_START_LIMIT: Duration = Duration::from_secs(60);
/// After `session/cancel`: how long the agent gets to end the turn, and then its command.
const AFTER_CANCEL: Duration = Duration::from_secs(3);

/// Does `session/cancel` stop a command the agent runs? In agent mode, in the scratch folder that
/// is not locked down, the agent is asked to run [`LONG_COMMAND`]; the one permission request for
/// that command is allowed, every other refused. Once a process the turn started runs, the turn
/// is cancelled, and after a grace the probe looks whether it still runs. Whatever it finds, the
/// probe then ends what the turn left, as Stop does.
async fn cancel_commands(a: &mut Asking<'_>) {
    if !crate::backend::process::SEES_PROCESSES {
        a.not_asked("cancelCommands", "the probe cannot see processes on this platform");
        return;
    }
    let mut agent = match cursor_agent::start(a.command, &a.cli.env(), a.shell_scratch, a.cli.has_key()).await {
        Ok(agent) => agent,
        Err(f) => {
            a.found("cancelCommands", Failed, format!("`agent acp` did not start: {}", f.error.message), "", json!({}));
            return;
        }
    };
    if let Err(f) = agent.new_session().await {
        a.found("cancelCommands", Failed, format!("`session/new` failed: {}", f.error.message), "", json!({}));
        return;
    }
    let session = agent.session_id.clone();
    if let Err(e) = agent.conn.request("session/set_mode", json!({"sessionId": session, "modeId": "agent"})).await {
        tracing::debug!(error = %e, "the probe could not set agent mode");
    }
    let before = crate::backend::process::descendants_of(agent.pid());
    let mut inbox = agent.begin_turn();
    a.spent += 1;
    let conn = agent.conn.clone();
    let text = format!("Run this shell command in the terminal and wait for it to finish: `{LONG_COMMAND}`");
    let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
    let request = conn.request("session/prompt", params);
    tokio::pin!(request);
    let started_by = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut asked = 0usize;
    // Wait for the command to run (or the turn to end without it).
    let commands: Vec<u32> = loop {
        tokio::select! {
            _ = &mut request => break Vec::new(),
            Some(message) = inbox.recv() => match message {
                Incoming::Request { id, method, params } if method == "session/request_permission" => {
                    asked += 1;
                    let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
                    let ours = call.get("kind").and_then(Value::as_str) == Some("execute")
                        && call.to_string().contains(LONG_COMMAND);
                    let wanted: &[&str] = if ours { &["allow_once"] } else { &["reject_once", "reject_always"] };
                    agent.answer(id, permission_answer(&params, wanted)).await;
                }
                Incoming::Request { id, method, .. } if method.starts_with("cursor/") => agent.answer(id, cancelled_outcome()).await,
                Incoming::Request { id, .. } => agent.refuse(id, -32601, "Method not found").await,
                Incoming::Notification { .. } => {}
            },
            _ = tick.tick() => {
                let new: Vec<u32> = crate::backend::process::descendants_of(agent.pid())
                    .into_iter()
                    .filter(|p| !before.contains(p))
                    .collect();
                if !new.is_empty() {
                    break new;
                }
                if started_by.elapsed() > COMMAND_START_LIMIT {
                    break Vec::new();
                }
            }
        }
    };
    if commands.is_empty() {
        let _ = conn.notify("session/cancel", json!({"sessionId": session})).await;
        agent.end_turn().await;
        agent.end_what_the_turn_started(true);
        a.found(
            "cancelCommands",
            Failed,
            "The agent did not start the command (the model may decline, or the build ran it elsewhere).",
            "Nothing changes; run the probe again to ask once more.",
            json!({"permissionRequests": asked}),
        );
        finish(agent).await;
        return;
    }
    let cancelled_at = Instant::now();
    let _ = conn.notify("session/cancel", json!({"sessionId": session})).await;
    let stop = tokio::time::timeout(AFTER_CANCEL, &mut request).await;
    let answered = stop.as_ref().ok().and_then(|r| r.as_ref().ok()).and_then(|r| r.get("stopReason")).cloned();
    let cancel_ms = cancelled_at.elapsed().as_millis() as u64;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let left: Vec<u32> = commands.iter().copied().filter(|p| crate::backend::process::pid_runs(*p)).collect();
    agent.end_turn().await;
    agent.end_what_the_turn_started(true);
    let measured = json!({
        "commandProcesses": commands.len(),
        "stillRunning": left.len(),
        "stopReason": answered,
        "cancelAnsweredMs": stop.is_ok().then_some(cancel_ms),
        "permissionRequests": asked,
    });
    if left.is_empty() {
        a.found(
            "cancelCommands",
            AsAssumed,
            "`session/cancel` ended the turn and the command with it.",
            "Stop also ends, itself, every process a turn started under the agent, so nothing outlives Stop either way.",
            measured,
        );
    } else {
        a.found(
            "cancelCommands",
            Differs,
            format!("After `session/cancel` the command still ran ({} process(es)).", left.len()),
            "Stop ends every process a turn started under the agent itself, after `session/cancel`, so the command does not outlive Stop.",
            measured,
        );
    }
    finish(agent).await;
}

/// `agent acp` in the scratch folder, started as the backend starts it.
async fn start(a: &Asking<'_>) -> Result<Agent, cursor_agent::StartFailure> {
    cursor_agent::start(a.command, &a.cli.env(), a.scratch, a.cli.has_key()).await
}

/// Whether the bridge takes `call` (a `tool_call` update, a permission request's `toolCall`) for
/// one of its own server's.
fn is_ours(call: &Value) -> bool {
    CURSOR.is_our_tool_call(call)
}

/// End of input, then a bounded wait for the agent to exit by itself (killed after it).
async fn finish(mut agent: Agent) {
    agent.close_input();
    let deadline = Instant::now() + EXIT_GRACE;
    while agent.alive() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Send one prompt in ask mode and watch what comes back, answering the agent's requests by the
/// bridge's own rules: permission for our server's tools only, nothing else.
async fn prompt(a: &mut Asking<'_>, agent: &mut Agent, text: &str) -> Seen {
    let mut seen = Seen::default();
    let session = agent.session_id.clone();
    if let Err(e) = agent.conn.request("session/set_mode", json!({"sessionId": session, "modeId": "ask"})).await {
        tracing::debug!(error = %e, "the probe could not set ask mode");
    }
    let (calls_tx, mut calls) = mpsc::channel::<ClientCall>(8);
    if let Some(host) = &agent.tools {
        host.begin_turn();
        host.serve(Some(calls_tx));
    }
    let mut inbox = agent.begin_turn();
    a.spent += 1;
    let conn = agent.conn.clone();
    let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
    let request = conn.request("session/prompt", params);
    tokio::pin!(request);
    let deadline = tokio::time::sleep(PROMPT_LIMIT);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            answer = &mut request => {
                match answer {
                    Ok(result) => {
                        seen.stop_reason = result.get("stopReason").and_then(Value::as_str).map(str::to_owned);
                        seen.prompt_usage = result.get("usage").filter(|u| !u.is_null()).cloned();
                    }
                    Err(e) => seen.error = Some(e.to_string()),
                }
                break;
            }
            Some(call) = calls.recv() => {
                seen.echo_calls += 1;
                let text = call.input.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
                let _ = call.reply.send(ToolReply { text, is_error: false });
            }
            Some(message) = inbox.recv() => match message {
                Incoming::Notification { method, params } if method == "session/update" => {
                    let update = params.get("update").cloned().unwrap_or(Value::Null);
                    let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("?").to_owned();
                    match kind.as_str() {
                        "agent_message_chunk" => {
                            seen.answer_chars += update.pointer("/content/text").and_then(Value::as_str).map_or(0, |t| t.chars().count());
                        }
                        "usage_update" => seen.usage_update = true,
                        "tool_call" => seen.tool_calls.push(update.clone()),
                        _ => {}
                    }
                    if !seen.updates.contains(&kind) {
                        seen.updates.push(kind);
                    }
                }
                Incoming::Notification { .. } => {}
                Incoming::Request { id, method, params } if method == "session/request_permission" => {
                    let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
                    let wanted: &[&str] = if is_ours(&call) { &["allow_once", "allow_always"] } else { &["reject_once", "reject_always"] };
                    agent.answer(id, permission_answer(&params, wanted)).await;
                    seen.permissions.push(params);
                }
                Incoming::Request { id, method, .. } if method.starts_with("cursor/") => {
                    agent.answer(id, cancelled_outcome()).await;
                }
                Incoming::Request { id, .. } => agent.refuse(id, -32601, "Method not found").await,
            },
            () = &mut deadline => {
                seen.error = Some(format!("no answer within {} s", PROMPT_LIMIT.as_secs()));
                let _ = conn.notify("session/cancel", json!({"sessionId": session})).await;
                break;
            }
        }
    }
    if let Some(host) = &agent.tools {
        host.serve(None);
    }
    agent.end_turn().await;
    agent.end_what_the_turn_started(true);
    seen
}
