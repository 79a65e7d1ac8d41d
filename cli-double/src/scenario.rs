//! Scenarios: how a test scripts one print-mode run or one ACP turn (the fields after
//! `replay` are for ACP turns; print mode ignores them).
//!
//! Sources, later overriding earlier field by field: `CURSOR_DOUBLE_SCENARIO` (inline JSON or
//! `@/path/to/file.json`), then each `[[double:{...}]]` directive embedded in the prompt. Unknown
//! fields and wrong types are errors (the double exits 2) so a typo in a test cannot silently turn
//! into the default behaviour.

use crate::json::Json;
use crate::tool_script::{self, ToolKnobs};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HangPoint {
    BeforeOutput,
    AfterInit,
    MidStream,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    UsageLimit,
    RateLimit,
    Network,
    Auth,
    InvalidKey,
    Model,
    /// `ConnectError: [unavailable] PING timed out` (ACP transport drop, 2026.09.18).
    Ping,
    /// `ConnectError: [canceled] http/2 stream closed …`.
    StreamClosed,
    /// `RetriableError … exceeded max retries`.
    MaxRetries,
    /// The answer is `"\n\nUpgrade your plan to continue"` (2026.07.01 probe).
    PlanGated,
}

impl Failure {
    pub fn name(self) -> &'static str {
        match self {
            Failure::UsageLimit => "usageLimit",
            Failure::RateLimit => "rateLimit",
            Failure::Network => "network",
            Failure::Auth => "auth",
            Failure::InvalidKey => "invalidKey",
            Failure::Model => "model",
            Failure::Ping => "ping",
            Failure::StreamClosed => "streamClosed",
            Failure::MaxRetries => "maxRetries",
            Failure::PlanGated => "planGated",
        }
    }
}

const FAILURES: [Failure; 10] = [
    Failure::UsageLimit,
    Failure::RateLimit,
    Failure::Network,
    Failure::Auth,
    Failure::InvalidKey,
    Failure::Model,
    Failure::Ping,
    Failure::StreamClosed,
    Failure::MaxRetries,
    Failure::PlanGated,
];

/// One scripted tool call.
#[derive(Clone, Debug, Default)]
pub struct ToolSpec {
    pub kind: String,
    /// User-supplied args, overlaid on the kind's defaults.
    pub args: Option<Json>,
    pub outcome: Outcome,
    /// Verbatim `result` object, replacing the synthesised one.
    pub result: Option<Json>,
    /// Shell stdout / read content / MCP text.
    pub output: Option<String>,
    /// `rejected.reason` text.
    pub reason: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Outcome {
    #[default]
    Success,
    Failure,
    Rejected,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub answer: Option<String>,
    /// The answer to a prompt that asks again for a structured (JSON) answer (`jsonRepairAnswer`).
    pub json_repair_answer: Option<String>,
    pub segments: Option<Vec<String>>,
    pub tools: Vec<ToolSpec>,
    pub thinking: Option<String>,
    pub chunk_chars: usize,
    pub delta_delay_ms: u64,
    pub usage: Option<Json>,
    pub duration_ms: Option<u64>,
    pub startup_ms: Option<u64>,
    pub crash_after_deltas: Option<u64>,
    pub hang: Option<HangPoint>,
    pub no_result: bool,
    pub error_result: bool,
    pub error_envelope: Option<String>,
    pub garbage: bool,
    pub huge_line_bytes: Option<usize>,
    pub stderr_bytes: Option<usize>,
    pub exit_code: Option<i32>,
    pub stderr: Option<String>,
    pub fail: Option<Failure>,
    pub grandchild: bool,
    pub grandchild_escapes: bool,
    pub grandchild_stdio_inherit: bool,
    /// ACP: each turn starts a grandchild (README 8.4).
    pub turn_grandchild: bool,
    pub ignore_sigterm: bool,
    pub close_stdin_early: bool,
    pub permission_query: bool,
    pub replay: Option<String>,
    // ACP turns only.
    pub todos: Option<Vec<Json>>,
    pub ask_question: Option<Json>,
    pub create_plan: Option<Json>,
    pub plan: Option<Vec<Json>>,
    pub usage_update: Option<Json>,
    pub stop_reason: Option<String>,
    pub rpc_error: Option<Json>,
    pub extra_updates: Vec<Json>,
    pub fail_times: Option<u64>,
    /// ACP: once a step's MCP calls are done, the prompt fails with the PING transport drop.
    pub drop_after_calls: bool,
    // The tool-calling model (`tool_script.rs`), both modes.
    pub tools_model: ToolKnobs,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            answer: None,
            json_repair_answer: None,
            segments: None,
            tools: Vec::new(),
            thinking: None,
            chunk_chars: 6,
            delta_delay_ms: 0,
            usage: None,
            duration_ms: None,
            startup_ms: None,
            crash_after_deltas: None,
            hang: None,
            no_result: false,
            error_result: false,
            error_envelope: None,
            garbage: false,
            huge_line_bytes: None,
            stderr_bytes: None,
            exit_code: None,
            stderr: None,
            fail: None,
            grandchild: false,
            grandchild_escapes: false,
            grandchild_stdio_inherit: false,
            turn_grandchild: false,
            ignore_sigterm: false,
            close_stdin_early: false,
            permission_query: false,
            replay: None,
            todos: None,
            ask_question: None,
            create_plan: None,
            plan: None,
            usage_update: None,
            stop_reason: None,
            rpc_error: None,
            extra_updates: Vec::new(),
            fail_times: None,
            drop_after_calls: false,
            tools_model: ToolKnobs::default(),
        }
    }
}

