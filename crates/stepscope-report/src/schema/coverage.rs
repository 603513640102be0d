//! Wire types of replay coverage: the verdict, the counters (the analysis's
//! [`CoverageTotals`], written in the order of its one list, [`Counter::ALL`]), ranges,
//! graphs, patterns and findings with typed evidence. The verdict, the counters, the finding
//! kinds and the patterns stay the analysis's types all the way to the renderers, which
//! `match` on them; serde writes their names.

use super::{micros, text};
use serde::Serialize;
use serde::ser::SerializeMap;
use stepscope_analysis::PatternDetail;
use stepscope_analysis::TraceAnalysis;
use stepscope_analysis::{
    Counter, CoverageTotals, FindingKind, GraphCoverage, ReplayCoverage, Verdict,
};
use stepscope_analysis::{Evidence, SizeSource, Unverified};
use stepscope_model::Trace;
use stepscope_model::patterns::{RecordingPattern, cures_seen};

/// Findings listed per file at most; counts always cover all of them.
pub const MAX_FINDINGS: usize = 200;

/// Replay coverage of one file.
#[derive(Debug, Clone, Serialize)]
pub struct Coverage {
    /// `complete`, `unverified`, `unavailable`, `mistimed`, `damaged`, `incomplete`,
    /// `no-replays` or `no-events`.
    pub verdict: Verdict,
    /// With `unavailable`: why this file cannot show replays, and how to record one that can.
    pub unavailable_reason: Option<String>,
    /// Counts, ratios and ranges.
    #[serde(flatten)]
    pub numbers: CoverageNumbers,
    /// Recorded GPU time of the whole file (kernels, memcpys, memsets).
    pub recorded_gpu_time_us: f64,
    /// Missing replay time / (recorded GPU time + missing): estimate (`null` when a replay
    /// with nodes missing is of unknown graph).
    pub missing_share: Option<f64>,
    /// At least.
    pub missing_share_low: f64,
    /// At most.
    pub missing_share_high: f64,
    /// The reasoning behind the missing-time range.
    pub missing_basis: Vec<&'static str>,
    /// Idle time of the launching threads' streams where missing nodes could have run.
    pub idle_bound_us: Option<f64>,
    /// Some window where missing nodes may have run has no end in the trace: the missing
    /// time has no upper bound.
    pub idle_unbounded: bool,
    /// Graph launches under stream capture (not replays).
    pub launches_under_capture: u32,
    /// Kernels whose correlation matches no host call.
    pub orphan_kernels: u64,
    /// Memcpys/memsets whose correlation matches no host call.
    pub orphan_transfers: u64,
    /// Host calls that share a correlation id with an earlier one.
    pub shared_correlations: u64,
    /// Eager launches with more than one kernel, per API.
    pub multi_kernel_launches: Vec<MultiKernel>,
    /// Slot or cycle classes whose recorded replays conflict, so they gave no evidence.
    pub inconsistent_classes: u32,
    /// Search limits that were hit, each as a sentence.
    pub limits_hit: Vec<&'static str>,
    /// Graphs (or unknown-graph replays) sized by the `--capture` trace.
    pub capture_matches: u32,
    /// Per graph.
    pub graphs: Vec<Graph>,
    /// How the profile lost replays, each with its cures.
    pub patterns: Vec<PatternWire>,
    /// Problem replays (at most [`MAX_FINDINGS`]).
    pub findings: Vec<Finding>,
}

/// A recording pattern found.
#[derive(Debug, Clone, Serialize)]
pub struct PatternWire {
    /// `no_gpu_events`, `recording_stopped`, `partial_replays`, `empty_replays`,
    /// `kernels_after_step` or `implausible_durations`.
    pub pattern: RecordingPattern,
    /// What it looks like.
    pub description: &'static str,
    /// Replays it explains.
    pub replays: u32,
    /// Their numbers (the first [`MAX_FINDINGS`]).
    pub replay_list: Vec<usize>,
    /// What was seen.
    #[serde(flatten)]
    pub detail: PatternDetailWire,
    /// Share of the GPU time its replays account for, at least: for lost kernels, their
    /// missing time over recorded + missing; for mistimed kernels, their recorded time over
    /// all recorded GPU time.
    pub gpu_share_low: f64,
    /// At most.
    pub gpu_share_high: f64,
    /// What cures it on this platform.
    pub cures: Vec<CureWire>,
}

