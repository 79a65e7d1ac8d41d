//! Structured outputs, for every route: the format a request asks for (chat completions'
//! `response_format`, Responses' `text.format`, Anthropic's `output_config.format`), told to the
//! model after the prompt (`TurnRequest::answer_format`), the answer checked against it (a
//! ```` ```json ```` fence around it taken off), asked for once more in the same chat with what
//! was wrong, and still wrong: a 502 `structured_output_invalid`, never a 200 whose text breaks
//! the client's parser. The Cursor CLI has no constrained decoding: this is the whole guarantee.

pub mod schema;

use axum::http::StatusCode;
use serde_json::Value;

use super::errors::ApiError;

/// What the answer must be.
#[derive(Debug, Clone, PartialEq)]
pub enum Format {
    /// Any JSON object (`json_object`).
    JsonObject,
    /// A JSON value that matches `schema` (`json_schema`).
    Schema { name: String, schema: Value },
}

/// How the repair prompt opens; the CLI double recognises a repair by it.
pub const REPAIR_START: &str = "Your answer did not match the required JSON format";

impl Format {
    /// Chat completions' `response_format`: `text`, `json_object`, or
    /// `json_schema` with `{name, schema, strict?}` under `json_schema`.
    pub fn from_response_format(value: Option<&Value>) -> Result<Option<Format>, ApiError> {
        let Some(format) = value.filter(|v| !v.is_null()) else { return Ok(None) };
        let schema = format.get("json_schema");
        Format::of(format, schema.unwrap_or(&Value::Null), "response_format", "response_format.json_schema")
    }

    /// Responses' `text.format`: the same kinds, `name` and `schema` beside `type`.
    pub fn from_text_format(text: Option<&Value>) -> Result<Option<Format>, ApiError> {
        let Some(format) = text.and_then(|t| t.get("format")).filter(|v| !v.is_null()) else { return Ok(None) };
        Format::of(format, format, "text.format", "text.format")
    }

    /// Anthropic's `output_config.format` (`{type: "json_schema", schema}`), or the beta's
    /// top-level `output_format` its SDKs still send.
    pub fn from_output_config(config: Option<&Value>, beta: Option<&Value>) -> Result<Option<Format>, ApiError> {
        let (format, param) = match (config.and_then(|c| c.get("format")).filter(|v| !v.is_null()), beta) {
            (Some(f), _) => (f, "output_config.format"),
            (None, Some(f)) if !f.is_null() => (f, "output_format"),
            _ => return Ok(None),
        };
        match format.get("type").and_then(Value::as_str) {
            Some("json_schema") => Format::of(format, format, param, param),
            other => Err(ApiError::bad_request(format!(
                "{param}.type: `{}` is not supported: expected `json_schema`.",
                other.unwrap_or("(none)")
            ))
            .param(format!("{param}.type"))),
        }
    }

    fn of(format: &Value, holder: &Value, param: &str, at: &str) -> Result<Option<Format>, ApiError> {
        match format.get("type").and_then(Value::as_str) {
            Some("text") => Ok(None),
            Some("json_object") => Ok(Some(Format::JsonObject)),
            Some("json_schema") => {
                let Some(schema) = holder.get("schema").filter(|s| s.is_object() || s.is_boolean()) else {
                    return Err(ApiError::bad_request(format!("`{at}.schema` must be a JSON Schema object."))
                        .param(format!("{at}.schema")));
                };
                let name = holder.get("name").and_then(Value::as_str).unwrap_or("answer").to_string();
                Ok(Some(Format::Schema { name, schema: schema.clone() }))
            }
            other => Err(ApiError::bad_request(format!(
                "`{param}.type` `{}` is not supported: expected text, json_object or json_schema.",
                other.unwrap_or("(none)")
            ))
            .param(format!("{param}.type"))),
        }
    }

    /// What the model is told, after the prompt.
    pub fn instruction(&self) -> String {
        match self {
            Format::JsonObject => "<response_format>\nAnswer with one JSON object and nothing else: no prose before or \
                                  after it, no code fence around it.\n</response_format>"
                .into(),
            Format::Schema { name, schema } => format!(
                "<response_format>\nAnswer with one JSON value that matches the JSON Schema `{name}` below, and \
                 nothing else: no prose before or after it, no code fence around it.\nSchema: {schema}\n</response_format>"
            ),
        }
    }

