//! Analysis passes over the stepscope event model: launch links, steps, graph launches and
//! their identity, replay coverage and missing time, kernel categories, stage breakdown,
//! runtime advice. One pass per file under `passes` (private: the result types are
//! re-exported here); [`analyze`] runs them in order.
//! [`combine`] sums ranks; [`diff`] compares two runs.
//!
//! ```
//! use stepscope_analysis::{analyze, AnalysisOptions, KernelCategories};
//! use stepscope_model::TraceBuilder;
//!
//! let trace = TraceBuilder::new().finish();
//! let table = KernelCategories::embedded();
//! let analysis = analyze(&trace, &AnalysisOptions::new(&table));
//! assert_eq!(analysis.coverage.verdict.as_str(), "no-events");
//! ```
#![warn(missing_docs)]

pub mod combine;
pub mod diff;
pub use stepscope_stats::noise;
mod passes;

// What callers use, at the crate root: the analysis's result types, the inputs they build
// (categories, captures, range patterns, device peaks) and the few passes run on their own.
// The passes themselves are private; their modules can change without breaking a caller.
pub use passes::capture_graphs::{CapturedGraph, captured_graphs};
pub use passes::efficiency::devices::{DEVICES, DevicePeaks, device_by_flag};
pub use passes::efficiency::{Bound, Efficiency, OpRow, Roofline, RowStats, UnmodelledOp};
pub use passes::event_categories::DecidedBy;
pub use passes::gpu_timeline::GpuTimeline;
pub use passes::graph_identity::{Evidence, SizeSource, Unverified};
pub use passes::idle_causes::{
    Causes, IdleCauses, KERNEL_WAIT_BELOW, StageIdleCauses, StreamIdleCauses,
};
pub use passes::kernel_categories::{
    CategorizedNames, CategoryError, CategoryId, KernelCategories, categorize_names,
};
pub use passes::launch_links::{LaunchLinks, link_launches};
pub use passes::launch_stats::{
    EagerLaunch, LONG_DELAY_OVER, LaunchStats, LaunchSummary, ReplayLaunch, SLOW_LAUNCH_OVER,
    Spread,
};
pub use passes::launching_ops::{LaunchingOps, launching_ops};
pub use passes::ranges::{RangeBreakdown, RangePattern, RangeSummary};
pub use passes::recording_patterns::{PatternDetail, PatternFinding};
pub use passes::replay_coverage::{
    Counter, CoverageTotals, FindingKind, GraphCoverage, Replay, ReplayCoverage, ReplayStatus,
    Verdict,
};
pub use passes::runtime_advice::RuntimeAdvice;
pub use passes::stage_breakdown::{
    AssignmentMethod, DecidedTimes, IdleBasis, StageBreakdown, StageKey, StageSummary, TimeRow,
};
pub use passes::steps::{Framework, Stage, Step, Steps, find_steps};
pub use passes::unchecked::Unchecked;

use passes::capture_graphs::captured_graphs_with_ops;
use passes::content_groups::content_groups;
use passes::efficiency::{EfficiencyInputs, efficiency};
use passes::event_categories::{EventCategories, EventCategoryInputs, categorize_events};
use passes::gpu_timeline::{timeline_classes, trace_timeline};
use passes::graph_identity::{
    GraphAssignment, IdentityInputs, assign_graphs, uniform_capture_size,
};
use passes::graph_launches::{LaunchInputs, graph_launches};
use passes::idle_causes::idle_causes;
use passes::launch_cycles::{LaunchCycles, launch_cycles};
use passes::launch_stats::launch_stats;
use passes::missing_time::{MissingInputs, missing_time};
use passes::ranges::{RangeInputs, range_breakdown};
use passes::recording_patterns::{PatternInputs, recording_patterns};
use passes::replay_coverage::{
    CoverageInputs, judge_replays, missing_nodes, overlapping_replays, replay_coverage,
};
use passes::runtime_advice::runtime_advice;
use passes::stage_breakdown::{BreakdownInputs, add_missing_work, stage_breakdown};
use passes::unchecked::unchecked;
use stepscope_model::{Duration, RuntimeCallKind, Trace};

/// What the passes need besides the trace.
#[derive(Debug, Clone, Copy)]
pub struct AnalysisOptions<'a> {
    /// Kernel category table.
    pub categories: &'a KernelCategories,
    /// Captured graphs from a capture trace (`--capture`), if given.
    pub capture: &'a [CapturedGraph],
    /// Annotation names to break down (`--range`), if given.
    pub ranges: Option<&'a RangePattern>,
    /// The device whose peaks the efficiency rooflines use (`--device`); found from the
    /// trace's device name when `None`.
    pub device: Option<&'static DevicePeaks>,
}

