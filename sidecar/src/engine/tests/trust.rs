//! An untrusted workspace only asks, and the agent never works in (or trusts) its folder.

use super::*;
use crate::engine::Config;
use crate::engine::Settings;

fn untrusted(force: bool) -> Settings {
    Settings { workspace_trusted: false, force, ..Settings::default() }
}

#[tokio::test(start_paused = true)]
async fn an_untrusted_workspace_runs_ask_mode_in_a_private_scratch_folder() {
    let h = Harness::with_state(untrusted(true), true);
    let user_folder = h.engine.config().workspaces[0].clone();
    let req = TurnRequest { mode: Mode::Agent, ..request(vec![user("delete everything")]) };
    h.send(req).await.1.unwrap();
    let t = h.backend.turn(0);
    assert_eq!(t.mode, Mode::Ask, "never agent mode");
    assert!(!t.unattended, "never --force, whatever `force` says");
    assert_ne!(t.workspace, user_folder);
    assert!(t.workspace.starts_with(h.engine.config().scratch_root()), "{}", t.workspace.display());
    assert!(!t.workspace.starts_with(&user_folder));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&t.workspace).unwrap().permissions().mode() & 0o777, 0o700);
    }
    // The same untrusted folder keeps its scratch folder, so its conversations resume.
    let (_, r) =
        h.send(request(vec![user("delete everything"), assistant("Echo: delete everything"), user("please")])).await;
    assert!(r.unwrap().resumed);
    assert_eq!(h.backend.turn(1).workspace, t.workspace);
}

#[tokio::test(start_paused = true)]
async fn a_trusted_workspace_runs_where_asked_and_force_needs_agent_mode() {
    let h = Harness::new(Settings { force: true, ..Settings::default() });
    let user_folder = h.engine.config().workspaces[0].clone();
    h.send(TurnRequest { mode: Mode::Agent, ..request(vec![user("a")]) }).await.1.unwrap();
    h.send(TurnRequest { mode: Mode::Ask, ..request(vec![user("b")]) }).await.1.unwrap();
    let (agent, ask) = (h.backend.turn(0), h.backend.turn(1));
    assert_eq!((agent.workspace.clone(), agent.mode, agent.unattended), (user_folder.clone(), Mode::Agent, true));
    assert_eq!((ask.workspace, ask.mode, ask.unattended), (user_folder, Mode::Ask, false));
}

#[tokio::test(start_paused = true)]
async fn a_window_without_folders_runs_in_a_scratch_folder_not_the_current_one() {
    let config = Config::new(Settings::default(), Vec::new(), None).unwrap();
    let backend = crate::backend::scripted::Scripted::new();
    let engine = crate::engine::Engine::new(config, backend.clone());
    send_to(&engine, request(vec![user("hi")])).await.1.unwrap();
    let folder = backend.turn(0).workspace;
    assert_ne!(folder, std::env::current_dir().unwrap());
    assert!(folder.starts_with(engine.config().scratch_root()));
}

/// Every folder the backend was handed, by any call: turns, warm-ups, follow-ups, lock-downs.
fn folders_given(backend: &crate::backend::scripted::Scripted) -> Vec<(String, std::path::PathBuf)> {
    use crate::backend::Warm;
    let mut seen: Vec<(String, std::path::PathBuf)> = Vec::new();
    for t in crate::util::sync::lock(&backend.turns).iter() {
        seen.push((format!("turn ({:?})", t.chat), t.workspace.clone()));
    }
    for w in crate::util::sync::lock(&backend.warmed).iter() {
        match w {
            Warm::Workspace(folder) => seen.push(("warm-up".into(), folder.clone())),
            Warm::FollowUp { workspace, .. } => seen.push(("follow-up".into(), workspace.clone())),
        }
    }
    for folder in crate::util::sync::lock(&backend.locked).iter() {
        seen.push(("lock-down".into(), folder.clone()));
    }
    seen
}

#[tokio::test(start_paused = true)]
async fn no_backend_call_of_any_kind_ever_receives_an_untrusted_folder() {
    use crate::engine::tools::ToolSet;
    use crate::vocab::{ToolChoice, ToolDefinition};
    let h = Harness::with_state(untrusted(true), true);
    let user_folder = h.engine.config().workspaces[0].clone();
    let inside = user_folder.join("src");
    std::fs::create_dir_all(&inside).unwrap();
    // Start-up, as `initialize` does it.
    h.engine.warm_up(&h.engine.config().workspaces.clone()).await.unwrap();
    // Every kind of turn, some naming the folder (or one inside it) outright.
    let folder = |p: &std::path::Path| Some(p.to_string_lossy().into_owned());
    let tools = ToolSet {
        tools: vec![ToolDefinition {
            name: "read_file".into(),
            description: "Read a file".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }],
        choice: ToolChoice::Auto,
        parallel: true,
    };
    let requests = [
        TurnRequest { mode: Mode::Agent, ..in_conversation("c1", vec![user("build it")]) },
        TurnRequest {
            mode: Mode::Agent,
            ..in_conversation("c1", vec![user("build it"), assistant("Echo: build it"), user("again")])
        },
        TurnRequest { mode: Mode::Plan, workspace: folder(&user_folder), ..in_conversation("c2", vec![user("plan")]) },
        TurnRequest { workspace: folder(&inside), ..in_conversation("c3", vec![user("explain")]) },
        TurnRequest { utility: true, ..request(vec![user("a title please")]) },
        TurnRequest { tools: Some(tools), mode: Mode::Agent, ..in_conversation("c4", vec![user("read it")]) },
    ];
    for req in requests {
        h.send(req).await.1.unwrap();
    }
    let seen = folders_given(&h.backend);
    assert!(seen.iter().any(|(what, _)| what == "warm-up"), "the first turn is prepared ahead: {seen:?}");
    assert!(seen.iter().any(|(what, _)| what == "lock-down"), "{seen:?}");
    assert!(h.backend.turn_count() >= 6, "{seen:?}");
    for (what, folder) in &seen {
        assert!(!folder.starts_with(&user_folder), "{what} was given the untrusted folder {}", folder.display());
        assert!(folder.starts_with(h.engine.config().scratch_root()), "{what}: {}", folder.display());
    }
}