/// What was seen, per pattern.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum PatternDetailWire {
    /// `empty_replays`.
    Empty {
        /// Replays without a kernel.
        empty: u32,
    },
    /// `partial_replays`.
    Partial {
        /// Smallest share of its graph's likeliest size a short replay kept.
        kept_low: f64,
        /// Largest.
        kept_high: f64,
        /// Of them, replays at slots (or in runs) whose replays each kept a different part.
        in_partial_slots: u32,
    },
    /// `recording_stopped`.
    Stopped {
        /// Host start of the last eager launch with GPU work.
        last_launch_with_work_us: f64,
        /// End of the last recorded GPU event.
        last_gpu_end_us: f64,
        /// Eager launches after it, none with GPU work.
        eager_after: u32,
        /// Graph replays the stop explains (empty after it, or cut off midway).
        graph_after: u32,
        /// Share of the host's launch span after it.
        window_after: f64,
    },
    /// `no_gpu_events`.
    NoGpu {
        /// Launches in the trace.
        launches: u32,
    },
    /// `kernels_after_step`.
    AfterStep {
        /// Replays whose kernels started after the last step of their process ended.
        after_last_step: u32,
    },
    /// `implausible_durations`.
    Implausible {
        /// Graphs the replays belong to.
        graphs: u32,
    },
}

/// One cure.
#[derive(Debug, Clone, Serialize)]
pub struct CureWire {
    /// What to do.
    pub action: &'static str,
    /// Whether this project measured it on a GPU (else reported in `sources`).
    pub measured: bool,
    /// Where it is reported.
    pub sources: &'static str,
}

/// Replay counts, ratios and ranges. The counters are the analysis's totals: a renderer
/// reads one by its field (`totals.short_replays`), or all of them through [`Counter::ALL`]
/// (`counter.value(&totals)`), the order they are written in.
#[derive(Debug, Clone)]
pub struct CoverageNumbers {
    /// The counts behind everything else here.
    pub totals: CoverageTotals,
    /// `recorded_replays / replays`.
    pub coverage: f64,
    /// Recorded / expected nodes: exact where every size is known, else `None`.
    pub completeness: Option<f64>,
    /// At least.
    pub completeness_low: f64,
    /// At most.
    pub completeness_high: f64,
    /// Missing GPU time: estimate, at least, at most (`None`: unknown / unbounded).
    pub missing_gpu_time_us: Option<f64>,
    /// At least.
    pub missing_gpu_time_low_us: f64,
    /// At most.
    pub missing_gpu_time_high_us: Option<f64>,
}

impl CoverageNumbers {
    /// From analysis totals.
    pub fn new(t: &CoverageTotals) -> Self {
        let completeness = t.completeness();
        CoverageNumbers {
            totals: *t,
            coverage: t.coverage(),
            completeness: completeness.estimate,
            completeness_low: completeness.low,
            completeness_high: completeness.high.unwrap_or(1.0),
            missing_gpu_time_us: t.missing_time.estimate.map(micros),
            missing_gpu_time_low_us: micros(t.missing_time.low),
            missing_gpu_time_high_us: t.missing_time.high.map(micros),
        }
    }
}

impl Serialize for CoverageNumbers {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(Counter::ALL.len() + 7))?;
        for counter in Counter::ALL {
            map.serialize_entry(&counter, &counter.value(&self.totals))?;
        }
        map.serialize_entry("coverage", &self.coverage)?;
        map.serialize_entry("completeness", &self.completeness)?;
        map.serialize_entry("completeness_low", &self.completeness_low)?;
        map.serialize_entry("completeness_high", &self.completeness_high)?;
        map.serialize_entry("missing_gpu_time_us", &self.missing_gpu_time_us)?;
        map.serialize_entry("missing_gpu_time_low_us", &self.missing_gpu_time_low_us)?;
        map.serialize_entry("missing_gpu_time_high_us", &self.missing_gpu_time_high_us)?;
        map.end()
    }
}

/// One API's multi-kernel eager launches.
#[derive(Debug, Clone, Serialize)]
pub struct MultiKernel {
    /// API name.
    pub api: String,
    /// Calls with more than one kernel.
    pub launches: u32,
    /// Most GPU events from one call.
    pub max_events: u32,
}

