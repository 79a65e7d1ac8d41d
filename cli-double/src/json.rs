//! A tiny ordered JSON value, written the way Node's `JSON.stringify` writes.
//!
//! Why not `serde_json::Value`: without its `preserve_order` feature it sorts object keys, and the
//! real CLI's key order (`type`, `subtype`, ..., `session_id`, `timestamp_ms`) is part of what the
//! double must reproduce byte for byte. Enabling that feature here would also change
//! `serde_json::Map` for every other crate of the workspace (Cargo unifies features), so the double
//! keeps its own value type and only borrows serde_json's parser.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value whose objects keep their keys in insertion (or document) order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

/// Builds an object from `(key, value)` pairs, keeping their order.
pub fn obj<const N: usize>(pairs: [(&str, Json); N]) -> Json {
    Json::Obj(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// Builds an array.
pub fn arr<I: IntoIterator<Item = Json>>(items: I) -> Json {
    Json::Arr(items.into_iter().collect())
}

impl Json {
    /// Parses one JSON document (any value), keeping object key order.
    pub fn parse(text: &str) -> Result<Json, String> {
        serde_json::from_str::<Json>(text).map_err(|e| e.to_string())
    }

    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Sets `key`, replacing an existing value in place (so its position is kept) or appending.
    /// Does nothing on non-objects.
    pub fn set(&mut self, key: &str, value: Json) {
        if let Json::Obj(pairs) = self {
            match pairs.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = value,
                None => pairs.push((key.to_owned(), value)),
            }
        }
    }

    /// Overlays every key of `other` onto `self` (both must be objects; shallow, field by field).
    pub fn merge_from(&mut self, other: &Json) {
        if let Json::Obj(pairs) = other {
            for (k, v) in pairs {
                self.set(k, v.clone());
            }
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&[(String, Json)]> {
        match self {
            Json::Obj(pairs) => Some(pairs),
            _ => None,
        }
    }

    /// Writes compact JSON exactly like `JSON.stringify(value)` for the values the double produces.
    pub fn to_compact(&self) -> String {
        let mut out = String::new();
        self.write_to(&mut out);
        out
    }

    fn write_to(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => write_number(n, out),
            Json::Str(s) => write_string(s, out),
            Json::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_to(out);
                }
                out.push(']');
            }
            Json::Obj(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(k, out);
                    out.push(':');
                    v.write_to(out);
                }
                out.push('}');
            }
        }
    }
}

/// JavaScript prints integral doubles without a fractional part (`2`, not `2.0`).
fn write_number(n: &serde_json::Number, out: &mut String) {
    if let Some(f) = n.as_f64().filter(|_| n.is_f64()) {
        if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 {
            out.push_str(&format!("{}", f as i128));
            return;
        }
        if !f.is_finite() {
            out.push_str("null");
            return;
        }
    }
    out.push_str(&n.to_string());
}

/// `JSON.stringify` string escaping: `"` and `\` escaped, the C0 controls as short escapes where
/// one exists else `\u00xx` (lower-case hex); everything else, including non-ASCII, written raw.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_compact())
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Self {
        Json::Str(s.to_owned())
    }
}
impl From<String> for Json {
    fn from(s: String) -> Self {
        Json::Str(s)
    }
}
impl From<&String> for Json {
    fn from(s: &String) -> Self {
        Json::Str(s.clone())
    }
}
impl From<bool> for Json {
    fn from(b: bool) -> Self {
        Json::Bool(b)
    }
}
impl From<u64> for Json {
    fn from(n: u64) -> Self {
        Json::Num(n.into())
    }
}
impl From<i64> for Json {
    fn from(n: i64) -> Self {
        Json::Num(n.into())
    }
}
impl From<u32> for Json {
    fn from(n: u32) -> Self {
        Json::Num(n.into())
    }
}
impl From<i32> for Json {
    fn from(n: i32) -> Self {
        Json::Num(n.into())
    }
}
impl From<usize> for Json {
    fn from(n: usize) -> Self {
        Json::Num((n as u64).into())
    }
}
impl<T: Into<Json>> From<Option<T>> for Json {
    fn from(v: Option<T>) -> Self {
        v.map_or(Json::Null, Into::into)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Num(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Num(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Num))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Json>()? {
            items.push(item);
        }
        Ok(Json::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut value = Json::Obj(Vec::new());
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            // Duplicate keys: last one wins, at the first one's position (like JSON.parse).
            value.set(&k, v);
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_key_order_and_escapes_like_node() {
        let v = Json::parse(r#"{"z":1,"a":"é\n\u0001\"\\","m":[true,null,2.0,1.5]}"#).unwrap();
        assert_eq!(v.to_compact(), "{\"z\":1,\"a\":\"é\\n\\u0001\\\"\\\\\",\"m\":[true,null,2,1.5]}");
    }

    #[test]
    fn set_replaces_in_place() {
        let mut v = obj([("a", 1u64.into()), ("b", 2u64.into())]);
        v.set("a", "x".into());
        v.set("c", Json::Null);
        assert_eq!(v.to_compact(), r#"{"a":"x","b":2,"c":null}"#);
    }
}
