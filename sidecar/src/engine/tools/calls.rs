//! Reading the model's calls out of a `[TOOL_CALLS: …]` block and checking them against the
//! client's tools, so a call the client would reject (an unknown tool, a missing argument) gets
//! one repair prompt instead of reaching the client.

use serde_json::{Map, Value};

use super::ToolSet;
use crate::vocab::ToolDefinition;

/// One call as the model wrote it (before we give it an id).
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub name: String,
    pub arguments: Value,
}

/// The calls in `block` (the text from the marker on). Lenient about what models do to JSON:
/// code fences and prose after the array, `arguments` as a JSON string, OpenAI's
/// `{"function": {…}}` wrapping.
pub fn parse_block(block: &str) -> Result<Vec<Parsed>, String> {
    let rest = block.strip_prefix(super::prompt_protocol::MARKER).unwrap_or(block).trim_start();
    let rest = rest.strip_prefix("```json").or_else(|| rest.strip_prefix("```")).unwrap_or(rest).trim_start();
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    let array = match values.next() {
        Some(Ok(Value::Array(items))) => items,
        Some(Ok(Value::Object(one))) => vec![Value::Object(one)],
        Some(Ok(_)) => return Err("the block must hold a JSON array of calls".into()),
        Some(Err(e)) => return Err(format!("the block is not valid JSON ({e})")),
        None => return Err("the block is empty".into()),
    };
    if array.is_empty() {
        return Err("the block holds no call".into());
    }
    array
        .into_iter()
        .enumerate()
        .map(|(i, item)| parse_call(item).map_err(|e| format!("call {}: {e}", i + 1)))
        .collect()
}

fn parse_call(item: Value) -> Result<Parsed, String> {
    let Value::Object(mut call) = item else { return Err("a call must be an object".into()) };
    if let Some(Value::Object(function)) = call.remove("function") {
        call = function;
    }
    let name = match call.remove("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_string(),
        _ => return Err("a call needs a `name`".into()),
    };
    let arguments = match call.remove("arguments").or_else(|| call.remove("input")) {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(text)) => {
            serde_json::from_str(&text).map_err(|e| format!("`arguments` of `{name}` is not valid JSON ({e})"))?
        }
        Some(other) => other,
    };
    Ok(Parsed { name, arguments })
}

/// Check the calls against the tools offered this turn.
pub fn validate(calls: &[Parsed], set: &ToolSet) -> Result<(), String> {
    let offered = set.offered();
    for call in calls {
        let Some(tool) = offered.iter().find(|t| t.name == call.name) else {
            let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
            return Err(format!("there is no tool `{}` (the tools are: {})", call.name, names.join(", ")));
        };
        check_arguments(tool, &call.arguments)?;
    }
    Ok(())
}

/// The schema checks a client would fail the call on: an object, the required properties, and
/// the JSON type of each top-level property. Deeper rules are the client's to enforce.
fn check_arguments(tool: &ToolDefinition, arguments: &Value) -> Result<(), String> {
    let Value::Object(args) = arguments else {
        return Err(format!("the arguments of `{}` must be a JSON object", tool.name));
    };
    let schema = &tool.input_schema;
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !args.contains_key(key) {
                return Err(format!("`{}` needs the argument `{key}`", tool.name));
            }
        }
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
    for (key, value) in args {
        let Some(want) = properties.get(key).and_then(|p| p.get("type")) else { continue };
        let fits = |t: &str| match t {
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            "null" => value.is_null(),
            _ => true,
        };
        let ok = match want {
            Value::String(t) => fits(t),
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(fits),
            _ => true,
        };
        if !ok {
            return Err(format!("the argument `{key}` of `{}` must be of type {want}", tool.name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::ToolChoice;
    use serde_json::json;

    fn set() -> ToolSet {
        let create = ToolDefinition {
            name: "create_file".into(),
            description: "Create a file".into(),
            input_schema: json!({"type": "object", "properties": {"filePath": {"type": "string"},
                "content": {"type": "string"}}, "required": ["filePath", "content"]}),
        };
        let count = ToolDefinition {
            name: "count".into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}),
        };
        ToolSet { tools: vec![create, count], choice: ToolChoice::Auto, parallel: true }
    }

    #[test]
    fn blocks_models_write_are_read() {
        let cases: &[(&str, &str, Value)] = &[
            ("plain", r#"[TOOL_CALLS: [{"name": "count", "arguments": {"n": 1}}]]"#, json!({"n": 1})),
            ("fenced", "[TOOL_CALLS: ```json\n[{\"name\": \"count\", \"arguments\": {}}]\n```]", json!({})),
            ("prose after", r#"[TOOL_CALLS: [{"name": "count"}]] I will wait."#, json!({})),
            ("string arguments", r#"[TOOL_CALLS: [{"name": "count", "arguments": "{\"n\": 2}"}]]"#, json!({"n": 2})),
            (
                "openai shape",
                r#"[TOOL_CALLS: [{"function": {"name": "count", "arguments": {"n": 3}}}]]"#,
                json!({"n": 3}),
            ),
            ("one object", r#"[TOOL_CALLS: {"name": "count", "arguments": {"n": 4}}]"#, json!({"n": 4})),
        ];
        for (what, block, args) in cases {
            let calls = parse_block(block).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(calls, vec![Parsed { name: "count".into(), arguments: args.clone() }], "{what}");
        }
    }

    #[test]
    fn broken_blocks_say_why() {
        let cases: &[(&str, &str, &str)] = &[
            ("cut off", r#"[TOOL_CALLS: [{"name": "count", "argu"#, "not valid JSON"),
            ("empty array", "[TOOL_CALLS: []]", "no call"),
            ("no name", r#"[TOOL_CALLS: [{"arguments": {}}]]"#, "needs a `name`"),
            ("a number", "[TOOL_CALLS: 42]", "JSON array"),
            ("bad string arguments", r#"[TOOL_CALLS: [{"name": "count", "arguments": "{n"}]]"#, "not valid JSON"),
        ];
        for (what, block, want) in cases {
            let e = parse_block(block).expect_err(what);
            assert!(e.contains(want), "{what}: {e}");
        }
    }

    #[test]
    fn calls_are_checked_against_the_schemas() {
        let call = |name: &str, arguments: Value| vec![Parsed { name: name.into(), arguments }];
        let s = set();
        assert!(validate(&call("create_file", json!({"filePath": "/a", "content": "x"})), &s).is_ok());
        assert!(validate(&call("count", json!({"n": null})), &s).is_ok());
        let cases: Vec<(&str, Vec<Parsed>, &str)> = vec![
            ("unknown tool", call("delete_all", json!({})), "no tool `delete_all`"),
            ("missing argument", call("create_file", json!({"filePath": "/a"})), "needs the argument `content`"),
            ("wrong type", call("create_file", json!({"filePath": 1, "content": "x"})), "`filePath`"),
            ("not an object", call("count", json!([1])), "JSON object"),
            ("integer union", call("count", json!({"n": 1.5})), "`n`"),
        ];
        for (what, calls, want) in cases {
            let e = validate(&calls, &s).expect_err(what);
            assert!(e.contains(want), "{what}: {e}");
        }
        let named = ToolSet { choice: ToolChoice::Named("count".into()), ..set() };
        let e = validate(&call("create_file", json!({"filePath": "/a", "content": "x"})), &named).unwrap_err();
        assert!(e.contains("no tool"), "{e}");
    }
}
