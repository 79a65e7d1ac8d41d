//! Wire types. Everything is optional and loosely typed: a field of an unexpected type is treated
//! as absent instead of failing the line (§4.3: fields are added over time). Strings borrow from
//! the line when they have no escapes; subtrees this parser does not need (file contents inside
//! tool results, diffs …) are skipped without allocating.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::event::ToolOutcome;
use super::tools::{outcome_from_entry, outcome_from_word};
use crate::protocol::Usage;

/// Any JSON value, keeping only scalars.
#[derive(Debug)]
enum Loose<'a> {
    Str(Cow<'a, str>),
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Null,
    Nested,
}

impl<'a> Loose<'a> {
    fn into_str(self) -> Option<Cow<'a, str>> {
        match self {
            Loose::Str(s) => Some(s),
            _ => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match self {
            Loose::Int(n) => Some(*n),
            Loose::UInt(n) => i64::try_from(*n).ok(),
            Loose::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            Loose::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn as_u64(&self) -> Option<u64> {
        match self {
            Loose::UInt(n) => Some(*n),
            other => other.as_i64().and_then(|n| u64::try_from(n).ok()),
        }
    }

    /// Present and meaningful: not `null`, not `""`.
    fn is_present(&self) -> bool {
        match self {
            Loose::Null => false,
            Loose::Str(s) => !s.is_empty(),
            _ => true,
        }
    }
}

impl<'de> Deserialize<'de> for Loose<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LooseVisitor)
    }
}

/// Implements every `visit_*` of a `deserialize_any` visitor except `visit_map` (and, where
/// the visitor needs it, `visit_seq`) by handing the value, as a [`Loose`], to `self.other`.
/// Serde's defaults would reject these types and with them the whole line.
macro_rules! visit_other_as_loose {
    () => {
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Bool(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Int(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(self.other(Loose::UInt(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Float(v)))
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Str(Cow::Borrowed(v))))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Str(Cow::Owned(v.to_owned()))))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Str(Cow::Owned(v))))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Null))
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(self.other(Loose::Null))
        }
    };
}

/// Drains a JSON array without allocating.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

struct LooseVisitor;

impl LooseVisitor {
    fn other(self, value: Loose<'_>) -> Loose<'_> {
        value
    }
}

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Loose<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    visit_other_as_loose!();
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Loose::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|()| Loose::Nested)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Loose::Nested)
    }
}

/// A map key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A JSON object read field by field. `field` must consume the value of every key it is given.
trait Fields<'de>: Default {
    fn field<A: MapAccess<'de>>(&mut self, key: Cow<'de, str>, map: &mut A)
        -> Result<(), A::Error>;

    /// Where an object was expected but something else came; `None` = treat as absent.
    fn from_other(_value: Loose<'de>) -> Option<Self> {
        None
    }
}

/// `T` if the value was an object (or something `T::from_other` accepts), else `None`.
pub(super) struct Obj<T>(pub(super) Option<T>);

impl<'de, T: Fields<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ObjVisitor(PhantomData))
    }
}

struct ObjVisitor<T>(PhantomData<T>);

impl<'de, T: Fields<'de>> ObjVisitor<T> {
    fn other(self, value: Loose<'de>) -> Obj<T> {
        Obj(T::from_other(value))
    }
}

impl<'de, T: Fields<'de>> Visitor<'de> for ObjVisitor<T> {
    type Value = Obj<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    visit_other_as_loose!();
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Obj::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|()| self.other(Loose::Nested))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut value = T::default();
        while let Some(Key(key)) = map.next_key()? {
            value.field(key, &mut map)?;
        }
        Ok(Obj(Some(value)))
    }
}

fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(drop)
}

fn next_str<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    Ok(map.next_value::<Loose<'de>>()?.into_str())
}

fn next_obj<'de, A: MapAccess<'de>, T: Fields<'de>>(map: &mut A) -> Result<Option<T>, A::Error> {
    Ok(map.next_value::<Obj<T>>()?.0)
}

/// One line of the stream: the union of the fields of every event type this parser reads.
#[derive(Default)]
pub(super) struct EventWire<'a> {
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) subtype: Option<Cow<'a, str>>,
    pub(super) session_id: Option<Cow<'a, str>>,
    /// `system/init` display name.
    pub(super) model: Option<Cow<'a, str>>,
    pub(super) has_timestamp: bool,
    pub(super) has_model_call_id: bool,
    /// `thinking/delta` text.
    pub(super) text: Option<Cow<'a, str>>,
    /// `assistant` content text, or the `error` envelope's message string.
    pub(super) message: Option<MessageWire<'a>>,
    pub(super) error: Option<Cow<'a, str>>,
    pub(super) call_id: Option<Cow<'a, str>>,
    pub(super) tool_call: Option<ToolCallWire<'a>>,
    pub(super) query_type: Option<Cow<'a, str>>,
    pub(super) query: Option<QueryWire<'a>>,
    /// `result.result` (a string on `result` events).
    pub(super) result: Option<Cow<'a, str>>,
    pub(super) is_error: Option<bool>,
    pub(super) duration_ms: Option<u64>,
    pub(super) request_id: Option<Cow<'a, str>>,
    pub(super) usage: Option<UsageWire>,
}