/// Default `errorEnvelope` message when the field is just `true` (text seen in S-aid).
const DEFAULT_ENVELOPE: &str = "quota exceeded for this workspace";

/// Reads `CURSOR_DOUBLE_SCENARIO`: `None` when unset/empty, else the parsed object.
pub fn from_env() -> Result<Option<Json>, String> {
    let Some(raw) = crate::settings::non_empty("CURSOR_DOUBLE_SCENARIO") else {
        return Ok(None);
    };
    let text = match raw.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| format!("CURSOR_DOUBLE_SCENARIO: cannot read {path}: {e}"))?
        }
        None => raw,
    };
    let value = Json::parse(&text).map_err(|e| format!("CURSOR_DOUBLE_SCENARIO is not valid JSON: {e}"))?;
    if value.as_object().is_none() {
        return Err("CURSOR_DOUBLE_SCENARIO must be a JSON object".to_owned());
    }
    Ok(Some(value))
}

const DIRECTIVE_OPEN: &str = "[[double:";

/// Removes every `[[double:{...}]]` directive from the prompt, returning the cleaned prompt and the
/// directives' objects in order. Only the directive characters are removed (surrounding whitespace
/// and line breaks stay), so the `user` echo is predictable. The JSON is parsed properly, so `]]`
/// inside a string value does not end the directive.
pub fn extract_directives(prompt: &str) -> Result<(String, Vec<Json>), String> {
    let mut clean = String::with_capacity(prompt.len());
    let mut found = Vec::new();
    let mut rest = prompt;
    while let Some(start) = rest.find(DIRECTIVE_OPEN) {
        clean.push_str(&rest[..start]);
        let body = &rest[start + DIRECTIVE_OPEN.len()..];
        if let Some((value, tail)) = escaped_directive(body) {
            found.push(value);
            rest = tail;
            continue;
        }
        let mut stream = serde_json::Deserializer::from_str(body).into_iter::<Json>();
        let value = match stream.next() {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Err(format!("invalid [[double:...]] directive in the prompt: {e}")),
            None => return Err("empty [[double:...]] directive in the prompt".to_owned()),
        };
        let end = stream.byte_offset();
        let after = body[end..].trim_start();
        let Some(tail) = after.strip_prefix("]]") else {
            return Err("[[double:...]] directive in the prompt is not closed by ]]".to_owned());
        };
        if value.as_object().is_none() {
            return Err("[[double:...]] directive must hold a JSON object".to_owned());
        }
        found.push(value);
        rest = tail;
    }
    clean.push_str(rest);
    Ok((clean, found))
}

/// A directive whose quotes arrive escaped (`[[double:{\"answer\":\"hi\"}]]`): a client that
/// sends the user's words as a JSON string (opencode quotes its `run` message) escapes them. It
/// ends at the first `}]]`, so such a directive cannot have `}]]` inside a string value.
fn escaped_directive(body: &str) -> Option<(Json, &str)> {
    if !body.starts_with("{\\\"") {
        return None;
    }
    let end = body.find("}]]")? + 1;
    let unescaped = serde_json::from_str::<String>(&format!("\"{}\"", &body[..end])).ok()?;
    let value = Json::parse(&unescaped).ok().filter(|v| v.as_object().is_some())?;
    Some((value, &body[end + 2..]))
}

/// How the sidecar asks again for a structured answer that did not fit (its
/// `http/structured` repair prompt): the double's model answers such a prompt with
/// `jsonRepairAnswer`, when the chat has one.
pub const JSON_REPAIR_START: &str = "Your answer did not match the required JSON format";

