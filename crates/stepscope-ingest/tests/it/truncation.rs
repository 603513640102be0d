//! Any cut of a valid document: an error with an offset inside the input, or (lenient) a
//! trace holding a prefix of the full document's events.

use crate::common::{big_config, is_blank, read, read_all_thread_counts, shared, trace_difference};
use crate::generate::{Span, big_doc, kernel_spans, small_doc};
use crate::valid_docs::BIG;
use proptest::prelude::*;
use proptest::sample::Index;
use stepscope_ingest::IngestError;
use stepscope_model::Trace;

fn fail(message: impl Into<String>) -> TestCaseError {
    TestCaseError::fail(message.into())
}

fn runtime_starts(trace: &Trace) -> Vec<i64> {
    trace.runtime.start.iter().map(|t| t.as_nanos()).collect()
}

/// Checks `partial` holds a prefix of `full`'s events.
pub fn check_prefix(partial: &Trace, full: &Trace) -> Result<(), TestCaseError> {
    let is_prefix = |part: &[Span], whole: &[Span]| whole.starts_with(part);
    if !is_prefix(&kernel_spans(partial), &kernel_spans(full)) {
        return Err(fail(
            "the partial kernels are not a prefix of the full ones",
        ));
    }
    if !runtime_starts(full).starts_with(&runtime_starts(partial)) {
        return Err(fail(
            "the partial runtime calls are not a prefix of the full ones",
        ));
    }
    if !full.flows.id.starts_with(&partial.flows.id) {
        return Err(fail("the partial flows are not a prefix of the full ones"));
    }
    if partial.counts.events > full.counts.events {
        return Err(fail("the partial trace has more events than the full one"));
    }
    Ok(())
}

/// Reads `cut` (a prefix of a document whose full read is `full`) strict and lenient.
fn check_cut(cut: &[u8], full: &Trace, threads: &[usize]) -> Result<(), TestCaseError> {
    let strict = read_all_thread_counts(cut, false, threads).map_err(fail)?;
    let lenient = read_all_thread_counts(cut, true, threads).map_err(fail)?;
    let len = cut.len() as u64;
    match (&strict, &lenient) {
        (Ok(trace), Ok(same)) => {
            // Only a cut in trailing whitespace (or after the end) may parse.
            if let Some(difference) = trace_difference(trace, full) {
                return Err(fail(format!(
                    "a cut at {len} parsed differently: {difference}"
                )));
            }
            prop_assert_eq!(same.stats.truncated_at_byte, None);
        }
        (
            Err(IngestError::Json {
                offset, truncated, ..
            }),
            Ok(partial),
        ) => {
            prop_assert!(*offset <= len, "offset {} past the end {}", offset, len);
            // A cut inside a skipped number (`0.`, `1e`, `-`) is reported as corrupt one
            // byte before the end (`bugs::a_cut_inside_a_number_is_reported_as_truncated`);
            // tolerate only that.
            prop_assert!(
                *truncated || *offset + 1 >= len,
                "a cut at {} reported as corrupt at {}, not truncated",
                len,
                offset
            );
            prop_assert_eq!(partial.stats.truncated_at_byte, Some(*offset));
            check_prefix(partial, full)?;
        }
        // A cut inside the byte-order mark leaves bytes no format starts with.
        (Err(IngestError::UnknownFormat { .. }), Err(IngestError::UnknownFormat { .. }))
            if cut.len() < 3 && cut.starts_with(&[0xEF]) => {}
        // A cut before the first token leaves nothing: an empty input, even when lenient.
        (Err(IngestError::Empty { .. }), Err(IngestError::Empty { .. })) if is_blank(cut) => {}
        (x, y) => {
            return Err(fail(format!(
                "cut at {len}: unexpected {:?} / {:?}",
                x.as_ref().err(),
                y.as_ref().err()
            )));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_cut_of_a_small_document_is_an_error_or_a_prefix(
        doc in small_doc(),
        cuts in prop::collection::vec(any::<Index>(), 1..12),
    ) {
        let bytes = doc.render();
        let full = read(&bytes, 1, false).map_err(|e| fail(e.to_string()))?;
        for cut in cuts {
            check_cut(&bytes[..cut.index(bytes.len() + 1)], &full, &[2])?;
        }
    }
}

proptest! {
    #![proptest_config(big_config(6))]

    /// Cuts of big documents, read at 1 and 2 threads: the split must find the same break.
    #[test]
    fn cuts_of_big_documents_are_the_same_at_1_and_2_threads(
        doc in big_doc(BIG + (1 << 20)),
        cuts in prop::collection::vec(0.0f64..1.0, 2),
    ) {
        let bytes = doc.render();
        let full = read(&bytes, 1, false).map_err(|e| fail(e.to_string()))?;
        for fraction in cuts {
            // Keep most cuts past 4 MiB, where the document is still split.
            let at = BIG + ((bytes.len() - BIG) as f64 * fraction) as usize;
            check_cut(&bytes[..at], &full, &[2])?;
        }
    }
}

/// Cuts of two small real traces, every few bytes.
#[test]
fn cuts_of_real_traces_are_errors_or_prefixes() {
    use std::io::Read;
    let mut triton = Vec::new();
    let gz = std::fs::read(shared(
        "hta/tests/data/triton_example/triton_example.json.gz",
    ))
    .unwrap();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut triton)
        .unwrap();
    let before_fix = std::fs::read(shared("kineto/docs/traces/before_fix_trace.json")).unwrap();
    for text in [triton, before_fix] {
        let full = read(&text, 1, false).unwrap();
        assert!(full.counts.events > 20, "{} events", full.counts.events);
        for at in (0..=text.len()).step_by(3) {
            check_cut(&text[..at], &full, &[]).unwrap();
        }
    }
}
