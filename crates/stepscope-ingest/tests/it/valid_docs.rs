//! Generated valid documents read back to exactly what was written, at any thread count.

use crate::common::{big_config, read, read_all_thread_counts};
use crate::generate::{Doc, Event, Kind, Layout, big_doc, small_doc};
use proptest::prelude::*;

/// Past `MIN_PARALLEL_BYTES` (4 MiB), so the reader splits `traceEvents` across threads.
pub const BIG: usize = (4 << 20) + (256 << 10);

fn check_doc(doc: &Doc, threads: &[usize]) -> Result<(), TestCaseError> {
    let bytes = doc.render();
    let trace = read_all_thread_counts(&bytes, false, threads)
        .map_err(TestCaseError::fail)?
        .map_err(|e| TestCaseError::fail(format!("a valid document failed: {e}")))?;
    doc.expected().check(&trace).map_err(TestCaseError::fail)?;
    // allow_truncated changes nothing on a complete document.
    let lenient = read(&bytes, 1, true).map_err(|e| TestCaseError::fail(e.to_string()))?;
    if let Some(difference) = crate::common::trace_difference(&trace, &lenient) {
        return Err(TestCaseError::fail(format!(
            "allow_truncated changed a complete read: {difference}"
        )));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn small_documents_read_back_exactly(doc in small_doc()) {
        let bytes = doc.render();
        // The generator writes valid JSON.
        let parsed = serde_json::from_slice::<serde_json::Value>(
            bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes),
        );
        prop_assert!(parsed.is_ok(), "generator wrote invalid JSON: {:?}", parsed.err());
        check_doc(&doc, &[2])?;
    }
}

proptest! {
    #![proptest_config(big_config(8))]

    #[test]
    fn big_documents_read_the_same_at_1_to_4_threads(doc in big_doc(BIG)) {
        check_doc(&doc, &[2, 3, 4])?;
    }
}

fn event(kind: Kind, name: &str, i: usize, inner_objects: usize) -> Event {
    Event {
        kind,
        name: name.to_owned(),
        pid: (i % 3) as i64,
        tid: (i % 5) as i64,
        ts: 1_000 * i as i64 + 1,
        dur: 500,
        correlation: i as i64,
        quoted: i % 4 == 0,
        inner_objects,
    }
}

fn big(events: Vec<Event>, object_form: bool, layout: Layout) -> Doc {
    Doc {
        events,
        object_form,
        layout,
        bom: false,
        seed: 7,
    }
}

/// Every event carries a long `args` array of objects (`[{"a":0}, {"b":1}, ...]`), so a
/// guessed cut lands inside an event almost surely, at every thread count.
#[test]
fn cuts_inside_args_arrays_of_objects_are_caught() {
    for layout in [Layout::Compact, Layout::Pretty] {
        let events = (0..)
            .map(|i| event(Kind::Kernel, "gemm", i, 120))
            .take(5_000)
            .collect();
        let mut doc = big(events, true, layout);
        doc.tile_to(BIG);
        check_doc(&doc, &[2, 3, 8]).unwrap();
    }
}

/// Names that spell event boundaries (`},{}`, `"},{"ph":"X"}`) fill most of the document.
#[test]
fn cuts_inside_strings_that_look_like_events_are_caught() {
    let name =
        "},{}, {\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"fake\",\"ts\":1,\"dur\":1},{}".repeat(8);
    let events = (0..)
        .map(|i| event(Kind::Runtime, &name, i, 0))
        .take(200)
        .collect();
    let mut doc = big(events, false, Layout::Compact);
    doc.tile_to(BIG);
    check_doc(&doc, &[2, 3, 4, 7]).unwrap();
}

/// A short `traceEvents` followed by a header value of more than 4 MiB that looks like an
/// event list: the cut lands after the array, and what the late chunk read must be dropped.
#[test]
fn cuts_past_the_end_of_trace_events_are_dropped() {
    let events: Vec<Event> = (0..)
        .map(|i| event(Kind::Kernel, "k", i, 2))
        .take(300)
        .collect();
    let doc = big(events, false, Layout::Spaced);
    let array = String::from_utf8(doc.render()).unwrap();
    let fake_event = r#"{"ph":"X","cat":"kernel","name":"not an event","ts":1,"dur":1}"#;
    let tail = vec![fake_event; BIG / fake_event.len() + 1].join(", ");
    let text = format!(r#"{{"schemaVersion":1,"traceEvents":{array},"otherData":[{tail}]}}"#);
    let expected = doc.expected();
    for threads in [1, 2, 3, 4] {
        let trace = read(text.as_bytes(), threads, false).unwrap();
        expected.check(&trace).unwrap();
    }
}
