//! The scripted tool-calling "model" (docs/client-tools.md "The double's tool script"): the
//! `toolScript` scenario field and the fields that shape how the model calls tools. The fields are
//! parsed with the rest of the scenario (`scenario.rs`); what the model does with them is
//! `tool_model.rs`.
//!
//! A step is `{"say": "…", "call": [{"name", "arguments", "server"?}], "builtin": {…}}`, every part
//! optional. The step played is the number of tool-result rounds the chat has received so far.

use crate::json::{obj, Json};

/// Scenario fields that belong to the chat once its first prompt set them (they are stored with
/// the chat and apply to every later prompt, `--resume` runs and ACP prompts alike).
pub const CHAT_FIELDS: [&str; 8] = [
    "toolScript",
    // Not a tool field, but the chat's too: what a later repair prompt is answered.
    "jsonRepairAnswer",
    "malformedToolCallsOnce",
    "toolCallsWithTrailingText",
    "builtinBypass",
    "mcpCallTimeoutMs",
    "parallelMcpCalls",
    "retryRejectedOnce",
];

/// The prose a model adds after its block when `toolCallsWithTrailingText` is `true`.
pub const DEFAULT_TRAILING_TEXT: &str = "Let me know once these have run.";

#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub name: String,
    pub arguments: Json,
    /// MCP only: the server whose tool is meant (default: the first that lists the name).
    pub server: Option<String>,
}

/// One of Cursor's own tools, which the model tries although the client owns the tools.
#[derive(Clone, Debug, PartialEq)]
pub struct Builtin {
    /// `edit`, `write`, `read`, `delete`, `shell`, `webFetch`, `webSearch`.
    pub kind: String,
    pub path: Option<String>,
    pub content: Option<String>,
    pub command: Option<String>,
    pub url: Option<String>,
    pub query: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    pub say: Option<String>,
    pub calls: Vec<Call>,
    pub builtin: Option<Builtin>,
}

/// The tool fields of a scenario.
#[derive(Clone, Debug)]
pub struct ToolKnobs {
    pub script: Option<Vec<Step>>,
    pub malformed_once: bool,
    pub trailing_text: Option<String>,
    pub builtin_bypass: bool,
    pub mcp_call_timeout_ms: u64,
    pub parallel_mcp_calls: bool,
    pub retry_rejected_once: bool,
}

impl Default for ToolKnobs {
    fn default() -> Self {
        ToolKnobs {
            script: None,
            malformed_once: false,
            trailing_text: None,
            builtin_bypass: false,
            mcp_call_timeout_ms: 60_000,
            parallel_mcp_calls: true,
            retry_rejected_once: true,
        }
    }
}

/// The chat fields among merged directives (what a chat's first prompt stores).
pub fn chat_fields(directives: &[Json]) -> Json {
    let mut out = Json::Obj(Vec::new());
    for d in directives {
        for (k, v) in d.as_object().unwrap_or(&[]) {
            if CHAT_FIELDS.contains(&k.as_str()) {
                out.set(k, v.clone());
            }
        }
    }
    out
}

fn err(field: &str, expected: &str) -> String {
    format!("scenario field '{field}' must be {expected}")
}

fn opt_string(field: &str, v: Option<&Json>) -> Result<Option<String>, String> {
    match v {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Str(s)) => Ok(Some(s.clone())),
        Some(_) => Err(err(field, "a string")),
    }
}

pub fn parse_script(v: &Json) -> Result<Vec<Step>, String> {
    let Json::Arr(items) = v else { return Err(err("toolScript", "an array of steps")) };
    items.iter().map(parse_step).collect()
}

fn parse_step(v: &Json) -> Result<Step, String> {
    let Some(pairs) = v.as_object() else { return Err(err("toolScript[]", "an object")) };
    let mut step = Step::default();
    for (k, value) in pairs {
        match k.as_str() {
            "say" => step.say = opt_string("toolScript[].say", Some(value))?,
            "call" => {
                let Json::Arr(calls) = value else { return Err(err("toolScript[].call", "an array of calls")) };
                step.calls = calls.iter().map(parse_call).collect::<Result<_, _>>()?;
            }
            "builtin" => step.builtin = Some(parse_builtin(value)?),
            other => return Err(format!("unknown toolScript step field '{other}'")),
        }
    }
    Ok(step)
}

