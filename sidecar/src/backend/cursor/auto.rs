//! `backend: "auto"`: Cursor's ACP mode when it works with the installed CLI, print mode when it
//! does not — decided per CLI build (a build whose ACP mode fails to start, twice in a row, is
//! remembered for a while and tried again later), and per turn. A new chat whose ACP attempt
//! fails before any output is tried on ACP once more, then runs in print mode, so the person
//! never sees a failure of ACP itself; failures print mode would only repeat (a limit, a login,
//! the network) are shown as they are. A conversation already in an ACP session stays there:
//! print mode cannot continue it, and rerunning it there would replace the real error with a
//! replayed new chat, so its failures come back unchanged (and while ACP does not start, it
//! fails saying so). Print-mode chats continue in print mode (their context lives there);
//! one-shot turns (titles) run in print mode, since a session nobody resumes gains nothing from
//! being warm.

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::acp::{self, CursorAcp};
use super::print::CursorPrint;
use crate::backend::contract::{Backend, BoxFuture, Chat, Located, TurnEnd, TurnFailure, TurnSpec, VersionCheck, Warm};
use crate::backend::events::EventSink;
use crate::backend::reports::{BackendStatus, CliStatus, ServedTurn};
use crate::error::BridgeError;
use crate::util::sync::lock;
use crate::vocab::{ErrorKind, ModelInfo};

/// ACP attempts of a new chat before it runs in print mode.
const NEW_CHAT_ATTEMPTS: usize = 2;

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
        self.served("print", reason);
        self.print.run_turn(t, sink).await
    }

    async fn turn(&self, t: TurnSpec, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        match &t.chat {
            Chat::OneShot => return self.on_print(t, sink, "one-shot turn".into()).await,
            Chat::Resume(chat) if acp::session_of(chat).is_none() => {
                return self.on_print(t, sink, "the conversation's chat is a print-mode chat".into()).await
            }
            Chat::Resume(_) => return self.resume_on_acp(t, sink).await,
            Chat::New => {}
        }
        let mut attempt = 1;
        loop {
            if let Err(why) = self.acp.usable() {
                return self.on_print(t, sink, format!("ACP mode does not start with this CLI: {why}")).await;
            }
            let f = match self.acp.run_turn(t.clone(), sink).await {
                Ok(end) => {
                    self.served("acp", "ACP mode works with this CLI");
                    return Ok(end);
                }
                Err(f) => f,
            };
            // Shown (or the engine's to handle: the tools go in the prompt), or the person's
            // own problem, which print mode would only repeat.
            let project_config = f.error.message.starts_with(acp::PROJECT_CONFIG_REJECTED);
            if f.spoke || f.chat_lost || f.tools_not_hosted || project_config || print_would_repeat(f.error.kind) {
                self.served("acp", "ACP mode works with this CLI");
                return Err(f);
            }
            // Not after a timeout: it has waited its bound already, and the wait before print mode
            // takes over stays one bound (docs/cursor-acp.md §14).
            if attempt < NEW_CHAT_ATTEMPTS && !matches!(f.error.kind, ErrorKind::InvalidModel | ErrorKind::Timeout) {
                tracing::info!(kind = %f.error.kind, error = %f.error.message, "the new chat's ACP turn failed before any output; ACP tries once more");
                attempt += 1;
                continue;
            }
            tracing::warn!(kind = %f.error.kind, error = %f.error.message, "the new chat's ACP turn failed before any output; print mode runs it");
            return self.on_print(t, sink, format!("ACP failed before any output: {}", f.error.message)).await;
        }
    }

    /// A conversation in an ACP session: only ACP can continue it, so it is always tried (also
    /// while the build is marked as one ACP does not start with: that mark only sends new chats
    /// to print mode), and what goes wrong is said.
    async fn resume_on_acp(&self, t: TurnSpec, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        let mut outcome = self.acp.run_turn(t, sink).await;
        self.served("acp", "the conversation's chat is an ACP session");
        if let (Err(f), Err(_)) = (&mut outcome, self.acp.usable()) {
            // Only when this turn's own agent would not start: a warm agent's usage limit or
            // refused model is said as it is, with its own hint.
            if f.unstartable && !f.spoke && !f.chat_lost {
                f.error.message = format!(
                    "This conversation runs in Cursor's ACP mode, which does not start with this CLI right now: {}",
                    f.error.message
                );
                f.error.hint = Some(
                    "Print mode cannot continue an ACP session, so every message of this conversation tries ACP again; \
                     updating the Cursor CLI may fix it. Meanwhile new chats run in print mode (ACP is tried for them \
                     again after 30 minutes, or at once with another CLI build). `cursorBridge.backend: \"print\"` \
                     stops using ACP."
                        .into(),
                );
            }
        }
        outcome
    }
}

/// Failures that are the person's to see wherever the turn runs: print mode would only repeat
/// them (and, for a limit, bill a second attempt).
fn print_would_repeat(kind: ErrorKind) -> bool {
    matches!(kind, ErrorKind::UsageLimit | ErrorKind::RateLimited | ErrorKind::AuthRequired | ErrorKind::Network)
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

    /// New chats go to ACP while it works, and only ACP takes images.
    fn takes_images(&self) -> bool {
        self.acp.takes_images()
    }

    /// Print-mode chats as print mode; an ACP session's failure says itself when it is gone.
    fn silent_failure_loses(&self, chat: &str) -> bool {
        acp::session_of(chat).is_none()
    }

    fn run_turn<'a>(&'a self, turn: TurnSpec, sink: &'a mut EventSink) -> BoxFuture<'a, Result<TurnEnd, TurnFailure>> {
        Box::pin(self.turn(turn, sink))
    }

    fn warm(&self, hint: Warm) {
        match &hint {
            Warm::FollowUp { chat_id, .. } if acp::session_of(chat_id).is_none() => self.print.warm(hint),
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

    fn words(&self) -> &'static crate::backend::AgentWords {
        &crate::backend::cursor::words::WORDS
    }

    fn judge_version(&self, version: &str) -> VersionCheck {
        super::known_builds::check(version)
    }

    fn lock_down(&self, folder: &Path) -> std::io::Result<()> {
        super::isolation::lock_down(folder)
    }

    fn shutdown(&self) {
        self.acp.shutdown();
        self.print.shutdown();
    }
}
