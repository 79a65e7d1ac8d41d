//! What the fake model answers, decided from the request alone (no state), so a test knows the
//! answer before it asks:
//!
//! * the last user message holds `<<X>>`: `echo: X (user_turns=N)`, where N counts the user
//!   messages of the request that hold a marker. A second turn that answers `user_turns=2`
//!   proves the agent sent the first turn's history.
//! * no marker (an agent's side request, a title): `echo: ` and the message's first words.
//! * `[[think]]` also: reasoning deltas (`thinking about X`) before the answer.
//! * `[[slow]]` instead: many deltas with a pause between them, long enough to cancel mid-stream.
//! * `[[shell:COMMAND]]`: a call of the agent's shell tool running COMMAND (an agent that asks
//!   before running commands sends `session/request_permission`); once the tool's result is the
//!   last message, a text answer saying so.
//!
//! Text is streamed word by word (each delta a word and the space after it), so streaming shows.

use std::time::Duration;

use serde_json::{json, Map, Value};

/// The names agents give their shell tool (Copilot CLI: `bash`).
const SHELL_TOOLS: [&str; 3] = ["bash", "shell", "run_shell_command"];
/// Deltas of a `[[slow]]` answer, and the pause after each.
pub const SLOW_DELTAS: usize = 80;
pub const SLOW_PAUSE: Duration = Duration::from_millis(250);

#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Text {
        /// Reasoning deltas, sent first.
        thinking: Vec<String>,
        deltas: Vec<String>,
        /// The pause after each delta (`[[slow]]`).
        pause: Option<Duration>,
    },
    ToolCall {
        name: String,
        arguments: Value,
    },
}

impl Reply {
    /// The answer text in full (what a client should see once every delta has arrived).
    pub fn text(&self) -> String {
        match self {
            Reply::Text { deltas, .. } => deltas.concat(),
            Reply::ToolCall { .. } => String::new(),
        }
    }
}

/// One message of a Chat Completions request, as far as the fake reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: String,
    pub text: String,
}

/// The messages of a request body (`content` as a string or as text parts).
pub fn messages(body: &Value) -> Vec<Message> {
    let Some(list) = body.get("messages").and_then(Value::as_array) else { return Vec::new() };
    list.iter()
        .map(|m| Message {
            role: m.get("role").and_then(Value::as_str).unwrap_or("").to_string(),
            text: text_of(m.get("content").unwrap_or(&Value::Null)),
        })
        .collect()
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

pub fn reply(body: &Value) -> Reply {
    let messages = messages(body);
    let users: Vec<&str> = messages.iter().filter(|m| m.role == "user").map(|m| m.text.as_str()).collect();
    let last = users.last().copied().unwrap_or("");
    if let Some(tool_result) = messages.last().filter(|m| m.role == "tool") {
        return text(&format!("the tool said: {}", first_words(&tool_result.text)));
    }
    if let Some(command) = directive(last, "shell:") {
        return match shell_call(body, command) {
            Some(call) => call,
            None => text(&format!("echo: no shell tool among {:?}", tool_names(body))),
        };
    }
    let Some(marker) = marker(last) else { return text(&format!("echo: {}", first_words(last))) };
    let turns = users.iter().filter(|u| self::marker(u).is_some()).count();
    if directive(last, "slow").is_some() {
        let deltas = (0..SLOW_DELTAS).map(|i| format!("slow-{i} ")).collect();
        return Reply::Text { thinking: Vec::new(), deltas, pause: Some(SLOW_PAUSE) };
    }
    let answer = format!("echo: {marker} (user_turns={turns})");
    let thinking =
        if directive(last, "think").is_some() { words(&format!("thinking about {marker}")) } else { Vec::new() };
    Reply::Text { thinking, deltas: words(&answer), pause: None }
}

fn text(answer: &str) -> Reply {
    Reply::Text { thinking: Vec::new(), deltas: words(answer), pause: None }
}

/// The last `<<X>>` of a message.
fn marker(text: &str) -> Option<&str> {
    let end = text.rfind(">>")?;
    let start = text[..end].rfind("<<")? + 2;
    Some(&text[start..end]).filter(|m| !m.is_empty())
}

/// `[[name]]` (returns "") or `[[name…]]` with a value after a name ending in `:`.
fn directive<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = text.find(&format!("[[{name}"))? + 2 + name.len();
    let end = start + text[start..].find("]]")?;
    let value = &text[start..end];
    (name.ends_with(':') || value.is_empty()).then_some(value)
}

fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.last_mut().expect("a word before").push(' ');
        }
        out.push(word.to_string());
    }
    out.retain(|w| !w.is_empty());
    out
}

fn first_words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(120).collect()
}

fn tool_names(body: &Value) -> Vec<String> {
    tools(body).map(|(name, _)| name.to_string()).collect()
}

fn tools(body: &Value) -> impl Iterator<Item = (&str, &Value)> {
    body.get("tools").and_then(Value::as_array).into_iter().flatten().filter_map(|t| {
        let function = t.get("function")?;
        Some((function.get("name")?.as_str()?, function.get("parameters").unwrap_or(&Value::Null)))
    })
}

/// A call of the request's shell tool: `command` set, every other required string filled in (a
/// `description`, say), so the agent accepts the call as well-formed.
fn shell_call(body: &Value, command: &str) -> Option<Reply> {
    let (name, schema) = tools(body).find(|(name, _)| SHELL_TOOLS.contains(name))?;
    let mut arguments = Map::new();
    for required in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        let is_string = schema.pointer(&format!("/properties/{required}/type")) == Some(&json!("string"));
        if is_string {
            arguments.insert(required.to_string(), json!("a command the fake model asked for"));
        }
    }
    arguments.insert("command".into(), json!(command));
    Some(Reply::ToolCall { name: name.to_string(), arguments: Value::Object(arguments) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(messages: &[(&str, &str)]) -> Value {
        let messages: Vec<Value> = messages.iter().map(|(role, text)| json!({"role": role, "content": text})).collect();
        json!({"model": "m", "messages": messages, "tools": [
            {"type": "function", "function": {"name": "view", "parameters": {"required": ["path"]}}},
            {"type": "function", "function": {"name": "bash", "parameters": {
                "required": ["command", "description"],
                "properties": {"command": {"type": "string"}, "description": {"type": "string"}}}}},
        ]})
    }

    #[test]
    fn answers_follow_the_rules() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[("system", "be brief"), ("user", "<ctx>now</ctx>\n\nPlease reply. <<alpha>>")],
                "echo: alpha (user_turns=1)",
            ),
            (
                &[("user", "one <<alpha>>"), ("assistant", "echo: alpha (user_turns=1)"), ("user", "two <<beta>>")],
                "echo: beta (user_turns=2)",
            ),
            (&[("user", "a title for: hello   there")], "echo: a title for: hello there"),
            (&[("user", "[[think]] <<gamma>>")], "echo: gamma (user_turns=1)"),
            (
                &[("user", "x"), ("assistant", ""), ("tool", "The user rejected\nthis tool call.")],
                "the tool said: The user rejected this tool call.",
            ),
        ];
        for (messages, answer) in cases {
            assert_eq!(reply(&request(messages)).text(), *answer, "{messages:?}");
        }
    }

    #[test]
    fn text_streams_word_by_word_and_thinking_comes_on_request() {
        let Reply::Text { thinking, deltas, pause } = reply(&request(&[("user", "[[think]] <<gamma>>")])) else {
            panic!("text")
        };
        assert_eq!(deltas, ["echo: ", "gamma ", "(user_turns=1)"]);
        assert_eq!(thinking.concat(), "thinking about gamma");
        assert_eq!(pause, None);
    }

    #[test]
    fn slow_answers_pause_between_many_deltas() {
        let Reply::Text { deltas, pause, .. } = reply(&request(&[("user", "[[slow]] <<delta>>")])) else {
            panic!("text")
        };
        assert_eq!((deltas.len(), deltas[0].as_str(), pause), (SLOW_DELTAS, "slow-0 ", Some(SLOW_PAUSE)));
    }

    #[test]
    fn a_shell_directive_calls_the_agents_shell_tool() {
        let call = reply(&request(&[("user", "[[shell:touch x.marker]] <<zeta>>")]));
        assert_eq!(
            call,
            Reply::ToolCall {
                name: "bash".into(),
                arguments: json!({"command": "touch x.marker", "description": "a command the fake model asked for"})
            }
        );
        let no_tools = json!({"messages": [{"role": "user", "content": "[[shell:ls]]"}]});
        assert_eq!(reply(&no_tools).text(), "echo: no shell tool among []");
    }

    #[test]
    fn content_parts_are_read_as_text() {
        let body = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi <<p>>"}]}]});
        assert_eq!(reply(&body).text(), "echo: p (user_turns=1)");
    }
}
