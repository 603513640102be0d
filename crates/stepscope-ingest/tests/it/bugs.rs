//! Regression tests for bugs the property tests and the fuzzers found (now fixed).

use crate::common::read;
use stepscope_ingest::IngestError;

/// A file cut inside a number that the reader skips (an unknown key, most `args`) is a
/// truncated file, but serde_json's value skipper reports `0.`, `1e` or `-` at the end of
/// input as an invalid number one byte early, not as an early end; the reader passes that
/// on, so the user is told the file is corrupt at `len - 1` rather than truncated.
#[test]
fn a_cut_inside_a_number_is_reported_as_truncated() {
    let texts = [
        r#"[{"ph":"X","cat":"kernel","name":"k","ts":1."#,
        r#"[{"ph":"X","cat":"kernel","name":"k","ts":1e"#,
        r#"[{"ph":"X","cat":"kernel","name":"k","ts":-"#,
        r#"{"schemaVersion":-"#,
        r#"[{"ph":"X","cat":"kernel","args":{"blocks per SM": 0."#,
        r#"[{"ph":"X","cat":"kernel","args":{"x": 1e"#,
        r#"[{"ph":"X","cat":"kernel","args":{"x": 1e+"#,
        r#"[{"ph":"X","cat":"kernel","args":{"x": -"#,
        r#"[{"ph":"X","cat":"kernel","args":{"x": [1."#,
        r#"[{"ph":"X","cat":"kernel","unknown": 2."#,
        r#"[{"ph":"X","cat":"kernel","ts": [2."#,
    ];
    let wrong: Vec<String> = texts
        .iter()
        .filter_map(|text| match read(text.as_bytes(), 1, false) {
            Err(IngestError::Json {
                offset, truncated, ..
            }) if truncated && offset == text.len() as u64 => None,
            Err(IngestError::Json {
                offset, truncated, ..
            }) => Some(format!(
                "{text} -> offset {offset} of {}, truncated: {truncated}",
                text.len()
            )),
            other => Some(format!("{text} -> {:?}", other.map(|t| t.counts.events))),
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Bytes after the top-level value are never looked at: a second document appended to the
/// file (a profiler writing twice) or any garbage is dropped silently instead of being
/// reported as malformed JSON.
#[test]
fn data_after_the_document_is_an_error() {
    let event = r#"{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1}"#;
    let texts = [
        format!(r#"{{"traceEvents":[{event}]}}{{"traceEvents":[{event}]}}"#),
        format!(r#"[{event}][{event}]"#),
        format!(r#"{{"traceEvents":[{event}]}} garbage"#),
    ];
    let wrong: Vec<String> = texts
        .iter()
        .filter_map(|text| match read(text.as_bytes(), 1, false) {
            Err(IngestError::Json { .. }) => None,
            other => Some(format!("{text:?} -> {:?}", other.map(|t| t.counts.events))),
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The rpd2tracing and rocprofv3 JSON readers stream a plain file through serde's reader
/// interface but read bytes in memory through its slice interface, and the two place an
/// "invalid type" error one byte apart: the same bytes failed at byte 17 from a file and at
/// byte 16 from memory (found by the `kineto_gzip` fuzz target). Both now read through the
/// reader interface: the array's error is at its `[`, the number's just after its digits,
/// wherever the bytes come from.
#[test]
fn a_file_and_its_bytes_fail_at_the_same_byte() {
    let cases: [(&str, u64); 2] = [
        // rpd2tracing's array form, `cat` holding an array where a string belongs.
        (
            r#"[{"ph":"X","cat":[[2082411]],"Ev Idx":7478}},{"ph":"M","name":"process_name","pid":1,"args":{"name":"GPU 0"}}]"#,
            17,
        ),
        // rocprofv3 JSON, a kernel symbol's name a number.
        (
            r#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":1},"kernel_symbols":[{"kernel_id":1,"kernel_name":7}]}]}"#,
            95,
        ),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    for (text, at) in cases {
        let path = dir.path().join("trace.json");
        std::fs::write(&path, text).expect("write");
        let from_file = stepscope_ingest::read_trace_file(&path, &crate::common::options(1, false));
        let from_bytes = read(text.as_bytes(), 1, false);
        assert_eq!(
            crate::common::outcome(&from_file),
            crate::common::outcome(&from_bytes),
            "{text}"
        );
        match from_bytes {
            Err(IngestError::Json { offset, .. }) => assert_eq!(offset, at, "{text}"),
            other => panic!("{text}: {:?}", other.map(|t| t.counts.events)),
        }
    }
}
