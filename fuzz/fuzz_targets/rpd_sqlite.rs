//! Arbitrary bytes as an RPD database (forced format; SQLite reads them from a temporary
//! copy): no panic, with or without `allow_truncated`; a database reads (no negative
//! duration stored) or fails with `IngestError::Sqlite`, which names where.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stepscope_ingest::TraceFormat;

fuzz_target!(|data: &[u8]| {
    stepscope_fuzz::check_database(data, TraceFormat::RpdSqlite, |_| {});
});
