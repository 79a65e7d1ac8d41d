//! Chat turns through the real binary against the CLI double: what a client sees.

use serde_json::{json, Value};

use crate::support::*;

fn ready(dir: &TestDir) -> Sidecar {
    let mut s = Sidecar::start(dir);
    s.initialize(dir, json!({}));
    s
}

fn send(turn: &str, model: &str, mode: &str, messages: Value) -> Value {
    json!({"turnId": turn, "model": model, "mode": mode, "messages": messages})
}

/// How the backends differ in this file's tests.
struct Expected {
    /// Token counts: `(case, CURSOR_DOUBLE_ACP_PROMPT_USAGE, reported)`. Print mode's result event
    /// always has them; on ACP only an unstable field of the prompt's answer can.
    usage_cases: &'static [(&'static str, &'static str, bool)],
    /// The double's scenario for the usage test: on ACP the turn also reports its context use
    /// (`usage_update`: used/size), which is not a count of this turn's tokens.
    usage_scenario: fn() -> Value,
    /// What the CLI was started with for three turns (ask + model, plan, agent).
    documented_launch: fn(&TestDir, Sidecar),
    /// `force: true`: `--force` on print mode's agent turns; on ACP the permission answers.
    force: fn(&TestDir, Sidecar),
    /// The double counts the bytes it read on stdin (print mode; ACP's prompt is a JSON field).
    counts_stdin_bytes: bool,
    /// `maxConcurrent: 2` over five turns.
    pool_limit: fn(&TestDir, Sidecar, Vec<u64>),
    /// The agent counts the tokens it spent reasoning (ACP's `thoughtTokens`; print mode's result
    /// event has no such count).
    counts_reasoning: bool,
}

const ON_PRINT: Expected = Expected {
    usage_cases: &[("print mode's result event", "none", true)],
    usage_scenario: || json!({"answer": "twelve chars"}),
    documented_launch: documented_launch_on_print,
    force: force_on_print,
    counts_stdin_bytes: true,
    pool_limit: pool_on_print,
    counts_reasoning: false,
};

const ON_ACP: Expected = Expected {
    usage_cases: &[("no counts in the answer", "none", false), ("counts in the answer", "tokens", true)],
    usage_scenario: || json!({"answer": "twelve chars", "usageUpdate": true}),
    documented_launch: documented_launch_on_acp,
    force: force_on_acp,
    counts_stdin_bytes: false,
    pool_limit: pool_on_acp,
    counts_reasoning: true,
};

fn expected() -> &'static Expected {
    per_backend(&ON_PRINT, &ON_ACP)
}

