//! An Anthropic Messages request (`POST /v1/messages`) in the engine's terms: `system` and the
//! `messages` (content blocks `text`, `tool_use`, `tool_result`; `thinking` passed back is
//! dropped, the Cursor chat has it) become the conversation, `tools` the client's tools. Knobs the
//! CLI does not have (`max_tokens`, `temperature`, `thinking`, `metadata`, `cache_control`, …) are
//! ignored; what would change the answer and cannot be honoured (server tools, images,
//! documents) is refused.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::engine::tools::ToolSet;
use crate::http::errors::ApiError;
use crate::http::structured::Format;
use crate::vocab::Image;
use crate::vocab::{ChatMessage, Mode, Role, ToolCall, ToolChoice, ToolDefinition, ToolResult};

#[derive(Debug, Deserialize)]
pub struct MessagesRequest {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub messages: Option<Vec<Value>>,
    #[serde(default)]
    pub system: Option<Value>,
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub stream: Option<bool>,
    /// Required by Anthropic's API (and sent by every client); ignored: the CLI has no such knob.
    #[serde(default)]
    pub max_tokens: Option<Value>,
    /// Structured outputs: `output_config.format` (`http/structured`)…
    #[serde(default)]
    pub output_config: Option<Value>,
    /// … or the beta's `output_format`.
    #[serde(default)]
    pub output_format: Option<Value>,
    /// Not Anthropic's: `agent`, `ask` or `plan` for this request (else the server's `--mode`).
    #[serde(default)]
    pub mode: Option<Mode>,
}

#[derive(Debug)]
pub struct Checked {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Option<ToolSet>,
    pub stream: bool,
    pub mode: Option<Mode>,
    pub format: Option<Format>,
    /// The last user message's `image` blocks (base64).
    pub images: Vec<Image>,
}

impl MessagesRequest {
    /// `/v1/messages` (unlike `count_tokens`) needs `max_tokens`, as Anthropic's API does.
    pub fn check_create(self) -> Result<Checked, ApiError> {
        if self.max_tokens.as_ref().is_none_or(Value::is_null) {
            return Err(ApiError::bad_request("max_tokens: Field required").param("max_tokens"));
        }
        self.check()
    }

    pub fn check(self) -> Result<Checked, ApiError> {
        let model = self.model.as_deref().map(str::trim).filter(|m| !m.is_empty()).map(String::from);
        let Some(model) = model else {
            return Err(ApiError::bad_request("model: Field required").param("model"));
        };
        let Some(items) = &self.messages else {
            return Err(ApiError::bad_request("messages: Field required").param("messages"));
        };
        let mut messages = Vec::with_capacity(items.len() + 1);
        if let Some(system) = &self.system {
            let text = text_of(system, "system")?;
            if !text.trim().is_empty() {
                messages.push(ChatMessage::new(Role::System, text));
            }
        }
        let mut images = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let mut its = Vec::new();
            let some = message(item, i, &mut its)?;
            if some.iter().any(|m| m.role == Role::User && m.tool_results.is_empty()) {
                // The new request's images reach the agent; earlier ones its chat has seen.
                images = its;
            }
            messages.extend(some);
        }
        let tools = tool_set(&self)?;
        if tools.is_none() && messages.iter().any(|m| !m.tool_results.is_empty() || !m.tool_calls.is_empty()) {
            return Err(ApiError::bad_request(
                "`tool_use` and `tool_result` blocks need the `tools` they belong to: send the tool definitions with \
                 the request.",
            )
            .param("tools"));
        }
        if !messages.iter().any(|m| m.role == Role::User && !m.text.trim().is_empty()) {
            return Err(
                ApiError::bad_request("messages: at least one user message with text is required.").param("messages")
            );
        }
        let format = Format::from_output_config(self.output_config.as_ref(), self.output_format.as_ref())?;
        Ok(Checked { model, messages, tools, stream: self.stream.unwrap_or(false), mode: self.mode, format, images })
    }
}

/// `system` (or a `tool_result`'s content): a string, or text blocks joined by newlines.
fn text_of(value: &Value, at: &str) -> Result<String, ApiError> {
    match value {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        Value::Array(blocks) => {
            let mut texts = Vec::with_capacity(blocks.len());
            for (j, block) in blocks.iter().enumerate() {
                match (block.get("type").and_then(Value::as_str), block.get("text").and_then(Value::as_str)) {
                    (Some("text"), Some(text)) => texts.push(text),
                    (kind, _) => return Err(unsupported_block(kind, &format!("{at}[{j}]"))),
                }
            }
            Ok(texts.join("\n"))
        }
        _ => Err(ApiError::bad_request(format!("{at}: must be a string or a list of text blocks.")).param(at)),
    }
}

