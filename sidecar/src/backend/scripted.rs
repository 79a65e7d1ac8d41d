//! A backend that follows a script instead of running a program: the in-process test tier
//! (`engine/tests/`, `stdio/tests.rs`) drives the engine with it under `tokio::time::pause()`, so sessions, queueing, timeouts and cancel are
//! tested in milliseconds without a process. Each turn's behaviour comes from its prompt:
//! `[[steps]]` at the start of a prompt picks a script (see [`Step::parse`]); anything else
//! answers `Echo: <prompt>`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::backend::reports::CliStatus;
use crate::backend::{Backend, BoxFuture, Chat, Event, EventSink, Located, TurnEnd, TurnFailure, TurnSpec, Warm};
use crate::error::BridgeError;
use crate::util::sync::lock;
use crate::vocab::{ErrorKind, ModelCapabilities, ModelInfo, Usage};

/// One thing a scripted turn does.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Text(String),
    Think(String),
    /// A built-in tool that runs and succeeds (`tool`).
    Tool,
    /// A built-in shell command that ends another way (`builtin:failed|rejected|refused|open`).
    Builtin(BuiltinEnd),
    /// Say nothing for this long (the idle watchdog sees silence).
    Silent(Duration),
    /// Stay alive without events for this long (heartbeats every second).
    Busy(Duration),
    /// Open (start an agent, a session) for this long, saying nothing: not silence.
    Opening(Duration),
    /// Fail; `spoke` says whether the agent produced an event first.
    Fail(ErrorKind, bool),
    /// End without any answer text.
    Empty,
    /// Call a client tool the prompt protocol's way (`call:name:{json arguments}`), the block
    /// streamed in two pieces split inside the marker.
    Call(String, String),
    /// Call a hosted client tool (`host:name:{json}`; `host2:` makes two such calls at once),
    /// wait for the replies, and say `Got: <reply>` for each.
    Host(String, String, usize),
}

impl Step {
    /// `[[text:hi|silent:70|fail:cliFailed]]` → steps. Unknown words are a test bug: panic.
    pub fn parse(prompt: &str) -> Option<Vec<Step>> {
        let body = past_tools_block(prompt).strip_prefix("[[")?.split("]]").next()?;
        Some(
            body.split('|')
                .map(|s| {
                    let (word, arg) = s.split_once(':').unwrap_or((s, ""));
                    let secs = || Duration::from_secs(arg.parse().expect("seconds"));
                    match word {
                        "text" => Step::Text(arg.into()),
                        "think" => Step::Think(arg.into()),
                        "tool" => Step::Tool,
                        "builtin" => Step::Builtin(match arg {
                            "failed" => BuiltinEnd::Failed,
                            "rejected" => BuiltinEnd::Rejected,
                            "refused" => BuiltinEnd::Refused,
                            "open" => BuiltinEnd::Open,
                            other => panic!("unknown builtin end {other}"),
                        }),
                        "silent" => Step::Silent(secs()),
                        "busy" => Step::Busy(secs()),
                        "opening" => Step::Opening(secs()),
                        "fail" => Step::Fail(serde_json::from_value(arg.into()).expect("error kind"), false),
                        "failAfterText" => Step::Fail(serde_json::from_value(arg.into()).expect("error kind"), true),
                        "empty" => Step::Empty,
                        "call" => {
                            let (name, args) = arg.split_once(':').unwrap_or((arg, "{}"));
                            Step::Call(name.into(), args.into())
                        }
                        "host" | "host2" => {
                            let (name, args) = arg.split_once(':').unwrap_or((arg, "{}"));
                            Step::Host(name.into(), args.into(), if word == "host" { 1 } else { 2 })
                        }
                        other => panic!("unknown scripted step {other}"),
                    }
                })
                .collect(),
        )
    }
}

