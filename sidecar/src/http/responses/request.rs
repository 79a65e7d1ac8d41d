//! A Responses request (`POST /v1/responses`) in the engine's terms: `instructions` and the
//! `input` items become the conversation's messages, `tools` of type `function` and `custom` the
//! client's tools. A custom (freeform) tool is offered to the model as a function of one string
//! `input`, and its call goes back as that raw string (`custom_tool_call.input`). Fields the CLI
//! has no knob for (`temperature`, `max_output_tokens`, `include`, …) are ignored; what would
//! change the answer and cannot be honoured (hosted tools, images, `background`) is refused.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::engine::tools::ToolSet;
use crate::http::errors::ApiError;
use crate::http::structured::Format;
use crate::vocab::Image;
use crate::vocab::{ChatMessage, Mode, Role, ToolCall, ToolChoice, ToolDefinition, ToolResult};

#[derive(Debug, Deserialize)]
pub struct ResponsesRequest {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub input: Option<Value>,
    #[serde(default)]
    pub instructions: Option<Value>,
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default)]
    pub previous_response_id: Option<String>,
    #[serde(default)]
    pub store: Option<bool>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    #[serde(default)]
    pub text: Option<Value>,
    #[serde(default)]
    pub background: Option<bool>,
    #[serde(default)]
    pub conversation: Option<Value>,
    #[serde(default)]
    pub prompt: Option<Value>,
    /// Not OpenAI's: `agent`, `ask` or `plan` for this request (else the server's `--mode`).
    #[serde(default)]
    pub mode: Option<Mode>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Reasoning {
    #[serde(default)]
    pub effort: Option<String>,
    /// `auto`, `concise` or `detailed`: echoed (the thinking is always given whole as the summary).
    #[serde(default)]
    pub summary: Option<String>,
}

/// What the route needs from a request, checked.
#[derive(Debug)]
pub struct Checked {
    pub model: String,
    /// `instructions` as a leading system message (never carried to a later response: OpenAI's rule).
    pub instructions: Option<String>,
    /// The `input` items, after what `previous_response_id` names (added by the route).
    pub input: Vec<ChatMessage>,
    pub tools: Option<ToolSet>,
    /// `text.format` (`http/structured`).
    pub format: Option<Format>,
    /// The last user message's `input_image`s (data URLs).
    pub images: Vec<Image>,
    /// Names of the tools of type `custom`: their calls go back as `custom_tool_call`.
    pub custom: BTreeSet<String>,
    /// The namespace of each tool declared inside a `namespace` tool (Codex groups some so).
    pub namespaces: BTreeMap<String, String>,
    pub previous_response_id: Option<String>,
    pub store: bool,
    pub stream: bool,
    pub effort: Option<String>,
    pub mode: Option<Mode>,
    /// What the response echoes back.
    pub echo: Echo,
}

/// Request fields a Response object repeats.
#[derive(Debug, Clone, Default)]
pub struct Echo {
    pub instructions: Option<String>,
    pub tools: Vec<Value>,
    pub tool_choice: Value,
    pub parallel_tool_calls: bool,
    pub effort: Option<String>,
    /// `reasoning.summary` as asked.
    pub summary: Option<String>,
    /// `text` as asked (`{format: {type: "text"}}` when not).
    pub text: Value,
}

/// A tool as the response repeats it: a function tool with every field the Responses schema
/// requires of it (`description`, `parameters`, `strict`: null when the request left them out).
fn echoed_tool(tool: &Value) -> Value {
    let mut tool = tool.clone();
    if let Some(fields) = tool.as_object_mut().filter(|t| t.get("type").and_then(Value::as_str) == Some("function")) {
        for key in ["description", "parameters", "strict"] {
            fields.entry(key).or_insert(Value::Null);
        }
    }
    tool
}