impl EventWire<'_> {
    /// Events whose text may continue a surrogate pair held back from the previous delta.
    pub(super) fn carries_stream_text(&self) -> bool {
        match self.kind.as_deref() {
            Some("assistant") => true,
            Some("thinking") => self.subtype.as_deref() == Some("delta"),
            _ => false,
        }
    }
}

impl<'de> Fields<'de> for EventWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "type" => self.kind = next_str(map)?,
            "subtype" => self.subtype = next_str(map)?,
            "session_id" => self.session_id = next_str(map)?,
            "model" => self.model = next_str(map)?,
            "timestamp_ms" => self.has_timestamp = map.next_value::<Loose>()?.is_present(),
            "model_call_id" => self.has_model_call_id = map.next_value::<Loose>()?.is_present(),
            "text" => self.text = next_str(map)?,
            "message" => self.message = next_obj(map)?,
            "error" => self.error = next_str(map)?,
            "call_id" => self.call_id = next_str(map)?,
            "tool_call" => self.tool_call = next_obj(map)?,
            "query_type" => self.query_type = next_str(map)?,
            "query" => self.query = next_obj(map)?,
            "result" => self.result = next_str(map)?,
            "is_error" => {
                self.is_error = match map.next_value::<Loose>()? {
                    Loose::Bool(b) => Some(b),
                    _ => None,
                }
            }
            "duration_ms" => self.duration_ms = map.next_value::<Loose>()?.as_u64(),
            "request_id" => self.request_id = next_str(map)?,
            "usage" => self.usage = next_obj(map)?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// `message`: `{"role","content":[blocks]}` on `assistant`, a plain string on `error`.
#[derive(Default)]
pub(super) struct MessageWire<'a> {
    pub(super) text: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for MessageWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "content" => self.text = map.next_value::<ContentText>()?.0,
            _ => skip(map)?,
        }
        Ok(())
    }

    fn from_other(value: Loose<'de>) -> Option<Self> {
        value
            .into_str()
            .map(|text| MessageWire { text: Some(text) })
    }
}

/// The concatenated `text` of the `type == "text"` blocks of `content` (§5.5); a bare string or a
/// single block object is accepted too.
struct ContentText<'a>(Option<Cow<'a, str>>);

fn append_text<'a>(acc: &mut Option<Cow<'a, str>>, text: Cow<'a, str>) {
    match acc {
        None => *acc = Some(text),
        Some(existing) => existing.to_mut().push_str(&text),
    }
}

impl<'de> Deserialize<'de> for ContentText<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl ContentVisitor {
    fn other(self, value: Loose<'_>) -> ContentText<'_> {
        ContentText(value.into_str())
    }
}

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = ContentText<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("message content")
    }
    visit_other_as_loose!();
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut text = None;
        while let Some(Obj(block)) = seq.next_element::<Obj<BlockWire>>()? {
            if let Some(block_text) = block.and_then(BlockWire::into_text) {
                append_text(&mut text, block_text);
            }
        }
        Ok(ContentText(text))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let Obj(block) = ObjVisitor::<BlockWire>(PhantomData).visit_map(map)?;
        Ok(ContentText(block.and_then(BlockWire::into_text)))
    }
}

#[derive(Default)]
struct BlockWire<'a> {
    kind: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
}

impl<'a> BlockWire<'a> {
    /// Text of a text block (a block without `type` but with `text` counts as one).
    fn into_text(self) -> Option<Cow<'a, str>> {
        match self.kind.as_deref() {
            None | Some("text") => self.text,
            Some(_) => None,
        }
    }
}

impl<'de> Fields<'de> for BlockWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "type" => self.kind = next_str(map)?,
            "text" => self.text = next_str(map)?,
            _ => skip(map)?,
        }
        Ok(())
    }

    fn from_other(value: Loose<'de>) -> Option<Self> {
        value.into_str().map(|text| BlockWire {
            kind: None,
            text: Some(text),
        })
    }
}

