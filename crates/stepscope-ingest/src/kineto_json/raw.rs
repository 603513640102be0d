//! One Chrome-trace event as it stands in the file, strings borrowed from the input.
//!
//! `lex.rs` fills these straight from the bytes. The serde visitors below are the reading
//! it replaced and now its reference: the lexer's tests check that both read the same
//! events and refuse the same malformed ones. They count unknown keys by name, accept
//! numbers as numbers or as strings (some writers quote them), and keep only the handful
//! of `args` fields stepscope reads.

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A string, borrowed when the input has no escapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Text<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// A number as written: integer, float, or the same inside a string.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Number<'a> {
    Integer(i64),
    Float(f64),
    Text(Cow<'a, str>),
    /// Any other JSON value (null, object, array, bool): counted as malformed by the caller.
    Invalid,
}

impl Number<'_> {
    /// As an integer, when it is one (or a string holding one).
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Number::Integer(v) => Some(*v),
            Number::Float(v) if v.fract() == 0.0 && v.is_finite() => Some(*v as i64),
            Number::Text(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// Microseconds as written, converted exactly to nanoseconds where the input allows.
    pub(crate) fn micros_to_nanos(&self) -> Option<i64> {
        match self {
            Number::Integer(v) => v.checked_mul(1000),
            Number::Float(v) if v.is_finite() => Some((v * 1e3).round() as i64),
            Number::Text(s) => decimal_micros_to_nanos(s.trim()),
            _ => None,
        }
    }
}

/// Parses a decimal string of microseconds into nanoseconds without going through `f64`,
/// so epoch-based timestamps keep every digit.
pub(crate) fn decimal_micros_to_nanos(text: &str) -> Option<i64> {
    if text.contains(['e', 'E']) {
        let value: f64 = text.parse().ok()?;
        return value.is_finite().then(|| (value * 1e3).round() as i64);
    }
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let whole: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut nanos_part: i64 = 0;
    for digit in fraction.bytes().chain(std::iter::repeat(b'0')).take(3) {
        nanos_part = nanos_part * 10 + i64::from(digit - b'0');
    }
    let round_up = fraction.as_bytes().get(3).is_some_and(|&d| d >= b'5');
    let total = whole
        .checked_mul(1000)?
        .checked_add(nanos_part + i64::from(round_up))?;
    Some(if negative { -total } else { total })
}

impl<'de> Deserialize<'de> for Number<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NumberVisitor)
    }
}

struct NumberVisitor;

impl<'de> Visitor<'de> for NumberVisitor {
    type Value = Number<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Number::Integer(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(i64::try_from(v).map_or(Number::Float(v as f64), Number::Integer))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Number::Float(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Number::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Number::Text(Cow::Owned(v.to_owned())))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Number::Invalid)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Number::Invalid)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Number::Invalid)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Number::Invalid)
    }
}

/// The `args` fields stepscope reads.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Args<'a> {
    pub correlation: Option<Number<'a>>,
    pub device: Option<Number<'a>>,
    pub stream: Option<Number<'a>>,
    pub graph_id: Option<Number<'a>>,
    /// HIP launches name the kernel they launch.
    pub kernel: Option<Text<'a>>,
    /// Metadata events (`process_name`, `thread_name`) carry their value here.
    pub name: Option<Text<'a>>,
}

impl<'de> Deserialize<'de> for Args<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ArgsVisitor;
        impl<'de> Visitor<'de> for ArgsVisitor {
            type Value = Args<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an args object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut args = Args::default();
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match &*key.0 {
                        "correlation" => args.correlation = Some(map.next_value()?),
                        "device" => args.device = Some(map.next_value()?),
                        "stream" => args.stream = Some(map.next_value()?),
                        "graph id" | "graph_id" => args.graph_id = Some(map.next_value()?),
                        "kernel" => args.kernel = text_value(&mut map)?,
                        "name" => args.name = text_value(&mut map)?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(args)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Args::default())
            }
        }
        deserializer.deserialize_any(ArgsVisitor)
    }
}

