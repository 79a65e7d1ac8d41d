//! Client tools (docs/client-tools.md): what the broker adds to a plain answer when the request
//! carries Copilot's 40 Agent-mode tools, to a tool round trip, and to a new ACP conversation
//! that must open a session with our MCP server. Both backends; every figure against a reference
//! measured in the same run.
//!
//! - [`plain`]: time to the first text delta of a plain answer, with and without tools
//! - [`round_trip`]: a tool call, its result, the continuation
//! - [`new_session`]: a new ACP conversation with tools, under realistic start-up delays

mod new_session;
mod plain;
mod round_trip;

use std::time::Duration;

use anyhow::{anyhow, Result};
use serde_json::{json, Value};

use crate::bench::report::Row;
use crate::bench::sidecar::{Sidecar, TurnTrace};
use crate::bench::{since, Ctx};

/// Copilot's Agent-mode tools (VS Code 1.139.1's 40 names, vscode-client/test/fixtures/tools/
/// agent.json), with schemas and descriptions of the size and shape the Chat view sends
/// (docs/vscode-provider.md §10): about 30 KB of JSON.
const COPILOT_TOOLS: &str = include_str!("copilot-agent-tools.json");

pub const SECTION: &str = "client tools";

/// The `chat/send` fields of a Copilot Agent-mode request.
fn with_tools() -> Value {
    let tools: Value = serde_json::from_str(COPILOT_TOOLS).expect("the bench's tool list is JSON");
    json!({"tools": tools, "toolChoice": "auto", "parallelToolCalls": true})
}

/// A system message the size of Copilot's Agent-mode one (≈15 K characters): client-tools
/// prompts carry it (it explains the tools), others leave it out unless `sendSystemMessages`.
fn system() -> Value {
    let paragraph = "You are an expert AI programming assistant working in the user's editor. Use the tools you \
        are given to read, search and edit the workspace; keep answers short and concrete, and never invent file \
        contents you have not read. ";
    json!({"role": "system", "text": paragraph.repeat(15_000 / paragraph.len() + 1)})
}

fn first_text_ms(t: &TurnTrace, what: &str) -> Result<f64> {
    Ok(since(t.first_text.ok_or_else(|| anyhow!("{what}: no text delta: {}", t.result))?, t.sent))
}

/// The backends measured and their `initialize` options.
fn backends() -> [(&'static str, Value); 2] {
    [("print", json!({"backend": "print", "spares": 0})), ("ACP", json!({"backend": "acp"}))]
}

fn turn(sc: &mut Sidecar, id: &str, conv: &str, messages: Vec<Value>, tools: bool) -> Result<TurnTrace> {
    let extra = if tools { with_tools() } else { json!({}) };
    sc.turn_with(id, conv, messages, &extra, Duration::from_secs(60))
}

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let mut rows = plain::measure(ctx)?;
    rows.extend(round_trip::measure(ctx)?);
    rows.extend(new_session::measure(ctx)?);
    Ok(rows)
}
