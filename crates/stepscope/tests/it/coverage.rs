//! Replay coverage on real traces as recorded, and on real traces edited in the test (no
//! public trace shows the ROCm symptom, so it is made here from real files).

use crate::common;
use crate::variants::{TraceDoc, WITH_REPLAYS, analyse, ranges_hold};
use serde_json::Value;
use stepscope_analysis::captured_graphs;
use stepscope_analysis::{Evidence, SizeSource, Unverified};
use stepscope_analysis::{ReplayCoverage, ReplayStatus, Verdict};
use stepscope_synth::removal::{Removal, graph_launches, remove_replay_kernels};

const PIECEWISE: &str = WITH_REPLAYS[1].1;
const HTA_GRAPHS: &str = WITH_REPLAYS[0].1;

fn coverage(relative: &str) -> ReplayCoverage {
    let doc = TraceDoc::load(relative);
    analyse(&doc.doc, &[]).coverage
}

fn statuses(coverage: &ReplayCoverage) -> Vec<ReplayStatus> {
    coverage.replays.iter().map(|r| r.status).collect()
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn shared_traces_are_complete_or_say_which_sizes_rest_on_one_replay() {
    let hta = coverage(HTA_GRAPHS);
    assert_eq!(hta.verdict, Verdict::Complete);
    assert_eq!(hta.totals.complete_replays, 70);
    // Each of its 14 graphs is recorded identically 5 times, at one slot of 5 ProfilerSteps.
    assert!(
        hta.replays
            .iter()
            .all(|r| matches!(r.evidence, Some(Evidence::StepSlot { other_steps: 4, .. }))),
        "{:?}",
        hta.replays.iter().map(|r| r.evidence).collect::<Vec<_>>()
    );
    for (name, path) in &WITH_REPLAYS[2..4] {
        let single = coverage(path);
        assert_eq!(single.verdict, Verdict::Unverified, "{name}");
        assert_eq!(
            single.replays[0].unverified,
            Some(Unverified::SoleReplay),
            "{name}"
        );
        assert_eq!(single.replays[0].expected.high, None, "{name}");
    }
    // xdit's capture in the same file holds 994 launches, its replay recorded the first 993
    // in capture order: the last launch never ran as a node, or its kernel was lost.
    let xdit = coverage(WITH_REPLAYS[4].1);
    assert_eq!(xdit.verdict, Verdict::Unverified);
    assert_eq!(
        xdit.replays[0].unverified,
        Some(Unverified::CaptureHoldsMore { nodes: 994 })
    );
    assert_eq!(
        (xdit.replays[0].expected.low, xdit.replays[0].expected.high),
        (993, Some(994))
    );
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn capture_traces_give_no_replays() {
    for path in [
        "tracelens/tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz",
        "tracelens/tests/traces/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz",
    ] {
        assert_eq!(coverage(path).verdict, Verdict::NoReplays, "{path}");
    }
}

/// The last layer's 12-kernel piece is a prefix of the 15-kernel layer graph; it is its own
/// graph because the GPU stream has no idle time after it where 3 more nodes could have run.
#[test]
fn piecewise_prefix_graph_is_not_a_short_replay() {
    let c = coverage(PIECEWISE);
    let sizes: Vec<u32> = c.graphs.iter().filter_map(|g| g.expected_nodes).collect();
    assert_eq!(sizes, [4, 15, 12]);
    assert_eq!(c.totals.short_replays, 0);
    let s = statuses(&c);
    assert_eq!(
        (s[0], s[24]),
        (ReplayStatus::Unverified, ReplayStatus::Unverified)
    );
    assert!(s[1..24].iter().all(|s| *s == ReplayStatus::Complete));
    assert_eq!(c.replays[24].unverified, Some(Unverified::SoleReplay));
    assert_eq!(c.graphs[1].size_source, Some(SizeSource::Repeated(23)));
}

#[test]
fn one_replay_losing_five_kernels_is_short_by_its_neighbours() {
    let mut doc = TraceDoc::load(PIECEWISE).doc;
    assert_eq!(
        remove_replay_kernels(&mut doc, 10, &Removal::Nth(vec![1, 4, 7, 10, 13])),
        5
    );
    let c = analyse(&doc, &[]).coverage;
    assert_eq!(c.verdict, Verdict::Incomplete);
    let short = &c.replays[10];
    assert_eq!(
        (short.status, short.recorded_nodes, short.expected.exact()),
        (ReplayStatus::Short, 10, Some(15))
    );
    assert_eq!(short.evidence, Some(Evidence::Neighbours));
    assert!(short.missing_time.low.as_nanos() > 0);
    let graph = &c.graphs[short.graph.expect("matched to a graph")];
    assert_eq!((graph.totals.replays, graph.totals.short_replays), (23, 1));
}

/// The first replay of a run of 23 has no replay of its graph before it: the idle time its
/// lost kernels leave on the stream (~3 ms, where the graph's replays leave ~13 µs) shows it.
#[test]
fn the_first_replay_of_a_run_losing_its_second_half_is_short_by_its_idle_gap() {
    let doc = TraceDoc::load(PIECEWISE);
    let rows = &doc.launches[1];
    let (halved, truth) = doc.without(&rows[7..].iter().copied().collect());
    let c = analyse(&halved, &[]).coverage;
    assert_eq!(c.verdict, Verdict::Incomplete);
    assert_eq!(c.replays[1].status, ReplayStatus::Short);
    let Some(Evidence::IdleGap {
        idle,
        needed,
        typical,
    }) = c.replays[1].evidence
    else {
        panic!("{:?}", c.replays[1].evidence);
    };
    assert!(
        idle.as_nanos() > 1_000_000 && typical.as_nanos() < 50_000,
        "{idle} {typical}"
    );
    assert!(needed.as_nanos() > 0);
    assert!(
        ranges_hold(&c, &truth).is_empty(),
        "{:?}",
        ranges_hold(&c, &truth)
    );
}

#[test]
fn a_single_empty_replay_takes_its_size_from_a_capture() {
    let doc = TraceDoc::load(WITH_REPLAYS[2].1);
    let (emptied, _) = doc.without(&doc.launches[0].iter().copied().collect());
    let without = analyse(&emptied, &[]).coverage;
    assert_eq!(without.verdict, Verdict::Incomplete);
    assert_eq!(without.replays[0].graph, None);
    assert_eq!(without.replays[0].expected.high, None);
    let capture = captured_graphs(&common::read(
        "tracelens/tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz",
    ));
    let with = analyse(&emptied, &capture).coverage;
    assert_eq!(
        (with.replays[0].expected.low, with.replays[0].expected.high),
        (543, Some(544))
    );
    let completeness = with.totals.completeness();
    assert_eq!((completeness.low, completeness.high), (0.0, Some(0.0)));
}

#[test]
fn a_capture_corroborates_the_complete_sglang_replay() {
    let capture = captured_graphs(&common::read(
        "tracelens/tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz",
    ));
    let c = analyse(&TraceDoc::load(WITH_REPLAYS[2].1).doc, &capture).coverage;
    assert_eq!(c.verdict, Verdict::Complete);
    assert_eq!(c.graphs[0].expected_nodes, Some(544));
    assert_eq!(
        c.replays[0].evidence,
        Some(Evidence::Capture { nodes: 544 })
    );
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
    let target = graph_launches(&doc)[3].correlation;
    let events = events_mut(&mut doc);
    let mut steps: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| {
            e["cat"] == "user_annotation"
                && e["name"].as_str().is_some_and(|n| n.starts_with("step["))
        })
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (ts, ts + e["dur"].as_f64().unwrap())
        })
        .collect();
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    let first_kernel = events
        .iter()
        .filter(|e| is_gpu(e) && correlation(e) == Some(target))
        .map(|e| e["ts"].as_f64().unwrap())
        .fold(f64::MAX, f64::min);
    let step_index = steps.iter().rposition(|s| s.0 <= first_kernel).unwrap();
    let shift = steps[step_index + 2].1 - first_kernel + 10.0;
    for event in events
        .iter_mut()
        .filter(|e| is_gpu(e) && correlation(e) == Some(target))
    {
        let ts = event["ts"].as_f64().unwrap();
        event["ts"] = serde_json::json!(ts + shift);
    }
    let c = analyse(&doc, &[]).coverage;
    assert_eq!(c.totals.deferred_replays, 1);
    assert!(c.replays[3].deferred);
    assert_eq!(c.totals.short_replays + c.totals.empty_replays, 0);
}

