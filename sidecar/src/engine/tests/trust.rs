//! An untrusted workspace only asks, and the agent never works in (or trusts) its folder.

use super::*;
use crate::engine::Config;
use crate::protocol::Options;

fn untrusted(force: bool) -> Options {
    Options { workspace_trusted: false, force, ..Options::default() }
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
    let h = Harness::new(Options { force: true, ..Options::default() });
    let user_folder = h.engine.config().workspaces[0].clone();
    h.send(TurnRequest { mode: Mode::Agent, ..request(vec![user("a")]) }).await.1.unwrap();
    h.send(TurnRequest { mode: Mode::Ask, ..request(vec![user("b")]) }).await.1.unwrap();
    let (agent, ask) = (h.backend.turn(0), h.backend.turn(1));
    assert_eq!((agent.workspace.clone(), agent.mode, agent.unattended), (user_folder.clone(), Mode::Agent, true));
    assert_eq!((ask.workspace, ask.mode, ask.unattended), (user_folder, Mode::Ask, false));
}

#[tokio::test(start_paused = true)]
async fn a_window_without_folders_runs_in_a_scratch_folder_not_the_current_one() {
    let config = Config::new(Options::default(), Vec::new(), None).unwrap();
    let backend = crate::backend::scripted::Scripted::new();
    let engine = crate::engine::Engine::new(config, backend.clone());
    send_to(&engine, request(vec![user("hi")])).await.1.unwrap();
    let folder = backend.turn(0).workspace;
    assert_ne!(folder, std::env::current_dir().unwrap());
    assert!(folder.starts_with(engine.config().scratch_root()));
}