impl<'a> AnalysisOptions<'a> {
    /// Options with a category table and no capture trace.
    pub fn new(categories: &'a KernelCategories) -> Self {
        AnalysisOptions {
            categories,
            capture: &[],
            ranges: None,
            device: None,
        }
    }
}

/// Every pass's result for one trace.
#[derive(Debug, Clone)]
pub struct TraceAnalysis {
    /// Launch links.
    pub links: LaunchLinks,
    /// Steps.
    pub steps: Steps,
    /// Replay coverage and verdict.
    pub coverage: ReplayCoverage,
    /// Per-stage breakdown.
    pub breakdown: StageBreakdown,
    /// Where the whole trace's GPU time went, over the GPU work it links to a launch call
    /// (TraceLens's `gpu_timeline`); `None` without GPU events.
    pub timeline: Option<GpuTimeline>,
    /// GPU time of work the trace links to no launch call while it has launch calls
    /// (launched before the profiler started, or from a thread it did not trace): left out
    /// of `timeline`.
    pub unlinked_gpu_time: Duration,
    /// Each stream's idle time by cause (host wait, kernel wait, other; HTA's categories),
    /// and each stage's, within and between its steps.
    pub idle_causes: IdleCauses,
    /// Every eager launch and graph replay: CPU time, launch delay, GPU time.
    pub launches: LaunchStats,
    /// Runtime and switch advice.
    pub advice: RuntimeAdvice,
    /// How the profile lost replays, where it did.
    pub patterns: Vec<PatternFinding>,
    /// Per matching annotation name, when a range pattern was given.
    pub ranges: Option<RangeBreakdown>,
    /// Per op and shapes: FLOPs, bytes, achieved rates and the roofline.
    pub efficiency: Efficiency,
    /// What the verdict could not check (refused data that may have been replays').
    pub unchecked: Unchecked,
}

/// Runs every pass on one trace, in this order: `launch_links` (GPU events to host calls),
/// `steps` (step annotations and stages), `capture_graphs` (captures in the trace),
/// `graph_launches` (replays, lanes, launch slots, damage), `content_groups` (replays that
/// recorded the same work), `launch_cycles` (periods of launches per thread),
/// `graph_identity` (graph, size and evidence per replay), `replay_coverage` with
/// `missing_time` (statuses, totals, ranges, verdict), `recording_patterns`,
/// `launching_ops` with `kernel_categories` and `event_categories` (a category per GPU
/// event, from its launching op or its name), `stage_breakdown`, `ranges` (with a range
/// pattern), `idle_causes`, `launch_stats`, `runtime_advice`, `unchecked`.
///
/// Passes that do not need each other's results run on two threads (the steps beside the
/// launch links; the coverage beside the categories and the breakdown): the analysis of a
/// 1 GB trace is otherwise a single-threaded tail after a read that used every core.
pub fn analyze(trace: &Trace, options: &AnalysisOptions<'_>) -> TraceAnalysis {
    let (links, steps) = beside(|| link_launches(trace), || find_steps(trace));
    // Launch calls: eager launches (captures' too), and any other call that launched GPU
    // work except graph launches, whose enclosing op did not launch the replayed kernels.
    let ops = launching_ops(trace, |call| match trace.runtime.kind[call] {
        RuntimeCallKind::EagerLaunch => true,
        RuntimeCallKind::GraphLaunch => false,
        _ => !links.launched(call).is_empty(),
    });
    let own_captures = captured_graphs_with_ops(trace, &ops);
    let captures: Vec<&CapturedGraph> = own_captures.iter().chain(options.capture).collect();
    let (
        (coverage, patterns),
        ((mut breakdown, ranges, (timeline, unlinked_gpu_time)), efficiency),
    ) = beside(
        || coverage(trace, &links, &steps, &own_captures, options),
        || {
            let inputs = EventInputs {
                links: &links,
                ops: &ops,
                captures: &captures,
            };
            let breakdowns = breakdowns(trace, inputs, &steps, options);
            let inputs = EfficiencyInputs {
                links: &links,
                ops: &ops,
                device: options.device,
                captures: &captures,
            };
            (breakdowns, efficiency(trace, inputs))
        },
    );
    add_missing_work(&mut breakdown, &coverage.replays, &steps);
    let idle_causes = idle_causes(trace, &links, &steps);
    let launches = launch_stats(trace, &links);
    let advice = runtime_advice(&trace.metadata);
    let unchecked = unchecked(trace, &coverage);
    TraceAnalysis {
        links,
        steps,
        coverage,
        breakdown,
        timeline,
        unlinked_gpu_time,
        idle_causes,
        launches,
        advice,
        patterns,
        ranges,
        efficiency,
        unchecked,
    }
}

/// Runs `first` here and `second` on another thread; a panic in either is resumed here.
fn beside<A: Send, B: Send>(
    first: impl FnOnce() -> A + Send,
    second: impl FnOnce() -> B + Send,
) -> (A, B) {
    std::thread::scope(|scope| {
        let second = scope.spawn(second);
        let first = first();
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (first, second)
    })
}