/// One graph's coverage.
#[derive(Debug, Clone, Serialize)]
pub struct Graph {
    /// Graph number (1-based in order of first replay); `null` for replays of unknown graph.
    pub graph: Option<usize>,
    /// `graph id` from the trace.
    pub graph_id: Option<u64>,
    /// First kernel of the reference order.
    pub first_kernel: Option<String>,
    /// Expected nodes per replay, the likeliest (at least, for `single_replay`).
    pub expected_nodes_per_replay: Option<u32>,
    /// Expected nodes per replay, at least.
    pub expected_nodes_per_replay_low: Option<u32>,
    /// Expected nodes per replay, at most (`null`: no upper bound, or unknown graph).
    pub expected_nodes_per_replay_high: Option<u32>,
    /// Where the expected size comes from.
    pub expected_source: ExpectedSource,
    /// GPU time of the reference replay.
    pub reference_time_us: f64,
    /// Counts, ratios and ranges.
    #[serde(flatten)]
    pub numbers: CoverageNumbers,
}

/// Where a graph's expected size comes from; serialised as its name
/// ([`ExpectedSource::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedSource {
    /// `capture_trace`: launches under a capture (the size, or one less).
    CaptureTrace,
    /// `repeated`: the largest replay recorded identically by several replays.
    Repeated,
    /// `single_replay`: recorded by one replay (a lower bound).
    SingleReplay,
    /// `largest_replay`: the largest replay, recorded identically by several replays while
    /// more of the graph's replays recorded less (a lower bound).
    LargestReplay,
    /// `union_of_parts`: the union of parts that replays at one slot or in one run each kept.
    UnionOfParts,
    /// `unknown`: replays of unknown graph, with no capture.
    Unknown,
}

impl ExpectedSource {
    /// Of a graph whose size came from `source` (`None`: unknown).
    pub fn new(source: Option<SizeSource>) -> Self {
        match source {
            Some(SizeSource::Capture) => ExpectedSource::CaptureTrace,
            Some(SizeSource::Repeated(_)) => ExpectedSource::Repeated,
            Some(SizeSource::Single) => ExpectedSource::SingleReplay,
            Some(SizeSource::Largest(_)) => ExpectedSource::LargestReplay,
            Some(SizeSource::Union(_)) => ExpectedSource::UnionOfParts,
            None => ExpectedSource::Unknown,
        }
    }

    /// Its name, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ExpectedSource::CaptureTrace => "capture_trace",
            ExpectedSource::Repeated => "repeated",
            ExpectedSource::SingleReplay => "single_replay",
            ExpectedSource::LargestReplay => "largest_replay",
            ExpectedSource::UnionOfParts => "union_of_parts",
            ExpectedSource::Unknown => "unknown",
        }
    }
}

/// Why a replay was given its graph, or why its size holds: a typed value.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EvidenceWire {
    /// A captured graph.
    Capture {
        /// Its nodes.
        nodes: u32,
    },
    /// The same launch slot in other steps.
    StepSlot {
        /// The steps' label key, e.g. `sglang:DECODE bs=32`.
        slot: String,
        /// 1-based position among its thread's launches in its step.
        position: u32,
        /// Launches of its thread in its step.
        launches: u32,
        /// Other steps whose replay there recorded the graph.
        other_steps: u32,
    },
    /// The same launch slot in other steps, whose replays each recorded a different part of
    /// one graph.
    PartialSlot {
        /// The steps' label key.
        slot: String,
        /// 1-based position among its thread's launches in its step.
        position: u32,
        /// Launches of its thread in its step.
        launches: u32,
        /// Replays recorded at the slot.
        recorded: u32,
        /// Nodes in the union of what they recorded.
        union_nodes: u32,
    },
    /// The replays its thread launched in its step each recorded a different part of one
    /// set of kernels.
    PartialRun {
        /// Replays of the run read as parts.
        recorded: u32,
        /// Nodes in the union of what they recorded.
        union_nodes: u32,
        /// Nodes of the largest part (the graph's size, at least).
        largest: u32,
    },
    /// The same phase of its thread's launch cycle.
    CyclePosition {
        /// Launches per cycle.
        period: u32,
        /// 1-based phase.
        phase: u32,
        /// Other cycles whose replay there recorded the graph.
        other_cycles: u32,
    },
    /// Its kernels' `graph id`.
    GraphId {
        /// The id.
        id: u64,
        /// Replays that recorded the graph's full size.
        other_replays: u32,
    },
    /// Between two replays of the graph on its thread.
    Neighbours,
    /// Its stream sat idle after it long enough for the nodes it lacks.
    IdleGap {
        /// Idle time in its window.
        idle_us: f64,
        /// Half the shortest recorded durations of the nodes it lacks.
        needed_us: f64,
        /// Median idle time after the graph's replays.
        typical_us: f64,
    },
    /// Other replays recorded the same work.
    Repeated {
        /// How many.
        other_replays: u32,
    },
}

