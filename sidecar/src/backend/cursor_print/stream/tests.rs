use serde_json::{json, Value};

use super::tools::SUMMARY_MAX_CHARS;
use super::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cursor-cli/");

impl StreamParser {
    /// The streamed text without the inserted paragraph breaks (= what the CLI sent).
    fn raw_streamed(&self) -> String {
        let mut raw = String::new();
        let mut from = 0;
        for &(at, len) in &self.breaks {
            raw.push_str(&self.streamed[from..at]);
            from = at + len;
        }
        raw.push_str(&self.streamed[from..]);
        raw
    }
}

struct Run {
    events: Vec<StreamEvent>,
    result: Option<TurnResult>,
    parser: StreamParser,
}

impl Run {
    /// What `wanted` takes from each event it matches, in stream order.
    fn pick<'r, T>(&'r self, wanted: impl FnMut(&'r StreamEvent) -> Option<T>) -> Vec<T> {
        self.events.iter().filter_map(wanted).collect()
    }
    fn text(&self) -> String {
        self.pick(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .concat()
    }
    fn thinking(&self) -> String {
        self.pick(|e| match e {
            StreamEvent::Thinking(t) => Some(t.as_str()),
            _ => None,
        })
        .concat()
    }
    fn started(&self) -> Vec<(&str, &str)> {
        self.pick(|e| match e {
            StreamEvent::ToolStarted { tool, summary, .. } => Some((tool.as_str(), summary.as_str())),
            _ => None,
        })
    }
    fn completed(&self) -> Vec<(&str, &str, ToolOutcome)> {
        self.pick(|e| match e {
            StreamEvent::ToolCompleted { tool, summary, outcome, .. } => {
                Some((tool.as_str(), summary.as_str(), outcome.clone()))
            }
            _ => None,
        })
    }
    fn permissions(&self) -> Vec<(&str, &str)> {
        self.pick(|e| match e {
            StreamEvent::PermissionRequested { query_type, summary } => Some((query_type.as_str(), summary.as_str())),
            _ => None,
        })
    }
    fn position(&self, wanted: impl Fn(&StreamEvent) -> bool) -> Option<usize> {
        self.events.iter().position(wanted)
    }
}

fn run_lines<L: AsRef<[u8]>>(partial: bool, lines: &[L]) -> Run {
    let mut parser = StreamParser::new(partial);
    let mut events = Vec::new();
    for line in lines {
        parser.push_line(line.as_ref(), &mut events);
    }
    let result = parser.finish(&mut events);
    Run { events, result, parser }
}

fn run_fixture(fixture: &str, partial: bool) -> Run {
    let bytes = std::fs::read(format!("{FIXTURES}{fixture}")).unwrap_or_else(|e| panic!("{fixture}: {e}"));
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    run_lines(partial, &lines)
}

#[derive(Default)]
struct Expected {
    text: String,
    thinking: &'static str,
    /// `(tool, summary)`
    started: Vec<(&'static str, &'static str)>,
    completed: Vec<(&'static str, &'static str, ToolOutcome)>,
    permissions: Vec<(&'static str, &'static str)>,
    /// A successful `result` event ends the transcript.
    result: bool,
    ignored: u64,
}

impl Expected {
    /// A successful turn answering `text`; the one ignored line is the `user` prompt echo.
    fn answer(text: impl Into<String>) -> Self {
        Expected { text: text.into(), result: true, ignored: 1, ..Expected::default() }
    }
}

/// Runs a transcript in both modes (a cumulative transcript fed to a partial-mode parser and
/// vice versa must give the same output, see the module docs) and checks every event.
fn check(fixture: &str, expected: Expected) {
    for partial in [false, true] {
        let run = run_fixture(fixture, partial);
        let label = format!("{fixture} (partial={partial})");
        let text = run.text();
        assert_eq!(text, expected.text, "{label}: text");
        assert_eq!(run.parser.streamed_text(), text, "{label}: streamed_text");
        assert_eq!(run.thinking(), expected.thinking, "{label}: thinking");
        assert_eq!(run.started(), expected.started, "{label}: started");
        assert_eq!(run.completed(), expected.completed, "{label}: completed");
        assert_eq!(run.permissions(), expected.permissions, "{label}: permissions");
        assert_eq!(run.parser.ignored_lines(), expected.ignored, "{label}: ignored");
        assert_eq!(run.parser.malformed_lines(), 0, "{label}: malformed");
        assert_eq!(
            run.parser.saw_tools(),
            !expected.started.is_empty() || !expected.completed.is_empty(),
            "{label}: saw_tools"
        );
        for event in &run.events {
            match event {
                StreamEvent::Text(t) | StreamEvent::Thinking(t) => {
                    assert!(!t.is_empty(), "{label}: empty")
                }
                StreamEvent::ToolStarted { call_id, .. } | StreamEvent::ToolCompleted { call_id, .. } => {
                    assert!(call_id.contains('\n'), "{label}: call_id decoded with newline (docs/cursor-cli.md §4.8)")
                }
                _ => {}
            }
        }
        // Thinking: one block, closed before the answer starts.
        let done_count = run.events.iter().filter(|e| **e == StreamEvent::ThinkingDone).count();
        assert_eq!(done_count, usize::from(!expected.thinking.is_empty()), "{label}: ThinkingDone");
        if let Some(done) = run.position(|e| *e == StreamEvent::ThinkingDone) {
            assert!(run.position(|e| matches!(e, StreamEvent::Thinking(_))) < Some(done));
            assert!(run.position(|e| matches!(e, StreamEvent::Text(_))) > Some(done));
        }
        let result_events: Vec<&StreamEvent> =
            run.events.iter().filter(|e| matches!(e, StreamEvent::Result(_))).collect();
        match &run.result {
            Some(result) => {
                assert_eq!(result_events, vec![&StreamEvent::Result(result.clone())]);
                assert_eq!(run.events.last(), result_events.first().copied(), "{label}: last");
            }
            None => assert!(result_events.is_empty(), "{label}"),
        }
        match (&run.result, expected.result) {
            (Some(result), true) => {
                assert!(result.success, "{label}");
                assert_eq!(run.parser.raw_streamed(), result.text, "{label}: text minus breaks = result.result");
                if let Some(StreamEvent::Init { session_id, .. }) = run.events.first() {
                    assert_eq!(Some(session_id), result.session_id.as_ref(), "{label}: session id");
                }
            }
            (None, false) => {}
            (result, _) => panic!("{label}: unexpected result {result:?}"),
        }
    }
}

fn paragraphs(parts: &[&str]) -> String {
    parts.join("\n\n")
}

#[test]
fn transcript_01_plain_answer_cumulative() {
    check("01-plain-answer-cumulative.jsonl", Expected::answer("4"));
    let run = run_fixture("01-plain-answer-cumulative.jsonl", false);
    assert_eq!(
        run.events.first(),
        Some(&StreamEvent::Init {
            session_id: "5f0c2b7e-8d41-4a3c-9e6b-1c2d3e4f5a61".into(),
            model: Some("Auto".into())
        })
    );
    assert_eq!(
        run.result,
        Some(TurnResult {
            success: true,
            text: "4".into(),
            session_id: Some("5f0c2b7e-8d41-4a3c-9e6b-1c2d3e4f5a61".into()),
            request_id: Some("9b1e4c2a-7f30-4d8e-a1b2-c3d4e5f60718".into()),
            duration_ms: Some(3184),
            usage: Some(Usage {
                input_tokens: 1203,
                output_tokens: 2,
                cache_read_tokens: 17920,
                cache_write_tokens: 0,
                reasoning_tokens: None,
            }),
        })
    );
}

#[test]
fn transcript_01_json_format_uses_result_text() {
    // `--output-format json` prints only the result object: its text is the fallback.
    check("01-plain-answer.json-format.json", Expected { ignored: 0, ..Expected::answer("4") });
}

#[test]
fn transcript_02_partial_deltas() {
    check(
        "02-partial-output-deltas.jsonl",
        Expected {
            started: vec![("ls", "/home/dev/project")],
            completed: vec![("ls", "/home/dev/project", ToolOutcome::Success)],
            ..Expected::answer(paragraphs(&["I'll list the files.", "There are two files: `a.txt` and `b.txt`."]))
        },
    );
    let run = run_fixture("02-partial-output-deltas.jsonl", true);
    let texts: Vec<&StreamEvent> = run.events.iter().filter(|e| matches!(e, StreamEvent::Text(_))).collect();
    assert_eq!(texts.len(), 8, "one Text per delta, flushes dropped");
    assert_eq!(texts[4], &StreamEvent::Text("\n\nThere".into()));
    // A parser not told about partial output detects the delta shape and switches.
    assert!(run_fixture("02-partial-output-deltas.jsonl", false).parser.is_partial());
}

#[test]
fn transcript_03_thinking() {
    check(
        "03-thinking-model.jsonl",
        Expected {
            thinking: "**Checking the claim**\n\nThe user asks whether 91 is prime. 91 = 7 × 13, so it is composite.",
            ..Expected::answer("No. 91 is not prime: 91 = 7 × 13.")
        },
    );
}

#[test]
fn transcript_04_tool_calls() {
    let path = "/home/dev/project/app.ts";
    check(
        "04-tool-calls-shell-edit-read.jsonl",
        Expected {
            started: vec![("read", path), ("edit", path), ("shell", "npm test")],
            completed: vec![
                ("read", path, ToolOutcome::Success),
                ("edit", path, ToolOutcome::Success),
                ("shell", "npm test", ToolOutcome::Success),
            ],
            ..Expected::answer(paragraphs(&[
                "I'll read app.ts first.",
                "Now I'll update the version.",
                "Running the tests.",
                "Bumped `version` to 2 in app.ts; all 3 tests pass.",
            ]))
        },
    );
    let run = run_fixture("04-tool-calls-shell-edit-read.jsonl", false);
    assert!(run.events.contains(&started_event(
        "call_Xq3kF9sLm2Pz8TvN1rYc0aBd\nfc_0d2609f619ccdca801698ca0a51c6481a0aaa34fcf724631a9",
        "read",
        path,
    )));
    // The text format shows only the last segment; it is the end of what we streamed.
    let last = std::fs::read_to_string(format!("{FIXTURES}04-tool-calls.text-format.txt")).unwrap_or_default();
    assert!(!last.trim().is_empty() && run.text().ends_with(last.trim_end()));
}

#[test]
fn transcript_05_stream_ends_early() {
    check(
        "05-failure-stream-ends-early.jsonl",
        Expected {
            text: "Let me run the tests.".into(),
            started: vec![("shell", "pytest -q")],
            completed: vec![("shell", "pytest -q", ToolOutcome::Failure { detail: Some("exit code 1".into()) })],
            result: false,
            ignored: 4, // user, connection, retry, connection
            ..Expected::default()
        },
    );
}

#[test]
fn transcript_06_auth_failure_has_empty_stdout() {
    check("06-auth-failure.stdout.jsonl", Expected::default());
    assert!(run_fixture("06-auth-failure.stdout.jsonl", true).events.is_empty());
}

#[test]
fn transcript_07_unicode() {
    let expected = "こんにちは、世界！🌍 Grüße aus Köln — naïve café (e\u{301}) 👩\u{200d}💻 coder, RTL: שלום / مرحبا, tab:\t| quote: \"hi\", backslash: C:\\temp, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, flag 🇯🇵.";
    check("07-unicode-emoji.jsonl", Expected::answer(expected));
    // The ZWJ sequence arrives split over two deltas and is passed through untouched.
    let run = run_fixture("07-unicode-emoji.jsonl", true);
    let woman = run.position(|e| *e == StreamEvent::Text(" 👩".into()));
    let rest = run.position(|e| *e == StreamEvent::Text("\u{200d}💻 coder".into()));
    assert!(woman.is_some() && rest == woman.map(|i| i + 1), "{:?}", run.events);
}

#[test]
fn transcript_08_long_multiline() {
    let mut text = String::from("# Migration plan\n\nBelow is a step-by-step plan for moving the service to Rust.\n\n");
    for step in 1..=30 {
        text.push_str(&format!(
            "{step}. Step {step}: port module `mod_{step:02}` and add tests (est. {}h).\n",
            step % 5 + 1
        ));
    }
    text.push_str("\n## Example\n\n```rust\nfn main() {\n    println!(\"hello, {}\", \"world\");\n    let path = r\"C:\\\\Users\\\\dev\";\n}\n```\n\n| Phase | Weeks |\n|---|---|\n| Port | 3 |\n| Harden | 2 |\n\nTrailing line without newline");
    check("08-long-multiline-answer.jsonl", Expected::answer(text));
}

#[test]
fn transcript_09_resume() {
    check("09-resume-second-turn.jsonl", Expected::answer("12"));
}

#[test]
fn transcript_10_permission_rejected() {
    check(
        "10-permission-query-rejected.jsonl",
        Expected {
            started: vec![("shell", "rm -rf build")],
            completed: vec![(
                "shell",
                "rm -rf build",
                ToolOutcome::Rejected { reason: Some("permission mode does not allow interactive approval".into()) },
            )],
            permissions: vec![("shellRequestQuery", "rm -rf build")],
            ..Expected::answer(paragraphs(&[
                "I'll remove the build directory.",
                "I wasn't allowed to run `rm -rf build`, so the directory is unchanged.",
            ]))
        },
    );
}

// -----------------------------------------------------------------------------------------
// Targeted cases. Builders for the event shapes of docs/cursor-cli.md §4.

fn content(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}]})
}
/// Partial-mode delta: `timestamp_ms`, no `model_call_id`.
fn delta(text: &str) -> String {
    json!({"type": "assistant", "message": content(text), "session_id": "s", "timestamp_ms": 1}).to_string()
}
/// Segment (flush): `model_call_id` + `timestamp_ms`.
fn segment(text: &str) -> String {
    json!({"type": "assistant", "message": content(text), "session_id": "s", "model_call_id": "r-0-abcd", "timestamp_ms": 2})
        .to_string()
}
/// Last segment / end-of-turn flush: neither field.
fn last(text: &str) -> String {
    json!({"type": "assistant", "message": content(text), "session_id": "s"}).to_string()
}
fn tool(subtype: &str, call_id: &str, tool_call: Value) -> String {
    json!({"type": "tool_call", "subtype": subtype, "call_id": call_id, "tool_call": tool_call, "session_id": "s"})
        .to_string()
}
fn shell_pair(call_id: &str) -> [String; 2] {
    let body = json!({"shellToolCall": {"args": {"command": "true"}}});
    [tool("started", call_id, body.clone()), tool("completed", call_id, body)]
}
fn result(text: &str) -> String {
    json!({"type": "result", "subtype": "success", "is_error": false, "result": text, "session_id": "s"}).to_string()
}
fn thinking(text: &str) -> String {
    json!({"type": "thinking", "subtype": "delta", "text": text, "session_id": "s", "timestamp_ms": 1}).to_string()
}
fn thinking_done() -> String {
    json!({"type": "thinking", "subtype": "completed", "session_id": "s"}).to_string()
}

