//! The store and the matching table, under a hand-moved clock.

use std::path::PathBuf;
use std::sync::Arc;

use super::store::StoreFile;
use super::*;

const MIN: u64 = 60_000;

fn session(id: &str, conv: Option<&str>, mode: Mode, requests: &[&str], used: u64) -> Session {
    Session {
        id: id.into(),
        chat_id: format!("chat-{id}"),
        conversation_id: conv.map(Into::into),
        mode,
        model: "auto".into(),
        workspace: "/w".into(),
        requests: requests.iter().map(|r| request_hash(r)).collect(),
        answers: requests.iter().filter_map(|r| answer_hash(&format!("answer to {r}"))).collect(),
        attempted: Vec::new(),
        resume_failures: 0,
        turns: requests.len() as u32,
        created_ms: used,
        last_used_ms: used,
        tools: 0,
        owner: String::new(),
        door: Door::Stdio,
        calls: Vec::new(),
    }
}

fn store(clock: &Arc<ManualClock>, path: Option<PathBuf>) -> SessionStore {
    SessionStore::open(path, clock.clone(), 30, 3)
}

fn roomy(clock: &Arc<ManualClock>) -> SessionStore {
    SessionStore::open(None, clock.clone(), 30, 10)
}

fn lookup<'a>(conv: Option<&'a str>, sid: Option<&'a str>, mode: Mode, history: &'a [u64]) -> Lookup<'a> {
    Lookup { conversation_id: conv, session_id: sid, mode, workspace: "/w", under: false, history, answers: &[] }
}

fn answers(reqs: &[&str]) -> Vec<u64> {
    reqs.iter().filter_map(|r| answer_hash(&format!("answer to {r}"))).collect()
}

fn hashes(reqs: &[&str]) -> Vec<u64> {
    reqs.iter().map(|r| request_hash(r)).collect()
}

