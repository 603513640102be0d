//! Corrupted and arbitrary bytes: never a panic, errors with offsets inside the input,
//! `allow_truncated` yields a trace for every break in the JSON (not for an empty input or
//! a complete document that is not a trace), and the result never depends on the threads.

use crate::common::{big_config, is_blank, read_all_thread_counts, trace_difference};
use crate::generate::{big_doc, small_doc};
use crate::valid_docs::BIG;
use proptest::prelude::*;
use proptest::sample::Index;
use stepscope_ingest::IngestError;

/// One edit of a document.
#[derive(Debug, Clone)]
pub enum Mutation {
    Set(Index, u8),
    Insert(Index, u8),
    Delete(Index, usize),
    Duplicate(Index, usize),
}

/// Bytes that matter to JSON and to the event-boundary guesser, and a few that do not.
pub fn interesting_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => prop::sample::select(b"{}[],:\"\\ \n0-.eEtfnu/".to_vec()),
        1 => any::<u8>(),
    ]
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), interesting_byte()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<Index>(), interesting_byte()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<Index>(), 1usize..64).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<Index>(), 1usize..256).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
    ]
}

/// Applies `mutation` to `bytes`; positions fall in `[from, bytes.len())`.
pub fn apply(bytes: &mut Vec<u8>, mutation: &Mutation, from: usize) {
    let span = bytes.len().saturating_sub(from);
    if span == 0 {
        return;
    }
    let at = |index: &Index| from + index.index(span);
    match mutation {
        Mutation::Set(i, b) => {
            let at = at(i);
            bytes[at] = *b;
        }
        Mutation::Insert(i, b) => bytes.insert(at(i), *b),
        Mutation::Delete(i, n) => {
            let at = at(i);
            bytes.drain(at..(at + n).min(bytes.len()));
        }
        Mutation::Duplicate(i, n) => {
            let at = at(i);
            let copy = bytes[at..(at + n).min(bytes.len())].to_vec();
            bytes.splice(at..at, copy);
        }
    }
}

/// Reads `bytes` strict and lenient at 1 thread and at each of `threads`, checking the
/// reader's contract.
pub fn check_robust(bytes: &[u8], threads: &[usize]) -> Result<(), TestCaseError> {
    let strict = read_all_thread_counts(bytes, false, threads).map_err(TestCaseError::fail)?;
    let lenient = read_all_thread_counts(bytes, true, threads).map_err(TestCaseError::fail)?;
    let len = bytes.len() as u64;
    match (&strict, &lenient) {
        (Ok(full), Ok(same)) => {
            prop_assert_eq!(same.stats.truncated_at_byte, None);
            if let Some(difference) = trace_difference(full, same) {
                return Err(TestCaseError::fail(format!(
                    "allow_truncated changed a complete read: {difference}"
                )));
            }
        }
        (Err(IngestError::Json { offset, .. }), Ok(partial)) => {
            prop_assert!(*offset <= len, "offset {} past the end {}", offset, len);
            prop_assert_eq!(partial.stats.truncated_at_byte, Some(*offset));
        }
        (Err(IngestError::UnknownFormat { .. }), Err(IngestError::UnknownFormat { .. })) => {}
        // Nothing to keep: no events before a break.
        (Err(IngestError::Empty { .. }), Err(IngestError::Empty { .. })) => {
            prop_assert!(is_blank(bytes), "a non-blank input called empty");
        }
        (Err(IngestError::NotATrace { .. }), Err(IngestError::NotATrace { .. })) => {}
        (x, y) => {
            return Err(TestCaseError::fail(format!(
                "unexpected {:?} / {:?}",
                x.as_ref().err(),
                y.as_ref().err()
            )));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn corrupted_small_documents_never_panic(
        doc in small_doc(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut bytes = doc.render();
        for mutation in &mutations {
            apply(&mut bytes, mutation, 0);
        }
        check_robust(&bytes, &[2])?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_robust(&bytes, &[2])?;
    }

    #[test]
    fn json_punctuation_soup_never_panics(
        prefix in prop::sample::select(vec!["", "[", "{\"traceEvents\":[", "\u{feff}{", "{\"a\":"]),
        body in prop::collection::vec(interesting_byte(), 0..256),
    ) {
        let mut bytes = prefix.as_bytes().to_vec();
        bytes.extend(body);
        check_robust(&bytes, &[2])?;
    }
}

proptest! {
    #![proptest_config(big_config(8))]

    /// Corruption near the middle of a big document, where the two-thread reader cuts.
    #[test]
    fn corrupted_big_documents_read_the_same_at_1_to_3_threads(
        doc in big_doc(BIG),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut bytes = doc.render();
        let middle = bytes.len() * 2 / 5;
        for mutation in &mutations {
            apply(&mut bytes, mutation, middle);
        }
        check_robust(&bytes, &[2, 3])?;
    }
}
