//! Classifying a failed CLI run from its stderr (and a `{"type":"error"}` stream envelope), per
//! docs/cursor-cli.md §5.2 (texts), §5.4 (classification keywords) and §10 #2/#3 (what is
//! not known: invalid-key and "Named models unavailable" wording, channel of usage errors).
//!
//! Matching is ASCII-case-insensitive on the ANSI-stripped text, first rule wins, in this order:
//! auth → model → usage limit → rate limit → workspace trust → unknown option → network → other.
//! Auth comes first because a logged-out CLI can fail in any of the later ways too; usage before
//! rate because the usage-limit block is the more specific (and needs a different action).
//! `429` only counts as a whole number (a request id containing `429` is not a rate limit).
//!
//! The `HINT_*` texts are what the person is told to do, for a failed turn and for a missing or
//! logged-out CLI.
//!
//! [`Failure::detail`] is for logs and the editor's "details": the end of stderr, ANSI stripped,
//! control characters removed, secrets redacted, at most [`DETAIL_MAX_CHARS`] characters.

use crate::error::BridgeError;
use crate::util::redact::redact_secrets;
use crate::util::text::{bounded_tail, find_ignore_case, one_line, strip_ansi};
use crate::vocab::ErrorKind;

/// A failed turn, ready for `error.data` (`kind`, `hint`, `detail`) and the error message.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub kind: ErrorKind,
    /// One line a person understands.
    pub message: String,
    /// What to do about it.
    pub hint: String,
    /// Bounded, sanitised stderr excerpt (and the stream error), `None` when both were empty.
    pub detail: Option<String>,
}

pub const DETAIL_MAX_CHARS: usize = 2_000;
/// Stderr text quoted inside a message is cut to this many characters.
const QUOTE_MAX_CHARS: usize = 200;
/// At most this many available model ids are named in an invalid-model message.
const LISTED_MODELS: usize = 5;

/// What to tell a person, by failure: a failed turn's fixes, which `status` and `doctor` also give
/// for a missing or logged-out CLI (the CLI's own hint); doctor's other fixes are the agent's
/// words (`words.rs`).
pub const HINT_AUTH: &str =
    "Run `agent login` in a terminal, or set an API key (command \"Cursor Bridge: Set API Key\").";
pub const HINT_INSTALL: &str =
    "Install the Cursor CLI (`curl https://cursor.com/install -fsS | bash`, see cursor.com/cli), \
     or set `cursorBridge.cliPath` to the `cursor-agent` binary.";
pub const HINT_MODEL: &str = "Pick another model in the model picker (run `agent models` to see yours).";
pub const HINT_USAGE: &str =
    "Wait until your Cursor usage limit resets, or check your plan and spend limit in your Cursor account.";
pub const HINT_RATE: &str = "Cursor is limiting how fast requests may be sent: wait a minute, then try again.";
pub const HINT_NETWORK: &str = "Check your internet connection and proxy settings (HTTPS_PROXY), then try again.";
pub const HINT_TRUST: &str =
    "The bridge passes --trust, so your Cursor CLI is probably too old to know it: run `agent update`.";
pub const HINT_CLI_VERSION: &str = "Your Cursor CLI is too old or too new for this bridge: run `agent update`.";
pub const HINT_GENERIC: &str = "See Cursor Bridge logs for details.";