/// Data-driven matching cases: (stored sessions, lookup, expected session id + kind).
#[test]
fn matching_table() {
    let clock = Arc::new(ManualClock::new(10 * MIN));
    let h_a = hashes(&["a"]);
    let h_ab = hashes(&["a", "b"]);
    let h_x = hashes(&["x"]);
    let h_abf = hashes(&["a", "b", "failed"]);
    let (a_a, a_ab, a_other) = (answers(&["a"]), answers(&["a", "b"]), answers(&["other"]));
    let with = |q: Lookup<'static>, answers: &'static [u64]| Lookup { answers, ..q };
    let leak = |v: Vec<u64>| -> &'static [u64] { Box::leak(v.into_boxed_slice()) };
    let (h_a, h_ab, h_x, h_abf) = (leak(h_a), leak(h_ab), leak(h_x), leak(h_abf));
    let (a_a, a_ab, a_other) = (leak(a_a), leak(a_ab), leak(a_other));
    let table: Vec<(&str, Lookup<'_>, &str)> = vec![
        ("history of another conversation is never taken over", lookup(Some("c2"), None, Mode::Agent, h_a), "new"),
        ("same requests, the answers this chat gave", with(lookup(None, None, Mode::Ask, h_ab), a_ab), "resume s2"),
        ("same requests, other answers: another chat", with(lookup(None, None, Mode::Ask, h_ab), a_other), "new"),
        (
            "answers of a failed turn after the chat's own",
            with(lookup(None, None, Mode::Ask, h_ab), leak([a_ab, a_a].concat())),
            "resume s2",
        ),
        (
            "a request the chat never completed is sent again",
            lookup(Some("c3"), None, Mode::Ask, h_abf),
            "resume s3 missing 1",
        ),
        (
            "a request the chat never saw diverges",
            lookup(Some("c3"), None, Mode::Ask, leak(hashes(&["a", "b", "new"]))),
            "diverged s3",
        ),
        ("a chat that failed twice is given up", lookup(Some("c4"), None, Mode::Ask, h_a), "diverged s4"),
        ("conversation id, same history", lookup(Some("c1"), None, Mode::Agent, h_a), "resume s1"),
        ("conversation id, other mode still resumes", lookup(Some("c1"), None, Mode::Ask, h_a), "resume s1"),
        ("conversation id, edited history", lookup(Some("c1"), None, Mode::Agent, h_x), "diverged s1"),
        ("conversation id, retried last turn", lookup(Some("c1"), None, Mode::Agent, &[]), "diverged s1"),
        ("unknown conversation id, new chat", lookup(Some("zz"), None, Mode::Agent, &[]), "new"),
        (
            "unknown conversation id falls back to a session of none",
            with(lookup(Some("zz"), None, Mode::Ask, h_ab), a_ab),
            "resume s2",
        ),
        ("session id marker", lookup(None, Some("s2"), Mode::Ask, h_ab), "resume s2"),
        ("marker only: no earlier request at all", lookup(None, Some("s2"), Mode::Ask, &[]), "resume s2"),
        ("marker plus a trimmed transcript", lookup(None, Some("s2"), Mode::Ask, leak(hashes(&["b"]))), "resume s2"),
        (
            "marker plus a trimmed transcript ending in a request never completed",
            lookup(None, Some("s3"), Mode::Ask, leak(hashes(&["b", "failed"]))),
            "resume s3 missing 1",
        ),
        (
            "marker only, a request never completed",
            lookup(None, Some("s3"), Mode::Ask, leak(hashes(&["failed"]))),
            "resume s3 missing 1",
        ),
        ("marker, trimmed and edited", lookup(None, Some("s2"), Mode::Ask, leak(hashes(&["x"]))), "diverged s2"),
        ("marker, a retry of the last request", lookup(None, Some("s2"), Mode::Ask, h_a), "diverged s2"),
        ("marker and conversation id, no history", lookup(Some("c1"), Some("s1"), Mode::Agent, &[]), "resume s1"),
        (
            "marker of a session in another folder",
            Lookup { workspace: "/elsewhere", ..lookup(None, Some("s2"), Mode::Ask, &[]) },
            "new",
        ),
        (
            "marker of a session in another folder, history alone decides",
            Lookup { workspace: "/elsewhere", ..with(lookup(None, Some("s2"), Mode::Ask, h_ab), a_ab) },
            "new",
        ),
        ("history match, same mode", with(lookup(None, None, Mode::Ask, h_ab), a_ab), "resume s2"),
        ("history match, other mode", with(lookup(None, None, Mode::Plan, h_ab), a_ab), "new"),
        ("first message is always new", lookup(None, None, Mode::Agent, &[]), "new"),
        ("no match", lookup(None, None, Mode::Agent, h_x), "new"),
    ];
    for (name, q, expected) in table {
        let mut s = roomy(&clock);
        let mut s3 = session("s3", Some("c3"), Mode::Ask, &["a", "b"], 7 * MIN);
        s3.attempted = hashes(&["failed"]);
        let mut s4 = session("s4", Some("c4"), Mode::Ask, &["a"], 7 * MIN);
        s4.resume_failures = MAX_RESUME_FAILURES;
        s.sessions = vec![
            session("s1", Some("c1"), Mode::Agent, &["a"], 9 * MIN),
            session("s2", None, Mode::Ask, &["a", "b"], 8 * MIN),
            s3,
            s4,
        ];
        let got = match s.find(&q) {
            Match::Resume { session, missing: 0 } => format!("resume {}", session.id),
            Match::Resume { session, missing } => format!("resume {} missing {missing}", session.id),
            Match::Diverged(s) => format!("diverged {}", s.id),
            Match::New => "new".into(),
        };
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn a_turn_on_a_trimmed_history_keeps_what_the_chat_saw_before() {
    let mut s = session("s", None, Mode::Ask, &["a", "b"], 0);
    let (a_a, a_ab) = (answers(&["a"]), answers(&["a", "b"]));
    // (case, requests sent, answers sent, requests the chat has seen after, answers after)
    type Case = (&'static str, Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>);
    let cases: Vec<Case> = vec![
        ("whole history", hashes(&["a", "b"]), a_ab.clone(), hashes(&["a", "b"]), a_ab.clone()),
        ("marker only", vec![], vec![], hashes(&["a", "b"]), a_ab.clone()),
        ("trimmed", hashes(&["b"]), answers(&["b"]), hashes(&["a", "b"]), a_ab.clone()),
        (
            "history of a new chat",
            hashes(&["x"]),
            answers(&["x"]),
            hashes(&["a", "b", "x"]),
            [a_ab, answers(&["x"])].concat(),
        ),
    ];
    for (name, history, given, requests, answered) in cases {
        assert_eq!(s.continued_with(history, given), (requests, answered), "{name}");
    }
    s.requests.clear();
    s.answers.clear();
    assert_eq!(s.continued_with(hashes(&["a"]), a_a.clone()), (hashes(&["a"]), a_a), "a replayed chat");
}

#[test]
fn most_recent_history_match_wins() {
    let clock = Arc::new(ManualClock::new(10 * MIN));
    let mut s = store(&clock, None);
    s.sessions =
        vec![session("old", None, Mode::Agent, &["a"], MIN), session("new", None, Mode::Agent, &["a"], 2 * MIN)];
    let (history, answered) = (hashes(&["a"]), answers(&["a"]));
    let q = Lookup { answers: &answered, ..lookup(None, None, Mode::Agent, &history) };
    assert!(matches!(s.find(&q), Match::Resume { session: x, .. } if x.id == "new"));
}

#[test]
fn ttl_expires_idle_sessions() {
    let clock = Arc::new(ManualClock::new(0));
    let mut s = store(&clock, None);
    s.record(session("s1", Some("c1"), Mode::Agent, &["a"], 0));
    clock.advance_ms(29 * MIN);
    assert_eq!(s.list().len(), 1);
    clock.advance_ms(2 * MIN);
    assert_eq!(s.list().len(), 0);
    assert_eq!(s.find(&lookup(Some("c1"), None, Mode::Agent, &hashes(&["a"]))), Match::New);
}

#[test]
fn lru_cap_drops_least_recently_used() {
    let clock = Arc::new(ManualClock::new(0));
    let mut s = store(&clock, None);
    for id in ["s1", "s2", "s3"] {
        s.record(session(id, None, Mode::Agent, &[id], 0));
        clock.advance_ms(1000);
    }
    // Touch s1 so s2 becomes the least recently used.
    let s1 = s.get("s1").unwrap().clone();
    s.record(s1);
    clock.advance_ms(1000);
    s.record(session("s4", None, Mode::Agent, &["s4"], 0));
    let ids: Vec<_> = s.list().into_iter().map(|x| x.session_id).collect();
    assert_eq!(ids, ["s4", "s1", "s3"]);
}

#[test]
fn persisted_sessions_survive_a_restart_and_hold_no_prompt_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/sessions.json");
    let clock = Arc::new(ManualClock::new(MIN));
    let mut s = store(&clock, Some(path.clone()));
    s.record(session("s1", Some("c1"), Mode::Agent, &["a secret prompt"], 0));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("secret"), "{text}");

    let mut reopened = store(&clock, Some(path.clone()));
    assert!(matches!(
        reopened.find(&lookup(Some("c1"), None, Mode::Agent, &hashes(&["a secret prompt"]))),
        Match::Resume { session: x, .. } if x.id == "s1"
    ));
    assert_eq!(reopened.clear(ClearScope::All), 1);
    assert_eq!(store(&clock, Some(path)).len(), 0);
}

#[test]
fn a_write_done_outside_the_store_reaches_disk_and_keeps_what_changed_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/sessions.json");
    let clock = Arc::new(ManualClock::new(MIN));
    let mut s = SessionStore::open(Some(path.clone()), clock.clone(), 30, 10);
    let mut other = SessionStore::open(Some(path.clone()), clock.clone(), 30, 10);
    let write = s.record_in_memory(session("s1", Some("c1"), Mode::Agent, &["a"], 0)).expect("a file to write");
    assert!(!path.exists(), "nothing is written before the write runs");
    // Meanwhile: this store records another turn (written at once), another process one more.
    clock.advance_ms(1);
    s.record(session("s2", None, Mode::Agent, &["b"], 0));
    other.record(session("o1", None, Mode::Agent, &["c"], 0));
    // The deferred write, on a thread of its own, lands on disk with everything merged.
    let written = std::thread::spawn(move || write.run()).join().unwrap();
    let on_disk: StoreFile = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut ids: Vec<_> = on_disk.sessions.iter().map(|x| x.id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["o1", "s1", "s2"]);
    s.absorb(written);
    let mut ids: Vec<_> = s.list().into_iter().map(|x| (x.session_id, x.last_used_ms)).collect();
    ids.sort();
    let expected = [("o1".to_string(), MIN + 1), ("s1".to_string(), MIN), ("s2".to_string(), MIN + 1)];
    assert_eq!(ids, expected, "absorbing the write loses nothing newer");
    // A session cleared after the write was taken stays cleared when it is absorbed.
    let write = s.record_in_memory(session("s3", None, Mode::Agent, &["d"], 0)).unwrap();
    clock.advance_ms(1);
    s.clear(ClearScope::One("s3"));
    s.absorb(write.run());
    assert!(s.get("s3").is_none(), "a cleared session came back");
    assert!(
        SessionStore::open(None, clock.clone(), 30, 10)
            .record_in_memory(session("m", None, Mode::Agent, &[], 0))
            .is_none(),
        "a store in memory writes nothing"
    );
}