#[test]
fn swapped_kernels_are_an_order_mismatch() {
    let mut doc = TraceDoc::load(PIECEWISE).doc;
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
    let c = analyse(&doc, &[]).coverage;
    assert_eq!(c.totals.order_mismatches, 1);
    assert!(c.replays[5].order_mismatch);
    assert_eq!(c.replays[5].status, ReplayStatus::Complete);
    assert_eq!(
        c.graphs.len(),
        3,
        "the reordered replay stays with its graph"
    );
}

#[test]
fn an_eager_launch_with_two_kernels_is_reported() {
    let mut doc = TraceDoc::load(
        "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
    )
    .doc;
    let events = events_mut(&mut doc);
    let kernels: Vec<usize> = (0..events.len())
        .filter(|&i| events[i]["cat"] == "kernel")
        .collect();
    let shared = correlation(&events[kernels[10]]).unwrap();
    events[kernels[11]]["args"]["correlation"] = serde_json::json!(shared);
    let c = analyse(&doc, &[]).coverage;
    assert_eq!(c.multi_kernel_launches.len(), 1);
    assert_eq!(
        (
            c.multi_kernel_launches[0].launches,
            c.multi_kernel_launches[0].max_events
        ),
        (1, 2)
    );
}

#[test]
fn a_short_replay_among_many_steps_is_matched_by_its_slot() {
    let spec = stepscope_synth::demo::DemoSpec::default();
    let bytes = stepscope_synth::demo::generate(&spec, stepscope_synth::demo::Symptom::None);
    let mut doc: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(remove_replay_kernels(&mut doc, 10, &Removal::LastN(40)), 40);
    let c = analyse(&doc, &[]).coverage;
    assert_eq!(c.verdict, Verdict::Incomplete);
    assert_eq!(c.graphs.len(), 1);
    let short = &c.replays[10];
    assert_eq!(short.status, ReplayStatus::Short);
    assert_eq!(
        short.expected.exact().map(|e| e - short.recorded_nodes),
        Some(40)
    );
    assert!(
        matches!(
            short.evidence,
            Some(Evidence::StepSlot {
                position: 0,
                launches: 1,
                ..
            })
        ),
        "{:?}",
        short.evidence
    );
    assert_eq!(c.slot_labels[0], "sglang:DECODE bs=32");
    assert!(short.missing_time.low.as_nanos() > 0);
}

/// A trace of the GPU side only (the host's runtime events not recorded) cannot show
/// replays: made here from the real piecewise vLLM trace (25 replays) by deleting every
/// `cuda_runtime`/`cuda_driver` event. "no-replays" would tell the user the run had none.
#[test]
fn gpu_work_without_host_calls_is_unavailable_not_no_replays() {
    let mut doc = TraceDoc::load(PIECEWISE).doc;
    let events = doc["traceEvents"].as_array_mut().expect("events");
    events.retain(|e| {
        !matches!(
            e["cat"].as_str().map(str::to_ascii_lowercase).as_deref(),
            Some("cuda_runtime" | "cuda_driver")
        )
    });
    let c = analyse(&doc, &[]).coverage;
    assert_eq!(c.verdict, Verdict::Unavailable);
    assert!(c.verdict.fails_gate(false));
    assert_eq!(c.totals.replays, 0);
    let reason = c.unavailable.expect("a reason");
    assert!(reason.contains("no host call"), "{reason}");
}
