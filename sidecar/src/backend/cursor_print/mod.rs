//! The Cursor CLI in print mode (`agent -p --output-format stream-json`): a process per turn,
//! the prompt on its stdin, its NDJSON events on stdout. Everything that knows this mode lives
//! in this folder: where the CLI is (`discovery`, `locate`), its argv and environment (`args`),
//! its short subcommands (`commands`), its model list (`models`), its event stream (`stream/`),
//! its error texts (`errors`), chat ids fetched ahead (`chat_ids`), processes started ahead
//! (`spares`) and the turn loop (`run`). docs/cursor-cli.md has the facts these rely on.

pub mod args;
pub mod chat_ids;
pub mod chat_store;
pub mod commands;
pub mod discovery;
pub mod errors;
pub mod hints;
pub mod locate;
pub mod models;
pub mod run;
pub mod spares;
pub mod stream;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use args::{child_env, turn_args, ChildEnv, TurnArgs};
use chat_ids::ChatIdCache;
use commands::{spawn_error, spawn_spec};
use discovery::CliCommand;
use locate::Locator;
use spares::Spares;

use crate::backend::events::EventSink;
use crate::backend::process::{self, SpawnSpec};
use crate::backend::seam::{
    Backend, BoxFuture, Chat, EnvPolicy, Located, Settings, TurnEnd, TurnFailure, TurnSpec, Warm,
};
use crate::error::BridgeError;
use crate::protocol::{CliStatus, Mode, ModelInfo, Secret};

/// How often idle spares are looked at.
const SPARE_SWEEP: Duration = Duration::from_secs(5);

pub struct CursorPrint {
    /// Itself, for work that outlives the call that starts it (warming up).
    me: std::sync::Weak<CursorPrint>,
    api_key: Option<Secret>,
    env_policy: EnvPolicy,
    /// Where the CLI's own subcommands run: a private folder of ours (`Settings::neutral_dir`).
    neutral: Neutral,
    locator: Locator,
    chat_ids: ChatIdCache,
    spares: Spares,
    /// Whether the chat store says anything about this CLI build's chats.
    chat_store: chat_store::Calibration,
}

