//! Errors that say how to fix them, with the fix kept apart from what went wrong: the
//! command line prints both (the message, then `hint: …`), and a library caller gets them as
//! two fields without looking for the hint in the text.

use std::fmt;

/// What went wrong, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hinted {
    /// What went wrong, naming the file, the place or the option.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl Hinted {
    /// The error `message`, fixed by `hint`.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Hinted {
            message: message.into(),
            hint: hint.into(),
        }
    }
}

impl fmt::Display for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\nhint: {}", self.message, self.hint)
    }
}

impl std::error::Error for Hinted {}

/// An error that gives what went wrong and its fix apart. Its `Display` shows both, the
/// hint on a line of its own after `hint: `, as the command line prints them.
pub trait Hint: fmt::Display {
    /// What went wrong, without the fix: by default the `Display` less the
    /// `\nhint: {hint}` it ends with (see [`less_hint`]).
    fn message(&self) -> String {
        match self.hint() {
            Some(hint) => less_hint(self.to_string(), &hint),
            None => self.to_string(),
        }
    }
    /// How to fix it, when the error says.
    fn hint(&self) -> Option<String>;
}

impl Hint for Hinted {
    fn message(&self) -> String {
        self.message.clone()
    }

    fn hint(&self) -> Option<String> {
        Some(self.hint.clone())
    }
}

/// `text`, an error's `Display`, less the `\nhint: {hint}` it ends with: the message of an
/// error type whose derived `Display` writes its hint (given here, from the same constant)
/// after it.
pub fn less_hint(text: String, hint: &str) -> String {
    match text
        .strip_suffix(hint)
        .and_then(|t| t.strip_suffix("\nhint: "))
    {
        Some(message) => message.to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_and_the_hint_print_on_their_own_lines_and_stay_apart() {
        let error = Hinted::new("`a.json` is empty", "record the trace again");
        assert_eq!(
            error.to_string(),
            "`a.json` is empty\nhint: record the trace again"
        );
        assert_eq!(error.message(), "`a.json` is empty");
        assert_eq!(error.hint().as_deref(), Some("record the trace again"));
        assert_eq!(
            less_hint(error.to_string(), "record the trace again"),
            "`a.json` is empty"
        );
        assert_eq!(less_hint("no hint".to_owned(), "x"), "no hint");
    }
}