#[test]
fn streamed_text_equals_the_answer_with_unicode_intact() {
    let dir = TestDir::new();
    let mut s = ready(&dir);
    let answer =
        "こんにちは、世界！🌍 Grüße — naïve café (é) 👩‍💻, שלום / مرحبا, tab:\t| \"quote\" C:\\temp 𝔘𝔫𝔦 🇯🇵\nline two";
    let prompt = directed("greet me", json!({"answer": answer, "chunkChars": 3}));
    let (deltas, r) = s.chat(send("t1", "auto", "agent", json!([user(&prompt)])));
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(text_of(&deltas), answer);
    // Many small deltas, not one blob, and seq strictly increasing from 1.
    assert!(deltas.iter().filter(|d| d["kind"] == "text").count() > 10);
    let seqs: Vec<u64> = deltas.iter().map(|d| d["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(deltas[0]["kind"], "session");
    assert_eq!(r["result"]["turnId"], "t1");
    assert_eq!(r["result"]["stopReason"], "end");
}

/// Token counts reach the client when the CLI reports them, and are never made up: print mode's
/// result event has them; on ACP only an unstable field of the prompt's answer can (whether Cursor
/// sends it is unknown, docs/cursor-acp.md §13 #6: the double's knob plays both).
#[test]
fn token_counts_arrive_when_the_cli_reports_them_and_only_then() {
    for &(case, knob, reported) in expected().usage_cases {
        let dir = TestDir::new();
        let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_ACP_PROMPT_USAGE", knob).start();
        s.initialize(&dir, json!({}));
        // A context-use report must not be shown as a count of this turn's tokens.
        let prompt = directed("count me", (expected().usage_scenario)());
        let (deltas, r) = s.chat(send("t1", "auto", "agent", json!([user(&prompt)])));
        let usage = &r["result"]["usage"];
        let usage_deltas: Vec<&Value> = deltas.iter().filter(|d| d["kind"] == "usage").collect();
        if reported {
            assert!(usage["inputTokens"].as_u64().is_some_and(|n| n > 1000), "{case}: {r}");
            assert_eq!(usage["outputTokens"], 3, "{case}: {r}");
            assert_eq!(usage_deltas.len(), 1, "{case}: {deltas:?}");
            assert_eq!(deltas.last().unwrap()["kind"], "usage", "{case}");
        } else {
            assert!(usage.is_null(), "{case}: no counts were reported, none may be shown: {r}");
            assert!(usage_deltas.is_empty(), "{case}: {deltas:?}");
        }
    }
}

/// Reasoning tokens reach the client where the agent counts them (ACP's `thoughtTokens`), for the
/// `usage` part's `completion_tokens_details.reasoning_tokens`; print mode's result has no such count.
#[test]
fn reasoning_tokens_arrive_where_the_agent_counts_them() {
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_ACP_PROMPT_USAGE", "tokens").start();
    s.initialize(&dir, json!({}));
    let thinking = "Sixteen chars!!!".repeat(4);
    let prompt = directed("think", json!({"thinking": thinking, "answer": "done"}));
    let (_, r) = s.chat(send("t1", "sonnet-5-thinking", "ask", json!([user(&prompt)])));
    let usage = &r["result"]["usage"];
    if expected().counts_reasoning {
        assert_eq!(usage["reasoningTokens"], 16, "64 characters of reasoning: {r}");
    } else {
        assert!(usage["inputTokens"].is_u64() && usage.get("reasoningTokens").is_none(), "{r}");
    }
    let plain = directed("no thinking", json!({"answer": "done"}));
    let (_, r) = s.chat(send("t2", "auto", "ask", json!([user(&plain)])));
    assert!(r["result"]["usage"].get("reasoningTokens").is_none(), "no reasoning, no count: {r}");
}

#[test]
fn thinking_arrives_before_the_answer_and_is_closed() {
    let dir = TestDir::new();
    let mut s = ready(&dir);
    let prompt =
        directed("Is 91 prime?", json!({"thinking": "91 = 7 × 13, so it is composite.", "answer": "No: 91 = 7 × 13."}));
    let (deltas, r) = s.chat(send("t1", "sonnet-5-thinking", "ask", json!([user(&prompt)])));
    assert!(r.get("result").is_some(), "{r}");
    let thinking: String =
        deltas.iter().filter(|d| d["kind"] == "thinking").map(|d| d["text"].as_str().unwrap()).collect();
    assert_eq!(thinking, "91 = 7 × 13, so it is composite.");
    let kinds = kinds_of(&deltas);
    let done = kinds.iter().position(|k| k == "thinkingDone").expect("thinkingDone");
    let first_text = kinds.iter().position(|k| k == "text").unwrap();
    assert!(done < first_text, "{kinds:?}");
    assert_eq!(text_of(&deltas), "No: 91 = 7 × 13.");
}

#[test]
fn tool_calls_become_readable_deltas_and_text_segments_are_separated() {
    let dir = TestDir::new();
    let mut s = ready(&dir);
    let prompt = directed(
        "bump and test",
        json!({
            "segments": ["I'll read app.ts first.", "Running the tests.", "All tests pass."],
            "tools": [
                {"kind": "read", "args": {"path": "/w/app.ts"}, "outcome": "success"},
                {"kind": "shell", "args": {"command": "npm test"}, "outcome": "failure"}
            ]
        }),
    );
    let (deltas, r) = s.chat(send("t1", "auto", "agent", json!([user(&prompt)])));
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(text_of(&deltas), "I'll read app.ts first.\n\nRunning the tests.\n\nAll tests pass.");
    let started: Vec<(String, String)> = deltas
        .iter()
        .filter(|d| d["kind"] == "toolStarted")
        .map(|d| (d["tool"].as_str().unwrap().into(), d["summary"].as_str().unwrap().into()))
        .collect();
    assert_eq!(started, [("read".into(), "/w/app.ts".into()), ("shell".into(), "npm test".into())]);
    let completed: Vec<bool> =
        deltas.iter().filter(|d| d["kind"] == "toolCompleted").map(|d| d["ok"].as_bool().unwrap()).collect();
    assert_eq!(completed, [true, false]);
}

#[test]
fn cli_is_called_with_the_documented_flags_and_the_prompt_on_stdin() {
    let dir = TestDir::new();
    let mut s = ready(&dir);
    let (_, r) = s.chat(send("t1", "gpt-5.6-sol", "ask", json!([user("hello there")])));
    assert!(r.get("result").is_some(), "{r}");
    let (_, r) = s.chat(send("t2", "auto", "plan", json!([user("plan it")])));
    assert!(r.get("result").is_some(), "{r}");
    let (_, r) = s.chat(send("t3", "auto", "agent", json!([user("do it")])));
    assert!(r.get("result").is_some(), "{r}");
    (expected().documented_launch)(&dir, s);
}

/// Print mode: a process per turn with the documented flags, the prompt on stdin only.
fn documented_launch_on_print(dir: &TestDir, _s: Sidecar) {
    let turns = dir.turns();
    assert_eq!(turns.len(), 3);
    let argv = |i: usize| -> Vec<String> { serde_json::from_value(turns[i]["argv"].clone()).unwrap() };
    let has = |a: &[String], pair: [&str; 2]| a.windows(2).any(|w| w[0] == pair[0] && w[1] == pair[1]);
    for i in 0..3 {
        let a = argv(i);
        assert!(a.contains(&"-p".to_string()) && has(&a, ["--output-format", "stream-json"]), "{a:?}");
        assert!(a.contains(&"--stream-partial-output".into()) && a.contains(&"--trust".into()), "{a:?}");
        assert!(has(&a, ["--workspace", dir.workspace().to_str().unwrap()]), "{a:?}");
        assert!(!a.contains(&"--force".into()), "force is off by default: {a:?}");
        assert!(!a.iter().any(|x| x.contains("hello") || x.contains("plan it")), "prompt leaked into argv: {a:?}");
    }
    assert!(has(&argv(0), ["--mode", "ask"]) && has(&argv(0), ["--model", "gpt-5.6-sol"]));
    assert!(has(&argv(1), ["--mode", "plan"]));
    assert!(!argv(2).contains(&"--mode".into()), "agent is the default; --mode agent is rejected");
    assert_eq!(turns[0]["stdin"], "hello there");
    assert_eq!(turns[0]["env"]["NO_COLOR"], "1");
    assert_eq!(turns[0]["env"]["FORCE_COLOR"], "0");
}

/// ACP: one launch line for the process (`--trust acp`, never `--force`, no prompt), the
/// workspace as its cwd, the prompt in `session/prompt`; mode and model are the session's
/// (`session/set_mode`, `session/set_config_option`), read from the processes' exit records.
fn documented_launch_on_acp(dir: &TestDir, s: Sidecar) {
    let turns = dir.turn_records();
    assert_eq!(turns.len(), 3, "{turns:?}");
    for t in &turns {
        let a: Vec<String> = serde_json::from_value(t["argv"].clone()).unwrap();
        assert_eq!(a.last().map(String::as_str), Some("acp"), "{a:?}");
        assert!(a.contains(&"--trust".into()) && !a.contains(&"--force".into()), "{a:?}");
        assert!(!a.iter().any(|x| x.contains("hello") || x.contains("plan it")), "prompt leaked into argv: {a:?}");
        assert_eq!(t["cwd"].as_str(), dir.workspace().to_str(), "{t}");
        assert_eq!(t["env"]["NO_COLOR"], "1");
        assert_eq!(t["env"]["FORCE_COLOR"], "0");
    }
    let prompts: Vec<&str> = turns.iter().map(|t| t["prompt"].as_str().unwrap()).collect();
    assert_eq!(prompts, ["hello there", "plan it", "do it"]);
    assert!(s.finish().success());
    let of = |method: &str, t: &Value| -> Vec<Value> {
        dir.acp_requests(method).into_iter().filter(|r| r["sessionId"] == t["sessionId"]).collect()
    };
    let last_mode = |t: &Value| of("session/set_mode", t).last().map(|r| r["modeId"].clone());
    assert_eq!(last_mode(&turns[0]), Some(json!("ask")));
    assert_eq!(last_mode(&turns[1]), Some(json!("plan")));
    let third = last_mode(&turns[2]);
    assert!(third.is_none() || third == Some(json!("agent")), "agent mode: {third:?}");
    let models: Vec<Value> = of("session/set_config_option", &turns[0])
        .into_iter()
        .filter(|r| r["configId"] == "model")
        .map(|r| r["value"].clone())
        .collect();
    assert!(models.iter().any(|v| v.as_str().unwrap_or("").starts_with("gpt-5.6-sol[")), "{models:?}");
}

#[test]
fn force_is_passed_only_when_asked_and_only_in_agent_mode() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({"force": true}));
    (expected().force)(&dir, s);
}

