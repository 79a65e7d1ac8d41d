//! The in-process tier: the engine driven through a scripted backend under paused time. These
//! run in `cargo test -p cursor-bridge --lib` in about a second and fail when sessions, replay,
//! utility turns, queueing, timeouts, cancel or the model list break. What only real processes
//! show (process trees, signals, pipes) is tested in `sidecar/tests/`.

mod doctor;
mod models;
mod queue_and_cancel;
// FIFOs stand in for a slow disk: Unix only.
#[cfg(unix)]
mod session_io;
mod sessions;
mod timeouts;
mod tools;
mod trust;

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{Config, Engine, Event, TurnOutcome, TurnRequest};
use crate::backend::scripted::Scripted;
use crate::engine::Settings;
use crate::error::Result;
use crate::vocab::{ChatMessage, Mode, Role};

pub struct Harness {
    pub engine: Arc<Engine>,
    pub backend: Arc<Scripted>,
    /// Holds the workspace and state folders for as long as the harness lives.
    pub _dir: tempfile::TempDir,
}

impl Harness {
    pub fn new(options: Settings) -> Harness {
        Self::with_state(options, false)
    }

    /// With a state folder (sessions and models persisted) when `persist` is set.
    pub fn with_state(options: Settings, persist: bool) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        let state = persist.then(|| dir.path().join("state"));
        let backend = Scripted::new();
        let config = Config::new(options, vec![workspace], state).unwrap();
        let engine = Engine::new(config, backend.clone());
        Harness { engine, backend, _dir: dir }
    }

    /// A second engine on the same backend and folders (a restarted sidecar).
    pub fn restart(&self) -> Arc<Engine> {
        Engine::new(self.engine.config().clone(), self.backend.clone())
    }

    /// Run a turn and collect what it streamed.
    pub async fn send(&self, req: TurnRequest) -> (Vec<Event>, Result<TurnOutcome>) {
        send_to(&self.engine, req).await
    }
}

pub async fn send_to(engine: &Arc<Engine>, req: TurnRequest) -> (Vec<Event>, Result<TurnOutcome>) {
    let (tx, mut rx) = mpsc::channel(64);
    let collect = async {
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        events
    };
    let (outcome, events) = tokio::join!(engine.turn(req, tx), collect);
    (events, outcome)
}

pub fn user(text: &str) -> ChatMessage {
    ChatMessage::new(Role::User, text)
}

pub fn assistant(text: &str) -> ChatMessage {
    ChatMessage::new(Role::Assistant, text)
}

pub fn request(messages: Vec<ChatMessage>) -> TurnRequest {
    TurnRequest {
        turn_id: "t".into(),
        model: "auto".into(),
        mode: Mode::Ask,
        workspace: None,
        conversation_id: None,
        session_id: None,
        utility: false,
        messages,
        tools: None,
        owner: None,
        answer_format: None,
        images: Vec::new(),
    }
}

pub fn in_conversation(id: &str, messages: Vec<ChatMessage>) -> TurnRequest {
    TurnRequest { conversation_id: Some(id.into()), ..request(messages) }
}

pub fn text_of(events: &[Event]) -> String {
    events.iter().filter_map(|e| if let Event::Text(t) = e { Some(t.as_str()) } else { None }).collect()
}
