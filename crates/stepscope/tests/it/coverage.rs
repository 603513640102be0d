//! Replay coverage on real traces, and on real traces with replays' kernels removed in the
//! test itself (no public trace shows the ROCm symptom, so it is made here from real files).

use crate::common;
use serde_json::Value;
use stepscope_analysis::passes::capture_graphs::{CapturedGraph, captured_graphs};
use stepscope_analysis::passes::kernel_categories::KernelCategories;
use stepscope_analysis::passes::replay_coverage::{ReplayCoverage, ReplayStatus, Verdict};
use stepscope_analysis::{AnalysisOptions, analyze};
use stepscope_ingest::{ReadOptions, read_trace_bytes};
use stepscope_model::Trace;
use stepscope_synth::removal::{
    Removal, graph_launches, keep_only, read_json, remove_replay_kernels, to_json_bytes,
};

const PIECEWISE: &str =
    "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz";
const SGLANG_DECODE: &str =
    "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";
const SGLANG_CAPTURE: &str =
    "tracelens/tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz";
const HTA_GRAPHS: &str = "hta/tests/data/negative_queue_length_values_check/rank0.json.gz";

fn coverage_of(trace: &Trace, capture: &[CapturedGraph]) -> ReplayCoverage {
    let table = KernelCategories::embedded();
    analyze(
        trace,
        &AnalysisOptions {
            categories: &table,
            capture,
        },
    )
    .coverage
}

fn coverage_of_doc(doc: &Value, capture: &[CapturedGraph]) -> ReplayCoverage {
    let trace = read_trace_bytes(&to_json_bytes(doc), &ReadOptions::default())
        .expect("modified trace reads");
    coverage_of(&trace, capture)
}

fn load(relative: &str) -> Value {
    read_json(&common::shared(relative)).expect("real trace reads")
}

fn status_counts(coverage: &ReplayCoverage) -> (usize, usize, usize) {
    let count = |status| {
        coverage
            .replays
            .iter()
            .filter(|r| r.status == status)
            .count()
    };
    (
        count(ReplayStatus::Complete),
        count(ReplayStatus::Short),
        count(ReplayStatus::Empty),
    )
}

#[test]
fn every_shared_trace_is_complete_or_has_no_replays() {
    let with_replays = [
        SGLANG_DECODE,
        PIECEWISE,
        HTA_GRAPHS,
        "tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz",
        "tracelens/tests/traces/inference/xdit_flux.1/capture_traces/capture_trace_rank_0.json.gz",
    ];
    for path in with_replays {
        let coverage = coverage_of(&common::read(path), &[]);
        assert_eq!(
            coverage.verdict,
            Verdict::Complete,
            "{path}: {:?}",
            coverage.totals
        );
        assert!(
            coverage.replays.iter().all(|r| r.evidence.is_none()),
            "{path}: no replay needed evidence"
        );
    }
}

#[test]
fn capture_traces_give_no_replays() {
    for path in [
        SGLANG_CAPTURE,
        "tracelens/tests/traces/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz",
    ] {
        assert_eq!(
            coverage_of(&common::read(path), &[]).verdict,
            Verdict::NoReplays,
            "{path}"
        );
    }
}

#[test]
fn piecewise_prefix_graph_is_not_a_short_replay() {
    let coverage = coverage_of(&common::read(PIECEWISE), &[]);
    let sizes: Vec<Option<u32>> = coverage.graphs.iter().map(|g| g.expected_nodes).collect();
    assert_eq!(sizes, [Some(4), Some(15), Some(12)]);
    assert_eq!(status_counts(&coverage), (25, 0, 0));
}

#[test]
fn hta_cycle_of_small_graphs_is_complete() {
    let coverage = coverage_of(&common::read(HTA_GRAPHS), &[]);
    assert_eq!(coverage.totals.replays, 70);
    assert_eq!(status_counts(&coverage), (70, 0, 0));
    assert!(
        coverage.graphs.iter().all(|g| g.totals.replays == 5),
        "each graph replayed 5 times"
    );
}

#[test]
fn all_but_the_last_replay_lose_their_kernels() {
    let mut doc = load(PIECEWISE);
    let launches = graph_launches(&doc).len();
    assert_eq!(launches, 25);
    keep_only(&mut doc, |i| i == launches - 1);
    let coverage = coverage_of_doc(&doc, &[]);
    assert_eq!(coverage.verdict, Verdict::Incomplete);
    assert_eq!(coverage.totals.empty_replays, 24);
    assert_eq!(coverage.totals.recorded_replays, 1);
}