const AUTH_PATTERNS: &[&str] = &[
    "authentication required",
    "agent login",
    "api key is invalid",
    "invalid api key",
    "not logged in",
    "unauthorized",
    "unauthenticated",
];
const INVALID_KEY_PATTERNS: &[&str] = &["api key is invalid", "invalid api key"];
const MODEL_PATTERNS: &[&str] = &["cannot use this model", "named models unavailable", "model not found"];
const USAGE_PATTERNS: &[&str] = &["usage limit", "spendlimithit", "quota exceeded"];
const RATE_PATTERNS: &[&str] = &["rate limit", "rate-limit", "ratelimit", "too many requests"];
const TRUST_PATTERNS: &[&str] = &["workspace trust required"];
const UNKNOWN_OPTION_PATTERNS: &[&str] = &["unknown option"];
/// Node's error codes; the first one found is named in the message.
const NETWORK_CODES: &[&str] =
    &["ETIMEDOUT", "ECONNRESET", "ECONNREFUSED", "EAI_AGAIN", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH"];
const NETWORK_PATTERNS: &[&str] = &["fetch failed", "network", "socket hang up", "connection lost"];

/// Classifies a run that did not end with exit 0 + a successful `result` (docs/cursor-cli.md §5.1).
/// `exit_code`: `None` when the process was killed by a signal. `stream_error`: the message of a
/// `{"type":"error"}` event seen on stdout, if any.
pub fn classify(exit_code: Option<i32>, stderr: &str, stream_error: Option<&str>) -> Failure {
    let stderr = sanitize(stderr);
    let stream_error = stream_error.map(sanitize).filter(|s| !s.trim().is_empty());
    let text = match &stream_error {
        Some(stream) if !stderr.trim().is_empty() => format!("{stream}\n{stderr}"),
        Some(stream) => stream.clone(),
        None => stderr.clone(),
    };
    let detail = bounded_tail(text.trim(), DETAIL_MAX_CHARS);
    let failure =
        |kind, message: String, hint: &str| Failure { kind, message, hint: hint.to_owned(), detail: detail.clone() };

    if contains_any(&text, AUTH_PATTERNS) {
        let message = if contains_any(&text, INVALID_KEY_PATTERNS) {
            "Cursor rejected the API key.".to_owned()
        } else {
            "The Cursor CLI is not signed in.".to_owned()
        };
        return failure(ErrorKind::AuthRequired, message, HINT_AUTH);
    }
    if contains_any(&text, MODEL_PATTERNS) {
        return failure(ErrorKind::InvalidModel, invalid_model_message(&text), HINT_MODEL);
    }
    if contains_any(&text, USAGE_PATTERNS) {
        let message = match reset_date(&text) {
            Some(date) => format!("You've hit your Cursor usage limit; it resets on {date}."),
            None => "You've hit your Cursor usage limit.".to_owned(),
        };
        return failure(ErrorKind::UsageLimit, message, HINT_USAGE);
    }
    if contains_any(&text, RATE_PATTERNS) || contains_number(&text, "429") {
        return failure(ErrorKind::RateLimited, "Cursor is rate-limiting requests right now.".to_owned(), HINT_RATE);
    }
    if contains_any(&text, TRUST_PATTERNS) {
        let message = "The Cursor CLI refused to run because the workspace is not trusted.".to_owned();
        return failure(ErrorKind::CliFailed, message, HINT_TRUST);
    }
    if contains_any(&text, UNKNOWN_OPTION_PATTERNS) {
        let message = match quoted_after(&text, "unknown option") {
            Some(option) => format!("The Cursor CLI does not know the option `{option}`."),
            None => "The Cursor CLI rejected one of the bridge's options.".to_owned(),
        };
        return failure(ErrorKind::CliFailed, message, HINT_CLI_VERSION);
    }
    let network_code = NETWORK_CODES.iter().find(|code| find_ignore_case(&text, code).is_some());
    if network_code.is_some() || contains_any(&text, NETWORK_PATTERNS) {
        let message = match network_code {
            Some(code) => format!("The Cursor CLI could not reach Cursor's servers ({code})."),
            None => "The Cursor CLI could not reach Cursor's servers.".to_owned(),
        };
        return failure(ErrorKind::Network, message, HINT_NETWORK);
    }
    failure(ErrorKind::CliFailed, generic_message(exit_code, &text), HINT_GENERIC)
}

fn generic_message(exit_code: Option<i32>, text: &str) -> String {
    let status = match exit_code {
        None => "was stopped by a signal".to_owned(),
        // docs/cursor-cli.md §5.1: killed by a signal → 128 + signal number.
        Some(code) if (129..=159).contains(&code) => {
            format!("exited with code {code} (signal {})", code - 128)
        }
        Some(0) => "exited (code 0) without finishing the turn".to_owned(),
        Some(code) => format!("exited with code {code}"),
    };
    match text.lines().map(str::trim).find(|line| !line.is_empty()) {
        Some(line) => format!("The Cursor CLI {status}: {}", one_line(line, QUOTE_MAX_CHARS)),
        None if exit_code == Some(0) => format!("The Cursor CLI {status}."),
        None => format!("The Cursor CLI {status} without an error message."),
    }
}

/// `Cannot use this model: <id>. Available models: a, b, c` (docs/cursor-cli.md §5.2) → a message
/// naming the model and a few of the available ids.
fn invalid_model_message(text: &str) -> String {
    const MODEL_MARKER: &str = "cannot use this model:";
    const LIST_MARKER: &str = "available models:";
    let model = find_ignore_case(text, MODEL_MARKER).and_then(|at| leading_id(&text[at + MODEL_MARKER.len()..]));
    let mut message = match model {
        Some(model) => format!("Cursor cannot use the model `{model}` with this account"),
        None => "Cursor cannot use the selected model with this account".to_owned(),
    };
    let available: Vec<&str> = find_ignore_case(text, LIST_MARKER)
        .map(|at| {
            let list = text[at + LIST_MARKER.len()..].lines().next().unwrap_or_default();
            list.split(',').filter_map(leading_id).collect()
        })
        .unwrap_or_default();
    if !available.is_empty() {
        let shown = available.iter().take(LISTED_MODELS).copied().collect::<Vec<_>>().join(", ");
        message.push_str(&format!("; available: {shown}"));
        if available.len() > LISTED_MODELS {
            message.push_str(&format!(" and {} more", available.len() - LISTED_MODELS));
        }
    }
    message.push('.');
    message
}

/// The model id at the start of `s` (id grammar of docs/cursor-cli.md §7.1), without a
/// sentence-ending dot.
fn leading_id(s: &str) -> Option<&str> {
    let s = s.trim_start();
    let end =
        s.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '-'))).unwrap_or(s.len());
    let id = s[..end].trim_end_matches('.');
    (!id.is_empty()).then_some(id)
}

