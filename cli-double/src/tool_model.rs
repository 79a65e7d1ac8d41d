//! The scripted tool-calling "model" of one prompt, shared by print mode and ACP turns: what it
//! reads in the prompt, which step of the script it plays, and through which path each call goes
//! (an MCP server the session connected, the `[TOOL_CALLS: …]` block of the prompt protocol, or
//! nowhere: "not available"). The mode supplies a [`Host`] that streams text, runs builtin tools
//! and performs MCP calls.

use crate::json::{obj, Json};
use crate::prompt_protocol::{self as pp, MustCall, Parsed, Received};
use crate::tool_script::{Builtin, Call, Step, ToolKnobs};
use crate::tool_state::{result_entry, ChatTools, List};

/// How a step's MCP calls ended, as the model sees it.
pub enum McpRound {
    /// Every call has its result: the next step follows in the same turn.
    Complete,
    /// The turn ends with this text (a failure, a rejection, a result still pending).
    Ended(String),
}

pub trait Host {
    type Stop;
    /// Streams text, already split into deltas.
    fn say(&mut self, pieces: Vec<String>) -> Result<(), Self::Stop>;
    fn builtin(&mut self, step: usize, b: &Builtin) -> Result<(), Self::Stop>;
    /// The MCP server whose visible tools include the call's tool, if any.
    fn mcp_server_for(&self, call: &Call) -> Option<String>;
    /// Runs one step's MCP calls; results go into `state.results`.
    fn call_mcp(
        &mut self,
        step: usize,
        calls: &[(String, Call)],
        state: &mut ChatTools,
    ) -> Result<McpRound, Self::Stop>;
    fn record(&mut self, list: List, entry: Json);
    fn chunk_chars(&self) -> usize;
    /// The tools of connected MCP servers the model can see, with their input schemas.
    fn visible_tools(&self) -> Vec<(String, Json)> {
        Vec::new()
    }
}

/// Whether the model acts as the tool model for this prompt (else the ordinary scripted answer):
/// a script, results, a repair, or a prompt that says a call is required.
pub fn active(knobs: &ToolKnobs, parsed: &Parsed) -> bool {
    knobs.script.is_some() || !parsed.results.is_empty() || parsed.repair || parsed.must_call.is_some()
}

/// Without a script, a prompt that requires a call gets one, as a real model mostly obeys: the
/// named tool (or, when the name is not among them, the first it sees: a named choice offers
/// only that tool), else the first tool an MCP server lists or the `<client_tools>` block
/// offers, with arguments made up from its schema. The result's prompt gets the usual summary.
fn obeyed<H: Host>(host: &H, state: &ChatTools, parsed: &Parsed) -> Option<Vec<Step>> {
    let must = parsed.must_call.as_ref().filter(|_| parsed.results.is_empty())?;
    let mut seen = host.visible_tools();
    seen.extend(parsed.offered_schemas.iter().cloned());
    let chosen = match must {
        MustCall::Named(name) => seen.iter().find(|(n, _)| n == name).or(seen.first()),
        MustCall::Any => seen.first(),
    }?;
    let call = Call { name: chosen.0.clone(), arguments: example(&chosen.1), server: None };
    let mut script = vec![Step::default(); state.rounds as usize];
    script.push(Step { say: None, calls: vec![call], builtin: None });
    Some(script)
}

/// A value that fits `schema` as far as the double reads it: `const`, `enum`'s first, `default`,
/// else by `type` (an object gets its required properties, or all of them when none is required).
pub fn example(schema: &Json) -> Json {
    if let Some(v) = schema.get("const").or(schema.get("default")) {
        return v.clone();
    }
    if let Some(Json::Arr(options)) = schema.get("enum") {
        if let Some(first) = options.first() {
            return first.clone();
        }
    }
    if let Some(Json::Arr(options)) = schema.get("anyOf").or(schema.get("oneOf")) {
        if let Some(first) = options.first() {
            return example(first);
        }
    }
    let kind = match schema.get("type") {
        Some(Json::Str(t)) => t.as_str(),
        Some(Json::Arr(types)) => types.iter().filter_map(Json::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match kind {
        "object" => {
            let props = schema.get("properties").and_then(Json::as_object).unwrap_or(&[]);
            let required: Vec<&str> = match schema.get("required") {
                Some(Json::Arr(names)) => names.iter().filter_map(Json::as_str).collect(),
                _ => Vec::new(),
            };
            let fields = props
                .iter()
                .filter(|(k, _)| required.is_empty() || required.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), example(v)))
                .collect();
            Json::Obj(fields)
        }
        "array" => {
            let min = match schema.get("minItems") {
                Some(Json::Num(n)) => n.as_u64().unwrap_or(0),
                _ => 0,
            };
            let item = schema.get("items").map(example).unwrap_or(Json::Str("example".into()));
            Json::Arr((0..min).map(|_| item.clone()).collect())
        }
        "integer" | "number" => match schema.get("minimum") {
            Some(Json::Num(n)) => Json::Num(n.clone()),
            _ => Json::Num(1.into()),
        },
        "boolean" => Json::Bool(true),
        "null" => Json::Null,
        _ => Json::Str("example".into()),
    }
}

