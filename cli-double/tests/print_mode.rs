//! Print mode: stream shapes against the transcripts (tests/fixtures/, copies of
//! sidecar/tests/fixtures/cursor-cli/), output formats, checks, failures.

mod common;

use common::*;

const STREAM: [&str; 4] = ["-p", "--trust", "--output-format", "stream-json"];

fn stream(extra: &[&str]) -> Double {
    double().args(STREAM).args(extra)
}

fn scenario_prompt(prompt: &str, scenario: &str) -> String {
    format!("{prompt} [[double:{scenario}]]")
}

#[test]
fn plain_answer_default_echo() {
    let out = stream(&[]).stdin("What is 2+2?\nReply with just the number.\n").run();
    assert_eq!(out.code, Some(0));
    let ev = out.events();
    let kinds: Vec<_> = ev.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            ("system".into(), "init".into()),
            ("user".into(), String::new()),
            ("assistant".into(), String::new()),
            ("result".into(), "success".into())
        ]
    );
    assert_eq!(assistant_text(&ev[1]), "What is 2+2?\nReply with just the number.\n");
    assert_eq!(assistant_text(&ev[2]), "Echo: Reply with just the number.");
    assert_eq!(str_at(&ev[3], &["result"]), Some("Echo: Reply with just the number."));
    assert_eq!(str_at(&ev[0], &["apiKeySource"]), Some("login"));
    assert_eq!(str_at(&ev[0], &["permissionMode"]), Some("default"));
    assert_eq!(str_at(&ev[0], &["model"]), Some("Auto"));
    let sid = str_at(&ev[0], &["session_id"]).unwrap();
    assert!(is_uuid_v4(sid));
    assert!(ev.iter().all(|e| str_at(e, &["session_id"]) == Some(sid)));
    // Non-partial final segment: neither model_call_id nor timestamp_ms.
    assert!(ev[2].get("model_call_id").is_none() && ev[2].get("timestamp_ms").is_none());
}

/// Transcript 02: deltas, segment flush (model_call_id + timestamp_ms) before an ls tool, more
/// deltas, end-of-turn flush (neither), result — compared key by key, in order.
#[test]
fn partial_stream_matches_transcript_02() {
    let scenario =
        r#"{"segments":["I'll list the files.","There are two files: `a.txt` and `b.txt`."],"tools":[{"kind":"ls"}]}"#;
    let out = stream(&["--stream-partial-output", "--force"])
        .env("CURSOR_API_KEY", "key")
        .stdin(scenario_prompt("List the files in the current directory.", scenario))
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr());
    let ev = out.events();
    let expected: Vec<Json> =
        fixture("02-partial-output-deltas.jsonl").lines().map(|l| Json::parse(l).unwrap()).collect();
    assert_eq!(stream_shape(&ev, false), stream_shape(&expected, false));

    // Deltas (timestamp_ms, no model_call_id) concatenate to result.result.
    let deltas: String = ev
        .iter()
        .filter(|e| kind(e).0 == "assistant" && e.get("timestamp_ms").is_some() && e.get("model_call_id").is_none())
        .map(assistant_text)
        .collect();
    let result = ev.last().unwrap();
    assert_eq!(str_at(result, &["result"]), Some(deltas.as_str()));
    assert_eq!(deltas, "I'll list the files.There are two files: `a.txt` and `b.txt`.");
    // The flushes are present and duplicate the segments.
    let flush = ev.iter().find(|e| e.get("model_call_id").is_some() && kind(e).0 == "assistant").unwrap();
    assert_eq!(assistant_text(flush), "I'll list the files.");
    assert!(flush.get("timestamp_ms").is_some());
    let request_id = str_at(result, &["request_id"]).unwrap();
    assert!(str_at(flush, &["model_call_id"]).unwrap().starts_with(&format!("{request_id}-0-")));
    let end = &ev[ev.len() - 2];
    assert_eq!(assistant_text(end), "There are two files: `a.txt` and `b.txt`.");
    assert!(end.get("timestamp_ms").is_none() && end.get("model_call_id").is_none());
    assert_eq!(str_at(&ev[0], &["permissionMode"]), Some("bypassPermissions"));
    assert_eq!(str_at(&ev[0], &["apiKeySource"]), Some("env"));
    // call_id carries an embedded newline, like the real ones.
    let started = ev.iter().find(|e| kind(e) == ("tool_call".into(), "started".into())).unwrap();
    assert!(str_at(started, &["call_id"]).unwrap().contains('\n'));
}