    /// The answer as the client gets it (its fence, if any, taken off), or what is wrong with it.
    pub fn check(&self, text: &str) -> Result<String, String> {
        let json = unfenced(text);
        let value: Value = serde_json::from_str(json).map_err(|e| {
            if json.is_empty() {
                "the answer was empty".to_string()
            } else {
                format!("the answer is not JSON ({e})")
            }
        })?;
        match self {
            Format::JsonObject if !value.is_object() => Err("the answer is JSON but not an object".into()),
            Format::JsonObject => Ok(json.to_string()),
            Format::Schema { schema, .. } => schema::validate(schema, &value).map(|()| json.to_string()),
        }
    }
}

/// A ```` ```json ```` (or bare ```` ``` ````) fence around the whole answer, taken off.
fn unfenced(text: &str) -> &str {
    let t = text.trim();
    let Some(inner) = t.strip_prefix("```").and_then(|rest| rest.strip_suffix("```")) else { return t };
    // The info string (`json`) runs to the end of the fence's first line.
    match inner.split_once('\n') {
        Some((info, body)) if !info.trim().contains(['{', '[', '"']) => body.trim(),
        _ => inner.trim(),
    }
}

/// Asks once more, in the same chat, after an answer that did not fit.
pub fn repair_prompt(why: &str) -> String {
    format!(
        "{REPAIR_START}: {why}. Answer again with only the corrected JSON: no prose, no code fence, nothing after it."
    )
}

/// Asked twice, the model still answered something that does not fit. 502: the model, not the
/// request, fell short.
pub fn invalid(why: &str) -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        "api_error",
        format!(
            "The model's answer did not match the requested format, even when asked again: {why}. Try again, \
             simplify the schema, or pick another model."
        ),
    )
    .code("structured_output_invalid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_dialect_names_its_format() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]});
        let chat = json!({"type": "json_schema", "json_schema": {"name": "thing", "schema": schema, "strict": true}});
        let want = Format::Schema { name: "thing".into(), schema: schema.clone() };
        assert_eq!(Format::from_response_format(Some(&chat)).unwrap(), Some(want.clone()));
        let text = json!({"format": {"type": "json_schema", "name": "thing", "schema": schema, "strict": true}});
        assert_eq!(Format::from_text_format(Some(&text)).unwrap(), Some(want));
        let anthropic = json!({"format": {"type": "json_schema", "schema": schema}});
        assert!(matches!(Format::from_output_config(Some(&anthropic), None).unwrap(), Some(Format::Schema { .. })));
        let beta = json!({"type": "json_schema", "schema": schema});
        assert!(Format::from_output_config(None, Some(&beta)).unwrap().is_some());
        assert_eq!(
            Format::from_response_format(Some(&json!({"type": "json_object"}))).unwrap(),
            Some(Format::JsonObject)
        );
        assert_eq!(Format::from_response_format(Some(&json!({"type": "text"}))).unwrap(), None);
        assert_eq!(Format::from_text_format(None).unwrap(), None);
        let bad = [
            (Format::from_response_format(Some(&json!({"type": "yaml"}))), "response_format.type"),
            (Format::from_response_format(Some(&json!({"type": "json_schema"}))), "response_format.json_schema.schema"),
            (Format::from_text_format(Some(&json!({"format": {"type": "json_schema"}}))), "text.format.schema"),
            (
                Format::from_output_config(Some(&json!({"format": {"type": "json_object"}})), None),
                "output_config.format.type",
            ),
        ];
        for (got, param) in bad {
            assert_eq!(got.unwrap_err().param.as_deref(), Some(param));
        }
    }

    #[test]
    fn answers_are_checked_and_their_fence_taken_off() {
        let format = Format::Schema {
            name: "n".into(),
            schema: json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}),
        };
        assert_eq!(format.check(" {\"a\": 1}\n").unwrap(), "{\"a\": 1}");
        assert_eq!(format.check("```json\n{\"a\": 1}\n```").unwrap(), "{\"a\": 1}");
        assert_eq!(format.check("```\n{\"a\": 2}\n```").unwrap(), "{\"a\": 2}");
        assert!(format.check("Sure! {\"a\": 1}").unwrap_err().contains("not JSON"));
        assert!(format.check("{\"a\": \"one\"}").unwrap_err().contains("`/a` must be of type integer"));
        assert!(format.check("").unwrap_err().contains("empty"));
        assert!(Format::JsonObject.check("[1]").unwrap_err().contains("not an object"));
        assert!(Format::JsonObject.check("```json\n{}\n```").is_ok());
        assert!(repair_prompt("why").starts_with(REPAIR_START));
        assert!(format.instruction().contains("\"required\":[\"a\"]"), "{}", format.instruction());
    }
}