/// One event of `traceEvents`.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct RawEvent<'a> {
    pub phase: Option<Text<'a>>,
    pub category: Option<Text<'a>>,
    pub name: Option<Text<'a>>,
    pub pid: Option<Number<'a>>,
    pub tid: Option<Number<'a>>,
    pub ts: Option<Number<'a>>,
    pub dur: Option<Number<'a>>,
    pub id: Option<Number<'a>>,
    pub args: Args<'a>,
    /// Keys the reader does not know, to be counted.
    pub unknown_keys: Vec<Text<'a>>,
    /// Known keys whose value had the wrong JSON type.
    pub malformed_fields: u32,
}

/// Keys of the Chrome trace-event format that stepscope does not need.
pub(crate) const IGNORED_KEYS: [&str; 15] = [
    "tts",
    "tdur",
    "bp",
    "s",
    "cname",
    "sf",
    "stack",
    "esf",
    "estack",
    "scope",
    "bind_id",
    "flow_in",
    "flow_out",
    "id2",
    "use_async_tts",
];

impl<'de> Deserialize<'de> for RawEvent<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = RawEvent<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut event = RawEvent::default();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match &*key.0 {
                "ph" => event.phase = text_or_count(&mut map, &mut event.malformed_fields)?,
                "cat" => event.category = text_or_count(&mut map, &mut event.malformed_fields)?,
                "name" => event.name = text_or_count(&mut map, &mut event.malformed_fields)?,
                "pid" => event.pid = Some(map.next_value()?),
                "tid" => event.tid = Some(map.next_value()?),
                "ts" => event.ts = Some(map.next_value()?),
                "dur" => event.dur = Some(map.next_value()?),
                "id" => event.id = Some(map.next_value()?),
                "args" => event.args = map.next_value()?,
                other => {
                    map.next_value::<IgnoredAny>()?;
                    if !IGNORED_KEYS.contains(&other) {
                        event.unknown_keys.push(key);
                    }
                }
            }
        }
        Ok(event)
    }
}

fn text_value<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Text<'de>>, A::Error> {
    Ok(match map.next_value::<Number<'de>>()? {
        Number::Text(text) => Some(Text(text)),
        _ => None,
    })
}

fn text_or_count<'de, A: MapAccess<'de>>(
    map: &mut A,
    malformed: &mut u32,
) -> Result<Option<Text<'de>>, A::Error> {
    match map.next_value::<Number<'de>>()? {
        Number::Text(text) => Ok(Some(Text(text))),
        _ => {
            *malformed += 1;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_micros_are_exact() {
        assert_eq!(
            decimal_micros_to_nanos("1683564901548726"),
            Some(1_683_564_901_548_726_000)
        );
        assert_eq!(
            decimal_micros_to_nanos("4909914216204.635"),
            Some(4_909_914_216_204_635)
        );
        assert_eq!(decimal_micros_to_nanos("1.0005"), Some(1001));
        assert_eq!(decimal_micros_to_nanos("-2.5"), Some(-2500));
        assert_eq!(decimal_micros_to_nanos("abc"), None);
        assert_eq!(decimal_micros_to_nanos(""), None);
        assert_eq!(decimal_micros_to_nanos("1e3"), Some(1_000_000));
    }

    #[test]
    fn event_with_strings_for_numbers() {
        let json = r#"{"ph":"X","cat":"kernel","name":"k","pid":"2","tid":"stream 7","ts":"10.5","dur":"2","args":{"correlation":"77","stream":7},"extra":1}"#;
        let event: RawEvent = serde_json::from_str(json).unwrap();
        assert_eq!(event.ts.unwrap().micros_to_nanos(), Some(10_500));
        assert_eq!(event.args.correlation.unwrap().as_i64(), Some(77));
        assert_eq!(event.pid.unwrap().as_i64(), Some(2));
        assert_eq!(event.unknown_keys.len(), 1);
    }
}
