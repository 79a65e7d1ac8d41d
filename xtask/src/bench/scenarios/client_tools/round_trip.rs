//! A tool round trip: the model calls one tool (chat/send → the `toolCall` delta, → the response
//! ending `toolCalls`), the client sends the result (chat/send → the continuation's first text),
//! next to a plain follow-up of the same conversation. Print mode runs the prompt protocol
//! (`--resume` with only the results); ACP the MCP path (the parked call answered).

use std::time::Duration;

use anyhow::{bail, Result};
use cursor_bridge_test_client::{assistant, user};
use serde_json::json;

use super::{first_text_ms, turn, SECTION};
use crate::bench::report::{Row, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::stats::Stat;
use crate::bench::{scratch, since, Ctx};

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let n = if ctx.plan.smoke { 1 } else { 20 };
    let mut rows = Vec::new();
    for (mode, options) in [("print", json!({"backend": "print"})), ("ACP", json!({"backend": "acp"}))] {
        let dir = scratch()?;
        let mut sc = Sidecar::launch(ctx.bins, dir.path(), None, &[])?;
        sc.initialize(options)?;
        std::thread::sleep(Duration::from_millis(300));
        let (mut to_call, mut to_end, mut cont, mut plain) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for i in 0..n + 1 {
            let conv = format!("rt-{i}");
            let mut messages = vec![user("hi")];
            let a = turn(&mut sc, &format!("a-{i}"), &conv, messages.clone(), true)?;
            messages.push(assistant(&a.text));
            let call = json!({"name": "create_file", "arguments": {"filePath": "/w/a.txt", "content": "hi"}});
            let script = json!({"toolScript": [{"say": "Creating it.", "call": [call]}]});
            messages.push(user(&format!("[[double:{script}]]\ncreate a.txt saying hi")));
            let b = turn(&mut sc, &format!("b-{i}"), &conv, messages.clone(), true)?;
            let (Some(called), true) = (b.first_tool_call, b.result["stopReason"] == json!("toolCalls")) else {
                bail!("{mode}: the tool turn did not end with a call: {}", b.result);
            };
            let c0 = &b.tool_calls[0];
            messages.push(json!({"role": "assistant", "text": b.text, "toolCalls": [c0]}));
            messages.push(json!({"role": "user", "text": "", "toolResults": [{"callId": c0["callId"],
                "content": "The following files were successfully edited:\n/w/a.txt\n", "isError": false}]}));
            let c = turn(&mut sc, &format!("c-{i}"), &conv, messages.clone(), true)?;
            if !c.text.contains("successfully edited") {
                bail!("{mode}: the continuation did not get the result: {}", c.text);
            }
            messages.push(assistant(&c.text));
            messages.push(user("thanks"));
            let d = turn(&mut sc, &format!("d-{i}"), &conv, messages, true)?;
            // The first conversation warms up the machine and the sidecar.
            if i > 0 {
                to_call.push(since(called, b.sent));
                to_end.push(since(b.answered, b.sent));
                cont.push(first_text_ms(&c, "continuation")?);
                plain.push(first_text_ms(&d, "plain follow-up")?);
            }
            std::thread::sleep(Duration::from_millis(40));
        }
        let tail: Vec<f64> = to_end.iter().zip(&to_call).map(|(e, c)| e - c).collect();
        let tail_median = Stat::of(&tail, false).median;
        let end_median = Stat::of(&to_end, false).median;
        let how = if mode == "ACP" {
            format!("`backend: \"acp\"`, default settings: the MCP path. The agent's `tools/call` is parked; the `toolCall` delta goes out at once, the response ends when no other call came within the 50 ms batch window (sidecar/src/engine/tools/parked.rs, `BATCH_WINDOW`): toolCall → end {tail_median:.1} ms median, {:.0} % of chat/send → end.", 100.0 * tail_median / end_median)
        } else {
            format!("`backend: \"print\"`, default settings: the prompt protocol. The double writes a `[TOOL_CALLS: …]` block, held back from the stream; the calls are read once the CLI's answer is complete; toolCall → end {tail_median:.1} ms median (the CLI process ending). No fixed wait.")
        };
        rows.push(
            Row::new(SECTION, &format!("Tool call: chat/send → toolCall delta, {mode}"), Unit::Ms, &to_call)
                .reference("plain follow-up's first delta", &plain)
                .note(format!("{how} Each conversation: a plain first turn with the 40 tools, then a turn whose model calls `create_file`, then its result, then a plain follow-up (the reference); the double answers at once.")),
        );
        rows.push(
            Row::new(SECTION, &format!("Tool call: chat/send → response ends (toolCalls), {mode}"), Unit::Ms, &to_end)
                .reference("plain follow-up's first delta", &plain),
        );
        rows.push(
            Row::new(SECTION, &format!("Tool result: chat/send → continuation's first delta, {mode}"), Unit::Ms, &cont)
                .reference("plain follow-up's first delta", &plain)
                .note(if mode == "ACP" {
                    "The result answers the parked MCP call; the same agent turn goes on (no new prompt)."
                } else {
                    "A new CLI process `--resume`s the chat with only the `TOOL_RESULT` block."
                }),
        );
        drop(sc);
    }
    Ok(rows)
}
