//! Throughput of the CLI stream parser alone (`cargo bench -p cursor-bridge --bench parser`), used
//! by `cargo xtask bench`. No harness: prints one JSON line of samples on stdout (a human summary on
//! stderr). Pass `-- --smoke` for a quick run.
//!
//! Workloads, each parsed the way the sidecar parses a turn (`StreamParser::new(true)`, one
//! `push_line` per stdout line, then `finish`):
//! - `fixtures`: every transcript in `tests/fixtures/cursor-cli/*.jsonl`, one parser per file;
//! - `deltas`: a synthetic 100,000-delta turn shaped like the CLI's `--stream-partial-output`
//!   output (1-character deltas), the worst case for per-line cost;
//! - `serdeValue`: the reference — `serde_json::from_slice::<serde_json::Value>` over the fixture
//!   lines, i.e. what merely reading the same JSON costs.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cursor_bridge::backend::cursor::print::stream::{StreamEvent, StreamParser};

fn fixtures() -> Vec<Vec<Vec<u8>>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cursor-cli");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("fixture folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).expect("fixture");
            bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec).collect()
        })
        .collect()
}

fn synthetic_deltas(n: usize) -> Vec<Vec<Vec<u8>>> {
    let session = "0441a3b5-2da9-4a6c-a778-8984c871a78d";
    let alphabet = b"the quick brown fox jumps over the lazy dog ";
    let mut lines = vec![
        format!(
            r#"{{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/tmp/w","session_id":"{session}","model":"Auto","permissionMode":"default"}}"#
        ),
        format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"text","text":"go\n"}}]}},"session_id":"{session}"}}"#
        ),
    ];
    let mut answer = String::with_capacity(n);
    for i in 0..n {
        let c = alphabet[i % alphabet.len()] as char;
        answer.push(c);
        lines.push(format!(
            r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"{c}"}}]}},"session_id":"{session}","timestamp_ms":{}}}"#,
            1_795_982_829_096u64 + i as u64 / 50
        ));
    }
    lines.push(format!(
        r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"{answer}"}}]}},"session_id":"{session}"}}"#
    ));
    lines.push(format!(
        r#"{{"type":"result","subtype":"success","duration_ms":2,"duration_api_ms":2,"is_error":false,"result":"{answer}","session_id":"{session}","request_id":"c016ebd1-b14a-4721-b6f5-4a7040ac47d9","usage":{{"inputTokens":1000,"outputTokens":2,"cacheReadTokens":17920,"cacheWriteTokens":0}}}}"#
    ));
    vec![lines.into_iter().map(String::into_bytes).collect()]
}

/// Bytes as they appear on the CLI's stdout (each line plus its `\n`).
fn bytes_of(files: &[Vec<Vec<u8>>]) -> usize {
    files.iter().flatten().map(|l| l.len() + 1).sum()
}

fn lines_of(files: &[Vec<Vec<u8>>]) -> usize {
    files.iter().map(Vec::len).sum()
}

fn parse_all(files: &[Vec<Vec<u8>>]) -> usize {
    let mut events: Vec<StreamEvent> = Vec::new();
    let mut n = 0;
    for file in files {
        let mut parser = StreamParser::new(true);
        for line in file {
            parser.push_line(black_box(line), &mut events);
            n += events.len();
            events.clear();
        }
        black_box(parser.finish(&mut events));
        events.clear();
    }
    n
}

fn serde_all(files: &[Vec<Vec<u8>>]) -> usize {
    let mut n = 0;
    for line in files.iter().flatten() {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(black_box(line)) {
            n += usize::from(v.is_object());
            black_box(v);
        }
    }
    n
}

/// `samples` measurements of MB/s (1 MB = 10^6 bytes), each repeating `work` for at least `span`.
fn measure(bytes: usize, samples: usize, span: Duration, work: impl Fn() -> usize) -> Vec<f64> {
    black_box(work()); // warm-up
    (0..samples)
        .map(|_| {
            let started = Instant::now();
            let mut rounds = 0u64;
            while started.elapsed() < span {
                black_box(work());
                rounds += 1;
            }
            (bytes as f64 * rounds as f64) / started.elapsed().as_secs_f64() / 1e6
        })
        .collect()
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn list(xs: &[f64]) -> String {
    xs.iter().map(|x| format!("{x:.3}")).collect::<Vec<_>>().join(",")
}

fn main() {
    let smoke = std::env::args().any(|a| a == "--smoke");
    let (samples, span) = if smoke { (3, Duration::from_millis(30)) } else { (30, Duration::from_millis(100)) };

    let fixtures = fixtures();
    let deltas = synthetic_deltas(100_000);
    let (fx_bytes, dl_bytes) = (bytes_of(&fixtures), bytes_of(&deltas));
    let fx = measure(fx_bytes, samples, span, || parse_all(&fixtures));
    let reference = measure(fx_bytes, samples, span, || serde_all(&fixtures));
    let dl = measure(dl_bytes, samples.min(10), span.max(Duration::from_millis(200)), || parse_all(&deltas));
    let dl_lines_per_s: Vec<f64> =
        dl.iter().map(|mbps| mbps * 1e6 / dl_bytes as f64 * lines_of(&deltas) as f64).collect();

    eprintln!(
        "parser: fixtures {:.1} MB/s (serde_json::Value {:.1} MB/s); 100k-delta turn {:.1} MB/s = {:.0} lines/s",
        median(&fx),
        median(&reference),
        median(&dl),
        median(&dl_lines_per_s)
    );
    println!(
        "{{\"parser\":{{\"fixtures\":{{\"files\":{},\"lines\":{},\"bytes\":{fx_bytes},\"mbps\":[{}]}},\"serdeValue\":{{\"bytes\":{fx_bytes},\"mbps\":[{}]}},\"deltas\":{{\"lines\":{},\"bytes\":{dl_bytes},\"mbps\":[{}],\"linesPerSec\":[{}]}}}}}}",
        fixtures.len(),
        lines_of(&fixtures),
        list(&fx),
        list(&reference),
        lines_of(&deltas),
        list(&dl),
        list(&dl_lines_per_s),
    );
}