fn lines(parts: &[&[String]]) -> Vec<String> {
    parts.iter().flat_map(|p| p.iter().cloned()).collect()
}

fn started_event(call_id: &str, tool: &str, summary: &str) -> StreamEvent {
    StreamEvent::ToolStarted { call_id: call_id.into(), tool: tool.into(), summary: summary.into() }
}
fn completed_event(call_id: &str, tool: &str, summary: &str, outcome: ToolOutcome) -> StreamEvent {
    StreamEvent::ToolCompleted { call_id: call_id.into(), tool: tool.into(), summary: summary.into(), outcome }
}

/// Runs each `(label, lines, events)` case through a partial-mode parser: exactly these events,
/// and no malformed line.
fn check_events(cases: Vec<(&str, Vec<String>, Vec<StreamEvent>)>) {
    for (label, input, expected) in cases {
        let run = run_lines(true, &input);
        assert_eq!(run.events, expected, "{label}");
        assert_eq!(run.parser.malformed_lines(), 0, "{label}");
    }
}

#[test]
fn partial_flushes_never_duplicate_and_never_lose_text() {
    let [s1, c1] = shell_pair("c1");
    // (label, lines, expected text)
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "segment flush without deltas (CLI ignored the flag)",
            lines(&[
                &[segment("Checking.")],
                &[s1.clone(), c1.clone()],
                &[delta("Done"), last("Done"), result("Checking.Done")],
            ]),
            "Checking.\n\nDone",
        ),
        (
            "end-of-turn flush = whole response",
            lines(&[&[delta("A"), segment("A")], &[s1.clone(), c1.clone()], &[delta("B"), last("AB"), result("AB")]]),
            "A\n\nB",
        ),
        (
            "end-of-turn flush = whole response, last segment had no deltas",
            lines(&[&[delta("A"), segment("A")], &[s1.clone(), c1.clone()], &[last("AB"), result("AB")]]),
            "A\n\nB",
        ),
        (
            "end-of-turn flush = last segment, which had no deltas",
            lines(&[&[delta("A"), segment("A")], &[s1.clone(), c1.clone()], &[last("B"), result("AB")]]),
            "A\n\nB",
        ),
        ("flush longer than its deltas adds the tail", lines(&[&[delta("Hel"), last("Hello")]]), "Hello"),
        ("flush that disagrees with the deltas is dropped", lines(&[&[delta("Hello"), last("Goodbye")]]), "Hello"),
        (
            "repeated flushes",
            lines(&[&[delta("A"), segment("A"), segment("A"), last("A"), last("A"), result("A")]]),
            "A",
        ),
        (
            "missing end-of-turn flush: result.result fills the gap",
            lines(&[&[delta("A")], &[s1.clone(), c1.clone()], &[result("AB")]]),
            "A\n\nB",
        ),
        ("result that disagrees adds nothing", lines(&[&[delta("A"), result("Something else")]]), "A"),
        (
            "contradicting flushes are all dropped",
            lines(&[&[delta("Hello"), segment("Goodbye"), last("Goodbye"), result("Hello")]]),
            "Hello",
        ),
        (
            "cumulative output: two segments without a tool between",
            lines(&[&[segment("First."), last("Second."), result("First.Second.")]]),
            "First.Second.",
        ),
        (
            "deltas after a flush without a tool start a new segment",
            lines(&[&[delta("A"), segment("A"), delta("B"), segment("B"), last("AB"), result("AB")]]),
            "AB",
        ),
    ];
    for (label, input, expected) in cases {
        let run = run_lines(true, &input);
        assert_eq!(run.text(), expected, "{label}");
    }
}

