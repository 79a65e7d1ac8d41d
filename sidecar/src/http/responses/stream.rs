//! The typed events of a streamed response (`stream: true`), each with its `sequence_number`:
//! `response.created`, `response.in_progress`, then per output item `response.output_item.added`,
//! its deltas (`response.output_text.delta`, `response.reasoning_summary_text.delta`,
//! `response.function_call_arguments.delta`, `response.custom_tool_call_input.delta`) and
//! `response.output_item.done`, and last `response.completed` with the whole response, or
//! `response.failed` with its `error` when the turn fails after the stream started.

use std::sync::Arc;

use axum::response::sse::Event;
use serde_json::{json, Value};

use super::{call_item, message_item, reasoning_item, remember, response_object, Meta};
use crate::engine::{Event as TurnEvent, TurnOutcome};
use crate::http::errors::ApiError;
use crate::http::turn::{self, Encoder};
use crate::http::usage;
use crate::http::HttpState;
use crate::vocab::ToolCall;

/// The output item being streamed.
enum Open {
    Message { id: String, text: String },
    Reasoning { id: String, text: String },
}

pub struct ResponseEvents {
    state: Arc<HttpState>,
    meta: Meta,
    seq: u64,
    /// Finished output items, in order.
    output: Vec<Value>,
    open: Option<Open>,
    /// The whole answer text and the calls, for the stored history.
    text: String,
    thinking: String,
    calls: Vec<ToolCall>,
}

impl ResponseEvents {
    pub fn new(state: Arc<HttpState>, meta: Meta) -> Self {
        ResponseEvents {
            state,
            meta,
            seq: 0,
            output: Vec::new(),
            open: None,
            text: String::new(),
            thinking: String::new(),
            calls: Vec::new(),
        }
    }

    fn ev(&mut self, kind: &str, mut payload: Value) -> Event {
        payload["type"] = json!(kind);
        payload["sequence_number"] = json!(self.seq);
        self.seq += 1;
        turn::typed_event(kind, &payload)
    }

    fn index(&self) -> usize {
        self.output.len()
    }

    /// Ends the item being streamed, if any.
    fn close(&mut self, events: &mut Vec<Event>) {
        let index = self.index();
        match self.open.take() {
            None => {}
            Some(Open::Message { id, text }) => {
                let part = json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []});
                let done =
                    json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []});
                events.push(self.ev("response.output_text.done", done));
                let part_done = json!({"item_id": id, "output_index": index, "content_index": 0, "part": part});
                events.push(self.ev("response.content_part.done", part_done));
                let item = message_item(&id, &text, "completed");
                events.push(self.ev("response.output_item.done", json!({"output_index": index, "item": item})));
                self.output.push(item);
            }
            Some(Open::Reasoning { id, text }) => {
                let at = json!({"item_id": id, "output_index": index, "summary_index": 0});
                let mut done = at.clone();
                done["text"] = json!(text);
                events.push(self.ev("response.reasoning_summary_text.done", done));
                let mut part = at;
                part["part"] = json!({"type": "summary_text", "text": text});
                events.push(self.ev("response.reasoning_summary_part.done", part));
                let item = reasoning_item(&id, &text);
                events.push(self.ev("response.output_item.done", json!({"output_index": index, "item": item})));
                self.output.push(item);
            }
        }
    }

    fn text(&mut self, delta: String) -> Vec<Event> {
        let mut events = Vec::new();
        if !matches!(self.open, Some(Open::Message { .. })) {
            self.close(&mut events);
            let id = turn::new_id("msg_");
            let index = self.index();
            let item = message_item(&id, "", "in_progress");
            events.push(self.ev("response.output_item.added", json!({"output_index": index, "item": item})));
            let part = json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
            let added = json!({"item_id": id, "output_index": index, "content_index": 0, "part": part});
            events.push(self.ev("response.content_part.added", added));
            self.open = Some(Open::Message { id, text: String::new() });
        }
        let index = self.index();
        let Some(Open::Message { id, text }) = &mut self.open else { return events };
        text.push_str(&delta);
        self.text.push_str(&delta);
        let payload = json!({"item_id": id, "output_index": index, "content_index": 0, "delta": delta, "logprobs": []});
        events.push(self.ev("response.output_text.delta", payload));
        events
    }

    fn thinking(&mut self, delta: String) -> Vec<Event> {
        let mut events = Vec::new();
        if !matches!(self.open, Some(Open::Reasoning { .. })) {
            self.close(&mut events);
            let id = turn::new_id("rs_");
            let index = self.index();
            let item = reasoning_item(&id, "");
            events.push(self.ev("response.output_item.added", json!({"output_index": index, "item": item})));
            let part = json!({"item_id": id, "output_index": index, "summary_index": 0,
                "part": {"type": "summary_text", "text": ""}});
            events.push(self.ev("response.reasoning_summary_part.added", part));
            self.open = Some(Open::Reasoning { id, text: String::new() });
        }
        let index = self.index();
        let Some(Open::Reasoning { id, text }) = &mut self.open else { return events };
        text.push_str(&delta);
        self.thinking.push_str(&delta);
        let payload = json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": delta});
        events.push(self.ev("response.reasoning_summary_text.delta", payload));
        events
    }

    fn call(&mut self, call: ToolCall) -> Vec<Event> {
        let mut events = Vec::new();
        self.close(&mut events);
        let index = self.index();
        let added = call_item(&self.meta, &call, "in_progress");
        let done = call_item(&self.meta, &call, "completed");
        let id = done["id"].clone();
        events.push(self.ev("response.output_item.added", json!({"output_index": index, "item": added})));
        if done["type"] == "custom_tool_call" {
            let input = done["input"].clone();
            let at = json!({"item_id": id, "output_index": index});
            let mut delta = at.clone();
            delta["delta"] = input.clone();
            events.push(self.ev("response.custom_tool_call_input.delta", delta));
            let mut end = at;
            end["input"] = input;
            events.push(self.ev("response.custom_tool_call_input.done", end));
        } else {
            let arguments = done["arguments"].clone();
            let at = json!({"item_id": id, "output_index": index});
            let mut delta = at.clone();
            delta["delta"] = arguments.clone();
            events.push(self.ev("response.function_call_arguments.delta", delta));
            let mut end = at;
            end["arguments"] = arguments;
            end["name"] = json!(call.name);
            events.push(self.ev("response.function_call_arguments.done", end));
        }
        events.push(self.ev("response.output_item.done", json!({"output_index": index, "item": done.clone()})));
        self.output.push(done);
        self.calls.push(call);
        events
    }
}

