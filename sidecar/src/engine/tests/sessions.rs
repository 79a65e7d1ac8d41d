//! Which chat a turn runs in, and what the agent is sent.

use super::*;
use crate::backend::{Chat, Warm};
use crate::engine::sessions::ClearScope;
use crate::engine::Settings;
use crate::vocab::{ChatMessage, Role};

#[tokio::test(start_paused = true)]
async fn a_follow_up_resumes_the_chat_and_sends_only_the_new_message() {
    let h = Harness::new(Settings::default());
    let (events, first) = h.send(in_conversation("conv-1", vec![user("hello")])).await;
    let first = first.unwrap();
    assert_eq!(text_of(&events), "Echo: hello");
    assert!(matches!(&events[0], Event::Session { resumed: false, replayed: false, .. }), "{events:?}");
    assert_eq!(h.backend.turn(0).chat, Chat::New);

    let history = vec![user("hello"), assistant("Echo: hello"), user("and then?")];
    let (_, second) = h.send(in_conversation("conv-1", history)).await;
    let second = second.unwrap();
    assert!(second.resumed);
    assert_eq!(second.session_id, first.session_id);
    let t = h.backend.turn(1);
    assert_eq!(t.chat, Chat::Resume("chat-1".into()));
    assert_eq!(t.prompt, "and then?");
}

/// VS Code's Copilot harness: no conversation id; a follow-up carries the marker of the previous
/// answer (our session id), the system instructions and only what is new, or a trimmed transcript.
#[tokio::test(start_paused = true)]
async fn a_marker_continues_its_session_with_only_what_is_new_even_without_the_earlier_turns() {
    let h = Harness::new(Settings::default());
    let system = || ChatMessage::new(Role::System, "You are the harness's agent.");
    let (_, first) = h.send(request(vec![system(), user("remember 42")])).await;
    let session = first.unwrap().session_id;
    let marked = |messages| TurnRequest { session_id: session.clone(), ..request(messages) };

    let (events, second) = h.send(marked(vec![system(), user("what number?")])).await;
    let second = second.unwrap();
    assert!(second.resumed && !second.replayed, "{second:?}");
    assert_eq!(second.session_id, session);
    assert!(matches!(&events[0], Event::Session { resumed: true, replayed: false, .. }), "{events:?}");
    assert_eq!(h.backend.turn(1).chat, Chat::Resume("chat-1".into()));
    assert_eq!(h.backend.turn(1).prompt, "what number?", "only the new message is sent");

    // A trimmed transcript: the newest turn and the new message.
    let trimmed = vec![system(), user("what number?"), assistant("Echo: what number?"), user("and doubled?")];
    let third = h.send(marked(trimmed)).await.1.unwrap();
    assert!(third.resumed && third.session_id == session, "{third:?}");
    assert_eq!(h.backend.turn(2).prompt, "and doubled?");

    // The chat's whole history was kept: the full transcript, without the marker, still matches.
    let full = vec![
        system(),
        user("remember 42"),
        assistant("Echo: remember 42"),
        user("what number?"),
        assistant("Echo: what number?"),
        user("and doubled?"),
        assistant("Echo: and doubled?"),
        user("thanks"),
    ];
    let fourth = h.send(request(full)).await.1.unwrap();
    assert!(fourth.resumed && fourth.session_id == session, "{fourth:?}");
    assert_eq!(h.backend.turn(3).prompt, "thanks");
    assert_eq!(h.backend.turn_count(), 4);
}

#[tokio::test(start_paused = true)]
async fn history_alone_identifies_a_conversation_and_a_different_one_starts_a_new_chat() {
    let h = Harness::new(Settings::default());
    h.send(request(vec![user("first question")])).await.1.unwrap();
    let (_, same) =
        h.send(request(vec![user("first question"), assistant("Echo: first question"), user("second")])).await;
    assert!(same.unwrap().resumed);
    let (_, other) = h.send(request(vec![user("another opener"), assistant("…"), user("second")])).await;
    let other = other.unwrap();
    assert!(!other.resumed);
    assert!(other.replayed, "an unknown history is replayed into the new chat");
    let t = h.backend.turn(2);
    assert_eq!(t.chat, Chat::New);
    assert!(t.prompt.contains("another opener") && t.prompt.ends_with("second"), "{}", t.prompt);
}

