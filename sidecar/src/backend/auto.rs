//! `backend: "auto"`: Cursor's ACP mode when it works with the installed CLI, print mode when it
//! does not — decided per CLI build (a build whose ACP mode fails to start is remembered for a
//! while and tried again later), and per turn: a turn whose ACP attempt fails before any output
//! runs again in print mode, so the person never sees ACP's failure. Print-mode chats continue in
//! print mode (their context lives there); one-shot turns (titles) run in print mode, since a
//! session nobody resumes gains nothing from being warm.

use std::sync::{Arc, Mutex};

use super::cursor_acp::{self, CursorAcp};
use super::cursor_print::CursorPrint;
use super::events::EventSink;
use super::seam::{Backend, BoxFuture, Chat, Located, TurnEnd, TurnFailure, TurnSpec, Warm};
use crate::error::BridgeError;
use crate::protocol::{BackendStatus, CliStatus, ErrorKind, ModelInfo, ServedTurn};
use crate::util::sync::lock;

pub struct Auto {
    print: Arc<CursorPrint>,
    acp: Arc<CursorAcp>,
    last: Mutex<Option<ServedTurn>>,
}

impl Auto {
    pub fn new(print: Arc<CursorPrint>, acp: Arc<CursorAcp>) -> Arc<Auto> {
        Arc::new(Auto { print, acp, last: Mutex::default() })
    }

    fn served(&self, backend: &str, reason: impl Into<String>) {
        let reason = reason.into();
        tracing::info!(backend, %reason, "turn served");
        *lock(&self.last) = Some(ServedTurn { backend: backend.into(), reason });
    }

    async fn on_print(&self, t: TurnSpec, sink: &mut EventSink, reason: String) -> Result<TurnEnd, TurnFailure> {
        if let Chat::Resume(chat) = &t.chat {
            if cursor_acp::session_of(chat).is_some() {
                // An ACP session cannot be resumed by print mode: the engine replays it.
                self.served("print", reason);
                let error = BridgeError::new(ErrorKind::CliFailed, "This conversation's session belongs to ACP mode")
                    .hint("The conversation continues in a new chat with its history.");
                return Err(TurnFailure { error, spoke: false, chat_lost: true, tools_not_hosted: false });
            }
        }
        self.served("print", reason);
        self.print.run_turn(t, sink).await
    }

    async fn turn(&self, t: TurnSpec, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        match &t.chat {
            Chat::OneShot => return self.on_print(t, sink, "one-shot turn".into()).await,
            Chat::Resume(chat) if cursor_acp::session_of(chat).is_none() => {
                return self.on_print(t, sink, "the conversation's chat is a print-mode chat".into()).await
            }
            _ => {}
        }
        if let Err(why) = self.acp.usable() {
            return self.on_print(t, sink, format!("ACP mode does not start with this CLI: {why}")).await;
        }
        match self.acp.run_turn(t.clone(), sink).await {
            Ok(end) => {
                self.served("acp", "ACP mode works with this CLI");
                Ok(end)
            }
            Err(f) if f.spoke || f.chat_lost => {
                self.served("acp", "ACP mode works with this CLI");
                Err(f)
            }
            Err(f) => {
                tracing::warn!(kind = %f.error.kind, error = %f.error.message, "the ACP turn failed before any output; print mode runs it");
                self.on_print(t, sink, format!("ACP failed before any output: {}", f.error.message)).await
            }
        }
    }
}

impl Backend for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn locate(&self) -> BoxFuture<'_, Result<Located, BridgeError>> {
        self.print.locate()
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>, BridgeError>> {
        self.acp.list_models()
    }

    /// ACP hosts them while it serves; a turn it hands to print mode then fails `tools_not_hosted`
    /// and the engine describes the tools in the prompt.
    fn hosts_tools(&self) -> bool {
        self.acp.hosts_tools()
    }

    fn run_turn<'a>(&'a self, turn: TurnSpec, sink: &'a mut EventSink) -> BoxFuture<'a, Result<TurnEnd, TurnFailure>> {
        Box::pin(self.turn(turn, sink))
    }

    fn warm(&self, hint: Warm) {
        match &hint {
            Warm::FollowUp { chat_id, .. } if cursor_acp::session_of(chat_id).is_none() => self.print.warm(hint),
            _ if self.acp.usable().is_err() => self.print.warm(hint),
            _ => self.acp.warm(hint),
        }
    }

    fn health(&self) -> BoxFuture<'_, CliStatus> {
        self.print.health()
    }

    fn status(&self) -> BackendStatus {
        let (active, reason) = match self.acp.usable() {
            Ok(()) => ("acp", None),
            Err(why) => ("print", Some(format!("ACP mode does not start with this CLI: {why}"))),
        };
        BackendStatus {
            configured: "auto".into(),
            active: active.into(),
            reason,
            last_turn: lock(&self.last).clone(),
            warm: self.acp.warm_count(),
        }
    }

    fn shutdown(&self) {
        self.acp.shutdown();
    }
}
