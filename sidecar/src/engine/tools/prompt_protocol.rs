//! The prompt protocol's text contract (docs/client-tools.md, "The prompt-protocol contract"):
//! how the tools are described to the model, how it writes a call, how results go back. The CLI
//! test double answers in this form, so a change here is a change there.

use serde_json::{json, Value};

use super::ToolSet;
use crate::vocab::{ToolCall, ToolResult};

/// What opens a block of calls in the model's reply.
pub const MARKER: &str = "[TOOL_CALLS:";

/// The tools, described for the model; goes before the user's message.
pub fn tools_block(set: &ToolSet) -> String {
    let tools: Vec<Value> = set
        .offered()
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.input_schema}))
        .collect();
    let tools = serde_json::to_string(&tools).unwrap_or_else(|_| "[]".into());
    let mut block = String::from(
        "<client_tools>\nThe user's editor runs tools for you. Your own tools are disabled here: use only these.\n",
    );
    block.push_str(&format!("Tools (JSON): {tools}\n"));
    block.push_str(
        "To call tools, end your reply with one block of this exact form and write nothing after it:\n\
         [TOOL_CALLS: [{\"name\": \"<tool>\", \"arguments\": {…}}]]\n",
    );
    if set.parallel {
        block.push_str("Several calls in one array run in order. Each result comes back in the next message.\n");
    } else {
        block.push_str("Call one tool at a time. Its result comes back in the next message.\n");
    }
    if set.must_call() {
        block.push_str(&must_call_line(set));
        block.push('\n');
    } else {
        block.push_str("When you need no tool, answer normally.\n");
    }
    block.push_str("</client_tools>");
    block
}

/// The results of the client's tools, as the next prompt of the same chat.
pub fn results_prompt<'a>(results: impl IntoIterator<Item = &'a ToolResult>, calls: &[&ToolCall]) -> String {
    results
        .into_iter()
        .map(|r| {
            let name = r
                .name
                .clone()
                .or_else(|| calls.iter().find(|c| c.call_id == r.call_id).map(|c| c.name.clone()))
                .unwrap_or_else(|| "unknown".into());
            let head = if r.is_error { "TOOL_ERROR" } else { "TOOL_RESULT" };
            format!("{head} (call_id={}, name={name}):\n{}\nEND_TOOL_RESULT", r.call_id, r.content.trim_end())
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A call as an earlier reply made it, for replaying a conversation into a new chat.
pub fn call_text(call: &ToolCall) -> String {
    let args = serde_json::to_string(&call.input).unwrap_or_default();
    format!("{MARKER} [{{\"name\": {}, \"arguments\": {args}}}]]", json!(call.name))
}

/// Asks again after a block that did not parse or did not fit the tools.
pub fn repair_prompt(why: &str) -> String {
    format!(
        "Your [TOOL_CALLS] block was invalid: {why}. Send it again, corrected, in the exact form \
         [TOOL_CALLS: [{{\"name\": \"<tool>\", \"arguments\": {{…}}}}]] and nothing after it."
    )
}

/// What a `required` (or named) tool choice tells the model, in the tools block or (hosted tools,
/// which the prompt does not describe) before the prompt. The CLI double reads these words.
pub fn must_call_line(set: &ToolSet) -> String {
    match &set.choice {
        crate::vocab::ToolChoice::Named(name) => format!("You must call `{name}` in this reply."),
        _ => "You must call a tool in this reply.".into(),
    }
}

/// Asks for the call a `required` (or named) tool choice demands, after a reply without one.
pub fn must_call_prompt(set: &ToolSet) -> String {
    match &set.choice {
        crate::vocab::ToolChoice::Named(name) => {
            format!("You must call the tool `{name}` now. Reply with only a [TOOL_CALLS: …] block.")
        }
        _ => "You must call one of the tools now. Reply with only a [TOOL_CALLS: …] block.".into(),
    }
}