#[test]
fn cumulative_segments_are_emitted_whole() {
    let [s1, c1] = shell_pair("c1");
    let input =
        lines(&[&[segment("First.")], &[s1, c1], &[segment("Second."), last("Third."), result("First.Second.Third.")]]);
    let run = run_lines(false, &input);
    assert_eq!(run.text(), "First.\n\nSecond.Third.");
    assert!(!run.parser.is_partial());
}

#[test]
fn paragraph_breaks() {
    let [s1, c1] = shell_pair("c1");
    let [s2, c2] = shell_pair("c2");
    // (label, lines, text as streamed, text as the CLI sent it)
    let cases: Vec<(&str, Vec<String>, &str, &str)> = vec![
        ("never at the very start", lines(&[&[s1.clone(), c1.clone(), delta("Hi")]]), "Hi", "Hi"),
        (
            "one break for several tools",
            lines(&[&[delta("A")], &[s1.clone(), c1.clone(), s2.clone(), c2.clone()], &[delta("B"), delta("C")]]),
            "A\n\nBC",
            "ABC",
        ),
        (
            "previous text ends with a newline",
            lines(&[&[delta("A\n")], &[s1.clone(), c1.clone()], &[delta("B")]]),
            "A\n\nB",
            "A\nB",
        ),
        (
            "previous text ends with a blank line",
            lines(&[&[delta("A\n\n")], &[s1.clone(), c1.clone()], &[delta("B")]]),
            "A\n\nB",
            "A\n\nB",
        ),
        (
            "next text starts with a newline",
            lines(&[&[delta("A")], &[s1.clone(), c1.clone()], &[delta("\nB")]]),
            "A\n\nB",
            "A\nB",
        ),
        (
            "next text starts with a blank line",
            lines(&[&[delta("A")], &[s1.clone(), c1.clone()], &[delta("\n\n\nB")]]),
            "A\n\n\nB",
            "A\n\n\nB",
        ),
        ("no tool, no break", lines(&[&[delta("A"), delta("B")]]), "AB", "AB"),
        (
            "a tool completing without a start still separates",
            lines(&[&[delta("A"), c1.clone(), delta("B")]]),
            "A\n\nB",
            "AB",
        ),
    ];
    for (label, input, expected, raw) in cases {
        let run = run_lines(true, &input);
        assert_eq!(run.text(), expected, "{label}");
        assert_eq!(run.parser.raw_streamed(), raw, "{label}: raw");
    }
}

