//! JSON output: the [`crate::schema::Document`], pretty-printed.

use crate::schema::Document;

/// The document as pretty JSON with a trailing newline.
pub fn render(document: &Document) -> String {
    let mut text = serde_json::to_string_pretty(document).expect("the document serializes");
    text.push('\n');
    text
}

/// The diff document as pretty JSON with a trailing newline.
pub fn render_diff(document: &crate::schema::diff::DiffDocument) -> String {
    let mut text = serde_json::to_string_pretty(document).expect("the diff document serializes");
    text.push('\n');
    text
}