/// Takes in what the prompt carried: offered tools, results, rounds.
pub fn absorb<H: Host>(host: &mut H, state: &mut ChatTools, parsed: &Parsed) {
    if let Some(names) = &parsed.offered {
        state.offered = Some(names.clone());
        let mut e = obj([("names", Json::Arr(names.iter().map(|n| n.as_str().into()).collect()))]);
        if let Some(why) = &parsed.offered_error {
            e.set("error", why.as_str().into());
        }
        host.record(List::Offered, e);
    }
    for r in &parsed.results {
        host.record(List::Results, result_entry(r, "prompt"));
        state.results.push(r.clone());
    }
    state.rounds += parsed.rounds;
}

fn call_entry(step: usize, path: &str, call: &Call, outcome: &str) -> Json {
    obj([
        ("step", step.into()),
        ("path", path.into()),
        ("name", call.name.as_str().into()),
        ("arguments", call.arguments.clone()),
        ("outcome", outcome.into()),
    ])
}

/// Plays the prompt (after [`absorb`]).
pub fn play<H: Host>(host: &mut H, knobs: &ToolKnobs, state: &mut ChatTools, parsed: &Parsed) -> Result<(), H::Stop> {
    let obeying = if knobs.script.is_none() { obeyed(host, state, parsed) } else { None };
    let script: &[Step] = knobs.script.as_deref().or(obeying.as_deref()).unwrap_or(&[]);
    let n = host.chunk_chars();
    let offered = state.offered.clone().unwrap_or_default();
    let offered_calls = |step: &Step| -> Vec<Call> {
        step.calls.iter().filter(|c| offered.contains(&c.name)).cloned().collect::<Vec<_>>()
    };
    if parsed.repair && state.malformed_pending {
        state.malformed_pending = false;
        if let Some(step) = script.get(state.rounds as usize) {
            let calls = offered_calls(step);
            if !calls.is_empty() {
                for c in &calls {
                    host.record(List::Calls, call_entry(state.rounds as usize, "prompt", c, "repaired"));
                }
                return host.say(pp::block_pieces("", &pp::block(&calls), n));
            }
        }
    }
    let mut said = false;
    loop {
        let idx = state.rounds as usize;
        let lead = if said { "\n\n" } else { "" };
        let Some(step) = script.get(idx) else {
            let results: Vec<&Received> = state.results.iter().filter(|r| !is_pending(&r.text)).collect();
            return host.say(pp::pieces(&format!("{lead}{}", pp::summary(results)), n));
        };
        if step.say.is_none() && step.calls.is_empty() && step.builtin.is_none() {
            let results: Vec<&Received> = state.results.iter().filter(|r| !is_pending(&r.text)).collect();
            return host.say(pp::pieces(&format!("{lead}{}", pp::summary(results)), n));
        }
        if let Some(text) = step.say.as_deref().filter(|t| !t.is_empty()) {
            host.say(pp::pieces(&format!("{lead}{text}"), n))?;
            said = true;
        }
        if let Some(b) = &step.builtin {
            host.builtin(idx, b)?;
        }
        let mut mcp = Vec::new();
        let mut prompt = Vec::new();
        let mut missing = Vec::new();
        for c in &step.calls {
            if let Some(server) = host.mcp_server_for(c) {
                mcp.push((server, c.clone()));
            } else if offered.contains(&c.name) {
                prompt.push(c.clone());
            } else {
                missing.push(c.clone());
            }
        }
        if !missing.is_empty() {
            for c in &missing {
                host.record(List::Calls, call_entry(idx, "none", c, "unavailable"));
            }
            let text: Vec<String> = missing.iter().map(|c| pp::unavailable(&c.name)).collect();
            let lead = if said { "\n\n" } else { "" };
            host.say(pp::pieces(&format!("{lead}{}", text.join(" ")), n))?;
            said = true;
        }
        if !mcp.is_empty() {
            match host.call_mcp(idx, &mcp, state)? {
                McpRound::Complete => {
                    state.rounds += 1;
                    if prompt.is_empty() {
                        continue;
                    }
                }
                McpRound::Ended(text) => {
                    let lead = if said { "\n\n" } else { "" };
                    return host.say(pp::pieces(&format!("{lead}{text}"), n));
                }
            }
        }
        if !prompt.is_empty() {
            let malformed = knobs.malformed_once && !state.malformed_sent;
            let block = if malformed {
                state.malformed_sent = true;
                state.malformed_pending = true;
                pp::malformed_block(&prompt)
            } else {
                pp::block(&prompt)
            };
            for c in &prompt {
                host.record(List::Calls, call_entry(idx, "prompt", c, if malformed { "malformed" } else { "sent" }));
            }
            let lead = if said { "\n\n" } else { "" };
            host.say(pp::block_pieces(lead, &block, n))?;
            if let Some(prose) = &knobs.trailing_text {
                host.say(pp::pieces(&format!("\n\n{prose}"), n))?;
            }
        }
        return Ok(());
    }
}

