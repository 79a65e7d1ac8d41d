//! Trust boundaries and chat identity, seen from the CLI's side (the double's record: argv, cwd,
//! environment) through the real binary: what an untrusted workspace, an empty window, the
//! bridge's own secrets and a lost chat turn into.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

fn arg_after<'a>(record: &'a Value, flag: &str) -> Option<&'a str> {
    let argv = record["argv"].as_array()?;
    let i = argv.iter().position(|a| a == flag)?;
    argv.get(i + 1)?.as_str()
}

fn has_arg(record: &Value, flag: &str) -> bool {
    record["argv"].as_array().is_some_and(|a| a.iter().any(|x| x == flag))
}

/// How the backends differ in this file's tests.
struct Expected {
    /// How an untrusted workspace's turn was run: ask mode, never `--force`, a scratch folder.
    untrusted_turn: fn(&TestDir, Sidecar),
    /// A chat gone from the CLI's store: how it is lost, and the turns the store holds after the
    /// replay.
    lose_chat: fn(&TestDir, &str),
    turns_stored_after_the_loss: usize,
    /// A CLI that starts a fresh chat where it should resume: the double's knob for it, and what
    /// else it takes.
    fresh_start: (&'static str, &'static str, fn(&TestDir, &str)),
}

/// The double (like, possibly, the real CLI) accepts `--resume` of a chat it no longer has and
/// carries on with an empty history: the missing chat folder is what gives it away, and the lost
/// chat is not even tried. Without a chat store to look at, the init event is the evidence of a
/// fresh start: it names another chat.
const ON_PRINT: Expected = Expected {
    untrusted_turn: untrusted_turn_on_print,
    lose_chat: remove_chat,
    turns_stored_after_the_loss: 2,
    fresh_start: ("CURSOR_DOUBLE_UNKNOWN_RESUME", "fresh", |dir, _| std::fs::remove_dir_all(chats_root(dir)).unwrap()),
};

/// ACP: the session dies with its process and is gone from the store, so `session/load` into a
/// new process fails and the history is replayed into a new session (the store holds only that
/// one). ACP has no silent fresh start (a session is loaded or refused); its counterpart is an
/// agent that refuses to load a session it still has on disk.
const ON_ACP: Expected = Expected {
    untrusted_turn: untrusted_turn_on_acp,
    lose_chat: lose_acp_session,
    turns_stored_after_the_loss: 1,
    fresh_start: ("CURSOR_DOUBLE_ACP_LOAD", "not-found", kill_acp_session),
};

fn expected() -> &'static Expected {
    per_backend(&ON_PRINT, &ON_ACP)
}

fn chat(turn: &str, mode: &str, messages: Value, extra: Value) -> Value {
    let mut p = json!({"turnId": turn, "model": "auto", "mode": mode, "messages": messages});
    p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    p
}

#[test]
fn an_untrusted_workspace_only_asks_and_the_cli_never_works_in_it() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({"workspaceTrusted": false, "force": true}));
    let (_, r) = s.chat(chat("t1", "agent", json!([user("rm -rf everything")]), json!({})));
    assert!(r.get("result").is_some(), "{r}");
    (expected().untrusted_turn)(&dir, s);
}

/// Print mode: `--mode ask`, never `--force`, a scratch `--workspace` that is also the cwd.
fn untrusted_turn_on_print(dir: &TestDir, _s: Sidecar) {
    let turn = &dir.turns()[0];
    assert_eq!(arg_after(turn, "--mode"), Some("ask"), "never agent mode: {turn}");
    assert!(!has_arg(turn, "--force"), "never --force: {turn}");
    let folder = arg_after(turn, "--workspace").unwrap();
    let user_folder = dir.workspace();
    assert!(!PathBuf::from(folder).starts_with(&user_folder), "--workspace {folder} is the user's folder");
    assert_eq!(turn["cwd"].as_str(), Some(folder), "and so is its cwd");
    assert!(folder.contains("/scratch/"), "{folder}");
}

