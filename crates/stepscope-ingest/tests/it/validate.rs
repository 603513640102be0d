//! The checks every trace gets after its reader: absurd times refused as damage, exact
//! duplicate GPU events dropped and counted; and nothing of either in any real trace.

use crate::common::{options, read, shared};
use crate::edit::{RealTrace, SGLANG_DECODE};
use serde_json::{Value, json};
use stepscope_ingest::{IngestError, read_trace_file};
use stepscope_model::{DamageKind, DamagedTable, GpuEventKind, Severity, Trace};

/// A real NVIDIA trace whose timestamps are epoch microseconds (≈ 1.68e15 µs).
const HTA_EPOCH: &str = "hta/tests/data/negative_queue_length_values_check/rank0.json.gz";

fn table_len(trace: &Trace, table: DamagedTable) -> usize {
    match table {
        DamagedTable::Gpu => trace.gpu.len(),
        DamagedTable::Runtime => trace.runtime.len(),
        DamagedTable::Annotation => trace.annotations.len() + trace.gpu_annotations.len(),
    }
}

/// Edits the first complete event of `category` in a real trace; the read refuses it as
/// an absurd time, once, with its table, correlation id and name.
fn check_absurd(path: &str, category: &str, table: DamagedTable, edit: impl Fn(&mut Value)) {
    let mut real = RealTrace::load(&shared(path));
    let original = real.read();
    assert!(original.damaged.is_empty());
    let event = real.first_mut(category);
    let correlation = event["args"]["correlation"].as_u64().unwrap_or(0);
    let name = event["name"].as_str().unwrap().to_owned();
    edit(event);
    let edited = real.read();
    assert_eq!(edited.damaged.len(), 1, "{:?}", edited.damaged);
    let damaged = edited.damaged.events[0];
    assert_eq!(
        (damaged.kind, damaged.table, damaged.correlation.0),
        (DamageKind::AbsurdTime, table, correlation)
    );
    assert_eq!(edited.name(damaged.name.unwrap()), name);
    let counter = &edited.stats.counters["absurd_time"];
    assert_eq!((counter.count, counter.severity), (1, Severity::DataLoss));
    assert_eq!(table_len(&edited, table) + 1, table_len(&original, table));
    // The rest of the trace lies within the original's time range.
    let (start, end) = edited.time_range().unwrap();
    let (first, last) = original.time_range().unwrap();
    assert!(first <= start && end <= last);
}

fn add_micros(value: &mut Value, micros: f64) {
    *value = json!(value.as_f64().unwrap() + micros);
}

#[test]
fn a_kernel_at_time_zero_among_epoch_timestamps_is_refused() {
    check_absurd(HTA_EPOCH, "kernel", DamagedTable::Gpu, |e| {
        e["ts"] = json!(0)
    });
}

#[test]
fn a_kernel_whose_clock_is_off_by_a_day_is_refused() {
    // 1e14 ns = 1e11 µs, about 27.8 hours; the trace spans half a second.
    check_absurd(SGLANG_DECODE, "kernel", DamagedTable::Gpu, |e| {
        add_micros(&mut e["ts"], 1e11)
    });
    check_absurd(SGLANG_DECODE, "kernel", DamagedTable::Gpu, |e| {
        add_micros(&mut e["ts"], -1e11)
    });
}

#[test]
fn a_kernel_lasting_eleven_days_is_refused() {
    check_absurd(SGLANG_DECODE, "kernel", DamagedTable::Gpu, |e| {
        e["dur"] = json!(1e12)
    });
}

#[test]
fn runtime_calls_and_annotations_at_absurd_times_are_refused() {
    check_absurd(HTA_EPOCH, "cuda_runtime", DamagedTable::Runtime, |e| {
        e["ts"] = json!(0)
    });
    check_absurd(
        SGLANG_DECODE,
        "user_annotation",
        DamagedTable::Annotation,
        |e| add_micros(&mut e["ts"], 1e11),
    );
}

fn kernel(ts_micros: f64, correlation: u64) -> String {
    format!(
        r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{ts_micros},"dur":2.5,"args":{{"correlation":{correlation},"stream":7}}}}"#
    )
}

