//! The text contract of client-owned tools (docs/client-tools.md "The prompt-protocol contract"),
//! from the model's side: read the `<client_tools>` block, the `TOOL_RESULT` / `TOOL_ERROR` blocks
//! and the repair prompt out of a prompt; write the `[TOOL_CALLS: …]` block.

use crate::json::{arr, obj, Json};
use crate::tool_script::Call;

pub const BLOCK_OPEN: &str = "<client_tools>";
pub const BLOCK_CLOSE: &str = "</client_tools>";
pub const TOOLS_LINE: &str = "Tools (JSON):";
pub const REPAIR_START: &str = "Your [TOOL_CALLS] block was invalid";
pub const MARKER: &str = "[TOOL_CALLS:";
/// How the sidecar says a call is required: in the `<client_tools>` block, or (tools the agent
/// hosts over MCP) before the prompt: `You must call a tool in this reply.` /
/// ``You must call `name` in this reply.``
pub const MUST_CALL: &str = "You must call ";
const MUST_CALL_END: &str = " in this reply.";

/// What a prompt demands of the model's tool use.
#[derive(Clone, Debug, PartialEq)]
pub enum MustCall {
    /// Any of the tools it can see.
    Any,
    /// This one.
    Named(String),
}

/// A tool result the prompt carried.
#[derive(Clone, Debug, PartialEq)]
pub struct Received {
    pub call_id: String,
    pub name: String,
    pub is_error: bool,
    pub text: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// The names of the `Tools (JSON):` array, when the prompt has a `<client_tools>` block.
    pub offered: Option<Vec<String>>,
    /// Why the block's tool list did not parse.
    pub offered_error: Option<String>,
    pub results: Vec<Received>,
    /// Groups of adjacent result blocks: one per round (a flattened transcript may hold several).
    pub rounds: u64,
    /// A line starts with the repair prompt.
    pub repair: bool,
    /// The prompt says a call is required (`You must call … in this reply.`).
    pub must_call: Option<MustCall>,
    /// The `Tools (JSON):` array's tools with their `parameters`, in order.
    pub offered_schemas: Vec<(String, Json)>,
}

pub fn parse(prompt: &str) -> Parsed {
    let mut p = Parsed::default();
    if let Some(start) = prompt.find(BLOCK_OPEN) {
        let body = &prompt[start + BLOCK_OPEN.len()..];
        let body = body.find(BLOCK_CLOSE).map_or(body, |end| &body[..end]);
        match body.lines().find_map(|l| l.trim_start().strip_prefix(TOOLS_LINE)) {
            None => p.offered_error = Some(format!("no '{TOOLS_LINE}' line in the {BLOCK_OPEN} block")),
            Some(list) => match Json::parse(list.trim()) {
                Ok(Json::Arr(tools)) => {
                    p.offered = Some(
                        tools.iter().filter_map(|t| t.get("name").and_then(Json::as_str)).map(str::to_owned).collect(),
                    );
                    p.offered_schemas = tools
                        .iter()
                        .filter_map(|t| {
                            let name = t.get("name")?.as_str()?.to_owned();
                            Some((name, t.get("parameters").cloned().unwrap_or(Json::Obj(Vec::new()))))
                        })
                        .collect();
                }
                Ok(_) => p.offered_error = Some("the tool list is not a JSON array".to_owned()),
                Err(e) => p.offered_error = Some(format!("the tool list is not valid JSON: {e}")),
            },
        }
        if p.offered_error.is_some() {
            p.offered = Some(Vec::new());
        }
    }
    let lines: Vec<&str> = prompt.lines().collect();
    let mut i = 0;
    // Whether text other than blank lines came since the last result block (a new round starts).
    let mut gap = true;
    while i < lines.len() {
        let line = lines[i].trim_end_matches('\r');
        if line.trim_start().starts_with(REPAIR_START) {
            p.repair = true;
        }
        if let Some(what) = line.trim().strip_prefix(MUST_CALL).and_then(|r| r.strip_suffix(MUST_CALL_END)) {
            p.must_call = Some(match what.strip_prefix('`').and_then(|w| w.strip_suffix('`')) {
                Some(name) => MustCall::Named(name.to_owned()),
                None => MustCall::Any,
            });
        }
        if let Some((call_id, name, is_error)) = header(line) {
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() {
                let l = lines[i].trim_end_matches('\r');
                if matches!(l.trim(), "END_TOOL_RESULT" | "END_TOOL_ERROR") {
                    break;
                }
                body.push(l);
                i += 1;
            }
            if gap {
                p.rounds += 1;
                gap = false;
            }
            p.results.push(Received { call_id, name, is_error, text: body.join("\n") });
        } else if !line.trim().is_empty() {
            gap = true;
        }
        i += 1;
    }
    p
}

/// `TOOL_RESULT (call_id=…, name=…):` / `TOOL_ERROR (…):` → (call id, name, is error).
fn header(line: &str) -> Option<(String, String, bool)> {
    let line = line.trim();
    let (rest, is_error) = match (line.strip_prefix("TOOL_RESULT ("), line.strip_prefix("TOOL_ERROR (")) {
        (Some(r), _) => (r, false),
        (_, Some(r)) => (r, true),
        _ => return None,
    };
    let inner = rest.strip_suffix("):")?;
    let inner = inner.strip_prefix("call_id=")?;
    let (id, name) = inner.split_once(", name=")?;
    Some((id.trim().to_owned(), name.trim().to_owned(), is_error))
}

