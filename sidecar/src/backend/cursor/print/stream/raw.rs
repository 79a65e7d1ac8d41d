//! Wire types of the stream's events (docs/cursor-cli.md §4): derived, borrowing, lenient.
//! Everything is optional and loosely typed: a field of an unexpected type counts as absent
//! instead of failing the line, by the rules of the [`lenient`] helpers each field names. Strings
//! borrow from the line when they have no escapes; keys this parser does not read (file contents
//! inside tool results, diffs …) are skipped without allocating.
//!
//! Written by hand, because their keys are data: [`ToolCallWire`] (keyed by tool kind),
//! [`ToolBodyWire`] and [`ResultWire`] (the outcome union, keyed by outcome) and [`QueryWire`]
//! (keyed by query type); and the content-block list, which comes in several shapes.
//!
//! Where an object may carry a key in two spellings, each spelling is a field of its own, so that
//! an object with both does not fail as a duplicate; camelCase wins. A key repeated verbatim fails
//! the line in a derived object (Node's `JSON.stringify` never writes one).
//!
//! Imports only [`lenient`]; turning these into events is the other modules' business.

use std::borrow::Cow;

use serde::de::{MapAccess, SeqAccess};
use serde::{Deserialize, Deserializer};

use super::lenient::{self, skip, Entries, Fallback, Lenient, Loose, Shape};
use crate::vocab::Usage;

/// One line of the stream: the union of the fields of every event type this parser reads.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct EventWire<'a> {
    #[serde(rename = "type", borrow, deserialize_with = "lenient::string")]
    pub(super) event_type: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) subtype: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) session_id: Option<Cow<'a, str>>,
    /// `system/init` display name.
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(rename = "timestamp_ms", deserialize_with = "lenient::present")]
    pub(super) has_timestamp: bool,
    #[serde(rename = "model_call_id", deserialize_with = "lenient::present")]
    pub(super) has_model_call_id: bool,
    /// `thinking/delta` text.
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) text: Option<Cow<'a, str>>,
    /// `assistant` content text, or the `error` envelope's message string.
    #[serde(borrow, deserialize_with = "lenient::object")]
    pub(super) message: Option<MessageWire<'a>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) error: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) call_id: Option<Cow<'a, str>>,
    /// Boxed, like `query`: large, and on few lines (a line's `EventWire` is moved several times).
    #[serde(borrow, deserialize_with = "lenient::object")]
    pub(super) tool_call: Option<Box<ToolCallWire<'a>>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) query_type: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::object")]
    pub(super) query: Option<Box<QueryWire<'a>>>,
    /// `result.result` (a string on `result` events; a liberal outcome word on `tool_call`).
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) result: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient::boolean")]
    pub(super) is_error: Option<bool>,
    #[serde(deserialize_with = "lenient::uint")]
    pub(super) duration_ms: Option<u64>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) request_id: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient::object")]
    pub(super) usage: Option<UsageWire>,
}

impl Fallback<'_> for EventWire<'_> {}

/// What a line is, by `type` and `subtype` (docs/cursor-cli.md §4). Everything else is
/// [`EventKind::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EventKind {
    /// `system/init`
    Init,
    /// `assistant`, any subtype
    Assistant,
    ThinkingDelta,
    ThinkingCompleted,
    ToolStarted,
    ToolCompleted,
    /// `interaction_query/request`
    PermissionRequest,
    /// `result`, any subtype
    Result,
    /// `error`, any subtype
    Error,
    Other,
}

impl EventWire<'_> {
    pub(super) fn kind(&self) -> EventKind {
        let event_type = self.event_type.as_deref().unwrap_or("");
        let subtype = self.subtype.as_deref().unwrap_or("");
        match (event_type, subtype) {
            ("system", "init") => EventKind::Init,
            ("assistant", _) => EventKind::Assistant,
            ("thinking", "delta") => EventKind::ThinkingDelta,
            ("thinking", "completed") => EventKind::ThinkingCompleted,
            ("tool_call", "started") => EventKind::ToolStarted,
            ("tool_call", "completed") => EventKind::ToolCompleted,
            ("interaction_query", "request") => EventKind::PermissionRequest,
            ("result", _) => EventKind::Result,
            ("error", _) => EventKind::Error,
            _ => EventKind::Other,
        }
    }

    /// Events whose text may continue a surrogate pair held back from the previous delta.
    pub(super) fn carries_stream_text(&self) -> bool {
        matches!(self.kind(), EventKind::Assistant | EventKind::ThinkingDelta)
    }
}

