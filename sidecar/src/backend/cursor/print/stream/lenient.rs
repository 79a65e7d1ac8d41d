//! The leniency layer under the derived wire types. Fields are added over time
//! (docs/cursor-cli.md §4.1), so a value of an unexpected type counts as absent instead of failing
//! the line. Imports nothing from its siblings.
//!
//! * [`Loose`]: any JSON value, keeping only scalars; arrays and objects are skipped without
//!   allocating.
//! * Field helpers for `#[serde(deserialize_with = "..")]`: [`string`], [`present`], [`boolean`],
//!   [`flag`], [`int`], [`uint`], [`count`], [`object`], [`object_or_default`].
//! * [`Lenient<T>`]: an object as the (derived) `T`, anything else through [`Fallback`].
//! * [`Entries`]: the few objects whose keys are data (tool kinds, outcome names, query types).
//!
//! Which values are parsed and which skipped matters for malformed lines: a skipped string is
//! not decoded (serde_json accepts a lone surrogate escape there), a parsed one is.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Any JSON value, keeping only scalars.
#[derive(Debug)]
pub(super) enum Loose<'a> {
    Str(Cow<'a, str>),
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Null,
    Nested,
}

impl<'a> Loose<'a> {
    pub(super) fn into_str(self) -> Option<Cow<'a, str>> {
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
}

/// How a lenient value is made from each kind of JSON value; [`any`] dispatches. Arrays and
/// objects are skipped and passed on as [`Loose::Nested`] unless a type says otherwise.
pub(super) trait Shape<'de>: Sized {
    fn scalar(value: Loose<'de>) -> Self;

    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::scalar(Loose::Nested))
    }

    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::scalar(Loose::Nested))
    }
}

/// Reads any JSON value as a `T`; fails only on malformed JSON.
pub(super) fn any<'de, D: Deserializer<'de>, T: Shape<'de>>(d: D) -> Result<T, D::Error> {
    struct AnyVisitor<T>(PhantomData<T>);

    impl<'de, T: Shape<'de>> Visitor<'de> for AnyVisitor<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
            Ok(T::scalar(Loose::Bool(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
            Ok(T::scalar(Loose::Int(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
            Ok(T::scalar(Loose::UInt(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
            Ok(T::scalar(Loose::Float(v)))
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<T, E> {
            Ok(T::scalar(Loose::Str(Cow::Borrowed(v))))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            Ok(T::scalar(Loose::Str(Cow::Owned(v.to_owned()))))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<T, E> {
            Ok(T::scalar(Loose::Str(Cow::Owned(v))))
        }
        fn visit_unit<E: de::Error>(self) -> Result<T, E> {
            Ok(T::scalar(Loose::Null))
        }
        fn visit_none<E: de::Error>(self) -> Result<T, E> {
            Ok(T::scalar(Loose::Null))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
            T::seq(seq)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::map(map)
        }
    }

    d.deserialize_any(AnyVisitor(PhantomData))
}

impl<'de> Shape<'de> for Loose<'de> {
    fn scalar(value: Loose<'de>) -> Self {
        value
    }
}

impl<'de> Deserialize<'de> for Loose<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        any(d)
    }
}

/// What to make of a value that is not an object where a `Self` object was expected.
pub(super) trait Fallback<'de>: Sized {
    /// `None` (the default): treat it as absent.
    fn from_other(_value: Loose<'de>) -> Option<Self> {
        None
    }
}

impl<'de, T: Fallback<'de>> Fallback<'de> for Box<T> {
    fn from_other(value: Loose<'de>) -> Option<Self> {
        T::from_other(value).map(Box::new)
    }
}

/// `T` if the value is an object (or something [`Fallback::from_other`] accepts), else `None`.
pub(super) struct Lenient<T>(pub(super) Option<T>);

impl<'de, T: Deserialize<'de> + Fallback<'de>> Shape<'de> for Lenient<T> {
    fn scalar(value: Loose<'de>) -> Self {
        Lenient(T::from_other(value))
    }

    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(|value| Lenient(Some(value)))
    }
}

impl<'de, T: Deserialize<'de> + Fallback<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        any(d)
    }
}

/// An object whose keys are data, read entry by entry: `entry` must consume the value of every key
/// it is given. Such a type implements `Deserialize` with [`entries`].
pub(super) trait Entries<'de>: Default {
    fn entry<A: MapAccess<'de>>(&mut self, key: Cow<'de, str>, map: &mut A) -> Result<(), A::Error>;
}

/// `Deserialize::deserialize` of an [`Entries`] type.
pub(super) fn entries<'de, D: Deserializer<'de>, T: Entries<'de>>(d: D) -> Result<T, D::Error> {
    struct EntriesVisitor<T>(PhantomData<T>);

    impl<'de, T: Entries<'de>> Visitor<'de> for EntriesVisitor<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
            let mut value = T::default();
            while let Some(Key(key)) = map.next_key()? {
                value.entry(key, &mut map)?;
            }
            Ok(value)
        }
    }

    d.deserialize_map(EntriesVisitor(PhantomData))
}

/// A map key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Loose::deserialize(d)? {
            Loose::Str(key) => Ok(Key(key)),
            _ => Err(de::Error::custom("expected a string key")),
        }
    }
}

/// Skips the value of the current entry without allocating.
pub(super) fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(drop)
}

// Field helpers, `#[serde(deserialize_with = "lenient::..")]` (with `#[serde(default)]`).

/// A string; anything else is absent.
pub(super) fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    Ok(Loose::deserialize(d)?.into_str())
}

/// Present and meaningful: not `null`, not `""`.
pub(super) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(match Loose::deserialize(d)? {
        Loose::Null => false,
        Loose::Str(s) => !s.is_empty(),
        _ => true,
    })
}

/// A boolean; anything else is absent.
pub(super) fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(match Loose::deserialize(d)? {
        Loose::Bool(b) => Some(b),
        _ => None,
    })
}

/// `true` only for `true`.
pub(super) fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(matches!(Loose::deserialize(d)?, Loose::Bool(true)))
}

/// An integer, also written as an integral float or a decimal string; anything else is absent.
pub(super) fn int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Loose::deserialize(d)?.as_i64())
}

/// A non-negative integer, also written as an integral float or a decimal string.
pub(super) fn uint<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Loose::deserialize(d)?.as_u64())
}

/// A counter: `Some` whenever the key is there, 0 when its value is not a [`uint`].
pub(super) fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Some(uint(d)?.unwrap_or(0)))
}

/// [`Lenient<T>`] as an `Option<T>`.
pub(super) fn object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Fallback<'de>,
{
    Ok(Lenient::<T>::deserialize(d)?.0)
}

/// [`object`], `T::default()` when absent.
pub(super) fn object_or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Fallback<'de> + Default,
{
    Ok(object(d)?.unwrap_or_default())
}