#[test]
fn corrupt_file_starts_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.json");
    std::fs::write(&path, "{not json").unwrap();
    let clock = Arc::new(ManualClock::new(0));
    assert_eq!(store(&clock, Some(path)).len(), 0);
}

#[test]
fn clear_one() {
    let clock = Arc::new(ManualClock::new(0));
    let mut s = store(&clock, None);
    s.record(session("s1", None, Mode::Agent, &["a"], 0));
    s.record(session("s2", None, Mode::Agent, &["b"], 0));
    assert_eq!(s.clear(ClearScope::One("s1")), 1);
    assert_eq!(s.clear(ClearScope::One("nope")), 0);
    assert_eq!(s.len(), 1);
}

/// Two sidecars (windows) sharing one session file in a new state folder.
fn two_windows() -> (tempfile::TempDir, PathBuf, Arc<ManualClock>, SessionStore, SessionStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/sessions.json");
    let clock = Arc::new(ManualClock::new(MIN));
    let window_a = SessionStore::open(Some(path.clone()), clock.clone(), 30, 10);
    let window_b = SessionStore::open(Some(path.clone()), clock.clone(), 30, 10);
    (dir, path, clock, window_a, window_b)
}

#[test]
fn processes_sharing_the_file_merge_and_a_clear_stays_cleared() {
    let (_dir, path, clock, mut window_a, mut window_b) = two_windows();
    window_a.record(session("a1", None, Mode::Agent, &["a"], 0));
    clock.advance_ms(1);
    window_b.record(session("b1", None, Mode::Agent, &["b"], 0));
    let ids = |s: &mut SessionStore| s.list().into_iter().map(|x| x.session_id).collect::<Vec<_>>();
    assert_eq!(ids(&mut window_a), ["b1", "a1"], "each window sees the other's sessions");
    clock.advance_ms(1);
    assert_eq!(window_a.clear(ClearScope::All), 2);
    clock.advance_ms(1);
    // B still holds a1 and b1 in memory; its next write must not bring them back.
    window_b.record(session("b2", None, Mode::Agent, &["c"], 0));
    assert_eq!(ids(&mut window_b), ["b2"]);
    assert_eq!(ids(&mut SessionStore::open(Some(path.clone()), clock.clone(), 30, 10)), ["b2"]);
    window_b.clear(ClearScope::One("b2"));
    window_a.record(session("a2", None, Mode::Agent, &["d"], 0));
    assert_eq!(ids(&mut window_a), ["a2"], "a single cleared session stays cleared too");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    }
}

