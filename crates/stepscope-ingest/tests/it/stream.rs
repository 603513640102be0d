//! A Kineto document read as a stream of pieces (how `.json.gz` and `.json.zst` files are
//! read, while they inflate) gives what the whole text gives in memory: the same trace, or
//! a failure at the same byte, whatever the sizes of the pieces and of the segments the
//! threads parse, wherever the guessed cuts fall (`args` arrays of objects fool the guess).

use crate::common::trace_difference;
use crate::corruption::{apply, mutation};
use crate::generate::{big_doc, small_doc};
use proptest::prelude::*;
use stepscope_ingest::{
    IngestError, KinetoJsonOptions, ReadOptions, TraceFormat, read_kineto_stream, read_trace_bytes,
};
use stepscope_model::Trace;

fn options(threads: usize, allow_truncated: bool, segment: usize) -> ReadOptions {
    ReadOptions::default()
        .with_format(Some(TraceFormat::KinetoJson))
        .with_threads(threads)
        .with_allow_truncated(allow_truncated)
        .with_kineto(KinetoJsonOptions::default().with_segment_bytes(segment))
}

/// `bytes` in pieces of `piece` bytes.
fn pieces(bytes: &[u8], piece: usize) -> Vec<Vec<u8>> {
    bytes.chunks(piece.max(1)).map(<[u8]>::to_vec).collect()
}

/// What a read came to, for comparing a streamed read with one in memory.
fn outcome(result: &Result<Trace, IngestError>) -> String {
    match result {
        Ok(trace) => format!("ok: {} events", trace.counts.events),
        Err(IngestError::Json {
            offset,
            truncated,
            message,
            ..
        }) => format!("json error at {offset} (truncated: {truncated}): {message}"),
        Err(IngestError::NotATrace { reason, .. }) => format!("not a trace: {reason}"),
        Err(other) => format!("{other}"),
    }
}

/// Reads `bytes` in memory and as streams (several piece, segment and thread counts), strict
/// and lenient, and checks they agree.
fn check_same(bytes: &[u8], piece: usize, segment: usize) -> Result<(), TestCaseError> {
    for allow_truncated in [false, true] {
        let whole = read_trace_bytes(bytes, &options(1, allow_truncated, 0));
        for threads in [1, 3] {
            let streamed = read_kineto_stream(
                pieces(bytes, piece),
                &options(threads, allow_truncated, segment),
            );
            let context = format!(
                "threads {threads}, piece {piece}, segment {segment}, allow_truncated {allow_truncated}"
            );
            match (&whole, &streamed) {
                (Ok(x), Ok(y)) => {
                    if let Some(difference) = trace_difference(x, y) {
                        return Err(TestCaseError::fail(format!("{context}: {difference}")));
                    }
                }
                _ => prop_assert_eq!(outcome(&whole), outcome(&streamed), "{}", context),
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn streamed_small_documents_read_as_in_memory(
        doc in small_doc(),
        piece in 1usize..400,
        segment in 16usize..2048,
    ) {
        check_same(&doc.render(), piece, segment)?;
    }

    #[test]
    fn streamed_corrupted_documents_fail_where_in_memory_fails(
        doc in small_doc(),
        mutations in prop::collection::vec(mutation(), 1..4),
        piece in 1usize..400,
        segment in 16usize..2048,
    ) {
        let mut bytes = doc.render();
        for mutation in &mutations {
            apply(&mut bytes, mutation, 0);
        }
        check_same(&bytes, piece, segment)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// Documents of a few MB in default-sized pieces and segments of tens of KB: many
    /// segments in flight at once, cut once near the end.
    #[test]
    fn streamed_big_documents_read_as_in_memory(
        doc in big_doc(1 << 20),
        segment in (16usize << 10)..(256 << 10),
        cut in prop::option::of(0.5f64..1.0),
    ) {
        let mut bytes = doc.render();
        if let Some(cut) = cut {
            bytes.truncate((bytes.len() as f64 * cut) as usize);
        }
        check_same(&bytes, 1 << 16, segment)?;
    }
}

/// Every cut of a small document, in small pieces and segments.
#[test]
fn every_cut_streams_as_in_memory() {
    let bytes = sample(12).into_bytes();
    let failures: Vec<String> = (0..bytes.len())
        .step_by(7)
        .filter_map(|cut| {
            check_same(&bytes[..cut], 13, 97)
                .err()
                .map(|error| format!("cut {cut}: {error}"))
        })
        .take(5)
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A document whose events' `args` hold objects after `}, {`, so the boundary guess lands
/// inside events over and over; header keys before and after the events.
fn sample(events: usize) -> String {
    let mut text = String::from(
        "\u{feff}{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0}, {\"id\": 1}],\n\"traceEvents\": [\n",
    );
    for i in 0..events {
        text.push_str(&format!(
            "{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\\u00e9{i}\",\"pid\":1,\"tid\":7,\"ts\":{i}.5,\"dur\":1,\"args\":{{\"correlation\":{i},\"x\":[{{\"a\":1}}, {{\"b\":2}}, {{\"c\":3}}]}}}},\n"
        ));
    }
    text.push_str("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"p\"}}],\n\"traceName\": \"t\"}\n");
    text
}

/// Wrong guesses everywhere: the join reads on from where each cut went wrong.
#[test]
fn args_that_look_like_event_boundaries_stream_as_in_memory() {
    let text = sample(2000);
    for segment in [40, 100, 333, 5000] {
        check_same(text.as_bytes(), 61, segment).unwrap();
    }
}