fn force_on_print(dir: &TestDir, mut s: Sidecar) {
    s.chat(send("t1", "auto", "agent", json!([user("go")])));
    s.chat(send("t2", "auto", "ask", json!([user("ask")])));
    let turns = dir.turns();
    assert!(turns[0]["argv"].as_array().unwrap().contains(&json!("--force")));
    assert!(!turns[1]["argv"].as_array().unwrap().contains(&json!("--force")));
}

/// ACP never gets `--force`: "force" is the answer to the agent's permission questions, allow in
/// agent mode and reject in ask mode (cli-double README §8.4), which the user sees as the shell
/// tool succeeding or not.
fn force_on_acp(dir: &TestDir, mut s: Sidecar) {
    let tool = json!({"permissionQuery": true, "tools": [{"kind": "shell", "args": {"command": "make"}, "outcome": "success"}]});
    let ok_of = |deltas: &[Value]| -> Vec<bool> {
        deltas.iter().filter(|d| d["kind"] == "toolCompleted").map(|d| d["ok"].as_bool().unwrap()).collect()
    };
    let (d1, r1) = s.chat(send("t1", "auto", "agent", json!([user(&directed("go", tool.clone()))])));
    assert!(r1.get("result").is_some(), "{r1}");
    let (d2, r2) = s.chat(send("t2", "auto", "ask", json!([user(&directed("ask", tool))])));
    assert!(r2.get("result").is_some(), "{r2}");
    assert_eq!(ok_of(&d1), [true], "agent mode with force runs the tool: {d1:?}");
    assert_eq!(ok_of(&d2), [false], "ask mode never does: {d2:?}");
    assert!(s.finish().success());
    let answers: Vec<Value> = dir
        .acp_records("exit")
        .iter()
        .flat_map(|e| e["acp"]["sentRequests"].as_array().cloned().unwrap_or_default())
        .filter(|r| r["method"] == "session/request_permission")
        .map(|r| r["reply"]["result"]["outcome"]["optionId"].clone())
        .collect();
    assert_eq!(answers.len(), 2, "one question per turn: {answers:?}");
    assert!(answers.contains(&json!("allow-once")) && answers.contains(&json!("reject-once")), "{answers:?}");
    assert!(dir.acp_records("start").iter().all(|r| !r["argv"].as_array().unwrap().contains(&json!("--force"))));
}