fn read_kernels(kernels: &[String]) -> Trace {
    let text = format!(r#"{{"traceEvents":[{}]}}"#, kernels.join(","));
    read(text.as_bytes(), 1, false).unwrap()
}

#[test]
fn timestamps_that_start_near_zero_are_kept() {
    // 500 kernels over the first 10 ms, starting at exactly 0.
    let kernels: Vec<String> = (0..500u32)
        .map(|i| kernel(f64::from(i) * 20.0, i.into()))
        .collect();
    let trace = read_kernels(&kernels);
    assert!(trace.damaged.is_empty(), "{:?}", trace.damaged);
    assert_eq!(trace.gpu.len(), 500);
}

#[test]
fn a_sparse_tail_after_a_short_burst_is_kept() {
    // 1000 kernels in 10 ms at epoch microseconds, then 5 kernels 5 s later.
    let epoch = 1.6e15;
    let mut kernels: Vec<String> = (0..1000u32)
        .map(|i| kernel(epoch + f64::from(i) * 10.0, i.into()))
        .collect();
    kernels.extend((0..5u32).map(|i| kernel(epoch + 5e6 + f64::from(i), 2000 + u64::from(i))));
    let trace = read_kernels(&kernels);
    assert!(trace.damaged.is_empty(), "{:?}", trace.damaged);
    assert_eq!(trace.gpu.len(), 1005);
    // ... while a kernel at 0, or one of 1e12 µs, is not.
    kernels.push(kernel(0.0, 9000));
    kernels.push(kernel(epoch, 9001).replace(r#""dur":2.5"#, r#""dur":1e12"#));
    let trace = read_kernels(&kernels);
    let refused: Vec<u64> = trace
        .damaged
        .events
        .iter()
        .map(|e| e.correlation.0)
        .collect();
    assert_eq!(refused, [9000, 9001]);
    assert_eq!(trace.gpu.len(), 1005);
}

#[test]
fn times_no_clock_writes_are_refused_in_a_trace_of_a_dozen_events() {
    // Too few events for a span worth the name: the absurd kernel would bound it itself.
    let epoch = 1.7e15;
    let mut kernels: Vec<String> = (0..12u32)
        .map(|i| kernel(epoch + f64::from(i) * 10.0, i.into()))
        .collect();
    kernels.push(kernel(1e29, 100));
    kernels.push(kernel(-1e29, 101));
    kernels.push(kernel(epoch, 102).replace(r#""dur":2.5"#, r#""dur":4e12"#));
    let trace = read_kernels(&kernels);
    let refused: Vec<(DamageKind, u64)> = trace
        .damaged
        .events
        .iter()
        .map(|e| (e.kind, e.correlation.0))
        .collect();
    let absurd = DamageKind::AbsurdTime;
    assert_eq!(refused, [(absurd, 100), (absurd, 101), (absurd, 102)]);
    assert_eq!(trace.gpu.len(), 12);
    let (start, end) = trace.time_range().unwrap();
    assert!(
        end.as_nanos() - start.as_nanos() < 1_000_000,
        "{start:?}..{end:?}"
    );
}

#[test]
fn exact_duplicate_gpu_events_are_dropped_and_counted() {
    let original = r#"{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":1000,"dur":5,"args":{"correlation":42,"stream":7,"device":0}}"#;
    // Each differs from the original in one field, so each is kept.
    let near_copies = [
        original.replace(r#""name":"gemm""#, r#""name":"gemv""#),
        original.replace(r#""cat":"kernel""#, r#""cat":"gpu_memset""#),
        original.replace(r#""device":0"#, r#""device":1"#),
        original.replace(r#""stream":7"#, r#""stream":8"#),
        original.replace(r#""ts":1000"#, r#""ts":1000.001"#),
        original.replace(r#""dur":5"#, r#""dur":6"#),
        original.replace(r#""correlation":42"#, r#""correlation":43"#),
    ];
    let mut events = vec![original.to_owned()];
    events.extend(near_copies.iter().cloned());
    // Exact copies, one written differently (keys reordered, numbers as strings).
    events.push(original.to_owned());
    events.push(r#"{"args":{"device":"0","stream":"7","correlation":"42"},"ts":"1000.000","dur":5,"name":"gemm","cat":"kernel","ph":"X","pid":0,"tid":7}"#.to_owned());
    let text = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));
    let trace = read(text.as_bytes(), 1, false).unwrap();
    assert_eq!(trace.gpu.len(), 1 + near_copies.len());
    let counter = &trace.stats.counters["duplicate_gpu_event"];
    assert_eq!((counter.count, counter.severity), (2, Severity::Info));
    assert!(trace.damaged.is_empty(), "not damage: {:?}", trace.damaged);
    // The first is kept, in its place.
    assert_eq!(trace.gpu.correlation[0].0, 42);
    assert_eq!(trace.gpu.stream[4].0, 8);
}

#[test]
fn duplicated_kernels_of_a_real_trace_are_dropped() {
    let mut real = RealTrace::load(&shared(SGLANG_DECODE));
    let original = real.read();
    let events = real.events_mut();
    let copies: Vec<Value> = events
        .iter()
        .filter(|e| e["cat"] == "kernel")
        .step_by(100)
        .cloned()
        .collect();
    events.extend(copies.iter().cloned());
    let edited = real.read();
    assert_eq!(edited.stats.get("duplicate_gpu_event"), copies.len() as u64);
    assert_eq!(format!("{:?}", edited.gpu), format!("{:?}", original.gpu));
    assert!(edited.damaged.is_empty());
}

/// Every real Kineto trace of the trace corpus (`testdata/corpus.tsv`): no damage, no duplicate, no unknown phase.
/// (The rocprofv3 JSON there is another format and is skipped.)
#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn real_traces_have_no_damage_and_no_duplicates() {
    let root = shared("");
    let mut files = Vec::new();
    collect_traces(&root, &mut files);
    files.sort();
    let mut read_count = 0;
    let mut findings = Vec::new();
    for path in &files {
        let trace = match read_trace_file(path, &options(2, false)) {
            Ok(trace) => trace,
            Err(IngestError::UnknownFormat { .. }) => continue,
            Err(error) => panic!("{}: {error}", path.display()),
        };
        read_count += 1;
        let counters = ["duplicate_gpu_event", "unknown_phase_event"].map(|c| trace.stats.get(c));
        if !trace.damaged.is_empty() || counters != [0, 0] {
            findings.push(format!(
                "{}: {:?}, duplicates and unknown phases {counters:?}",
                path.display(),
                trace.damaged.events.iter().take(5).collect::<Vec<_>>()
            ));
        }
    }
    assert!(read_count >= 25, "only {read_count} Kineto traces found");
    assert!(findings.is_empty(), "{findings:#?}");
}

fn collect_traces(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.to_string_lossy();
        if path.is_dir() {
            collect_traces(&path, files);
        } else if name.ends_with(".json") || name.ends_with(".json.gz") {
            files.push(path);
        }
    }
}

/// The legacy 2021 schema and a bare array with numbers written as strings read as before.
#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn legacy_and_string_number_traces_are_unaffected() {
    let legacy = shared(
        "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    );
    let trace = read_trace_file(&legacy, &options(1, false)).unwrap();
    let kernels = trace
        .gpu
        .kind
        .iter()
        .filter(|k| **k == GpuEventKind::Kernel);
    assert_eq!(kernels.count(), 8772);
    assert!(trace.damaged.is_empty());
    // rpd2tracing's array (strings for numbers) read by the Kineto reader, forced: its own
    // reader is `rpd-json` (see rpd.rs).
    let strings = shared("rocmprofiledata/examples/rocm-profile-data/results/matmul_result.json");
    let forced = options(1, false).with_format(Some(stepscope_ingest::TraceFormat::KinetoJson));
    let trace = read_trace_file(&strings, &forced).unwrap();
    assert_eq!(trace.counts.events, 706);
    assert!(trace.damaged.is_empty());
    // Its one event without `ph` is counted as before, not as an unknown phase.
    assert_eq!(trace.stats.get("event_without_phase"), 1);
    assert_eq!(trace.stats.get("unknown_phase_event"), 0);
    let quoted = format!(
        r#"[{}]"#,
        kernel(0.0, 1).replace(r#""ts":0"#, r#""ts":"1683564901548726.5""#)
    );
    let trace = read(quoted.as_bytes(), 1, false).unwrap();
    assert!(trace.damaged.is_empty());
    assert_eq!(trace.gpu.start[0].as_nanos(), 1_683_564_901_548_726_500);
}
