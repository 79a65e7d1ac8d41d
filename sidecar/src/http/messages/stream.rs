//! Anthropic's stream (`stream: true`), each event with its type on the `event:` line too:
//! `message_start`, `ping`, then per content block `content_block_start`, its deltas
//! (`thinking_delta` then a `signature_delta`, `text_delta`, `input_json_delta`) and
//! `content_block_stop`, then `message_delta` (stop reason, usage) and `message_stop`; a failure
//! after the stream started is an `error` event.

use axum::response::sse::Event;
use serde_json::{json, Value};

use super::{tool_use, usage_object, Meta, SIGNATURE};
use crate::engine::{Event as TurnEvent, TurnOutcome};
use crate::http::errors::ApiError;
use crate::http::turn::{self, Encoder};
use crate::http::usage;

#[derive(PartialEq)]
enum Open {
    Text,
    Thinking,
}

pub struct MessageEvents {
    meta: Meta,
    /// The index of the next block.
    next: u32,
    open: Option<Open>,
    /// The output so far, for the estimate when the CLI reports no counts.
    output: usage::Streamed,
}

impl MessageEvents {
    pub fn new(meta: Meta) -> Self {
        MessageEvents { meta, next: 0, open: None, output: usage::Streamed::default() }
    }

    fn ev(kind: &str, mut payload: Value) -> Event {
        payload["type"] = json!(kind);
        turn::typed_event(kind, &payload)
    }

    fn close(&mut self, events: &mut Vec<Event>) {
        let Some(open) = self.open.take() else { return };
        let index = self.next - 1;
        if open == Open::Thinking {
            let delta = json!({"index": index, "delta": {"type": "signature_delta", "signature": SIGNATURE}});
            events.push(Self::ev("content_block_delta", delta));
        }
        events.push(Self::ev("content_block_stop", json!({"index": index})));
    }

    fn open(&mut self, kind: Open, block: Value, events: &mut Vec<Event>) -> u32 {
        if self.open.as_ref() == Some(&kind) {
            return self.next - 1;
        }
        self.close(events);
        let index = self.next;
        self.next += 1;
        events.push(Self::ev("content_block_start", json!({"index": index, "content_block": block})));
        self.open = Some(kind);
        index
    }
}

impl Encoder for MessageEvents {
    fn start(&mut self) -> Vec<Event> {
        // The counts come in `message_delta` at the end; these are the input's estimate so far.
        let message = json!({
            "id": self.meta.id, "type": "message", "role": "assistant", "model": self.meta.model,
            "content": [], "stop_reason": null, "stop_sequence": null, "stop_details": null, "container": null,
            "usage": {"input_tokens": self.meta.input_tokens, "output_tokens": 0},
        });
        vec![Self::ev("message_start", json!({"message": message})), Self::ev("ping", json!({}))]
    }

    fn event(&mut self, event: TurnEvent) -> Vec<Event> {
        let mut events = Vec::new();
        match event {
            TurnEvent::Text(text) => {
                self.output.push(&text);
                let index = self.open(Open::Text, json!({"type": "text", "text": "", "citations": null}), &mut events);
                let delta = json!({"index": index, "delta": {"type": "text_delta", "text": text}});
                events.push(Self::ev("content_block_delta", delta));
            }
            TurnEvent::Thinking(text) => {
                self.output.push(&text);
                let block = json!({"type": "thinking", "thinking": "", "signature": ""});
                let index = self.open(Open::Thinking, block, &mut events);
                let delta = json!({"index": index, "delta": {"type": "thinking_delta", "thinking": text}});
                events.push(Self::ev("content_block_delta", delta));
            }
            TurnEvent::ThinkingDone if self.open == Some(Open::Thinking) => self.close(&mut events),
            TurnEvent::ToolCall { call_id, name, input } => {
                self.close(&mut events);
                let arguments = input.to_string();
                self.output.push(&arguments);
                let index = self.next;
                self.next += 1;
                let call = crate::vocab::ToolCall { call_id, name, input: json!({}) };
                events.push(Self::ev("content_block_start", json!({"index": index, "content_block": tool_use(&call)})));
                let delta = json!({"index": index, "delta": {"type": "input_json_delta", "partial_json": arguments}});
                events.push(Self::ev("content_block_delta", delta));
                events.push(Self::ev("content_block_stop", json!({"index": index})));
            }
            _ => {}
        }
        events
    }

    fn end(&mut self, outcome: Result<TurnOutcome, ApiError>) -> Vec<Event> {
        let mut events = Vec::new();
        match outcome {
            Ok(result) => {
                if self.next == 0 {
                    // An empty answer is still one text block (clients look for one).
                    self.open(Open::Text, json!({"type": "text", "text": "", "citations": null}), &mut events);
                }
                self.close(&mut events);
                let usage = usage_object(result.usage, self.meta.input_tokens, self.output.tokens());
                let stop = if result.tool_calls { "tool_use" } else { "end_turn" };
                let delta = json!({"delta": {"stop_reason": stop, "stop_sequence": null}, "usage": usage});
                events.push(Self::ev("message_delta", delta));
                events.push(Self::ev("message_stop", json!({})));
            }
            Err(e) => events.push(turn::typed_event("error", &e.anthropic_body())),
        }
        events
    }
}