/// The one-string schema a custom tool is offered with (as VS Code's Copilot harness does).
fn custom_schema() -> Value {
    json!({"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]})
}

impl ResponsesRequest {
    pub fn check(self) -> Result<Checked, ApiError> {
        let model = self.model.as_deref().map(str::trim).filter(|m| !m.is_empty()).map(String::from);
        let Some(model) = model else {
            return Err(ApiError::bad_request("You must provide a model parameter.").param("model"));
        };
        if self.background == Some(true) {
            return Err(ApiError::bad_request(
                "`background: true` is not supported: cursor-bridge answers while the request is open.",
            )
            .param("background"));
        }
        if self.conversation.as_ref().is_some_and(|c| !c.is_null()) {
            return Err(ApiError::bad_request(
                "`conversation` is not supported: continue with `previous_response_id`, or send the whole input.",
            )
            .param("conversation"));
        }
        if self.prompt.as_ref().is_some_and(|p| !p.is_null()) {
            return Err(
                ApiError::bad_request("Stored prompts (`prompt`) are not supported: send `input`.").param("prompt")
            );
        }
        let format = Format::from_text_format(self.text.as_ref())?;
        let instructions = match &self.instructions {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.trim().is_empty()),
            // A list of message items (the SDKs allow it): their text, in order.
            Some(items @ Value::Array(_)) => {
                let texts: Vec<String> =
                    input_messages(items, "instructions", None)?.into_iter().map(|m| m.text).collect();
                Some(texts.join("\n"))
            }
            Some(_) => return Err(ApiError::bad_request("`instructions` must be a string.").param("instructions")),
        };
        let Some(input) = &self.input else {
            return Err(ApiError::bad_request("Missing required parameter: 'input'.").param("input"));
        };
        let mut images = Vec::new();
        let input = input_messages(input, "input", Some(&mut images))?;
        let Declared { tools, custom, namespaces } = tool_set(&self)?;
        if tools.is_none() && input.iter().any(|m| !m.tool_results.is_empty() || !m.tool_calls.is_empty()) {
            return Err(ApiError::bad_request(
                "Tool calls and their outputs in `input` need the `tools` they belong to: send the tool definitions \
                 with the request.",
            )
            .param("tools"));
        }
        let echo = Echo {
            instructions: instructions.clone(),
            tools: self.tools.iter().flatten().map(echoed_tool).collect(),
            tool_choice: self.tool_choice.clone().unwrap_or_else(|| json!("auto")),
            parallel_tool_calls: self.parallel_tool_calls.unwrap_or(true),
            effort: self.reasoning.as_ref().and_then(|r| r.effort.clone()),
            summary: self.reasoning.as_ref().and_then(|r| r.summary.clone()),
            text: self
                .text
                .clone()
                .filter(|t| t.get("format").is_some())
                .unwrap_or_else(|| json!({"format": {"type": "text"}})),
        };
        Ok(Checked {
            model,
            instructions,
            input,
            tools,
            format,
            images,
            custom,
            namespaces,
            previous_response_id: self.previous_response_id.filter(|id| !id.trim().is_empty()),
            store: self.store.unwrap_or(true),
            stream: self.stream.unwrap_or(false),
            effort: self.reasoning.and_then(|r| r.effort).filter(|e| !e.is_empty()),
            mode: self.mode,
            echo,
        })
    }
}

/// `input` (a string, or a list of items) as the engine's messages. A `function_call` (or
/// `custom_tool_call`) joins the assistant message before it; consecutive outputs are one user
/// message of results. Reasoning items passed back are dropped: the Cursor session has them.
/// `images`: where the last user message's images go (else image parts are refused).
pub fn input_messages(
    input: &Value,
    param: &str,
    mut images: Option<&mut Vec<Image>>,
) -> Result<Vec<ChatMessage>, ApiError> {
    let items = match input {
        Value::String(s) => return Ok(vec![ChatMessage::new(Role::User, s.clone())]),
        Value::Array(items) => items,
        _ => return Err(ApiError::bad_request(format!("`{param}` must be a string or a list of items.")).param(param)),
    };
    let mut out: Vec<ChatMessage> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{param}[{i}]");
        let kind = item.get("type").and_then(Value::as_str);
        // An "easy" message has a role and no type.
        let kind = kind.unwrap_or(if item.get("role").is_some() { "message" } else { "" });
        match kind {
            "message" => {
                let mut its = Vec::new();
                let m = message(item, &at, images.is_some().then_some(&mut its))?;
                if let (Some(list), Role::User) = (images.as_deref_mut(), m.role) {
                    // The new request's images reach the agent; earlier ones its chat has seen.
                    *list = its;
                }
                out.push(m);
            }
            "function_call" | "custom_tool_call" => {
                let call = call(item, kind, &at)?;
                match out.last_mut() {
                    Some(last) if last.role == Role::Assistant => last.tool_calls.push(call),
                    _ => {
                        let mut m = ChatMessage::new(Role::Assistant, "");
                        m.tool_calls.push(call);
                        out.push(m);
                    }
                }
            }
            "function_call_output" | "custom_tool_call_output" => {
                let result = output(item, &at)?;
                match out.last_mut() {
                    Some(last) if last.role == Role::User && !last.tool_results.is_empty() && last.text.is_empty() => {
                        last.tool_results.push(result)
                    }
                    _ => {
                        let mut m = ChatMessage::new(Role::User, "");
                        m.tool_results.push(result);
                        out.push(m);
                    }
                }
            }
            "reasoning" => {}
            "" => return Err(ApiError::bad_request("An input item needs a `type`.").param(at)),
            "item_reference" => {
                return Err(ApiError::bad_request(
                    "`item_reference` items are not supported: send the items themselves, or continue with \
                     `previous_response_id`.",
                )
                .param(format!("{at}.type")))
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "Input items of type `{other}` are not supported: cursor-bridge takes messages, function_call, \
                     function_call_output, custom_tool_call, custom_tool_call_output and reasoning items."
                ))
                .param(format!("{at}.type")))
            }
        }
    }
    Ok(out)
}

