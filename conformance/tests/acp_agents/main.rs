//! The sidecar's generic ACP client against a real ACP agent no one here wrote: GitHub Copilot
//! CLI, offline, its model being our fake (`acp_conformance::fake_model`). What a client must
//! see, step by step: the handshake, a streamed turn, a second turn that carries the first one's
//! history, thinking, a permission request answered, a cancel in mid-stream, and the session
//! still working after it; then the agent exits on end of input and leaves no process behind.
//!
//! Ignored in a plain `cargo nextest run` (it needs the agent, ~190 MB from npm): `cargo xtask
//! test` installs it and runs this with `--run-ignored only`. Everything a run saw is written to
//! `target/tmp/acp-conformance/<agent>/`; a failure prints the transcript's tail, the model
//! requests and the agent's stderr.

mod client;
mod copilot;

use std::path::Path;
use std::time::Duration;

use acp_conformance::fake_model::{reply::SLOW_DELTAS, FakeModel, Logged, Reply};
use anyhow::{ensure, Context, Result};
use cursor_bridge::backend::Event;
use serde_json::{json, Value};

use client::{Agent, Turn, CANCEL_BOUND};

/// The first start unpacks the agent (Copilot: ~235 MB into its cache folder), on a busy machine.
const START_BOUND: Duration = Duration::from_secs(90);
const REQUEST_BOUND: Duration = Duration::from_secs(30);
const TURN_BOUND: Duration = Duration::from_secs(60);
/// Text events to wait for before cancelling a slow answer.
const CANCEL_AFTER: usize = 3;
const MARKER_FILE: &str = "tool-ran.marker";

#[tokio::test]
#[ignore = "needs the GitHub Copilot CLI: `cargo xtask test` installs it and runs this test; by hand set \
            CURSOR_BRIDGE_CONFORMANCE_COPILOT to its native `copilot` binary and pass `--run-ignored only`"]
async fn copilot_cli_conforms() {
    let binary =
        acp_conformance::copilot::binary().unwrap_or_else(|| panic!("{}", acp_conformance::copilot::missing_binary()));
    let fake = FakeModel::start().await.expect("the fake model server starts");
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("README.txt"), "A folder for the conformance test.\n").unwrap();
    let cwd = cwd.path().canonicalize().unwrap();
    let mut agent = Agent::start(&copilot::launch(&binary, home.path(), &cwd, &fake)).expect("the agent starts");

    let outcome = scenario(&mut agent, &fake, &cwd).await;
    let shutdown = agent.shut_down().await;
    let requests = fake.requests();
    keep_records("copilot", &agent, &requests);
    let failure = match (outcome, shutdown) {
        (Ok(report), Ok(exit)) => {
            for line in report.iter().chain([&format!("exit: {exit}")]) {
                eprintln!("conformance copilot: {line}");
            }
            return;
        }
        (Err(e), _) | (Ok(_), Err(e)) => e,
    };
    let transcript = agent.transcript();
    let tail = &transcript[transcript.len().saturating_sub(60)..];
    panic!(
        "the Copilot CLI did not behave as an ACP client expects: {failure:#}\n\n\
         --- transcript (last {} of {} lines) ---\n{}\n\n--- model requests ---\n{}\n\n--- agent stderr (tail) ---\n{}",
        tail.len(),
        transcript.len(),
        tail.join("\n"),
        requests.iter().map(Logged::summary).collect::<Vec<_>>().join("\n"),
        Some(agent.stderr()).filter(|s| !s.trim().is_empty()).unwrap_or_else(|| "(empty)".into())
    );
}

