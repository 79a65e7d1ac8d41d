//! Token counts of an answer: the CLI's when it reports them, else an estimate from the text,
//! always marked as one (a field of the dialect's usage, and the [`USAGE_HEADER`] header). The
//! estimate functions are the one place that knows how text turns into tokens.

use axum::http::HeaderValue;
use axum::response::Response;

use crate::vocab::{ChatMessage, ToolCall, Usage};

/// The response header that marks token counts as an estimate (`x-cursor-bridge-usage: estimate`).
pub const USAGE_HEADER: &str = "x-cursor-bridge-usage";

/// The response header that names the tokenizer of an estimate ([`estimator`]).
pub const TOKENIZER_HEADER: &str = "x-cursor-bridge-tokenizer";

/// The counts of a turn whose CLI reported none (Cursor's ACP mode): OpenAI's `o200k_base`
/// encoding (`util/tokens.rs`), always marked as an estimate (`estimated` and `tokenizer` in the
/// dialect's usage, and [`USAGE_HEADER`]).
pub fn estimate_tokens(text: &str) -> u64 {
    crate::util::tokens::shared().count(text)
}

/// Which tokenizer the estimates come from: `o200k_base`, or `chars/4` where its vocabulary
/// file is missing.
pub fn estimator() -> &'static str {
    crate::util::tokens::shared().name()
}

/// A streamed answer's output, counted once at its end: a tokenizer's counts of the deltas do not
/// add up to the count of the whole (a word cut between two deltas is one token, not two).
#[derive(Debug, Default)]
pub struct Streamed(String);

impl Streamed {
    pub fn push(&mut self, text: &str) {
        self.0.push_str(text);
    }

    pub fn tokens(&self) -> u64 {
        estimate_tokens(&self.0)
    }
}

/// The estimated input of a conversation as the engine gets it.
pub fn input_estimate(messages: &[ChatMessage]) -> u64 {
    messages
        .iter()
        .map(|m| {
            estimate_tokens(&m.text)
                + m.tool_results.iter().map(|r| estimate_tokens(&r.content)).sum::<u64>()
                + m.tool_calls.iter().map(|c| estimate_tokens(&c.input.to_string())).sum::<u64>()
        })
        .sum()
}

/// The estimated output of an answer.
pub fn output_estimate(text: &str, thinking: &str, calls: &[ToolCall]) -> u64 {
    estimate_tokens(text)
        + estimate_tokens(thinking)
        + calls.iter().map(|c| estimate_tokens(&c.input.to_string())).sum::<u64>()
}

/// A turn's token counts: the CLI's, or the estimate (`estimated`), never zeros that read as real.
#[derive(Debug, Clone, Copy)]
pub struct Counted {
    pub usage: Usage,
    pub estimated: bool,
}

pub fn counted(reported: Option<Usage>, input: u64, output: u64) -> Counted {
    match reported {
        Some(usage) => Counted { usage, estimated: false },
        None => Counted {
            usage: Usage {
                input_tokens: input,
                output_tokens: output,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                reasoning_tokens: None,
            },
            estimated: true,
        },
    }
}

/// Marks a whole answer's counts as estimated.
pub fn mark_estimate(response: &mut Response, counted: &Counted) {
    if counted.estimated {
        estimate_headers(response);
    }
}

/// `x-cursor-bridge-usage: estimate` and the tokenizer's name ([`TOKENIZER_HEADER`]).
pub fn estimate_headers(response: &mut Response) {
    response.headers_mut().insert(USAGE_HEADER, HeaderValue::from_static("estimate"));
    response.headers_mut().insert(TOKENIZER_HEADER, HeaderValue::from_static(estimator()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_the_clis_or_a_marked_estimate() {
        // o200k_base's counts (tiktoken's own for these texts), not characters / 4 (5 and 2).
        assert_eq!((estimator(), estimate_tokens(""), estimate_tokens("The quick brown fox")), ("o200k_base", 0, 4));
        let cli = Usage {
            input_tokens: 3,
            output_tokens: 2,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reasoning_tokens: None,
        };
        let c = counted(Some(cli), 99, 99);
        assert!(!c.estimated && c.usage.input_tokens == 3);
        let e = counted(None, 12, 3);
        assert!(e.estimated && (e.usage.input_tokens, e.usage.output_tokens) == (12, 3));
        let m = [ChatMessage::new(crate::vocab::Role::User, "12345678")];
        assert_eq!(input_estimate(&m), 3, "123 456 78");
    }
}