/// `message`: `{"role","content":[blocks]}` on `assistant`, a plain string on `error`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct MessageWire<'a> {
    #[serde(rename = "content", borrow, deserialize_with = "content_text")]
    pub(super) text: Option<Cow<'a, str>>,
}

impl<'de> Fallback<'de> for MessageWire<'de> {
    fn from_other(value: Loose<'de>) -> Option<Self> {
        let text = value.into_str()?;
        Some(MessageWire { text: Some(text) })
    }
}

/// The concatenated `text` of the text blocks of `content` (docs/cursor-cli.md §4.6); a bare
/// string or a single block object is accepted too.
fn content_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    Ok(lenient::any::<D, ContentText>(d)?.0)
}

struct ContentText<'a>(Option<Cow<'a, str>>);

impl<'de> Shape<'de> for ContentText<'de> {
    fn scalar(value: Loose<'de>) -> Self {
        ContentText(value.into_str())
    }

    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut text: Option<Cow<'de, str>> = None;
        while let Some(Lenient(block)) = seq.next_element::<Lenient<BlockWire>>()? {
            let Some(block_text) = block.and_then(BlockWire::into_text) else {
                continue;
            };
            match &mut text {
                Some(text) => text.to_mut().push_str(&block_text),
                None => text = Some(block_text),
            }
        }
        Ok(ContentText(text))
    }

    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let Lenient(block) = Lenient::<BlockWire>::map(map)?;
        Ok(ContentText(block.and_then(BlockWire::into_text)))
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct BlockWire<'a> {
    #[serde(rename = "type", borrow, deserialize_with = "lenient::string")]
    block_type: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    text: Option<Cow<'a, str>>,
}

impl<'a> BlockWire<'a> {
    /// Text of a text block (a block without `type` but with `text` counts as one).
    fn into_text(self) -> Option<Cow<'a, str>> {
        match self.block_type.as_deref() {
            None | Some("text") => self.text,
            Some(_) => None,
        }
    }
}

/// A bare string in the block list is a text block.
impl<'de> Fallback<'de> for BlockWire<'de> {
    fn from_other(value: Loose<'de>) -> Option<Self> {
        let text = value.into_str()?;
        Some(BlockWire { block_type: None, text: Some(text) })
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

impl<'de> Entries<'de> for ToolCallWire<'de> {
    fn entry<A: MapAccess<'de>>(&mut self, key: Cow<'de, str>, map: &mut A) -> Result<(), A::Error> {
        if key.ends_with("ToolCall") && self.kind.is_none() {
            self.body = map.next_value::<Lenient<_>>()?.0.unwrap_or_default();
            self.kind = Some(key);
        } else if key == "function" && self.legacy.is_none() {
            self.legacy = map.next_value::<Lenient<_>>()?.0;
        } else if key == "toolCallId" {
            self.tool_call_id = map.next_value::<Loose>()?.into_str();
        } else {
            skip(map)?;
        }
        Ok(())
    }
}

/// `tool_call.<kind>`: `args`, and the outcome as `result` or as an outcome key of its own.
#[derive(Default)]
pub(super) struct ToolBodyWire<'a> {
    pub(super) args: ToolArgsWire<'a>,
    pub(super) result: Option<ResultWire<'a>>,
    /// An outcome key directly in the body (`"success": true`), a liberal form; the first that
    /// counts wins.
    pub(super) direct: Option<OutcomeEntry<'a>>,
}