#[test]
fn thinking_blocks_are_closed() {
    let [s1, c1] = shell_pair("c1");
    let cases: Vec<(&str, Vec<String>, Vec<StreamEvent>)> = vec![
        (
            "text without thinking/completed",
            vec![thinking("hmm"), delta("Answer")],
            vec![StreamEvent::Thinking("hmm".into()), StreamEvent::ThinkingDone, StreamEvent::Text("Answer".into())],
        ),
        (
            "tool call without thinking/completed",
            vec![thinking("hmm"), s1.clone()],
            vec![StreamEvent::Thinking("hmm".into()), StreamEvent::ThinkingDone, started_event("c1", "shell", "true")],
        ),
        (
            "EOF without thinking/completed",
            vec![thinking("hmm")],
            vec![StreamEvent::Thinking("hmm".into()), StreamEvent::ThinkingDone],
        ),
        ("completed without deltas", vec![thinking_done(), delta("A")], vec![StreamEvent::Text("A".into())]),
        (
            "two blocks",
            vec![
                thinking("a"),
                thinking_done(),
                s1.clone(),
                c1.clone(),
                thinking("b"),
                thinking_done(),
                thinking_done(),
            ],
            vec![
                StreamEvent::Thinking("a".into()),
                StreamEvent::ThinkingDone,
                started_event("c1", "shell", "true"),
                completed_event("c1", "shell", "true", ToolOutcome::Success),
                StreamEvent::Thinking("b".into()),
                StreamEvent::ThinkingDone,
            ],
        ),
        ("empty thinking text", vec![thinking(""), delta("A")], vec![StreamEvent::Text("A".into())]),
    ];
    check_events(cases);
}

#[test]
fn garbage_and_invalid_utf8_are_counted_not_fatal() {
    let deep = "[".repeat(100_000);
    let garbage: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"   \r".to_vec(),
        b"not json at all".to_vec(),
        b"{".to_vec(),
        b"[1,2]".to_vec(),
        b"42".to_vec(),
        b"\"string\"".to_vec(),
        b"null".to_vec(),
        b"{\"type\":".to_vec(),
        b"T: Named models unavailable".to_vec(),
        deep.into_bytes(),
        b"\xff\xfe\x00garbage".to_vec(),
        b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\"}]},\"timestamp_ms\":1}".to_vec(),
        b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"bad escape \\x\"}]}}".to_vec(),
    ];
    let mut input = garbage.clone();
    input.push(delta("still works").into_bytes());
    input.push(b"\xef\xbb\xbf".iter().copied().chain(delta(" after a BOM").into_bytes()).collect());
    input.push(format!("{}\r", delta(" and CRLF")).into_bytes());
    let run = run_lines(true, &input);
    assert_eq!(run.text(), "still works after a BOM and CRLF");
    assert_eq!(run.parser.malformed_lines(), 12);
    assert_eq!(run.parser.ignored_lines(), 0);
    assert!(run.result.is_none());
}

#[test]
fn unknown_events_are_ignored_and_counted() {
    let input = [
        r#"{"type":"connection","subtype":"reconnecting","session_id":"s","timestamp_ms":1,"attempt":1,"endpoint_url":"https://x"}"#,
        r#"{"type":"retry","subtype":"starting","session_id":"s","timestamp_ms":1,"attempt":1,"is_resume":true}"#,
        r#"{"type":"system","subtype":"task_notification","session_id":"s"}"#,
        r#"{"type":"system","subtype":"init"}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"prompt echo"}]},"session_id":"s"}"#,
        r#"{"type":"interaction_query","subtype":"response","query_type":"shellRequestQuery","response":{"id":7}}"#,
        r#"{"type":"tool_call","subtype":"updated","call_id":"x","tool_call":{}}"#,
        r#"{"type":"thinking","subtype":"summary","text":"?"}"#,
        r#"{"type":"brand_new_thing","payload":{"deep":[1,2,{"x":null}]}}"#,
        r#"{"no_type":true}"#,
        r#"{"type":42}"#,
    ];
    let run = run_lines(false, &input);
    assert_eq!(run.events, vec![]);
    assert_eq!(run.parser.ignored_lines(), input.len() as u64);
    assert_eq!(run.parser.malformed_lines(), 0);
}

#[test]
fn content_blocks() {
    let cases: &[(Value, &str)] = &[
        (
            json!([{"type":"text","text":"Hello, "},{"type":"image","source":{"data":"..."}},{"type":"tool_use","text":"NOT"},{"type":"text","text":"world"}]),
            "Hello, world",
        ),
        (json!("a bare string"), "a bare string"),
        (json!({"type":"text","text":"a single block"}), "a single block"),
        (
            json!([1, null, {"type":"text","text":5}, "bare element", {"text":"untyped block"}]),
            "bare elementuntyped block",
        ),
        (json!([]), ""),
        (json!(null), ""),
    ];
    for (content, expected) in cases {
        let line = json!({"type":"assistant","message":{"role":"assistant","content":content},"extra":{"future":[1]}})
            .to_string();
        assert_eq!(run_lines(false, &[line]).text(), *expected, "{content}");
    }
}

