//! Tool names and summaries (docs/cursor-cli.md §4.8).

use std::borrow::Cow;

use super::event::ToolOutcome;
use super::raw::{OutcomeEntry, OutcomeKind, ResultWire, ToolArgsWire, ToolBodyWire, ToolCallWire};

/// A tool summary is at most this many characters (one line in the editor's tool list).
pub(super) const SUMMARY_MAX_CHARS: usize = 200;
/// Failure/rejection/error details of a tool are at most this many characters.
const DETAIL_MAX_CHARS: usize = 300;

/// `(tool, summary)` of a `tool_call` object; `None` when it names no tool at all.
pub(super) fn describe_tool(call: &ToolCallWire<'_>) -> Option<(String, String)> {
    if let Some(key) = &call.kind {
        let tool = tool_display_name(key.strip_suffix("ToolCall").unwrap_or(key));
        let summary = summarize(&tool, &call.body.args);
        return Some((tool, summary));
    }
    // Legacy `{"function":{"name","arguments"}}`: keep the name as given.
    let legacy = call.legacy.as_ref()?;
    let tool = legacy.name.as_deref().filter(|n| !n.trim().is_empty()).unwrap_or("function");
    Some((one_line(tool, SUMMARY_MAX_CHARS), summarize("", &legacy.arguments)))
}

/// `shell` for `shellToolCall` etc.; unknown kinds keep their key minus `ToolCall`.
pub(super) fn tool_display_name(short: &str) -> String {
    let name = match short {
        "updateTodos" => "todos",
        "semSearch" => "search",
        "" => "unknown",
        other => other,
    };
    name.to_owned()
}

/// One line a person understands. Known tools show their main argument; anything else shows the
/// first of command/path/pattern/url/search term/query it has (so new tool kinds still say
/// something), or nothing.
pub(super) fn summarize(tool: &str, args: &ToolArgsWire<'_>) -> String {
    let specific: Option<Cow<'_, str>> = match tool {
        "shell" => args.command.clone(),
        "read" | "edit" | "write" | "delete" | "ls" => args.path.clone(),
        "grep" => args.pattern.as_ref().map(|pattern| match args.path.as_deref() {
            Some(path) if !path.is_empty() => Cow::Owned(format!("{pattern} in {path}")),
            _ => pattern.clone(),
        }),
        "glob" => args.glob_pattern.clone().or_else(|| args.pattern.clone()),
        "webFetch" => args.url.clone(),
        "webSearch" => args.search_term.clone().or_else(|| args.query.clone()),
        "search" => args.query.clone(),
        "mcp" => {
            let tool_name = args.tool_name.as_ref().or(args.name.as_ref());
            match (args.provider_identifier.as_deref(), tool_name) {
                (Some(provider), Some(name)) if !provider.is_empty() => Some(Cow::Owned(format!("{provider}/{name}"))),
                (_, Some(name)) => Some(name.clone()),
                (Some(provider), None) => Some(Cow::Borrowed(provider)),
                (None, None) => None,
            }
        }
        _ => None,
    };
    let chosen = specific.filter(|s| !s.trim().is_empty()).or_else(|| {
        [&args.command, &args.path, &args.pattern, &args.glob_pattern, &args.url, &args.search_term, &args.query]
            .into_iter()
            .flatten()
            .find(|s| !s.trim().is_empty())
            .cloned()
    });
    chosen.map(|s| one_line(&s, SUMMARY_MAX_CHARS)).unwrap_or_default()
}

/// Control characters (newlines, tabs …) become spaces; trimmed; at most `max_chars` characters,
/// the last being `…` when cut.
fn one_line(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    let mut line = String::with_capacity(text.len().min(max_chars * 4));
    for (count, c) in text.chars().enumerate() {
        if count + 1 == max_chars && text.chars().nth(max_chars).is_some() {
            line.push('…');
            break;
        }
        line.push(if c.is_control() { ' ' } else { c });
    }
    line
}

/// `"rejected"`, `"success"` … as a whole outcome (liberal forms, docs/cursor-cli.md §4.8).
/// Unknown words → `None`.
pub(super) fn outcome_from_word(word: &str) -> Option<ToolOutcome> {
    match word.trim().to_ascii_lowercase().as_str() {
        "success" | "succeeded" | "ok" | "completed" => Some(ToolOutcome::Success),
        "failure" | "failed" => Some(ToolOutcome::Failure { detail: None }),
        "error" => Some(ToolOutcome::Error { message: None }),
        "rejected" | "denied" => Some(ToolOutcome::Rejected { reason: None }),
        _ => None,
    }
}

/// The outcome a tool body reports: its `result`, else an outcome key directly in the body.
pub(super) fn tool_outcome(body: &ToolBodyWire<'_>) -> Option<ToolOutcome> {
    let from_result = body.result.as_ref().and_then(|result| match result {
        ResultWire::Union(entry) => entry.as_ref().map(entry_outcome),
        ResultWire::Word(word) => outcome_from_word(word),
        ResultWire::Bool(true) => Some(ToolOutcome::Success),
        ResultWire::Bool(false) => Some(ToolOutcome::Failure { detail: None }),
    });
    from_result.or_else(|| body.direct.as_ref().map(entry_outcome))
}

/// One entry of the outcome union. `"success": false` counts as a failure.
fn entry_outcome(entry: &OutcomeEntry<'_>) -> ToolOutcome {
    let body = &entry.body;
    let detail =
        |s: &Option<Cow<'_, str>>| s.as_deref().map(|s| one_line(s, DETAIL_MAX_CHARS)).filter(|s| !s.is_empty());
    match entry.kind {
        OutcomeKind::Success if body.is_false => ToolOutcome::Failure { detail: None },
        OutcomeKind::Success => ToolOutcome::Success,
        OutcomeKind::Failure => {
            let mut parts = Vec::new();
            if let Some(code) = body.exit_code() {
                parts.push(format!("exit code {code}"));
            }
            if let Some(signal) = body.signal.as_deref().filter(|s| !s.is_empty()) {
                parts.push(format!("signal {signal}"));
            }
            if body.aborted {
                parts.push("aborted".to_owned());
            }
            if parts.is_empty() {
                parts.extend(detail(&body.message).or_else(|| detail(&body.error)));
            }
            let joined = parts.join(", ");
            ToolOutcome::Failure { detail: (!joined.is_empty()).then(|| one_line(&joined, DETAIL_MAX_CHARS)) }
        }
        OutcomeKind::Error => ToolOutcome::Error { message: detail(&body.message).or_else(|| detail(&body.error)) },
        OutcomeKind::Rejected => {
            ToolOutcome::Rejected { reason: detail(&body.reason).or_else(|| detail(&body.message)) }
        }
    }
}