impl<'de> Entries<'de> for ToolBodyWire<'de> {
    fn entry<A: MapAccess<'de>>(&mut self, key: Cow<'de, str>, map: &mut A) -> Result<(), A::Error> {
        match (&*key, OutcomeKind::of(&key)) {
            ("args", _) => self.args = map.next_value::<Lenient<_>>()?.0.unwrap_or_default(),
            ("result", _) => self.result = map.next_value::<Lenient<_>>()?.0,
            (_, Some(kind)) if self.direct.is_none() => self.direct = OutcomeEntry::read(kind, map)?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// `tool_call.<kind>.result`: a one-key union (docs/cursor-cli.md §4.8), or a bare word or
/// boolean (liberal forms).
pub(super) enum ResultWire<'a> {
    /// The first entry of the union that counts, if any.
    Union(Option<OutcomeEntry<'a>>),
    Word(Cow<'a, str>),
    Bool(bool),
}

impl Default for ResultWire<'_> {
    fn default() -> Self {
        ResultWire::Union(None)
    }
}

impl<'de> Entries<'de> for ResultWire<'de> {
    fn entry<A: MapAccess<'de>>(&mut self, key: Cow<'de, str>, map: &mut A) -> Result<(), A::Error> {
        match OutcomeKind::of(&key) {
            Some(kind) if matches!(self, ResultWire::Union(None)) => {
                *self = ResultWire::Union(OutcomeEntry::read(kind, map)?);
                Ok(())
            }
            _ => skip(map),
        }
    }
}

impl<'de> Fallback<'de> for ResultWire<'de> {
    fn from_other(value: Loose<'de>) -> Option<Self> {
        match value {
            Loose::Str(word) => Some(ResultWire::Word(word)),
            Loose::Bool(b) => Some(ResultWire::Bool(b)),
            _ => None,
        }
    }
}

/// The keys of the outcome union.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OutcomeKind {
    Success,
    Failure,
    Error,
    Rejected,
}

impl OutcomeKind {
    fn of(key: &str) -> Option<Self> {
        match key {
            "success" => Some(OutcomeKind::Success),
            "failure" => Some(OutcomeKind::Failure),
            "error" => Some(OutcomeKind::Error),
            "rejected" => Some(OutcomeKind::Rejected),
            _ => None,
        }
    }
}

/// One entry of the outcome union that counts: not `null`, and not `false` unless it is
/// `"success": false` (a failure).
pub(super) struct OutcomeEntry<'a> {
    pub(super) kind: OutcomeKind,
    pub(super) body: OutcomeBody<'a>,
}

impl<'de> OutcomeEntry<'de> {
    /// Reads the value of an outcome key.
    fn read<A: MapAccess<'de>>(kind: OutcomeKind, map: &mut A) -> Result<Option<Self>, A::Error> {
        let body = map.next_value::<Lenient<OutcomeBody>>()?.0;
        Ok(body.filter(|body| kind == OutcomeKind::Success || !body.is_false).map(|body| OutcomeEntry { kind, body }))
    }
}

/// The value of one outcome key: `{"exitCode":1,..}`, `{"reason":..}`, `{"message":..}`, a
/// string (taken as the message) or a boolean.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct OutcomeBody<'a> {
    #[serde(rename = "exitCode", deserialize_with = "lenient::int")]
    exit_code_camel: Option<i64>,
    #[serde(rename = "exit_code", deserialize_with = "lenient::int")]
    exit_code_snake: Option<i64>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) signal: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient::flag")]
    pub(super) aborted: bool,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) message: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) reason: Option<Cow<'a, str>>,
    /// `{"error":{"message":..}}` or `{"error":"text"}`.
    #[serde(borrow, deserialize_with = "error_message")]
    pub(super) error: Option<Cow<'a, str>>,
    /// The value was `false`.
    #[serde(skip)]
    pub(super) is_false: bool,
}

impl OutcomeBody<'_> {
    pub(super) fn exit_code(&self) -> Option<i64> {
        self.exit_code_camel.or(self.exit_code_snake)
    }
}

fn error_message<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    Ok(lenient::object::<D, OutcomeBody>(d)?.and_then(|inner| inner.message))
}

impl<'de> Fallback<'de> for OutcomeBody<'de> {
    fn from_other(value: Loose<'de>) -> Option<Self> {
        match value {
            Loose::Null => None,
            Loose::Str(text) => Some(OutcomeBody { message: Some(text), ..OutcomeBody::default() }),
            Loose::Bool(false) => Some(OutcomeBody { is_false: true, ..OutcomeBody::default() }),
            _ => Some(OutcomeBody::default()),
        }
    }
}

/// `tool_call.<kind>.args`: only the fields summaries use.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct ToolArgsWire<'a> {
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) command: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) path: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) pattern: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) glob_pattern: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) url: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) search_term: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) query: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) tool_name: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) provider_identifier: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) tool_call_id: Option<Cow<'a, str>>,
}

