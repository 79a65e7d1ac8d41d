//! Silence and overruns end a turn with `timeout`, on the engine's clock, whatever the backend.

use std::time::Duration;

use super::*;
use crate::engine::Settings;
use crate::vocab::ErrorKind;

fn limits(idle: u64, overall: u64) -> Settings {
    Settings { idle_timeout_seconds: idle, request_timeout_seconds: overall, ..Settings::default() }
}

#[tokio::test(start_paused = true)]
async fn a_silent_agent_times_out_after_the_idle_limit() {
    let h = Harness::new(limits(60, 300));
    let started = tokio::time::Instant::now();
    let (events, r) = h.send(request(vec![user("[[text:partial|silent:61|text:never]]")])).await;
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert_eq!(e.message, "The Cursor CLI produced no output for 60 s");
    assert_eq!(text_of(&events), "partial", "what streamed before the silence stays");
    assert_eq!(started.elapsed().as_secs(), 60);
    assert_eq!(h.backend.dropped.load(std::sync::atomic::Ordering::SeqCst), 1, "the backend's turn was stopped");
}

/// The engine names the agent as its backend does: another agent's silence is not Cursor's.
#[tokio::test(start_paused = true)]
async fn a_silent_agent_is_named_in_its_backends_words() {
    let h = Harness::new(limits(60, 300));
    *crate::util::sync::lock(&h.backend.words) = Some(&super::doctor::OTHER);
    let (_, r) = h.send(request(vec![user("[[silent:61|text:never]]")])).await;
    assert_eq!(r.unwrap_err().message, "The Other CLI produced no output for 60 s");
}

#[tokio::test(start_paused = true)]
async fn silence_shorter_than_the_limit_is_fine() {
    let h = Harness::new(limits(60, 300));
    let (events, r) = h.send(request(vec![user("[[silent:59|text:a|silent:59|text:b]]")])).await;
    r.unwrap();
    assert_eq!(text_of(&events), "ab");
}

#[tokio::test(start_paused = true)]
async fn opening_a_session_is_not_silence_but_what_follows_it_is() {
    let h = Harness::new(limits(5, 300));
    let (events, r) = h.send(request(vec![user("[[opening:30|text:ready]]")])).await;
    r.unwrap();
    assert_eq!(text_of(&events), "ready");
    // The idle limit starts again when the opening ends.
    let started = tokio::time::Instant::now();
    let (_, r) = h.send(request(vec![user("[[opening:30|silent:6|text:never]]")])).await;
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert!(e.message.contains("no output for 5 s"), "{}", e.message);
    assert_eq!(started.elapsed().as_secs(), 35);
}

#[tokio::test(start_paused = true)]
async fn an_opening_that_never_ends_still_meets_the_overall_limit() {
    let h = Harness::new(limits(5, 100));
    let (_, r) = h.send(request(vec![user("[[opening:400|text:late]]")])).await;
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert!(e.message.contains("longer than 100 s"), "{}", e.message);
}

#[tokio::test(start_paused = true)]
async fn a_busy_agent_is_not_idle_but_still_meets_the_overall_limit() {
    let h = Harness::new(limits(5, 300));
    let started = tokio::time::Instant::now();
    let (_, r) = h.send(request(vec![user("[[busy:400|text:late]]")])).await;
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert!(e.message.contains("longer than 300 s"), "{}", e.message);
    assert_eq!(started.elapsed().as_secs(), 300);
}

#[tokio::test(start_paused = true)]
async fn the_overall_limit_counts_from_the_start_of_the_run_not_the_queue() {
    let h = Harness::new(Settings { max_concurrent: 1, ..limits(60, 100) });
    let first = h.send(request(vec![user("[[busy:90|text:one]]")]));
    let second = async {
        tokio::time::sleep(Duration::from_millis(1)).await;
        h.send(request(vec![user("[[busy:90|text:two]]")])).await
    };
    let ((_, a), (_, b)) = tokio::join!(first, second);
    a.unwrap();
    b.unwrap();
}
