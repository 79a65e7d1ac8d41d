//! The Cursor CLI in print mode (`agent -p --output-format stream-json`): a process per turn,
//! the prompt on its stdin, its NDJSON events on stdout. Everything that knows this mode lives
//! in this folder: its argv (`args`), its event stream (`stream/`), chat ids fetched ahead
//! (`chat_ids`), whether a chat is still in the CLI's store (`chat_store`), processes started
//! ahead (`spares`) and the turn loop (`run`); what it shares with ACP mode (where the CLI is,
//! its subcommands, models and failure texts) is the parent folder's, `backend/cursor/`.
//! docs/cursor-cli.md has the facts these rely on.

pub mod args;
pub mod chat_ids;
pub mod chat_store;
mod probe;
/// `doctor --probe`'s print-mode question (`probe.rs`).
pub use probe::question as probe_question;
pub mod run;
pub mod spares;
pub mod stream;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use args::{turn_args, TurnArgs};
use chat_ids::ChatIdCache;
use spares::Spares;

use super::cli::CursorCli;
use super::commands::{spawn_error, spawn_spec};
use super::discovery::CliCommand;

use crate::backend::contract::{
    Backend, BackendSettings, BoxFuture, Chat, Located, TurnEnd, TurnFailure, TurnSpec, VersionCheck, Warm,
};
use crate::backend::events::EventSink;
use crate::backend::process::{self, SpawnSpec};
use crate::backend::reports::CliStatus;
use crate::error::BridgeError;
use crate::vocab::{Mode, ModelInfo};

/// How often idle spares are looked at.
const SPARE_SWEEP: Duration = Duration::from_secs(5);

pub struct CursorPrint {
    /// Itself, for work that outlives the call that starts it (warming up).
    me: std::sync::Weak<CursorPrint>,
    /// The program (shared with the ACP backend of the same front door).
    cli: Arc<CursorCli>,
    chat_ids: ChatIdCache,
    spares: Spares,
    /// Whether the chat store says anything about this CLI build's chats.
    chat_store: chat_store::Calibration,
}

impl CursorPrint {
    pub fn new(config: &BackendSettings, cli: Arc<CursorCli>) -> Arc<CursorPrint> {
        let backend = Arc::new_cyclic(|me| CursorPrint {
            me: me.clone(),
            cli,
            chat_ids: ChatIdCache::default(),
            spares: Spares::new(config.warmth.ahead, config.warmth.ahead_idle.max(Duration::from_secs(1))),
            chat_store: Default::default(),
        });
        if backend.spares.enabled() {
            // Stop spares that sat idle too long; the task ends with the backend.
            let weak = Arc::downgrade(&backend);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(SPARE_SWEEP);
                loop {
                    tick.tick().await;
                    match weak.upgrade() {
                        Some(backend) => backend.spares.expire(),
                        None => break,
                    }
                }
            });
        }
        backend
    }

    /// The command line of a turn. One function, so a spare started ahead matches the turn that
    /// later wants it byte for byte.
    fn command(&self, cli: &CliCommand, t: &CommandLine<'_>) -> SpawnSpec {
        let args = turn_args(&TurnArgs {
            model: t.model,
            mode: t.mode,
            workspace: t.workspace,
            resume: t.resume,
            force: t.unattended && t.mode == Mode::Agent,
            partial: true,
        });
        let args: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
        spawn_spec(cli, &args, &self.cli.env(), Some(t.workspace))
    }

    async fn turn(&self, t: TurnSpec, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        let cli = self.cli.find().await?;
        // A new chat's id leaves its slot empty; it is refilled when this turn's CLI is done (or
        // the turn is dropped), so `create-chat` never competes with its start-up or first words.
        let mut refill = None;
        let (resume, prestarted) = match &t.chat {
            Chat::Resume(id) => {
                if let Some(found) = self.cli.learnt(&cli).and_then(|l| l.chat_store_found) {
                    self.chat_store.adopt(&cli.program, found);
                }
                if self.chat_store.is_gone(&cli.program, id, &t.workspace) {
                    tracing::warn!(chat = %id, "the chat is gone from the CLI's chat store");
                    return Err(TurnFailure::chat_lost("The Cursor CLI no longer has this chat"));
                }
                (Some(id.clone()), None)
            }
            Chat::OneShot => (None, None),
            // A fresh spare brings its own chat id; otherwise take a prefetched one.
            Chat::New => match self.spares.take_fresh(|chat| self.command(&cli, &CommandLine::of(&t, Some(chat)))) {
                Some(spare) => (Some(spare.chat_id), Some(spare.child)),
                None => {
                    let (id, owed) = self.chat_ids.take(&cli, self.cli.env(), &t.workspace).await;
                    refill = Some(owed);
                    (id, None)
                }
            },
        };
        let spec = self.command(&cli, &CommandLine::of(&t, resume.as_deref()));
        let spare = prestarted.or_else(|| self.spares.take(&spec));
        let warm = spare.is_some();
        let child = match spare {
            Some(child) => child,
            None => process::spawn(&spec).map_err(|e| spawn_error(&cli, &e))?,
        };
        tracing::debug!(pid = child.pid(), warm, "CLI started");
        let resuming = matches!(t.chat, Chat::Resume(_)).then_some(resume.as_deref()).flatten();
        let ended = run::drive(child, &t.prompt, resuming, t.idle, sink).await;
        drop(refill); // the CLI is done: now `create-chat` competes with nothing of this turn's
        let mut end = ended?;
        end.chat_id = end.chat_id.or(resume);
        if let (Some(chat), false) = (&end.chat_id, matches!(t.chat, Chat::OneShot)) {
            self.chat_store.learn(&cli.program, chat, &t.workspace);
        }
        Ok(end)
    }

    /// The follow-up's spare starts now, before the turn's answer is sent (so a `shutdown` right
    /// after the answer finds it); one for a new conversation waits for a chat id, in the
    /// background.
    fn warm_follow_up(&self, hint: Warm) {
        let Warm::FollowUp { model, mode, workspace, chat_id, unattended, fresh } = hint else { return };
        let Some(cli) = self.cli.found() else { return };
        let line = |resume| CommandLine { model: &model, mode, workspace: &workspace, resume, unattended };
        self.spares.start(&self.command(&cli, &line(Some(&chat_id))), None);
        let Some(this) = self.me.upgrade().filter(|_| fresh) else { return };
        tokio::spawn(async move {
            // Off the turn's path: a refill in progress is worth waiting for here.
            let (chat, mut refill) = this.chat_ids.take_waiting(&cli, this.cli.env(), &workspace).await;
            if let Some(chat) = chat {
                let line = CommandLine { model: &model, mode, workspace: &workspace, resume: Some(&chat), unattended };
                this.spares.start(&this.command(&cli, &line), Some(chat.clone()));
            }
            // After the spare's own start, as after a turn's first words.
            refill.start();
        });
    }
}

