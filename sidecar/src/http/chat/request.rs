//! A chat completion request (`POST /v1/chat/completions`, OpenAI's wire, the subset clients send)
//! in the engine's terms: the messages become the conversation's, `tools` the client's tools.
//! Fields the CLI has no knob for (`temperature`, `max_tokens`, …) are accepted and ignored, as
//! most OpenAI-compatible servers do.

use serde::Deserialize;
use serde_json::Value;

use crate::engine::tools::ToolSet;
use crate::http::errors::ApiError;
use crate::http::structured::Format;
use crate::vocab::Image;
use crate::vocab::{ChatMessage, Mode, Role, ToolCall, ToolChoice, ToolDefinition, ToolResult};

#[derive(Debug, Deserialize)]
pub struct ChatCompletionRequest {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub messages: Option<Vec<RequestMessage>>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// The pre-`tools` spelling of the same thing.
    #[serde(default)]
    pub functions: Option<Vec<Value>>,
    #[serde(default)]
    pub function_call: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default)]
    pub n: Option<u32>,
    /// `text`, `json_object` or `json_schema` (`http/structured`).
    #[serde(default)]
    pub response_format: Option<Value>,
    /// Not OpenAI's: `agent`, `ask` or `plan` for this request (else the server's `--mode`).
    #[serde(default)]
    pub mode: Option<Mode>,
    // Other fields (`user`, `temperature`, `max_tokens`, …) are ignored: the CLI has no such knobs.
}

#[derive(Debug, Default, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Debug, Deserialize)]
pub struct RequestMessage {
    pub role: String,
    /// A string, an array of parts, or null (an assistant message that only called tools).
    #[serde(default)]
    pub content: Option<Value>,
    /// An assistant message's calls of the client's tools.
    #[serde(default)]
    pub tool_calls: Option<Vec<Value>>,
    /// The pre-`tools` spelling of one call.
    #[serde(default)]
    pub function_call: Option<Value>,
    /// A `tool` message: the call it answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// A `function` message: the function it answers.
    #[serde(default)]
    pub name: Option<String>,
}

/// What the engine needs from a request, checked.
#[derive(Debug)]
pub struct Checked {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub stream: bool,
    pub include_usage: bool,
    pub mode: Option<Mode>,
    /// The client's tools: the model calls these, the CLI's own tools are off.
    pub tools: Option<ToolSet>,
    pub format: Option<Format>,
    /// The last user message's images (`image_url` parts with data URLs).
    pub images: Vec<Image>,
}

impl ChatCompletionRequest {
    pub fn check(self) -> Result<Checked, ApiError> {
        let tools = tool_set(&self)?;
        let format = Format::from_response_format(self.response_format.as_ref())?;
        let model = self.model.map(|m| m.trim().to_string()).filter(|m| !m.is_empty());
        let Some(model) = model else {
            return Err(ApiError::bad_request("You must provide a model parameter.").param("model"));
        };
        let Some(messages) = self.messages else {
            return Err(ApiError::bad_request("Missing required parameter: 'messages'.").param("messages"));
        };
        if self.n.is_some_and(|n| n != 1) {
            return Err(ApiError::bad_request("Only `n: 1` is supported.").param("n"));
        }
        let mut chat: Vec<ChatMessage> = Vec::with_capacity(messages.len());
        let mut images = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let (message, its_images) = m.to_chat(i)?;
            if message.role == Role::User && message.tool_results.is_empty() {
                // The new request's images reach the agent; earlier ones its chat has seen.
                images = its_images;
            }
            // Consecutive `tool` messages answer one reply's calls: one message of results.
            match chat.last_mut() {
                Some(last) if !message.tool_results.is_empty() && !last.tool_results.is_empty() => {
                    last.tool_results.extend(message.tool_results)
                }
                _ => chat.push(message),
            }
        }
        if tools.is_none() && chat.iter().any(|m| !m.tool_results.is_empty()) {
            return Err(ApiError::bad_request(
                "`tool` messages need the `tools` they answer: send the tool definitions with the request.",
            )
            .param("tools"));
        }
        // Also what names the conversation's private folder: check before anything is created.
        if !chat.iter().any(|m| m.role == Role::User && m.tool_results.is_empty()) {
            return Err(ApiError::bad_request("`messages` must contain a user message.").param("messages"));
        }
        Ok(Checked {
            model,
            messages: chat,
            stream: self.stream.unwrap_or(false),
            include_usage: self.stream_options.is_some_and(|o| o.include_usage),
            mode: self.mode,
            tools,
            format,
            images,
        })
    }
}