#[tokio::test(start_paused = true)]
async fn a_cleared_session_replays_the_conversation_into_a_new_chat() {
    let h = Harness::new(Settings::default());
    h.send(in_conversation("c", vec![user("remember 42")])).await.1.unwrap();
    assert_eq!(h.engine.clear_sessions(ClearScope::Mine).await, 1);
    let (events, r) =
        h.send(in_conversation("c", vec![user("remember 42"), assistant("ok"), user("what number?")])).await;
    let r = r.unwrap();
    assert!(!r.resumed && r.replayed);
    assert!(matches!(&events[0], Event::Session { replayed: true, .. }));
    let prompt = h.backend.turn(1).prompt;
    assert!(prompt.contains("remember 42") && prompt.contains("ok") && prompt.ends_with("what number?"), "{prompt}");
}

#[tokio::test(start_paused = true)]
async fn a_chat_the_agent_lost_is_replayed_instead_of_failing() {
    let h = Harness::new(Settings::default());
    h.send(in_conversation("c", vec![user("one")])).await.1.unwrap();
    h.backend.lost_chats.lock().unwrap().push("chat-1".into());
    let (events, r) = h.send(in_conversation("c", vec![user("one"), assistant("Echo: one"), user("two")])).await;
    r.unwrap();
    assert_eq!(h.backend.turn_count(), 3, "the resume, then the replay");
    assert_eq!(h.backend.turn(2).chat, Chat::New);
    assert!(h.backend.turn(2).prompt.contains("one"));
    assert!(text_of(&events).contains("two"));
    // The session now points at the new chat: the next turn resumes that one.
    h.send(in_conversation("c", vec![user("one"), assistant("a"), user("two"), assistant("b"), user("three")]))
        .await
        .1
        .unwrap();
    assert_eq!(h.backend.turn(3).chat, Chat::Resume("chat-2".into()));
}

