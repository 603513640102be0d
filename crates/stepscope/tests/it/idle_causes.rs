//! Each stream's idle time by cause against HolisticTraceAnalysis's own
//! `get_idle_time_breakdown`, run on HTA's test traces (the reference CSVs in
//! `tests/reference/hta/`, with the command and version that wrote them in its README).

use crate::common;
use std::collections::HashSet;
use stepscope_analysis::{AnalysisOptions, KernelCategories, StreamIdleCauses, analyze};
use stepscope_model::Trace;

/// The part of `trace` HTA analyses: with two or more `ProfilerStep#N` annotations, the
/// host events before the last one's start (the last step may be cut short) and the GPU
/// work they launched (HTA's `Trace._filter_irrelevant_gpu_kernels`).
fn hta_scope(mut trace: Trace) -> Trace {
    let steps: Vec<_> = [&trace.annotations, &trace.cpu_ops]
        .into_iter()
        .flat_map(|table| {
            (0..table.name.len())
                .filter(|&row| {
                    trace
                        .names
                        .resolve(table.name[row])
                        .starts_with("ProfilerStep")
                })
                .map(|row| table.start[row])
        })
        .collect();
    let Some(&last) = steps.iter().max().filter(|_| steps.len() >= 2) else {
        return trace;
    };
    let keep: Vec<bool> = trace.runtime.start.iter().map(|&s| s < last).collect();
    let kept: HashSet<u64> = (0..keep.len())
        .filter(|&call| keep[call])
        .map(|call| trace.runtime.correlation[call].0)
        .collect();
    trace.runtime.retain_rows(&keep);
    let keep: Vec<bool> = trace
        .gpu
        .correlation
        .iter()
        .map(|c| kept.contains(&c.0))
        .collect();
    trace.gpu.retain_rows(&keep);
    trace
}

/// HTA's rows (`rank,stream,idle_category,idle_time,idle_time_ratio`): (stream, category,
/// µs).
fn reference(name: &str) -> Vec<(u32, String, f64)> {
    let path = format!(
        "{}/tests/reference/hta/{name}.idle.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let stream = cells[1].parse().expect("a stream number");
            let time = cells[3].parse().expect("µs");
            (stream, cells[2].to_owned(), time)
        })
        .collect()
}

fn micros(causes: &StreamIdleCauses, category: &str) -> f64 {
    let causes = &causes.causes;
    let time = match category {
        "host_wait" => causes.host_wait,
        "kernel_wait" => causes.kernel_wait,
        "other" => causes.other,
        other => panic!("a category HTA did not write before: {other}"),
    };
    time.as_micros_f64()
}

/// Every HTA row within 1 % of its stream's idle time (10 ns at the least), and no stream
/// HTA leaves out.
fn assert_matches_hta(trace: &str, name: &str) {
    let table = KernelCategories::embedded();
    let analysis = analyze(
        &hta_scope(common::read(trace)),
        &AnalysisOptions::new(&table),
    );
    let streams = &analysis.idle_causes.streams;
    let rows = reference(name);
    assert!(!rows.is_empty(), "{name}: HTA found no idle time");
    for (stream, category, expected) in &rows {
        let ours = streams
            .iter()
            .find(|s| s.stream.0 == *stream)
            .unwrap_or_else(|| panic!("{name}: no stream {stream}"));
        let got = micros(ours, category);
        let allowed = (0.01 * ours.causes.idle().as_micros_f64()).max(0.01);
        assert!(
            (got - expected).abs() <= allowed,
            "{name}: stream {stream} {category} {got} µs, HTA {expected} µs"
        );
    }
    for ours in streams.iter().filter(|s| s.events > 1) {
        assert!(
            rows.iter().any(|(stream, ..)| *stream == ours.stream.0),
            "{name}: stream {} is not in HTA's rows",
            ours.stream.0
        );
    }
}

#[test]
fn idle_causes_match_hta_on_its_own_traces() {
    for (trace, name) in [
        (
            "hta/tests/data/negative_queue_length_values_check/rank0.json.gz",
            "negative_queue_length_values_check",
        ),
        (
            "hta/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
            "amd_trace",
        ),
    ] {
        assert_matches_hta(trace, name);
    }
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn idle_causes_match_hta_on_its_larger_traces() {
    for (trace, name) in [
        (
            "hta/tests/data/trace_diff/control/control.json.gz",
            "control",
        ),
        (
            "hta/tests/data/df_index_resolver/df_index_resolver.json.gz",
            "df_index_resolver",
        ),
    ] {
        assert_matches_hta(trace, name);
    }
}

/// HTA's launch rows (`correlation,cpu_duration,gpu_duration,launch_delay`, µs), gzipped.
fn launch_reference(name: &str) -> Vec<(u64, [f64; 3])> {
    use std::io::Read;
    let path = format!(
        "{}/tests/reference/hta/{name}.launch.csv.gz",
        env!("CARGO_MANIFEST_DIR")
    );
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gzip CSV");
    text.lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<f64> = line
                .split(',')
                .map(|c| c.parse().expect("a number"))
                .collect();
            (cells[0] as u64, [cells[1], cells[2], cells[3]])
        })
        .collect()
}

