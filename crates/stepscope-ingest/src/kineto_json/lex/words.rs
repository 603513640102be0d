//! Word-at-a-time byte tests and number helpers of the lexer: eight bytes compared at once
//! where a vector search would cost more to start than it saves.

/// An integer that fits `i64`; `None` for one that does not (read as a float, as
/// serde_json does), and for a byte that is no digit: the grammar checked the text, but a
/// mapped file rewritten while read can change it between the check and this read.
pub(super) fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let mut value: i64 = 0;
    for &digit in digits {
        let digit = i64::from(digit.checked_sub(b'0').filter(|d| *d <= 9)?);
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some(value)
}

/// A number without exponent whose digits, the point taken out, fit in 2^53, read exactly as
/// `str::parse::<f64>` reads it; `None` for any other (read by `parse` then). Both the
/// digits and the power of ten are exact doubles, so one division rounds once, correctly:
/// Clinger's fast path, which `parse` also takes for such text, without its general
/// scanning (a kept event's `ts` and `dur`, 2 of its ~5 numbers, were ~4 % of a read).
/// `text` is a number by the JSON grammar.
#[inline]
pub(super) fn short_decimal(text: &[u8]) -> Option<f64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    // 18 digits cannot overflow `u64`; the point is one more byte.
    if digits.len() > 19 {
        return None;
    }
    let mut mantissa: u64 = 0;
    let mut point = None;
    for (at, &byte) in digits.iter().enumerate() {
        match byte {
            b'0'..=b'9' => mantissa = mantissa * 10 + u64::from(byte - b'0'),
            b'.' => point = Some(at),
            _ => return None,
        }
    }
    let scale = point.map_or(0, |point| digits.len() - point - 1);
    if mantissa > 1 << 53 || point == Some(digits.len() - 1) {
        return None;
    }
    let value = mantissa as f64 / *POWERS_OF_TEN.get(scale)?;
    Some(if negative { -value } else { value })
}

/// 10^0 to 10^22, every one exact as a double.
const POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The first byte at or after `from` that ends a plain run inside a string: `"`, `\` or a
/// control byte (below 0x20); `bytes.len()` when none. The first sixteen bytes eight at a
/// time (a byte is flagged when it equals one of the two or is below 0x20; the lowest
/// flagged byte of a word is always a true one), the rest by `memchr`.
#[inline(always)]
pub(super) fn find_special(bytes: &[u8], mut from: usize) -> usize {
    // Keys and short values end within two words; long names go to `memchr`'s vector search.
    for _ in 0..2 {
        let Some(word) = bytes.get(from..from + 8) else {
            return find_special_bytewise(bytes, from);
        };
        if let Some(at) = special_in_word(word) {
            return from + at;
        }
        from += 8;
    }
    let Some(end) = memchr::memchr2(b'"', b'\\', &bytes[from..]) else {
        return find_special_bytewise(bytes, from);
    };
    let span = &bytes[from..from + end];
    if span.iter().any(|&byte| byte < 0x20) {
        return find_special_bytewise(bytes, from);
    }
    from + end
}

/// The first `"` or `\\` at or after `from`; `bytes.len()` when none. On x86_64 the first 64
/// bytes are tested 16 at a time with SSE2 compares (part of every x86_64 CPU), then as
/// [`find_quote_or_backslash_by_words`] does from there.
#[inline(always)]
pub(super) fn find_quote_or_backslash(bytes: &[u8], from: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is in the baseline of every x86_64 target, so the CPU has it.
    #[allow(unsafe_code)]
    unsafe {
        sse2::find_quote_or_backslash(bytes, from)
    }
    #[cfg(not(target_arch = "x86_64"))]
    find_quote_or_backslash_by_words(bytes, from)
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x, _mm_set1_epi8,
    };

    /// 16 bytes from two word loads (the compiler makes them one vector load).
    #[inline]
    #[target_feature(enable = "sse2")]
    fn load(bytes: &[u8]) -> __m128i {
        let word = |at: usize| {
            let word: [u8; 8] = bytes[at..at + 8].try_into().unwrap_or_default();
            i64::from_le_bytes(word)
        };
        _mm_set_epi64x(word(8), word(0))
    }

    /// See [`super::find_quote_or_backslash`].
    #[inline]
    #[target_feature(enable = "sse2")]
    pub(super) fn find_quote_or_backslash(bytes: &[u8], mut from: usize) -> usize {
        for _ in 0..4 {
            let Some(chunk) = bytes.get(from..from + 16) else {
                break;
            };
            let chunk = load(chunk);
            let found = _mm_or_si128(
                _mm_cmpeq_epi8(chunk, _mm_set1_epi8(b'"' as i8)),
                _mm_cmpeq_epi8(chunk, _mm_set1_epi8(b'\\' as i8)),
            );
            let mask = _mm_movemask_epi8(found);
            if mask != 0 {
                return from + mask.trailing_zeros() as usize;
            }
            from += 16;
        }
        super::find_quote_or_backslash_by_words(bytes, from)
    }
}