#[test]
fn every_third_replay_keeps_its_kernels() {
    let mut doc = load(PIECEWISE);
    keep_only(&mut doc, |i| i % 3 == 0);
    let coverage = coverage_of_doc(&doc, &[]);
    assert_eq!(coverage.verdict, Verdict::Incomplete);
    assert_eq!(coverage.totals.recorded_replays, 9);
    assert_eq!(coverage.totals.empty_replays, 16);
    // Empty replays between two recorded replays of the 15-node graph are matched to it.
    let matched = coverage
        .replays
        .iter()
        .filter(|r| r.status == ReplayStatus::Empty && r.expected_nodes == Some(15))
        .count();
    assert!(
        matched >= 10,
        "{matched} empty replays matched to the 15-node graph"
    );
}

#[test]
fn one_replay_losing_five_kernels_is_found_and_matched() {
    let mut doc = load(PIECEWISE);
    let target = 10;
    assert_eq!(graph_launches(&doc)[target].gpu_events, 15);
    assert_eq!(
        remove_replay_kernels(&mut doc, target, &Removal::Nth(vec![1, 4, 7, 10, 13])),
        5
    );
    let coverage = coverage_of_doc(&doc, &[]);
    assert_eq!(coverage.verdict, Verdict::Incomplete);
    assert_eq!(status_counts(&coverage), (24, 1, 0));
    let short = &coverage.replays[target];
    assert_eq!(
        (short.status, short.recorded_nodes, short.expected_nodes),
        (ReplayStatus::Short, 10, Some(15))
    );
    assert!(short.evidence.is_some(), "the report gives the evidence");
    let graph = &coverage.graphs[short.graph.expect("matched to a graph")];
    assert_eq!(
        (
            graph.expected_nodes,
            graph.totals.replays,
            graph.totals.short_replays
        ),
        (Some(15), 23, 1)
    );
}

#[test]
fn single_sglang_replay_losing_everything_uses_the_capture_count() {
    let mut doc = load(SGLANG_DECODE);
    assert_eq!(
        remove_replay_kernels(&mut doc, 0, &Removal::AllKernels),
        544
    );
    let without = coverage_of_doc(&doc, &[]);
    assert_eq!(without.verdict, Verdict::Incomplete);
    assert_eq!(
        (without.totals.replays, without.totals.recorded_replays),
        (1, 0)
    );
    assert_eq!(without.replays[0].expected_nodes, None);
    let capture = captured_graphs(&common::read(SGLANG_CAPTURE));
    assert_eq!(capture.iter().map(|c| c.nodes).collect::<Vec<_>>(), [544]);
    let with = coverage_of_doc(&doc, &capture);
    assert_eq!(with.replays[0].expected_nodes, Some(544));
    assert_eq!(with.totals.expected_nodes, 544);
    assert_eq!(with.totals.completeness(), 0.0);
}

#[test]
fn capture_trace_confirms_the_complete_sglang_replay() {
    let capture = captured_graphs(&common::read(SGLANG_CAPTURE));
    let coverage = coverage_of(&common::read(SGLANG_DECODE), &capture);
    assert_eq!(coverage.verdict, Verdict::Complete);
    assert_eq!(coverage.graphs[0].expected_nodes, Some(544));
}

fn events_mut(doc: &mut Value) -> &mut Vec<Value> {
    doc["traceEvents"].as_array_mut().expect("object form")
}

fn correlation(event: &Value) -> Option<u64> {
    event["args"]["correlation"].as_u64()
}

fn is_gpu(event: &Value) -> bool {
    matches!(
        event["cat"].as_str(),
        Some("kernel" | "gpu_memcpy" | "gpu_memset")
    )
}

