//! The stream parser's tests: golden event files for every fixture (the CLI transcripts, the fuzz
//! regressions, the `*.cases` of `tests/fixtures/stream-parser/`), each through the fuzz target's
//! invariant check, and the few properties a golden file cannot show.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::invariants::run_checked;
use super::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cursor-cli/");

// -----------------------------------------------------------------------------------------
// Golden event files: every input under `tests/fixtures/` the parser reads (the CLI transcripts,
// the fuzz regressions, the case files of `tests/fixtures/stream-parser/`) has its events, as both
// parsers saw them, in `tests/fixtures/stream-parser/<input name>.events`. Every input also goes
// through the invariant check the fuzz target uses. `UPDATE_GOLDEN=1` writes the files anew; read
// their diff before committing it.

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/stream-parser/");

/// One input of a golden file: the whole of a transcript, or one case of a `.cases` file.
struct GoldenInput {
    /// `None` for a transcript; the `### label` of a case.
    label: Option<String>,
    lines: Vec<Vec<u8>>,
}

/// Every input file with its inputs: transcripts (`*.jsonl`, `*.json`) of the CLI and of the fuzz
/// regressions, and the `*.cases` files: a comment header (`#` lines), then cases, each a
/// `### label` line followed by the stdout lines of that case.
fn golden_inputs() -> Vec<(PathBuf, Vec<GoldenInput>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files = Vec::new();
    for (dir, suffixes) in [
        ("cursor-cli", &[".jsonl", ".json"][..]),
        ("fuzz-regressions", &["stream-parser-"][..]),
        ("stream-parser", &[".cases"][..]),
    ] {
        let mut names: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                suffixes.iter().any(|s| name.ends_with(s) || name.starts_with(s)) && !name.ends_with(".events")
            })
            .collect();
        names.sort();
        files.extend(names);
    }
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let lines = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec);
            let inputs = if path.extension().is_some_and(|e| e == "cases") {
                let mut cases: Vec<GoldenInput> = Vec::new();
                for line in lines {
                    match line.strip_prefix(b"### ") {
                        Some(label) => cases.push(GoldenInput {
                            label: Some(String::from_utf8_lossy(label).into_owned()),
                            lines: Vec::new(),
                        }),
                        None => match cases.last_mut() {
                            Some(case) => case.lines.push(line),
                            None => assert!(
                                line.is_empty() || line.starts_with(b"#"),
                                "{}: only comments before the first `### label`",
                                path.display()
                            ),
                        },
                    }
                }
                // The file's last newline is not an empty line of its last case.
                for case in &mut cases {
                    while case.lines.last().is_some_and(|l| l.is_empty()) {
                        case.lines.pop();
                    }
                }
                cases
            } else {
                vec![GoldenInput { label: None, lines: lines.collect() }]
            };
            (path, inputs)
        })
        .collect()
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

fn quoted_or_dash(text: Option<&str>) -> String {
    text.map_or_else(|| "-".into(), quoted)
}

/// One line per event, strings JSON-quoted so a diff shows every character.
fn render_event(event: &StreamEvent) -> String {
    match event {
        StreamEvent::Init { session_id, model } => {
            format!("init session={} model={}", quoted(session_id), quoted_or_dash(model.as_deref()))
        }
        StreamEvent::Text(t) => format!("text {}", quoted(t)),
        StreamEvent::Thinking(t) => format!("thinking {}", quoted(t)),
        StreamEvent::ThinkingDone => "thinking done".into(),
        StreamEvent::ToolStarted { call_id, tool, summary } => {
            format!("tool started {} {} call={}", quoted(tool), quoted(summary), quoted(call_id))
        }
        StreamEvent::ToolCompleted { call_id, tool, summary, outcome } => {
            let outcome = match outcome {
                ToolOutcome::Success => "success".to_string(),
                ToolOutcome::Failure { detail } => format!("failure {}", quoted_or_dash(detail.as_deref())),
                ToolOutcome::Rejected { reason } => format!("rejected {}", quoted_or_dash(reason.as_deref())),
                ToolOutcome::Error { message } => format!("error {}", quoted_or_dash(message.as_deref())),
            };
            format!("tool completed {} {} {outcome} call={}", quoted(tool), quoted(summary), quoted(call_id))
        }
        StreamEvent::PermissionRequested { query_type, summary } => {
            format!("permission {} {}", quoted(query_type), quoted(summary))
        }
        StreamEvent::ErrorEnvelope { message } => format!("error envelope {}", quoted(message)),
        StreamEvent::Result(r) => {
            let usage = r.usage.as_ref().map_or_else(
                || "-".to_string(),
                |u| {
                    format!(
                        "in {} out {} cache-read {} cache-write {}",
                        u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens
                    )
                },
            );
            format!(
                "result {} text={} session={} request={} duration_ms={} usage={usage}",
                if r.success { "success" } else { "failure" },
                quoted(&r.text),
                quoted_or_dash(r.session_id.as_deref()),
                quoted_or_dash(r.request_id.as_deref()),
                r.duration_ms.map_or_else(|| "-".into(), |d| d.to_string()),
            )
        }
    }
}