impl EvidenceWire {
    pub(super) fn new(evidence: Evidence, slot_labels: &[String]) -> Self {
        match evidence {
            Evidence::Capture { nodes } => EvidenceWire::Capture { nodes },
            Evidence::StepSlot {
                slot,
                position,
                launches,
                other_steps,
            } => EvidenceWire::StepSlot {
                slot: text(slot_labels.get(slot as usize).map_or("", String::as_str)),
                position: position + 1,
                launches,
                other_steps,
            },
            Evidence::PartialSlot {
                slot,
                position,
                launches,
                recorded,
                union_nodes,
            } => EvidenceWire::PartialSlot {
                slot: text(slot_labels.get(slot as usize).map_or("", String::as_str)),
                position: position + 1,
                launches,
                recorded,
                union_nodes,
            },
            Evidence::PartialRun {
                recorded,
                union_nodes,
                largest,
            } => EvidenceWire::PartialRun {
                recorded,
                union_nodes,
                largest,
            },
            Evidence::CyclePosition {
                period,
                phase,
                other_cycles,
            } => EvidenceWire::CyclePosition {
                period,
                phase: phase + 1,
                other_cycles,
            },
            Evidence::GraphId { id, other_replays } => EvidenceWire::GraphId { id, other_replays },
            Evidence::Neighbours => EvidenceWire::Neighbours,
            Evidence::IdleGap {
                idle,
                needed,
                typical,
            } => EvidenceWire::IdleGap {
                idle_us: micros(idle),
                needed_us: micros(needed),
                typical_us: micros(typical),
            },
            Evidence::Repeated { other_replays } => EvidenceWire::Repeated { other_replays },
        }
    }

    /// One sentence, as the terminal and CSV say it.
    pub fn sentence(&self) -> String {
        match self {
            EvidenceWire::Capture { nodes } => format!("a captured graph of {nodes} nodes"),
            EvidenceWire::StepSlot {
                slot,
                position,
                launches,
                other_steps,
            } => format!(
                "launch {position} of {launches} in its step ({slot}); that slot holds the graph in {}",
                count(*other_steps, "other step")
            ),
            EvidenceWire::PartialSlot {
                slot,
                position,
                launches,
                recorded,
                union_nodes,
            } => format!(
                "launch {position} of {launches} in its step ({slot}); the {recorded} replays recorded at that slot each hold a different part of one graph of at least {union_nodes} nodes (their union)"
            ),
            EvidenceWire::PartialRun {
                recorded,
                union_nodes,
                largest,
            } => format!(
                "the {recorded} replays its thread launched in its step each hold a different part of one set of {union_nodes} kernels (none repeats, none holds a kernel the others lack): one graph of at least {largest} nodes, likely {union_nodes}"
            ),
            EvidenceWire::CyclePosition {
                period,
                phase,
                other_cycles,
            } => format!(
                "launch {phase} of a cycle of {period} launches on its thread; that position holds the graph in {}",
                count(*other_cycles, "other cycle")
            ),
            EvidenceWire::GraphId { id, other_replays } => format!(
                "its kernels' graph id {id}, recorded in full by {}",
                count(*other_replays, "replay")
            ),
            EvidenceWire::Neighbours => {
                "the replays before and after it on its thread are of this graph".to_owned()
            }
            EvidenceWire::IdleGap {
                idle_us,
                needed_us,
                typical_us,
            } => format!(
                "its GPU stream sat idle {idle_us:.1} µs after it, room for the nodes it lacks (≥ {needed_us:.1} µs), while the graph's replays are followed by {typical_us:.1} µs (median)"
            ),
            EvidenceWire::Repeated { other_replays } => {
                format!(
                    "recorded identically by {}",
                    count(*other_replays, "other replay")
                )
            }
        }
    }
}

/// `1 other step`, `3 other steps`, `2 graph launches`.
pub fn count(n: u32, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if ["ch", "sh", "s", "x"].iter().any(|end| noun.ends_with(end)) {
        format!("{n} {noun}es")
    } else {
        format!("{n} {noun}s")
    }
}

/// Why a replay's size is not proven.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum UnverifiedWire {
    /// The only replay that recorded its work.
    SoleReplay,
    /// Its work is a strict part of a bigger graph's.
    PossiblyShortOf {
        /// That graph (1-based).
        graph: usize,
        /// Its nodes.
        nodes: u32,
    },
    /// A capture of its graph holds one launch more than it recorded.
    CaptureHoldsMore {
        /// Launches under the capture.
        nodes: u32,
    },
    /// Most replays of its graph recorded less than it did.
    OthersRecordedLess {
        /// How many.
        replays: u32,
    },
}

