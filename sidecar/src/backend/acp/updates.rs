//! `session/update` notifications as the events every front door knows: answer text, thinking
//! (closed when the answer or a tool starts), tool activity with one-line summaries; whether a
//! tool call that ended was refused is the agent's reading ([`AgentQuirks`]). Updates of
//! kinds we do not use (plans, commands, mode and config changes, usage without token counts)
//! and kinds added after this was written are skipped (docs/cursor-acp.md §7).

use std::collections::HashMap;

use serde_json::Value;

use super::quirks::AgentQuirks;
use crate::backend::events::Event;
use crate::util::text::one_line;

const SUMMARY_MAX_CHARS: usize = 120;

/// One turn's updates, in order. Tool calls are merged by id, as the protocol says: an update
/// carries only what changed.
pub struct Updates {
    quirks: &'static dyn AgentQuirks,
    thinking_open: bool,
    tools: HashMap<String, Tool>,
    /// The end of the answer text so far (its last two bytes are enough for a paragraph break).
    text_tail: String,
    /// A tool ran since the last text: the next text starts a new paragraph, as in print mode.
    tool_since_text: bool,
}

#[derive(Default)]
struct Tool {
    kind: String,
    title: String,
    done: bool,
}

impl Updates {
    pub fn new(quirks: &'static dyn AgentQuirks) -> Self {
        Updates {
            quirks,
            thinking_open: false,
            tools: HashMap::new(),
            text_tail: String::new(),
            tool_since_text: false,
        }
    }