/// The text a deadline-released MCP call carries instead of its result (docs/client-tools.md
/// "The MCP path").
pub fn is_pending(text: &str) -> bool {
    text.trim_start().starts_with("result pending")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Json;
    use crate::tool_script::parse_script;

    /// A print-mode-like host: text only, no MCP.
    #[derive(Default)]
    struct Text {
        out: Vec<String>,
        log: Vec<(List, Json)>,
    }

    impl Host for Text {
        type Stop = ();
        fn say(&mut self, pieces: Vec<String>) -> Result<(), ()> {
            self.out.push(pieces.concat());
            Ok(())
        }
        fn builtin(&mut self, _: usize, _: &Builtin) -> Result<(), ()> {
            Ok(())
        }
        fn mcp_server_for(&self, _: &Call) -> Option<String> {
            None
        }
        fn call_mcp(&mut self, _: usize, _: &[(String, Call)], _: &mut ChatTools) -> Result<McpRound, ()> {
            Ok(McpRound::Complete)
        }
        fn record(&mut self, list: List, entry: Json) {
            self.log.push((list, entry));
        }
        fn chunk_chars(&self) -> usize {
            4
        }
    }

    fn knobs(script: &str) -> ToolKnobs {
        ToolKnobs { script: Some(parse_script(&Json::parse(script).unwrap()).unwrap()), ..ToolKnobs::default() }
    }

    fn turn(k: &ToolKnobs, state: &mut ChatTools, prompt: &str) -> String {
        let mut h = Text::default();
        let parsed = pp::parse(prompt);
        absorb(&mut h, state, &parsed);
        play(&mut h, k, state, &parsed).unwrap();
        h.out.concat()
    }

    const OFFER: &str = "<client_tools>\nTools (JSON): [{\"name\":\"create_file\"}]\n</client_tools>\n";

    #[test]
    fn steps_follow_rounds_and_end_with_the_results() {
        let k = knobs(r#"[{"say":"Creating.","call":[{"name":"create_file","arguments":{"p":"a"}}]}]"#);
        let mut st = ChatTools::default();
        let first = turn(&k, &mut st, &format!("{OFFER}make a"));
        assert_eq!(first, "Creating.\n\n[TOOL_CALLS: [{\"name\": \"create_file\", \"arguments\": {\"p\": \"a\"}}]]");
        let second = turn(&k, &mut st, "TOOL_RESULT (call_id=c1, name=create_file):\nmade a\nmore\nEND_TOOL_RESULT");
        assert_eq!(second, "Done. Results: create_file: made a");
    }

    #[test]
    fn unoffered_tools_are_not_called_and_malformed_blocks_are_repaired() {
        let k = knobs(r#"[{"call":[{"name":"delete_all"}]}]"#);
        let mut st = ChatTools::default();
        assert_eq!(turn(&k, &mut st, OFFER), pp::unavailable("delete_all"));

        let mut k = knobs(r#"[{"call":[{"name":"create_file"}]}]"#);
        k.malformed_once = true;
        let mut st = ChatTools::default();
        let bad = turn(&k, &mut st, OFFER);
        assert_eq!(bad, "[TOOL_CALLS: [{\"name\": \"create_file\", \"arguments\": {}]]");
        let good = turn(&k, &mut st, "Your [TOOL_CALLS] block was invalid: JSON. Send it again, corrected.");
        assert_eq!(good, "[TOOL_CALLS: [{\"name\": \"create_file\", \"arguments\": {}}]]");
        // Once only: the same step after another user prompt gets a good block.
        assert_eq!(turn(&k, &mut st, "again"), good);
    }

    #[test]
    fn a_required_call_is_made_without_a_script() {
        let offer = "<client_tools>\nTools (JSON): [{\"name\":\"get_time\",\"parameters\":{}},{\"name\":\"get_weather\",\
            \"parameters\":{\"type\":\"object\",\"required\":[\"city\",\"days\"],\"properties\":{\"city\":{\"type\":\"string\"},\
            \"days\":{\"type\":\"integer\",\"minimum\":2},\"unit\":{\"enum\":[\"c\",\"f\"]}}}}]\n";
        let k = ToolKnobs::default();
        let named = format!("{offer}You must call `get_weather` in this reply.\n</client_tools>\nweather?");
        let mut st = ChatTools::default();
        assert_eq!(
            turn(&k, &mut st, &named),
            "[TOOL_CALLS: [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"example\", \"days\": 2}}]]"
        );
        assert_eq!(
            turn(&k, &mut st, "TOOL_RESULT (call_id=c, name=get_weather):\nsun\nEND_TOOL_RESULT"),
            "Done. Results: get_weather: sun"
        );
        let any = format!("{offer}You must call a tool in this reply.\n</client_tools>\ntime?");
        assert!(turn(&k, &mut ChatTools::default(), &any).contains("\"name\": \"get_time\""));
        // Without the demand, no call: the ordinary answer.
        assert!(!active(&k, &pp::parse(&format!("{offer}</client_tools>\nhi"))));
    }
}