impl Scenario {
    /// The scenario as it answers this (directive-free) prompt. Unscripted, a prompt that asks
    /// for a structured answer (the sidecar's `<response_format>` block) gets JSON, as a real
    /// model mostly obeys: a value made up from the block's `Schema:` (`tool_model::example`), or
    /// for any JSON object `{"answer": "<the default echo>"}`.
    pub fn for_prompt(mut self, prompt: &str) -> Scenario {
        if self.answer.is_none() && self.segments.is_none() {
            self.answer = formatted_answer(prompt);
        }
        if let Some(answer) = self.json_repair_answer.clone() {
            if prompt.lines().any(|l| l.trim_start().starts_with(JSON_REPAIR_START)) {
                self.answer = Some(answer);
                self.segments = None;
            }
        }
        self
    }
}

/// What an unscripted model answers a prompt with a `<response_format>` block, if it has one.
fn formatted_answer(prompt: &str) -> Option<String> {
    let start = prompt.find(FORMAT_OPEN)?;
    let block = &prompt[start..];
    let block = &block[..block.find(FORMAT_CLOSE).unwrap_or(block.len())];
    let schema = block.lines().find_map(|l| l.strip_prefix(FORMAT_SCHEMA)).and_then(|s| Json::parse(s.trim()).ok());
    Some(match schema {
        Some(schema) => crate::tool_model::example(&schema).to_compact(),
        None => {
            let before = &prompt[..start];
            crate::json::obj([("answer", crate::print_mode::default_answer(before).into())]).to_compact()
        }
    })
}

/// The sidecar's words for a structured answer (`sidecar/src/http/structured/`).
const FORMAT_OPEN: &str = "<response_format>";
const FORMAT_CLOSE: &str = "</response_format>";
const FORMAT_SCHEMA: &str = "Schema: ";

/// Merges the sources (earlier first) and converts them into a [`Scenario`].
pub fn build(sources: &[Json]) -> Result<Scenario, String> {
    let mut merged = Json::Obj(Vec::new());
    for s in sources {
        merged.merge_from(s);
    }
    from_json(&merged)
}

fn type_error(field: &str, expected: &str) -> String {
    format!("scenario field '{field}' must be {expected}")
}

fn string(field: &str, v: &Json) -> Result<String, String> {
    v.as_str().map(str::to_owned).ok_or_else(|| type_error(field, "a string"))
}

fn boolean(field: &str, v: &Json) -> Result<bool, String> {
    match v {
        Json::Bool(b) => Ok(*b),
        _ => Err(type_error(field, "true or false")),
    }
}

fn count(field: &str, v: &Json) -> Result<u64, String> {
    match v {
        Json::Num(n) => n.as_u64().ok_or_else(|| type_error(field, "a non-negative integer")),
        _ => Err(type_error(field, "a non-negative integer")),
    }
}