fn message(item: &Value, at: &str, images: Option<&mut Vec<Image>>) -> Result<ChatMessage, ApiError> {
    let role = match item.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("system") | Some("developer") => Role::System,
        other => {
            return Err(ApiError::bad_request(format!(
                "Unknown role `{}`: expected user, assistant, system or developer.",
                other.unwrap_or("(none)")
            ))
            .param(format!("{at}.role")))
        }
    };
    let images = images.filter(|_| role == Role::User);
    let text = content_parts(item.get("content"), &format!("{at}.content"), images)?;
    Ok(ChatMessage::new(role, text))
}

/// A message's text: the string, or its text parts (`input_text`, `output_text`, `text`) joined
/// by newlines. Images and files are refused rather than silently dropped.
pub fn content_text(content: Option<&Value>, at: &str) -> Result<String, ApiError> {
    content_parts(content, at, None)
}

/// A message's text, and (`images`: a user message) its `input_image` parts with data URLs.
fn content_parts(content: Option<&Value>, at: &str, mut images: Option<&mut Vec<Image>>) -> Result<String, ApiError> {
    let parts = match content {
        None | Some(Value::Null) => return Ok(String::new()),
        Some(Value::String(s)) => return Ok(s.clone()),
        Some(Value::Array(parts)) => parts,
        Some(_) => return Err(ApiError::bad_request("`content` must be a string or a list of parts.").param(at)),
    };
    let mut texts = Vec::with_capacity(parts.len());
    for (j, part) in parts.iter().enumerate() {
        let kind = part.get("type").and_then(Value::as_str);
        match (kind, part.get("text").and_then(Value::as_str)) {
            (Some("input_text" | "output_text" | "text" | "summary_text"), Some(text)) => texts.push(text),
            (Some("refusal"), _) => texts.extend(part.get("refusal").and_then(Value::as_str)),
            (Some("input_image"), _) if images.is_some() => {
                let here = format!("{at}[{j}].image_url");
                let Some(url) = part.get("image_url").and_then(Value::as_str) else {
                    return Err(ApiError::bad_request(
                        "An `input_image` needs an `image_url` (a data URL); `file_id` is not supported.",
                    )
                    .param(here));
                };
                let image = crate::http::images::from_url(url, &here)?;
                if let Some(list) = images.as_deref_mut() {
                    list.push(image);
                }
            }
            (Some(other @ ("input_text" | "output_text" | "text")), None) => {
                return Err(ApiError::bad_request(format!("An `{other}` part needs a string `text`."))
                    .param(format!("{at}[{j}]")))
            }
            (Some(other), _) => {
                return Err(ApiError::bad_request(format!(
                    "Content parts of type `{other}` are not supported: cursor-bridge passes text only to the Cursor \
                     CLI. Send `input_text` parts or a string."
                ))
                .param(format!("{at}[{j}].type")))
            }
            (None, _) => {
                return Err(ApiError::bad_request("A content part needs a `type`.").param(format!("{at}[{j}]")))
            }
        }
    }
    Ok(texts.join("\n"))
}