#[test]
fn a_one_mebibyte_prompt_arrives_intact_on_stdin() {
    let dir = TestDir::new();
    let mut s = ready(&dir);
    // Multi-byte text and newlines, just over 1 MiB.
    let unit = "línea ✓ — 1234567890 abcdefghijklmnopqrstuvwxyz\n";
    let prompt: String = unit.repeat(1024 * 1024 / unit.len() + 1);
    assert!(prompt.len() > 1024 * 1024);
    let (deltas, r) = s.chat(send("big", "auto", "agent", json!([user(&prompt)])));
    assert!(r.get("result").is_some(), "{r}");
    // On ACP the prompt is the `session/prompt` text block (the stored session's turn).
    let rec = &dir.turn_records()[0];
    if expected().counts_stdin_bytes {
        assert_eq!(rec["stdinBytes"].as_u64().unwrap() as usize, prompt.len());
    }
    assert!(rec["stdin"].as_str().unwrap() == prompt, "prompt changed on the way");
    assert!(!text_of(&deltas).is_empty());
}

#[test]
fn sixteen_concurrent_turns_all_get_their_own_answer() {
    let dir = TestDir::new();
    let mut s = ready(&dir);
    let mut ids = Vec::new();
    for i in 0..16 {
        let prompt = directed("go", json!({"answer": format!("answer number {i} ✓"), "deltaDelayMs": 5}));
        let id = s.send_request("chat/send", send(&format!("t{i}"), "auto", "agent", json!([user(&prompt)])));
        ids.push(id);
    }
    for (i, id) in ids.iter().enumerate() {
        let r = s.response(&json!(id));
        assert!(r.get("result").is_some(), "turn {i}: {r}");
        let deltas = s.take_deltas(&json!(format!("t{i}")));
        assert_eq!(text_of(&deltas), format!("answer number {i} ✓"));
    }
    assert_eq!(dir.turn_records().len(), 16);
}