#[tokio::test(start_paused = true)]
async fn utility_turns_run_one_shot_in_ask_mode_and_touch_no_session() {
    let h = Harness::new(Settings { utility_model: Some("fast-model".into()), ..Settings::default() });
    let req = TurnRequest { utility: true, mode: Mode::Agent, ..request(vec![user("title for: hello")]) };
    let (events, r) = h.send(req).await;
    let r = r.unwrap();
    assert_eq!(r.session_id, None);
    assert!(!events.iter().any(|e| matches!(e, Event::Session { .. })));
    let t = h.backend.turn(0);
    assert_eq!((t.chat, t.mode, t.model.as_str()), (Chat::OneShot, Mode::Ask, "fast-model"));
    assert!(h.engine.sessions().await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn sessions_survive_a_restart_through_the_state_folder() {
    let h = Harness::with_state(Settings::default(), true);
    h.send(in_conversation("c", vec![user("persist me")])).await.1.unwrap();
    let restarted = h.restart();
    let (_, r) =
        send_to(&restarted, in_conversation("c", vec![user("persist me"), assistant("x"), user("still?")])).await;
    assert!(r.unwrap().resumed);
}

#[tokio::test(start_paused = true)]
async fn a_finished_turn_warms_up_its_follow_up() {
    let h = Harness::new(Settings { warm_ahead: 2, ..Settings::default() });
    h.send(in_conversation("c", vec![user("hi")])).await.1.unwrap();
    let warmed = h.backend.warmed.lock().unwrap().clone();
    assert!(matches!(&warmed[..], [Warm::FollowUp { chat_id, fresh: true, .. }] if chat_id == "chat-1"), "{warmed:?}");
    let off = Harness::new(Settings { warm_ahead: 0, ..Settings::default() });
    off.send(in_conversation("c", vec![user("hi")])).await.1.unwrap();
    assert!(off.backend.warmed.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn events_arrive_in_order_and_usage_comes_last() {
    let h = Harness::new(Settings::default());
    let (events, r) = h.send(request(vec![user("[[think:hmm|tool|text:done]]")])).await;
    r.unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            Event::Session { .. } => "session",
            Event::Thinking(_) => "thinking",
            Event::ToolStarted { .. } => "toolStarted",
            Event::ToolCompleted { .. } => "toolCompleted",
            Event::Text(_) => "text",
            Event::Usage(_) => "usage",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["session", "thinking", "toolStarted", "toolCompleted", "text", "usage"]);
}

#[tokio::test(start_paused = true)]
async fn an_empty_answer_is_an_error_but_tool_work_is_not() {
    let h = Harness::new(Settings::default());
    let (_, r) = h.send(request(vec![user("[[empty]]")])).await;
    assert_eq!(r.unwrap_err().kind, ErrorKind::EmptyResponse);
    let (_, r) = h.send(request(vec![user("[[tool]]")])).await;
    r.unwrap();
}

#[tokio::test(start_paused = true)]
async fn bad_requests_are_refused_before_the_agent_runs() {
    let h = Harness::new(Settings::default());
    let (_, r) = h.send(TurnRequest { model: " ".into(), ..request(vec![user("x")]) }).await;
    assert_eq!(r.unwrap_err().kind, ErrorKind::InvalidParams);
    let (_, r) = h.send(request(vec![assistant("no user message")])).await;
    assert_eq!(r.unwrap_err().kind, ErrorKind::InvalidParams);
    let (_, r) = h.send(TurnRequest { workspace: Some("/".into()), ..request(vec![user("x")]) }).await;
    assert_eq!(r.unwrap_err().kind, ErrorKind::InvalidParams, "outside the configured folders");
    h.backend.missing.store(true, std::sync::atomic::Ordering::SeqCst);
    let (_, r) = h.send(request(vec![user("x")])).await;
    assert_eq!(r.unwrap_err().kind, ErrorKind::CliNotFound);
    assert_eq!(h.backend.turn_count(), 0);
}

use crate::vocab::ErrorKind;

#[tokio::test(start_paused = true)]
async fn a_turn_that_failed_is_sent_again_in_the_same_chat() {
    let h = Harness::new(Settings::default());
    h.send(in_conversation("c", vec![user("one")])).await.1.unwrap();
    h.backend.fail_next.lock().unwrap().push(ErrorKind::Network);
    let (_, failed) = h.send(in_conversation("c", vec![user("one"), assistant("Echo: one"), user("two")])).await;
    assert_eq!(failed.unwrap_err().kind, ErrorKind::Network);
    // The client keeps the failed request (and maybe a partial answer) in its history.
    let history = vec![user("one"), assistant("Echo: one"), user("two"), assistant("(error)"), user("three")];
    let (_, r) = h.send(in_conversation("c", history)).await;
    assert!(r.unwrap().resumed, "the same chat, not a replay");
    let t = h.backend.turn(2);
    assert_eq!(t.chat, Chat::Resume("chat-1".into()));
    assert_eq!(t.prompt, "two\n\nthree", "what the chat never completed, then the new message");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_turn_counts_as_given_to_the_chat() {
    let h = Harness::new(Settings::default());
    h.send(in_conversation("c", vec![user("one")])).await.1.unwrap();
    let slow = h.send(in_conversation("c", vec![user("one"), assistant("Echo: one"), user("[[busy:100|text:late]]")]));
    assert!(tokio::time::timeout(std::time::Duration::from_secs(1), slow).await.is_err());
    let history = vec![user("one"), assistant("Echo: one"), user("[[busy:100|text:late]]"), user("never mind")];
    let (_, r) = h.send(in_conversation("c", history)).await;
    assert!(r.unwrap().resumed);
    let t = h.backend.turn(2);
    assert_eq!(t.chat, Chat::Resume("chat-1".into()));
    assert!(t.prompt.ends_with("never mind"), "{}", t.prompt);
}

#[tokio::test(start_paused = true)]
async fn two_turns_of_one_conversation_never_run_at_once_on_one_chat() {
    let h = Harness::new(Settings::default());
    let first = h.send(in_conversation("c", vec![user("[[busy:10|text:a]]")]));
    let retry = async {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        h.send(in_conversation("c", vec![user("[[busy:10|text:a]]")])).await
    };
    let ((_, a), (_, b)) = tokio::join!(first, retry);
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(h.backend.most_running.load(std::sync::atomic::Ordering::SeqCst), 1, "the retry waited");
    assert_eq!(a.session_id, b.session_id, "one conversation, one session");
    assert_eq!(h.backend.turn(1).chat, Chat::New, "the retry forks into a new chat (the first chat moved on)");
}

#[tokio::test(start_paused = true)]
async fn a_chat_that_is_lost_twice_is_given_up() {
    let h = Harness::new(Settings::default());
    h.send(in_conversation("c", vec![user("one")])).await.1.unwrap();
    h.backend.lost_chats.lock().unwrap().push("chat-1".into());
    // Each time: the resume finds the chat gone, and the replay fails too (say, the network).
    for _ in 0..2 {
        h.backend.fail_next.lock().unwrap().push(ErrorKind::Network);
        let history = vec![user("one"), assistant("Echo: one"), user("two")];
        h.send(in_conversation("c", history)).await.1.unwrap_err();
    }
    let history = vec![user("one"), assistant("Echo: one"), user("two"), user("three")];
    let (_, r) = h.send(in_conversation("c", history)).await;
    assert!(r.unwrap().replayed);
    let resumes_of_lost =
        h.backend.turns.lock().unwrap().iter().filter(|t| t.chat == Chat::Resume("chat-1".into())).count();
    assert_eq!(resumes_of_lost, 2, "not tried a third time");
}

#[tokio::test(start_paused = true)]
async fn a_fallback_tells_the_client_what_really_happened() {
    let h = Harness::new(Settings::default());
    h.send(in_conversation("c", vec![user("one")])).await.1.unwrap();
    h.backend.lost_chats.lock().unwrap().push("chat-1".into());
    let (events, r) = h.send(in_conversation("c", vec![user("one"), assistant("Echo: one"), user("two")])).await;
    let r = r.unwrap();
    assert!(!r.resumed && r.replayed);
    let last_session = events.iter().rev().find_map(|e| match e {
        Event::Session { resumed, replayed, .. } => Some((*resumed, *replayed)),
        _ => None,
    });
    assert_eq!(last_session, Some((false, true)));
    let first_text = events.iter().position(|e| matches!(e, Event::Text(_))).unwrap();
    let sessions_before_text = events[..first_text].iter().filter(|e| matches!(e, Event::Session { .. })).count();
    assert_eq!(sessions_before_text, 2, "both said before any answer text");
}

#[tokio::test(start_paused = true)]
async fn conversations_that_began_alike_never_share_a_chat() {
    let h = Harness::new(Settings::default());
    // Two clients without conversation ids, both opening with "hi" (same answer, too).
    h.send(request(vec![user("hi")])).await.1.unwrap();
    h.send(request(vec![user("hi")])).await.1.unwrap();
    let a = h.send(request(vec![user("hi"), assistant("Echo: hi"), user("I am A")])).await.1.unwrap();
    assert!(a.resumed);
    // B's history is A's old one: A's chat has moved on, so B gets its own chat.
    let b = h.send(request(vec![user("hi"), assistant("Echo: hi"), user("I am B")])).await.1.unwrap();
    assert_ne!(h.backend.turn(3).chat, h.backend.turn(2).chat);
    assert_ne!(a.session_id, b.session_id);
}

#[tokio::test(start_paused = true)]
async fn each_conversation_gets_a_private_folder_of_its_own_when_asked() {
    // `serve` without --workspace: two clients that both open with "hi" never share a folder.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("conversations");
    std::fs::create_dir_all(&root).unwrap();
    let mut config = Config::new(Settings::default(), vec![root.clone()], None).unwrap();
    config.conversation_folders = Some(dunce::canonicalize(&root).unwrap());
    let backend = crate::backend::scripted::Scripted::new();
    let engine = crate::engine::Engine::new(config, backend.clone());
    send_to(&engine, request(vec![user("hi")])).await.1.unwrap();
    send_to(&engine, request(vec![user("hi")])).await.1.unwrap();
    let (a, b) = (backend.turn(0).workspace, backend.turn(1).workspace);
    assert_ne!(a, b, "two conversations, two folders");
    assert!(a.starts_with(dunce::canonicalize(&root).unwrap()) && a.is_dir());
    let r = send_to(&engine, request(vec![user("hi"), assistant("Echo: hi"), user("again")])).await.1.unwrap();
    assert!(r.resumed);
    assert!([&a, &b].contains(&&backend.turn(2).workspace), "a follow-up runs in its conversation's folder");
    // Folders go with their sessions.
    let stray = root.join("c-stray");
    std::fs::create_dir_all(&stray).unwrap();
    assert_eq!(engine.sweep_conversation_folders(std::time::Duration::ZERO), 1);
    assert!(!stray.exists() && a.exists() && b.exists());
    engine.clear_sessions(ClearScope::Mine).await;
    assert_eq!(engine.sweep_conversation_folders(std::time::Duration::ZERO), 2);
    assert!(!a.exists());
}

use crate::engine::Config;

#[tokio::test(start_paused = true)]
async fn a_resume_failure_that_does_not_say_the_chat_is_gone_is_shown_and_the_chat_kept() {
    // ACP says when a session is gone; "the previous turn is still stopping" (cliFailed) is not that.
    let h = Harness::new(Settings::default());
    h.backend.says_lost.store(true, std::sync::atomic::Ordering::SeqCst);
    h.send(in_conversation("c", vec![user("one")])).await.1.unwrap();
    for _ in 0..3 {
        h.backend.fail_next.lock().unwrap().push(ErrorKind::CliFailed);
        let (events, r) = h.send(in_conversation("c", vec![user("one"), assistant("Echo: one"), user("two")])).await;
        let e = r.unwrap_err();
        assert_eq!((e.kind, e.message.as_str()), (ErrorKind::CliFailed, "scripted cliFailed"), "the real error");
        assert_eq!(text_of(&events), "", "no answer of a replayed chat instead");
    }
    assert_eq!(h.backend.turn_count(), 4, "no replays");
    // Not given up after failures that said nothing about the chat: the next turn resumes it.
    let (_, r) =
        h.send(in_conversation("c", vec![user("one"), assistant("Echo: one"), user("two"), user("three")])).await;
    assert!(r.unwrap().resumed);
    assert_eq!(h.backend.turn(4).chat, Chat::Resume("chat-1".into()));
}

#[tokio::test(start_paused = true)]
async fn a_session_the_agent_says_is_gone_is_replayed() {
    let h = Harness::new(Settings::default());
    h.backend.says_lost.store(true, std::sync::atomic::Ordering::SeqCst);
    h.send(in_conversation("c", vec![user("one")])).await.1.unwrap();
    h.backend.lost_chats.lock().unwrap().push("chat-1".into());
    let (_, r) = h.send(in_conversation("c", vec![user("one"), assistant("Echo: one"), user("two")])).await;
    assert!(r.unwrap().replayed);
    assert_eq!(h.backend.turn(2).chat, Chat::New);
}
