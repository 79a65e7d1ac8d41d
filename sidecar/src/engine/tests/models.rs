//! The model list: cached, served from the file of an earlier run at once, checked in the
//! background, and a changed list announced.

use std::sync::atomic::Ordering;

use super::*;
use crate::backend::scripted::model;
use crate::engine::Settings;

#[tokio::test(start_paused = true)]
async fn the_list_is_fetched_once_and_refresh_asks_again() {
    let h = Harness::new(Settings::default());
    *h.backend.models.lock().unwrap() = vec![model("a")];
    assert_eq!(h.engine.models(false).await.unwrap(), vec![model("a")]);
    assert_eq!(h.engine.models(false).await.unwrap(), vec![model("a")]);
    assert_eq!(h.backend.model_calls.load(Ordering::SeqCst), 1);
    *h.backend.models.lock().unwrap() = vec![model("a"), model("b")];
    assert_eq!(h.engine.models(true).await.unwrap().len(), 2);
    assert_eq!(h.backend.model_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_restart_serves_the_saved_list_then_announces_a_changed_one() {
    let h = Harness::with_state(Settings::default(), true);
    *h.backend.models.lock().unwrap() = vec![model("old")];
    h.engine.models(false).await.unwrap();

    *h.backend.models.lock().unwrap() = vec![model("new")];
    let restarted = h.restart();
    let mut changes = restarted.watch_models();
    assert_eq!(restarted.models(false).await.unwrap(), vec![model("old")], "served from the file at once");
    let announced = tokio::time::timeout(std::time::Duration::from_secs(5), changes.recv()).await;
    assert_eq!(announced.unwrap().unwrap(), vec![model("new")]);
    assert_eq!(restarted.models(false).await.unwrap(), vec![model("new")]);
}

#[tokio::test(start_paused = true)]
async fn an_unchanged_list_is_not_announced() {
    let h = Harness::with_state(Settings::default(), true);
    *h.backend.models.lock().unwrap() = vec![model("same")];
    h.engine.models(false).await.unwrap();
    let restarted = h.restart();
    let mut changes = restarted.watch_models();
    restarted.models(false).await.unwrap();
    let calls = || h.backend.model_calls.load(Ordering::SeqCst);
    tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while calls() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the background check ran");
    tokio::task::yield_now().await;
    assert!(changes.try_recv().is_err());
}
