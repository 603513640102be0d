//! The serde reading of one event that the lexer (`lex.rs`) replaced, kept as its
//! reference: the lexer's tests check that both read the same events and refuse the same
//! malformed ones. Compiled for tests only.

use super::{Args, IGNORED_KEYS, Number, RawEvent, Text};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

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

/// A value's JSON text as written.
fn raw_text<'de, A: MapAccess<'de>>(map: &mut A) -> Result<&'de [u8], A::Error> {
    let raw: &'de serde_json::value::RawValue = map.next_value()?;
    Ok(raw.get().as_bytes())
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
                        "External id" => args.external_id = Some(raw_text(&mut map)?),
                        "Input Dims" => args.input_dims = Some(raw_text(&mut map)?),
                        "Input type" => args.input_types = Some(raw_text(&mut map)?),
                        "Input Strides" => args.input_strides = Some(raw_text(&mut map)?),
                        "Concrete Inputs" => args.concrete_inputs = Some(raw_text(&mut map)?),
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

#[test]
fn event_with_strings_for_numbers() {
    let json = r#"{"ph":"X","cat":"kernel","name":"k","pid":"2","tid":"stream 7","ts":"10.5","dur":"2","args":{"correlation":"77","stream":7},"extra":1}"#;
    let event: RawEvent = serde_json::from_str(json).unwrap();
    assert_eq!(event.ts.unwrap().micros_to_nanos(), Some(10_500));
    assert_eq!(event.args.correlation.unwrap().as_i64(), Some(77));
    assert_eq!(event.pid.unwrap().as_i64(), Some(2));
    assert_eq!(event.unknown_keys.len(), 1);
}
