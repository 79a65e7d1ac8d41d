//! What a turn streams while it runs, whoever runs it. Backends emit these through an
//! [`EventSink`]; the engine adds the session and usage events; each front door turns them into
//! its own wire format (stdio: numbered `chat/delta` notifications; HTTP: OpenAI chunks).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::util::sync::lock;
use crate::util::text::Fnv;
use crate::vocab::Usage;

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// New answer text (never cumulative).
    Text(String),
    /// New reasoning text (never cumulative).
    Thinking(String),
    /// The current thinking block is complete.
    ThinkingDone,
    ToolStarted {
        call_id: String,
        tool: String,
        summary: String,
    },
    /// `ok` is false for failures, errors and rejections; `rejected`: it did not run (denied by
    /// permissions, a permission request refused), as opposed to a tool that ran and failed.
    ToolCompleted {
        call_id: String,
        tool: String,
        summary: String,
        ok: bool,
        detail: Option<String>,
        rejected: bool,
    },
    /// The agent asked permission for something it may not do unattended and was refused.
    PermissionDenied {
        tool: String,
        summary: String,
        hint: String,
    },
    /// Which session the turn runs in; sent once, before any text.
    Session {
        session_id: String,
        resumed: bool,
        replayed: bool,
    },
    Usage(Usage),
    /// The model calls one of the client's tools (client-tools mode): the engine emits these, with
    /// ids of its own, once the agent's reply is complete.
    ToolCall {
        call_id: String,
        name: String,
        input: serde_json::Value,
    },
}

/// Holds back answer text that may be the start of something the engine reads out of the answer
/// (client-tools mode: a block of tool calls), so the client never sees it.
pub trait TextHold: Send {
    /// Takes new answer text; returns what may be shown now.
    fn push(&mut self, text: &str) -> String;
    /// The reply ended: what was held back but is plain text after all.
    fn flush(&mut self) -> String;
    /// What was taken out of the answer (from its marker on), if anything.
    fn block(&self) -> Option<&str>;
}

/// Client-tools mode: the agent's own tools must not run. Any built-in tool that ran trips this,
/// and the engine stops the turn: one that completed other than rejected (a shell command that
/// failed still ran), and, by the reply's end, one that started and was never rejected (no
/// completion says it did not run). A rejection is the tool's own completion saying so, or the
/// backend refusing its permission request ([`ToolPolicy::refused`]); calls of the client's own
/// tools the backend hosts are not built-ins ([`ToolPolicy::disown`]).
#[derive(Debug)]
pub struct ToolPolicy {
    /// What ran, once something did (the first one is kept).
    tripped: tokio::sync::watch::Sender<Option<String>>,
    calls: std::sync::Mutex<Calls>,
}

/// Built-in calls seen so far, by call id.
#[derive(Debug, Default)]
struct Calls {
    /// Started, not yet completed nor refused: what each is.
    open: Vec<(String, String)>,
    refused: std::collections::HashSet<String>,
    disowned: std::collections::HashSet<String>,
}

impl Default for ToolPolicy {
    fn default() -> Self {
        ToolPolicy { tripped: tokio::sync::watch::channel(None).0, calls: Default::default() }
    }
}

/// How a tool call is named in the policy's error: `shell (npm test)`.
fn what(tool: &str, summary: &str) -> String {
    if summary.is_empty() {
        tool.to_owned()
    } else {
        format!("{tool} ({summary})")
    }
}

impl ToolPolicy {
    pub fn trip(&self, what: String) {
        self.tripped.send_if_modified(|t| t.is_none() && t.replace(what).is_none());
    }

    /// A built-in tool started: it ran unless something says it was rejected by the reply's end.
    pub fn started(&self, call_id: &str, tool: &str, summary: &str) {
        let mut calls = lock(&self.calls);
        if !calls.disowned.contains(call_id) && !calls.refused.contains(call_id) {
            calls.open.push((call_id.to_owned(), what(tool, summary)));
        }
    }

