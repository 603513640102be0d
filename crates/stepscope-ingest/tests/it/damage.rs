//! Events refused for bad data are kept as damage, with their table, correlation id and
//! name, and are gone from their table: bad times (`NegativeDuration`, `InvalidTime`) and
//! GPU or runtime events in a phase other than `X` (`UnknownPhase`). On small documents
//! written here and on a real trace edited here (no public trace has such damage).

use crate::common::{read, read_all_thread_counts, shared};
use crate::edit::{RealTrace, SGLANG_DECODE};
use serde_json::{Value, json};
use stepscope_model::{CorrelationId, DamageKind, DamagedTable, Severity, Trace};

/// A good kernel, so every document has something left once the bad event is refused.
const GOOD_KERNEL: &str = r#"{"ph":"X","cat":"kernel","name":"good","pid":0,"tid":7,"ts":1000,"dur":5,"args":{"correlation":1,"stream":7}}"#;

fn read_events(events: &[&str]) -> Trace {
    let text = format!(
        r#"{{"traceEvents":[{},{}]}}"#,
        GOOD_KERNEL,
        events.join(",")
    );
    read(text.as_bytes(), 1, false).unwrap()
}

/// The one damaged event of `trace`, as (kind, table, correlation, name).
fn only_damage(trace: &Trace) -> (DamageKind, DamagedTable, u64, Option<String>) {
    assert_eq!(trace.damaged.len(), 1, "{:?}", trace.damaged);
    let event = trace.damaged.events[0];
    let name = event.name.map(|n| trace.name(n).to_owned());
    (event.kind, event.table, event.correlation.0, name)
}

/// Stored rows of the table a damaged event would have gone to.
fn table_len(trace: &Trace, table: DamagedTable) -> usize {
    match table {
        DamagedTable::Gpu => trace.gpu.len(),
        DamagedTable::Runtime => trace.runtime.len(),
        DamagedTable::Annotation => trace.annotations.len() + trace.gpu_annotations.len(),
    }
}

/// The counter a damage kind bumps: once, as data loss; the old `event_without_time` is gone
/// (the old `negative_duration` lives on as the name of [`DamageKind::NegativeDuration`]).
fn assert_counted_once(trace: &Trace, kind: DamageKind) {
    let counter = &trace.stats.counters[kind.as_str()];
    assert_eq!((counter.count, counter.severity), (1, Severity::DataLoss));
    assert_eq!(trace.stats.get("event_without_time"), 0);
}