const FOUR_SCENARIO: &str = r#"{"segments":["I'll read app.ts first.","Now I'll update the version.","Running the tests.","Bumped `version` to 2 in app.ts; all 3 tests pass."],"tools":[{"kind":"read"},{"kind":"edit"},{"kind":"shell"}]}"#;

/// Transcript 04: non-partial, three tools, segments before tools carry model_call_id + timestamp.
#[test]
fn tool_calls_match_transcript_04() {
    let prompt = scenario_prompt("Read app.ts, bump the version to 2, then run the tests.", FOUR_SCENARIO);
    let out = stream(&["--force", "--model", "opus-5"]).env("CURSOR_API_KEY", "k").stdin(prompt.clone()).run();
    let ev = out.events();
    let expected: Vec<Json> =
        fixture("04-tool-calls-shell-edit-read.jsonl").lines().map(|l| Json::parse(l).unwrap()).collect();
    assert_eq!(
        ev.iter().map(|e| shape(e, false)).collect::<Vec<_>>(),
        expected.iter().map(|e| shape(e, false)).collect::<Vec<_>>()
    );
    let result = ev.last().unwrap();
    assert_eq!(
        str_at(result, &["result"]),
        Some("I'll read app.ts first.Now I'll update the version.Running the tests.Bumped `version` to 2 in app.ts; all 3 tests pass.")
    );
    assert_eq!(str_at(&ev[0], &["model"]), Some("Claude Opus 5"));
    // model_call_id counts model calls: -0-, -1-, -2-; tools share their segment's id.
    let rid = str_at(result, &["request_id"]).unwrap();
    for (i, idx) in [2usize, 5, 8].iter().enumerate() {
        let mc = str_at(&ev[*idx], &["model_call_id"]).unwrap();
        assert!(mc.starts_with(&format!("{rid}-{i}-")), "{mc}");
        assert_eq!(str_at(&ev[idx + 1], &["model_call_id"]), Some(mc));
    }

    // The same run in text format prints only the last segment.
    let out = double().args(["-p", "--trust", "--force", "--output-format", "text"]).stdin(prompt.clone()).run();
    assert_eq!(out.stdout(), fixture("04-tool-calls.text-format.txt"));
    // ... and in json format a single result object line.
    let out = double().args(["-p", "--trust", "--force", "--output-format", "json"]).stdin(prompt).run();
    let lines: Vec<&str> =
        out.stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| std::str::from_utf8(l).unwrap()).collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(shape(&Json::parse(lines[0]).unwrap(), false), shape(expected.last().unwrap(), false));
}