#[test]
fn pool_limits_concurrent_cli_processes_and_queues_the_rest() {
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({"maxConcurrent": 2}));
    let mut ids = Vec::new();
    for i in 0..5 {
        let prompt = directed("go", json!({"answer": format!("a{i}"), "startupMs": 300}));
        ids.push(s.send_request("chat/send", send(&format!("t{i}"), "auto", "agent", json!([user(&prompt)]))));
    }
    (expected().pool_limit)(&dir, s, ids);
}

/// Print mode: while turns run, never more than two CLI turn processes exist.
fn pool_on_print(dir: &TestDir, mut s: Sidecar, ids: Vec<u64>) {
    let sidecar_pid = s.child.id();
    let mut max_seen = 0;
    let until = std::time::Instant::now() + std::time::Duration::from_millis(1200);
    while std::time::Instant::now() < until {
        let live = dir.turns().iter().filter(|t| alive(t["pid"].as_u64().unwrap())).count();
        max_seen = max_seen.max(live);
        let _ = sidecar_pid;
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for id in ids {
        assert!(s.response(&json!(id)).get("result").is_some());
    }
    assert!(max_seen <= 2, "saw {max_seen} CLI processes at once");
    assert!(max_seen >= 1);
    assert_eq!(dir.turns().len(), 5);
}

/// ACP processes outlive their turns, so the limit is on prompts running at once. Each prompt
/// lasts at least its 300 ms `startupMs`, so with two at a time the turns that end 1st and 3rd
/// (3rd and 5th) are at least 300 ms apart: were they closer, three would have run at once.
fn pool_on_acp(dir: &TestDir, mut s: Sidecar, ids: Vec<u64>) {
    for id in ids {
        let r = s.response(&json!(id));
        assert!(r.get("result").is_some(), "{r}");
    }
    let ends: Vec<u64> = dir.turn_records().iter().map(|t| t["atMs"].as_u64().unwrap()).collect();
    assert_eq!(ends.len(), 5);
    for w in ends.windows(3) {
        assert!(w[2] >= w[0] + 290, "three prompts ran at once: turn ends {ends:?} (ms)");
    }
}

#[test]
fn models_are_listed_with_per_family_limits_and_cached() {
    let dir = TestDir::new();
    let mut s = ready(&dir);
    let r = s.request("models/list", json!({}));
    let models = r["result"]["models"].as_array().unwrap_or_else(|| panic!("{r}")).clone();
    assert!(models.len() >= 5, "{r}");
    let auto = models.iter().find(|m| m["id"] == "auto").unwrap();
    assert_eq!(auto["isDefault"], true);
    let ids: Vec<&str> = models.iter().map(|m| m["id"].as_str().unwrap()).collect();
    let unique: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "duplicates removed: {ids:?}");
    let limit = |id: &str| models.iter().find(|m| m["id"] == id).map(|m| m["maxInputTokens"].as_u64().unwrap());
    assert_eq!(limit("composer-2.5"), Some(200_000));
    assert_eq!(limit("gpt-5.6-sol"), Some(272_000));
    assert_ne!(limit("composer-2.5"), limit("gpt-5.6-sol"));

    let listed = dir.records().iter().filter(|r| r["subcommand"] == "models").count();
    assert_eq!(listed, 1);
    s.request("models/list", json!({}));
    assert_eq!(dir.records().iter().filter(|r| r["subcommand"] == "models").count(), 1, "served from cache");
    s.request("models/list", json!({"refresh": true}));
    assert_eq!(dir.records().iter().filter(|r| r["subcommand"] == "models").count(), 2, "refresh asks again");
}

