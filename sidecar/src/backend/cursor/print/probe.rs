//! The probe's print-mode question: after one tiny turn in a new chat, is the chat's folder where
//! print mode's chat-store check looks (docs/cursor-cli.md §6)? The turn runs through print
//! mode's own backend, as any turn would.

use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::chat_store;
use crate::backend::contract::{Backend, Chat, TurnSpec};
use crate::backend::cursor::probe_notes::Learnt;
use crate::backend::cursor::probing::{Asking, NO_CONSENT};
use crate::backend::events::{Activity, EventSink};
use crate::backend::reports::ProbeOutcome::{AsAssumed, Differs, Failed};
use crate::vocab::Mode;

pub async fn question(a: &mut Asking<'_>, print: &dyn Backend, learnt: &mut Learnt) {
    if !a.plan.spend {
        a.not_asked("chatStore", NO_CONSENT);
        return;
    }
    let turn = TurnSpec {
        model: "auto".into(),
        mode: Mode::Ask,
        workspace: a.scratch.to_path_buf(),
        chat: Chat::New,
        prompt: "Reply with the single word: ok".into(),
        unattended: false,
        idle: Duration::from_secs(90),
        hosted_tools: None,
        images: Vec::new(),
    };
    // The events are not shown anywhere: only the chat the turn ran in matters.
    let (tx, mut rx) = mpsc::channel(64);
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let mut sink = EventSink::new(tx, Activity::new());
    a.spent += 1;
    let outcome = print.run_turn(turn, &mut sink).await;
    drop(sink);
    let _ = drain.await;
    let chat = match outcome {
        Ok(end) => end.chat_id,
        Err(f) => {
            a.found(
                "chatStore",
                Failed,
                format!("The print-mode turn failed: {}", f.error.message),
                "Fix what the message says, then probe again.",
                json!({}),
            );
            return;
        }
    };
    let Some(chat) = chat.filter(|c| !c.is_empty()) else {
        a.found("chatStore", Failed, "The print-mode turn reported no chat id.", "", json!({}));
        return;
    };
    match chat_store::kept_where_looked(&chat, a.scratch) {
        Some(true) => {
            learnt.chat_store_found = Some(true);
            a.found(
                "chatStore",
                AsAssumed,
                "The chat's folder is where the bridge looks.",
                "Before resuming a print-mode chat the bridge checks that the CLI still has it; a chat it lost is replayed into a new one with the conversation's history.",
                json!({"found": true}),
            );
        }
        Some(false) => {
            learnt.chat_store_found = Some(false);
            a.found(
                "chatStore",
                Differs,
                "The chat's folder is not where the bridge looks (another store layout).",
                "The bridge never judges this build's chats by their folder; a lost chat is noticed by the chat id the CLI reports instead.",
                json!({"found": false}),
            );
        }
        None => a.found(
            "chatStore",
            Differs,
            "There is no chat store to look in (no HOME or CURSOR_DATA_DIR).",
            "The bridge never judges chats by their folder here.",
            json!({"found": null}),
        ),
    }
}