fn completed_with(tool_call: Value) -> (String, String, ToolOutcome) {
    let run = run_lines(false, &[tool("completed", "id", tool_call.clone())]);
    match run.events.as_slice() {
        [StreamEvent::ToolCompleted { tool, summary, outcome, .. }] => (tool.clone(), summary.clone(), outcome.clone()),
        other => panic!("{tool_call}: {other:?}"),
    }
}

#[test]
fn tool_names_and_summaries() {
    let cases: &[(Value, &str, &str)] = &[
        (json!({"shellToolCall":{"args":{"command":"cargo test \\\n  --all"}}}), "shell", "cargo test \\   --all"),
        (json!({"readToolCall":{"args":{"path":"src/main.rs","offset":10}}}), "read", "src/main.rs"),
        (json!({"editToolCall":{"args":{"path":"/a/b.rs","streamContent":"fn main() {}"}}}), "edit", "/a/b.rs"),
        (json!({"writeToolCall":{"args":{"path":"new.txt","fileText":"x"}}}), "write", "new.txt"),
        (json!({"deleteToolCall":{"args":{"path":"old.txt"}}}), "delete", "old.txt"),
        (json!({"grepToolCall":{"args":{"pattern":"TODO","path":"src"}}}), "grep", "TODO in src"),
        (json!({"grepToolCall":{"args":{"pattern":"fn\\s+main","path":""}}}), "grep", "fn\\s+main"),
        (json!({"globToolCall":{"args":{"globPattern":"**/*.rs","targetDirectory":"/p"}}}), "glob", "**/*.rs"),
        (json!({"lsToolCall":{"args":{"path":"/p","ignore":[]}}}), "ls", "/p"),
        (
            json!({"mcpToolCall":{"args":{"name":"github-create_issue","args":{"title":"t"},"providerIdentifier":"github","toolName":"create_issue"}}}),
            "mcp",
            "github/create_issue",
        ),
        (json!({"mcpToolCall":{"args":{"name":"lookup"}}}), "mcp", "lookup"),
        (json!({"webFetchToolCall":{"args":{"url":"https://example.com/a"}}}), "webFetch", "https://example.com/a"),
        (json!({"webSearchToolCall":{"args":{"searchTerm":"rust serde borrow"}}}), "webSearch", "rust serde borrow"),
        (
            json!({"updateTodosToolCall":{"args":{"todos":[{"id":"1","content":"x","status":"TODO_STATUS_PENDING"}]}}}),
            "todos",
            "",
        ),
        (
            json!({"semSearchToolCall":{"args":{"query":"where is auth handled","targetDirectories":[]}}}),
            "search",
            "where is auth handled",
        ),
        (json!({"readLintsToolCall":{"args":{"paths":["a.rs"]}}}), "readLints", ""),
        (json!({"futureThingToolCall":{"args":{"url":"https://x"}}}), "futureThing", "https://x"),
        (json!({"shellToolCall":{}}), "shell", ""),
        (json!({"shellToolCall":{"args":{"command":42}}}), "shell", ""),
        (json!({"shellToolCall":"not an object"}), "shell", ""),
        // Sibling keys first, in any order (docs/cursor-cli.md §4.8).
        (
            json!({"toolCallId":"x","startedAtMs":"1","hookAdditionalContexts":[],"completedAtMs":"2","readToolCall":{"args":{"path":"p"}}}),
            "read",
            "p",
        ),
        // Legacy function shape: arguments as a JSON string, or as an object.
        (
            json!({"function":{"name":"run_terminal_cmd","arguments":"{\"command\":\"ls -la\"}"}}),
            "run_terminal_cmd",
            "ls -la",
        ),
        (json!({"function":{"name":"read_file","arguments":{"path":"/x"}}}), "read_file", "/x"),
        (json!({"function":{"name":"odd","arguments":"not json"}}), "odd", ""),
        (json!({"function":{"arguments":"{}"}}), "function", ""),
        (json!({}), "unknown", ""),
    ];
    for (tool_call, tool, summary) in cases {
        let (got_tool, got_summary, _) = completed_with(tool_call.clone());
        assert_eq!((got_tool.as_str(), got_summary.as_str()), (*tool, *summary), "{tool_call}");
    }

    let long = "x".repeat(500);
    let (_, summary, _) = completed_with(json!({"shellToolCall":{"args":{"command":long}}}));
    assert_eq!(summary.chars().count(), SUMMARY_MAX_CHARS);
    assert!(summary.ends_with('…'));
    let exact = "y".repeat(SUMMARY_MAX_CHARS);
    assert_eq!(completed_with(json!({"shellToolCall":{"args":{"command":exact.clone()}}})).1, exact);
}

#[test]
fn tool_outcomes() {
    let failure = |detail: &str| ToolOutcome::Failure { detail: Some(detail.into()) };
    let cases: Vec<(Value, ToolOutcome)> = vec![
        (json!({"success":{"exitCode":0}}), ToolOutcome::Success),
        (
            json!({"failure":{"command":"x","exitCode":2,"signal":"","stderr":"boom\n","aborted":false}}),
            failure("exit code 2"),
        ),
        (json!({"failure":{"signal":"SIGKILL","aborted":true}}), failure("signal SIGKILL, aborted")),
        (json!({"failure":{"message":"disk full"}}), failure("disk full")),
        (json!({"failure":{}}), ToolOutcome::Failure { detail: None }),
        (
            json!({"error":{"message":"File not found: x"}}),
            ToolOutcome::Error { message: Some("File not found: x".into()) },
        ),
        (json!({"error":{"error":{"message":"nested"}}}), ToolOutcome::Error { message: Some("nested".into()) }),
        (json!({"error":"plain text"}), ToolOutcome::Error { message: Some("plain text".into()) }),
        (json!({"rejected":{"reason":"User said no"}}), ToolOutcome::Rejected { reason: Some("User said no".into()) }),
        (json!({"rejected":{}}), ToolOutcome::Rejected { reason: None }),
        (json!("rejected"), ToolOutcome::Rejected { reason: None }),
        (json!("Success"), ToolOutcome::Success),
        (json!("failed"), ToolOutcome::Failure { detail: None }),
        (json!(true), ToolOutcome::Success),
        (json!(false), ToolOutcome::Failure { detail: None }),
        (json!({"success":true}), ToolOutcome::Success),
        (json!({"success":false}), ToolOutcome::Failure { detail: None }),
        (json!({"isBackground":false,"failure":{"exitCode":1}}), failure("exit code 1")),
        (json!({"weird":{}}), ToolOutcome::Success),
        (json!({"error":null}), ToolOutcome::Success),
        (json!("something new"), ToolOutcome::Success),
        (
            json!({"rejected":{"reason":"line one\nline two"}}),
            ToolOutcome::Rejected { reason: Some("line one line two".into()) },
        ),
    ];
    for (result, expected) in cases {
        let tool_call = json!({"shellToolCall":{"args":{"command":"x"},"result":result.clone()}});
        assert_eq!(completed_with(tool_call).2, expected, "{result}");
    }
    // Outcome keys directly in the tool body, and a top-level `"result":"rejected"`.
    assert_eq!(completed_with(json!({"shellToolCall":{"args":{},"success":true}})).2, ToolOutcome::Success);
    assert_eq!(
        completed_with(json!({"shellToolCall":{"args":{},"rejected":{"reason":"no"}}})).2,
        ToolOutcome::Rejected { reason: Some("no".into()) }
    );
    let line = json!({"type":"tool_call","subtype":"completed","call_id":"id","tool_call":{"shellToolCall":{"args":{}}},"result":"rejected"}).to_string();
    assert!(matches!(
        run_lines(false, &[line]).events.as_slice(),
        [StreamEvent::ToolCompleted { outcome: ToolOutcome::Rejected { reason: None }, .. }]
    ));
}