/// How a scripted built-in tool call ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BuiltinEnd {
    /// It ran and failed (a command that exited 1).
    Failed,
    /// Its completion says it was rejected (denied by permissions).
    Rejected,
    /// The backend refused its permission request, and then the agent reported it completed
    /// anyway (Cursor's quirk, docs/cursor-acp.md §8.2).
    Refused,
    /// It started and nothing more was said of it.
    Open,
}

#[derive(Default)]
pub struct Scripted {
    /// Every turn as the engine asked for it, in order of arrival at the backend.
    pub turns: Mutex<Vec<TurnSpec>>,
    pub warmed: Mutex<Vec<Warm>>,
    /// Every folder the engine had locked down for client-tools mode.
    pub locked: Mutex<Vec<std::path::PathBuf>>,
    pub models: Mutex<Vec<ModelInfo>>,
    pub model_calls: AtomicUsize,
    pub running: AtomicUsize,
    pub most_running: AtomicUsize,
    /// Turns whose future was dropped before it ended (cancelled or timed out).
    pub dropped: AtomicUsize,
    /// Resumes of these chats fail before any output, as the CLI does for a chat it lost.
    pub lost_chats: Mutex<Vec<String>>,
    pub missing: std::sync::atomic::AtomicBool,
    /// The next runs fail this way before any output, one entry per run.
    pub fail_next: Mutex<Vec<ErrorKind>>,
    /// It can host the client's tools (`Backend::hosts_tools`).
    pub hosts: std::sync::atomic::AtomicBool,
    /// Its next hosted turn finds the agent cannot take the tools (a build ignoring session MCP).
    pub refuse_hosting: std::sync::atomic::AtomicBool,
    /// It says when a chat is gone (`chat_lost`), as ACP does, so its other failures before
    /// output are not taken for a lost chat (`Backend::silent_failure_loses`).
    pub says_lost: std::sync::atomic::AtomicBool,
    /// Another agent's terms for `doctor` (default: the Cursor CLI's, which this script stands in for).
    pub words: Mutex<Option<&'static crate::backend::AgentWords>>,
    /// What `health` reports instead of a found, logged-in agent.
    pub health: Mutex<Option<CliStatus>>,
    chats: AtomicUsize,
}

impl Scripted {
    pub fn new() -> Arc<Scripted> {
        Arc::new(Scripted::default())
    }

    pub fn turn(&self, i: usize) -> TurnSpec {
        lock(&self.turns)[i].clone()
    }

    pub fn turn_count(&self) -> usize {
        lock(&self.turns).len()
    }

    async fn run(&self, t: TurnSpec, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        lock(&self.turns).push(t.clone());
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_running.fetch_max(now, Ordering::SeqCst);
        let mut guard = RunGuard { backend: self, finished: false };
        let result = self.steps(&t, sink).await;
        guard.finished = true;
        result
    }

