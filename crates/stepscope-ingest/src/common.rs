//! What the readers share: opening a file to stream it, adding a user range as a step
//! marker, and marking an import cut short.

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