/// The events and counters of one parser, after the invariant check.
fn render_run(lines: &[Vec<u8>], partial: bool) -> Vec<String> {
    let run = run_checked(lines.iter().map(Vec::as_slice), partial);
    let mut out: Vec<String> = run.events.iter().map(render_event).collect();
    let p = &run.parser;
    out.push(format!(
        "-- lines ignored {}, malformed {}, repaired {}; partial handling {}; saw tools {}",
        p.ignored_lines(),
        p.malformed_lines(),
        p.repaired_lines(),
        if p.is_partial() { "yes" } else { "no" },
        if p.saw_tools() { "yes" } else { "no" },
    ));
    out
}

/// Both parsers' views of one input: once when they agree, else one section each.
fn render_input(lines: &[Vec<u8>]) -> Vec<String> {
    let cumulative = render_run(lines, false);
    let partial = render_run(lines, true);
    if cumulative == partial {
        std::iter::once("== either parser".to_string()).chain(cumulative).collect()
    } else {
        std::iter::once("== cumulative parser (no --stream-partial-output)".to_string())
            .chain(cumulative)
            .chain(std::iter::once("== partial parser (--stream-partial-output)".to_string()))
            .chain(partial)
            .collect()
    }
}

fn render_golden(source: &Path, inputs: &[GoldenInput]) -> String {
    let name = source.file_name().unwrap_or_default().to_string_lossy();
    let mut out = vec![format!("# The events StreamParser emits for {name} (stream/tests.rs: golden_event_files)")];
    for input in inputs {
        if let Some(label) = &input.label {
            out.push(String::new());
            out.push(format!("### {label}"));
        }
        out.extend(render_input(&input.lines));
    }
    out.join("\n") + "\n"
}

/// A line diff (longest common subsequence) with three lines of context, `-` expected, `+` actual.
fn line_diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut ops: Vec<(char, usize, &str)> = Vec::new(); // (op, expected line number, text)
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', i + 1, a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', i + 1, a[i]));
            i += 1;
        } else {
            ops.push(('+', i + 1, b[j]));
            j += 1;
        }
    }
    let changed: Vec<usize> = ops.iter().enumerate().filter(|(_, op)| op.0 != ' ').map(|(k, _)| k).collect();
    let mut out = String::new();
    let mut last_shown: Option<usize> = None;
    for (k, (op, line, text)) in ops.iter().enumerate() {
        if !changed.iter().any(|&c| c.abs_diff(k) <= 3) {
            continue;
        }
        if last_shown.is_some_and(|l| l + 1 != k) || last_shown.is_none() {
            out.push_str(&format!("@@ near line {line} of the golden file\n"));
        }
        out.push_str(&format!("{op} {text}\n"));
        last_shown = Some(k);
    }
    out
}