/// `tools` (or the older `functions`) with `tool_choice` (`function_call`) and
/// `parallel_tool_calls`, checked; `None` when the request declares no tools.
fn tool_set(request: &ChatCompletionRequest) -> Result<Option<ToolSet>, ApiError> {
    let (defs, legacy) = match (&request.tools, &request.functions) {
        (Some(tools), _) if !tools.is_empty() => (tools, false),
        (_, Some(functions)) if !functions.is_empty() => (functions, true),
        _ => return Ok(None),
    };
    let mut tools = Vec::with_capacity(defs.len());
    for (i, def) in defs.iter().enumerate() {
        let param = if legacy { format!("functions[{i}]") } else { format!("tools[{i}]") };
        let function = if legacy {
            def
        } else {
            match def.get("type").and_then(Value::as_str) {
                Some("function") => {}
                other => {
                    return Err(ApiError::bad_request(format!(
                        "Tools of type `{}` are not supported: only `function` tools.",
                        other.unwrap_or("(none)")
                    ))
                    .param(format!("{param}.type")))
                }
            }
            def.get("function").ok_or_else(|| ApiError::bad_request("A tool needs a `function`.").param(&param))?
        };
        let name = function.get("name").and_then(Value::as_str).map(str::trim).filter(|n| !n.is_empty());
        let Some(name) = name else {
            return Err(ApiError::bad_request("A function needs a `name`.").param(format!("{param}.name")));
        };
        if tools.iter().any(|t: &ToolDefinition| t.name == name) {
            return Err(ApiError::bad_request(format!("The tool `{name}` is declared twice.")).param(param));
        }
        tools.push(ToolDefinition {
            name: name.to_string(),
            description: function.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
            input_schema: function
                .get("parameters")
                .cloned()
                .filter(Value::is_object)
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
        });
    }
    let (choice, param) = match (&request.tool_choice, &request.function_call) {
        (Some(c), _) => (c, "tool_choice"),
        (None, Some(c)) => (c, "function_call"),
        (None, None) => (&Value::Null, "tool_choice"),
    };
    let choice = match choice {
        Value::Null => ToolChoice::Auto,
        Value::String(word) => match word.as_str() {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            other => {
                return Err(ApiError::bad_request(format!(
                    "Unknown `{param}` `{other}`: expected \"auto\", \"none\", \"required\" or a function."
                ))
                .param(param))
            }
        },
        Value::Object(named) => {
            let name = named.get("function").and_then(|f| f.get("name")).or_else(|| named.get("name"));
            match name.and_then(Value::as_str) {
                Some(name) if tools.iter().any(|t| t.name == name) => ToolChoice::Named(name.to_string()),
                Some(name) => {
                    return Err(ApiError::bad_request(format!("`{param}` names `{name}`, which is not in `tools`."))
                        .param(param))
                }
                None => return Err(ApiError::bad_request(format!("`{param}` needs a function name.")).param(param)),
            }
        }
        _ => return Err(ApiError::bad_request(format!("`{param}` must be a string or an object.")).param(param)),
    };
    Ok(Some(ToolSet { tools, choice, parallel: request.parallel_tool_calls.unwrap_or(true) }))
}

impl RequestMessage {
    fn to_chat(&self, i: usize) -> Result<(ChatMessage, Vec<Image>), ApiError> {
        let role = match self.role.as_str() {
            "system" | "developer" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" | "function" => return Ok((self.tool_result(i)?, Vec::new())),
            other => {
                return Err(ApiError::bad_request(format!(
                    "Unknown role `{other}`: expected system, developer, user, assistant or tool."
                ))
                .param(format!("messages[{i}].role")))
            }
        };
        let mut images = Vec::new();
        let text = content_parts(self.content.as_ref(), i, (role == Role::User).then_some(&mut images))?;
        let mut message = ChatMessage::new(role, text.clone().unwrap_or_default());
        if role == Role::Assistant {
            message.tool_calls = self.calls(i)?;
        }
        if text.is_none() && role != Role::Assistant {
            return Err(ApiError::bad_request(format!("A `{}` message needs `content`.", self.role))
                .param(format!("messages[{i}].content")));
        }
        Ok((message, images))
    }