/// The reset date in the usage-limit block: `chatMessage: *… ends on 10/2/2026.*`
/// (docs/cursor-cli.md §5.2). Looks in the `chatMessage:` line first, then in any line mentioning
/// "reset".
fn reset_date(text: &str) -> Option<&str> {
    let chat_lines = text.lines().filter(|line| find_ignore_case(line, "chatmessage:").is_some());
    let reset_lines = text.lines().filter(|line| find_ignore_case(line, "reset").is_some());
    chat_lines.chain(reset_lines).find_map(|line| line.split_whitespace().filter_map(as_date).next_back())
}

/// `10/2/2026`, `2026-10-02`, `2.10.2026` inside a word such as `2026.*` → the date.
fn as_date(word: &str) -> Option<&str> {
    let date = word.trim_matches(|c: char| !c.is_ascii_digit());
    let parts: Vec<&str> = date.split(['/', '-', '.']).collect();
    let well_formed = parts.len() == 3
        && parts.iter().all(|p| (1..=4).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
        && parts.iter().any(|p| p.len() == 4);
    well_formed.then_some(date)
}

/// `error: unknown option '--bogus'` → `--bogus`.
fn quoted_after<'t>(text: &'t str, marker: &str) -> Option<&'t str> {
    let at = find_ignore_case(text, marker)? + marker.len();
    let rest = text[at..].lines().next()?.trim_start();
    let quote = rest.chars().next().filter(|c| matches!(c, '\'' | '"' | '`'))?;
    let inner = &rest[quote.len_utf8()..];
    let option = &inner[..inner.find(quote)?];
    (!option.is_empty()).then_some(option)
}

// ---------------------------------------------------------------------------------------------
// Text helpers