fn from_json(v: &Json) -> Result<Scenario, String> {
    let mut s = Scenario::default();
    for (key, value) in v.as_object().unwrap_or(&[]) {
        if matches!(value, Json::Null) {
            continue; // `null` means "not set", so a later source can clear an earlier one.
        }
        let k = key.as_str();
        match k {
            "answer" => s.answer = Some(string(k, value)?),
            "segments" => {
                let Json::Arr(items) = value else { return Err(type_error(k, "an array of strings")) };
                s.segments = Some(items.iter().map(|i| string(k, i)).collect::<Result<_, _>>()?);
            }
            "tools" => {
                let Json::Arr(items) = value else { return Err(type_error(k, "an array of tool objects")) };
                s.tools = items.iter().map(tool).collect::<Result<_, _>>()?;
            }
            "thinking" => s.thinking = Some(string(k, value)?),
            "chunkChars" => s.chunk_chars = count(k, value)?.max(1) as usize,
            "deltaDelayMs" => s.delta_delay_ms = count(k, value)?,
            "usage" => {
                if value.as_object().is_none() {
                    return Err(type_error(k, "an object"));
                }
                s.usage = Some(value.clone());
            }
            "durationMs" => s.duration_ms = Some(count(k, value)?),
            "startupMs" => s.startup_ms = Some(count(k, value)?),
            "crashAfterDeltas" => s.crash_after_deltas = Some(count(k, value)?),
            "hang" => {
                s.hang = Some(match value.as_str() {
                    Some("beforeOutput") => HangPoint::BeforeOutput,
                    Some("afterInit") => HangPoint::AfterInit,
                    Some("midStream") => HangPoint::MidStream,
                    _ => return Err(type_error(k, "\"beforeOutput\", \"afterInit\" or \"midStream\"")),
                })
            }
            "noResult" => s.no_result = boolean(k, value)?,
            "errorResult" => s.error_result = boolean(k, value)?,
            "errorEnvelope" => {
                s.error_envelope = match value {
                    Json::Bool(true) => Some(DEFAULT_ENVELOPE.to_owned()),
                    Json::Bool(false) => None,
                    Json::Str(m) => Some(m.clone()),
                    _ => return Err(type_error(k, "a message string or true")),
                }
            }
            "garbage" => s.garbage = boolean(k, value)?,
            "hugeLineBytes" => s.huge_line_bytes = Some(count(k, value)? as usize),
            "stderrBytes" => s.stderr_bytes = Some(count(k, value)? as usize),
            "exitCode" => match value {
                Json::Num(n) if n.as_i64().is_some_and(|c| (0..=255).contains(&c)) => {
                    s.exit_code = n.as_i64().map(|c| c as i32)
                }
                _ => return Err(type_error(k, "an integer 0..=255")),
            },
            "stderr" => s.stderr = Some(string(k, value)?),
            "fail" => {
                s.fail = Some(FAILURES.iter().copied().find(|f| value.as_str() == Some(f.name())).ok_or_else(|| {
                    let names: Vec<String> = FAILURES.iter().map(|f| format!("\"{}\"", f.name())).collect();
                    type_error(k, &format!("one of {}", names.join(", ")))
                })?)
            }
            "grandchild" => s.grandchild = boolean(k, value)?,
            "grandchildEscapes" => s.grandchild_escapes = boolean(k, value)?,
            "turnGrandchild" => s.turn_grandchild = boolean(k, value)?,
            "grandchildStdio" => {
                s.grandchild_stdio_inherit = match value.as_str() {
                    Some("inherit") => true,
                    Some("null") => false,
                    _ => return Err(type_error(k, "\"inherit\" or \"null\"")),
                }
            }
            "ignoreSigterm" => s.ignore_sigterm = boolean(k, value)?,
            "closeStdinEarly" => s.close_stdin_early = boolean(k, value)?,
            "permissionQuery" => s.permission_query = boolean(k, value)?,
            "replay" => s.replay = Some(string(k, value)?),
            "todos" => s.todos = Some(items_of(k, value, "strings or objects")?),
            "askQuestion" => s.ask_question = object_or_true(k, value)?,
            "createPlan" => s.create_plan = object_or_true(k, value)?,
            "plan" => s.plan = Some(items_of(k, value, "strings or objects")?),
            "usageUpdate" => s.usage_update = object_or_true(k, value)?,
            "stopReason" => {
                let reason = string(k, value)?;
                if !STOP_REASONS.contains(&reason.as_str()) {
                    return Err(type_error(k, &format!("one of {}", STOP_REASONS.join(", "))));
                }
                s.stop_reason = Some(reason)
            }
            "rpcError" => s.rpc_error = object_or_true(k, value)?,
            "extraUpdates" => {
                let items = items_of(k, value, "objects")?;
                if items.iter().any(|i| i.as_object().is_none()) {
                    return Err(type_error(k, "an array of objects"));
                }
                s.extra_updates = items
            }
            "failTimes" => s.fail_times = Some(count(k, value)?),
            "dropAfterCalls" => s.drop_after_calls = boolean(k, value)?,
            "jsonRepairAnswer" => s.json_repair_answer = Some(string(k, value)?),
            "toolScript" => s.tools_model.script = Some(tool_script::parse_script(value)?),
            "malformedToolCallsOnce" => s.tools_model.malformed_once = boolean(k, value)?,
            "toolCallsWithTrailingText" => s.tools_model.trailing_text = tool_script::parse_trailing(value)?,
            "builtinBypass" => s.tools_model.builtin_bypass = boolean(k, value)?,
            "mcpCallTimeoutMs" => s.tools_model.mcp_call_timeout_ms = count(k, value)?,
            "parallelMcpCalls" => s.tools_model.parallel_mcp_calls = boolean(k, value)?,
            "retryRejectedOnce" => s.tools_model.retry_rejected_once = boolean(k, value)?,
            _ => return Err(format!("unknown scenario field '{k}'")),
        }
    }
    Ok(s)
}

const STOP_REASONS: [&str; 5] = ["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"];

/// An array whose items are strings or objects (`what` names them in the error).
fn items_of(field: &str, v: &Json, what: &str) -> Result<Vec<Json>, String> {
    match v {
        Json::Arr(items) if items.iter().all(|i| matches!(i, Json::Str(_) | Json::Obj(_))) => Ok(items.clone()),
        _ => Err(type_error(field, &format!("an array of {what}"))),
    }
}

