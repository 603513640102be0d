//! Arbitrary bytes as an RPD database (forced format; SQLite reads them from a temporary
//! copy): no panic, with or without `allow_truncated`; a database reads (no negative
//! duration stored) or fails with `IngestError::Sqlite`, which names where.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stepscope_ingest::{IngestError, ReadOptions, TraceFormat, read_trace_bytes};

fuzz_target!(|data: &[u8]| {
    for allow in [false, true] {
        let options = ReadOptions::default()
            .with_format(Some(TraceFormat::RpdSqlite))
            .with_allow_truncated(allow);
        match read_trace_bytes(data, &options) {
            Ok(trace) => {
                assert!(trace.gpu.duration.iter().all(|d| d.as_nanos() >= 0));
                assert!(trace.runtime.duration.iter().all(|d| d.as_nanos() >= 0));
            }
            Err(IngestError::Sqlite { place, .. }) => assert!(!place.is_empty()),
            Err(IngestError::Empty { .. }) => {}
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
});