fn unsupported_block(kind: Option<&str>, at: &str) -> ApiError {
    match kind {
        None => ApiError::bad_request(format!("{at}: a content block needs a `type`.")).param(at),
        Some(kind) => ApiError::bad_request(format!(
            "{at}: content blocks of type `{kind}` are not supported here: cursor-bridge passes text, tool_use and \
             tool_result to the Cursor CLI."
        ))
        .param(format!("{at}.type")),
    }
}

/// One message as the engine's messages: a user message's `tool_result` blocks are one message
/// of results (followed by its text, if any), an assistant's `tool_use` blocks its calls.
fn message(item: &Value, i: usize, images: &mut Vec<Image>) -> Result<Vec<ChatMessage>, ApiError> {
    let at = format!("messages[{i}]");
    let role = match item.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        // Claude Code sends some of its context this way.
        Some("system") => Role::System,
        other => {
            return Err(ApiError::bad_request(format!(
                "{at}.role: unexpected role `{}`; expected user or assistant.",
                other.unwrap_or("(none)")
            ))
            .param(format!("{at}.role")))
        }
    };
    let blocks = match item.get("content") {
        Some(Value::String(s)) => return Ok(vec![ChatMessage::new(role, s.clone())]),
        Some(Value::Array(blocks)) => blocks,
        _ => {
            return Err(ApiError::bad_request(format!("{at}.content: must be a string or a list of blocks."))
                .param(format!("{at}.content")))
        }
    };
    let (mut texts, mut calls, mut results) = (Vec::new(), Vec::new(), Vec::new());
    for (j, block) in blocks.iter().enumerate() {
        let at = format!("{at}.content[{j}]");
        let kind = block.get("type").and_then(Value::as_str);
        match kind {
            Some("text") => match block.get("text").and_then(Value::as_str) {
                Some(text) => texts.push(text.to_string()),
                None => return Err(ApiError::bad_request(format!("{at}.text: Field required")).param(at)),
            },
            Some("thinking" | "redacted_thinking") if role == Role::Assistant => {}
            Some("image") if role == Role::User => images.push(image(block, &at)?),
            Some("tool_use") if role == Role::Assistant => {
                let (Some(id), Some(name)) =
                    (block.get("id").and_then(Value::as_str), block.get("name").and_then(Value::as_str))
                else {
                    return Err(
                        ApiError::bad_request(format!("{at}: a `tool_use` block needs `id` and `name`.")).param(at)
                    );
                };
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                calls.push(ToolCall { call_id: id.to_string(), name: name.to_string(), input });
            }
            Some("tool_result") if role == Role::User => {
                let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
                    return Err(ApiError::bad_request(format!("{at}.tool_use_id: Field required")).param(at));
                };
                let content = text_of(block.get("content").unwrap_or(&Value::Null), &format!("{at}.content"))?;
                let is_error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                results.push(ToolResult { call_id: id.to_string(), name: None, content, is_error });
            }
            kind => return Err(unsupported_block(kind, &at)),
        }
    }
    let text = texts.join("\n");
    if !results.is_empty() {
        let mut m = ChatMessage::new(Role::User, "");
        m.tool_results = results;
        let mut out = vec![m];
        if !text.is_empty() {
            out.push(ChatMessage::new(Role::User, text));
        }
        return Ok(out);
    }
    let mut m = ChatMessage::new(role, text);
    m.tool_calls = calls;
    Ok(vec![m])
}

/// An `image` block: base64 data (`source.type: "base64"`); a URL source is refused (nothing is
/// fetched), as is a `file` source.
fn image(block: &Value, at: &str) -> Result<Image, ApiError> {
    let source = block.get("source").unwrap_or(&Value::Null);
    let here = format!("{at}.source");
    match source.get("type").and_then(Value::as_str) {
        Some("base64") => {
            let mime = source.get("media_type").and_then(Value::as_str).unwrap_or_default();
            let data = source.get("data").and_then(Value::as_str).unwrap_or_default();
            crate::http::images::from_base64(mime, data, &here)
        }
        Some("url") => {
            crate::http::images::from_url(source.get("url").and_then(Value::as_str).unwrap_or_default(), &here)
        }
        other => Err(ApiError::bad_request(format!(
            "{here}.type: `{}` is not supported: send the image as `base64`.",
            other.unwrap_or("(none)")
        ))
        .param(format!("{here}.type"))),
    }
}