impl Encoder for ResponseEvents {
    fn start(&mut self) -> Vec<Event> {
        let response = response_object(&self.meta, "in_progress", Vec::new(), None, None);
        vec![
            self.ev("response.created", json!({"response": response.clone()})),
            self.ev("response.in_progress", json!({"response": response})),
        ]
    }

    fn event(&mut self, event: TurnEvent) -> Vec<Event> {
        match event {
            TurnEvent::Text(text) => self.text(text),
            TurnEvent::Thinking(text) => self.thinking(text),
            TurnEvent::ThinkingDone => {
                let mut events = Vec::new();
                if matches!(self.open, Some(Open::Reasoning { .. })) {
                    self.close(&mut events);
                }
                events
            }
            TurnEvent::ToolCall { call_id, name, input } => self.call(ToolCall { call_id, name, input }),
            _ => Vec::new(),
        }
    }

    fn end(&mut self, outcome: Result<TurnOutcome, ApiError>) -> Vec<Event> {
        let mut events = Vec::new();
        self.close(&mut events);
        let output = std::mem::take(&mut self.output);
        match outcome {
            Ok(result) => {
                if output.is_empty() {
                    // An empty answer is still a message (clients look for one).
                    let item = message_item(&turn::new_id("msg_"), "", "completed");
                    events.push(self.ev("response.output_item.added", json!({"output_index": 0, "item": item})));
                    events.push(self.ev("response.output_item.done", json!({"output_index": 0, "item": item.clone()})));
                    self.output.push(item);
                } else {
                    self.output = output;
                }
                remember(&self.state, &self.meta, &self.text, &self.calls);
                let output = usage::output_estimate(&self.text, &self.thinking, &self.calls);
                let usage = usage::counted(result.usage, self.meta.input_tokens, output);
                let response = response_object(&self.meta, "completed", self.output.clone(), Some(usage), None);
                events.push(self.ev("response.completed", json!({"response": response})));
            }
            Err(e) => {
                let error =
                    json!({"code": e.code.clone().unwrap_or_else(|| "server_error".into()), "message": e.message});
                let response = response_object(&self.meta, "failed", output, None, Some(error));
                events.push(self.ev("response.failed", json!({"response": response})));
            }
        }
        events
    }
}
