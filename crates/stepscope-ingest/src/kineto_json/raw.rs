//! One Chrome-trace event as it stands in the file, strings borrowed from the input.
//!
//! `lex.rs` fills these straight from the bytes. They count unknown keys by name, accept
//! numbers as numbers or as strings (some writers quote them), and keep only the `args`
//! fields stepscope reads (an op's argument lists as their JSON text, unparsed). The serde visitors the lexer replaced are its
//! reference in the tests (`raw/serde_reference.rs`, compiled for tests only).

use std::borrow::Cow;

#[cfg(test)]
mod serde_reference;

/// A string, borrowed when the input has no escapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Text<'a>(pub Cow<'a, str>);

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
        // Digits by the check above, unless a mapped file changed under it since.
        nanos_part = nanos_part * 10 + i64::from(digit.checked_sub(b'0').filter(|d| *d <= 9)?);
    }
    let round_up = fraction.as_bytes().get(3).is_some_and(|&d| d >= b'5');
    let total = whole
        .checked_mul(1000)?
        .checked_add(nanos_part + i64::from(round_up))?;
    Some(if negative { -total } else { total })
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
    /// CPU ops and the runtime calls they make: the op's id, as written (read as a
    /// number only for CPU ops, the events that keep it).
    pub external_id: Option<&'a [u8]>,
    /// CPU ops recorded with shapes: the JSON text of `Input Dims`, `Input type`,
    /// `Input Strides` and `Concrete Inputs`, as written (UTF-8 checked only when an
    /// argument list is new to the trace).
    pub input_dims: Option<&'a [u8]>,
    pub input_types: Option<&'a [u8]>,
    pub input_strides: Option<&'a [u8]>,
    pub concrete_inputs: Option<&'a [u8]>,
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
}
