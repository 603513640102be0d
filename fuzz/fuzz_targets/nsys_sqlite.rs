//! Arbitrary bytes as an Nsight Systems SQLite export (forced format): no panic; a database
//! either reads (bad rows skipped and counted, no negative duration stored) or fails with
//! `IngestError::Sqlite` (not a database, cut, corrupt, or without a table it needs);
//! reading twice gives the same trace, or the second read fails as SQLite answers a corrupt
//! file: SQLite itself does not answer some corrupt pages the same way twice (a found input,
//! a cell offset past its page: the sqlite3 3.40 shell ran the runtime query on it six
//! times and said "malformed" twice), so only two successful reads must agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stepscope_ingest::{IngestError, ReadOptions, TraceFormat, read_trace_bytes};

fuzz_target!(|data: &[u8]| {
    let options = ReadOptions::default().with_format(Some(TraceFormat::NsysSqlite));
    match read_trace_bytes(data, &options) {
        Ok(trace) => {
            let again = match read_trace_bytes(data, &options) {
                Ok(again) => again,
                Err(IngestError::Sqlite { .. }) => return,
                Err(other) => panic!("the same bytes read twice: {other}"),
            };
            assert_eq!(format!("{:?}", trace.gpu), format!("{:?}", again.gpu));
            assert_eq!(
                format!("{:?}", trace.runtime),
                format!("{:?}", again.runtime)
            );
            assert_eq!(trace.metadata, again.metadata);
            // Rows whose end comes before their start are skipped, never stored.
            assert!(trace.gpu.duration.iter().all(|d| d.as_nanos() >= 0));
            assert!(trace.runtime.duration.iter().all(|d| d.as_nanos() >= 0));
            assert!(trace.annotations.duration.iter().all(|d| d.as_nanos() >= 0));
            // The format says the platform, whatever the device table holds.
            assert!(!trace.metadata.device_names.is_empty());
        }
        Err(IngestError::Sqlite { .. } | IngestError::Empty { .. }) => {}
        Err(other) => panic!("unexpected error: {other}"),
    }
});