fn call(item: &Value, kind: &str, at: &str) -> Result<ToolCall, ApiError> {
    let Some(name) = item.get("name").and_then(Value::as_str) else {
        return Err(ApiError::bad_request(format!("A `{kind}` item needs a `name`.")).param(format!("{at}.name")));
    };
    let Some(call_id) = item.get("call_id").and_then(Value::as_str) else {
        return Err(ApiError::bad_request(format!("A `{kind}` item needs a `call_id`.")).param(format!("{at}.call_id")));
    };
    let input = if kind == "custom_tool_call" {
        json!({"input": item.get("input").and_then(Value::as_str).unwrap_or_default()})
    } else {
        // `arguments` is a JSON string; kept as given when it is not JSON.
        match item.get("arguments") {
            Some(Value::String(text)) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())),
            Some(other) => other.clone(),
            None => json!({}),
        }
    };
    Ok(ToolCall { call_id: call_id.to_string(), name: name.to_string(), input })
}

fn output(item: &Value, at: &str) -> Result<ToolResult, ApiError> {
    let Some(call_id) = item.get("call_id").and_then(Value::as_str) else {
        return Err(
            ApiError::bad_request("A tool output item needs the `call_id` it answers.").param(format!("{at}.call_id"))
        );
    };
    let content = content_text(item.get("output"), &format!("{at}.output"))?;
    Ok(ToolResult { call_id: call_id.to_string(), name: None, content, is_error: false })
}

/// The request's tools, checked.
#[derive(Default)]
struct Declared {
    tools: Option<ToolSet>,
    custom: BTreeSet<String>,
    namespaces: BTreeMap<String, String>,
}

/// Tools Codex offers with every request that cursor-bridge cannot serve: OpenAI's own web search,
/// and the search over deferred tools whose call is an item of its own (`tool_search_call`).
/// Leaving them out loses nothing the client asked for but a capability it offered (a
/// `tool_choice` that names one is still refused).
const LEFT_OUT: [&str; 3] = ["web_search", "web_search_preview", "tool_search"];

