//! A streamed chat completion (`stream: true`): `chat.completion.chunk` data events as the turn's
//! deltas arrive, the usage chunk when asked for (`stream_options.include_usage`), then `[DONE]`.

use axum::response::sse::Event;

use super::response::{ChatCompletionChunk, ChunkChoice, CompletionUsage, Delta, ToolCallOut};
use super::Meta;
use crate::engine::{Event as TurnEvent, TurnOutcome};
use crate::http::errors::ApiError;
use crate::http::turn::{self, Encoder};
use crate::http::usage;

/// The chunks of one streamed completion.
pub(super) struct Chunks {
    pub(super) meta: Meta,
    pub(super) include_usage: bool,
    /// Tool calls streamed so far (each chunk names its index).
    pub(super) calls: u32,
    /// The output so far, for the estimate when the CLI reports no counts.
    pub(super) output: usage::Streamed,
}

impl Chunks {
    fn chunk(&self, delta: Delta, finish_reason: Option<&'static str>) -> Event {
        turn::data_event(&ChatCompletionChunk {
            id: &self.meta.id,
            object: "chat.completion.chunk",
            created: self.meta.created,
            model: &self.meta.model,
            choices: vec![ChunkChoice { index: 0, delta, finish_reason, logprobs: None }],
            usage: None,
        })
    }
}

impl Encoder for Chunks {
    fn start(&mut self) -> Vec<Event> {
        vec![self.chunk(Delta { role: Some("assistant"), content: Some(String::new()), ..Delta::default() }, None)]
    }

    fn event(&mut self, delta: TurnEvent) -> Vec<Event> {
        let delta = match delta {
            TurnEvent::Text(text) => {
                self.output.push(&text);
                Delta { content: Some(text), ..Delta::default() }
            }
            TurnEvent::Thinking(text) => {
                self.output.push(&text);
                Delta { reasoning_content: Some(text), ..Delta::default() }
            }
            TurnEvent::ToolCall { call_id, name, input } => {
                self.output.push(&input.to_string());
                let call = ToolCallOut::new(Some(self.calls), call_id, name, &input);
                self.calls += 1;
                Delta { tool_calls: Some(vec![call]), ..Delta::default() }
            }
            _ => return Vec::new(),
        };
        vec![self.chunk(delta, None)]
    }

    fn end(&mut self, outcome: Result<TurnOutcome, ApiError>) -> Vec<Event> {
        match outcome {
            Ok(result) => {
                let mut events =
                    vec![self.chunk(Delta::default(), Some(if result.tool_calls { "tool_calls" } else { "stop" }))];
                // The CLI's counts, or (none on ACP) the marked estimate: zeros would read as real.
                if self.include_usage {
                    let usage = usage::counted(result.usage, self.meta.input, self.output.tokens());
                    events.push(turn::data_event(&ChatCompletionChunk {
                        id: &self.meta.id,
                        object: "chat.completion.chunk",
                        created: self.meta.created,
                        model: &self.meta.model,
                        choices: Vec::new(),
                        usage: Some(CompletionUsage::from_counted(usage)),
                    }));
                }
                events.push(Event::default().data("[DONE]"));
                events
            }
            // OpenAI's clients raise an `{"error": …}` event.
            Err(e) => vec![turn::data_event(&e.body())],
        }
    }
}