impl UnverifiedWire {
    pub(super) fn new(unverified: Unverified) -> Self {
        match unverified {
            Unverified::SoleReplay => UnverifiedWire::SoleReplay,
            Unverified::PossiblyShortOf { graph, nodes } => UnverifiedWire::PossiblyShortOf {
                graph: graph + 1,
                nodes,
            },
            Unverified::CaptureHoldsMore { nodes } => UnverifiedWire::CaptureHoldsMore { nodes },
            Unverified::OthersRecordedLess { replays } => {
                UnverifiedWire::OthersRecordedLess { replays }
            }
        }
    }
}

/// How to settle an unverified size.
pub const HOW_TO_SETTLE: &str = "pass the capture trace recorded while the server captured its graphs (--capture FILE), or profile a window with more steps";

/// A replay with a problem, or whose completeness is unproven.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// `ReplayWithoutKernels`, `ShortReplay`, `DamagedReplay`, `DeferredKernelBurst`,
    /// `ImplausibleDurations`, `UnverifiedReplay` or `ReplayOrderMismatch`.
    pub kind: FindingKind,
    /// Replay number (0-based, launch order).
    pub replay: usize,
    /// Host time of its launch.
    pub launch_ts_us: f64,
    /// Its step's label.
    pub step: Option<String>,
    /// Its graph number.
    pub graph: Option<usize>,
    /// Recorded nodes.
    pub recorded_nodes: u32,
    /// Expected nodes, where known exactly.
    pub expected_nodes: Option<u32>,
    /// Expected nodes, at least.
    pub expected_nodes_low: u32,
    /// Expected nodes, at most (`null`: no upper bound).
    pub expected_nodes_high: Option<u32>,
    /// Evidence for its graph or size.
    pub evidence: Option<EvidenceWire>,
    /// Why its size is unproven (`UnverifiedReplay`).
    pub unverified: Option<UnverifiedWire>,
    /// GPU events refused with its correlation id (`DamagedReplay`).
    pub refused_events: u32,
    /// Another host call carries its correlation id (`DamagedReplay`).
    pub shared_correlation: bool,
}

fn findings(trace: &Trace, analysis: &TraceAnalysis) -> Vec<Finding> {
    let steps = &analysis.steps.steps;
    let coverage = &analysis.coverage;
    coverage
        .replays
        .iter()
        .enumerate()
        .filter_map(|(index, replay)| {
            let kind = replay.finding()?;
            Some(Finding {
                kind,
                replay: index,
                launch_ts_us: trace.runtime.start[replay.launch as usize].as_micros_f64(),
                step: replay.step.map(|s| text(trace.name(steps[s].name))),
                graph: replay.graph.map(|g| g + 1),
                recorded_nodes: replay.recorded_nodes,
                expected_nodes: replay.expected.exact(),
                expected_nodes_low: replay.expected.low,
                expected_nodes_high: replay.expected.high,
                evidence: replay
                    .evidence
                    .map(|e| EvidenceWire::new(e, &coverage.slot_labels)),
                unverified: replay.unverified.map(UnverifiedWire::new),
                refused_events: replay.damage.map_or(0, |d| d.refused_events),
                shared_correlation: replay.damage.is_some_and(|d| d.shared_correlation),
            })
        })
        .take(MAX_FINDINGS)
        .collect()
}

/// The reasoning behind the missing-time range, as sentences.
fn missing_basis(c: &ReplayCoverage) -> Vec<&'static str> {
    let t = &c.totals;
    let mut basis = Vec::new();
    if t.short_replays + t.empty_replays + t.damaged_replays > t.unknown_graph_replays {
        basis.push("at least, and the estimate: the durations the missing nodes' kernels have in other replays of their graph (half the shortest; the mean)");
    }
    if t.unknown_graph_replays > 0 && t.missing_time.estimate.is_none() {
        basis.push("replays of unknown graph: nothing missing is certain, no estimate");
    }
    if c.idle_unbounded {
        basis.push("at most: no bound: some replay's window has no end in the trace (nothing launched after it on its stream, no device-wide synchronize), so its nodes may have run after the last recorded event");
    } else if c.idle_bound.is_some() {
        basis.push(if c.idle_per_stream {
            "at most: the idle time of the replays' GPU streams between each launch that may miss nodes and the next work launched on them, summed over the several streams a replay may run on"
        } else {
            "at most: the idle time of the replays' GPU stream between each launch that may miss nodes and the next work launched on it"
        });
    }
    basis
}

