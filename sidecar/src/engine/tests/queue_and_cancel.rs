//! The turn slots queue turns in order; a dropped turn (cancel) stops its backend run and leaves no
//! trace in the sessions.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::*;
use crate::engine::Settings;

#[tokio::test(start_paused = true)]
async fn at_most_max_concurrent_turns_run_and_the_rest_queue_in_order() {
    let h = Harness::new(Settings { max_concurrent: 2, ..Settings::default() });
    let turns = (0..6).map(|i| {
        let h = &h;
        async move {
            // Staggered arrivals, so the order of arrival is well defined.
            tokio::time::sleep(Duration::from_millis(i)).await;
            h.send(request(vec![user(&format!("[[busy:10|text:turn {i}]]"))])).await.1.unwrap()
        }
    });
    let started = tokio::time::Instant::now();
    futures_util::future::join_all(turns).await;
    assert_eq!(h.backend.most_running.load(Ordering::SeqCst), 2);
    let order: Vec<String> = h.backend.turns.lock().unwrap().iter().map(|t| t.prompt.clone()).collect();
    let expected: Vec<String> = (0..6).map(|i| format!("[[busy:10|text:turn {i}]]")).collect();
    assert_eq!(order, expected, "first come, first served");
    assert_eq!(started.elapsed().as_secs(), 30, "three rounds of two");
    assert_eq!(h.engine.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_turn_stops_the_backend_and_records_nothing() {
    let h = Harness::new(Settings::default());
    let turn = h.send(in_conversation("c", vec![user("[[text:start|busy:100|text:end]]")]));
    let cancelled = tokio::time::timeout(Duration::from_secs(5), turn).await;
    assert!(cancelled.is_err(), "still running after 5 s");
    assert_eq!(h.backend.dropped.load(Ordering::SeqCst), 1);
    assert_eq!(h.backend.running.load(Ordering::SeqCst), 0);
    assert_eq!(h.engine.in_flight(), 0);
    assert!(h.engine.sessions().await.is_empty(), "a cancelled turn is not a turn the chat completed");
}

#[tokio::test(start_paused = true)]
async fn cancel_racing_completion_leaves_a_consistent_engine() {
    // Cancel at every moment from before the run to after its end: the engine either finished the
    // turn (and recorded it) or did not start or stopped it (and recorded nothing).
    for at_ms in [0u64, 1, 500, 999, 1000, 1001, 2000] {
        let h = Harness::new(Settings::default());
        let turn = h.send(in_conversation("c", vec![user("[[busy:1|text:done]]")]));
        let finished = tokio::time::timeout(Duration::from_millis(at_ms), turn).await.is_ok();
        let recorded = h.engine.sessions().await.len();
        assert_eq!(recorded, usize::from(finished), "cancel at {at_ms} ms");
        assert_eq!(h.engine.in_flight(), 0, "cancel at {at_ms} ms");
        assert_eq!(h.backend.running.load(Ordering::SeqCst), 0, "cancel at {at_ms} ms");
    }
}

#[tokio::test(start_paused = true)]
async fn a_queued_turn_that_is_cancelled_never_reaches_the_backend() {
    let h = Harness::new(Settings { max_concurrent: 1, ..Settings::default() });
    let busy = h.send(request(vec![user("[[busy:10|text:a]]")]));
    let queued = async {
        tokio::time::sleep(Duration::from_millis(1)).await;
        tokio::time::timeout(Duration::from_secs(2), h.send(request(vec![user("queued")]))).await
    };
    let ((_, a), b) = tokio::join!(busy, queued);
    a.unwrap();
    assert!(b.is_err());
    assert_eq!(h.backend.turn_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn waiting_for_a_slot_is_bounded_and_says_why() {
    let h = Harness::new(Settings { max_concurrent: 1, request_timeout_seconds: 10, ..Settings::default() });
    let turn = |i: u64| {
        let h = &h;
        async move {
            tokio::time::sleep(Duration::from_millis(i)).await;
            h.send(request(vec![user(&format!("[[busy:8|text:turn {i}]]"))])).await.1
        }
    };
    let started = tokio::time::Instant::now();
    let (a, b, c) = tokio::join!(turn(0), turn(1), turn(2));
    assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
    let e = c.unwrap_err();
    assert_eq!(e.kind, crate::vocab::ErrorKind::Timeout);
    assert!(e.message.starts_with("No free slot for 10 s"), "{}", e.message);
    assert!(e.hint.unwrap().contains("maxConcurrent"));
    assert_eq!(h.backend.turn_count(), 2, "the third never ran");
    assert_eq!(started.elapsed().as_secs(), 16);
}