/// `tools` with `tool_choice` (`disable_parallel_tool_use` included), checked.
fn tool_set(request: &MessagesRequest) -> Result<Option<ToolSet>, ApiError> {
    let Some(defs) = request.tools.as_ref().filter(|t| !t.is_empty()) else { return Ok(None) };
    let mut tools: Vec<ToolDefinition> = Vec::with_capacity(defs.len());
    for (i, def) in defs.iter().enumerate() {
        let at = format!("tools[{i}]");
        match def.get("type").and_then(Value::as_str) {
            None | Some("custom") => {}
            Some(kind) => {
                return Err(ApiError::bad_request(format!(
                    "{at}.type: server tools (`{kind}`) are not supported: cursor-bridge runs no tools itself; \
                     declare client tools (`name`, `input_schema`) and run them yourself."
                ))
                .param(format!("{at}.type")))
            }
        }
        let Some(name) = def.get("name").and_then(Value::as_str).map(str::trim).filter(|n| !n.is_empty()) else {
            return Err(ApiError::bad_request(format!("{at}.name: Field required")).param(format!("{at}.name")));
        };
        if tools.iter().any(|t| t.name == name) {
            return Err(ApiError::bad_request(format!("tools: the tool `{name}` is declared twice.")).param(at));
        }
        tools.push(ToolDefinition {
            name: name.to_string(),
            description: def.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
            input_schema: def
                .get("input_schema")
                .cloned()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        });
    }
    let choice = request.tool_choice.as_ref().unwrap_or(&Value::Null);
    let parallel = !choice.get("disable_parallel_tool_use").and_then(Value::as_bool).unwrap_or(false);
    let choice = match choice.get("type").and_then(Value::as_str) {
        None if choice.is_null() => ToolChoice::Auto,
        Some("auto") => ToolChoice::Auto,
        Some("any") => ToolChoice::Required,
        Some("none") => ToolChoice::None,
        Some("tool") => match choice.get("name").and_then(Value::as_str) {
            Some(name) if tools.iter().any(|t| t.name == name) => ToolChoice::Named(name.to_string()),
            Some(name) => {
                return Err(ApiError::bad_request(format!("tool_choice: `{name}` is not in `tools`."))
                    .param("tool_choice.name"))
            }
            None => return Err(ApiError::bad_request("tool_choice.name: Field required").param("tool_choice.name")),
        },
        _ => {
            return Err(
                ApiError::bad_request("tool_choice.type: expected auto, any, tool or none.").param("tool_choice.type")
            )
        }
    };
    Ok(Some(ToolSet { tools, choice, parallel }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: Value) -> Result<Checked, ApiError> {
        serde_json::from_value::<MessagesRequest>(v).unwrap().check()
    }

    #[test]
    fn a_message_needs_max_tokens_and_a_count_does_not() {
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
        let e = serde_json::from_value::<MessagesRequest>(body.clone()).unwrap().check_create().unwrap_err();
        assert_eq!(e.param.as_deref(), Some("max_tokens"));
        assert!(check(body).is_ok());
    }

    #[test]
    fn blocks_map_to_messages_calls_and_results() {
        let write = json!({"name": "Write", "description": "Write a file", "input_schema": {"type": "object",
            "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}}}, "cache_control": {"type": "ephemeral"}});
        let c = check(json!({
            "model": "claude-opus-5-5", "max_tokens": 128000, "thinking": {"type": "adaptive"},
            "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "make a.txt"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "x"},
                    {"type": "text", "text": "Writing it."},
                    {"type": "tool_use", "id": "call_1", "name": "Write", "input": {"file_path": "/w/a.txt", "content": "hi"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "File created"}]},
                    {"type": "text", "text": "thanks"}]}
            ],
            "tools": [write], "tool_choice": {"type": "any", "disable_parallel_tool_use": true}, "stream": true
        }))
        .unwrap();
        let roles: Vec<Role> = c.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::User, Role::User]);
        assert_eq!(c.messages[0].text, "You are Claude Code.");
        assert_eq!(c.messages[2].text, "Writing it.");
        assert_eq!(c.messages[2].tool_calls[0].input["file_path"], "/w/a.txt");
        assert_eq!(c.messages[3].tool_results[0].content, "File created");
        assert_eq!(c.messages[4].text, "thanks");
        let set = c.tools.unwrap();
        assert_eq!((set.choice, set.parallel), (ToolChoice::Required, false));
        assert!(c.stream);
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_with_its_param() {
        let user = json!([{"role": "user", "content": "x"}]);
        let image = json!([{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": ""}}]}]);
        let cases = [
            (json!({"messages": user}), "model"),
            (json!({"model": "m"}), "messages"),
            (json!({"model": "m", "messages": image}), "messages[0].content[0].source"),
            (
                json!({"model": "m", "messages": user, "tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
                "tools[0].type",
            ),
            (
                json!({"model": "m", "messages": user, "tools": [{"name": "f"}], "tool_choice": {"type": "tool", "name": "g"}}),
                "tool_choice.name",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c"}]}]}),
                "tools",
            ),
            (json!({"model": "m", "messages": [{"role": "tool", "content": "x"}]}), "messages[0].role"),
        ];
        for (body, param) in cases {
            let e = check(body.clone()).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{body}: {}", e.message);
        }
    }
}
