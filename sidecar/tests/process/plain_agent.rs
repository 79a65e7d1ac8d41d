//! The generic ACP backend (`backend/acp/backend.rs`) serves an agent that is not Cursor's: an
//! `AcpAgent` written here, outside the crate, with the protocol's plain reading
//! (`acp::quirks::PLAIN`) and nothing of `backend/cursor/` — the CLI double launched as a plain
//! ACP agent. A new chat opens a session and answers; its chat id is this agent's; the next turn
//! continues the same session, warm.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cursor_bridge::backend::acp::{quirks::PLAIN, AcpAgent, AcpBackend, Agent, AgentQuirks, Launch, StartFailure};
use cursor_bridge::backend::contract::{BoxFuture, Chat, TurnFailure, TurnSpec, Warmth};
use cursor_bridge::backend::events::{Activity, Event, EventSink};
use cursor_bridge::backend::process::SpawnSpec;
use cursor_bridge::error::BridgeError;
use cursor_bridge::vocab::Mode;

use crate::support::{double_exe, TestDir};

struct PlainAgent {
    program: PathBuf,
    home: PathBuf,
}

impl AcpAgent for PlainAgent {
    type Config = ();
    type Program = PathBuf;
    type Choice = ();

    fn quirks(&self) -> &'static dyn AgentQuirks {
        &PLAIN
    }
    fn chat_prefix(&self) -> &'static str {
        "plain:"
    }
    fn find(&self) -> BoxFuture<'_, Result<PathBuf, BridgeError>> {
        Box::pin(async move { Ok(self.program.clone()) })
    }
    fn found(&self) -> Option<PathBuf> {
        Some(self.program.clone())
    }
    fn build_id(&self, program: &PathBuf) -> String {
        program.display().to_string()
    }
    fn start<'a>(
        &'a self,
        program: &'a PathBuf,
        workspace: &'a Path,
    ) -> BoxFuture<'a, Result<Agent<()>, StartFailure>> {
        Box::pin(async move {
            let spec = SpawnSpec {
                program: program.clone(),
                // The double is a Cursor CLI: its workspace-trust gate would stop a headless start.
                args: vec!["--trust".into(), "acp".into()],
                cwd: Some(workspace.to_path_buf()),
                env: vec![
                    ("HOME".into(), self.home.clone().into()),
                    ("CURSOR_API_KEY".into(), "plain-test-key".into()),
                ],
                env_remove: vec!["CURSOR_DOUBLE_SCENARIO".into()],
            };
            let spawn_error = |e: &std::io::Error| BridgeError::internal(format!("spawn: {e}"));
            Agent::start(&Launch { spec, spawn_error: &spawn_error, workspace, api_key: true, quirks: &PLAIN }).await
        })
    }
    fn spares_allowed(&self) -> bool {
        false
    }
    fn has_catalogue(&self, _config: &()) -> bool {
        false
    }
    fn or_catalogue(&self, _config: &(), _known: &()) {}
    fn choose(&self, _config: &(), _model: &str) -> Result<Option<()>, BridgeError> {
        Ok(None)
    }
    fn configure<'a>(
        &'a self,
        _agent: &'a mut Agent<()>,
        _model: Option<&'a ()>,
    ) -> BoxFuture<'a, Result<(), TurnFailure>> {
        Box::pin(async { Ok(()) })
    }
}

async fn turn(
    backend: &AcpBackend<PlainAgent>,
    workspace: &Path,
    chat: Chat,
    prompt: &str,
) -> (String, Option<String>) {
    let (tx, mut rx) = tokio::sync::mpsc::channel(256);
    let mut sink = EventSink::new(tx, Activity::new());
    let spec = TurnSpec {
        model: "auto".into(),
        mode: Mode::Ask,
        workspace: workspace.to_path_buf(),
        chat,
        prompt: prompt.into(),
        unattended: false,
        idle: Duration::from_secs(30),
        hosted_tools: None,
        images: Vec::new(),
    };
    let end =
        backend.turn(spec, &mut sink).await.unwrap_or_else(|f| panic!("the plain agent's turn failed: {:?}", f.error));
    drop(sink);
    let mut text = String::new();
    while let Ok(event) = rx.try_recv() {
        if let Event::Text(t) = event {
            text.push_str(&t);
        }
    }
    (text, end.chat_id)
}

#[tokio::test]
async fn the_generic_acp_backend_serves_an_agent_that_is_not_cursors() {
    let dir = TestDir::new();
    let home = dir.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let workspace = dir.workspace();
    let agent = PlainAgent { program: double_exe(), home };
    let backend = AcpBackend::new(&Warmth::default(), agent);

    let (first, chat) = turn(&backend, &workspace, Chat::New, "Say hello").await;
    assert!(!first.trim().is_empty(), "the plain agent's first answer has text");
    let chat = chat.expect("a new chat ends with a chat id");
    assert!(backend.session_of(&chat).is_some(), "the chat id is the plain agent's: {chat}");
    assert_eq!(backend.warm_count(), 1, "the session is kept warm after its first turn");

    let (second, next) = turn(&backend, &workspace, Chat::Resume(chat.clone()), "And again").await;
    assert!(!second.trim().is_empty(), "the follow-up has an answer");
    assert_eq!(next.as_deref(), Some(chat.as_str()), "the follow-up continues the same session");
    backend.stop_agents();
}