/// JSON on one line with `", "` and `": "` between items, as the contract's example is written.
pub fn spaced(v: &Json) -> String {
    match v {
        Json::Arr(items) => format!("[{}]", items.iter().map(spaced).collect::<Vec<_>>().join(", ")),
        Json::Obj(pairs) => format!(
            "{{{}}}",
            pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", Json::from(k.as_str()).to_compact(), spaced(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_compact(),
    }
}

fn calls_json(calls: &[Call]) -> String {
    spaced(&arr(calls.iter().map(|c| obj([("name", c.name.as_str().into()), ("arguments", c.arguments.clone())]))))
}

/// `[TOOL_CALLS: [{"name": …, "arguments": {…}}]]`.
pub fn block(calls: &[Call]) -> String {
    format!("{MARKER} {}]", calls_json(calls))
}

/// The same block with broken JSON: the last call's closing brace is missing.
pub fn malformed_block(calls: &[Call]) -> String {
    let mut json = calls_json(calls);
    if let Some(at) = json.rfind('}') {
        json.remove(at);
    }
    format!("{MARKER} {json}]")
}

/// Text split into deltas of `n` characters.
pub fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// A block as deltas, with `[TOOL_CALLS:` always split across two of them (`…[TOOL_` | `CALLS: …`)
/// so a reader that holds text back while a marker may be starting is exercised. `lead` (a line
/// break after prose) goes in front of the first piece.
pub fn block_pieces(lead: &str, block: &str, n: usize) -> Vec<String> {
    let split = "[TOOL_".len().min(block.len());
    let mut out = vec![format!("{lead}{}", &block[..split])];
    out.extend(pieces(&block[split..], n));
    out
}

/// What the model says when the script calls a tool it was not offered.
pub fn unavailable(name: &str) -> String {
    format!("The tool \"{name}\" is not available to me here, so I cannot use it.")
}

/// The answer after the last step: every result of the chat by name and first line.
pub fn summary<'a>(results: impl IntoIterator<Item = &'a Received>) -> String {
    let quoted: Vec<String> = results
        .into_iter()
        .map(|r| {
            let first = r.text.lines().next().unwrap_or("");
            if r.is_error {
                format!("{} (error): {first}", r.name)
            } else {
                format!("{}: {first}", r.name)
            }
        })
        .collect();
    if quoted.is_empty() {
        "Done. Results: none.".to_owned()
    } else {
        format!("Done. Results: {}", quoted.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMPT: &str = "<client_tools>\nThe user's editor runs tools for you.\nTools (JSON): [{\"name\":\"create_file\",\"description\":\"d\",\"parameters\":{}},{\"name\":\"read_file\"}]\nTo call tools, end your reply…\n</client_tools>\nMake a file";

    #[test]
    fn block_and_results_parse() {
        let p = parse(PROMPT);
        assert_eq!(p.offered, Some(vec!["create_file".to_owned(), "read_file".to_owned()]));
        assert_eq!((p.rounds, p.repair), (0, false));
        let r = parse("TOOL_RESULT (call_id=call_1, name=create_file):\nok\nline 2\nEND_TOOL_RESULT\n\nTOOL_ERROR (call_id=call_2, name=read_file):\nnope\nEND_TOOL_RESULT\nthanks");
        assert_eq!(r.rounds, 1);
        assert_eq!(
            r.results,
            [
                Received {
                    call_id: "call_1".into(),
                    name: "create_file".into(),
                    is_error: false,
                    text: "ok\nline 2".into()
                },
                Received { call_id: "call_2".into(), name: "read_file".into(), is_error: true, text: "nope".into() },
            ]
        );
        // A flattened transcript: two groups, two rounds.
        let t = parse("TOOL_RESULT (call_id=a, name=x):\n1\nEND_TOOL_RESULT\nassistant: more\nTOOL_RESULT (call_id=b, name=x):\n2\nEND_TOOL_RESULT");
        assert_eq!(t.rounds, 2);
        assert!(parse("Your [TOOL_CALLS] block was invalid: bad JSON. Send it again, corrected.").repair);
        assert!(parse("<client_tools>\nTools (JSON): [oops\n</client_tools>").offered_error.is_some());
        assert_eq!(parse(PROMPT).offered_schemas[0].0, "create_file");
        assert_eq!(parse("You must call a tool in this reply.\n\nhi").must_call, Some(MustCall::Any));
        assert_eq!(
            parse("x\nYou must call `read_file` in this reply.\n").must_call,
            Some(MustCall::Named("read_file".into()))
        );
        assert_eq!(parse("You must call one of the tools now.").must_call, None);
    }

    #[test]
    fn blocks_are_written_as_the_contract_shows() {
        let calls = [Call {
            name: "create_file".into(),
            arguments: Json::parse(r#"{"filePath":"/w/a.txt","content":"hi"}"#).unwrap(),
            server: None,
        }];
        let b = block(&calls);
        assert_eq!(
            b,
            r#"[TOOL_CALLS: [{"name": "create_file", "arguments": {"filePath": "/w/a.txt", "content": "hi"}}]]"#
        );
        let bad = malformed_block(&calls);
        assert!(Json::parse(bad.strip_prefix("[TOOL_CALLS: ").unwrap().strip_suffix(']').unwrap()).is_err());
        let ps = block_pieces("\n\n", &b, 6);
        assert_eq!(ps[0], "\n\n[TOOL_");
        assert!(ps[1].starts_with("CALLS:"));
        assert_eq!(ps.concat(), format!("\n\n{b}"));
    }
}