/// `tool_call`: the one key ending in `ToolCall` (siblings `toolCallId`, `startedAtMs`,
/// `completedAtMs`, `hookAdditionalContexts` skipped), or the legacy `function` shape.
#[derive(Default)]
pub(super) struct ToolCallWire<'a> {
    /// e.g. `shellToolCall`; the first such key wins.
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) body: ToolBodyWire<'a>,
    pub(super) legacy: Option<LegacyFunctionWire<'a>>,
    pub(super) tool_call_id: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for ToolCallWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        if key.ends_with("ToolCall") && self.kind.is_none() {
            self.body = next_obj(map)?.unwrap_or_default();
            self.kind = Some(key);
        } else if key == "function" && self.legacy.is_none() {
            self.legacy = next_obj(map)?;
        } else if key == "toolCallId" {
            self.tool_call_id = next_str(map)?;
        } else {
            skip(map)?;
        }
        Ok(())
    }
}

#[derive(Default)]
pub(super) struct ToolBodyWire<'a> {
    pub(super) args: ToolArgsWire<'a>,
    /// From `result`.
    result: Option<ToolOutcome>,
    /// From an outcome key directly in the body (`"success": true`), a liberal form.
    direct: Option<ToolOutcome>,
}

impl ToolBodyWire<'_> {
    pub(super) fn outcome(&self) -> Option<ToolOutcome> {
        self.result.clone().or_else(|| self.direct.clone())
    }
}

impl<'de> Fields<'de> for ToolBodyWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "args" => self.args = next_obj(map)?.unwrap_or_default(),
            "result" => self.result = next_obj::<_, ResultWire>(map)?.and_then(|r| r.outcome),
            "success" | "failure" | "error" | "rejected" if self.direct.is_none() => {
                self.direct = outcome_from_entry(&key, next_obj(map)?);
            }
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// `tool_call.<kind>.args`: only the fields summaries use.
#[derive(Default, Clone)]
pub(super) struct ToolArgsWire<'a> {
    pub(super) command: Option<Cow<'a, str>>,
    pub(super) path: Option<Cow<'a, str>>,
    pub(super) pattern: Option<Cow<'a, str>>,
    pub(super) glob_pattern: Option<Cow<'a, str>>,
    pub(super) url: Option<Cow<'a, str>>,
    pub(super) search_term: Option<Cow<'a, str>>,
    pub(super) query: Option<Cow<'a, str>>,
    pub(super) name: Option<Cow<'a, str>>,
    pub(super) tool_name: Option<Cow<'a, str>>,
    pub(super) provider_identifier: Option<Cow<'a, str>>,
    pub(super) tool_call_id: Option<Cow<'a, str>>,
}

impl ToolArgsWire<'_> {
    fn into_owned(self) -> ToolArgsWire<'static> {
        let own = |s: Option<Cow<'_, str>>| s.map(|s| Cow::Owned(s.into_owned()));
        ToolArgsWire {
            command: own(self.command),
            path: own(self.path),
            pattern: own(self.pattern),
            glob_pattern: own(self.glob_pattern),
            url: own(self.url),
            search_term: own(self.search_term),
            query: own(self.query),
            name: own(self.name),
            tool_name: own(self.tool_name),
            provider_identifier: own(self.provider_identifier),
            tool_call_id: own(self.tool_call_id),
        }
    }
}

impl<'de> Fields<'de> for ToolArgsWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let slot = match &*key {
            "command" => &mut self.command,
            "path" => &mut self.path,
            "pattern" => &mut self.pattern,
            "globPattern" => &mut self.glob_pattern,
            "url" => &mut self.url,
            "searchTerm" => &mut self.search_term,
            "query" => &mut self.query,
            "name" => &mut self.name,
            "toolName" => &mut self.tool_name,
            "providerIdentifier" => &mut self.provider_identifier,
            "toolCallId" => &mut self.tool_call_id,
            _ => return skip(map),
        };
        *slot = next_str(map)?;
        Ok(())
    }

    /// The legacy shape carries `arguments` as a JSON-encoded string.
    fn from_other(value: Loose<'de>) -> Option<Self> {
        let text = value.into_str()?;
        let Obj(args) = serde_json::from_str::<Obj<ToolArgsWire>>(&text).ok()?;
        args.map(ToolArgsWire::into_owned)
    }
}

/// Legacy `{"function":{"name":..,"arguments":"<json string>"}}` (§5.7).
#[derive(Default)]
pub(super) struct LegacyFunctionWire<'a> {
    pub(super) name: Option<Cow<'a, str>>,
    pub(super) arguments: ToolArgsWire<'a>,
}

