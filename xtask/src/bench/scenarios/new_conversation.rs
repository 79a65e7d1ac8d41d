//! New conversation: the first message of a new conversation next to the resumed second one, with
//! warm spares off and on, on a double with the CLI's start-up and `create-chat` delays.

use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use cursor_bridge_test_client::{assistant, user};
use serde_json::json;

use crate::bench::report::{Row, Target, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::{scratch, since, Bins, Ctx};

/// `CURSOR_DOUBLE_CREATE_CHAT_DELAY_MS` for the new-conversation figure.
const CREATE_CHAT_DELAY_MS: u64 = 1500;
/// `CURSOR_DOUBLE_STARTUP_MS` for the new-conversation figure (Node boot of every CLI process).
const STARTUP_MS: u64 = 800;
/// The double applies its start-up to `create-chat` too, so the prefetch started at `initialize`
/// needs start-up + create-chat; the first message waits this long after `initialize`.
const PREFETCH_WAIT: Duration = Duration::from_millis(STARTUP_MS + CREATE_CHAT_DELAY_MS + 200);
/// The wait the issue names ("give the prefetch its 1.5 s"): also measured, as a separate row.
const EARLY_WAIT: Duration = Duration::from_millis(CREATE_CHAT_DELAY_MS);
/// A person's think time between turns: room for a warm spare to boot (start-up 0.8 s).
const THINK_TIME: Duration = Duration::from_millis(1500);

struct ConversationRun {
    new_first: f64,
    resumed_first: f64,
}

/// One cold sidecar: wait `first_after`, first message of a new conversation, think, second message.
fn conversation_run(
    bins: &Bins,
    spares: u64,
    first_after: Duration,
    second: bool,
    tag: &str,
) -> Result<ConversationRun> {
    let dir = scratch()?;
    let env = [
        ("CURSOR_DOUBLE_STARTUP_MS", STARTUP_MS.to_string()),
        ("CURSOR_DOUBLE_CREATE_CHAT_DELAY_MS", CREATE_CHAT_DELAY_MS.to_string()),
    ];
    let mut sc = Sidecar::launch(bins, dir.path(), None, &env)?;
    sc.initialize(json!({"spares": spares}))?;
    std::thread::sleep(first_after);
    let conv = format!("nc-{tag}");
    let q1 = "What is the plan?";
    let t1 = sc.turn(&format!("{tag}-1"), &conv, vec![user(q1)], Duration::from_secs(30))?;
    if t1.result["resumed"] != json!(false) {
        bail!("the first message of a new conversation was not a new chat: {}", t1.result);
    }
    let new_first = since(t1.first_text.ok_or_else(|| anyhow!("no text delta"))?, t1.sent);
    if !second {
        return Ok(ConversationRun { new_first, resumed_first: f64::NAN });
    }
    std::thread::sleep(THINK_TIME);
    let t2 = sc.turn(
        &format!("{tag}-2"),
        &conv,
        vec![user(q1), assistant(&t1.text), user("And then?")],
        Duration::from_secs(30),
    )?;
    if t2.result["resumed"] != json!(true) {
        bail!("the second message did not resume the conversation's chat: {}", t2.result);
    }
    Ok(ConversationRun {
        new_first,
        resumed_first: since(t2.first_text.ok_or_else(|| anyhow!("no text delta"))?, t2.sent),
    })
}

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let (bins, plan) = (ctx.bins, ctx.plan);
    let (mut off, mut on, mut early) = (Vec::new(), Vec::new(), Vec::new());
    if plan.smoke {
        // One of each, side by side: the harness is exercised, the figures are not trusted.
        std::thread::scope(|s| -> Result<()> {
            let a = s.spawn(|| conversation_run(bins, 0, PREFETCH_WAIT, true, "off-0"));
            let b = s.spawn(|| conversation_run(bins, 1, PREFETCH_WAIT, true, "on-0"));
            let c = s.spawn(|| conversation_run(bins, 0, EARLY_WAIT, false, "early-0"));
            off.push(a.join().map_err(|_| anyhow!("panicked"))??);
            on.push(b.join().map_err(|_| anyhow!("panicked"))??);
            early.push(c.join().map_err(|_| anyhow!("panicked"))??);
            Ok(())
        })?;
    } else {
        for i in 0..plan.new_conversation {
            off.push(conversation_run(bins, 0, PREFETCH_WAIT, true, &format!("off-{i}"))?);
            on.push(conversation_run(bins, 1, PREFETCH_WAIT, true, &format!("on-{i}"))?);
            early.push(conversation_run(bins, 0, EARLY_WAIT, false, &format!("early-{i}"))?);
        }
    }
    let col = |runs: &[ConversationRun], f: fn(&ConversationRun) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    let (off_new, off_res) = (col(&off, |r| r.new_first), col(&off, |r| r.resumed_first));
    let (on_new, on_res) = (col(&on, |r| r.new_first), col(&on, |r| r.resumed_first));
    let off_gap: Vec<f64> = off_new.iter().zip(&off_res).map(|(n, r)| n - r).collect();
    let on_gap: Vec<f64> = on_new.iter().zip(&on_res).map(|(n, r)| n - r).collect();
    let gain: Vec<f64> = off_res.iter().zip(&on_res).map(|(off, on)| off - on).collect();
    let early_new = col(&early, |r| r.new_first);
    let setting = format!(
        "Double: create-chat {CREATE_CHAT_DELAY_MS} ms, start-up {STARTUP_MS} ms (it applies to create-chat too, so the prefetch takes {} ms); a fresh sidecar per run; the first message is sent {} ms after `initialize` answered, the second {} ms (think time) after the first ended.",
        STARTUP_MS + CREATE_CHAT_DELAY_MS,
        PREFETCH_WAIT.as_millis(),
        THINK_TIME.as_millis()
    );
    Ok(vec![
        Row::new("new conversation", "New conversation, 1st message, spares off (ms to 1st delta)", Unit::Ms, &off_new)
            .reference("2nd message, resumed, spares off", &off_res)
            .note(setting),
        Row::new("new conversation", "New − resumed, spares off (paired)", Unit::Ms, &off_gap)
            .target(Target::below(50.0, "≤ 50 ms median"))
            .note("Both messages start a cold CLI process; the difference is what a new conversation costs beyond that (the chat id is prefetched at `initialize`)."),
        Row::new("new conversation", "New conversation, 1st message, spares on (ms to 1st delta)", Unit::Ms, &on_new)
            .reference("2nd message, resumed, spares on", &on_res)
            .note("`spares: 1` (the default): after a turn the sidecar starts the follow-up's CLI process (`--resume` the same chat); a new conversation gets no warm process unless `spares` ≥ 2."),
        Row::new("new conversation", "New − resumed, spares on (paired)", Unit::Ms, &on_gap)
            .note("No target: with the default one spare only a follow-up turn is warm, so a new conversation pays the full CLI start-up."),
        Row::new("new conversation", "Follow-up sooner with spares on (off − on)", Unit::Ms, &gain)
            .target(Target::at_least(700.0, "≥ 700 ms median")),
        Row::new("new conversation", "New conversation, 1st message 1.5 s after initialize, spares off", Unit::Ms, &early_new)
            .reference(&format!("same after {} ms (prefetch done)", PREFETCH_WAIT.as_millis()), &off_new)
            .note(format!(
                "The first message sent {} ms after `initialize`, before the prefetched `create-chat` ({} ms with start-up) is done: it waits for the rest of it.",
                EARLY_WAIT.as_millis(),
                STARTUP_MS + CREATE_CHAT_DELAY_MS
            )),
    ])
}
