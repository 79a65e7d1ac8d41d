//! A plain answer's first delta with Copilot's 40 tools in the request, next to the same turn
//! without tools; and a turn without tools on a sidecar that also serves tools turns, next to the
//! same turn on a sidecar whose broker has never been used (the "nothing measurable" target).

use std::time::Duration;

use anyhow::Result;
use cursor_bridge_test_client::{assistant, user};
use serde_json::{json, Value};

use super::{backends, first_text_ms, system, turn, SECTION};
use crate::bench::report::{Row, Target, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::stats::Stat;
use crate::bench::{scratch, Ctx};

/// A conversation followed turn by turn (ACP: the session stays warm, so every turn is a
/// follow-up and no session is opened in the measured turns).
struct Thread {
    conv: String,
    messages: Vec<Value>,
}

impl Thread {
    fn new(conv: String) -> Thread {
        Thread { conv, messages: vec![system()] }
    }
    fn ask(&mut self, text: &str) -> Vec<Value> {
        self.messages.push(user(text));
        self.messages.clone()
    }
    fn answered(&mut self, text: &str) {
        self.messages.push(assistant(text));
    }
}

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let n = ctx.plan.first_delta;
    let warmup = if ctx.plan.smoke { 1 } else { 3 };
    let mut rows = Vec::new();
    for (mode, options) in backends() {
        let acp = mode == "ACP";
        let (busy_dir, idle_dir) = (scratch()?, scratch()?);
        let mut busy = Sidecar::launch(ctx.bins, busy_dir.path(), None, &[])?;
        let mut idle = Sidecar::launch(ctx.bins, idle_dir.path(), None, &[])?;
        busy.initialize(options.clone())?;
        idle.initialize(options.clone())?;
        std::thread::sleep(Duration::from_millis(300)); // the chat-id prefetch / the session opened ahead
                                                        // ACP: one conversation of each kind, opened before the measured turns.
        let mut threads = [Thread::new("tools".into()), Thread::new("plain".into()), Thread::new("idle".into())];
        if acp {
            for (k, t) in threads.iter_mut().enumerate() {
                let sc = if k == 2 { &mut idle } else { &mut busy };
                let trace = turn(sc, &format!("open-{k}"), &t.conv.clone(), t.ask("hi"), k == 0)?;
                t.answered(&trace.text);
                std::thread::sleep(Duration::from_millis(300));
            }
        }
        let (mut with, mut without, mut idle_ms) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..warmup + n {
            let mut got = [f64::NAN; 3];
            // Rotate the order so no side always runs on a machine just woken by another.
            for step in 0..3 {
                let k = (i + step) % 3;
                let sc = if k == 2 { &mut idle } else { &mut busy };
                let id = format!("p{k}-{i}");
                let trace = if acp {
                    let t = &mut threads[k];
                    let trace = turn(sc, &id, &t.conv.clone(), t.ask(&format!("question {i}")), k == 0)?;
                    t.answered(&trace.text);
                    trace
                } else {
                    // Print mode: a new conversation each time, the tools described in full.
                    turn(sc, &id, &format!("{id}-conv"), vec![system(), user("hi")], k == 0)?
                };
                if trace.result["stopReason"] != json!("end") || trace.first_tool_call.is_some() {
                    anyhow::bail!("the plain answer called a tool: {}", trace.result);
                }
                got[k] = first_text_ms(&trace, &id)?;
                std::thread::sleep(Duration::from_millis(40));
            }
            if i >= warmup {
                with.push(got[0]);
                without.push(got[1]);
                idle_ms.push(got[2]);
            }
        }
        let added: Vec<f64> = with.iter().zip(&without).map(|(w, o)| w - o).collect();
        let broker: Vec<f64> = without.iter().zip(&idle_ms).map(|(b, i)| b - i).collect();
        let what = if acp {
            "`backend: \"acp\"`, a follow-up turn of a warm session (the tools conversation's agent hosts the tools on our MCP server, opened before the measured turns)"
        } else {
            "`backend: \"print\"`, `spares: 0`, a new conversation per turn (the full `<client_tools>` block goes in the prompt: what every new Copilot chat pays)"
        };
        rows.push(
            Row::new(SECTION, &format!("Plain answer, 40 tools − no tools (paired), {mode}"), Unit::Ms, &added)
                .reference("the turn without tools (absolute)", &without)
                .note(format!(
                    "{what}. chat/send → first `text` delta; the double answers at once in plain text. The tools turn carries Copilot's 40 Agent-mode tools (~30 KB of schemas) and a 15 K-character system message (both turns carry it; only client-tools prompts include it). With tools: {:.2} ms median.",
                    Stat::of(&with, false).median
                )),
        );
        rows.push(
            Row::new(SECTION, &format!("No tools: broker in use − never used (paired), {mode}"), Unit::Ms, &broker)
                .reference("the same turn, broker never used (absolute)", &idle_ms)
                .target(Target::below(1.0, "nothing measurable (≤ 1 ms median)"))
                .note("The turn without tools on the sidecar that also serves the 40-tools turns (interleaved), minus the same turn on a second sidecar, same settings, that never saw a tool: what the client-tools feature adds to a turn without tools."),
        );
    }
    Ok(rows)
}