impl<'de> Fields<'de> for LegacyFunctionWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "name" => self.name = next_str(map)?,
            "arguments" => self.arguments = next_obj(map)?.unwrap_or_default(),
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// `tool_call.<kind>.result`: a one-key union, or a bare word/boolean (liberal forms, §5.7).
#[derive(Default)]
struct ResultWire {
    outcome: Option<ToolOutcome>,
}

impl<'de> Fields<'de> for ResultWire {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "success" | "failure" | "error" | "rejected" if self.outcome.is_none() => {
                self.outcome = outcome_from_entry(&key, next_obj(map)?);
            }
            _ => skip(map)?,
        }
        Ok(())
    }

    fn from_other(value: Loose<'de>) -> Option<Self> {
        let outcome = match value {
            Loose::Str(word) => outcome_from_word(&word),
            Loose::Bool(true) => Some(ToolOutcome::Success),
            Loose::Bool(false) => Some(ToolOutcome::Failure { detail: None }),
            _ => None,
        };
        Some(ResultWire { outcome })
    }
}

/// The value of one outcome key: `{"exitCode":1,..}`, `{"reason":..}`, `{"message":..}`, a
/// string (taken as the message) or a boolean.
#[derive(Default)]
pub(super) struct OutcomeBody<'a> {
    pub(super) exit_code: Option<i64>,
    pub(super) signal: Option<Cow<'a, str>>,
    pub(super) aborted: bool,
    pub(super) message: Option<Cow<'a, str>>,
    pub(super) reason: Option<Cow<'a, str>>,
    pub(super) error: Option<Cow<'a, str>>,
    /// The value was `false`.
    pub(super) is_false: bool,
}

impl<'de> Fields<'de> for OutcomeBody<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "exitCode" | "exit_code" => self.exit_code = map.next_value::<Loose>()?.as_i64(),
            "signal" => self.signal = next_str(map)?,
            "aborted" => self.aborted = matches!(map.next_value::<Loose>()?, Loose::Bool(true)),
            "message" => self.message = next_str(map)?,
            "reason" => self.reason = next_str(map)?,
            // `{"error":{"message":..}}` or `{"error":"text"}`.
            "error" => {
                self.error = next_obj::<_, OutcomeBody>(map)?.and_then(|inner| inner.message)
            }
            _ => skip(map)?,
        }
        Ok(())
    }

    fn from_other(value: Loose<'de>) -> Option<Self> {
        match value {
            Loose::Null => None,
            Loose::Str(text) => Some(OutcomeBody {
                message: Some(text),
                ..OutcomeBody::default()
            }),
            Loose::Bool(false) => Some(OutcomeBody {
                is_false: true,
                ..OutcomeBody::default()
            }),
            _ => Some(OutcomeBody::default()),
        }
    }
}

/// `interaction_query.query`: `{"id":7,"<query_type>":{"args":{..},..}}` (§5.9).
#[derive(Default)]
pub(super) struct QueryWire<'a> {
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) args: ToolArgsWire<'a>,
}

impl<'de> Fields<'de> for QueryWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        if key == "id" || self.kind.is_some() {
            return skip(map);
        }
        if let Some(body) = next_obj::<_, QueryBodyWire>(map)? {
            self.args = body.args;
            self.kind = Some(key);
        }
        Ok(())
    }
}

#[derive(Default)]
struct QueryBodyWire<'a> {
    args: ToolArgsWire<'a>,
}

impl<'de> Fields<'de> for QueryBodyWire<'de> {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &*key {
            "args" => self.args = next_obj(map)?.unwrap_or_default(),
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// `result.usage` (camelCase in 2026 builds; snake_case accepted too).
#[derive(Default)]
pub(super) struct UsageWire {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_tokens: u64,
    cache_write_tokens: u64,
}

impl<'de> Fields<'de> for UsageWire {
    fn field<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let slot = match &*key {
            "inputTokens" | "input_tokens" => &mut self.input_tokens,
            "outputTokens" | "output_tokens" => &mut self.output_tokens,
            "cacheReadTokens" | "cache_read_tokens" => &mut self.cache_read_tokens,
            "cacheWriteTokens" | "cache_write_tokens" => &mut self.cache_write_tokens,
            _ => return skip(map),
        };
        *slot = map.next_value::<Loose>()?.as_u64().unwrap_or(0);
        Ok(())
    }
}

impl From<UsageWire> for Usage {
    fn from(wire: UsageWire) -> Self {
        Usage {
            input_tokens: wire.input_tokens,
            output_tokens: wire.output_tokens,
            cache_read_tokens: wire.cache_read_tokens,
            cache_write_tokens: wire.cache_write_tokens,
        }
    }
}