#[test]
fn golden_event_files() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut wanted = std::collections::BTreeSet::new();
    for (source, inputs) in golden_inputs() {
        let name = source.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let golden = Path::new(GOLDEN).join(format!("{name}.events"));
        wanted.insert(golden.clone());
        let Ok(actual) = std::panic::catch_unwind(|| render_golden(&source, &inputs)) else {
            failures.push(format!("{name}: breaks an invariant of stream/invariants.rs (the panic above)"));
            continue;
        };
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if actual == expected {
            continue;
        }
        if update {
            std::fs::write(&golden, &actual).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
            eprintln!("updated {}", golden.display());
        } else if expected.is_empty() {
            failures.push(format!("{name}: no golden file {} (UPDATE_GOLDEN=1 writes it)", golden.display()));
        } else {
            failures.push(format!(
                "{name}: the parser's events differ from {}:\n{}",
                golden.display(),
                line_diff(&expected, &actual)
            ));
        }
    }
    // A golden file whose input is gone would never be checked again.
    for entry in std::fs::read_dir(GOLDEN).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "events") && !wanted.contains(&path) {
            failures.push(format!("{}: a golden file without its input (delete it)", path.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\nIf the change is intended: UPDATE_GOLDEN=1 cargo test -p cursor-bridge --lib golden_event_files, then review the diff of tests/fixtures/stream-parser/",
        failures.join("\n\n")
    );
}

#[test]
fn the_golden_diff_shows_what_changed() {
    let diff = line_diff("a\nb\nc\n", "a\nB\nc\nd\n");
    assert_eq!(diff, "@@ near line 1 of the golden file\n  a\n- b\n+ B\n  c\n+ d\n");
    assert_eq!(line_diff("same\n", "same\n"), "");
}

// -----------------------------------------------------------------------------------------
// What a golden file cannot show: properties across the two parsers, when an event comes out, and
// inputs too large or too broken for a fixture file.

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

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn fixture_lines(fixture: &str) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(format!("{FIXTURES}{fixture}")).unwrap_or_else(|e| panic!("{fixture}: {e}"));
    bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

/// A cumulative transcript fed to a partial-mode parser and vice versa gives the same answer (see
/// the module docs), and a successful turn's text, less the paragraph breaks we insert, is the
/// CLI's own `result.result`.
#[test]
fn every_transcript_reads_alike_in_both_modes_and_matches_its_result() {
    for (source, inputs) in golden_inputs() {
        let name = source.display();
        for input in inputs.iter().filter(|i| i.label.is_none()) {
            let runs = [false, true].map(|partial| run_checked(input.lines.iter().map(Vec::as_slice), partial));
            assert_eq!(text_of(&runs[0].events), text_of(&runs[1].events), "{name}: the two parsers' text");
            for run in &runs {
                if let Some(result) = run.result.as_ref().filter(|r| r.success) {
                    assert_eq!(run.parser.raw_streamed(), result.text, "{name}: text minus breaks = result.result");
                    assert_eq!(
                        run.events.last(),
                        Some(&StreamEvent::Result(result.clone())),
                        "{name}: the result last"
                    );
                }
            }
        }
    }
}

#[test]
fn the_text_format_shows_the_end_of_what_was_streamed() {
    // The text format shows only the last segment; it is the end of what we streamed.
    let run = run_checked(fixture_lines("04-tool-calls-shell-edit-read.jsonl").iter().map(Vec::as_slice), false);
    let last = std::fs::read_to_string(format!("{FIXTURES}04-tool-calls.text-format.txt")).unwrap_or_default();
    assert!(!last.trim().is_empty() && text_of(&run.events).ends_with(last.trim_end()));
}

fn delta(text: &str) -> String {
    json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}, "session_id": "s", "timestamp_ms": 1})
        .to_string()
}
fn result(text: &str) -> String {
    json!({"type": "result", "subtype": "success", "is_error": false, "result": text, "session_id": "s"}).to_string()
}

#[test]
fn the_result_comes_out_of_its_own_line_and_a_second_one_is_ignored() {
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
    let mut input = garbage;
    input.push(delta("still works").into_bytes());
    input.push(b"\xef\xbb\xbf".iter().copied().chain(delta(" after a BOM").into_bytes()).collect());
    input.push(format!("{}\r", delta(" and CRLF")).into_bytes());
    let run = run_checked(input.iter().map(Vec::as_slice), true);
    assert_eq!(text_of(&run.events), "still works after a BOM and CRLF");
    assert_eq!(run.parser.malformed_lines(), 12);
    assert_eq!(run.parser.ignored_lines(), 0);
    assert!(run.result.is_none());
}

/// Every prefix of every line of some transcripts (cut inside escapes and multi-byte characters)
/// and random byte substitutions, through the fuzz target's invariant check.
#[test]
fn truncated_or_mutated_lines_keep_the_invariants() {
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
        let mut stream: Vec<Vec<u8>> = Vec::new();
        for line in fixture_lines(fixture) {
            for cut in 0..line.len() {
                stream.push(line[..cut].to_vec());
            }
            for _ in 0..40 {
                let mut mutated = line.clone();
                for _ in 0..=(next() % 4) {
                    if mutated.is_empty() {
                        break;
                    }
                    let at = (next() % mutated.len() as u64) as usize;
                    mutated[at] = specials[(next() % specials.len() as u64) as usize];
                }
                stream.push(mutated);
            }
            stream.push(line);
        }
        for partial in [false, true] {
            run_checked(stream.iter().map(Vec::as_slice), partial);
        }
    }
}