/// Every launch HTA counts has our CPU time, GPU time and delay, to the nanosecond HTA
/// prints; we count no fewer.
fn assert_launches_match_hta(trace: &str, name: &str) {
    use std::collections::HashMap;
    let table = KernelCategories::embedded();
    let parsed = hta_scope(common::read(trace));
    let analysis = analyze(&parsed, &AnalysisOptions::new(&table));
    let mut ours: HashMap<u64, Vec<[f64; 3]>> = HashMap::new();
    for launch in &analysis.launches.eager {
        let correlation = parsed.runtime.correlation[launch.call as usize].0;
        let row = [launch.cpu, launch.gpu, launch.delay].map(|d| d.as_micros_f64());
        ours.entry(correlation).or_default().push(row);
    }
    let rows = launch_reference(name);
    assert!(rows.len() > 1000, "{name}: {} rows", rows.len());
    for (correlation, expected) in &rows {
        let candidates = ours
            .get(correlation)
            .unwrap_or_else(|| panic!("{name}: no launch of correlation {correlation}"));
        assert!(
            candidates.iter().any(|got| got
                .iter()
                .zip(expected)
                .all(|(g, e)| (g - e).abs() <= 0.0015)),
            "{name}: correlation {correlation}: ours {candidates:?}, HTA {expected:?}"
        );
    }
    assert!(analysis.launches.eager.len() >= rows.len(), "{name}");
}

#[test]
fn launch_statistics_match_hta_on_its_own_trace() {
    assert_launches_match_hta(
        "hta/tests/data/negative_queue_length_values_check/rank0.json.gz",
        "negative_queue_length_values_check",
    );
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn launch_statistics_match_hta_on_its_larger_traces() {
    for (trace, name) in [
        (
            "hta/tests/data/trace_diff/control/control.json.gz",
            "control",
        ),
        (
            "hta/tests/data/df_index_resolver/df_index_resolver.json.gz",
            "df_index_resolver",
        ),
    ] {
        assert_launches_match_hta(trace, name);
    }
}

/// The stages' idle time, within and between their steps, and the gaps outside steps, add
/// up to the streams' idle time to the nanosecond; and the streams' causes to their idle.
#[test]
fn stage_idle_adds_up_to_the_streams_idle() {
    let table = KernelCategories::embedded();
    for trace in [
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
        "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "hta/tests/data/negative_queue_length_values_check/rank0.json.gz",
    ] {
        let analysis = analyze(&common::read(trace), &AnalysisOptions::new(&table));
        let idle = &analysis.idle_causes;
        let total = idle.total();
        assert!(total.idle() > stepscope_model::Duration::ZERO, "{trace}");
        assert!(!idle.stages.is_empty(), "{trace}: no stage");
        let staged: stepscope_model::Duration = idle
            .stages
            .iter()
            .map(|s| s.within_steps.idle() + s.between_steps)
            .sum();
        assert_eq!(staged + idle.outside_steps, total.idle(), "{trace}");
        assert!(total.host_wait_after_sync <= total.host_wait, "{trace}");
    }
}

/// Two kernels on one stream, the second launched after the first ended: host wait; after a
/// sync when the launching thread's `cudaStreamSynchronize` returned inside the gap, not
/// when the thread's sync returned before the first kernel ended, and kernel wait when
/// the second kernel was queued before the first ended.
#[test]
fn a_sync_that_returns_inside_the_gap_is_host_wait_after_a_sync() {
    use stepscope_ingest::{ReadOptions, read_trace_bytes};
    let trace = |sync: (u32, u32), second_launch: u32| -> String {
        let call = |name: &str, ts: u32, dur: u32, correlation: u32| {
            format!(
                r#"{{"ph":"X","cat":"cuda_runtime","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{"correlation":{correlation}}}}}"#
            )
        };
        let kernel = |ts: u32, correlation: u32| {
            format!(
                r#"{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{ts},"dur":10,"args":{{"device":0,"stream":7,"correlation":{correlation}}}}}"#
            )
        };
        let events = [
            call("cudaLaunchKernel", 0, 2, 1),
            kernel(10, 1),
            call("cudaStreamSynchronize", sync.0, sync.1 - sync.0, 0),
            call("cudaLaunchKernel", second_launch, 2, 2),
            kernel(30, 2),
        ];
        format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))
    };
    let table = KernelCategories::embedded();
    let causes = |json: String| {
        let parsed = read_trace_bytes(json.as_bytes(), &ReadOptions::default()).expect("reads");
        let analysis = analyze(&parsed, &AnalysisOptions::new(&table));
        analysis.idle_causes.total()
    };
    let micros = |us: i64| stepscope_model::Duration::from_nanos(us * 1000);
    // The sync returns at 21, inside the gap 20..30; the launch comes at 25.
    let after_sync = causes(trace((5, 21), 25));
    assert_eq!(after_sync.host_wait, micros(10));
    assert_eq!(after_sync.host_wait_after_sync, micros(10));
    // The sync returned at 8, before the first kernel ended: a late launch, not a sync.
    let late = causes(trace((5, 8), 25));
    assert_eq!(late.host_wait, micros(10));
    assert_eq!(late.host_wait_after_sync, micros(0));
    // Launched at 12, before the first kernel ended at 20: queued; a 10 µs gap.
    let queued = causes(trace((3, 4), 12));
    assert_eq!(queued.host_wait, micros(0));
    assert_eq!(queued.kernel_wait, micros(10));
}