#[test]
fn coloured_model_lists_are_parsed() {
    let dir = TestDir::new();
    let mut s = Launch::new(&dir).env("CURSOR_DOUBLE_COLOR", "always").start();
    s.initialize(&dir, json!({}));
    let r = s.request("models/list", json!({}));
    let models = r["result"]["models"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert!(models.iter().any(|m| m["id"] == "auto" && m["isDefault"] == true), "{r}");
    assert!(!r.to_string().contains("\\u001b"), "ANSI left in: {r}");
}

#[test]
fn status_reports_the_cli_and_login() {
    let dir = TestDir::new();
    let mut s = ready(&dir);
    let r = s.request("status", json!(null));
    let cli = &r["result"]["cli"];
    assert_eq!(cli["found"], true, "{r}");
    assert_eq!(cli["version"], "2026.09.28-64d2043");
    assert_eq!(cli["loggedIn"], true);
    assert_eq!(cli["apiKey"], false);
    assert!(r["result"]["logFile"].as_str().is_some(), "{r}");
}

#[test]
fn a_refused_permission_request_is_reported_once_with_how_to_allow_it() {
    let dir = TestDir::new();
    let mut s = ready(&dir);
    let (deltas, r) =
        s.chat(send("t1", "auto", "agent", json!([user(&directed("clean up", json!({"permissionQuery": true})))])));
    assert!(r.get("result").is_some(), "{r}");
    let denied: Vec<&Value> = deltas.iter().filter(|d| d["kind"] == "permissionDenied").collect();
    assert_eq!(denied.len(), 1, "{deltas:?}");
    assert_eq!(denied[0]["tool"], "shell");
    assert!(denied[0]["summary"].as_str().unwrap().contains("rm -rf build"), "{:?}", denied[0]);
    assert!(denied[0]["hint"].as_str().unwrap().contains("allowUnattended"));
    let completed = deltas.iter().find(|d| d["kind"] == "toolCompleted").unwrap();
    assert_eq!(completed["ok"], false);

    // With force, the same request runs and nothing is denied.
    let dir = TestDir::new();
    let mut s = Sidecar::start(&dir);
    s.initialize(&dir, json!({"force": true}));
    let (deltas, _) =
        s.chat(send("t1", "auto", "agent", json!([user(&directed("clean up", json!({"permissionQuery": true})))])));
    assert!(deltas.iter().all(|d| d["kind"] != "permissionDenied"), "{deltas:?}");
    assert!(deltas.iter().any(|d| d["kind"] == "toolCompleted" && d["ok"] == true));
}

#[test]
fn a_restarted_sidecar_answers_models_from_its_file_cache_then_reports_changes() {
    let dir = TestDir::new();
    {
        let mut s = Sidecar::start(&dir);
        s.initialize(&dir, json!({}));
        let r = s.request("models/list", json!({}));
        assert!(r["result"]["models"].as_array().is_some_and(|m| !m.is_empty()), "{r}");
        assert!(s.finish().success());
    }
    // The account gained a model, and the CLI is slow to say so.
    let models = dir.path().join("models.txt");
    std::fs::write(
        &models,
        "Available models\n\nauto - Auto (current, default)\nbrand-new-9 - Brand New 9\n\nTip: use --model <id>\n",
    )
    .unwrap();
    let mut s = Launch::new(&dir)
        .env("CURSOR_DOUBLE_MODELS_FILE", models.to_str().unwrap())
        .env("CURSOR_DOUBLE_MODELS_DELAY_MS", "1500")
        .start();
    s.initialize(&dir, json!({}));
    let asked = std::time::Instant::now();
    let r = s.request("models/list", json!({}));
    let served_in = asked.elapsed();
    let ids: Vec<&str> = r["result"]["models"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"composer-2.5") && !ids.contains(&"brand-new-9"), "served the cached list: {ids:?}");
    assert!(served_in < std::time::Duration::from_millis(1500), "did not wait for the CLI: {served_in:?}");
    // Then the background check finds the change and says so.
    let changed = loop {
        let m = s.next_message(TIMEOUT).expect("models/changed");
        if m["method"] == "models/changed" {
            break m;
        }
    };
    let ids: Vec<&str> =
        changed["params"]["models"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["auto", "brand-new-9"]);
    // And the cache now holds the new list.
    let r = s.request("models/list", json!({}));
    assert_eq!(r["result"]["models"].as_array().unwrap().len(), 2);
}