    /// A built-in tool completed: unless rejected (by itself or by a refused permission), it ran.
    pub fn completed(&self, call_id: &str, tool: &str, summary: &str, rejected: bool) {
        let mut calls = lock(&self.calls);
        calls.open.retain(|(id, _)| id != call_id);
        if rejected || calls.refused.contains(call_id) || calls.disowned.contains(call_id) {
            return;
        }
        drop(calls);
        self.trip(what(tool, summary));
    }

    /// The backend refused the call's permission request: whatever the agent reports of it later
    /// (Cursor reports some rejected tools `completed`, docs/cursor-acp.md §8.2), it did not run.
    pub fn refused(&self, call_id: &str) {
        let mut calls = lock(&self.calls);
        calls.open.retain(|(id, _)| id != call_id);
        calls.refused.insert(call_id.to_owned());
    }

    /// The call is one of the client's tools the backend hosts, not a built-in (known only after
    /// its start was reported, as Cursor names an MCP call in a later update).
    pub fn disown(&self, call_id: &str) {
        let mut calls = lock(&self.calls);
        calls.open.retain(|(id, _)| id != call_id);
        calls.disowned.insert(call_id.to_owned());
    }

    /// What ran so far, if a built-in tool did.
    pub fn tripped_now(&self) -> Option<String> {
        self.tripped.borrow().clone()
    }

    /// At the reply's end: what ran, counting a built-in that started and was never rejected.
    pub fn tripped_by_end(&self) -> Option<String> {
        if let Some(what) = self.tripped_now() {
            return Some(what);
        }
        let first_open = lock(&self.calls).open.first().map(|(_, what)| what.clone());
        if let Some(what) = &first_open {
            self.trip(what.clone());
        }
        first_open
    }

    /// Resolves with what ran, once a built-in tool did.
    pub async fn tripped(&self) -> String {
        let mut seen = self.tripped.subscribe();
        // The sender lives as long as `self`, so the wait ends only when something ran.
        let what = seen.wait_for(Option::is_some).await.ok().and_then(|w| w.clone());
        what.unwrap_or_default()
    }
}

/// When the agent last showed a sign of life, shared between the sink (which a backend owns while
/// a turn runs) and the engine's idle watchdog.
#[derive(Debug)]
pub struct Activity {
    base: Instant,
    last_ms: AtomicU64,
    /// Openings under way (`EventSink::opening`): the backend is starting an agent or a session,
    /// which its own limits bound, so the agent is not silent yet.
    opening: AtomicUsize,
}

