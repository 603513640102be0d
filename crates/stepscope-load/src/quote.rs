//! Server text in messages. Whatever a server sends — an error body, a status line's reason,
//! a line of its stream, a model id — may hold terminal control sequences (`ESC [ … m`,
//! `ESC ] … BEL`, NUL). Every failure detail and error that quotes it goes through [`quote`]:
//! cut to [`QUOTE_BYTES`] and with control characters escaped by the rule every stepscope
//! command uses ([`stepscope_model::text::escape_controls`]), so the table, stderr, the
//! JSON's failure details and `profile`'s results show `\u{1b}`, never the byte.

use stepscope_model::text::escape_controls;

/// Failure details quote at most this much of the offending text.
pub(crate) const QUOTE_BYTES: usize = 200;

/// At most [`QUOTE_BYTES`] of `bytes` as text, cut at a character boundary, with control
/// characters escaped.
pub(crate) fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(QUOTE_BYTES)]);
    let text = escape_controls(text.trim_end_matches('\u{fffd}'));
    if bytes.len() > QUOTE_BYTES {
        format!("{text}…")
    } else {
        text.into_owned()
    }
}

/// [`quote`] of a string.
pub(crate) fn quote_text(text: &str) -> String {
    quote(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_cut_at_200_bytes_on_a_character() {
        let long = "é".repeat(150);
        let quoted = quote(long.as_bytes());
        assert!(quoted.ends_with('…'));
        assert_eq!(quoted.chars().count(), 101);
    }

    #[test]
    fn control_bytes_are_escaped_never_kept() {
        let quoted = quote(b"\x1b[31mred\x1b]0;title\x07\0\xc2\x9b2J");
        assert_eq!(quoted, "\\u{1b}[31mred\\u{1b}]0;title\\u{7}\\u{0}\\u{9b}2J");
        assert!(!quoted.chars().any(char::is_control));
    }
}