/// Fields of a complete event with a bad time, what it is refused as, and its table.
const BAD_TIMES: [(&str, DamageKind, DamagedTable); 20] = {
    use DamageKind::{InvalidTime as Invalid, NegativeDuration as Negative};
    use DamagedTable::{Annotation, Gpu, Runtime};
    [
        (r#""cat":"kernel","ts":5,"dur":-2"#, Negative, Gpu),
        (r#""cat":"kernel","dur":2"#, Invalid, Gpu),
        (r#""cat":"kernel","ts":null,"dur":2"#, Invalid, Gpu),
        (r#""cat":"kernel","ts":"soon","dur":2"#, Invalid, Gpu),
        (r#""cat":"kernel","ts":"NaN","dur":2"#, Invalid, Gpu),
        (r#""cat":"kernel","ts":"inf","dur":2"#, Invalid, Gpu),
        (r#""cat":"kernel","ts":"-Infinity","dur":2"#, Invalid, Gpu),
        (r#""cat":"kernel","ts":"1e999","dur":2"#, Invalid, Gpu),
        (r#""cat":"kernel","ts":5,"dur":null"#, Invalid, Gpu),
        (r#""cat":"kernel","ts":5,"dur":"long""#, Invalid, Gpu),
        (r#""cat":"kernel","ts":5,"dur":"NaN""#, Invalid, Gpu),
        (r#""cat":"kernel","ts":5"#, Invalid, Gpu),
        (r#""cat":"Kernel","ts":5,"dur":-0.5"#, Negative, Gpu),
        (r#""cat":"gpu_memcpy","ts":5,"dur":"-1""#, Negative, Gpu),
        (r#""cat":"gpu_memset","ts":5"#, Invalid, Gpu),
        (r#""cat":"cuda_runtime","ts":5"#, Invalid, Runtime),
        (
            r#""cat":"hip_runtime","ts":"inf","dur":1"#,
            Invalid,
            Runtime,
        ),
        (
            r#""cat":"user_annotation","ts":5,"dur":-1"#,
            Negative,
            Annotation,
        ),
        (r#""cat":"user_annotation","dur":1"#, Invalid, Annotation),
        (
            r#""cat":"gpu_user_annotation","ts":5,"dur":"Infinity""#,
            Invalid,
            Annotation,
        ),
    ]
};

#[test]
fn bad_times_of_gpu_runtime_and_annotation_events_are_damage() {
    for (fields, kind, table) in BAD_TIMES {
        let event = format!(
            r#"{{"ph":"X",{fields},"name":"bad","pid":0,"tid":7,"args":{{"correlation":11}}}}"#
        );
        let trace = read_events(&[&event]);
        assert_eq!(
            only_damage(&trace),
            (kind, table, 11, Some("bad".to_owned())),
            "{event}"
        );
        assert_counted_once(&trace, kind);
        let kept_good = usize::from(table == DamagedTable::Gpu);
        assert_eq!(table_len(&trace, table), kept_good, "{event}");
    }
}

#[test]
fn an_annotation_without_dur_is_an_instant_not_damage() {
    let trace = read_events(&[r#"{"ph":"X","cat":"user_annotation","name":"mark","ts":7}"#]);
    assert!(trace.damaged.is_empty());
    assert_eq!(trace.annotations.len(), 1);
    assert_eq!(trace.annotations.duration[0].as_nanos(), 0);
}

#[test]
fn damage_without_correlation_or_name_says_so() {
    let trace = read_events(&[r#"{"ph":"X","cat":"kernel","ts":5,"dur":-1}"#]);
    let event = trace.damaged.events[0];
    assert_eq!((event.correlation, event.name), (CorrelationId::NONE, None));
}

#[test]
fn other_categories_with_bad_times_are_not_damage() {
    let trace = read_events(&[
        r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":5,"dur":-1}"#,
        r#"{"ph":"X","cat":"python_function","name":"f","ts":"NaN","dur":1}"#,
        r#"{"ph":"X","cat":"ac2g","name":"f","dur":1}"#,
    ]);
    assert!(trace.damaged.is_empty(), "{:?}", trace.damaged);
    assert_eq!(trace.counts.cpu_ops, 1);
    assert_eq!(trace.counts.python_functions, 1);
}

#[test]
fn gpu_and_runtime_events_in_another_phase_are_damage() {
    let cases = [
        (r#""ph":"B","cat":"kernel""#, DamagedTable::Gpu),
        (r#""ph":"i","cat":"gpu_memcpy""#, DamagedTable::Gpu),
        (r#""ph":"Q","cat":"kernel""#, DamagedTable::Gpu),
        (r#""ph":"E","cat":"cuda_runtime""#, DamagedTable::Runtime),
        (r#""ph":"b","cat":"Runtime""#, DamagedTable::Runtime),
        (r#""cat":"cuda_driver""#, DamagedTable::Runtime),
    ];
    for (fields, table) in cases {
        let event =
            format!(r#"{{{fields},"name":"launch","ts":5,"dur":1,"args":{{"correlation":"77"}}}}"#);
        let trace = read_events(&[&event]);
        assert_eq!(
            only_damage(&trace),
            (
                DamageKind::UnknownPhase,
                table,
                77,
                Some("launch".to_owned())
            ),
            "{event}"
        );
        assert_counted_once(&trace, DamageKind::UnknownPhase);
        assert_eq!(
            table_len(&trace, table),
            usize::from(table == DamagedTable::Gpu)
        );
        assert_eq!(trace.stats.get("unknown_phase_event"), 0, "{event}");
    }
}

#[test]
fn other_events_in_a_phase_chrome_does_not_have_are_counted() {
    let trace = read_events(&[
        r#"{"ph":"Q","cat":"cpu_op","name":"a","ts":5,"dur":1}"#,
        r#"{"ph":"xx","name":"b","ts":5}"#,
        // Chrome phases stepscope does not read: skipped without a word, as before.
        r#"{"ph":"B","cat":"cpu_op","name":"c","ts":5}"#,
        r#"{"ph":"C","cat":"Memory","name":"d","ts":5}"#,
        r#"{"ph":"(","name":"e","ts":5}"#,
        r#"{"cat":"cpu_op","name":"f","ts":5}"#,
    ]);
    assert!(trace.damaged.is_empty(), "{:?}", trace.damaged);
    let counter = &trace.stats.counters["unknown_phase_event"];
    assert_eq!((counter.count, counter.severity), (2, Severity::Info));
    assert_eq!(trace.stats.get("event_without_phase"), 1);
}

/// Damage found by parallel chunks is joined in file order, names remapped.
#[test]
fn damage_is_the_same_at_any_thread_count() {
    let mut events = Vec::new();
    for i in 0..60_000 {
        events.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k{}","ts":{},"dur":{},"args":{{"correlation":{i}}}}}"#,
            i % 13,
            1000 + i,
            if i % 997 == 0 { -1 } else { 2 }
        ));
    }
    let text = format!(r#"{{"traceEvents":[{}]}}"#, events.join(",\n"));
    assert!(text.len() > 4 << 20, "{} bytes: not split", text.len());
    let trace = read_all_thread_counts(text.as_bytes(), false, &[2, 3])
        .unwrap()
        .unwrap();
    assert_eq!(trace.damaged.count(DamageKind::NegativeDuration), 61);
    let names: Vec<(u64, &str)> = trace
        .damaged
        .events
        .iter()
        .map(|e| (e.correlation.0, trace.name(e.name.unwrap())))
        .collect();
    let expected: Vec<(u64, String)> = (0..60_000u64)
        .filter(|i| i % 997 == 0)
        .map(|i| (i, format!("k{}", i % 13)))
        .collect();
    let expected: Vec<(u64, &str)> = expected.iter().map(|(c, n)| (*c, n.as_str())).collect();
    assert_eq!(names, expected);
}

/// The first event of `category` in the real SGLang decode trace, edited by `edit`: the
/// read records it once as `kind` in `table`, with its correlation id and name, and its
/// table has one row less than the unedited trace's.
fn check_real_edit(
    category: &str,
    edit: impl Fn(&mut Value),
    kind: DamageKind,
    table: DamagedTable,
) {
    let mut real = RealTrace::load(&shared(SGLANG_DECODE));
    let original = real.read();
    let event = real.first_mut(category);
    let correlation = event["args"]["correlation"].as_u64().unwrap_or(0);
    let name = event["name"].as_str().unwrap().to_owned();
    edit(event);
    let edited = real.read();
    assert_eq!(
        only_damage(&edited),
        (kind, table, correlation, Some(name)),
        "{category}"
    );
    assert_counted_once(&edited, kind);
    assert_eq!(table_len(&edited, table) + 1, table_len(&original, table));
    assert!(original.damaged.is_empty());
}

#[test]
fn a_real_kernel_with_a_negative_duration_is_damage() {
    check_real_edit(
        "kernel",
        |e| e["dur"] = json!(-5.5),
        DamageKind::NegativeDuration,
        DamagedTable::Gpu,
    );
}

#[test]
fn a_real_kernel_with_a_nan_start_is_damage() {
    check_real_edit(
        "kernel",
        |e| e["ts"] = json!("NaN"),
        DamageKind::InvalidTime,
        DamagedTable::Gpu,
    );
}

#[test]
fn a_real_memcpy_without_dur_is_damage() {
    let remove = |e: &mut Value| {
        e.as_object_mut().unwrap().remove("dur");
    };
    check_real_edit(
        "gpu_memcpy",
        remove,
        DamageKind::InvalidTime,
        DamagedTable::Gpu,
    );
}

#[test]
fn a_real_runtime_call_with_a_null_start_is_damage() {
    check_real_edit(
        "cuda_runtime",
        |e| e["ts"] = Value::Null,
        DamageKind::InvalidTime,
        DamagedTable::Runtime,
    );
}

#[test]
fn a_real_annotation_with_a_negative_duration_is_damage() {
    check_real_edit(
        "user_annotation",
        |e| e["dur"] = json!(-1),
        DamageKind::NegativeDuration,
        DamagedTable::Annotation,
    );
}

#[test]
fn a_real_kernel_as_a_begin_event_is_damage() {
    check_real_edit(
        "kernel",
        |e| e["ph"] = json!("B"),
        DamageKind::UnknownPhase,
        DamagedTable::Gpu,
    );
}

#[test]
fn a_real_runtime_call_in_an_unknown_phase_is_damage() {
    check_real_edit(
        "cuda_runtime",
        |e| e["ph"] = json!("?"),
        DamageKind::UnknownPhase,
        DamagedTable::Runtime,
    );
}
