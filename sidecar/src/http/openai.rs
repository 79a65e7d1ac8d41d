//! OpenAI's wire types (the subset `/v1/chat/completions` and `/v1/models` need) and the mapping
//! of a request onto the engine's `chat/send` messages. Fields the CLI has no knob for
//! (`temperature`, `max_tokens`, …) are accepted and ignored, as most OpenAI-compatible servers do.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::errors::ApiError;
use crate::protocol::{ChatMessage, Mode, ModelInfo, Role, Usage};

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
    pub n: Option<u32>,
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
}

/// What the engine needs from a request, checked.
#[derive(Debug)]
pub struct Checked {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub stream: bool,
    pub include_usage: bool,
    pub mode: Option<Mode>,
}

const TOOLS_MESSAGE: &str = "This server cannot call client-side tools: the Cursor CLI runs its own tools \
(reading and editing files, running commands, searching) inside the server's workspace and cannot call \
functions defined by the client. Send the request without `tools`, or with `tool_choice: \"none\"`.";

impl ChatCompletionRequest {
    pub fn check(self) -> Result<Checked, ApiError> {
        let model = self.model.map(|m| m.trim().to_string()).filter(|m| !m.is_empty());
        let Some(model) = model else {
            return Err(ApiError::bad_request("You must provide a model parameter.").param("model"));
        };
        let Some(messages) = self.messages else {
            return Err(ApiError::bad_request("Missing required parameter: 'messages'.").param("messages"));
        };
        let declares_tools = self.tools.as_ref().is_some_and(|t| !t.is_empty())
            || self.functions.as_ref().is_some_and(|f| !f.is_empty());
        let tools_off = is_none_choice(self.tool_choice.as_ref()) || is_none_choice(self.function_call.as_ref());
        if declares_tools && !tools_off {
            return Err(ApiError::bad_request(TOOLS_MESSAGE).param("tools").code("tools_not_supported"));
        }
        if self.n.is_some_and(|n| n != 1) {
            return Err(ApiError::bad_request("Only `n: 1` is supported.").param("n"));
        }
        let messages = messages.into_iter().enumerate().map(|(i, m)| m.to_chat(i)).collect::<Result<Vec<_>, _>>()?;
        // Also what names the conversation's private folder: check before anything is created.
        if !messages.iter().any(|m| m.role == Role::User) {
            return Err(ApiError::bad_request("`messages` must contain a user message.").param("messages"));
        }
        Ok(Checked {
            model,
            messages,
            stream: self.stream.unwrap_or(false),
            include_usage: self.stream_options.is_some_and(|o| o.include_usage),
            mode: self.mode,
        })
    }
}

fn is_none_choice(choice: Option<&Value>) -> bool {
    choice.and_then(Value::as_str) == Some("none")
}

impl RequestMessage {
    fn to_chat(&self, i: usize) -> Result<ChatMessage, ApiError> {
        let role = match self.role.as_str() {
            "system" | "developer" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" | "function" => {
                return Err(ApiError::bad_request(format!(
                    "`{}` messages are not supported: the Cursor CLI runs its own tools and cannot use \
                     results of the client's tools.",
                    self.role
                ))
                .param(format!("messages[{i}].role")))
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "Unknown role `{other}`: expected system, developer, user or assistant."
                ))
                .param(format!("messages[{i}].role")))
            }
        };
        let text = content_text(self.content.as_ref(), i)?;
        if text.is_none() && role != Role::Assistant {
            return Err(ApiError::bad_request(format!("A `{}` message needs `content`.", self.role))
                .param(format!("messages[{i}].content")));
        }
        Ok(ChatMessage { role, text: text.unwrap_or_default() })
    }
}

