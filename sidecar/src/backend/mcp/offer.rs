//! The tool set the host offers, and the way back from what the agent calls to the client's tool.
//!
//! An agent gives the model only the first few tools of a server ([`McpLimits::listed`]: Cursor's
//! 40), while Copilot's agent mode may send over 100. So beyond that many, one fewer are offered
//! (the caller ranked them) and a dispatcher,
//! `call_tool {name, arguments}`, whose description lists the rest by the client's names: every
//! tool stays reachable, the important ones directly. Names and schemas are adapted by
//! `names.rs` and `schema.rs`; this table is what turns them back.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::calls::{McpLimits, OfferedTool};
use super::names;
use super::schema::{self, WRAP_KEY};
use crate::util::text::one_line;

/// The dispatcher's name (unless a client tool has it: then a shortened form).
pub const DISPATCHER: &str = "call_tool";
/// The server name the agent knows us by; tool names are budgeted against it.
pub const SERVER_NAME: &str = "cb";
/// How much of a tool's description the dispatcher's list shows per tool.
const SUMMARY_CHARS: usize = 120;
/// Parameters named per tool in the dispatcher's list.
const PARAMS_SHOWN: usize = 12;

struct Direct {
    tool: String,
    wrapped: bool,
}

pub struct ToolOffer {
    /// The `tools/list` result, built once.
    listing: Value,
    /// Offered name → the client's tool.
    direct: HashMap<String, Direct>,
    /// The dispatcher's offered name, when there is one.
    dispatcher: Option<String>,
    /// Every client tool by the client's name (the dispatcher reaches them all).
    all: HashSet<String>,
}

impl ToolOffer {
    /// The offer of `tools` in the caller's order, within the agent's `limits`. A second tool
    /// of the same name is dropped (the first is the one the caller ranked higher).
    pub fn new(tools: Vec<OfferedTool>, limits: McpLimits) -> ToolOffer {
        let mut seen = HashSet::new();
        let tools: Vec<OfferedTool> = tools.into_iter().filter(|t| seen.insert(t.name.clone())).collect();
        let direct_count = if tools.len() > limits.listed { limits.listed - 1 } else { tools.len() };
        let (shown, rest) = tools.split_at(direct_count);

        let budget = limits.combined - SERVER_NAME.len();
        let mut taken = HashSet::new();
        let shown_names: Vec<&str> = shown.iter().map(|t| t.name.as_str()).collect();
        let offered = names::assign(&shown_names, budget, &mut taken);

        let mut listing = Vec::with_capacity(direct_count + 1);
        let mut direct = HashMap::with_capacity(direct_count);
        for (tool, name) in shown.iter().zip(offered) {
            let converted = schema::convert(&tool.input_schema);
            let mut description = tool.description.clone();
            if name != tool.name {
                // The client's prompts name its tools by their own names: say which one this is.
                if !description.is_empty() {
                    description.push_str("\n\n");
                }
                description.push_str(&format!("(The editor's tool `{}`.)", tool.name));
            }
            listing.push(entry(&name, &description, converted.schema));
            direct.insert(name, Direct { tool: tool.name.clone(), wrapped: converted.wrapped });
        }

        let dispatcher = (!rest.is_empty()).then(|| {
            let name = names::assign(&[DISPATCHER], budget, &mut taken).remove(0);
            listing.push(entry(&name, &dispatcher_description(rest), dispatcher_schema(rest)));
            name
        });
        ToolOffer {
            listing: json!({"tools": listing}),
            direct,
            dispatcher,
            all: tools.into_iter().map(|t| t.name).collect(),
        }
    }

    /// The result of `tools/list`.
    pub fn listing(&self) -> &Value {
        &self.listing
    }

    /// The client's tool and arguments for a `tools/call` of `name` (the offered name), or the
    /// text of the error result the agent gets instead.
    pub fn resolve(&self, name: &str, arguments: Option<&Value>) -> Result<(String, Value), String> {
        let arguments = match arguments {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::Object(map)) => Value::Object(map.clone()),
            Some(_) => return Err(format!("The arguments of `{name}` must be a JSON object.")),
        };
        if self.dispatcher.as_deref() == Some(name) {
            return self.dispatch(name, arguments);
        }
        let Some(direct) = self.direct.get(name) else {
            return Err(format!("Unknown tool `{name}`: this server offers only the tools of its tools/list."));
        };
        let arguments =
            if direct.wrapped { arguments.get(WRAP_KEY).cloned().unwrap_or(Value::Null) } else { arguments };
        Ok((direct.tool.clone(), arguments))
    }

    /// `call_tool {name, arguments}`: the named client tool with those arguments, as given.
    fn dispatch(&self, dispatcher: &str, arguments: Value) -> Result<(String, Value), String> {
        let Some(tool) = arguments.get("name").and_then(Value::as_str) else {
            return Err(format!("`{dispatcher}` needs `name`: the tool to run, as its description lists it."));
        };
        if !self.all.contains(tool) {
            return Err(format!(
                "Unknown tool `{tool}`: `{dispatcher}` runs only the tools its description lists, by those names."
            ));
        }
        let inner = match arguments.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(inner) => inner.clone(),
        };
        Ok((tool.to_string(), inner))
    }
}