    /// An assistant message's `tool_calls` (or `function_call`).
    fn calls(&self, i: usize) -> Result<Vec<ToolCall>, ApiError> {
        let mut calls = Vec::new();
        let legacy = self.function_call.iter().map(|f| (None, f));
        let listed = self.tool_calls.iter().flatten().map(|c| (c.get("id").and_then(Value::as_str), c));
        for (j, (id, call)) in listed.chain(legacy).enumerate() {
            let param = format!("messages[{i}].tool_calls[{j}]");
            let function = call.get("function").unwrap_or(call);
            let Some(name) = function.get("name").and_then(Value::as_str) else {
                return Err(ApiError::bad_request("A tool call needs a function `name`.").param(param));
            };
            // `arguments` is a JSON string in OpenAI's wire; kept as given when it is not JSON.
            let input = match function.get("arguments") {
                Some(Value::String(text)) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())),
                Some(other) => other.clone(),
                None => Value::Object(Default::default()),
            };
            calls.push(ToolCall { call_id: id.unwrap_or(name).to_string(), name: name.to_string(), input });
        }
        Ok(calls)
    }

    /// A `tool` (or `function`) message: one result, in a user message of results.
    fn tool_result(&self, i: usize) -> Result<ChatMessage, ApiError> {
        let call_id = match (self.role.as_str(), &self.tool_call_id, &self.name) {
            (_, Some(id), _) => id.clone(),
            ("function", None, Some(name)) => name.clone(),
            _ => {
                return Err(ApiError::bad_request("A `tool` message needs the `tool_call_id` it answers.")
                    .param(format!("messages[{i}].tool_call_id")))
            }
        };
        let content = content_text(self.content.as_ref(), i)?.unwrap_or_default();
        let mut message = ChatMessage::new(Role::User, "");
        message.tool_results.push(ToolResult { call_id, name: self.name.clone(), content, is_error: false });
        Ok(message)
    }
}

/// A message's text: the string, or its text parts joined by newlines.
fn content_text(content: Option<&Value>, i: usize) -> Result<Option<String>, ApiError> {
    content_parts(content, i, None)
}

