//! The session file is read and written off the runtime's workers, and what must be on disk
//! before an answer still is.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::*;
use crate::engine::sessions::ClearScope;
use crate::vocab::ErrorKind;

/// Puts a FIFO where the session file is: reading it blocks until [`unblock_after`] writes.
fn fifo_in_place_of(path: &Path) {
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// After `delay`: whoever waits on the FIFO reads an empty store, and the path becomes a plain
/// file again (so later reads do not block).
fn unblock_after(path: PathBuf, delay: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        // Read-write never blocks on Linux, and lets a reader blocked in open(2) through.
        let mut fifo = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let plain = path.with_extension("plain");
        std::fs::write(&plain, "{\"version\":2,\"sessions\":[]}").unwrap();
        std::fs::rename(&plain, &path).unwrap();
        use std::io::Write;
        let _ = fifo.write_all(b"{\"version\":2,\"sessions\":[]}");
    })
}

/// `#[tokio::test]` runs on one worker thread: if an operation waited for the file there, a
/// timer on the same runtime would fire only when the file let go.
#[tokio::test]
async fn the_session_file_is_read_off_the_async_workers() {
    for op in ["sessions/list", "sessions/clear", "a turn"] {
        let h = Harness::with_state(Settings::default(), true);
        h.send(in_conversation("c", vec![user("one")])).await.1.unwrap();
        let path = h.engine.config().state_dir.clone().unwrap().join("sessions.json");
        fifo_in_place_of(&path);
        let unblock = unblock_after(path, Duration::from_secs(1));
        let engine = h.engine.clone();
        let started = Instant::now();
        let work = tokio::spawn(async move {
            match op {
                "sessions/list" => drop(engine.sessions().await),
                "sessions/clear" => drop(engine.clear_sessions(ClearScope::Mine).await),
                _ => drop(
                    send_to(&engine, in_conversation("c", vec![user("one"), assistant("Echo: one"), user("two")]))
                        .await,
                ),
            }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let timer = started.elapsed();
        work.await.unwrap();
        unblock.join().unwrap();
        assert!(
            timer < Duration::from_millis(500),
            "{op}: the runtime's only worker waited {timer:?} for the session file"
        );
    }
}

/// A failed turn's note (the chat was given this request) is on disk when the error is
/// answered: a sidecar started right after continues the same chat.
#[tokio::test(start_paused = true)]
async fn a_failed_turns_note_is_on_disk_before_its_error_is_answered() {
    let h = Harness::with_state(Settings::default(), true);
    h.send(in_conversation("c", vec![user("one")])).await.1.unwrap();
    h.backend.fail_next.lock().unwrap().push(ErrorKind::Network);
    let (_, failed) = h.send(in_conversation("c", vec![user("one"), assistant("Echo: one"), user("two")])).await;
    assert_eq!(failed.unwrap_err().kind, ErrorKind::Network);
    let restarted = h.restart();
    let history = vec![user("one"), assistant("Echo: one"), user("two"), assistant("(error)"), user("three")];
    let (_, r) = send_to(&restarted, in_conversation("c", history)).await;
    assert!(r.unwrap().resumed, "the same chat, not a replay");
    assert_eq!(h.backend.turn(2).prompt, "two\n\nthree", "what the chat never completed, then the new message");
}