fn entry(name: &str, description: &str, input_schema: Value) -> Value {
    let mut entry = json!({"name": name, "inputSchema": input_schema});
    if !description.is_empty() {
        entry["description"] = description.into();
    }
    entry
}

/// `- name(a, b?): summary` per tool: enough to pick one and fill in its arguments.
fn dispatcher_description(rest: &[OfferedTool]) -> String {
    let mut text = String::from(
        "Runs one of the editor's tools that are not offered on their own (a server may offer only 40). \
         Pass the tool's `name` exactly as listed here and its `arguments` as an object.\n\nTools:",
    );
    for tool in rest {
        let converted = schema::convert(&tool.input_schema);
        let required: HashSet<&str> =
            converted.schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let properties = converted.schema["properties"].as_object();
        let mut params: Vec<String> = properties
            .into_iter()
            .flatten()
            .take(PARAMS_SHOWN)
            .map(|(p, _)| if required.contains(p.as_str()) { p.clone() } else { format!("{p}?") })
            .collect();
        if properties.is_some_and(|p| p.len() > PARAMS_SHOWN) {
            params.push("…".into());
        }
        text.push_str(&format!("\n- {}({})", tool.name, params.join(", ")));
        let summary = one_line(tool.description.trim(), SUMMARY_CHARS);
        if !summary.is_empty() {
            text.push_str(": ");
            text.push_str(&summary);
        }
    }
    text
}

