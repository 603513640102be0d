//! Arbitrary bytes as a rocprof CSV table (forced format): no panic; a table either reads
//! (bad rows skipped and counted, no negative duration stored) or fails with
//! `IngestError::Csv` naming line 1 (a header that is no table, or lacks a column) or the line
//! of a last row cut short; reading twice gives the same trace.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stepscope_ingest::{IngestError, ReadOptions, TraceFormat, read_trace_bytes};

fuzz_target!(|data: &[u8]| {
    let options = ReadOptions::default().with_format(Some(TraceFormat::RocprofCsv));
    match read_trace_bytes(data, &options) {
        Ok(trace) => {
            let again = read_trace_bytes(data, &options).expect("the same bytes read twice");
            assert_eq!(format!("{:?}", trace.gpu), format!("{:?}", again.gpu));
            // Rows whose end comes before their start are skipped, never stored.
            assert!(trace.gpu.duration.iter().all(|d| d.as_nanos() >= 0));
            assert!(trace.runtime.duration.iter().all(|d| d.as_nanos() >= 0));
        }
        // Line 1: the header; later: a table cut inside its last row.
        Err(IngestError::Csv { line, .. }) => {
            let lines = data.iter().filter(|b| matches!(b, b'\n' | b'\r')).count() as u64 + 1;
            assert!(line >= 1 && line <= lines, "line {line} of {lines}");
        }
        Err(IngestError::Empty { .. }) => {}
        Err(other) => panic!("unexpected error: {other}"),
    }
});