    async fn steps(&self, t: &TurnSpec, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        let chat_id = match &t.chat {
            Chat::Resume(id) => {
                if lock(&self.lost_chats).contains(id) {
                    let e = BridgeError::new(ErrorKind::CliFailed, "chat not found").hint("scripted");
                    let chat_lost = self.says_lost.load(Ordering::SeqCst);
                    return Err(TurnFailure {
                        error: e,
                        spoke: false,
                        chat_lost,
                        tools_not_hosted: false,
                        unstartable: false,
                    });
                }
                Some(id.clone())
            }
            Chat::New => Some(format!("chat-{}", self.chats.fetch_add(1, Ordering::SeqCst) + 1)),
            Chat::OneShot => None,
        };
        let scripted_failure = {
            let mut next = lock(&self.fail_next);
            (!next.is_empty()).then(|| next.remove(0))
        };
        if t.hosted_tools.is_some() && self.refuse_hosting.swap(false, Ordering::SeqCst) {
            let error = BridgeError::new(ErrorKind::CliFailed, "session MCP servers ignored").hint("scripted");
            return Err(TurnFailure {
                error,
                spoke: false,
                chat_lost: false,
                tools_not_hosted: true,
                unstartable: false,
            });
        }
        if let Some(kind) = scripted_failure {
            let error = BridgeError::new(kind, format!("scripted {kind}")).hint("scripted");
            return Err(TurnFailure {
                error,
                spoke: false,
                chat_lost: false,
                tools_not_hosted: false,
                unstartable: false,
            });
        }
        let steps = Step::parse(&t.prompt).unwrap_or_else(|| vec![Step::Text(format!("Echo: {}", echoed(&t.prompt)))]);
        let mut final_text = String::new();
        for step in steps {
            match step {
                Step::Text(text) => {
                    final_text.push_str(&text);
                    sink.emit(Event::Text(text)).await
                }
                Step::Think(text) => sink.emit(Event::Thinking(text)).await,
                Step::Tool => {
                    let (call_id, tool, summary) = ("c1".to_string(), "read".to_string(), "Read a.rs".to_string());
                    sink.emit(Event::ToolStarted {
                        call_id: call_id.clone(),
                        tool: tool.clone(),
                        summary: summary.clone(),
                    })
                    .await;
                    sink.emit(Event::ToolCompleted { call_id, tool, summary, ok: true, detail: None, rejected: false })
                        .await
                }
                Step::Builtin(end) => {
                    let (call_id, tool, summary) = ("c2".to_string(), "shell".to_string(), "npm test".to_string());
                    sink.emit(Event::ToolStarted {
                        call_id: call_id.clone(),
                        tool: tool.clone(),
                        summary: summary.clone(),
                    })
                    .await;
                    let (ok, rejected) = match end {
                        BuiltinEnd::Failed => (false, false),
                        BuiltinEnd::Rejected => (false, true),
                        BuiltinEnd::Refused => {
                            sink.refused(&call_id);
                            (true, false)
                        }
                        BuiltinEnd::Open => continue,
                    };
                    let detail = (!ok).then(|| "exit code 1".to_string());
                    sink.emit(Event::ToolCompleted { call_id, tool, summary, ok, detail, rejected }).await
                }
                Step::Silent(d) => tokio::time::sleep(d).await,
                Step::Opening(d) => {
                    let _opening = sink.opening();
                    tokio::time::sleep(d).await
                }
                Step::Busy(d) => {
                    let end = tokio::time::Instant::now() + d;
                    while tokio::time::Instant::now() < end {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        sink.alive();
                    }
                }
                Step::Fail(kind, spoke) => {
                    let error = BridgeError::new(kind, format!("scripted {kind}")).hint("scripted");
                    return Err(TurnFailure {
                        error,
                        spoke,
                        chat_lost: false,
                        tools_not_hosted: false,
                        unstartable: false,
                    });
                }
                Step::Empty => return Ok(TurnEnd { chat_id, usage: None, final_text: String::new() }),
                Step::Host(name, args, n) => {
                    let hosted = t.hosted_tools.as_ref().expect("a host step in a turn without hosted tools");
                    let input: serde_json::Value = serde_json::from_str(&args).expect("host arguments");
                    let mut replies = Vec::new();
                    for _ in 0..n {
                        let (reply, rx) = tokio::sync::oneshot::channel();
                        let call = crate::backend::ClientCall { name: name.clone(), input: input.clone(), reply };
                        hosted.calls.send(call).await.expect("the engine takes calls");
                        replies.push(rx);
                    }
                    for rx in replies {
                        let text = match rx.await {
                            Ok(reply) => format!("Got: {}", reply.text),
                            Err(_) => "Got nothing".to_string(),
                        };
                        final_text.push_str(&text);
                        sink.emit(Event::Text(text)).await;
                    }
                }
                Step::Call(name, args) => {
                    let block = format!("[TOOL_CALLS: [{{\"name\": \"{name}\", \"arguments\": {args}}}]]");
                    final_text.push_str(&block);
                    let (a, b) = block.split_at(4);
                    sink.emit(Event::Text(a.into())).await;
                    sink.emit(Event::Text(b.into())).await
                }
            }
        }
        let usage = Some(Usage { input_tokens: 10, output_tokens: final_text.len() as u64, ..Usage::default() });
        Ok(TurnEnd { chat_id, usage, final_text })
    }
}

