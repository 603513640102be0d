//! Arbitrary bytes as rpd2tracing JSON (forced format): no panic; the bytes read (no negative
//! duration stored, every linked GPU op's correlation is a call's number) or fail with
//! `IngestError::Json` at an offset inside the input; reading twice gives the same trace.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stepscope_ingest::{IngestError, ReadOptions, TraceFormat, read_trace_bytes};

fuzz_target!(|data: &[u8]| {
    let options = ReadOptions::default().with_format(Some(TraceFormat::RpdJson));
    match read_trace_bytes(data, &options) {
        Ok(trace) => {
            let again = read_trace_bytes(data, &options).expect("the same bytes read twice");
            assert_eq!(format!("{:?}", trace.gpu), format!("{:?}", again.gpu));
            assert!(trace.gpu.duration.iter().all(|d| d.as_nanos() >= 0));
            assert!(trace.runtime.duration.iter().all(|d| d.as_nanos() >= 0));
            // Calls are numbered 1..=n as read; the checks after reading may refuse some
            // (kept in `damaged`), so ids run up to the calls read, not those kept.
            let calls = (trace.runtime.len() + trace.damaged.len()) as u64;
            assert!(trace.gpu.correlation.iter().all(|c| c.0 <= calls));
        }
        Err(IngestError::Json { offset, .. }) => assert!(offset <= data.len() as u64),
        Err(IngestError::Empty { .. }) => {}
        Err(other) => panic!("unexpected error: {other}"),
    }
});
