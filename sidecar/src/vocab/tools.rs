//! The client's tools (client-tools mode, docs/client-tools.md): what they are, which one the
//! model must call, a call and its result.

use serde::{Deserialize, Serialize};

/// A tool the client owns and runs (client-tools mode, docs/client-tools.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// A JSON Schema of the tool's input (an object).
    #[serde(default = "empty_object_schema")]
    pub input_schema: serde_json::Value,
}

fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    #[default]
    Auto,
    None,
    Required,
    /// This tool, and only this one.
    Named(String),
}

impl Serialize for ToolChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            ToolChoice::Auto => s.serialize_str("auto"),
            ToolChoice::None => s.serialize_str("none"),
            ToolChoice::Required => s.serialize_str("required"),
            ToolChoice::Named(name) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("name", name)?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Word(String),
            Named { name: String },
        }
        match Wire::deserialize(d)? {
            Wire::Word(w) => match w.as_str() {
                "auto" => Ok(ToolChoice::Auto),
                "none" => Ok(ToolChoice::None),
                "required" => Ok(ToolChoice::Required),
                other => Err(serde::de::Error::custom(format!(
                    "unknown toolChoice `{other}`: expected \"auto\", \"none\", \"required\" or {{\"name\": …}}"
                ))),
            },
            Wire::Named { name } => Ok(ToolChoice::Named(name)),
        }
    }
}

/// The model asked the client to run one of its tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// This sidecar's id for the call (`call_…`), never the agent's.
    pub call_id: String,
    pub name: String,
    #[serde(default)]
    pub input: serde_json::Value,
}

/// What the client's tool returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub call_id: String,
    /// The tool's name, when the client knows it (OpenAI's `role: "tool"` messages do not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
}