/// The prompt after the tools' description client-tools mode puts first (or, hosted tools with
/// a required call, the sentence that says so).
fn past_tools_block(prompt: &str) -> &str {
    if prompt.starts_with("You must call ") {
        return prompt.split_once("\n\n").map_or(prompt, |(_, rest)| rest);
    }
    match prompt.strip_prefix("<client_tools>").and_then(|r| r.split_once("</client_tools>")) {
        Some((_, rest)) => rest.trim_start(),
        None => prompt,
    }
}

/// What an echo repeats: in client-tools mode, not the tools' description, and no call block
/// from a replayed history (a model does not call tools by quoting its prompt).
fn echoed(prompt: &str) -> std::borrow::Cow<'_, str> {
    let prompt = past_tools_block(prompt);
    if prompt.contains("[TOOL_CALLS:") {
        prompt.replace("[TOOL_CALLS:", "[tool calls:").into()
    } else {
        prompt.into()
    }
}

struct RunGuard<'a> {
    backend: &'a Scripted,
    finished: bool,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        self.backend.running.fetch_sub(1, Ordering::SeqCst);
        if !self.finished {
            self.backend.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

pub fn model(id: &str) -> ModelInfo {
    ModelInfo {
        id: id.into(),
        name: id.into(),
        family: id.into(),
        max_input_tokens: 200_000,
        max_output_tokens: 32_000,
        capabilities: ModelCapabilities { thinking: false, tool_calling: false, image_input: false },
        is_default: false,
        base: None,
        variant: None,
    }
}

impl Backend for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }

    fn hosts_tools(&self) -> bool {
        self.hosts.load(Ordering::SeqCst)
    }

    fn silent_failure_loses(&self, _chat: &str) -> bool {
        !self.says_lost.load(Ordering::SeqCst)
    }

    fn locate(&self) -> BoxFuture<'_, Result<Located, BridgeError>> {
        Box::pin(async move {
            if self.missing.load(Ordering::SeqCst) {
                return Err(BridgeError::new(ErrorKind::CliNotFound, "no agent").hint("install it"));
            }
            Ok(Located { path: "/scripted".into() })
        })
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>, BridgeError>> {
        Box::pin(async move {
            self.model_calls.fetch_add(1, Ordering::SeqCst);
            Ok(lock(&self.models).clone())
        })
    }

    fn run_turn<'a>(&'a self, turn: TurnSpec, sink: &'a mut EventSink) -> BoxFuture<'a, Result<TurnEnd, TurnFailure>> {
        Box::pin(self.run(turn, sink))
    }

    fn warm(&self, hint: Warm) {
        lock(&self.warmed).push(hint);
    }

    fn lock_down(&self, folder: &std::path::Path) -> std::io::Result<()> {
        lock(&self.locked).push(folder.to_path_buf());
        crate::backend::cursor::lock_down(folder)
    }

    fn health(&self) -> BoxFuture<'_, CliStatus> {
        Box::pin(async move {
            lock(&self.health).clone().unwrap_or(CliStatus {
                found: true,
                path: Some("/scripted".into()),
                version: Some("scripted".into()),
                logged_in: Some(true),
                account: None,
                api_key: false,
                key_in_environment: false,
                hint: None,
                problem: None,
            })
        })
    }

    /// As the Cursor CLI's backends word it: this script stands in for them.
    fn words(&self) -> &'static crate::backend::AgentWords {
        lock(&self.words).unwrap_or(&crate::backend::cursor::WORDS)
    }

    /// As the Cursor CLI's backends judge it: this script stands in for them.
    fn judge_version(&self, version: &str) -> crate::backend::VersionCheck {
        crate::backend::cursor::check_build(version)
    }

    fn shutdown(&self) {}
}
