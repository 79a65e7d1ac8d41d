//! First delta: how long after `chat/send` the first `text` delta reaches the client, through the
//! sidecar, next to spawning the CLI double directly.

use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use cursor_bridge_test_client::{assistant, user};
use serde_json::json;

use crate::bench::direct::run_double_direct;
use crate::bench::report::{Row, Target, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::{scratch, since, Ctx};

/// First delta: `chat/send` → first `text` delta through the sidecar vs spawning the double directly.
pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let (bins, plan) = (ctx.bins, ctx.plan);
    let dir = scratch()?;
    let mut sc = Sidecar::launch(bins, dir.path(), None, &[])?;
    sc.initialize(json!({"spares": 0}))?;
    std::thread::sleep(Duration::from_millis(300)); // the chat-id prefetch of `initialize`
    let (mut via, mut direct, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    let (mut via_resumed, mut diff_resumed) = (Vec::new(), Vec::new());
    let ws = sc.ws.clone();
    let warmup = if plan.smoke { 1 } else { 3 };
    let conv = |i: usize| format!("fd-conv-{i}");
    // The conversation of the warm-up's first turn, so every iteration has one to resume.
    sc.turn("fd-seed", &conv(usize::MAX), vec![user("hi")], Duration::from_secs(30))?;
    std::thread::sleep(Duration::from_millis(60));
    for i in 0..warmup + plan.first_delta {
        let mut d = f64::NAN;
        let mut new = f64::NAN;
        let mut resumed = f64::NAN;
        // Rotate the order so no side always runs on a machine just woken by another.
        for step in 0..3 {
            match (i + step) % 3 {
                0 => {
                    let run = run_double_direct(bins, dir.path(), &ws, &[], "hi")?;
                    d = since(run.first_text.ok_or_else(|| anyhow!("the double printed no text delta"))?, run.spawned);
                }
                1 => {
                    let t = sc.turn(&format!("fd-{i}"), &conv(i), vec![user("hi")], Duration::from_secs(30))?;
                    new = since(t.first_text.ok_or_else(|| anyhow!("no text delta"))?, t.sent);
                }
                _ => {
                    // The previous iteration's conversation, resumed: no chat id to fetch.
                    let earlier = if i == 0 { usize::MAX } else { i - 1 };
                    let msgs = vec![user("hi"), assistant("Echo: hi"), user("again")];
                    let t = sc.turn(&format!("fd-r-{i}"), &conv(earlier), msgs, Duration::from_secs(30))?;
                    if t.result["resumed"] != json!(true) {
                        bail!("the follow-up turn did not resume: {}", t.result);
                    }
                    resumed = since(t.first_text.ok_or_else(|| anyhow!("no text delta"))?, t.sent);
                }
            }
            // Room for what the sidecar does after a turn (the chat-id refill, the orphan sweep).
            std::thread::sleep(Duration::from_millis(40));
        }
        if i >= warmup {
            via.push(new);
            direct.push(d);
            diff.push(new - d);
            via_resumed.push(resumed);
            diff_resumed.push(resumed - d);
        }
    }
    Ok(vec![
        Row::new("first delta", "First text delta via sidecar, new conversation", Unit::Ms, &via)
            .reference("direct spawn → first text line", &direct)
            .note("chat/send → first `text` delta at the client; the double answers at once (no start-up, no pacing). Sidecar initialized with `spares: 0` (a cold CLI process per turn, like the direct spawn) and a new conversationId per turn; the direct spawn uses the sidecar's argv (`-p --output-format stream-json --stream-partial-output --model auto --workspace <ws> --resume <new id> --trust`, prompt on stdin then closed), environment and working folder."),
        Row::new("first delta", "First-delta overhead, new conversation (sidecar − direct)", Unit::Ms, &diff)
            .target(Target::below(2.0, "< 2 ms median"))
            .note("Paired per iteration. A new conversation takes the prefetched chat id; the `create-chat` for the next one starts once the turn's CLI is done (sidecar/src/backend/cursor/print/chat_ids.rs), so it never competes with the turn's start-up, and a new conversation never waits for a refill that has not started."),
        Row::new("first delta", "First-delta overhead, resumed turn (sidecar − direct)", Unit::Ms, &diff_resumed)
            .reference("resumed turn via sidecar (absolute)", &via_resumed)
            .note("Same, for the second message of an existing conversation (`--resume` its chat, `spares: 0`): no chat id is taken, so nothing else starts with the turn."),
    ])
}