struct CommandLine<'a> {
    model: &'a str,
    mode: Mode,
    workspace: &'a Path,
    resume: Option<&'a str>,
    unattended: bool,
}

impl<'a> CommandLine<'a> {
    fn of(t: &'a TurnSpec, resume: Option<&'a str>) -> Self {
        CommandLine { model: &t.model, mode: t.mode, workspace: &t.workspace, resume, unattended: t.unattended }
    }
}

impl Backend for CursorPrint {
    fn name(&self) -> &'static str {
        "print"
    }

    fn locate(&self) -> BoxFuture<'_, Result<Located, BridgeError>> {
        Box::pin(self.cli.locate())
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>, BridgeError>> {
        Box::pin(self.cli.models())
    }

    fn run_turn<'a>(&'a self, turn: TurnSpec, sink: &'a mut EventSink) -> BoxFuture<'a, Result<TurnEnd, TurnFailure>> {
        if turn.hosted_tools.is_some() {
            // Print mode has no way to give the agent the client's tools as its own: the engine
            // describes them in the prompt instead.
            let error =
                BridgeError::new(crate::vocab::ErrorKind::CliFailed, "print mode cannot host the client's tools");
            return Box::pin(async move {
                Err(TurnFailure { error, spoke: false, chat_lost: false, tools_not_hosted: true, unstartable: false })
            });
        }
        if !turn.images.is_empty() {
            // `agent -p` takes its prompt as text: an image would be silently left out.
            let error = BridgeError::invalid_params(
                "image input needs Cursor's ACP mode: print mode (`agent -p`) passes the prompt as text only",
            )
            .hint("Use the ACP backend (VS Code: the `cursorBridge.backend` setting; `serve --backend acp`; the default `auto` when ACP starts), or send text.");
            return Box::pin(async move { Err(error.into()) });
        }
        Box::pin(self.turn(turn, sink))
    }

    fn warm(&self, hint: Warm) {
        match hint {
            Warm::Workspace(workspace) => {
                // Only a CLI already found: warming never searches (the caller located it first).
                if let Some(cli) = self.cli.found() {
                    self.chat_ids.prefetch(cli, self.cli.env(), workspace);
                }
            }
            follow_up @ Warm::FollowUp { .. } => {
                if self.spares.enabled() {
                    self.warm_follow_up(follow_up)
                }
            }
        }
    }

    fn health(&self) -> BoxFuture<'_, CliStatus> {
        Box::pin(self.cli.health())
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
        self.chat_ids.stop();
        self.spares.close();
        process::end_orphans(process::STOP_ORPHANS_WITHIN);
    }
}
