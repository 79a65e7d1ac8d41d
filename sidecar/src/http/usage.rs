//! Token counts of an answer: the CLI's when it reports them, else an estimate from the text,
//! always marked as one (a field of the dialect's usage, and the [`USAGE_HEADER`] header). The
//! estimate functions are the one place that knows how text turns into tokens.

use axum::http::HeaderValue;
use axum::response::Response;

use crate::vocab::{ChatMessage, ToolCall, Usage};

/// The response header that marks token counts as an estimate (`x-cursor-bridge-usage: estimate`).
pub const USAGE_HEADER: &str = "x-cursor-bridge-usage";

/// About four characters a token: the counts of a turn whose CLI reported none (Cursor's ACP
/// mode), always marked as an estimate (a field of the dialect's usage, and [`USAGE_HEADER`]).
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
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
        response.headers_mut().insert(USAGE_HEADER, HeaderValue::from_static("estimate"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_the_clis_or_a_marked_estimate() {
        assert_eq!(
            (estimate_tokens(""), estimate_tokens("abcd"), estimate_tokens("abcde"), estimate_tokens("✓✓")),
            (0, 1, 2, 1)
        );
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
        assert_eq!(input_estimate(&m), 2);
    }
}