/// `tools` (a `namespace` tool's own tools among them) with `tool_choice` and
/// `parallel_tool_calls`, checked; no tool set without tools.
fn tool_set(request: &ResponsesRequest) -> Result<Declared, ApiError> {
    let mut declared = Declared::default();
    let Some(defs) = request.tools.as_ref().filter(|t| !t.is_empty()) else { return Ok(declared) };
    let mut flat: Vec<(String, Option<String>, &Value)> = Vec::with_capacity(defs.len());
    for (i, def) in defs.iter().enumerate() {
        let at = format!("tools[{i}]");
        match def.get("type").and_then(Value::as_str) {
            Some("namespace") => {
                let ns = def.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                for (j, inner) in def.get("tools").and_then(Value::as_array).into_iter().flatten().enumerate() {
                    flat.push((format!("{at}.tools[{j}]"), Some(ns.clone()), inner));
                }
            }
            Some(kind) if LEFT_OUT.contains(&kind) => {
                tracing::debug!(tool = kind, "a hosted tool the client offers is left out")
            }
            _ => flat.push((at, None, def)),
        }
    }
    let mut tools: Vec<ToolDefinition> = Vec::with_capacity(flat.len());
    for (at, ns, def) in flat {
        let kind = def.get("type").and_then(Value::as_str).unwrap_or("(none)");
        let name = def.get("name").and_then(Value::as_str).map(str::trim).filter(|n| !n.is_empty());
        let description = def.get("description").and_then(Value::as_str).unwrap_or_default().to_string();
        let (name, description, input_schema) = match (kind, name) {
            ("function" | "custom", None) => {
                return Err(ApiError::bad_request("A tool needs a `name`.").param(format!("{at}.name")))
            }
            ("function", Some(name)) => {
                let schema = def
                    .get("parameters")
                    .cloned()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
                (name, description, schema)
            }
            ("custom", Some(name)) => {
                declared.custom.insert(name.to_string());
                // The model must write what the tool's grammar accepts: say what it is.
                let format = def.get("format").filter(|f| f.get("type").and_then(Value::as_str) == Some("grammar"));
                let description = match format {
                    Some(f) => format!(
                        "{description}\n\nThe `input` string must match this {} grammar:\n{}",
                        f.get("syntax").and_then(Value::as_str).unwrap_or("formal"),
                        f.get("definition").and_then(Value::as_str).unwrap_or_default()
                    ),
                    None => description,
                };
                (name, description, custom_schema())
            }
            (other, _) => {
                return Err(ApiError::bad_request(format!(
                    "Tools of type `{other}` are not supported: cursor-bridge runs no hosted tools; declare \
                     `function` or `custom` tools and run them yourself."
                ))
                .param(format!("{at}.type")))
            }
        };
        if tools.iter().any(|t| t.name == name) {
            return Err(ApiError::bad_request(format!("The tool `{name}` is declared twice.")).param(at));
        }
        if let Some(ns) = ns {
            declared.namespaces.insert(name.to_string(), ns);
        }
        tools.push(ToolDefinition { name: name.to_string(), description, input_schema });
    }
    if tools.is_empty() {
        return Ok(declared);
    }
    let choice = match request.tool_choice.as_ref().unwrap_or(&Value::Null) {
        Value::Null => ToolChoice::Auto,
        Value::String(word) => match word.as_str() {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            other => {
                return Err(ApiError::bad_request(format!(
                    "Unknown `tool_choice` `{other}`: expected \"auto\", \"none\", \"required\" or a tool."
                ))
                .param("tool_choice"))
            }
        },
        Value::Object(named) => {
            let kind = named.get("type").and_then(Value::as_str).unwrap_or_default();
            if !matches!(kind, "function" | "custom") {
                return Err(ApiError::bad_request(format!(
                    "`tool_choice` of type `{kind}` is not supported: name a `function` or `custom` tool, or use \
                     \"auto\", \"none\" or \"required\"."
                ))
                .param("tool_choice.type"));
            }
            match named.get("name").and_then(Value::as_str) {
                Some(name) if tools.iter().any(|t| t.name == name) => ToolChoice::Named(name.to_string()),
                Some(name) => {
                    return Err(ApiError::bad_request(format!(
                        "`tool_choice` names `{name}`, which is not in `tools`."
                    ))
                    .param("tool_choice"))
                }
                None => return Err(ApiError::bad_request("`tool_choice` needs a tool `name`.").param("tool_choice")),
            }
        }
        _ => return Err(ApiError::bad_request("`tool_choice` must be a string or an object.").param("tool_choice")),
    };
    declared.tools = Some(ToolSet { tools, choice, parallel: request.parallel_tool_calls.unwrap_or(true) });
    Ok(declared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: Value) -> Result<Checked, ApiError> {
        serde_json::from_value::<ResponsesRequest>(v).unwrap().check()
    }

    #[test]
    fn a_string_input_is_one_user_message_and_instructions_stay_apart() {
        let c = check(json!({"model": "auto", "input": "hi ✓", "instructions": "be brief", "temperature": 0.3,
            "include": ["reasoning.encrypted_content"], "store": false, "prompt_cache_key": "x"}))
        .unwrap();
        assert_eq!(c.input.len(), 1);
        assert_eq!((c.input[0].role, c.input[0].text.as_str()), (Role::User, "hi ✓"));
        assert_eq!(c.instructions.as_deref(), Some("be brief"));
        assert!(!c.store && !c.stream && c.tools.is_none());
    }

    #[test]
    fn items_map_to_messages_calls_and_results() {
        let tools = json!([
            {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
            {"type": "custom", "name": "apply_patch", "description": "Patch files.",
             "format": {"type": "grammar", "syntax": "lark", "definition": "start: \"*** Begin Patch\""}}
        ]);
        let input = json!([
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
            {"role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hmm"}], "encrypted_content": null},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "On it."}]},
            {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"},
            {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
            {"type": "custom_tool_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "Done!"}]}
        ]);
        let c = check(json!({"model": "auto", "input": input, "tools": tools, "tool_choice": {"type": "custom", "name": "apply_patch"},
            "parallel_tool_calls": false})).unwrap();
        let roles: Vec<Role> = c.input.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::User]);
        assert_eq!(c.input[2].text, "On it.");
        assert_eq!(c.input[2].tool_calls[0].input, json!({"cmd": "ls"}));
        assert_eq!(c.input[2].tool_calls[1].input, json!({"input": "*** Begin Patch"}));
        let results: Vec<(&str, &str)> =
            c.input[3].tool_results.iter().map(|r| (r.call_id.as_str(), r.content.as_str())).collect();
        assert_eq!(results, [("call_1", "a.txt"), ("call_2", "Done!")]);
        let set = c.tools.unwrap();
        assert_eq!((set.choice, set.parallel), (ToolChoice::Named("apply_patch".into()), false));
        assert_eq!(set.tools[1].input_schema, custom_schema());
        assert!(set.tools[1].description.contains("lark grammar:\nstart:"), "{}", set.tools[1].description);
        assert!(c.custom.contains("apply_patch") && !c.custom.contains("exec_command"));
    }

    #[test]
    fn echoed_function_tools_carry_every_field_the_schema_requires() {
        let c = check(json!({"model": "auto", "input": "x", "tools": [{"type": "function", "name": "f"},
            {"type": "function", "name": "g", "strict": true, "description": "G"}, {"type": "custom", "name": "p"}]}))
        .unwrap();
        assert_eq!(
            c.echo.tools[0],
            json!({"type": "function", "name": "f", "description": null, "parameters": null, "strict": null})
        );
        assert_eq!(
            (c.echo.tools[1]["strict"].as_bool(), c.echo.tools[1]["description"].as_str()),
            (Some(true), Some("G"))
        );
        assert!(c.echo.tools[2].get("strict").is_none(), "other tools as sent");
    }

    #[test]
    fn codex_tools_namespaces_flattened_and_its_web_search_left_out() {
        let tools = json!([
            {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}},
            {"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.", "tools": [
                {"type": "function", "name": "close_agent", "parameters": {"type": "object", "properties": {}}}]},
            {"type": "web_search", "external_web_access": false},
            {"type": "tool_search", "execution": "client", "parameters": {"type": "object"}}
        ]);
        let c = check(json!({"model": "auto", "input": "x", "tools": tools})).unwrap();
        let names: Vec<&str> = c.tools.as_ref().unwrap().tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["exec_command", "close_agent"]);
        assert_eq!(c.namespaces.get("close_agent").map(String::as_str), Some("multi_agent_v1"));
        let only_search = check(json!({"model": "auto", "input": "x", "tools": [{"type": "web_search"}]})).unwrap();
        assert!(only_search.tools.is_none());
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_with_its_param() {
        let cases = [
            (json!({"input": "x"}), "model"),
            (json!({"model": "auto"}), "input"),
            (json!({"model": "auto", "input": "x", "tools": [{"type": "file_search"}]}), "tools[0].type"),
            (json!({"model": "auto", "input": "x", "tools": [{"type": "function"}]}), "tools[0].name"),
            (json!({"model": "auto", "input": "x", "background": true}), "background"),
            (json!({"model": "auto", "input": "x", "text": {"format": {"type": "json_schema"}}}), "text.format.schema"),
            (json!({"model": "auto", "input": "x", "text": {"format": {"type": "xml"}}}), "text.format.type"),
            (
                json!({"model": "auto", "input": [{"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]}]}),
                "input[0].content[0].image_url",
            ),
            (json!({"model": "auto", "input": [{"type": "web_search_call"}]}), "input[0].type"),
            (
                json!({"model": "auto", "input": [{"type": "function_call_output", "call_id": "c", "output": "1"}]}),
                "tools",
            ),
            (
                json!({"model": "auto", "input": "x", "tools": [{"type": "function", "name": "f"}], "tool_choice": {"type": "function", "name": "g"}}),
                "tool_choice",
            ),
            (
                json!({"model": "auto", "input": "x", "tools": [{"type": "function", "name": "f"}], "tool_choice": {"type": "allowed_tools"}}),
                "tool_choice.type",
            ),
        ];
        for (body, param) in cases {
            let e = check(body.clone()).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{body}: {}", e.message);
            assert_eq!(e.status.as_u16(), 400);
        }
    }
}