/// [`find_quote_or_backslash`] without vector compares: the first 32 bytes tested a word at
/// a time in place, the rest by `memchr`'s vector search, whose start costs more than the
/// words for the strings of a trace (a Python function's name is 20–70 bytes):
/// single-threaded read of the 1.1 GB piecewise benchmark 0.81 → 0.74 s of CPU, medians of 8
/// alternating runs (counting instructions alone had said 0.3 %).
#[inline(always)]
pub(super) fn find_quote_or_backslash_by_words(bytes: &[u8], mut from: usize) -> usize {
    for _ in 0..4 {
        let Some(word) = bytes.get(from..from + 8) else {
            break;
        };
        if let Some(at) = first_flagged(quotes_and_backslashes(load_word(word))) {
            return from + at;
        }
        from += 8;
    }
    let rest = bytes.get(from..).unwrap_or_default();
    from + memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len())
}

/// The index in `word` (8 bytes) of its first byte that is not an ASCII digit. Exact for
/// the first such byte: the borrows and carries of the sums below only run into the bytes
/// above it.
#[inline(always)]
pub(super) fn non_digit_in_word(word: &[u8]) -> Option<usize> {
    let word = load_word(word);
    // Below `0`: the subtraction sets the byte's high bit; above `9` (and below 0x80): the
    // addition does; 0x80 and above: the byte's own high bit.
    first_flagged(word.wrapping_sub(ONES * u64::from(b'0')) | word.wrapping_add(ONES * 0x46) | word)
}

/// The index in `word` (8 bytes) of its first `"`, `\` or control byte.
#[inline(always)]
pub(super) fn special_in_word(word: &[u8]) -> Option<usize> {
    let word = load_word(word);
    first_flagged(quotes_and_backslashes(word) | (word.wrapping_sub(ONES * 0x20) & !word))
}

/// `word`'s lanes holding `"` or `\\` flagged (high bit set); lanes above a true one may be
/// flagged falsely, so only the lowest flagged lane is exact.
#[inline(always)]
pub(super) fn quotes_and_backslashes(word: u64) -> u64 {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    (quote.wrapping_sub(ONES) & !quote) | (backslash.wrapping_sub(ONES) & !backslash)
}

/// A byte of ones in each lane, and each lane's high bit.
pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
pub(super) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Eight bytes as one number, the first in the lowest lane.
#[inline(always)]
pub(super) fn load_word(word: &[u8]) -> u64 {
    u64::from_le_bytes(word.try_into().unwrap_or([0; 8]))
}

/// `text` as the low bytes of a little-endian word (at most 8 bytes).
pub(super) const fn quoted_word(text: &[u8]) -> u64 {
    let mut word = 0;
    let mut i = text.len();
    while i > 0 {
        i -= 1;
        word = word << 8 | text[i] as u64;
    }
    word
}

/// The low `len` bytes of a word set (`len` below 8).
pub(super) const fn mask(len: u32) -> u64 {
    (1 << (8 * len)) - 1
}

/// The keys [`Lexer::event_key`] takes in one compare, with their quotes.
pub(super) const QUOTED_PH: u64 = quoted_word(b"\"ph\"");
pub(super) const QUOTED_TS: u64 = quoted_word(b"\"ts\"");
pub(super) const QUOTED_CAT: u64 = quoted_word(b"\"cat\"");
pub(super) const QUOTED_PID: u64 = quoted_word(b"\"pid\"");
pub(super) const QUOTED_TID: u64 = quoted_word(b"\"tid\"");
pub(super) const QUOTED_DUR: u64 = quoted_word(b"\"dur\"");
pub(super) const QUOTED_NAME: u64 = quoted_word(b"\"name\"");
pub(super) const QUOTED_ARGS: u64 = quoted_word(b"\"args\"");

/// The lowest lane whose high bit is set in `flagged`.
#[inline(always)]
pub(super) fn first_flagged(flagged: u64) -> Option<usize> {
    let flagged = flagged & HIGHS;
    (flagged != 0).then(|| (flagged.trailing_zeros() / 8) as usize)
}

pub(super) fn find_special_bytewise(bytes: &[u8], mut from: usize) -> usize {
    while let Some(&byte) = bytes.get(from) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        from += 1;
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integer_that_changed_under_the_reader_is_no_integer() {
        assert_eq!(parse_i64(b"-1234"), Some(-1234));
        assert_eq!(parse_i64(b"12\x004"), None);
        assert_eq!(parse_i64(b"12:4"), None);
        assert_eq!(parse_i64(b"99999999999999999999"), None);
    }
}