/// `true` (the defaults: an empty object), `false` (not set) or an object of overrides.
fn object_or_true(field: &str, v: &Json) -> Result<Option<Json>, String> {
    match v {
        Json::Bool(true) => Ok(Some(Json::Obj(Vec::new()))),
        Json::Bool(false) => Ok(None),
        Json::Obj(_) => Ok(Some(v.clone())),
        _ => Err(type_error(field, "true or an object")),
    }
}

fn tool(v: &Json) -> Result<ToolSpec, String> {
    let Some(pairs) = v.as_object() else {
        return Err(type_error("tools[]", "an object"));
    };
    let mut t = ToolSpec { kind: "shell".to_owned(), ..ToolSpec::default() };
    for (key, value) in pairs {
        let k = key.as_str();
        match k {
            "kind" => t.kind = string("tools[].kind", value)?,
            "args" => {
                if value.as_object().is_none() {
                    return Err(type_error("tools[].args", "an object"));
                }
                t.args = Some(value.clone());
            }
            "outcome" => {
                t.outcome = match value.as_str() {
                    Some("success") => Outcome::Success,
                    Some("failure") => Outcome::Failure,
                    Some("rejected") => Outcome::Rejected,
                    _ => return Err(type_error("tools[].outcome", "\"success\", \"failure\" or \"rejected\"")),
                }
            }
            "result" => t.result = Some(value.clone()),
            "output" => t.output = Some(string("tools[].output", value)?),
            "reason" => t.reason = Some(string("tools[].reason", value)?),
            _ => return Err(format!("unknown tool field '{k}'")),
        }
    }
    if t.kind.is_empty() || !t.kind.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!("tool kind '{}' must be a non-empty ASCII word", t.kind));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_are_removed_and_parsed() {
        let (clean, found) =
            extract_directives("hi [[double:{\"answer\":\"a]]b\"}]] there\n[[double:{\"garbage\":true}]]").unwrap();
        assert_eq!(clean, "hi  there\n");
        assert_eq!(found.len(), 2);
        let s = build(&found).unwrap();
        assert_eq!(s.answer.as_deref(), Some("a]]b"));
        assert!(s.garbage);
    }

    #[test]
    fn a_directive_inside_a_quoted_message_is_read_unescaped() {
        let (clean, found) = extract_directives(r#""make it [[double:{\"answer\":\"a \\\"b\\\"\"}]]""#).unwrap();
        assert_eq!(clean, r#""make it ""#);
        assert_eq!(build(&found).unwrap().answer.as_deref(), Some(r#"a "b""#));
    }

    #[test]
    fn later_sources_override_and_errors_are_reported() {
        let a = Json::parse(r#"{"answer":"x","chunkChars":3}"#).unwrap();
        let b = Json::parse(r#"{"answer":"y"}"#).unwrap();
        let s = build(&[a, b]).unwrap();
        assert_eq!((s.answer.as_deref(), s.chunk_chars), (Some("y"), 3));
        assert!(build(&[Json::parse(r#"{"anwser":"x"}"#).unwrap()]).is_err());
        assert!(build(&[Json::parse(r#"{"hang":"later"}"#).unwrap()]).is_err());
        assert!(extract_directives("[[double:{oops}]]").is_err());
        assert!(extract_directives("[[double:{}").is_err());
    }

    #[test]
    fn a_json_repair_prompt_gets_the_repair_answer() {
        let sc = || build(&[Json::parse(r#"{"answer":"nope","jsonRepairAnswer":"{}"}"#).unwrap()]).unwrap();
        let repair = format!("{JSON_REPAIR_START}: the answer is not JSON. Answer again.");
        assert_eq!(sc().for_prompt(&repair).answer.as_deref(), Some("{}"));
        assert_eq!(sc().for_prompt("Make a thing").answer.as_deref(), Some("nope"));
    }

    #[test]
    fn an_unscripted_prompt_that_asks_for_json_gets_json() {
        let plain = || build(&[]).unwrap();
        let schema = "x\n\n<response_format>\nAnswer with JSON.\nSchema: {\"type\":\"object\",\"required\":[\"n\"],\"properties\":{\"n\":{\"type\":\"integer\"}}}\n</response_format>";
        assert_eq!(plain().for_prompt(schema).answer.as_deref(), Some(r#"{"n":1}"#));
        let object = "hello\n\n<response_format>\nAnswer with one JSON object.\n</response_format>";
        assert_eq!(plain().for_prompt(object).answer.as_deref(), Some(r#"{"answer":"Echo: hello"}"#));
        assert_eq!(plain().for_prompt("hello").answer, None);
    }
}