/// The steps in order; returns report lines (what the agent announced, timings).
async fn scenario(agent: &mut Agent, fake: &FakeModel, cwd: &Path) -> Result<Vec<String>> {
    let mut report = Vec::new();

    // Handshake.
    let init = agent
        .request(
            "initialize",
            json!({
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
                "clientInfo": {"name": "cursor-bridge-conformance", "version": env!("CARGO_PKG_VERSION")},
            }),
            START_BOUND,
        )
        .await?;
    ensure!(init["protocolVersion"] == 1, "initialize: protocolVersion {} (we asked for 1)", init["protocolVersion"]);
    let caps = &init["agentCapabilities"];
    ensure!(caps.is_object(), "initialize: no agentCapabilities object: {init}");
    report.push(format!(
        "agent {} {}; loadSession {}, promptCapabilities {}",
        init.pointer("/agentInfo/name").and_then(Value::as_str).unwrap_or("?"),
        init.pointer("/agentInfo/version").and_then(Value::as_str).unwrap_or("?"),
        caps["loadSession"],
        caps["promptCapabilities"]
    ));

    let new = agent.request("session/new", json!({"cwd": cwd, "mcpServers": []}), REQUEST_BOUND).await?;
    let session = new["sessionId"].as_str().filter(|s| !s.is_empty()).context("session/new: no sessionId")?.to_string();

    // A turn: streamed in pieces that add up to the model's answer.
    let turn = agent.prompt(&session, "Please reply. <<alpha>>", None, TURN_BOUND).await?;
    ended(&turn, "end_turn", "the first turn")?;
    same_text(&turn, "echo: alpha (user_turns=1)", "the first turn")?;
    ensure!(turn.text_events() >= 2, "the first turn came in {} text event(s), not streamed", turn.text_events());
    report.push(format!("first turn: {} text events in {:?}", turn.text_events(), turn.elapsed));

    // A second turn in the same session: the model saw the first turn (both sides of it).
    let turn = agent.prompt(&session, "Again. <<beta>>", None, TURN_BOUND).await?;
    ended(&turn, "end_turn", "the second turn")?;
    same_text(&turn, "echo: beta (user_turns=2)", "the second turn")?;
    let asked = request_for(fake, "<<beta>>")?;
    ensure!(
        asked.messages.iter().any(|m| m.role == "assistant" && m.text == "echo: alpha (user_turns=1)"),
        "the second turn's model request lacks the first answer: {}",
        asked.summary()
    );

    // Thinking: streamed as thinking, closed before the answer.
    let turn = agent.prompt(&session, "[[think]] Think first. <<gamma>>", None, TURN_BOUND).await?;
    ended(&turn, "end_turn", "the thinking turn")?;
    same_text(&turn, "echo: gamma (user_turns=3)", "the thinking turn")?;
    ensure!(turn.thinking() == "thinking about gamma", "the thinking turn's thinking: {:?}", turn.thinking());
    let done = turn.events.iter().position(|e| *e == Event::ThinkingDone);
    let text = turn.events.iter().position(|e| matches!(e, Event::Text(_)));
    ensure!(
        matches!((done, text), (Some(d), Some(t)) if d < t),
        "thinking not closed before the answer: {:?}",
        turn.events
    );

    // A command the agent must ask permission for: asked, refused by us, not run.
    let turn =
        agent.prompt(&session, &format!("[[shell:touch {MARKER_FILE}]] Run it. <<zeta>>"), None, TURN_BOUND).await?;
    ended(&turn, "end_turn", "the permission turn")?;
    let asked: Vec<_> = turn.requests.iter().filter(|r| r.method == "session/request_permission").collect();
    ensure!(!asked.is_empty(), "the agent ran a shell command without session/request_permission: {:?}", turn.events);
    ensure!(
        asked.iter().all(|r| r.answer.pointer("/outcome/outcome") == Some(&json!("selected"))),
        "a permission request had no reject_once option: {:?}",
        asked.iter().map(|r| &r.params).collect::<Vec<_>>()
    );
    ensure!(!cwd.join(MARKER_FILE).exists(), "the refused command ran anyway ({MARKER_FILE} exists)");
    let started = turn.events.iter().find_map(|e| match e {
        Event::ToolStarted { call_id, .. } => Some(call_id.clone()),
        _ => None,
    });
    let refused = turn
        .events
        .iter()
        .any(|e| matches!(e, Event::ToolCompleted { call_id, ok: false, .. } if Some(call_id) == started.as_ref()));
    ensure!(refused, "the refused tool is not shown as started and not completed: {:?}", turn.events);
    report.push(format!("permission turn: {} request(s) answered: {}", asked.len(), asked[0].answer));

    // Cancel in mid-stream: the prompt answers `cancelled` soon after, the stream stops.
    let turn = agent.prompt(&session, "[[slow]] Stream slowly. <<delta>>", Some(CANCEL_AFTER), TURN_BOUND).await?;
    ended(&turn, "cancelled", "the cancelled turn")?;
    let full: String = (0..SLOW_DELTAS).map(|i| format!("slow-{i} ")).collect();
    ensure!(
        full.starts_with(&turn.text()),
        "the cancelled turn's text is not the start of the answer: {:?}",
        turn.text()
    );
    ensure!(
        turn.text_events() < SLOW_DELTAS,
        "the cancelled turn streamed the whole answer ({} text events)",
        turn.text_events()
    );
    let slow = request_for(fake, "<<delta>>")?;
    report.push(format!(
        "cancel: answered `cancelled` {:?} after session/cancel (bound {CANCEL_BOUND:?}), {} text events; the model stream: {:?} after {} of {SLOW_DELTAS} deltas",
        turn.cancel_to_answer.unwrap_or_default(),
        turn.text_events(),
        slow.outcome,
        slow.deltas_sent
    ));

    // The session still works, with its history.
    let turn = agent.prompt(&session, "After the cancel. <<epsilon>>", None, TURN_BOUND).await?;
    ended(&turn, "end_turn", "the turn after the cancel")?;
    let asked = request_for(fake, "<<epsilon>>")?;
    let expected = asked.reply.as_ref().map(Reply::text).unwrap_or_default();
    ensure!(expected.starts_with("echo: epsilon (user_turns="), "the fake's answer: {expected:?}");
    same_text(&turn, &expected, "the turn after the cancel")?;
    for earlier in ["<<alpha>>", "<<beta>>", "<<gamma>>", "<<zeta>>"] {
        ensure!(
            asked.messages.iter().any(|m| m.role == "user" && m.text.contains(earlier)),
            "the turn after the cancel lost {earlier} from the history: {}",
            asked.summary()
        );
    }
    report.push(format!("after the cancel: {expected:?}"));

    agent.notify("session/cancel", json!({"sessionId": session})).await; // harmless when idle
    Ok(report)
}

