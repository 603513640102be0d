//! Text from outside stepscope — names in a trace, bytes a server sent — is untrusted, and a
//! terminal obeys the control characters it prints (`ESC [ … m` recolours, `ESC ] … BEL`
//! retitles or writes to the clipboard, a carriage return forges a line). Every such text is
//! passed through [`escape_controls`] before it is shown, by one rule for every command.

use std::borrow::Cow;

/// `raw` with every control character (C0, DEL and C1: [`char::is_control`]) written as a
/// Rust escape, `\u{1b}`; other text, every printable character of any script included, is
/// kept as it is. Borrowed when there is nothing to escape.
///
/// ```
/// use stepscope_model::text::escape_controls;
///
/// assert_eq!(escape_controls("\u{1b}[31mred\u{7}\0"), "\\u{1b}[31mred\\u{7}\\u{0}");
/// assert_eq!(escape_controls("Cijk_Ailk µs"), "Cijk_Ailk µs");
/// ```
pub fn escape_controls(raw: &str) -> Cow<'_, str> {
    escape_where(raw, char::is_control)
}

/// [`escape_controls`] for a message whose line breaks are its own (an error and its
/// `hint:` line) and whose quoted values may hold anything: every control character but
/// the line feed is escaped.
///
/// ```
/// use stepscope_model::text::escape_controls_keep_lines;
///
/// assert_eq!(
///     escape_controls_keep_lines("`a\u{1b}]0;x\u{7}.json` is empty\nhint: …"),
///     "`a\\u{1b}]0;x\\u{7}.json` is empty\nhint: …"
/// );
/// ```
pub fn escape_controls_keep_lines(raw: &str) -> Cow<'_, str> {
    escape_where(raw, |c| c.is_control() && c != '\n')
}

fn escape_where(raw: &str, escaped_char: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !raw.chars().any(&escaped_char) {
        return Cow::Borrowed(raw);
    }
    let mut escaped = String::with_capacity(raw.len() + 8);
    for c in raw.chars() {
        if escaped_char(c) {
            escaped.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_c0_del_and_c1_character_is_escaped_and_nothing_else() {
        for code in 0..=0x10_ffff_u32 {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            let text = c.to_string();
            let escaped = escape_controls(&text);
            let control = code < 0x20 || (0x7f..=0x9f).contains(&code);
            if control {
                assert_eq!(escaped, format!("\\u{{{code:x}}}"), "{code:#x}");
            } else {
                assert_eq!(escaped, text, "{code:#x}");
            }
        }
    }

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(escape_controls("plain"), Cow::Borrowed(_)));
        assert_eq!(escape_controls("a\nb\tc"), "a\\u{a}b\\u{9}c");
        assert_eq!(escape_controls_keep_lines("a\nb\tc\r"), "a\nb\\u{9}c\\u{d}");
        assert!(matches!(
            escape_controls_keep_lines("a\nb"),
            Cow::Borrowed(_)
        ));
    }
}