    /// The events of one `session/update`'s `update` object.
    pub fn events(&mut self, update: &Value) -> Vec<Event> {
        let mut out = Vec::new();
        let text = || update.pointer("/content/text").and_then(Value::as_str).filter(|t| !t.is_empty());
        match update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("") {
            "agent_message_chunk" => {
                if let Some(t) = text() {
                    self.close_thinking(&mut out);
                    let mut piece = t.to_string();
                    if std::mem::take(&mut self.tool_since_text) && !self.text_tail.is_empty() {
                        piece.insert_str(0, crate::util::text::paragraph_break(&self.text_tail, t));
                    }
                    let keep = format!("{}{piece}", self.text_tail);
                    let cut = keep.char_indices().rev().nth(1).map_or(0, |(i, _)| i);
                    self.text_tail = keep[cut..].to_string();
                    out.push(Event::Text(piece));
                }
            }
            "agent_thought_chunk" => {
                if let Some(t) = text() {
                    self.thinking_open = true;
                    out.push(Event::Thinking(t.to_string()));
                }
            }
            "tool_call" | "tool_call_update" => {
                let Some(id) = update.get("toolCallId").and_then(Value::as_str) else { return out };
                let str_of = |k: &str| update.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
                let new = !self.tools.contains_key(id);
                let tool = self.tools.entry(id.to_string()).or_default();
                if let Some(k) = str_of("kind") {
                    tool.kind = k.to_string();
                }
                if let Some(t) = str_of("title") {
                    tool.title = t.trim_matches('`').to_string();
                }
                // Print mode's summaries: the command, the file.
                if let Some(input) = update.get("rawInput") {
                    let field = |k: &str| input.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
                    if let Some(s) = field("command").or_else(|| field("path")) {
                        tool.title = s.to_string();
                    }
                }
                let (tool_name, summary) = (name_of(&tool.kind), one_line(&tool.title, SUMMARY_MAX_CHARS));
                if new {
                    self.tool_since_text = true;
                    {
                        self.close_thinking(&mut out);
                        out.push(Event::ToolStarted {
                            call_id: id.to_string(),
                            tool: tool_name.clone(),
                            summary: summary.clone(),
                        });
                    }
                }
                let tool = self.tools.get_mut(id).expect("inserted above");
                match str_of("status") {
                    Some(status @ ("completed" | "failed")) if !tool.done => {
                        tool.done = true;
                        let mut rejected = self.quirks.completed_but_rejected(update);
                        let ok = status == "completed" && !rejected;
                        let detail = (!ok).then(|| failure_detail(update)).flatten();
                        if status == "failed"
                            && detail.as_deref().is_some_and(|d| self.quirks.failure_is_refusal(&tool_name, d))
                        {
                            rejected = true;
                        }
                        out.push(Event::ToolCompleted {
                            call_id: id.to_string(),
                            tool: tool_name,
                            summary,
                            ok,
                            detail,
                            rejected,
                        });
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        out
    }

    /// The turn ended: a thinking block still open is closed.
    pub fn finish(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        self.close_thinking(&mut out);
        out
    }

    fn close_thinking(&mut self, out: &mut Vec<Event>) {
        if std::mem::take(&mut self.thinking_open) {
            out.push(Event::ThinkingDone);
        }
    }
}

/// ACP tool kinds (`read`, `edit`, `execute`, …) as print mode names them (`shell` for a
/// command); none given: `tool`.
fn name_of(kind: &str) -> String {
    match kind {
        "" => "tool".into(),
        "execute" => "shell".into(),
        other => other.to_string(),
    }
}

/// The first text a failed tool call carries, on one line.
fn failure_detail(update: &Value) -> Option<String> {
    update.get("content")?.as_array()?.iter().find_map(|c| {
        c.pointer("/content/text")
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty())
            .map(|t| one_line(t, SUMMARY_MAX_CHARS))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(updates: &[Value]) -> Vec<Event> {
        let mut u = Updates::new(&crate::backend::acp::quirks::PLAIN);
        let mut out: Vec<Event> = updates.iter().flat_map(|x| u.events(x)).collect();
        out.extend(u.finish());
        out
    }

    #[test]
    fn a_turn_as_cursor_streams_it() {
        // The update sequence of docs/cursor-acp.md §7.
        let events = run(&[
            json!({"sessionUpdate": "available_commands_update", "availableCommands": []}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Looking at foo.rs"}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "call-1", "title": "Read foo.rs", "kind": "read", "status": "pending"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "in_progress"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed"}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "foo.rs defines "}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "one function."}}),
            json!({"sessionUpdate": "usage_update", "used": 1200, "size": 200000}),
            json!({"sessionUpdate": "some_kind_from_the_future", "x": 1}),
        ]);
        let read = |ok| Event::ToolCompleted {
            call_id: "call-1".into(),
            tool: "read".into(),
            summary: "Read foo.rs".into(),
            ok,
            detail: None,
            rejected: false,
        };
        assert_eq!(
            events,
            vec![
                Event::Thinking("Looking at foo.rs".into()),
                Event::ThinkingDone,
                Event::ToolStarted { call_id: "call-1".into(), tool: "read".into(), summary: "Read foo.rs".into() },
                read(true),
                Event::Text("foo.rs defines ".into()),
                Event::Text("one function.".into()),
            ]
        );
    }

    #[test]
    fn tool_updates_merge_by_id_and_complete_once() {
        let events = run(&[
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "kind": "execute"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "`npm test`"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "failed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "exit code 1\nmore"}}]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"}),
        ]);
        assert_eq!(
            events,
            vec![
                Event::ToolStarted { call_id: "t".into(), tool: "shell".into(), summary: String::new() },
                Event::ToolCompleted {
                    call_id: "t".into(),
                    tool: "shell".into(),
                    summary: "npm test".into(),
                    ok: false,
                    detail: Some("exit code 1 more".into()),
                    rejected: false,
                },
            ]
        );
    }

    #[test]
    fn malformed_updates_are_skipped() {
        let events = run(&[
            json!({"sessionUpdate": "agent_message_chunk"}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "…"}}),
            json!({"sessionUpdate": "tool_call", "title": "no id"}),
            json!("not an object"),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "unfinished"}}),
        ]);
        assert_eq!(events, vec![Event::Thinking("unfinished".into()), Event::ThinkingDone]);
    }
}