#[test]
fn clear_sessions_clears_this_processs_own_unless_asked_for_all() {
    let (_dir, path, clock, mut window_a, mut window_b) = two_windows();
    window_a.record(session("a1", None, Mode::Agent, &["a"], 0));
    clock.advance_ms(1);
    window_b.record(session("b1", None, Mode::Agent, &["b"], 0));
    clock.advance_ms(1);
    // B used A's session last: it is B's now (the window that used it).
    let a2 = session("a2", None, Mode::Agent, &["c"], 0);
    window_a.record(a2.clone());
    window_b.list();
    clock.advance_ms(1);
    window_b.record(a2);
    clock.advance_ms(1);
    window_a.list();
    let ids = |s: &mut SessionStore| s.list().into_iter().map(|x| x.session_id).collect::<Vec<_>>();
    assert_eq!(window_a.clear(ClearScope::Mine), 1, "only a1 is this window's");
    assert_eq!(ids(&mut window_a), ["a2", "b1"]);
    clock.advance_ms(1);
    // B still holds a1 in memory; its next write must not bring it back.
    window_b.record(session("b2", None, Mode::Agent, &["d"], 0));
    assert_eq!(ids(&mut SessionStore::open(Some(path.clone()), clock.clone(), 30, 10)), ["b2", "a2", "b1"]);
    clock.advance_ms(1);
    assert_eq!(window_a.clear(ClearScope::All), 3, "all: every window's");
    assert_eq!(ids(&mut window_b), Vec::<String>::new());
}

#[test]
fn the_session_cap_counts_each_front_doors_sessions_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/sessions.json");
    let clock = Arc::new(ManualClock::new(MIN));
    let mut editor = SessionStore::open_for(Door::Stdio, Some(path.clone()), clock.clone(), 30, 2);
    let mut serve = SessionStore::open_for(Door::Http, Some(path.clone()), clock.clone(), 30, 2);
    for id in ["e1", "e2"] {
        editor.record(session(id, None, Mode::Agent, &[id], 0));
        clock.advance_ms(1);
    }
    // A busy HTTP client: many conversations, newer than the editor's.
    for id in ["h1", "h2", "h3", "h4"] {
        serve.record(session(id, None, Mode::Agent, &[id], 0));
        clock.advance_ms(1);
    }
    let ids = |s: &mut SessionStore| {
        let mut v = s.list().into_iter().map(|x| x.session_id).collect::<Vec<_>>();
        v.sort();
        v
    };
    assert_eq!(ids(&mut serve), ["e1", "e2", "h3", "h4"], "serve's cap drops serve's oldest only");
    assert_eq!(ids(&mut editor), ["e1", "e2", "h3", "h4"], "the editor's conversations are all there");
    editor.record(session("e3", None, Mode::Agent, &["e3"], 0));
    assert_eq!(ids(&mut SessionStore::open(Some(path), clock.clone(), 30, 2)), ["e2", "e3", "h3", "h4"]);
}