#[test]
fn tool_call_ids() {
    let body = json!({"shellToolCall":{"args":{"command":"ls"}}});
    let no_args = json!({"shellToolCall":{"result":{"rejected":{}}}});
    let without_call_id =
        |tool_call: Value| json!({"type":"tool_call","subtype":"started","tool_call":tool_call}).to_string();
    let input = vec![
        tool("started", "call_1\nfc_1", body.clone()),
        // completed without args: tool and summary come from the start.
        tool("completed", "call_1\nfc_1", no_args.clone()),
        // completed without a start.
        tool("completed", "call_2", body.clone()),
        without_call_id(json!({"toolCallId":"sibling\nid","shellToolCall":{"args":{"command":"a"}}})),
        without_call_id(json!({"shellToolCall":{"args":{"command":"b","toolCallId":"inside-args"}}})),
        without_call_id(json!({"shellToolCall":{"args":{"command":"c"}}})),
    ];
    let run = run_lines(false, &input);
    let rejected = ToolOutcome::Rejected { reason: None };
    assert_eq!(
        run.events,
        vec![
            started_event("call_1\nfc_1", "shell", "ls"),
            completed_event("call_1\nfc_1", "shell", "ls", rejected),
            completed_event("call_2", "shell", "ls", ToolOutcome::Success),
            started_event("sibling\nid", "shell", "a"),
            started_event("inside-args", "shell", "b"),
            started_event("tool-1", "shell", "c"),
        ]
    );
}

#[test]
fn permission_requests() {
    let cases: &[(Value, &str, &str)] = &[
        (
            json!({"type":"interaction_query","subtype":"request","query_type":"webFetchRequestQuery","query":{"id":3,"webFetchRequestQuery":{"args":{"url":"https://example.com"},"skipApproval":false}}}),
            "webFetchRequestQuery",
            "https://example.com",
        ),
        (
            json!({"type":"interaction_query","subtype":"request","query":{"webSearchRequestQuery":{"args":{"searchTerm":"weather"}},"id":4}}),
            "webSearchRequestQuery",
            "weather",
        ),
        (
            json!({"type":"interaction_query","subtype":"request","query_type":"shellRequestQuery","query":{"id":1,"shellRequestQuery":{"args":{"command":"rm -rf /tmp/x\necho done"}}}}),
            "shellRequestQuery",
            "rm -rf /tmp/x echo done",
        ),
        (json!({"type":"interaction_query","subtype":"request"}), "unknown", ""),
    ];
    for (line, query_type, summary) in cases {
        let run = run_lines(false, &[line.to_string()]);
        assert_eq!(run.permissions(), vec![(*query_type, *summary)], "{line}");
    }
}