/// The categories of GPU events, and the per-stage (and, with a pattern, per-range)
/// breakdowns and the trace's timeline they make.
fn breakdowns(
    trace: &Trace,
    inputs: EventInputs<'_>,
    steps: &Steps,
    options: &AnalysisOptions<'_>,
) -> (
    StageBreakdown,
    Option<RangeBreakdown>,
    (Option<GpuTimeline>, Duration),
) {
    let links = inputs.links;
    let categories = event_categories(trace, inputs, options.categories);
    let classes = timeline_classes(trace, &categories, options.categories);
    let breakdown = stage_breakdown(
        trace,
        BreakdownInputs {
            links,
            steps,
            table: options.categories,
            categories: &categories,
            classes: &classes,
        },
    );
    let ranges = options.ranges.map(|pattern| {
        range_breakdown(
            trace,
            RangeInputs {
                pattern,
                links,
                table: options.categories,
                categories: &categories,
            },
        )
    });
    (breakdown, ranges, trace_timeline(trace, &classes, links))
}

/// What the categories of GPU events are found from, besides the table.
struct EventInputs<'a> {
    links: &'a LaunchLinks,
    ops: &'a LaunchingOps,
    captures: &'a [&'a CapturedGraph],
}

/// The category of every GPU event: `kernel_categories` (names), `event_categories`.
fn event_categories(
    trace: &Trace,
    inputs: EventInputs<'_>,
    table: &KernelCategories,
) -> EventCategories {
    let names = categorize_names(trace, table);
    categorize_events(
        trace,
        EventCategoryInputs {
            table,
            names: &names,
            links: inputs.links,
            ops: inputs.ops,
            captures: inputs.captures,
        },
    )
}

/// The replay-coverage chain of passes.
/// The recording patterns. A file that cannot show its replays has none: its empty replays
/// are what the file lost, and a pattern's cure (a switch, a bigger buffer) treats another.
fn patterns_of(trace: &Trace, inputs: PatternInputs<'_>) -> Vec<PatternFinding> {
    if inputs.coverage.verdict == Verdict::Unavailable {
        return Vec::new();
    }
    recording_patterns(trace, inputs)
}

fn coverage(
    trace: &Trace,
    links: &LaunchLinks,
    steps: &Steps,
    own_captures: &[CapturedGraph],
    options: &AnalysisOptions<'_>,
) -> (ReplayCoverage, Vec<PatternFinding>) {
    let launches = graph_launches(
        trace,
        LaunchInputs {
            links,
            steps,
            own_captures,
        },
    );
    let groups = content_groups(&launches);
    let cycles = launch_cycles(&launches, &groups);
    let assignment = assign_graphs(
        trace,
        IdentityInputs {
            links,
            steps,
            launches: &launches,
            groups: &groups,
            cycles: &cycles,
            own_captures,
            capture: options.capture,
            overlapping: &overlapping_replays(trace, links, &launches),
        },
    );
    let inputs = CoverageInputs {
        links,
        steps,
        launches: &launches,
        assignment: &assignment,
        capture_size: uniform_capture_size(options.capture),
    };
    let judged = judge_replays(inputs);
    let missing = missing_nodes(&judged, inputs);
    let time = missing_time(
        trace,
        MissingInputs {
            links,
            launches: &launches,
            groups: &groups,
            assignment: &assignment,
            missing: &missing,
        },
    );
    let mut coverage = replay_coverage(trace, inputs, &judged, &time);
    note_limits(&mut coverage, &cycles, &assignment);
    let inputs = PatternInputs {
        links,
        coverage: &coverage,
        steps,
        captures: own_captures,
    };
    let patterns = patterns_of(trace, inputs);
    if patterns.iter().any(|p| p.pattern.loses_eager_work()) {
        // Eager work is lost too: no share from this trace holds, whatever the replays say.
        coverage.verdict = Verdict::Incomplete;
    }
    (coverage, patterns)
}

fn note_limits(coverage: &mut ReplayCoverage, cycles: &LaunchCycles, assignment: &GraphAssignment) {
    if cycles.lanes_over_limit > 0 {
        coverage.limits_hit.push(LIMIT_CYCLES);
    }
    if assignment.groups_over_limit {
        coverage.limits_hit.push(LIMIT_GROUPS);
    }
}

/// Named when a thread launched more than two of the longest cycle searched.
pub(crate) const LIMIT_CYCLES: &str =
    "launch cycles were searched up to 4,096 launches per cycle on a thread with more launches";
/// Named when too many distinct replay contents were seen to compare them all.
pub(crate) const LIMIT_GROUPS: &str =
    "more than 2,000 distinct replay contents: sole replays were not compared with every graph";