fn dispatcher_schema(rest: &[OfferedTool]) -> Value {
    let names: Vec<&str> = rest.iter().map(|t| t.name.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "enum": names, "description": "The tool to run."},
            "arguments": {"type": "object", "description": "The tool's arguments."},
        },
        "required": ["name"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mcp::TEST_LIMITS;

    fn tool(name: &str) -> OfferedTool {
        OfferedTool {
            name: name.into(),
            description: format!("Does {name}."),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}, "force": {"type": "boolean"}}, "required": ["path"]}),
        }
    }

    fn listed_names(offer: &ToolOffer) -> Vec<String> {
        offer.listing()["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn up_to_forty_tools_are_offered_directly_in_order() {
        for count in [0, 1, 39, 40] {
            let tools: Vec<OfferedTool> = (0..count).map(|i| tool(&format!("tool_{i}"))).collect();
            let offer = ToolOffer::new(tools.clone(), TEST_LIMITS);
            let expected: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            assert_eq!(listed_names(&offer), expected, "{count} tools");
            assert!(offer.resolve(DISPATCHER, None).is_err(), "no dispatcher with {count} tools");
        }
    }

    #[test]
    fn beyond_forty_the_first_39_and_a_dispatcher_that_reaches_the_rest() {
        let tools: Vec<OfferedTool> = (0..128).map(|i| tool(&format!("tool_{i}"))).collect();
        let offer = ToolOffer::new(tools, TEST_LIMITS);
        let listed = listed_names(&offer);
        assert_eq!(listed.len(), TEST_LIMITS.listed);
        assert_eq!(listed[..39], (0..39).map(|i| format!("tool_{i}")).collect::<Vec<_>>()[..]);
        assert_eq!(listed[39], DISPATCHER);

        let dispatcher = &offer.listing()["tools"][39];
        let description = dispatcher["description"].as_str().unwrap();
        assert!(description.contains("\n- tool_39(force?, path): Does tool_39."), "{description}");
        assert!(description.contains("\n- tool_127(force?, path): Does tool_127."));
        assert!(!description.contains("tool_38("), "direct tools are not repeated");
        assert_eq!(dispatcher["inputSchema"]["properties"]["name"]["enum"].as_array().unwrap().len(), 128 - 39);

        let (tool, args) =
            offer.resolve(DISPATCHER, Some(&json!({"name": "tool_100", "arguments": {"path": "/w/a"}}))).unwrap();
        assert_eq!((tool.as_str(), args), ("tool_100", json!({"path": "/w/a"})));
        let (tool, args) = offer.resolve(DISPATCHER, Some(&json!({"name": "tool_50"}))).unwrap();
        assert_eq!((tool.as_str(), args), ("tool_50", json!({})));
        // A direct tool named through the dispatcher is still the client's tool.
        assert_eq!(offer.resolve(DISPATCHER, Some(&json!({"name": "tool_3"}))).unwrap().0, "tool_3");
        let unknown = offer.resolve(DISPATCHER, Some(&json!({"name": "rm_rf"}))).unwrap_err();
        assert!(unknown.contains("`rm_rf`"), "{unknown}");
        assert!(offer.resolve(DISPATCHER, Some(&json!({"arguments": {}}))).unwrap_err().contains("needs `name`"));
        assert!(offer.resolve(DISPATCHER, Some(&json!({"name": 5}))).is_err());
        // Only offered names are callable directly.
        assert!(offer.resolve("tool_100", None).unwrap_err().contains("`tool_100`"));
    }

    #[test]
    fn a_client_tool_named_like_the_dispatcher_keeps_its_name() {
        let mut tools: Vec<OfferedTool> = vec![tool(DISPATCHER)];
        tools.extend((0..45).map(|i| tool(&format!("t{i}"))));
        let offer = ToolOffer::new(tools, TEST_LIMITS);
        let listed = listed_names(&offer);
        assert_eq!(listed[0], DISPATCHER);
        let dispatcher = &listed[39];
        assert!(dispatcher.starts_with("call_tool_") && dispatcher != DISPATCHER, "{dispatcher}");
        assert_eq!(offer.resolve(DISPATCHER, Some(&json!({"path": "p"}))).unwrap().0, DISPATCHER);
        assert_eq!(offer.resolve(dispatcher, Some(&json!({"name": "t44"}))).unwrap().0, "t44");
    }

    #[test]
    fn offered_names_map_back_to_the_client_names() {
        let long = format!("mcp_{}_search_everything", "x".repeat(60));
        let clients = [
            "create_file",
            long.as_str(),
            "mcp.github/create_issue",
            "mcp.github:create_issue",
            "読み取り",
            "",
            "create_file", // a duplicate: dropped
        ];
        let offer = ToolOffer::new(clients.iter().map(|n| tool(n)).collect(), TEST_LIMITS);
        let listed = listed_names(&offer);
        assert_eq!(listed.len(), clients.len() - 1);
        assert_eq!(listed[0], "create_file", "a name that fits stays the same");
        let unique: HashSet<&String> = listed.iter().collect();
        assert_eq!(unique.len(), listed.len(), "{listed:?}");
        for (offered, client) in listed.iter().zip(clients) {
            assert!(names::fits(offered, TEST_LIMITS.combined - SERVER_NAME.len()), "{offered:?}");
            let (tool, args) = offer.resolve(offered, Some(&json!({"path": "p"}))).unwrap();
            assert_eq!((tool.as_str(), args), (client, json!({"path": "p"})));
        }
        // The shortened ones say which tool they are.
        let description = offer.listing()["tools"][2]["description"].as_str().unwrap();
        assert!(description.ends_with("(The editor's tool `mcp.github/create_issue`.)"), "{description}");
        assert_eq!(offer.listing()["tools"][0]["description"], "Does create_file.");
    }

    #[test]
    fn arguments_are_checked_and_wrapped_schemas_unwrapped() {
        let wrapped =
            OfferedTool { name: "run".into(), description: String::new(), input_schema: json!({"type": "string"}) };
        let offer = ToolOffer::new(vec![tool("read"), wrapped], TEST_LIMITS);
        let listing = offer.listing();
        assert!(listing["tools"][1].get("description").is_none(), "no empty description");
        assert_eq!(listing["tools"][1]["inputSchema"]["properties"][WRAP_KEY], json!({"type": "string"}));
        assert_eq!(offer.resolve("run", Some(&json!({WRAP_KEY: "ls -l"}))).unwrap(), ("run".into(), json!("ls -l")));
        assert_eq!(offer.resolve("read", None).unwrap(), ("read".into(), json!({})));
        assert_eq!(offer.resolve("read", Some(&Value::Null)).unwrap(), ("read".into(), json!({})));
        let bad = offer.resolve("read", Some(&json!("path"))).unwrap_err();
        assert!(bad.contains("must be a JSON object"), "{bad}");
    }
}