/// ACP: the mode is the session's (`session/set_mode`), the folder the process's cwd.
fn untrusted_turn_on_acp(dir: &TestDir, s: Sidecar) {
    let turn = dir.turn_records().remove(0);
    let user_folder = dir.workspace();
    let cwd = turn["cwd"].as_str().unwrap().to_string();
    assert!(!PathBuf::from(&cwd).starts_with(&user_folder), "cwd {cwd} is the user's folder");
    assert!(cwd.contains("/scratch/"), "{cwd}");
    assert!(!has_arg(&turn, "--force"), "never --force: {turn}");
    assert!(s.finish().success());
    let modes: Vec<Value> = dir
        .acp_requests("session/set_mode")
        .into_iter()
        .filter(|r| r["sessionId"] == turn["sessionId"])
        .map(|r| r["modeId"].clone())
        .collect();
    assert_eq!(modes, [json!("ask")], "never agent mode: {turn}");
}

#[test]
fn a_window_without_folders_runs_turns_in_a_scratch_folder() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize_with(json!({"protocolVersion": 1, "cliPath": double_exe()}));
    let (_, r) = s.chat(chat("t1", "ask", json!([user("hello")]), json!({})));
    assert!(r.get("result").is_some(), "{r}");
    let cwd = dir.turn_records()[0]["cwd"].as_str().unwrap().to_string();
    assert_ne!(PathBuf::from(&cwd), std::env::current_dir().unwrap());
    assert!(cwd.contains("/scratch/"), "{cwd}");
}

#[test]
fn the_bridges_own_variables_never_reach_the_cli() {
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("CURSOR_BRIDGE_API_KEY", "client-key-must-stay").start();
    s.initialize(&dir, json!({}));
    s.chat(chat("t1", "ask", json!([user("hi")]), json!({})));
    for record in dir.records() {
        assert_eq!(record["bridgeEnv"], json!([]), "{} saw {}", record["subcommand"], record["bridgeEnv"]);
    }
    assert!(!dir.records().is_empty());
}

/// The double's chat folders for this test (`$HOME/.cursor/chats/<md5>/<chat id>/`).
fn chats_root(dir: &TestDir) -> PathBuf {
    dir.path().join("home/.cursor/chats")
}

fn remove_chat(dir: &TestDir, chat_id: &str) {
    for ws in std::fs::read_dir(chats_root(dir)).unwrap().flatten() {
        let folder = ws.path().join(chat_id);
        if folder.exists() {
            std::fs::remove_dir_all(folder).unwrap();
            return;
        }
    }
    panic!("no chat folder for {chat_id} under {}", chats_root(dir).display());
}

/// Kill the ACP process that holds `session` (its warm session is lost with it).
fn kill_acp_session(dir: &TestDir, session: &str) {
    let pid = dir.turn_records().iter().find(|t| t["sessionId"] == session).unwrap()["pid"].as_u64().unwrap();
    // SAFETY: plain kill(2) of the double's process.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    assert!(eventually(TIMEOUT, || !alive(pid)));
}

fn lose_acp_session(dir: &TestDir, session: &str) {
    kill_acp_session(dir, session);
    std::fs::remove_dir_all(dir.path().join("home/.cursor/acp-sessions").join(session)).unwrap();
}

fn lost_chat_is_replayed(dir: &TestDir, mut s: Sidecar, lose: impl FnOnce(&TestDir, &str)) {
    let (_, r1) = s.chat(chat("t1", "ask", json!([user("Remember 42.")]), json!({"conversationId": "c"})));
    assert!(r1.get("result").is_some(), "{r1}");
    let first_chat = dir.turn_records()[0]["sessionId"].as_str().unwrap().to_string();
    lose(dir, &first_chat);
    let history = json!([user("Remember 42."), assistant("Noted."), user("Which number?")]);
    let (deltas, r2) = s.chat(chat("t2", "ask", history, json!({"conversationId": "c"})));
    assert_eq!(r2["result"]["resumed"], false, "{r2}");
    let last_session = deltas.iter().rfind(|d| d["kind"] == "session").unwrap();
    assert_eq!(last_session["replayed"], true, "the client is told the history was replayed: {deltas:?}");
    let turns = dir.turn_records();
    let answered = turns.last().unwrap();
    assert_ne!(answered["sessionId"].as_str(), Some(first_chat.as_str()), "a new chat, not the lost one");
    let prompt = answered["prompt"].as_str().unwrap();
    assert!(prompt.contains("Remember 42.") && prompt.ends_with("Which number?"), "{prompt}");
}