fn ended(turn: &Turn, want: &str, what: &str) -> Result<()> {
    ensure!(
        turn.stop_reason.as_deref() == Some(want),
        "{what}: stopReason {:?}, expected {want:?}{}",
        turn.stop_reason,
        turn.error.as_ref().map(|e| format!(" (the prompt failed: {e})")).unwrap_or_default()
    );
    Ok(())
}

fn same_text(turn: &Turn, want: &str, what: &str) -> Result<()> {
    ensure!(
        turn.text() == want,
        "{what}: a client shows the text {:?}, expected {want:?} (events: {:?})",
        turn.text(),
        turn.events
    );
    Ok(())
}

/// The model request whose last user message holds `marker` (the last such, retries included).
fn request_for(fake: &FakeModel, marker: &str) -> Result<Logged> {
    let requests = fake.requests();
    requests
        .iter()
        .rev()
        .find(|r| r.messages.iter().rev().find(|m| m.role == "user").is_some_and(|m| m.text.contains(marker)))
        .cloned()
        .with_context(|| format!("no model request for {marker}"))
}

/// The transcript, the model requests and the agent's stderr, kept for reading after the run.
fn keep_records(name: &str, agent: &Agent, requests: &[Logged]) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("acp-conformance").join(name);
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let _ = std::fs::write(dir.join("transcript.txt"), agent.transcript().join("\n") + "\n");
    let lines: Vec<String> = requests.iter().map(Logged::summary).collect();
    let _ = std::fs::write(dir.join("model-requests.txt"), lines.join("\n") + "\n");
    let _ = std::fs::write(dir.join("agent-stderr.txt"), agent.stderr());
}