/// A message's text, and (`images`: a user message) its `image_url` parts. Audio, files, and
/// images where none may go are refused rather than silently dropped: the answer would ignore
/// what the user sent.
fn content_parts(
    content: Option<&Value>,
    i: usize,
    mut images: Option<&mut Vec<Image>>,
) -> Result<Option<String>, ApiError> {
    let parts = match content {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => return Ok(Some(s.clone())),
        Some(Value::Array(parts)) => parts,
        Some(_) => {
            return Err(ApiError::bad_request("`content` must be a string or an array of content parts.")
                .param(format!("messages[{i}].content")))
        }
    };
    let mut texts = Vec::with_capacity(parts.len());
    for (j, part) in parts.iter().enumerate() {
        let param = format!("messages[{i}].content[{j}]");
        let kind = part.get("type").and_then(Value::as_str);
        match (kind, part.get("text").and_then(Value::as_str)) {
            (Some("text"), Some(text)) => texts.push(text),
            (Some("text"), None) => {
                return Err(ApiError::bad_request("A `text` content part needs a string `text`.").param(param))
            }
            (Some("image_url"), _) if images.is_some() => {
                let url = part.get("image_url").and_then(|u| u.get("url").or(Some(u))).and_then(Value::as_str);
                let Some(url) = url else {
                    return Err(ApiError::bad_request("An `image_url` part needs `image_url.url`.").param(param));
                };
                let image = crate::http::images::from_url(url, &format!("{param}.image_url"))?;
                if let Some(list) = images.as_deref_mut() {
                    list.push(image);
                }
            }
            (Some(other), _) => {
                return Err(ApiError::bad_request(format!(
                    "Content parts of type `{other}` are not supported: cursor-bridge passes text only to the \
                     Cursor CLI. Send `{{\"type\": \"text\", \"text\": …}}` parts or a string."
                ))
                .param(format!("{param}.type")))
            }
            (None, _) => return Err(ApiError::bad_request("A content part needs a `type`.").param(param)),
        }
    }
    Ok(Some(texts.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: Value) -> Result<Checked, ApiError> {
        serde_json::from_value::<ChatCompletionRequest>(v).unwrap().check()
    }

    #[test]
    fn messages_map_to_the_engine() {
        let c = check(json!({
            "model": "auto",
            "messages": [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b ✓"}]},
                {"role": "assistant", "content": null},
                {"role": "user", "content": "c"}
            ],
            "temperature": 0.2,
            "user": "someone"
        }))
        .unwrap();
        let roles: Vec<Role> = c.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::User]);
        assert_eq!(c.messages[1].text, "a\nb ✓");
        assert_eq!(c.messages[2].text, "");
        assert!(!c.stream);
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        let e = check(json!({"messages": [{"role": "user", "content": "x"}]})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("model"));
        let e = check(json!({"model": "auto"})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages"));
        let e = check(json!({"model": "auto", "messages": [{"role": "system", "content": "s"}]})).unwrap_err();
        assert!(e.message.contains("user message"), "{}", e.message);
        // Images: a data URL in a user message; a web URL, or an image elsewhere, is refused.
        let image = |url: &str| json!({"type": "image_url", "image_url": {"url": url}});
        let ok = check(json!({"model": "auto", "messages": [{"role": "user", "content": [image("data:image/png;base64,AA==")]},
            {"role": "assistant", "content": "a cat"},
            {"role": "user", "content": [{"type": "text", "text": "and this?"}, image("data:image/gif;base64,R0lG")]}]}))
        .unwrap();
        let kinds: Vec<&str> = ok.images.iter().map(|i| i.mime_type.as_str()).collect();
        assert_eq!(kinds, ["image/gif"], "only the new message's images");
        let e =
            check(json!({"model": "auto", "messages": [{"role": "user", "content": [image("https://x/cat.png")]}]}))
                .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].content[0].image_url"));
        let e = check(json!({"model": "auto", "messages": [{"role": "system", "content": [image("data:image/png;base64,AA==")]}]}))
            .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].content[0].type"));
        let e = check(json!({"model": "auto", "messages": [{"role": "tool", "content": "42"}]})).unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert_eq!(e.param.as_deref(), Some("messages[0].tool_call_id"));
        let e = check(json!({"model": "auto", "messages": [{"role": "user", "content": 42}]})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].content"));
    }

    #[test]
    fn client_tools_and_their_results_map_to_the_engine() {
        let tool = json!({"type": "function", "function": {"name": "get_weather", "description": "Weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}});
        let msgs = json!([
            {"role": "user", "content": "weather in Paris and Rome?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "rain"}]}
        ]);
        let c =
            check(json!({"model": "auto", "messages": msgs, "tools": [tool], "parallel_tool_calls": false})).unwrap();
        let set = c.tools.unwrap();
        assert_eq!(set.tools[0].name, "get_weather");
        assert_eq!(set.tools[0].input_schema["required"], json!(["city"]));
        assert_eq!((set.choice, set.parallel), (ToolChoice::Auto, false));
        assert_eq!(c.messages.len(), 3, "the two results are one message");
        assert_eq!(c.messages[1].tool_calls[1].input, json!({"city": "Rome"}));
        let results: Vec<(&str, &str)> =
            c.messages[2].tool_results.iter().map(|r| (r.call_id.as_str(), r.content.as_str())).collect();
        assert_eq!(results, [("call_1", "sunny"), ("call_2", "rain")]);
    }

    #[test]
    fn tool_choice_variants() {
        let tool = json!({"type": "function", "function": {"name": "f"}});
        let msgs = json!([{"role": "user", "content": "x"}]);
        let choice = |c: Value| check(json!({"model": "auto", "messages": msgs, "tools": [tool], "tool_choice": c}));
        assert_eq!(choice(json!("none")).unwrap().tools.unwrap().choice, ToolChoice::None);
        assert_eq!(choice(json!("required")).unwrap().tools.unwrap().choice, ToolChoice::Required);
        let named = json!({"type": "function", "function": {"name": "f"}});
        assert_eq!(choice(named).unwrap().tools.unwrap().choice, ToolChoice::Named("f".into()));
        let e = choice(json!({"type": "function", "function": {"name": "g"}})).unwrap_err();
        assert!(e.message.contains("not in `tools`"), "{}", e.message);
        assert_eq!(choice(json!("sometimes")).unwrap_err().param.as_deref(), Some("tool_choice"));
        assert!(check(json!({"model": "auto", "messages": msgs, "tools": []})).unwrap().tools.is_none());
        let legacy = check(json!({"model": "auto", "messages": msgs, "functions": [{"name": "f"}]})).unwrap();
        assert_eq!(legacy.tools.unwrap().tools[0].input_schema, json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn bad_tools_say_what_is_wrong() {
        let msgs = json!([{"role": "user", "content": "x"}]);
        let cases = [
            (json!([{"type": "retrieval"}]), "tools[0].type"),
            (json!([{"type": "function", "function": {"description": "no name"}}]), "tools[0].name"),
            (
                json!([{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}]),
                "tools[1]",
            ),
        ];
        for (tools, param) in cases {
            let e = check(json!({"model": "auto", "messages": msgs, "tools": tools})).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{}", e.message);
        }
        let results = json!([{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c", "content": "1"}]);
        let e = check(json!({"model": "auto", "messages": results})).unwrap_err();
        assert!(e.message.contains("need the `tools`"), "{}", e.message);
    }
}