/// Transcript 10: without --force the shell call is queried and auto-rejected (stdin at EOF).
#[test]
fn permission_query_matches_transcript_10() {
    let out = stream(&[])
        .env("CURSOR_API_KEY", "k")
        .stdin(scenario_prompt("Clean the build directory.", r#"{"permissionQuery":true}"#))
        .run();
    let ev = out.events();
    let expected: Vec<Json> =
        fixture("10-permission-query-rejected.jsonl").lines().map(|l| Json::parse(l).unwrap()).collect();
    // Shell args are the richer 2026.09 shape (transcript 04), so args are compared opaquely.
    assert_eq!(stream_shape(&ev, true), stream_shape(&expected, true));
    let completed = ev.iter().find(|e| kind(e) == ("tool_call".into(), "completed".into())).unwrap();
    let reason = str_at(completed, &["tool_call", "shellToolCall", "result", "rejected", "reason"]);
    assert_eq!(reason, Some("permission mode does not allow interactive approval"));

    // With --force the same scenario runs the command.
    let out = stream(&["--force"]).stdin(scenario_prompt("Clean.", r#"{"permissionQuery":true}"#)).run();
    let ev = out.events();
    assert!(ev.iter().all(|e| kind(e).0 != "interaction_query"));
    let completed = ev.iter().find(|e| kind(e) == ("tool_call".into(), "completed".into())).unwrap();
    assert!(at(completed, &["tool_call", "shellToolCall", "result", "success"]).is_some());
}

#[test]
fn thinking_comes_before_the_answer_only_in_stream_json() {
    let prompt = scenario_prompt("Is 91 prime?", r#"{"thinking":"91 = 7 × 13","answer":"No.","chunkChars":3}"#);
    let ev = stream(&[]).stdin(prompt.clone()).run().events();
    let kinds: Vec<(String, String)> = ev.iter().map(kind).collect();
    let thinking: String = ev
        .iter()
        .filter(|e| kind(e) == ("thinking".into(), "delta".into()))
        .map(|e| str_at(e, &["text"]).unwrap())
        .collect();
    assert_eq!(thinking, "91 = 7 × 13");
    let completed = kinds.iter().position(|k| k == &("thinking".to_owned(), "completed".to_owned())).unwrap();
    assert_eq!(kinds[completed + 1].0, "assistant");
    let out = double().args(["-p", "--trust", "--output-format", "json"]).stdin(prompt).run();
    assert!(!out.stdout().contains("thinking"));
}

#[test]
fn unicode_deltas_never_split_scalars() {
    let answer = "こんにちは👩\u{200d}💻 naïve é 🇯🇵 \"q\" \\ tab\t.";
    let scenario = format!(r#"{{"answer":{},"chunkChars":1}}"#, Json::from(answer));
    let out = stream(&["--stream-partial-output"]).stdin(scenario_prompt("Greet", &scenario)).run();
    let raw = out.stdout();
    assert!(raw.contains("こんにちは") || raw.contains('こ'), "non-ASCII must be raw UTF-8, not escaped");
    let ev = out.events();
    let deltas: Vec<&str> =
        ev.iter().filter(|e| e.get("timestamp_ms").is_some() && kind(e).0 == "assistant").map(assistant_text).collect();
    assert_eq!(deltas.len(), answer.chars().count());
    assert_eq!(deltas.concat(), answer);
    assert_eq!(str_at(ev.last().unwrap(), &["result"]), Some(answer));
}

#[test]
fn resume_keeps_the_session_id() {
    let id = "5f0c2b7e-8d41-4a3c-9e6b-1c2d3e4f5a61";
    let ev = stream(&["--resume", id]).stdin("And times 3?").run().events();
    assert!(ev.iter().all(|e| str_at(e, &["session_id"]) == Some(id)));
    assert_eq!(assistant_text(&ev[1]), "And times 3?");
    // `--resume=<id>` too, and replay re-keys a transcript to the resumed id.
    let fixture_path = format!("{}/tests/fixtures/09-resume-second-turn.jsonl", env!("CARGO_MANIFEST_DIR"));
    let scenario = format!(r#"{{"replay":{}}}"#, Json::from(fixture_path.as_str()));
    let out = stream(&["--resume=11111111-2222-4333-8444-555555555555"])
        .env("CURSOR_DOUBLE_SCENARIO", &scenario)
        .stdin("x")
        .run();
    let expected = fixture("09-resume-second-turn.jsonl").replace(id, "11111111-2222-4333-8444-555555555555");
    assert_eq!(out.stdout(), expected);
    // Without --resume every run gets a fresh id.
    let a = stream(&[]).stdin("x").run().events();
    let b = stream(&[]).stdin("x").run().events();
    assert_ne!(str_at(&a[0], &["session_id"]), str_at(&b[0], &["session_id"]));
}

#[test]
fn auth_failure_is_byte_exact() {
    let out = stream(&[]).env("CURSOR_DOUBLE_LOGGED_IN", "0").stdin("hi").run();
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(out.stderr(), fixture("06-auth-failure.stderr.txt"));
    // A key authenticates; its source is reported.
    let out = stream(&["--api-key", "k"]).env("CURSOR_DOUBLE_LOGGED_IN", "0").stdin("hi").run();
    assert_eq!(str_at(&out.events()[0], &["apiKeySource"]), Some("flag"));
    // A wrong key is refused.
    let out = stream(&["--api-key", "bad"]).env("CURSOR_DOUBLE_VALID_KEY", "good").stdin("hi").run();
    assert_eq!((out.code, out.stderr()), (Some(1), "Error: The provided API key is invalid.\n".to_owned()));
}

#[test]
fn unknown_model_lists_available_ids() {
    let out = stream(&["--model", "no-such-model"]).stdin("hi").run();
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.is_empty(), "no events, not even init");
    assert_eq!(
        out.stderr(),
        "Cannot use this model: no-such-model. Available models: auto, composer-2.5, composer-2.5-fast, sonnet-5-thinking, opus-5, claude-opus-4-8, gpt-5.6-sol, grok-4.6, gemini-3.7-flash, kimi-k2.5\n"
    );
    // Bracket overrides are validated by their base id.
    let out = stream(&["--model", "claude-opus-4-8[context=1m,effort=high]"]).stdin("hi").run();
    assert_eq!(out.code, Some(0));
    assert_eq!(str_at(&out.events()[0], &["model"]), Some("Claude Opus 4.8 1M"));
}

#[test]
fn workspace_trust_gate() {
    let out = double().args(["-p", "--output-format", "stream-json"]).stdin("hi").run();
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.is_empty());
    let err = out.stderr();
    assert!(err.starts_with("⚠ Workspace Trust Required\n"), "{err}");
    assert!(err.ends_with("Pass --trust, --yolo, or -f if you trust this directory\n"));
    let out = double().args(["-p"]).env("CURSOR_DOUBLE_TRUST_EXIT", "1").stdin("hi").run();
    assert_eq!(out.code, Some(1));
    for flag in ["--trust", "--yolo", "-f", "--force"] {
        assert_eq!(double().args(["-p", flag]).stdin("hi").run().stdout(), "Echo: hi\n");
    }
}

#[test]
fn workspace_is_canonicalised_into_init_cwd() {
    let dir = temp_path("ws");
    std::fs::create_dir_all(&dir).unwrap();
    let ev = stream(&["--workspace", dir.to_str().unwrap()]).stdin("x").run().events();
    let canonical = std::fs::canonicalize(&dir).unwrap();
    assert_eq!(str_at(&ev[0], &["cwd"]), canonical.to_str());
    let _ = std::fs::remove_dir(dir);
}

#[test]
fn positional_prompt_joins_words_and_still_drains_stdin() {
    let out = stream(&["hello", "there"]).stdin("this is not the prompt").run();
    let ev = out.events();
    assert_eq!(assistant_text(&ev[1]), "hello there");
    // An empty positional means "read stdin".
    let ev = stream(&[""]).stdin("from stdin").run().events();
    assert_eq!(assistant_text(&ev[1]), "from stdin");
    // `-` is literal.
    let ev = stream(&["-"]).stdin("ignored").run().events();
    assert_eq!(assistant_text(&ev[1]), "-");
}

#[test]
fn crash_after_deltas_leaves_no_result() {
    let out = stream(&["--stream-partial-output"])
        .stdin(scenario_prompt("tell me a long story", r#"{"crashAfterDeltas":2}"#))
        .run();
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stderr(), "Error: Connection lost: ECONNRESET\n");
    let ev = out.events();
    assert_eq!(ev.iter().filter(|e| kind(e).0 == "assistant").count(), 2);
    assert!(ev.iter().all(|e| kind(e).0 != "result"));
    let out = stream(&[]).stdin(scenario_prompt("x", r#"{"crashAfterDeltas":0,"stderr":"boom","exitCode":9}"#)).run();
    assert_eq!((out.code, out.stderr()), (Some(9), "boom\n".to_owned()));
}

#[test]
fn scripted_failures() {
    let cases = [
        ("usageLimit", "Error: You've hit your usage limit\n"),
        ("rateLimit", "Error: rate limit exceeded (429). Please try again later.\n"),
        ("network", "Error: getaddrinfo EAI_AGAIN api2.cursor.sh\n"),
        ("auth", "Error: Authentication required. Please run 'agent login' first"),
        ("invalidKey", "Error: The provided API key is invalid.\n"),
        ("model", "Cannot use this model: auto. Available models: auto, "),
        // ACP transport drops, as a print run would show them (invented there).
        ("ping", "ConnectError: [unavailable] PING timed out\n"),
        ("streamClosed", "ConnectError: [canceled] http/2 stream closed"),
        ("maxRetries", "RetriableError: [unavailable] exceeded max retries\n"),
    ];
    for (fail, start) in cases {
        let out = stream(&[]).stdin(scenario_prompt("x", &format!(r#"{{"fail":"{fail}"}}"#))).run();
        assert_eq!(out.code, Some(1), "{fail}");
        assert!(out.stdout.is_empty(), "{fail}");
        assert!(out.stderr().starts_with(start), "{fail}: {}", out.stderr());
    }
    // planGated is an answer, not a failure: the gate text, exit 0.
    let out = stream(&[]).stdin(scenario_prompt("x", r#"{"fail":"planGated","tools":[{"kind":"read"}]}"#)).run();
    assert_eq!(out.code, Some(0));
    let ev = out.events();
    assert_eq!(str_at(ev.last().unwrap(), &["result"]), Some("\n\nUpgrade your plan to continue"));
    assert!(ev.iter().all(|e| str_at(e, &["type"]) != Some("tool_call")));
}

#[test]
fn result_variants_and_envelope() {
    let ev = stream(&[]).stdin(scenario_prompt("x", r#"{"errorResult":true,"exitCode":0}"#)).run().events();
    let r = ev.last().unwrap();
    assert_eq!((str_at(r, &["subtype"]), r.get("is_error")), (Some("error"), Some(&Json::Bool(true))));
    let out = stream(&[]).stdin(scenario_prompt("x", r#"{"noResult":true}"#)).run();
    assert_eq!(out.code, Some(0));
    assert!(out.events().iter().all(|e| kind(e).0 != "result"));
    let out = stream(&[]).stdin(scenario_prompt("x", r#"{"errorEnvelope":"quota exceeded"}"#)).run();
    assert_eq!(out.code, Some(1));
    assert_eq!(out.stdout().lines().last(), Some(r#"{"type":"error","message":"quota exceeded"}"#));
    let out = stream(&[]).stdin(scenario_prompt("x", r#"{"usage":{"outputTokens":7},"durationMs":1234}"#)).run();
    let r = out.events().pop().unwrap();
    assert_eq!(
        shape(at(&r, &["usage"]).unwrap(), false),
        "{inputTokens:n,outputTokens:n,cacheReadTokens:n,cacheWriteTokens:n,}"
    );
    assert_eq!(at(&r, &["usage", "outputTokens"]), Some(&Json::from(7u64)));
    assert_eq!(at(&r, &["duration_ms"]), Some(&Json::from(1234u64)));
}

#[test]
fn garbage_and_huge_lines() {
    let out = stream(&["--stream-partial-output"])
        .stdin(scenario_prompt("x", r#"{"garbage":true,"hugeLineBytes":2000000}"#))
        .run();
    assert_eq!(out.code, Some(0));
    let mut json_lines = 0;
    let mut other = 0;
    let mut longest = 0;
    for line in out.stdout.split(|b| *b == b'\n') {
        longest = longest.max(line.len());
        match std::str::from_utf8(line).ok().and_then(|l| Json::parse(l).ok()) {
            Some(_) => json_lines += 1,
            None => other += 1,
        }
    }
    assert!(other >= 3 && json_lines >= 5, "{other} {json_lines}");
    assert!(longest > 2_000_000);
    assert!(out.stdout.windows(2).any(|w| w == b"\xff\xfe"), "an invalid UTF-8 line is expected");
}

#[test]
fn bad_scenarios_exit_2() {
    let out = stream(&[]).stdin("x [[double:{\"answr\":\"typo\"}]]").run();
    assert_eq!(out.code, Some(2));
    assert!(out.stderr().contains("unknown scenario field 'answr'"));
    let out = stream(&[]).env("CURSOR_DOUBLE_SCENARIO", "{not json").stdin("x").run();
    assert_eq!(out.code, Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn env_scenario_file_and_directive_override() {
    let path = temp_path("scenario.json");
    std::fs::write(&path, r#"{"answer":"from file","errorResult":true}"#).unwrap();
    let env = format!("@{}", path.display());
    let ev = stream(&[]).env("CURSOR_DOUBLE_SCENARIO", &env).stdin("x").run().events();
    assert_eq!(str_at(ev.last().unwrap(), &["result"]), Some("from file"));
    let ev = stream(&[])
        .env("CURSOR_DOUBLE_SCENARIO", &env)
        .stdin(scenario_prompt("x", r#"{"errorResult":false}"#))
        .run()
        .events();
    let r = ev.last().unwrap();
    assert_eq!((str_at(r, &["result"]), str_at(r, &["subtype"])), (Some("from file"), Some("success")));
    let _ = std::fs::remove_file(path);
}

#[test]
fn chats_are_stored_and_unknown_resumes_can_fail() {
    let data = temp_path("data");
    let data_dir = data.to_str().unwrap();
    let ws = temp_path("chat-ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws_arg = ws.to_str().unwrap();
    let strict = |args: &[&str]| {
        stream(&["--workspace", ws_arg])
            .args(args)
            .env("CURSOR_DATA_DIR", data_dir)
            .env("CURSOR_DOUBLE_UNKNOWN_RESUME", "fail")
            .stdin("hi")
            .run()
    };
    // An invented id is refused, before any output.
    let out = strict(&["--resume", "00000000-0000-4000-8000-000000000000"]);
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(out.stderr(), "Error: Chat not found: 00000000-0000-4000-8000-000000000000\n");
    // A create-chat id works, and its chat folder appears under chats/<md5(workspace)>/.
    let id = double().args(["create-chat"]).env("CURSOR_DATA_DIR", data_dir).run().stdout().trim().to_owned();
    assert_eq!(strict(&["--resume", &id]).code, Some(0));
    let chats = data.join("chats");
    let hashed: Vec<_> = std::fs::read_dir(&chats).unwrap().flatten().collect();
    assert_eq!(hashed.len(), 1);
    assert_eq!(hashed[0].file_name().len(), 32, "md5 hex of the workspace path");
    assert!(hashed[0].path().join(&id).join("meta.json").is_file());
    assert_eq!(strict(&["--resume", &id]).code, Some(0), "resumable again");
    // Cursor garbage-collects the chat: resuming now fails.
    std::fs::remove_dir_all(&chats).unwrap();
    assert_eq!(strict(&["--resume", &id]).code, Some(1));
    // A fresh chat is stored under its session id and can be resumed.
    let sid = str_at(&strict(&[]).events()[0], &["session_id"]).unwrap().to_owned();
    assert_eq!(strict(&["--resume", &sid]).code, Some(0));
    // Without the switch any id is accepted (caller-invented UUIDs reportedly work).
    let out =
        stream(&["--resume", "11111111-1111-4111-8111-111111111111"]).env("CURSOR_DATA_DIR", data_dir).stdin("x").run();
    assert_eq!(out.code, Some(0));
    let _ = std::fs::remove_dir_all(data);
    let _ = std::fs::remove_dir_all(ws);
}

#[test]
fn permission_answers_are_read_from_an_open_stdin() {
    let approve = r#"{"type":"interaction_query","subtype":"response","query_type":"shellRequestQuery","response":{"id":1,"shellRequestResponse":{"approved":{}}}}"#;
    let reject = r#"{"type":"interaction_query","subtype":"response","query_type":"shellRequestQuery","response":{"id":1,"shellRequestResponse":{"rejected":{"reason":"not today"}}}}"#;
    for (reply, expected) in [(approve, "success"), (reject, "rejected")] {
        let out = stream(&["clean [[double:{\"permissionQuery\":true}]]"])
            .env("CURSOR_DOUBLE_POSITIONAL_IGNORES_STDIN", "1")
            .stdin(format!("{reply}\n"))
            .run();
        let ev = out.events();
        let completed = ev.iter().find(|e| kind(e) == ("tool_call".into(), "completed".into())).unwrap();
        let result = at(completed, &["tool_call", "shellToolCall", "result"]).unwrap();
        assert!(result.get(expected).is_some(), "{result}");
        if expected == "rejected" {
            assert_eq!(str_at(result, &["rejected", "reason"]), Some("not today"));
        }
    }
}

#[test]
fn help_lists_usage() {
    let out = double().args(["--help"]).run();
    assert_eq!(out.code, Some(0));
    assert!(out.stdout().starts_with("Usage: agent [options] [command] [prompt...]\n"));
}