/// The legacy shape carries `arguments` as a JSON-encoded string.
impl<'de> Fallback<'de> for ToolArgsWire<'de> {
    fn from_other(value: Loose<'de>) -> Option<Self> {
        let text = value.into_str()?;
        let Lenient(args) = serde_json::from_str::<Lenient<ToolArgsWire>>(&text).ok()?;
        let own = |s: Option<Cow<'_, str>>| s.map(|s| Cow::Owned(s.into_owned()));
        args.map(|args| ToolArgsWire {
            command: own(args.command),
            path: own(args.path),
            pattern: own(args.pattern),
            glob_pattern: own(args.glob_pattern),
            url: own(args.url),
            search_term: own(args.search_term),
            query: own(args.query),
            name: own(args.name),
            tool_name: own(args.tool_name),
            provider_identifier: own(args.provider_identifier),
            tool_call_id: own(args.tool_call_id),
        })
    }
}

/// Legacy `{"function":{"name":..,"arguments":"<json string>"}}` (docs/cursor-cli.md §4.8).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct LegacyFunctionWire<'a> {
    #[serde(borrow, deserialize_with = "lenient::string")]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::object_or_default")]
    pub(super) arguments: ToolArgsWire<'a>,
}

impl Fallback<'_> for LegacyFunctionWire<'_> {}

/// `interaction_query.query`: `{"id":7,"<query_type>":{"args":{..},..}}` (docs/cursor-cli.md
/// §4.10); the first key other than `id` whose value is an object wins.
#[derive(Default)]
pub(super) struct QueryWire<'a> {
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) args: ToolArgsWire<'a>,
}

impl<'de> Entries<'de> for QueryWire<'de> {
    fn entry<A: MapAccess<'de>>(&mut self, key: Cow<'de, str>, map: &mut A) -> Result<(), A::Error> {
        if key == "id" || self.kind.is_some() {
            return skip(map);
        }
        if let Lenient(Some(body)) = map.next_value::<Lenient<QueryBodyWire>>()? {
            self.args = body.args;
            self.kind = Some(key);
        }
        Ok(())
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct QueryBodyWire<'a> {
    #[serde(borrow, deserialize_with = "lenient::object_or_default")]
    args: ToolArgsWire<'a>,
}

impl Fallback<'_> for QueryBodyWire<'_> {}

/// `result.usage`: camelCase in 2026 builds, snake_case accepted too; a counter that is not a
/// number counts as 0.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct UsageWire {
    #[serde(deserialize_with = "lenient::count")]
    input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::count")]
    output_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::count")]
    cache_read_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::count")]
    cache_write_tokens: Option<u64>,
    #[serde(rename = "input_tokens", deserialize_with = "lenient::count")]
    input_tokens_snake: Option<u64>,
    #[serde(rename = "output_tokens", deserialize_with = "lenient::count")]
    output_tokens_snake: Option<u64>,
    #[serde(rename = "cache_read_tokens", deserialize_with = "lenient::count")]
    cache_read_tokens_snake: Option<u64>,
    #[serde(rename = "cache_write_tokens", deserialize_with = "lenient::count")]
    cache_write_tokens_snake: Option<u64>,
}

impl Fallback<'_> for UsageWire {}

impl From<UsageWire> for Usage {
    fn from(wire: UsageWire) -> Self {
        let pick = |camel: Option<u64>, snake: Option<u64>| camel.or(snake).unwrap_or(0);
        Usage {
            input_tokens: pick(wire.input_tokens, wire.input_tokens_snake),
            output_tokens: pick(wire.output_tokens, wire.output_tokens_snake),
            cache_read_tokens: pick(wire.cache_read_tokens, wire.cache_read_tokens_snake),
            cache_write_tokens: pick(wire.cache_write_tokens, wire.cache_write_tokens_snake),
            // Print mode's result event has no such count.
            reasoning_tokens: None,
        }
    }
}

// `Deserialize` of the hand-written objects, and their (absent) fallbacks.
macro_rules! deserialize_entries {
    ($($ty:ident),*) => {$(
        impl<'de> Deserialize<'de> for $ty<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                lenient::entries(d)
            }
        }
    )*};
}
deserialize_entries!(ToolCallWire, ToolBodyWire, ResultWire, QueryWire);

impl Fallback<'_> for ToolCallWire<'_> {}
impl Fallback<'_> for ToolBodyWire<'_> {}
impl Fallback<'_> for QueryWire<'_> {}
