//! What a turn streams while it runs, whoever runs it. Backends emit these through an
//! [`EventSink`]; the engine adds the session and usage events; each front door turns them into
//! its own wire format (stdio: numbered `chat/delta` notifications; HTTP: OpenAI chunks).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::protocol::Usage;
use crate::util::text::Fnv;

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
    /// `ok` is false for failures, errors and rejections.
    ToolCompleted {
        call_id: String,
        tool: String,
        summary: String,
        ok: bool,
        detail: Option<String>,
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
}

impl EventSink {
    pub fn new(tx: mpsc::Sender<Event>, activity: Arc<Activity>) -> Self {
        EventSink { tx, activity, text_sent: false, tools_seen: false, answer: Fnv::default() }
    }

    pub async fn emit(&mut self, event: Event) {
        self.activity.touch();
        match &event {
            Event::Text(text) => {
                self.text_sent = true;
                self.answer.write_non_whitespace(text);
            }
            Event::ToolStarted { .. } | Event::ToolCompleted { .. } => self.tools_seen = true,
            _ => {}
        }
        let _ = self.tx.send(event).await;
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
        self.activity.opening.fetch_add(1, Ordering::SeqCst);
        Opening { activity: self.activity.clone() }
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
