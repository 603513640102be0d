//! Errors whose hint fits the cause: an empty input and a complete document that is not a
//! trace are errors even with `allow_truncated`, with no `--allow-truncated` hint; a cut or
//! corrupt file keeps its hint.

use crate::common::{ScratchFile, gzip, options, read};
use stepscope_ingest::{IngestError, read_trace_file};

fn hint(error: &IngestError) -> String {
    let message = error.to_string();
    let hint = message.lines().find(|l| l.starts_with("hint: "));
    hint.unwrap_or_else(|| panic!("no hint line: {message}"))
        .to_owned()
}

#[test]
fn an_empty_input_is_an_error_even_with_allow_truncated() {
    let inputs: [&[u8]; 5] = [
        b"",
        b" ",
        b"\n\t \r\n",
        b"\xEF\xBB\xBF",
        b"\xEF\xBB\xBF  \n",
    ];
    for bytes in inputs {
        for lenient in [false, true] {
            let error = read(bytes, 1, lenient)
                .map(|t| t.counts.events)
                .unwrap_err();
            assert!(
                matches!(error, IngestError::Empty { path: None }),
                "{bytes:?}: {error:?}"
            );
            assert!(error.to_string().starts_with("input is empty\n"), "{error}");
            assert!(hint(&error).contains("wrote nothing"), "{error}");
            assert!(!error.to_string().contains("--allow-truncated"), "{error}");
        }
    }
}

#[test]
fn an_empty_file_is_named_plain_or_compressed() {
    for (name, bytes) in [("empty.json", Vec::new()), ("empty.json.gz", gzip(b" \n"))] {
        let file = ScratchFile::new(name, &bytes);
        let error = read_trace_file(file.path(), &options(1, true)).unwrap_err();
        assert!(matches!(error, IngestError::Empty { .. }), "{error:?}");
        let expected = format!("`{}` is empty\n", file.path().display());
        assert!(error.to_string().starts_with(&expected), "{error}");
    }
}

#[test]
fn a_json_object_without_trace_events_is_not_a_trace_even_with_allow_truncated() {
    let texts = [
        "{}",
        r#"{"foo":1}"#,
        " {\"schemaVersion\": 1, \"deviceProperties\": []}\n",
        "\u{feff}{}",
    ];
    for text in texts {
        for lenient in [false, true] {
            let error = read(text.as_bytes(), 2, lenient)
                .map(|t| t.counts.events)
                .unwrap_err();
            let message = error.to_string();
            assert!(
                matches!(error, IngestError::NotATrace { .. }),
                "{text}: {error:?}"
            );
            assert!(
                message.starts_with("input is not a PyTorch profiler trace: the JSON object has no `traceEvents` key\n"),
                "{message}"
            );
            assert!(hint(&error).contains("`traceEvents` array"), "{message}");
            assert!(!message.contains("--allow-truncated"), "{message}");
        }
    }
}

#[test]
fn trace_events_that_are_not_an_array_are_not_a_trace() {
    for text in [r#"{"traceEvents": 5}"#, r#"{"traceEvents":{"ph":"X"}}"#] {
        let error = read(text.as_bytes(), 1, true)
            .map(|t| t.counts.events)
            .unwrap_err();
        match &error {
            IngestError::NotATrace { reason, .. } => {
                assert!(reason.contains("is not an array"), "{reason}")
            }
            other => panic!("{text}: {other:?}"),
        }
        assert!(!error.to_string().contains("--allow-truncated"), "{error}");
    }
}

#[test]
fn an_object_file_without_trace_events_is_named() {
    let file = ScratchFile::new("t.json", b"{}");
    let error = read_trace_file(file.path(), &options(1, true)).unwrap_err();
    let expected = format!(
        "`{}` is not a PyTorch profiler trace",
        file.path().display()
    );
    assert!(error.to_string().starts_with(&expected), "{error}");
}

/// A cut object is a cut file, not a document without events.
#[test]
fn a_cut_object_is_still_truncated() {
    for text in [
        r#"{"foo":1"#,
        r#"{"traceEvents":"#,
        r#"{"traceEvents":["#,
        "{",
    ] {
        let error = read(text.as_bytes(), 1, false)
            .map(|t| t.counts.events)
            .unwrap_err();
        match &error {
            IngestError::Json { truncated, .. } => assert!(truncated, "{text}: {error}"),
            other => panic!("{text}: {other:?}"),
        }
        assert!(hint(&error).contains("truncated"), "{error}");
        assert!(hint(&error).contains("--allow-truncated"), "{error}");
        let partial = read(text.as_bytes(), 1, true).unwrap();
        assert_eq!(partial.stats.truncated_at_byte, Some(text.len() as u64));
    }
}

#[test]
fn corrupt_and_unknown_inputs_keep_their_hints() {
    let corrupt = read(br#"[{"ph":"X"} garbage]"#, 1, false).unwrap_err();
    assert!(hint(&corrupt).contains("corrupt"), "{corrupt}");
    assert!(hint(&corrupt).contains(
        "(`--allow-truncated`; in Python `allow_truncated=True`) analyses the events before it"
    ));
    let unknown = read(b"plain text", 1, true).unwrap_err();
    assert!(
        matches!(unknown, IngestError::UnknownFormat { .. }),
        "{unknown:?}"
    );
    assert!(hint(&unknown).contains("stepscope reads"), "{unknown}");
}

/// A gzip cut inside its header inflates to nothing: a cut file, so `allow_truncated`
/// still gives an (empty) partial trace, not the "empty input" error.
#[test]
fn a_gzip_cut_before_any_json_is_truncated_not_empty() {
    let gz = gzip(br#"{"traceEvents":[]}"#);
    let file = ScratchFile::new("cut.json.gz", &gz[..12]);
    let strict = read_trace_file(file.path(), &options(1, false)).unwrap_err();
    assert!(
        matches!(strict, IngestError::Decompress { .. }),
        "{strict:?}"
    );
    assert!(hint(&strict).contains("--allow-truncated"), "{strict}");
    let partial = read_trace_file(file.path(), &options(1, true)).unwrap();
    assert!(partial.stats.is_partial());
    assert_eq!(partial.stats.get("compressed_input_truncated"), 1);
    assert_eq!(partial.counts.events, 0);
}