fn parse_call(v: &Json) -> Result<Call, String> {
    let Some(pairs) = v.as_object() else { return Err(err("toolScript[].call[]", "an object")) };
    let mut call = Call { name: String::new(), arguments: obj([]), server: None };
    for (k, value) in pairs {
        match k.as_str() {
            "name" => call.name = opt_string("toolScript[].call[].name", Some(value))?.unwrap_or_default(),
            "arguments" => {
                if value.as_object().is_none() {
                    return Err(err("toolScript[].call[].arguments", "an object"));
                }
                call.arguments = value.clone();
            }
            "server" => call.server = opt_string("toolScript[].call[].server", Some(value))?,
            other => return Err(format!("unknown toolScript call field '{other}'")),
        }
    }
    if call.name.is_empty() {
        return Err("a toolScript call needs a non-empty 'name'".to_owned());
    }
    Ok(call)
}

const BUILTIN_KINDS: [&str; 7] = ["edit", "write", "read", "delete", "shell", "webFetch", "webSearch"];

fn parse_builtin(v: &Json) -> Result<Builtin, String> {
    let Some(pairs) = v.as_object() else { return Err(err("toolScript[].builtin", "an object")) };
    let mut b = Builtin { kind: String::new(), path: None, content: None, command: None, url: None, query: None };
    for (k, value) in pairs {
        let f = format!("toolScript[].builtin.{k}");
        let s = opt_string(&f, Some(value))?;
        match k.as_str() {
            "kind" => b.kind = s.unwrap_or_default(),
            "path" => b.path = s,
            "content" => b.content = s,
            "command" => b.command = s,
            "url" => b.url = s,
            "query" => b.query = s,
            other => return Err(format!("unknown toolScript builtin field '{other}'")),
        }
    }
    if !BUILTIN_KINDS.contains(&b.kind.as_str()) {
        return Err(format!("toolScript builtin kind '{}' must be one of {}", b.kind, BUILTIN_KINDS.join(", ")));
    }
    Ok(b)
}

/// `toolCallsWithTrailingText`: `true` (the default prose), `false`, or the prose itself.
pub fn parse_trailing(v: &Json) -> Result<Option<String>, String> {
    match v {
        Json::Bool(true) => Ok(Some(DEFAULT_TRAILING_TEXT.to_owned())),
        Json::Bool(false) => Ok(None),
        Json::Str(s) => Ok(Some(s.clone())),
        _ => Err(err("toolCallsWithTrailingText", "true, false or a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_parse_and_typos_fail() {
        let s = parse_script(
            &Json::parse(
                r#"[{"say":"a","call":[{"name":"t","arguments":{"x":1}}]},{"builtin":{"kind":"edit","path":"x.txt","content":"c"}},{}]"#,
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].calls[0].arguments.to_compact(), r#"{"x":1}"#);
        assert_eq!(s[1].builtin.as_ref().unwrap().path.as_deref(), Some("x.txt"));
        for bad in [
            r#"[{"sya":"a"}]"#,
            r#"[{"call":[{"arguments":{}}]}]"#,
            r#"[{"call":[{"name":"t","arguments":[]}]}]"#,
            r#"[{"builtin":{"kind":"teleport"}}]"#,
            r#"{"say":"a"}"#,
        ] {
            assert!(parse_script(&Json::parse(bad).unwrap()).is_err(), "{bad}");
        }
    }

    #[test]
    fn chat_fields_keep_only_tool_fields() {
        let d = [Json::parse(r#"{"answer":"x","toolScript":[],"builtinBypass":true}"#).unwrap()];
        assert_eq!(chat_fields(&d).to_compact(), r#"{"toolScript":[],"builtinBypass":true}"#);
    }
}