impl Activity {
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity { base: Instant::now(), last_ms: AtomicU64::new(0), opening: AtomicUsize::new(0) })
    }

    pub fn touch(&self) {
        self.last_ms.store(self.base.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    pub fn last(&self) -> Instant {
        self.base + std::time::Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }

    /// Until the guard drops, the agent's silence is not counted (see [`EventSink::opening`]).
    pub fn open(self: &Arc<Self>) -> Opening {
        self.opening.fetch_add(1, Ordering::SeqCst);
        Opening { activity: self.clone() }
    }

    /// Is the backend still opening (an agent process, a session) rather than waiting for the
    /// model?
    pub fn opening(&self) -> bool {
        self.opening.load(Ordering::SeqCst) > 0
    }
}

/// While alive, the idle timeout does not run (`EventSink::opening`); its end counts as activity.
pub struct Opening {
    activity: Arc<Activity>,
}

impl Drop for Opening {
    fn drop(&mut self) {
        self.activity.touch();
        self.activity.opening.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Where a backend sends a turn's events. Sending waits when the reader is slow (back-pressure
/// reaches the agent's pipe instead of memory); a reader that went away drops them, and the turn
/// is about to be dropped too.
pub struct EventSink {
    tx: mpsc::Sender<Event>,
    activity: Arc<Activity>,
    text_sent: bool,
    tools_seen: bool,
    /// The streamed answer's identity (its text without whitespace), for the session store.
    answer: Fnv,
    hold: Option<Box<dyn TextHold>>,
    /// Client-tools mode: the agent's own tool activity is not the client's business (it sees
    /// its own tools' calls instead), and a built-in tool that ran trips the policy.
    policy: Option<Arc<ToolPolicy>>,
}

impl EventSink {
    pub fn new(tx: mpsc::Sender<Event>, activity: Arc<Activity>) -> Self {
        EventSink {
            tx,
            activity,
            text_sent: false,
            tools_seen: false,
            answer: Fnv::default(),
            hold: None,
            policy: None,
        }
    }

    pub async fn emit(&mut self, event: Event) {
        self.activity.touch();
        let event = match event {
            Event::Text(text) => {
                let text = match &mut self.hold {
                    Some(hold) => hold.push(&text),
                    None => text,
                };
                if text.is_empty() {
                    return;
                }
                Event::Text(text)
            }
            Event::ToolStarted { .. } | Event::ToolCompleted { .. } | Event::PermissionDenied { .. }
                if self.policy.is_some() =>
            {
                match (&self.policy, &event) {
                    (Some(policy), Event::ToolStarted { call_id, tool, summary }) => {
                        policy.started(call_id, tool, summary)
                    }
                    (Some(policy), Event::ToolCompleted { call_id, tool, summary, rejected, .. }) => {
                        policy.completed(call_id, tool, summary, *rejected)
                    }
                    _ => {}
                }
                tracing::debug!(?event, "the agent's own tool activity, in client-tools mode");
                return;
            }
            event => event,
        };
        match &event {
            Event::Text(text) => {
                self.text_sent = true;
                self.answer.write_non_whitespace(text);
            }
            Event::ToolStarted { .. } | Event::ToolCompleted { .. } | Event::ToolCall { .. } => self.tools_seen = true,
            _ => {}
        }
        let _ = self.tx.send(event).await;
    }

    /// Hold back answer text through `hold` from now on (client-tools mode).
    pub fn hold_text(&mut self, hold: Box<dyn TextHold>) {
        self.hold = Some(hold);
    }

    /// The reply ended: show what was held back but is plain text, and hand the hold back (with
    /// what it took out of the answer).
    pub async fn end_hold(&mut self) -> Option<Box<dyn TextHold>> {
        let mut hold = self.hold.take()?;
        let rest = hold.flush();
        if !rest.is_empty() {
            self.emit(Event::Text(rest)).await;
        }
        Some(hold)
    }

    /// Client-tools mode: keep the agent's own tool activity from the client, and trip `policy`
    /// when a built-in tool runs.
    pub fn police_tools(&mut self, policy: Arc<ToolPolicy>) {
        self.policy = Some(policy);
    }

    /// The backend refused the permission request of the agent's call `call_id`: it did not run,
    /// whatever is reported of it later ([`ToolPolicy::refused`]).
    pub fn refused(&self, call_id: &str) {
        if let Some(policy) = &self.policy {
            policy.refused(call_id);
        }
    }

    /// `call_id` is a call of the client's tools the backend hosts, not one of the agent's own
    /// ([`ToolPolicy::disown`]).
    pub fn disown(&self, call_id: &str) {
        if let Some(policy) = &self.policy {
            policy.disown(call_id);
        }
    }

    /// The agent printed something that is not an event (a heartbeat, a line we skip): it is
    /// alive, so the idle timeout starts again.
    pub fn alive(&self) {
        self.activity.touch();
    }

    /// The backend is starting an agent process or opening a session (bounded by its own
    /// timeouts): until the guard drops, that is not the agent being silent, so a first turn on a
    /// cold start is not failed by an idle limit meant for a stuck model.
    pub fn opening(&self) -> Opening {
        self.activity.open()
    }

    pub fn text_sent(&self) -> bool {
        self.text_sent
    }

    pub fn tools_seen(&self) -> bool {
        self.tools_seen
    }

    /// What `answer_hash` gives for the text streamed so far (`None`: no text).
    pub fn answer_hash(&self) -> Option<u64> {
        self.answer.finish_non_empty()
    }
}
