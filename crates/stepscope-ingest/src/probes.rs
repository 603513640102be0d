//! Probes for the benchmarks: parts of a read timed on their own. Compiled with the
//! `bench-probes` feature only, which stepscope-dev (the benchmarks' tools) turns on.

use crate::pipeline::map_path;
use crate::{Compression, IngestError, KinetoJsonOptions, source};
use std::path::Path;

/// Inflates a file as [`read_trace_file`](crate::read_trace_file) does (the same decoder,
/// in pieces of the same size, one buffer filled again and again) and drops the text: how
/// many bytes came out. What inflating alone costs, the floor under reading a compressed
/// trace on two cores (`scripts/bench-analyze.sh` times it beside HolisticTraceAnalysis). A
/// plain file is read through as it is.
pub fn inflate_only(path: &Path) -> Result<u64, IngestError> {
    let mapped = map_path(path)?;
    let compression = Compression::detect(&mapped);
    let spare = std::cell::Cell::new(None);
    let piece = KinetoJsonOptions::default().segment_size();
    // Each member is checked here, on the inflating thread, where a read checks it on its own.
    let mut check = source::TextCheck::default();
    let mut check_failure = None;
    let (produced, failure) = source::inflate_pieces(
        &mapped,
        compression,
        piece,
        || spare.take(),
        |inflated| match check.pass(inflated) {
            Ok(text) => {
                if let Some(buffer) = text {
                    spare.set(Some(buffer));
                }
                true
            }
            Err(failure) => {
                check_failure = Some(failure);
                false
            }
        },
    );
    match check_failure.or_else(|| failure.map(|failure| (produced, failure))) {
        None => Ok(produced),
        Some((produced, failure)) => Err(failure.into_error(path, produced)),
    }
}