/// Builds the coverage part of a file's report.
pub fn coverage(trace: &Trace, analysis: &TraceAnalysis) -> Coverage {
    let c: &ReplayCoverage = &analysis.coverage;
    let share = c.totals.missing_share(c.recorded_gpu_time);
    Coverage {
        verdict: c.verdict,
        unavailable_reason: c.unavailable.clone(),
        numbers: CoverageNumbers::new(&c.totals),
        recorded_gpu_time_us: micros(c.recorded_gpu_time),
        missing_share: share.estimate,
        missing_share_low: share.low,
        missing_share_high: share.high.unwrap_or(1.0),
        missing_basis: missing_basis(c),
        idle_bound_us: c.idle_bound.map(micros),
        idle_unbounded: c.idle_unbounded,
        launches_under_capture: c.launches_under_capture,
        orphan_kernels: c.orphans.kernels,
        orphan_transfers: c.orphans.transfers,
        shared_correlations: c.duplicate_correlations,
        multi_kernel_launches: c
            .multi_kernel_launches
            .iter()
            .map(|m| MultiKernel {
                api: text(&m.api),
                launches: m.launches,
                max_events: m.max_events,
            })
            .collect(),
        inconsistent_classes: c.inconsistent_classes,
        limits_hit: c.limits_hit.clone(),
        capture_matches: c.capture_matches,
        graphs: c.graphs.iter().map(graph).collect(),
        patterns: patterns(trace, analysis),
        findings: findings(trace, analysis),
    }
}

fn patterns(trace: &Trace, analysis: &TraceAnalysis) -> Vec<PatternWire> {
    let platform = trace.metadata.platform();
    analysis
        .patterns
        .iter()
        .map(|p| PatternWire {
            pattern: p.pattern,
            description: p.pattern.description(),
            replays: p.replays.len() as u32,
            replay_list: p.replays.iter().copied().take(MAX_FINDINGS).collect(),
            detail: detail(&p.detail),
            gpu_share_low: p.gpu_share.0,
            gpu_share_high: p.gpu_share.1,
            cures: cures_seen(p.pattern, platform, kept_high(&p.detail))
                .into_iter()
                .map(|c| CureWire {
                    action: c.action,
                    measured: c.measured,
                    sources: c.sources,
                })
                .collect(),
        })
        .collect()
}

fn kept_high(detail: &PatternDetail) -> Option<f64> {
    match *detail {
        PatternDetail::PartialReplays { kept_high, .. } => Some(kept_high),
        _ => None,
    }
}

fn detail(detail: &PatternDetail) -> PatternDetailWire {
    match *detail {
        PatternDetail::EmptyReplays { empty } => PatternDetailWire::Empty { empty },
        PatternDetail::PartialReplays {
            kept_low,
            kept_high,
            in_partial_slots,
        } => PatternDetailWire::Partial {
            kept_low,
            kept_high,
            in_partial_slots,
        },
        PatternDetail::RecordingStopped {
            last_launch_with_work,
            last_gpu_end,
            eager_after,
            graph_after,
            window_after,
        } => PatternDetailWire::Stopped {
            last_launch_with_work_us: last_launch_with_work.as_micros_f64(),
            last_gpu_end_us: last_gpu_end.as_micros_f64(),
            eager_after,
            graph_after,
            window_after,
        },
        PatternDetail::NoGpuEvents { launches } => PatternDetailWire::NoGpu { launches },
        PatternDetail::KernelsAfterStep { after_last_step } => {
            PatternDetailWire::AfterStep { after_last_step }
        }
        PatternDetail::ImplausibleDurations { graphs } => PatternDetailWire::Implausible { graphs },
    }
}

fn graph(g: &GraphCoverage) -> Graph {
    Graph {
        graph: g.graph.map(|g| g + 1),
        graph_id: g.graph_id,
        first_kernel: g.first_kernel.as_deref().map(text),
        expected_nodes_per_replay: g.expected_nodes,
        expected_nodes_per_replay_low: g.expected_range.map(|r| r.0),
        expected_nodes_per_replay_high: g.expected_range.and_then(|r| r.1),
        expected_source: ExpectedSource::new(g.size_source),
        reference_time_us: micros(g.reference_time),
        numbers: CoverageNumbers::new(&g.totals),
    }
}
