//! What a chat completion answers, on OpenAI's wire: the whole `chat.completion`, or its
//! `chat.completion.chunk`s, with their usage.

use serde::Serialize;
use serde_json::Value;

use crate::http::usage::Counted;
use crate::vocab::Usage;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct CompletionUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    pub prompt_tokens_details: PromptTokensDetails,
    /// Not OpenAI's: the counts are an estimate (the CLI reported none), never zeros.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// Not OpenAI's: with `estimated`, the tokenizer it comes from (`o200k_base`, or `chars/4`
    /// where its vocabulary is missing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<&'static str>,
    /// Only where the agent counted reasoning (an absent count is not a zero).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct CompletionTokensDetails {
    pub reasoning_tokens: u64,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct PromptTokensDetails {
    pub cached_tokens: u64,
}

impl CompletionUsage {
    /// OpenAI counts cached input inside `prompt_tokens`; Cursor reports it apart.
    pub fn from_usage(u: Usage) -> Self {
        let prompt = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
        CompletionUsage {
            prompt_tokens: prompt,
            completion_tokens: u.output_tokens,
            total_tokens: prompt + u.output_tokens,
            prompt_tokens_details: PromptTokensDetails { cached_tokens: u.cache_read_tokens },
            estimated: false,
            tokenizer: None,
            completion_tokens_details: u.reasoning_tokens.map(|n| CompletionTokensDetails { reasoning_tokens: n }),
        }
    }

    pub fn from_counted(c: Counted) -> Self {
        let tokenizer = c.estimated.then(super::super::usage::estimator);
        CompletionUsage { estimated: c.estimated, tokenizer, ..CompletionUsage::from_usage(c.usage) }
    }
}

#[derive(Debug, Serialize)]
pub struct ChatCompletion {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: [Choice; 1],
    /// The CLI's counts, or (Cursor's ACP mode reports none) a marked estimate: zeros would read
    /// as a real count to a client sizing its context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<CompletionUsage>,
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
    /// Null when the reply is only tool calls, as OpenAI sends it.
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallOut>>,
    /// The model's thinking, under the name DeepSeek's API made common (absent without any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    pub refusal: Option<()>,
}

/// One call of the client's tools, in OpenAI's shape (`arguments` is a JSON string).
#[derive(Debug, Serialize)]
pub struct ToolCallOut {
    /// Only in a stream chunk: which call this is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionOut,
}

#[derive(Debug, Serialize)]
pub struct FunctionOut {
    pub name: String,
    pub arguments: String,
}

impl ToolCallOut {
    pub fn new(index: Option<u32>, call_id: String, name: String, input: &Value) -> Self {
        let arguments = serde_json::to_string(input).unwrap_or_else(|_| "{}".into());
        ToolCallOut { index, id: call_id, kind: "function", function: FunctionOut { name, arguments } }
    }
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallOut>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_cached_input_as_prompt() {
        let u = CompletionUsage::from_usage(Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 100,
            cache_write_tokens: 1,
            reasoning_tokens: None,
        });
        assert_eq!((u.prompt_tokens, u.completion_tokens, u.total_tokens), (111, 5, 116));
        assert_eq!(u.prompt_tokens_details.cached_tokens, 100);
        assert!(u.completion_tokens_details.is_none(), "no count, no details");
        let u = CompletionUsage::from_usage(Usage { output_tokens: 9, reasoning_tokens: Some(7), ..Usage::default() });
        assert_eq!(u.completion_tokens_details.map(|d| d.reasoning_tokens), Some(7));
    }
}
