//! Steps, stages and the per-stage breakdown on real traces and on the demo trace.

use crate::common;
use stepscope_analysis::KernelCategories;
use stepscope_analysis::Stage;
use stepscope_analysis::{AnalysisOptions, TraceAnalysis, analyze};
use stepscope_analysis::{AssignmentMethod, StageKey, StageSummary};
use stepscope_ingest::{ReadOptions, read_trace_bytes};
use stepscope_model::Trace;
use stepscope_synth::demo::{DemoSpec, Symptom, facts, generate};

fn analysis(trace: &Trace) -> TraceAnalysis {
    analyze(trace, &AnalysisOptions::new(&KernelCategories::embedded()))
}

fn stage(analysis: &TraceAnalysis, key: StageKey) -> Option<&StageSummary> {
    analysis.breakdown.stages.iter().find(|s| s.stage == key)
}

#[test]
fn sglang_decode_replay_is_decode_work() {
    let trace = common::read(
        "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    );
    let result = analysis(&trace);
    assert_eq!(result.breakdown.method, AssignmentMethod::StepAnnotations);
    let decode = stage(&result, StageKey::Stage(Stage::Decode)).expect("decode stage");
    assert_eq!(decode.steps, 1);
    assert!(
        decode.events >= 544,
        "the replay's 544 kernels are decode work, got {}",
        decode.events
    );
    assert!(result.breakdown.unassigned_share() < 0.02);
    let total: i64 = decode.categories.iter().map(|c| c.time.as_nanos()).sum();
    assert_eq!(
        total,
        decode.gpu_time.as_nanos(),
        "category times add up to the stage's GPU time"
    );
    assert!(decode.busy_time <= decode.gpu_time && decode.idle_time <= decode.window);
}

#[test]
fn sglang_extend_step_is_prefill() {
    let trace = common::read(
        "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
    );
    let result = analysis(&trace);
    let prefill = stage(&result, StageKey::Stage(Stage::Prefill)).expect("prefill stage");
    assert_eq!(prefill.steps, 1);
    assert!(prefill.events > 500);
    assert!(stage(&result, StageKey::Stage(Stage::Decode)).is_none());
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn without_annotations_replayed_kernels_are_decode_and_the_rest_unassigned() {
    // xdit's trace has no step annotations (HTA's training trace has ProfilerStep#N steps).
    let trace = common::read(
        "tracelens/tests/traces/inference/xdit_flux.1/capture_traces/capture_trace_rank_0.json.gz",
    );
    let result = analysis(&trace);
    assert_eq!(result.breakdown.method, AssignmentMethod::ReplaysAsDecode);
    let replayed: u64 = result
        .coverage
        .replays
        .iter()
        .map(|r| u64::from(r.recorded_nodes))
        .sum();
    let decode = stage(&result, StageKey::Stage(Stage::Decode)).expect("decode stage");
    assert_eq!(decode.events, replayed);
    let unassigned = stage(&result, StageKey::Unassigned).expect("unassigned");
    assert_eq!(decode.events + unassigned.events, trace.gpu.len() as u64);
    assert!(
        result.breakdown.unassigned_share() > 0.3,
        "the capture run and the eager work around the replay are unassigned"
    );
}

#[test]
fn vllm_cpu_run_steps_have_stages() {
    // A real vLLM 0.32 CPU server, two completions of 8 tokens: 14 steps with one request
    // generating, 2 with its prompt (context 1), 2 with nothing scheduled (context 0 and
    // generation 0: decode by the rule, as no prompt was processed).
    let trace = common::read(common::VLLM_CPU);
    let result = analysis(&trace);
    let count = |stage: Stage| {
        result
            .steps
            .steps
            .iter()
            .filter(|s| s.label.stage == stage)
            .count()
    };
    assert_eq!((count(Stage::Decode), count(Stage::Prefill)), (16, 2));
}

#[test]
fn demo_truth_comes_back_out() {
    let spec = DemoSpec::default();
    let truth = facts(&spec);
    for symptom in [Symptom::None, Symptom::RocmReplayLoss] {
        let trace = read_trace_bytes(&generate(&spec, symptom), &ReadOptions::default()).unwrap();
        let result = analysis(&trace);
        let decode = stage(&result, StageKey::Stage(Stage::Decode)).unwrap();
        let prefill = stage(&result, StageKey::Stage(Stage::Prefill)).unwrap();
        assert_eq!(
            (decode.steps as usize, prefill.steps as usize),
            (truth.decode_steps, truth.prefill_steps)
        );
        let totals = result.coverage.totals;
        assert_eq!(totals.replays as usize, truth.replays);
        let kept = if symptom == Symptom::None {
            truth.replays
        } else {
            truth.replays_kept_with_symptom
        };
        assert_eq!(totals.recorded_replays as usize, kept, "{symptom:?}");
        assert_eq!(
            totals.expected_nodes_low as usize,
            truth.replays * truth.kernels_per_replay,
            "{symptom:?}"
        );
    }
}

/// TraceLens's `gpu_timeline.csv` for a trace: (idle ms, total ms).
fn tracelens_timeline(csv: &str) -> (f64, f64) {
    let text = std::fs::read_to_string(common::shared(csv)).expect("reference CSV");
    let value = |key: &str| -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{key},")))
            .and_then(|rest| rest.split(',').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{key} in {csv}"))
    };
    (value("idle_time"), value("total_time"))
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn idle_time_is_measured_over_step_windows_or_the_gpu_span_as_tracelens_does() {
    use stepscope_analysis::IdleBasis;
    let base = "tracelens/tests/traces";
    // One stage holds every GPU event of each of these, so its idle time is the trace's.
    let cases = [
        ("mi210/gpu_only_trace/gpu_only_trace", IdleBasis::GpuSpan),
        ("torch_compile_triton/trace", IdleBasis::GpuSpan),
        (
            "mi300/google_owlv2-large-patch14-ensemble__1016001",
            IdleBasis::StepWindows,
        ),
    ];
    for (name, basis) in cases {
        let trace = common::read(&format!("{base}/{name}.json.gz"));
        let result = analysis(&trace);
        let stages: Vec<&StageSummary> = result
            .breakdown
            .stages
            .iter()
            .filter(|s| s.events > 0)
            .collect();
        assert_eq!(stages.len(), 1, "{name}");
        let stage = stages[0];
        assert_eq!(stage.idle_basis, basis, "{name}");
        let (idle, total) =
            tracelens_timeline(&format!("{base}/{name}_perf_report_csvs/gpu_timeline.csv"));
        let ms = |d: stepscope_model::Duration| d.as_nanos() as f64 / 1e6;
        assert!(
            (ms(stage.window) - total).abs() <= 0.001 * total,
            "{name}: window {} vs {total}",
            ms(stage.window)
        );
        assert!(
            (ms(stage.idle_time) - idle).abs() <= 0.001 * total,
            "{name}: idle {} vs {idle}",
            ms(stage.idle_time)
        );
    }
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn a_trace_without_steps_has_measured_idle_time_not_zero() {
    use stepscope_analysis::IdleBasis;
    let trace =
        common::read("tracelens/tests/traces/mi300/ddp_resnet18_no_pool/train_resnet18.json.gz");
    let result = analysis(&trace);
    for stage in result.breakdown.stages.iter().filter(|s| s.events > 0) {
        assert_eq!(stage.idle_basis, IdleBasis::GpuSpan);
        assert!(stage.window > stage.busy_time, "{:?}", stage.stage);
        assert!(stage.idle_time.as_nanos() > 0);
    }
}

#[test]
fn idle_beside_unrecorded_replays_is_reported_as_missing_work() {
    // The demo's replay-loss trace drops the kernels of all but 3 of 48 decode replays; the
    // complete trace has them, so the truth is the difference of the decode GPU times.
    let spec = DemoSpec::default();
    let truth = facts(&spec);
    let decode_of = |symptom| {
        let trace = read_trace_bytes(&generate(&spec, symptom), &ReadOptions::default()).unwrap();
        stage(&analysis(&trace), StageKey::Stage(Stage::Decode))
            .unwrap()
            .clone()
    };
    let good = decode_of(Symptom::None);
    let bad = decode_of(Symptom::RocmReplayLoss);
    assert_eq!(good.unrecorded_replays, 0);
    assert_eq!(good.missing_work.low.as_nanos(), 0);
    assert_eq!(
        bad.unrecorded_replays as usize,
        truth.replays - truth.replays_kept_with_symptom
    );
    let missing = (good.gpu_time - bad.gpu_time).as_nanos() as f64;
    let work = bad.missing_work;
    assert!(
        work.low.as_nanos() as f64 <= missing,
        "{work:?} vs {missing}"
    );
    if let Some(high) = work.high {
        assert!(high.as_nanos() as f64 >= missing, "{work:?} vs {missing}");
    }
    let estimate = work.estimate.expect("an estimate").as_nanos() as f64;
    assert!(
        (estimate - missing).abs() <= 0.05 * missing,
        "estimate {estimate} vs truth {missing}"
    );
    // The missing work lies inside what the stage reports as idle time.
    assert!(work.low <= bad.idle_time);
}