/// ANSI stripped, `\r` and other control characters (but `\n`, `\t`) removed, secrets redacted.
fn sanitize(raw: &str) -> String {
    let stripped = strip_ansi(raw);
    let printable: String = stripped.chars().filter(|&c| c == '\n' || c == '\t' || !c.is_control()).collect();
    redact_secrets(&printable).into_owned()
}

fn contains_any(haystack: &str, needles: &[&str]) -> bool {
    needles.iter().any(|needle| find_ignore_case(haystack, needle).is_some())
}

/// `number` as a whole token: not preceded or followed by a letter or digit.
fn contains_number(haystack: &str, number: &str) -> bool {
    let bytes = haystack.as_bytes();
    let mut from = 0;
    while let Some(found) = haystack.get(from..).and_then(|rest| rest.find(number)) {
        let start = from + found;
        let end = start + number.len();
        let before_ok = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        let after_ok = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
        if before_ok && after_ok {
            return true;
        }
        from = end;
    }
    false
}

impl From<Failure> for BridgeError {
    fn from(f: Failure) -> Self {
        BridgeError { kind: f.kind, message: f.message, hint: Some(f.hint), detail: f.detail }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cursor-cli/");

    /// The usage-limit block of docs/cursor-cli.md §5.2 (also in
    /// tests/fixtures/cursor-cli/README.md), verbatim.
    const USAGE_LIMIT: &str = "Error: You've hit your usage limit\nGet Cursor Pro for more Agent usage, unlimited Tab, and more.\nfallbackModel: \nspendLimitHit: false\nchatMessage: *You've hit your free requests limit. Your usage limits will reset when your monthly cycle ends on 10/2/2026.*\nspendLimits: [50,100,200]\n";
    const TRUST: &str = "⚠ Workspace Trust Required\n\nThe Cursor CLI needs your permission to run in /home/dev/project.\nPass --trust, --yolo, or -f if you trust this directory\n";

    fn auth_stderr() -> String {
        std::fs::read_to_string(format!("{FIXTURES}06-auth-failure.stderr.txt")).unwrap_or_default()
    }

    #[test]
    fn classification_table() {
        let auth = auth_stderr();
        assert!(auth.starts_with("Error: Authentication required."), "fixture missing: {auth:?}");
        // (stderr, stream error, expected kind, expected hint)
        let cases: &[(&str, Option<&str>, ErrorKind, &str)] = &[
            (&auth, None, ErrorKind::AuthRequired, HINT_AUTH),
            ("Error: Authentication required. Run 'agent login', pass --api-key/--auth-token, or set CURSOR_API_KEY/CURSOR_AUTH_TOKEN.", None, ErrorKind::AuthRequired, HINT_AUTH),
            ("Error: The provided API key is invalid.", None, ErrorKind::AuthRequired, HINT_AUTH),
            ("Not logged in", None, ErrorKind::AuthRequired, HINT_AUTH),
            ("Request failed: 401 Unauthorized", None, ErrorKind::AuthRequired, HINT_AUTH),
            ("\x1b[31mError:\x1b[0m \x1b[1mAUTHENTICATION REQUIRED\x1b[0m", None, ErrorKind::AuthRequired, HINT_AUTH),
            ("Cannot use this model: no-such-model. Available models: auto, composer-2.5, gpt-5.5-medium", None, ErrorKind::InvalidModel, HINT_MODEL),
            ("Named models unavailable on the free plan", None, ErrorKind::InvalidModel, HINT_MODEL),
            ("Error: model not found: foo", None, ErrorKind::InvalidModel, HINT_MODEL),
            (USAGE_LIMIT, None, ErrorKind::UsageLimit, HINT_USAGE),
            ("", Some("quota exceeded for this workspace"), ErrorKind::UsageLimit, HINT_USAGE),
            ("Error: rate limit exceeded, slow down", None, ErrorKind::RateLimited, HINT_RATE),
            ("HTTP 429", None, ErrorKind::RateLimited, HINT_RATE),
            ("Error: 429 Too Many Requests", None, ErrorKind::RateLimited, HINT_RATE),
            ("Too many requests", None, ErrorKind::RateLimited, HINT_RATE),
            ("Error: Connection lost: ECONNRESET", None, ErrorKind::Network, HINT_NETWORK),
            ("connect ETIMEDOUT 104.18.2.3:443", None, ErrorKind::Network, HINT_NETWORK),
            ("Error: connect ECONNREFUSED 127.0.0.1:8080", None, ErrorKind::Network, HINT_NETWORK),
            ("getaddrinfo EAI_AGAIN api2.cursor.sh", None, ErrorKind::Network, HINT_NETWORK),
            ("getaddrinfo ENOTFOUND api2.cursor.sh", None, ErrorKind::Network, HINT_NETWORK),
            ("TypeError: fetch failed", None, ErrorKind::Network, HINT_NETWORK),
            ("Error: socket hang up", None, ErrorKind::Network, HINT_NETWORK),
            ("A network error occurred", None, ErrorKind::Network, HINT_NETWORK),
            (TRUST, None, ErrorKind::CliFailed, HINT_TRUST),
            ("error: unknown option '--bogus'", None, ErrorKind::CliFailed, HINT_CLI_VERSION),
            ("error: unknown option '--trust'", None, ErrorKind::CliFailed, HINT_CLI_VERSION),
            ("Something unexpected went wrong", None, ErrorKind::CliFailed, HINT_GENERIC),
            ("request id 4290a1b2-c3d4-e5f6-0429-aaaaaaaaaaaa failed", None, ErrorKind::CliFailed, HINT_GENERIC),
            ("", None, ErrorKind::CliFailed, HINT_GENERIC),
            // Precedence: logged out wins over the network noise around it.
            ("fetch failed\nError: Authentication required.", None, ErrorKind::AuthRequired, HINT_AUTH),
            // The stream error alone is enough.
            ("", Some("You've hit your usage limit"), ErrorKind::UsageLimit, HINT_USAGE),
        ];
        for (stderr, stream_error, kind, hint) in cases {
            let failure = classify(Some(1), stderr, *stream_error);
            assert_eq!((failure.kind, failure.hint.as_str()), (*kind, *hint), "{stderr:?} / {stream_error:?}");
            assert!(!failure.message.is_empty() && !failure.message.contains('\n'), "{failure:?}");
        }
    }

    #[test]
    fn messages() {
        let cases: &[(Option<i32>, &str, Option<&str>, &str)] = &[
            (Some(1), &auth_stderr(), None, "The Cursor CLI is not signed in."),
            (Some(1), "The provided API key is invalid", None, "Cursor rejected the API key."),
            (
                Some(1),
                "Cannot use this model: no-such-model. Available models: auto, composer-2.5, gpt-5.5-medium",
                None,
                "Cursor cannot use the model `no-such-model` with this account; available: auto, composer-2.5, gpt-5.5-medium.",
            ),
            (
                Some(1),
                "Cannot use this model: gpt-5.5-medium. Available models: auto, a, b, c, d, e, f\n",
                None,
                "Cursor cannot use the model `gpt-5.5-medium` with this account; available: auto, a, b, c, d and 2 more.",
            ),
            (Some(1), "Named models unavailable", None, "Cursor cannot use the selected model with this account."),
            (Some(1), USAGE_LIMIT, None, "You've hit your Cursor usage limit; it resets on 10/2/2026."),
            (Some(1), "Error: You've hit your usage limit", None, "You've hit your Cursor usage limit."),
            (Some(1), "Error: Connection lost: ECONNRESET", None, "The Cursor CLI could not reach Cursor's servers (ECONNRESET)."),
            (Some(1), "fetch failed", None, "The Cursor CLI could not reach Cursor's servers."),
            (Some(1), "error: unknown option '--bogus'", None, "The Cursor CLI does not know the option `--bogus`."),
            (Some(1), "\n\n  Boom: the thing broke\nstack trace line\n", None, "The Cursor CLI exited with code 1: Boom: the thing broke"),
            (Some(137), "", None, "The Cursor CLI exited with code 137 (signal 9) without an error message."),
            (None, "", None, "The Cursor CLI was stopped by a signal without an error message."),
            (Some(0), "", None, "The Cursor CLI exited (code 0) without finishing the turn."),
            (Some(2), "", Some("something odd"), "The Cursor CLI exited with code 2: something odd"),
        ];
        for (code, stderr, stream_error, message) in cases {
            assert_eq!(classify(*code, stderr, *stream_error).message, *message, "{stderr:?}");
        }
        let long = format!("Error: {}", "x".repeat(500));
        let message = classify(Some(1), &long, None).message;
        assert!(message.ends_with('…') && message.chars().count() < 260, "{message}");
    }

    #[test]
    fn detail_is_bounded_stripped_and_redacted() {
        assert_eq!(classify(Some(1), "", None).detail, None);
        assert_eq!(classify(Some(1), " \n ", None).detail, None);
        assert_eq!(classify(Some(1), "\x1b[31mError:\x1b[0m boom\r\n", None).detail.as_deref(), Some("Error: boom"));
        assert_eq!(
            classify(Some(1), "stderr text", Some("stream text")).detail.as_deref(),
            Some("stream text\nstderr text")
        );

        let long = format!("{}THE END", "0123456789\n".repeat(400));
        let detail = classify(Some(1), &long, None).detail.unwrap_or_default();
        assert_eq!(detail.chars().count(), DETAIL_MAX_CHARS);
        assert!(detail.starts_with('…') && detail.ends_with("THE END"));

        let multibyte = "é🙂".repeat(3_000);
        let detail = classify(Some(1), &multibyte, None).detail.unwrap_or_default();
        assert_eq!(detail.chars().count(), DETAIL_MAX_CHARS);

        let key = "key_8f2b9c0d1e3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678";
        let secrets = [
            format!("CURSOR_API_KEY={key} agent -p"),
            format!("Invalid API key: {key}"),
            "using sk-proj-AbC123dEf456GhI789jKl012 for fallback".to_owned(),
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJlMTIz".to_owned(),
            "{\"accessToken\":\"AbCdEf0123456789GhIjKl\"}".to_owned(),
            "--api-key Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==".to_owned(),
            "token=0123456789abcdef0123456789abcdef".to_owned(),
        ];
        for secret_line in &secrets {
            let failure = classify(Some(1), secret_line, None);
            let detail = failure.detail.unwrap_or_default();
            assert!(detail.contains("[redacted]"), "{secret_line:?} → {detail:?}");
            for fragment in
                ["8f2b9c0d1e3a", "AbC123dEf456", "c2lnbmF0dXJl", "AbCdEf0123456789", "Zm9vYmFy", "0123456789abcdef"]
            {
                assert!(!detail.contains(fragment), "{secret_line:?} leaked in {detail:?}");
                assert!(!failure.message.contains(fragment), "{secret_line:?} leaked in {:?}", failure.message);
            }
        }
        // Ordinary diagnostics stay readable.
        for keep in [
            "Error: Authentication required. Please run 'agent login' first, or set CURSOR_API_KEY environment variable.",
            "request_id 9b1e4c2a-7f30-4d8e-a1b2-c3d4e5f60718 failed at /home/dev/project/src/main.rs:42",
            "key_not_found in config",
            "the token expired",
        ] {
            assert_eq!(classify(Some(1), keep, None).detail.as_deref(), Some(keep));
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        let inputs = [
            "Cannot use this model:",
            "Cannot use this model: . Available models:",
            "available models: ,,, ,",
            "error: unknown option '",
            "error: unknown option ''",
            "chatMessage: resets on 99/99/99999999 or 1/1/1/1",
            "429",
            "\x1b",
            "\u{0}\u{7f}\u{9b}",
            "🙂Cannot use this model: 🙂",
            "key_",
            "token ",
        ];
        for input in inputs {
            let failure = classify(Some(1), input, Some(input));
            assert!(!failure.message.is_empty());
        }
    }
}
