//! A client's input schema as MCP takes it. MCP requires an object schema at the top (`type:
//! "object"`), and clients are known to drop a tool whose `properties` is missing; `$schema`
//! names a draft that MCP clients may not know, so it goes. Everything else is kept: the model
//! should see the client's schema, not our reading of it.
//!
//! A schema whose `type` is explicitly not an object (`{"type": "string"}`: a client bug, but
//! seen in OpenAI-style tool lists) is wrapped as the one property [`WRAP_KEY`], and the agent's
//! `{"input": …}` is unwrapped again before the client sees it (`offer.rs`).

use serde_json::{json, Map, Value};

/// The property a non-object schema is wrapped in.
pub const WRAP_KEY: &str = "input";

#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub schema: Value,
    /// The client's schema is the [`WRAP_KEY`] property of `schema`.
    pub wrapped: bool,
}

pub fn convert(schema: &Value) -> Converted {
    let Value::Object(map) = schema else {
        // Missing (null), `true` (anything) or `false`: a tool without parameters is what MCP can say.
        return Converted { schema: json!({"type": "object", "properties": {}}), wrapped: false };
    };
    let mut map = map.clone();
    map.remove("$schema");
    match map.get("type") {
        // No type (JSON Schema: any type): the arguments of a call are an object anyway.
        None => {
            map.insert("type".into(), "object".into());
        }
        Some(Value::String(t)) if t == "object" => {}
        // `["object", "null"]`: only the object can be sent.
        Some(Value::Array(types)) if types.iter().any(|t| t == "object") => {
            map.insert("type".into(), "object".into());
        }
        Some(_) => {
            let wrapped = json!({
                "type": "object",
                "properties": {WRAP_KEY: Value::Object(map)},
                "required": [WRAP_KEY],
            });
            return Converted { schema: wrapped, wrapped: true };
        }
    }
    if !map.get("properties").is_some_and(Value::is_object) {
        map.insert("properties".into(), Value::Object(Map::new()));
    }
    Converted { schema: Value::Object(map), wrapped: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../../tests/fixtures/mcp/schemas.json");

    #[test]
    fn schemas_convert_as_the_fixture_says() {
        let cases: Vec<Value> = serde_json::from_str(FIXTURE).unwrap();
        assert!(cases.len() >= 10, "the fixture lost its cases");
        for case in &cases {
            let why = case["why"].as_str().unwrap();
            let got = convert(&case["in"]);
            assert_eq!(got.schema, case["out"], "{why}");
            assert_eq!(got.wrapped, case["wrapped"].as_bool().unwrap_or(false), "{why}");
            // Whatever came in, what goes out is an object schema with properties.
            assert_eq!(got.schema["type"], "object", "{why}");
            assert!(got.schema["properties"].is_object(), "{why}");
            assert!(got.schema.get("$schema").is_none(), "{why}");
        }
    }
}