#[test]
fn a_chat_gone_from_the_cli_store_is_replayed_into_a_new_chat() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({}));
    lost_chat_is_replayed(&dir, s, expected().lose_chat);
    let turns = dir.turn_records();
    assert_eq!(turns.len(), expected().turns_stored_after_the_loss, "{turns:?}");
}

#[test]
fn a_cli_that_silently_starts_a_fresh_chat_is_caught_before_it_answers() {
    let (knob, value, lose) = expected().fresh_start;
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env(knob, value).start();
    s.initialize(&dir, json!({}));
    lost_chat_is_replayed(&dir, s, lose);
}

/// The folders the CLI was given, one way or another, by every process the double saw: its
/// current folder, `--workspace`, and the `cwd` of every ACP session opened or loaded.
fn folders_the_cli_saw(dir: &TestDir) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    for r in dir.records() {
        let what = format!("{} (pid {})", r["subcommand"].as_str().unwrap_or("?"), r["pid"]);
        if let Some(cwd) = r["cwd"].as_str() {
            seen.push((what.clone(), cwd.to_string()));
        }
        if let Some(folder) = arg_after(&r, "--workspace") {
            seen.push((format!("{what} --workspace"), folder.to_string()));
        }
    }
    for method in ["session/new", "session/load"] {
        for r in dir.acp_requests(method) {
            if let Some(cwd) = r["params"]["cwd"].as_str().or(r["cwd"].as_str()) {
                seen.push((format!("{method} (pid {})", r["pid"]), cwd.to_string()));
            }
        }
    }
    seen
}

#[test]
fn nothing_starts_in_an_untrusted_folder_not_even_ahead_of_the_first_message() {
    let dir = TestDir::new();
    let user_folder = dir.workspace();
    // A cloned repository with a project configuration the CLI would read and trust.
    std::fs::create_dir_all(user_folder.join(".cursor")).unwrap();
    std::fs::write(user_folder.join(".cursor/cli.json"), r#"{"permissions":{"allow":["Shell(*)"]}}"#).unwrap();
    // The worst case: the editor started the sidecar in that folder.
    let mut s = Launch { cwd: Some(user_folder.clone()), ..Launch::new(&dir) }.start();
    s.initialize(&dir, json!({"workspaceTrusted": false}));
    // What is prepared ahead (a chat id, a session opened ahead) is prepared by now.
    let warmed = eventually(Duration::from_secs(10), || {
        dir.records().iter().any(|r| r["subcommand"] == "create-chat" || r["subcommand"] == "acp")
    });
    assert!(warmed, "the sidecar prepares the first turn ahead: {:?}", dir.records());
    assert!(s.request("status", json!({})).get("result").is_some());
    assert!(s.request("models/list", json!({"refresh": true})).get("result").is_some());
    let (_, r) = s.chat(chat("t1", "agent", json!([user("hello")]), json!({})));
    assert!(r.get("result").is_some(), "{r}");
    let (_, r) = s.chat(chat("t2", "ask", json!([user("hello"), assistant("Echo: hello"), user("more")]), json!({})));
    assert!(r.get("result").is_some(), "{r}");
    assert!(s.finish().success());

    let seen = folders_the_cli_saw(&dir);
    let subcommands: Vec<String> =
        dir.records().iter().filter_map(|r| r["subcommand"].as_str().map(String::from)).collect();
    assert!(subcommands.iter().any(|c| c == "version") && subcommands.iter().any(|c| c == "models"), "{subcommands:?}");
    for (what, folder) in &seen {
        assert!(!PathBuf::from(folder).starts_with(&user_folder), "{what} ran in the untrusted folder {folder}");
    }
}

#[test]
fn the_editors_cli_inherits_the_users_environment_but_never_the_bridges() {
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("MY_PROJECT_SDK", "/opt/sdk").env("CURSOR_BRIDGE_PASS_ENV", "X").start();
    s.initialize(&dir, json!({}));
    let (_, r) = s.chat(chat("t1", "ask", json!([user("hi")]), json!({})));
    assert!(r.get("result").is_some(), "{r}");
    assert!(s.finish().success());
    for record in dir.records() {
        let names: Vec<&str> = record["envNames"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(names.contains(&"MY_PROJECT_SDK"), "an editor's agent works in the user's environment: {names:?}");
        assert!(!names.iter().any(|n| n.starts_with("CURSOR_BRIDGE_")), "{names:?}");
    }
}