#[test]
fn results() {
    let base = json!({"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","request_id":"r","duration_ms":12});
    let with = |patch: Value| {
        let mut line = base.clone();
        if let (Some(line), Some(patch)) = (line.as_object_mut(), patch.as_object()) {
            for (k, v) in patch {
                line.insert(k.clone(), v.clone());
            }
        }
        run_lines(false, &[line.to_string()])
    };
    let cases: Vec<(Value, bool, Option<Usage>, &str)> = vec![
        (json!({}), true, None, "ok"),
        (json!({"is_error":true}), false, None, ""),
        (json!({"subtype":"error_during_execution"}), false, None, ""),
        (json!({"subtype":null}), false, None, ""),
        (json!({"is_error":"yes"}), true, None, "ok"),
        (json!({"usage":{"inputTokens":5}}), true, Some(Usage { input_tokens: 5, ..Usage::default() }), "ok"),
        (
            json!({"usage":{"input_tokens":1,"output_tokens":2,"cache_read_tokens":3,"cache_write_tokens":4}}),
            true,
            Some(Usage {
                input_tokens: 1,
                output_tokens: 2,
                cache_read_tokens: 3,
                cache_write_tokens: 4,
                ..Usage::default()
            }),
            "ok",
        ),
        (
            json!({"usage":{"inputTokens":"7","outputTokens":-1,"cacheReadTokens":2.0,"cacheWriteTokens":null}}),
            true,
            Some(Usage { input_tokens: 7, cache_read_tokens: 2, ..Usage::default() }),
            "ok",
        ),
        (json!({"usage":"n/a"}), true, None, "ok"),
    ];
    for (patch, success, usage, fallback_text) in cases {
        let run = with(patch.clone());
        let result = run.result.clone().unwrap_or_else(|| panic!("{patch}: no result"));
        assert_eq!((result.success, result.usage), (success, usage), "{patch}");
        assert_eq!(run.text(), fallback_text, "{patch}: fallback only for a successful turn");
        assert_eq!((result.request_id.as_deref(), result.duration_ms), (Some("r"), Some(12)));
    }
    // A second result is ignored; the first one stays.
    let mut parser = StreamParser::new(false);
    let mut events = Vec::new();
    parser.push_line(result("first").as_bytes(), &mut events);
    // Emitted at once (the caller stops reading), after its fallback text.
    let first = match events.as_slice() {
        [StreamEvent::Text(text), StreamEvent::Result(first)] if text == "first" => first.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(first.text, "first");
    parser.push_line(result("second").as_bytes(), &mut events);
    assert_eq!(parser.ignored_lines(), 1);
    assert_eq!(parser.finish(&mut events), Some(first));
    assert_eq!(events.len(), 2);
}

#[test]
fn error_envelope_and_init() {
    let input = [
        r#"{"type":"error","message":"quota exceeded for this workspace"}"#,
        r#"{"type":"error","error":"other shape"}"#,
        r#"{"type":"error"}"#,
        r#"{"type":"system","subtype":"init","session_id":"abc","model":null}"#,
    ];
    assert_eq!(
        run_lines(false, &input).events,
        vec![
            StreamEvent::ErrorEnvelope { message: "quota exceeded for this workspace".into() },
            StreamEvent::ErrorEnvelope { message: "other shape".into() },
            StreamEvent::ErrorEnvelope { message: String::new() },
            StreamEvent::Init { session_id: "abc".into(), model: None },
        ]
    );
}

fn raw_delta(escaped_text: &str) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"{escaped_text}"}}]}},"session_id":"s","timestamp_ms":1}}"#
    )
}
fn raw_thinking(escaped_text: &str) -> String {
    format!(r#"{{"type":"thinking","subtype":"delta","text":"{escaped_text}","session_id":"s","timestamp_ms":1}}"#)
}

#[test]
fn lone_surrogates_are_repaired() {
    let text = |t: &str| StreamEvent::Text(t.into());
    let think = |t: &str| StreamEvent::Thinking(t.into());
    let cases: Vec<(&str, Vec<String>, Vec<StreamEvent>)> = vec![
        (
            "pair split across two deltas",
            vec![raw_delta(r"smile \ud83d"), raw_delta(r"\ude00 ok")],
            vec![text("smile "), text("😀 ok")],
        ),
        ("upper-case hex", vec![raw_delta(r"a\uD83D"), raw_delta(r"\uDE00b")], vec![text("a"), text("😀b")]),
        ("delta holding only the high half", vec![raw_delta(r"\ud83d"), raw_delta(r"\ude00")], vec![text("😀")]),
        ("lone high inside a delta", vec![raw_delta(r"a\ud83db")], vec![text("a\u{fffd}b")]),
        ("lone low inside a delta", vec![raw_delta(r"a\ude00b")], vec![text("a\u{fffd}b")]),
        ("low half with nothing pending", vec![raw_delta(r"\ude00x")], vec![text("\u{fffd}x")]),
        (
            "high half not followed by its low",
            vec![raw_delta(r"a\ud83d"), delta("next")],
            vec![text("a"), text("\u{fffd}next")],
        ),
        ("high half at EOF", vec![raw_delta(r"end\ud83d")], vec![text("end"), text("\u{fffd}")]),
        (
            "high half then a tool",
            vec![raw_delta(r"a\ud83d"), shell_pair("c")[0].clone()],
            vec![text("a"), text("\u{fffd}"), started_event("c", "shell", "true")],
        ),
        (
            "thinking pair split across deltas",
            vec![raw_thinking(r"x\ud83e"), raw_thinking(r"\udd14y")],
            vec![think("x"), think("🤔y"), StreamEvent::ThinkingDone],
        ),
        (
            "pending text half, then thinking",
            vec![raw_delta(r"a\ud83d"), thinking("t")],
            vec![text("a"), text("\u{fffd}"), think("t"), StreamEvent::ThinkingDone],
        ),
        ("proper pair needs no repair", vec![raw_delta(r"\ud83d\ude00")], vec![text("😀")]),
        (
            "two trailing halves are ambiguous",
            vec![format!(
                r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"a\ud83d"}},{{"type":"text","text":"b\ud83d"}}]}},"timestamp_ms":1}}"#
            )],
            vec![text("a\u{fffd}b\u{fffd}")],
        ),
        ("escaped backslash is not an escape", vec![raw_delta(r"C:\\ud83d")], vec![text(r"C:\ud83d")]),
    ];
    check_events(cases);
    assert_eq!(run_lines(true, &[raw_delta(r"\ud83d\ude00")]).parser.repaired_lines(), 0);
    assert_eq!(run_lines(true, &[raw_delta(r"a\ud83d"), raw_delta(r"\ude00")]).parser.repaired_lines(), 2);

    // Outside text deltas an edge surrogate is just lone: U+FFFD in the summary.
    let line = r#"{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{"shellToolCall":{"args":{"command":"echo \ud83d"}}}}"#;
    assert_eq!(run_lines(false, &[line]).started(), vec![("shell", "echo \u{fffd}")]);
    // And the result text (used as fallback) is repaired the same way.
    let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"x\ud83d"}"#;
    assert_eq!(run_lines(false, &[line]).text(), "x\u{fffd}");
    // A broken line that has nothing to do with surrogates stays malformed.
    assert_eq!(run_lines(false, &[r#"{"text":"\ud83d", oops}"#]).parser.malformed_lines(), 1);
}

#[test]
fn never_panics_on_truncated_or_mutated_lines() {
    let fixtures = [
        "02-partial-output-deltas.jsonl",
        "04-tool-calls-shell-edit-read.jsonl",
        "07-unicode-emoji.jsonl",
        "10-permission-query-rejected.jsonl",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let specials = [b'"', b'\\', b'{', b'}', b'[', b']', b':', b',', b'u', b'd', b'8', 0xff, 0xc3, b'\n'];
    for fixture in fixtures {
        let bytes = std::fs::read(format!("{FIXTURES}{fixture}")).unwrap_or_default();
        for partial in [false, true] {
            let mut parser = StreamParser::new(partial);
            let mut events = Vec::new();
            for line in bytes.split(|&b| b == b'\n') {
                // Every prefix of the line (cut inside escapes and multi-byte characters).
                for cut in 0..line.len() {
                    parser.push_line(&line[..cut], &mut events);
                }
                // Random byte substitutions.
                for _ in 0..40 {
                    let mut mutated = line.to_vec();
                    for _ in 0..=(next() % 4) {
                        if mutated.is_empty() {
                            break;
                        }
                        let at = (next() % mutated.len() as u64) as usize;
                        mutated[at] = specials[(next() % specials.len() as u64) as usize];
                    }
                    parser.push_line(&mutated, &mut events);
                }
                parser.push_line(line, &mut events);
            }
            let _ = parser.finish(&mut events);
        }
    }
}

/// Found by fuzzing: surrogate halves split across thinking and text deltas, then tool calls and
/// no `result`. Whatever `finish()` adds must keep the streamed text and the Text events equal.
#[test]
fn fuzz_regression_finish_after_split_surrogates() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/fuzz-regressions/stream-parser-finish-after-surrogates.jsonl"
    );
    let data = std::fs::read(path).unwrap();
    for partial in [false, true] {
        let mut parser = StreamParser::new(partial);
        let mut events = Vec::new();
        let mut text = String::new();
        for line in data.split(|&b| b == b'\n') {
            let from = events.len();
            parser.push_line(line, &mut events);
            for e in &events[from..] {
                if let StreamEvent::Text(t) = e {
                    text.push_str(t);
                }
            }
            assert_eq!(text, parser.streamed_text(), "partial={partial}");
        }
        let from = events.len();
        let _ = parser.finish(&mut events);
        let added: Vec<_> = events[from..]
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        for t in &added {
            text.push_str(t);
        }
        assert_eq!(text, parser.streamed_text(), "partial={partial}, finish added {added:?}");
        // Only the held-back half, as U+FFFD; here it opens the segment after the tool call, so
        // the paragraph break comes first.
        assert_eq!(added, ["\n\n\u{fffd}"], "partial={partial}: events {:?}", &events[from..]);
    }
}

#[test]
fn lenient_scalars() {
    // `duration_ms`: an unsigned integer, also as an integral float or a decimal string.
    let cases: &[(&str, Option<u64>)] = &[
        ("12", Some(12)),
        ("\"12\"", Some(12)),
        ("\" 7 \"", Some(7)),
        ("2.0", Some(2)),
        ("2.5", None),
        ("-1", None),
        ("\"x\"", None),
        ("null", None),
        ("[12]", None),
        ("18446744073709551615", Some(u64::MAX)),
    ];
    for (value, expected) in cases {
        let line = format!(r#"{{"type":"result","subtype":"success","result":"","duration_ms":{value}}}"#);
        let run = run_lines(false, &[line]);
        assert_eq!(run.result.and_then(|r| r.duration_ms), *expected, "{value}");
    }
    // `timestamp_ms` / `model_call_id` count when present and neither `null` nor `""`: a delta
    // has the first and not the second (a non-partial parser switches to partial on one).
    let cases: &[(&str, &str, bool)] = &[
        ("1", "null", true),
        ("0", "\"\"", true),
        ("{}", "null", true),
        ("\"\"", "null", false),
        ("null", "null", false),
        ("1", "\"r-0\"", false),
        ("1", "false", false),
    ];
    for (timestamp, model_call_id, is_delta) in cases {
        let line = format!(
            r#"{{"type":"assistant","message":{{"content":"x"}},"timestamp_ms":{timestamp},"model_call_id":{model_call_id}}}"#
        );
        let run = run_lines(false, &[line]);
        assert_eq!(run.parser.is_partial(), *is_delta, "{timestamp} / {model_call_id}");
        assert_eq!(run.text(), "x");
    }
}

#[test]
fn repeated_keys() {
    // Both spellings of a key in one object: camelCase wins, the line is not lost.
    let line = r#"{"type":"result","subtype":"success","result":"","usage":{"inputTokens":5,"input_tokens":9,"output_tokens":2}}"#;
    let usage = run_lines(false, &[line]).result.and_then(|r| r.usage);
    assert_eq!(usage, Some(Usage { input_tokens: 5, output_tokens: 2, ..Usage::default() }));
    assert_eq!(
        completed_with(json!({"shellToolCall":{"result":{"failure":{"exitCode":1,"exit_code":2}}}})).2,
        ToolOutcome::Failure { detail: Some("exit code 1".into()) }
    );

    // Objects keyed by data keep their rules: the first tool kind, the first outcome entry that
    // counts (not `null`, not `false` unless `"success": false`), the first query; the last
    // `toolCallId`.
    let line = r#"{"type":"tool_call","subtype":"started","tool_call":{"toolCallId":"a","readToolCall":{"args":{"path":"p"}},"toolCallId":"b","shellToolCall":{"args":{"command":"c"}}}}"#;
    assert_eq!(run_lines(false, &[line]).events, vec![started_event("b", "read", "p")]);
    let line = r#"{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{"shellToolCall":{"args":{"command":"one"}},"shellToolCall":{"args":{"command":"two"}}}}"#;
    assert_eq!(run_lines(false, &[line]).started(), vec![("shell", "one")]);
    let outcome_of = |body: &str| {
        let line = format!(
            r#"{{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{{"shellToolCall":{body}}}}}"#
        );
        match run_lines(false, &[line]).events.as_slice() {
            [StreamEvent::ToolCompleted { outcome, .. }] => outcome.clone(),
            other => panic!("{body}: {other:?}"),
        }
    };
    let cases: &[(&str, ToolOutcome)] = &[
        (
            r#"{"result":{"error":null,"rejected":false,"failure":{"exitCode":3},"success":{}}}"#,
            ToolOutcome::Failure { detail: Some("exit code 3".into()) },
        ),
        (r#"{"result":{"success":false,"failure":{"exitCode":3}}}"#, ToolOutcome::Failure { detail: None }),
        (
            r#"{"result":{"rejected":{"reason":"first"},"rejected":{"reason":"second"}}}"#,
            ToolOutcome::Rejected { reason: Some("first".into()) },
        ),
        (
            r#"{"error":false,"rejected":{"reason":"direct"},"failure":{}}"#,
            ToolOutcome::Rejected { reason: Some("direct".into()) },
        ),
        // `result` (the last one) wins over outcome keys in the body.
        (r#"{"success":{},"result":"failed","result":"rejected"}"#, ToolOutcome::Rejected { reason: None }),
        (r#"{"rejected":{},"result":"no idea"}"#, ToolOutcome::Rejected { reason: None }),
    ];
    for (body, expected) in cases {
        assert_eq!(&outcome_of(body), expected, "{body}");
    }
    let line = r#"{"type":"interaction_query","subtype":"request","query":{"id":1,"shellRequestQuery":"no body","shellRequestQuery":{"args":{"command":"a"}},"webFetchRequestQuery":{"args":{"url":"u"}}}}"#;
    assert_eq!(run_lines(false, &[line]).permissions(), vec![("shellRequestQuery", "a")]);

    // A key repeated in a derived object fails the line (serde rejects a duplicate field; the
    // CLI's JSON.stringify never writes one); the parser goes on.
    let input = [
        r#"{"type":"assistant","message":{"content":"a"},"session_id":"s","session_id":"t"}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"b","text":"c"}]}}"#,
        r#"{"type":"assistant","message":{"content":"d"}}"#,
    ];
    let run = run_lines(false, &input);
    assert_eq!(run.text(), "d");
    assert_eq!(run.parser.malformed_lines(), 2);
}
