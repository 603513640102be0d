//! Arbitrary bytes as a rocprofv3 rocpd database (forced format; SQLite reads them from a
//! temporary copy): no panic, with or without `allow_truncated`; a database reads (no
//! negative duration stored, a device name always set) or fails with `IngestError::Sqlite`,
//! which names where.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stepscope_ingest::TraceFormat;

fuzz_target!(|data: &[u8]| {
    stepscope_fuzz::check_database(data, TraceFormat::Rocpd, |trace| {
        assert!(trace.annotations.duration.iter().all(|d| d.as_nanos() >= 0));
        assert!(!trace.metadata.device_names.is_empty());
    });
});
