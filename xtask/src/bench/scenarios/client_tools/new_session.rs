//! ACP: the first turn of a new conversation with Copilot's tools (what a new Agent-mode chat
//! pays) next to a new conversation without tools. The session opened ahead has no MCP server,
//! so the tools turn starts an agent, opens `session/new` with our server and waits for the
//! agent to list the tools. The double takes the real CLI's start-up and session delays
//! (warm_backend.rs); in smoke runs a tenth of them, to stay quick.

use std::time::Duration;

use anyhow::Result;
use cursor_bridge_test_client::user;
use serde_json::{json, Value};

use super::{first_text_ms, system, turn, SECTION};
use crate::bench::report::{Row, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::{scratch, Ctx};

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let (n, scale) = if ctx.plan.smoke { (1, 10) } else { (5, 1) };
    let (startup, session, model) = (800 / scale, 1500 / scale, 300 / scale);
    let refill = Duration::from_millis((startup + session + 500) as u64);
    let env = [
        ("CURSOR_DOUBLE_STARTUP_MS", startup.to_string()),
        ("CURSOR_DOUBLE_ACP_STARTUP_MS", startup.to_string()),
        ("CURSOR_DOUBLE_ACP_NEW_SESSION_MS", session.to_string()),
    ];
    let said = |text: &str| -> Vec<Value> {
        vec![system(), user(&format!("[[double:{}]]\n{text}", json!({"startupMs": model})))]
    };
    let dir = scratch()?;
    let mut sc = Sidecar::launch(ctx.bins, dir.path(), None, &env)?;
    sc.initialize(json!({"backend": "acp"}))?;
    std::thread::sleep(refill);
    let (mut with, mut without, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let plain = turn(&mut sc, &format!("nw-{i}"), &format!("nw-conv-{i}"), said("hi"), false)?;
        std::thread::sleep(refill);
        let tools = turn(&mut sc, &format!("nt-{i}"), &format!("nt-conv-{i}"), said("hi"), true)?;
        std::thread::sleep(refill);
        let (w, o) =
            (first_text_ms(&tools, "new conversation with tools")?, first_text_ms(&plain, "new conversation")?);
        with.push(w);
        without.push(o);
        diff.push(w - o);
    }
    Ok(vec![
        Row::new(SECTION, "New conversation with 40 tools, ACP: first delta", Unit::Ms, &with)
            .reference("new conversation without tools", &without)
            .note(format!("`backend: \"acp\"`, default settings. The double starts in {startup} ms, opens a session in {session} ms, its model takes {model} ms per message. Without tools the session opened ahead serves the turn; with tools a new agent starts in the private folder, `session/new` carries our MCP server, and the turn waits until the agent has listed the tools.")),
        Row::new(SECTION, "New conversation, 40 tools − no tools (paired), ACP", Unit::Ms, &diff)
            .note("What a new Copilot Agent-mode chat pays on ACP: the agent's start-up and `session/new` (no session with our server is opened ahead)."),
    ])
}
