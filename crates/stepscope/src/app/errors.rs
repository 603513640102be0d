//! Errors with their fix as a field: what went wrong and how to fix it are made apart
//! ([`Hinted`], and every error type that implements [`Hint`]) and stay apart up to the
//! caller. The command line prints them as `error: …` then `hint: …`; the Python package
//! raises them with `message` and `hint` attributes.

use crate::app::RequestError;
use stepscope_analysis::CategoryError as KernelCategoryError;
use stepscope_ingest::IngestError;
use stepscope_model::{Hint, Hinted};
use stepscope_report::ReportError;

/// An error saying what went wrong (`message`) and how to fix it (`hint`).
pub fn hinted(message: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Hinted::new(message, hint))
}

/// What went wrong, with every cause (`outer: inner`, as `{:#}` shows an error), and how to
/// fix it: the hints of the links that carry one, taken from their fields, never from the
/// text. `None` when no link says.
pub fn message_and_hint(error: &anyhow::Error) -> (String, Option<String>) {
    let mut messages = Vec::new();
    let mut hints = Vec::new();
    for link in error.chain() {
        match parts(link) {
            Some((message, hint)) => {
                messages.push(message);
                hints.extend(hint);
            }
            None => messages.push(link.to_string()),
        }
    }
    let hint = (!hints.is_empty()).then(|| hints.join("; "));
    (messages.join(": "), hint)
}

/// The message and hint of an error of a type that keeps them apart.
fn parts(link: &(dyn std::error::Error + 'static)) -> Option<(String, Option<String>)> {
    fn of(error: &dyn Hint) -> (String, Option<String>) {
        (error.message(), error.hint())
    }
    if let Some(error) = link.downcast_ref::<Hinted>() {
        return Some(of(error));
    }
    if let Some(error) = link.downcast_ref::<IngestError>() {
        return Some(of(error));
    }
    if let Some(error) = link.downcast_ref::<RequestError>() {
        return Some(of(error));
    }
    if let Some(error) = link.downcast_ref::<KernelCategoryError>() {
        return Some(of(error));
    }
    link.downcast_ref::<ReportError>().map(|error| of(error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn hints_come_from_fields_and_causes_keep_their_order() {
        let error = Err::<(), _>(hinted("`a.json` is empty", "record it again"))
            .context("reading the base")
            .unwrap_err();
        assert_eq!(
            message_and_hint(&error),
            (
                "reading the base: `a.json` is empty".to_owned(),
                Some("record it again".to_owned())
            )
        );
        // A message that itself says "\nhint: " is not taken apart: only fields are.
        let plain = anyhow::anyhow!("a\nhint: b");
        assert_eq!(message_and_hint(&plain), ("a\nhint: b".to_owned(), None));
    }
}
