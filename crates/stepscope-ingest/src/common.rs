//! What the readers share: opening a file to stream it, adding a user range as a step
//! marker, marking an import cut short, naming a copy's direction, and placing a JSON
//! parser's line and column as a byte offset. Readers share helpers here, never by importing
//! each other.

use crate::IngestError;
use std::path::Path;
use stepscope_model::{Severity, TraceBuilder};

/// A plain file opened for reading through a 1 MiB buffer (the streaming readers), or the
/// error naming it.
pub(crate) fn open_buffered(path: &Path) -> Result<std::io::BufReader<std::fs::File>, IngestError> {
    let file = std::fs::File::open(path).map_err(|source| IngestError::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(std::io::BufReader::with_capacity(1 << 20, file))
}

/// Adds a ROCTx (or other user) range as a host annotation, where step markers are found;
/// a mark (no length) or a range with no message names no step. Whether it was added.
pub(crate) fn add_marker(
    builder: &mut TraceBuilder,
    message: &str,
    (process, thread): (stepscope_model::ProcessId, stepscope_model::ThreadId),
    (start, duration): (stepscope_model::Timestamp, stepscope_model::Duration),
) -> bool {
    if message.is_empty() || duration.as_nanos() <= 0 {
        return false;
    }
    let span = stepscope_model::AnnotationRecord {
        name: builder.intern(message),
        process,
        thread,
        start,
        duration,
    };
    builder.add_annotation(span);
    true
}

/// Marks an import partial at the byte of the decompressed text where its JSON broke: the
/// events before it were kept (`allow_truncated`). Every JSON reader reports a break so.
/// The JSON text `bytes` broke off in (or was corrupt at their end), cut after the last
/// container that closed and with the containers still open closed: every record complete
/// before the break, and nothing after it. `None` when no container closed inside another
/// (nothing whole to keep). Strings are followed, so brackets in text do not count.
pub(crate) fn close_truncated_json(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut open: Vec<u8> = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    let mut safe: Option<(usize, usize)> = None;
    for (at, &byte) in bytes.iter().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => open.push(byte),
            b'}' | b']' => {
                open.pop()?;
                // Below the cut only containers opened since; those under it are as now.
                safe = (!open.is_empty()).then_some((at + 1, open.len()));
            }
            _ => {}
        }
    }
    let (cut, depth) = safe?;
    let mut closed = bytes[..cut].to_vec();
    for &opener in open[..depth].iter().rev() {
        closed.push(if opener == b'{' { b'}' } else { b']' });
    }
    Some(closed)
}

pub(crate) fn mark_truncated(builder: &mut TraceBuilder, offset: u64) {
    let stats = builder.stats_mut();
    stats.truncated_at_byte = Some(offset);
    stats.add(
        "input_truncated",
        Severity::Error,
        "The input broke off or was corrupt; only the events before the break were read",
        1,
    );
}

/// `MEMORY_COPY_HOST_TO_DEVICE` → `HtoD`, as the PyTorch profiler names copies.
pub(crate) fn copy_direction(field: &str) -> String {
    let direction = field.trim_start_matches("MEMORY_COPY_");
    match direction {
        "HOST_TO_DEVICE" => "HtoD".to_owned(),
        "DEVICE_TO_HOST" => "DtoH".to_owned(),
        "DEVICE_TO_DEVICE" => "DtoD".to_owned(),
        "HOST_TO_HOST" => "HtoH".to_owned(),
        other => other.to_owned(),
    }
}

/// The byte offset of a 1-based line and column.
pub(crate) fn line_offset(bytes: &[u8], line: usize, column: usize) -> u64 {
    let line_start: usize = bytes
        .split(|b| *b == b'\n')
        .take(line.saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    (line_start + column.saturating_sub(1)).min(bytes.len()) as u64
}

#[cfg(test)]
mod tests {
    use super::close_truncated_json;

    fn closed(text: &str) -> Option<String> {
        close_truncated_json(text.as_bytes()).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn a_cut_document_keeps_its_whole_records_and_closes() {
        assert_eq!(
            closed(r#"{"a": [{"x": 1}, {"x": 2}, {"x": 3"#).as_deref(),
            Some(r#"{"a": [{"x": 1}, {"x": 2}]}"#)
        );
        // Brackets and escaped quotes inside strings are text.
        assert_eq!(
            closed(r#"{"a": [{"s": "]}\"{["}, {"s": "cut"#).as_deref(),
            Some(r#"{"a": [{"s": "]}\"{["}]}"#)
        );
        // A cut right after a key: the last whole member stands.
        assert_eq!(
            closed(r#"{"p": [{"k": [1]}], "q""#).as_deref(),
            Some(r#"{"p": [{"k": [1]}]}"#)
        );
        assert_eq!(closed(r#"{"a": [1, 2"#), None);
        assert_eq!(closed("]"), None);
        for text in [r#"{"a": [{"x": 1}, {"x""#, r#"[[1], [2, [3"#] {
            let out = closed(text).unwrap();
            serde_json::from_str::<serde_json::Value>(&out).expect(&out);
        }
    }
}
