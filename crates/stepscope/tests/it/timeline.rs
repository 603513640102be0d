//! The GPU timeline (computation, exposed communication and copies, idle) against
//! TraceLens's own `gpu_timeline.csv` for every reference trace that has one.

use crate::common;
use stepscope_analysis::{AnalysisOptions, GpuTimeline, KernelCategories, StageKey, analyze};
use stepscope_model::Duration;

/// (trace, TraceLens's gpu_timeline.csv), under `tracelens/tests/traces/`.
const REFERENCES: [(&str, &str); 10] = [
    (
        "mi210/gpu_only_trace/gpu_only_trace.json.gz",
        "mi210/gpu_only_trace/gpu_only_trace_perf_report_csvs",
    ),
    (
        "h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "h100/Qwen_Qwen1.5-0.5B-Chat__1016005_perf_report_csvs",
    ),
    (
        "mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "mi300/Qwen_Qwen1.5-0.5B-Chat__1016005_perf_report_csvs",
    ),
    (
        "mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz",
        "mi300/google_owlv2-large-patch14-ensemble__1016001_perf_report_csvs",
    ),
    (
        "torch_compile_triton/trace.json.gz",
        "torch_compile_triton/trace_perf_report_csvs",
    ),
    (
        "inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
        "inference/sglang_prefilldecode/perf_csvs",
    ),
    (
        "inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "inference/sglang_decode/perf_csvs",
    ),
    (
        "inference/vllm_decode_full/graph_execution.json.gz",
        "inference/vllm_decode_full/perf_csvs",
    ),
    (
        "inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
        "inference/vllm_prefilldecode_piecewise/perf_csvs",
    ),
    (
        "inference/xdit_sd_3.5/profile_trace_rank_0.json.gz",
        "inference/xdit_sd_3.5/perf_csvs",
    ),
];

/// TraceLens's rows (`type,time ms,percent`), in ms by type.
fn reference(csv: &str) -> Vec<(String, f64)> {
    let text = std::fs::read_to_string(common::shared(csv)).expect("reference CSV");
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut cells = line.split(',');
            Some((cells.next()?.to_owned(), cells.next()?.parse().ok()?))
        })
        .collect()
}

fn ms(duration: Duration) -> f64 {
    duration.as_nanos() as f64 / 1e6
}

/// Each TraceLens row's value from a timeline.
fn row(timeline: &GpuTimeline, name: &str) -> f64 {
    ms(match name {
        "computation_time" => timeline.computation,
        "exposed_comm_time" => timeline.exposed_comm,
        "exposed_memcpy_time" => timeline.exposed_memcpy,
        "busy_time" => timeline.busy,
        "idle_time" => timeline.idle,
        "total_time" => timeline.total,
        "total_comm_time" => timeline.total_comm,
        "total_memcpy_time" => timeline.total_memcpy,
        other => panic!("a row TraceLens did not write before: {other}"),
    })
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn every_row_of_tracelens_gpu_timeline_within_a_thousandth_of_the_total() {
    let table = KernelCategories::embedded();
    for (trace, csvs) in REFERENCES {
        let trace_path = format!("tracelens/tests/traces/{trace}");
        let analysis = analyze(&common::read(&trace_path), &AnalysisOptions::new(&table));
        let timeline = analysis.timeline.expect("GPU events");
        let rows = reference(&format!("tracelens/tests/traces/{csvs}/gpu_timeline.csv"));
        assert_eq!(rows.len(), 8, "{csvs}");
        let total = row(&timeline, "total_time");
        for (name, expected) in rows {
            let got = row(&timeline, &name);
            assert!(
                (got - expected).abs() <= 0.001 * total,
                "{trace}: {name} {got} ms, TraceLens {expected} ms"
            );
        }
        // The parts are the span, to the nanosecond.
        assert_eq!(
            timeline.computation + timeline.exposed_comm + timeline.exposed_memcpy + timeline.idle,
            timeline.total,
            "{trace}"
        );
    }
}

/// Each stage's timeline is the sum of its steps', and each step's parts are its window.
#[test]
fn a_stages_timeline_is_its_steps_and_each_step_sums_to_its_window() {
    let table = KernelCategories::embedded();
    let trace = common::read(
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    );
    let analysis = analyze(&trace, &AnalysisOptions::new(&table));
    let mut steps = 0;
    for stage in &analysis.breakdown.stages {
        let Some(timeline) = stage.timeline else {
            continue;
        };
        if stage.stage != StageKey::Unassigned && !stage.step_timelines.is_empty() {
            let sum = stage
                .step_timelines
                .iter()
                .copied()
                .reduce(GpuTimeline::plus)
                .unwrap();
            assert_eq!(sum, timeline, "{:?}", stage.stage);
            assert_eq!(stage.step_timelines.len(), stage.step_gpu_times.len());
            assert_eq!(timeline.total, stage.window, "{:?}", stage.stage);
            steps += stage.step_timelines.len();
        }
        for part in stage.step_timelines.iter().chain([&timeline]) {
            assert_eq!(
                part.computation + part.exposed_comm + part.exposed_memcpy + part.idle,
                part.total
            );
        }
    }
    assert!(steps > 0, "the trace has steps with GPU work");
}