impl CursorPrint {
    pub fn new(config: Settings) -> Arc<CursorPrint> {
        let neutral = Neutral::new(config.neutral_dir);
        let backend = Arc::new_cyclic(|me| CursorPrint {
            me: me.clone(),
            api_key: config.api_key.filter(|k| !k.expose().is_empty()),
            env_policy: config.env,
            locator: Locator::new(config.cli_path, neutral.path().to_path_buf()),
            neutral,
            chat_ids: ChatIdCache::default(),
            spares: Spares::new(config.spares, config.spare_idle.max(Duration::from_secs(1))),
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

    /// The CLI's environment (shared with the ACP backend: the same program).
    pub fn env(&self) -> ChildEnv {
        child_env(self.api_key.as_ref().map(Secret::expose), &self.env_policy)
    }

    /// The folder the CLI's subcommands run in (never a user's).
    pub fn neutral_dir(&self) -> &Path {
        self.neutral.path()
    }

    pub async fn cli(&self) -> Result<CliCommand, BridgeError> {
        self.locator.cli(&self.env()).await
    }

    /// The CLI if it was found already (never searches).
    pub fn known_cli(&self) -> Option<CliCommand> {
        self.locator.known()
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
        spawn_spec(cli, &args, &self.env(), Some(t.workspace))
    }

    async fn turn(&self, t: TurnSpec, sink: &mut EventSink) -> Result<TurnEnd, TurnFailure> {
        let cli = self.cli().await?;
        // A new chat's id leaves its slot empty; it is refilled when this turn's CLI is done (or
        // the turn is dropped), so `create-chat` never competes with its start-up or first words.
        let mut refill = None;
        let (resume, prestarted) = match &t.chat {
            Chat::Resume(id) => {
                if self.chat_store.is_gone(&cli.program, id, &t.workspace) {
                    tracing::warn!(chat = %id, "the chat is gone from the CLI's chat store");
                    let error = BridgeError::new(
                        crate::protocol::ErrorKind::CliFailed,
                        "The Cursor CLI no longer has this chat",
                    )
                    .hint("The conversation continues in a new chat with its history.");
                    return Err(TurnFailure {
                        error,
                        spoke: false,
                        chat_lost: true,
                        tools_not_hosted: false,
                        unstartable: false,
                    });
                }
                (Some(id.clone()), None)
            }
            Chat::OneShot => (None, None),
            // A fresh spare brings its own chat id; otherwise take a prefetched one.
            Chat::New => match self.spares.take_fresh(|chat| self.command(&cli, &CommandLine::of(&t, Some(chat)))) {
                Some(spare) => (Some(spare.chat_id), Some(spare.child)),
                None => {
                    let (id, owed) = self.chat_ids.take(&cli, self.env(), &t.workspace).await;
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
        let Some(cli) = self.locator.known() else { return };
        let line = |resume| CommandLine { model: &model, mode, workspace: &workspace, resume, unattended };
        self.spares.start(&self.command(&cli, &line(Some(&chat_id))), None);
        let Some(this) = self.me.upgrade().filter(|_| fresh) else { return };
        tokio::spawn(async move {
            // Off the turn's path: a refill in progress is worth waiting for here.
            let (chat, mut refill) = this.chat_ids.take_waiting(&cli, this.env(), &workspace).await;
            if let Some(chat) = chat {
                let line = CommandLine { model: &model, mode, workspace: &workspace, resume: Some(&chat), unattended };
                this.spares.start(&this.command(&cli, &line), Some(chat.clone()));
            }
            // After the spare's own start, as after a turn's first words.
            refill.start();
        });
    }
}

/// The folder the CLI's subcommands run in: the front door's (in the state folder), else a
/// private temporary one that lives as long as the backend.
enum Neutral {
    Given(std::path::PathBuf),
    Temporary(tempfile::TempDir),
}

impl Neutral {
    fn new(given: Option<std::path::PathBuf>) -> Neutral {
        if let Some(dir) = given {
            return Neutral::Given(dir);
        }
        match tempfile::Builder::new().prefix("cursor-bridge-cli-").tempdir() {
            Ok(dir) => Neutral::Temporary(dir),
            // No private temporary folder: the user's home, whose `.cursor/` is the CLI's own
            // user configuration anyway (never the shared temporary folder, where anyone could
            // plant one).
            Err(e) => {
                tracing::warn!(error = %e, "cannot create a private folder for the CLI's commands; using the home folder");
                Neutral::Given(dirs::home_dir().unwrap_or_else(|| std::path::PathBuf::from("/")))
            }
        }
    }

    fn path(&self) -> &Path {
        match self {
            Neutral::Given(dir) => dir,
            Neutral::Temporary(dir) => dir.path(),
        }
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
        Box::pin(async move { self.cli().await.map(|cli| Located { path: cli.display.display().to_string() }) })
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>, BridgeError>> {
        Box::pin(async move {
            let cli = self.cli().await?;
            let listed = commands::list_models(&cli, &self.env(), self.neutral_dir()).await?;
            Ok(models::to_model_infos(&listed))
        })
    }

    fn run_turn<'a>(&'a self, turn: TurnSpec, sink: &'a mut EventSink) -> BoxFuture<'a, Result<TurnEnd, TurnFailure>> {
        if turn.hosted_tools.is_some() {
            // Print mode has no way to give the agent the client's tools as its own: the engine
            // describes them in the prompt instead.
            let error =
                BridgeError::new(crate::protocol::ErrorKind::CliFailed, "print mode cannot host the client's tools");
            return Box::pin(async move {
                Err(TurnFailure { error, spoke: false, chat_lost: false, tools_not_hosted: true, unstartable: false })
            });
        }
        Box::pin(self.turn(turn, sink))
    }

    fn warm(&self, hint: Warm) {
        match hint {
            Warm::Workspace(workspace) => {
                // Only a CLI already found: warming never searches (the caller located it first).
                if let Some(cli) = self.locator.known() {
                    self.chat_ids.prefetch(cli, self.env(), workspace);
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
        Box::pin(async move {
            let this = self;
            let api_key = this.api_key.is_some();
            let cli = match this.cli().await {
                Ok(cli) => cli,
                Err(e) => {
                    return CliStatus {
                        found: false,
                        path: None,
                        version: None,
                        logged_in: None,
                        account: None,
                        api_key,
                        hint: e.hint,
                        problem: Some(e.message),
                    }
                }
            };
            let env = this.env();
            let cwd = this.neutral_dir();
            let (version, login) = tokio::join!(commands::version(&cli, &env, cwd), commands::status(&cli, &env, cwd));
            let hint = (login.logged_in == Some(false) && !api_key).then(|| hints::LOGIN_HINT.to_string());
            CliStatus {
                found: true,
                path: Some(cli.display.display().to_string()),
                version,
                logged_in: login.logged_in,
                account: login.account,
                api_key,
                hint,
                problem: None,
            }
        })
    }

    fn shutdown(&self) {
        self.chat_ids.stop();
        self.spares.close();
        process::sweep_orphans();
    }
}
