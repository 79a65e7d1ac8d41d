//! A JSON Schema check for the part of the language structured outputs use (what OpenAI's strict
//! mode allows, which Anthropic's output formats share): `type` (one or a list, `null` among
//! them), `nullable`, `enum`, `const`, `properties`, `required`, `additionalProperties`, `items`,
//! `prefixItems`, `minItems`/`maxItems`, `minLength`/`maxLength`, the numeric bounds, `anyOf`,
//! `oneOf`, `allOf`, and `$ref` into the schema itself (`#`, `#/$defs/…`). Other keywords
//! (`pattern`, `format`, …) are said to the model with the schema but not checked here. Written
//! here rather than taken from a validator crate (which brings a regex engine and the whole of
//! JSON Schema) to keep the release binary within its size budget (docs/performance.md): the
//! structured outputs feature as a whole added 52 KiB to it.

use serde_json::Value;

/// Deeper than this is a `$ref` that loops without consuming the value.
const MAX_DEPTH: usize = 64;

/// `Ok` when `value` matches `schema`, else why not, with the JSON pointer of the first mismatch.
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, schema, value, "", 0)
}

fn at(path: &str) -> String {
    if path.is_empty() {
        "the answer".into()
    } else {
        format!("`{path}`")
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_type(name: &str, v: &Value) -> bool {
    match name {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_i64().is_some() || v.as_u64().is_some() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        // An unknown type name matches nothing the model could write.
        _ => false,
    }
}

fn check(root: &Value, schema: &Value, value: &Value, path: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("the schema nests deeper than {MAX_DEPTH} levels at {}", at(path)));
    }
    let s = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{} is not allowed here", at(path))),
        Value::Object(s) => s,
        // Not a schema: nothing to hold the value to.
        _ => return Ok(()),
    };
    if let Some(reference) = s.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| if pointer.is_empty() { Some(root) } else { root.pointer(pointer) })
            .ok_or_else(|| format!("the schema's `$ref` `{reference}` points nowhere in the schema"))?;
        check(root, target, value, path, depth + 1)?;
    }
    if value.is_null() && s.get("nullable").and_then(Value::as_bool) == Some(true) {
        return Ok(());
    }
    match s.get("type") {
        Some(Value::String(t)) if !is_type(t, value) => {
            return Err(format!("{} must be of type {t}, not {}", at(path), kind(value)))
        }
        Some(Value::Array(types)) if !types.iter().filter_map(Value::as_str).any(|t| is_type(t, value)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            return Err(format!("{} must be of type {}, not {}", at(path), names.join(" or "), kind(value)));
        }
        _ => {}
    }
    if let Some(Value::Array(allowed)) = s.get("enum") {
        if !allowed.contains(value) {
            return Err(format!("{} must be one of {}", at(path), Value::Array(allowed.clone())));
        }
    }
    if let Some(expected) = s.get("const") {
        if expected != value {
            return Err(format!("{} must be {expected}", at(path)));
        }
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for sub in all {
            check(root, sub, value, path, depth + 1)?;
        }
    }
    if let Some(Value::Array(any)) = s.get("anyOf") {
        let errors: Vec<String> = any.iter().filter_map(|sub| check(root, sub, value, path, depth + 1).err()).collect();
        if errors.len() == any.len() && !any.is_empty() {
            return Err(format!("{} matches none of `anyOf` (first: {})", at(path), errors[0]));
        }
    }
    if let Some(Value::Array(one)) = s.get("oneOf") {
        let matched = one.iter().filter(|sub| check(root, sub, value, path, depth + 1).is_ok()).count();
        if matched != 1 {
            return Err(format!("{} must match exactly one of `oneOf` (it matches {matched})", at(path)));
        }
    }
    match value {
        Value::Object(fields) => {
            if let Some(Value::Array(required)) = s.get("required") {
                if let Some(missing) = required.iter().filter_map(Value::as_str).find(|k| !fields.contains_key(*k)) {
                    return Err(format!("{} is missing the required property `{missing}`", at(path)));
                }
            }
            let properties = s.get("properties").and_then(Value::as_object);
            for (key, v) in fields {
                let here = format!("{path}/{key}");
                match properties.and_then(|p| p.get(key)) {
                    Some(sub) => check(root, sub, v, &here, depth + 1)?,
                    None => match s.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            return Err(format!("{} has a property the schema does not allow: `{key}`", at(path)))
                        }
                        Some(sub @ Value::Object(_)) => check(root, sub, v, &here, depth + 1)?,
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            let bound = |k: &str| s.get(k).and_then(Value::as_u64);
            if let Some(min) = bound("minItems").filter(|&m| (items.len() as u64) < m) {
                return Err(format!("{} must have at least {min} items", at(path)));
            }
            if let Some(max) = bound("maxItems").filter(|&m| (items.len() as u64) > m) {
                return Err(format!("{} must have at most {max} items", at(path)));
            }
            let prefix = s.get("prefixItems").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            for (i, item) in items.iter().enumerate() {
                let here = format!("{path}/{i}");
                match (prefix.get(i), s.get("items")) {
                    (Some(sub), _) => check(root, sub, item, &here, depth + 1)?,
                    (None, Some(sub)) => check(root, sub, item, &here, depth + 1)?,
                    (None, None) => {}
                }
            }
        }
        Value::String(text) => {
            let chars = text.chars().count() as u64;
            if let Some(min) = s.get("minLength").and_then(Value::as_u64).filter(|&m| chars < m) {
                return Err(format!("{} must be at least {min} characters long", at(path)));
            }
            if let Some(max) = s.get("maxLength").and_then(Value::as_u64).filter(|&m| chars > m) {
                return Err(format!("{} must be at most {max} characters long", at(path)));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            let num = |k: &str| s.get(k).and_then(Value::as_f64);
            let broken = [
                (num("minimum").filter(|&m| x < m), "at least"),
                (num("maximum").filter(|&m| x > m), "at most"),
                (num("exclusiveMinimum").filter(|&m| x <= m), "more than"),
                (num("exclusiveMaximum").filter(|&m| x >= m), "less than"),
            ];
            if let Some((Some(bound), what)) = broken.into_iter().find(|(b, _)| b.is_some()) {
                return Err(format!("{} must be {what} {bound}", at(path)));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// (schema, value, the error's words or "" for a match), one line each.
    #[test]
    fn the_strict_subset_is_checked() {
        let person = json!({"type": "object", "additionalProperties": false, "required": ["name", "age"],
            "properties": {"name": {"type": "string"}, "age": {"type": ["integer", "null"]}}});
        let cases = [
            (person.clone(), json!({"name": "Ada", "age": 36}), ""),
            (person.clone(), json!({"name": "Ada", "age": null}), ""),
            (person.clone(), json!({"name": "Ada"}), "missing the required property `age`"),
            (person.clone(), json!({"name": "Ada", "age": 36, "x": 1}), "does not allow: `x`"),
            (person.clone(), json!({"name": 7, "age": 36}), "`/name` must be of type string, not a number"),
            (person.clone(), json!({"name": "Ada", "age": 36.5}), "integer or null"),
            (person, json!([1]), "the answer must be of type object"),
            (json!({"enum": ["a", "b"]}), json!("c"), "one of [\"a\",\"b\"]"),
            (json!({"const": 3}), json!(3), ""),
            (json!({"type": "string", "nullable": true}), json!(null), ""),
            (json!({"type": "array", "items": {"type": "number"}, "minItems": 2}), json!([1]), "at least 2 items"),
            (json!({"type": "array", "items": {"type": "number"}}), json!([1, "x"]), "`/1` must be of type number"),
            (json!({"anyOf": [{"type": "string"}, {"type": "null"}]}), json!(null), ""),
            (json!({"anyOf": [{"type": "string"}, {"type": "null"}]}), json!(1), "none of `anyOf`"),
            (json!({"type": "number", "minimum": 0}), json!(-1), "at least 0"),
            (json!({"type": "string", "maxLength": 2}), json!("abc"), "at most 2 characters"),
        ];
        for (schema, value, want) in cases {
            match (validate(&schema, &value), want) {
                (Ok(()), "") => {}
                (Err(e), want) if !want.is_empty() => assert!(e.contains(want), "{schema} {value}: {e}"),
                (got, _) => panic!("{schema} {value}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn refs_resolve_in_the_schema_and_recursion_is_bounded() {
        let tree = json!({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "required": ["kids"],
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}});
        assert!(validate(&tree, &json!({"kids": [{"kids": []}]})).is_ok());
        let e = validate(&tree, &json!({"kids": [{"kid": []}]})).unwrap_err();
        assert!(e.contains("`/kids/0` is missing the required property `kids`"), "{e}");
        let e = validate(&json!({"$ref": "#/nowhere"}), &json!(1)).unwrap_err();
        assert!(e.contains("points nowhere"), "{e}");
        let e = validate(&json!({"$ref": "#"}), &json!(1)).unwrap_err();
        assert!(e.contains("deeper than"), "{e}");
    }
}