/// A message's text: the string, or its text parts joined by newlines. Images, audio and files
/// are refused rather than silently dropped: the answer would ignore what the user sent.
fn content_text(content: Option<&Value>, i: usize) -> Result<Option<String>, ApiError> {
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

// ---------------------------------------------------------------------------------------------
// Responses

#[derive(Debug, Serialize)]
pub struct ModelList {
    pub object: &'static str,
    pub data: Vec<Model>,
}

#[derive(Debug, Serialize)]
pub struct Model {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub owned_by: &'static str,
    /// Not OpenAI's, but read by several clients to size their context.
    pub context_window: u32,
    pub max_output_tokens: u32,
    /// The display name, as the Cursor CLI lists it.
    pub name: String,
    /// The base model this SKU is a variant of, and where it sits on its axes (protocol.md,
    /// `models/list`): clients that group variants read these.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<crate::protocol::ModelBase>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<crate::protocol::ModelVariant>,
}

impl ModelList {
    pub fn from_models(models: &[ModelInfo]) -> Self {
        ModelList {
            object: "list",
            data: models
                .iter()
                .map(|m| Model {
                    id: m.id.clone(),
                    object: "model",
                    created: 0,
                    owned_by: "cursor",
                    context_window: m.max_input_tokens,
                    max_output_tokens: m.max_output_tokens,
                    name: m.name.clone(),
                    base: m.base.clone(),
                    variant: m.variant.clone(),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct CompletionUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    pub prompt_tokens_details: PromptTokensDetails,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct PromptTokensDetails {
    pub cached_tokens: u64,
}

impl CompletionUsage {
    /// OpenAI counts cached input inside `prompt_tokens`; Cursor reports it apart.
    pub fn from_usage(u: Option<Usage>) -> Self {
        let u = u.unwrap_or_default();
        let prompt = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
        CompletionUsage {
            prompt_tokens: prompt,
            completion_tokens: u.output_tokens,
            total_tokens: prompt + u.output_tokens,
            prompt_tokens_details: PromptTokensDetails { cached_tokens: u.cache_read_tokens },
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ChatCompletion {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: [Choice; 1],
    pub usage: CompletionUsage,
}

#[derive(Debug, Serialize)]
pub struct Choice {
    pub index: u32,
    pub message: AssistantMessage,
    pub finish_reason: &'static str,
    pub logprobs: Option<()>,
}

#[derive(Debug, Serialize)]
pub struct AssistantMessage {
    pub role: &'static str,
    pub content: String,
    /// The model's thinking, under the name DeepSeek's API made common (absent without any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    pub refusal: Option<()>,
}

#[derive(Debug, Serialize)]
pub struct ChatCompletionChunk<'a> {
    pub id: &'a str,
    pub object: &'static str,
    pub created: u64,
    pub model: &'a str,
    pub choices: Vec<ChunkChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<CompletionUsage>,
}

#[derive(Debug, Serialize)]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    pub finish_reason: Option<&'static str>,
    pub logprobs: Option<()>,
}

#[derive(Debug, Default, Serialize)]
pub struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
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
        let image = json!({"type": "image_url", "image_url": {"url": "data:"}});
        let e = check(json!({"model": "auto", "messages": [{"role": "user", "content": [image]}]})).unwrap_err();
        assert!(e.message.contains("image_url"), "{}", e.message);
        assert_eq!(e.param.as_deref(), Some("messages[0].content[0].type"));
        let e = check(json!({"model": "auto", "messages": [{"role": "tool", "content": "42"}]})).unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        let e = check(json!({"model": "auto", "messages": [{"role": "user", "content": 42}]})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].content"));
    }

    #[test]
    fn client_tools_are_refused_unless_switched_off() {
        let tool = json!({"type": "function", "function": {"name": "f", "parameters": {}}});
        let msgs = json!([{"role": "user", "content": "x"}]);
        let e = check(json!({"model": "auto", "messages": msgs, "tools": [tool]})).unwrap_err();
        assert_eq!(e.code.as_deref(), Some("tools_not_supported"));
        assert!(e.message.contains("cannot call"));
        let e = check(json!({"model": "auto", "messages": msgs, "tools": [tool], "tool_choice": "auto"})).unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert!(check(json!({"model": "auto", "messages": msgs, "tools": [tool], "tool_choice": "none"})).is_ok());
        assert!(check(json!({"model": "auto", "messages": msgs, "tools": []})).is_ok());
    }

    #[test]
    fn usage_counts_cached_input_as_prompt() {
        let u = CompletionUsage::from_usage(Some(Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 100,
            cache_write_tokens: 1,
        }));
        assert_eq!((u.prompt_tokens, u.completion_tokens, u.total_tokens), (111, 5, 116));
        assert_eq!(u.prompt_tokens_details.cached_tokens, 100);
    }
}
