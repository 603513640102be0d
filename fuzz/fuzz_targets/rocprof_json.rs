//! Arbitrary bytes as rocprofv3 JSON (forced format): no panic; the bytes read (no negative
//! duration stored; dispatches without HIP records say the linkage is unavailable) or fail
//! with `IngestError::Json` at an offset inside the input; reading twice gives the same trace.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stepscope_ingest::{IngestError, ReadOptions, TraceFormat, read_trace_bytes};

fuzz_target!(|data: &[u8]| {
    let options = ReadOptions::default().with_format(Some(TraceFormat::RocprofJson));
    match read_trace_bytes(data, &options) {
        Ok(trace) => {
            let again = read_trace_bytes(data, &options).expect("the same bytes read twice");
            assert_eq!(format!("{:?}", trace.gpu), format!("{:?}", again.gpu));
            assert!(trace.gpu.duration.iter().all(|d| d.as_nanos() >= 0));
            assert!(trace.runtime.duration.iter().all(|d| d.as_nanos() >= 0));
            if !trace.gpu.is_empty() && trace.runtime.is_empty() {
                assert!(trace.metadata.linkage_unavailable.is_some());
            }
        }
        Err(IngestError::Json { offset, .. }) => assert!(offset <= data.len() as u64),
        Err(IngestError::Empty { .. }) => {}
        Err(other) => panic!("unexpected error: {other}"),
    }
});