#[test]
fn kernels_arriving_after_the_next_step_are_a_deferred_burst() {
    let spec = stepscope_synth::demo::DemoSpec::default();
    let mut doc: Value = serde_json::from_slice(&stepscope_synth::demo::generate(
        &spec,
        stepscope_synth::demo::Symptom::None,
    ))
    .unwrap();
    let launches = graph_launches(&doc);
    let target = launches[3].correlation;
    let events = events_mut(&mut doc);
    let mut steps: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| {
            e["cat"] == "user_annotation"
                && e["name"].as_str().is_some_and(|n| n.starts_with("step["))
        })
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap(),
            )
        })
        .collect();
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    let first_kernel = events
        .iter()
        .filter(|e| is_gpu(e) && correlation(e) == Some(target))
        .map(|e| e["ts"].as_f64().unwrap())
        .fold(f64::MAX, f64::min);
    let step_index = steps.iter().rposition(|s| s.0 <= first_kernel).unwrap();
    // Push the replay's kernels past the end of the step after the one holding its launch.
    let shift = steps[step_index + 2].1 - first_kernel + 10.0;
    for event in events
        .iter_mut()
        .filter(|e| is_gpu(e) && correlation(e) == Some(target))
    {
        let ts = event["ts"].as_f64().unwrap();
        event["ts"] = serde_json::json!(ts + shift);
    }
    let coverage = coverage_of_doc(&doc, &[]);
    assert_eq!(
        coverage.verdict,
        Verdict::Complete,
        "every node is still recorded"
    );
    assert_eq!(coverage.totals.deferred_replays, 1);
    assert!(coverage.replays[3].deferred);
}

#[test]
fn swapped_kernels_are_an_order_mismatch() {
    let mut doc = load(PIECEWISE);
    let target = graph_launches(&doc)[5].correlation;
    let events = events_mut(&mut doc);
    let mut rows: Vec<usize> = (0..events.len())
        .filter(|&i| is_gpu(&events[i]) && correlation(&events[i]) == Some(target))
        .collect();
    rows.sort_by(|&a, &b| {
        events[a]["ts"]
            .as_f64()
            .unwrap()
            .total_cmp(&events[b]["ts"].as_f64().unwrap())
    });
    let (first, last) = (rows[0], rows[rows.len() - 1]);
    let (a, b) = (events[first]["name"].clone(), events[last]["name"].clone());
    events[first]["name"] = b;
    events[last]["name"] = a;
    let coverage = coverage_of_doc(&doc, &[]);
    assert_eq!(coverage.totals.order_mismatches, 1);
    assert!(coverage.replays[5].order_mismatch);
    assert_eq!(coverage.replays[5].status, ReplayStatus::Complete);
    assert_eq!(
        coverage.graphs.len(),
        3,
        "the reordered replay stays with its graph"
    );
}

#[test]
fn an_eager_launch_with_two_kernels_is_reported() {
    let mut doc = load(
        "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
    );
    let events = events_mut(&mut doc);
    let kernels: Vec<usize> = (0..events.len())
        .filter(|&i| events[i]["cat"] == "kernel")
        .collect();
    let shared = correlation(&events[kernels[10]]).unwrap();
    events[kernels[11]]["args"]["correlation"] = serde_json::json!(shared);
    let trace = read_trace_bytes(&to_json_bytes(&doc), &ReadOptions::default()).unwrap();
    let coverage = coverage_of(&trace, &[]);
    assert_eq!(coverage.multi_kernel_launches.len(), 1);
    assert_eq!(
        (
            coverage.multi_kernel_launches[0].launches,
            coverage.multi_kernel_launches[0].max_events
        ),
        (1, 2)
    );
}

#[test]
fn short_replay_among_many_steps_is_matched_by_its_slot() {
    let spec = stepscope_synth::demo::DemoSpec::default();
    let bytes = stepscope_synth::demo::generate(&spec, stepscope_synth::demo::Symptom::None);
    let mut doc: Value = serde_json::from_slice(&bytes).unwrap();
    let removed = remove_replay_kernels(&mut doc, 10, &Removal::LastN(40));
    assert_eq!(removed, 40);
    let coverage = coverage_of_doc(&doc, &[]);
    assert_eq!(coverage.verdict, Verdict::Incomplete);
    assert_eq!(coverage.graphs.len(), 1);
    let short = &coverage.replays[10];
    assert_eq!(short.status, ReplayStatus::Short);
    assert_eq!(
        short.expected_nodes.map(|e| e - short.recorded_nodes),
        Some(40)
    );
    assert!(
        short
            .evidence
            .as_deref()
            .is_some_and(|e| e.contains("other step")),
        "{:?}",
        short.evidence
    );
    assert!(short.missing_time.as_nanos() > 0);
}
