//! `--range`: the work launched inside the user's own annotations, checked against the
//! steps pass and the device-side mirrors Kineto records, on real traces.

use crate::common;
use stepscope_analysis::KernelCategories;
use stepscope_analysis::Stage;
use stepscope_analysis::{AnalysisOptions, TraceAnalysis, analyze};
use stepscope_analysis::{RangeBreakdown, RangePattern, RangeSummary};
use stepscope_analysis::{StageKey, StageSummary};
use stepscope_model::Trace;

fn with_ranges(trace: &Trace, pattern: &str) -> TraceAnalysis {
    let table = KernelCategories::embedded();
    let pattern = RangePattern::new(pattern).expect("valid pattern");
    let options = AnalysisOptions {
        ranges: Some(&pattern),
        ..AnalysisOptions::new(&table)
    };
    analyze(trace, &options)
}

fn ranges(analysis: &TraceAnalysis) -> &RangeBreakdown {
    analysis.ranges.as_ref().expect("ranges were asked for")
}

fn range<'a>(analysis: &'a TraceAnalysis, prefix: &str) -> &'a RangeSummary {
    ranges(analysis)
        .ranges
        .iter()
        .find(|r| r.name.starts_with(prefix))
        .unwrap_or_else(|| panic!("no range {prefix}"))
}

fn stage(analysis: &TraceAnalysis, key: StageKey) -> &StageSummary {
    analysis
        .breakdown
        .stages
        .iter()
        .find(|s| s.stage == key)
        .expect("stage")
}

#[track_caller]
fn assert_same_work(range: &RangeSummary, stage: &StageSummary) {
    assert_eq!(range.events, stage.events);
    assert_eq!(range.gpu_time, stage.gpu_time);
    assert_eq!(range.busy_time, stage.busy_time);
    assert_eq!(range.categories, stage.categories);
    let total: i64 = range.categories.iter().map(|c| c.time.as_nanos()).sum();
    assert_eq!(total, range.gpu_time.as_nanos());
}

#[test]
fn a_step_annotation_taken_as_a_range_holds_the_steps_work() {
    // SGLang's `step[DECODE bs=32]` holds one graph replay: the range (by launch call) and
    // the steps pass (by step window) must find the same 551 events.
    let trace = common::read(
        "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    );
    let result = with_ranges(&trace, r"^step\[");
    assert_eq!(ranges(&result).ranges.len(), 1);
    let step = range(&result, "step[DECODE");
    assert_eq!(step.instances, 1);
    assert!(step.cpu_time.as_nanos() > 0);
    assert_eq!(step.gpu_mirror_time, None, "this trace has no GPU mirrors");
    assert_same_work(step, stage(&result, StageKey::Stage(Stage::Decode)));
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn profiler_step_range_equals_the_step_and_nested_ranges_lie_inside() {
    let trace =
        common::read("tracelens/tests/traces/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz");
    let result = with_ranges(&trace, "^ProfilerStep|CompiledFxGraph");
    let step = range(&result, "ProfilerStep#");
    assert_same_work(step, stage(&result, StageKey::Stage(Stage::Step)));
    let compiled = range(&result, "## Call CompiledFxGraph");
    assert_eq!(compiled.instances, 4);
    assert!(compiled.events > 0 && compiled.events < step.events);
    // Inductor's compiled graph launches its own Triton kernels and the library calls it
    // kept (GEMMs, attention); every kernel of it also lies in the profiler step.
    for kernel in &compiled.kernels {
        let outer = step
            .kernels
            .iter()
            .find(|k| k.name == kernel.name && k.category == kernel.category)
            .unwrap_or_else(|| panic!("{} not in the step", kernel.name));
        assert!(kernel.events <= outer.events);
    }
    assert!(
        compiled
            .kernels
            .iter()
            .any(|k| k.name.starts_with("triton_"))
    );
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn gpu_mirror_time_bounds_the_ranges_busy_time() {
    // ResNet training: the optimizer step's kernels run back to back, so its GPU mirror
    // (first to last kernel) equals their busy time; the DDP forward's has gaps.
    let trace = common::read("tracelens/tests/traces/mi300/resnet_act_checkpoint.json.gz");
    let result = with_ranges(&trace, "^(Optimizer|DistributedDataParallel)");
    assert_eq!(ranges(&result).ranges.len(), 3);
    for range in &ranges(&result).ranges {
        if range.events == 0 {
            assert_eq!(range.gpu_mirror_time, None, "{}", range.name);
            continue;
        }
        let mirror = range.gpu_mirror_time.expect("a GPU mirror");
        let slack = stepscope_model::Duration::from_nanos(100); // µs rounding
        assert!(mirror + slack >= range.busy_time, "{}", range.name);
        assert!(range.gpu_time >= range.busy_time, "{}", range.name);
    }
    let step = range(&result, "Optimizer.step");
    assert_eq!(step.instances, 3);
    // Equal up to the rounding of Kineto's microsecond timestamps (6 ns here).
    let mirror = step.gpu_mirror_time.expect("mirror").as_nanos();
    assert!(
        (mirror - step.busy_time.as_nanos()).abs() < 100,
        "{mirror} vs {:?}",
        step.busy_time
    );
    assert!(step.categories.iter().all(|c| c.category == "elementwise"));
    let forward = range(&result, "DistributedDataParallel.forward");
    let names: Vec<&str> = forward.categories.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names[..2], ["convolution", "normalization"], "{names:?}");
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn no_match_lists_annotation_names_to_correct_the_pattern_by() {
    let trace = common::read("tracelens/tests/traces/mi300/resnet_act_checkpoint.json.gz");
    let result = with_ranges(&trace, "^no such range$");
    let found = ranges(&result);
    assert!(found.ranges.is_empty());
    assert_eq!(found.pattern, "^no such range$");
    assert_eq!(found.other_names.len(), 5);
    assert!(
        found
            .other_names
            .iter()
            .any(|n| n.starts_with("ProfilerStep#"))
    );
    let without = analyze(&trace, &AnalysisOptions::new(&KernelCategories::embedded()));
    assert!(without.ranges.is_none());
}
