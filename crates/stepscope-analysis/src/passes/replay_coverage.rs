//! Replay coverage: were the kernels of every graph replay recorded, completely and in order,
//! and how sure can one be?
//!
//! What it computes: every graph launch is a replay; its GPU work is the
//! kernels, memcpys and memsets with its correlation id. Each replay is complete, complete
//! as far as the trace shows (*unverified*: its size rests on itself), short, empty, or
//! damaged (it lost events to bad data, not to the profiler). Per graph and in total:
//! coverage (replays with ≥ 1 recorded node / replays), completeness (recorded / expected
//! nodes) — a range where some expected sizes are unknown — and the missing GPU time as a
//! range; order mismatches, deferred bursts, eager launches with more than one kernel,
//! orphan GPU events; and a verdict.
//! Why it matters: several HIP runtimes make the ROCm profiler keep the kernels of only the
//! replay a host sync follows (1 of 127 in a measured 128-step window); every per-op share
//! computed from such a trace silently describes prefill and eager work instead of decode.
//! Example: 127 decode replays of a 764-node graph, one recorded → `incomplete`, coverage
//! 0.8 %, completeness at most 0.8 %.

use super::graph_identity::{Evidence, GraphAssignment, SizeSource, Unverified};
use super::graph_launches::{GraphLaunches, ReplayDamage};
use super::launch_links::{LaunchLinks, OrphanCounts};
use super::missing_time::{IdleBound, MissingNodes, MissingTime};
use super::steps::Steps;
use serde::Serialize;
use stepscope_model::{Duration, GpuEventKind, RuntimeCallKind, Trace};

mod finding;
mod late_start;
mod timing;
mod totals;

pub(crate) use timing::overlapping_replays;

pub use finding::FindingKind;
pub use totals::{Counter, CoverageTotals, Range};

/// How a replay's recorded nodes compare with its graph; serialised as its lower-case name
/// ([`ReplayStatus::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayStatus {
    /// Every expected node recorded, and the expected size has evidence beyond this replay.
    Complete,
    /// Every node the trace can show recorded, but the expected size rests on this replay
    /// alone.
    Unverified,
    /// Some, not all.
    Short,
    /// None.
    Empty,
    /// Lost events to bad data (refused at import, or a correlation id two host calls
    /// share): not a runtime symptom.
    Damaged,
}

impl ReplayStatus {
    /// Lower-case name, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayStatus::Complete => "complete",
            ReplayStatus::Unverified => "unverified",
            ReplayStatus::Short => "short",
            ReplayStatus::Empty => "empty",
            ReplayStatus::Damaged => "damaged",
        }
    }
}

impl std::fmt::Display for ReplayStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Nodes a replay should have: exactly `low` when `high == Some(low)`, at least `low` when
/// `high` is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedNodes {
    /// At least.
    pub low: u32,
    /// At most (`None`: no upper bound in the trace).
    pub high: Option<u32>,
}

impl ExpectedNodes {
    fn at_least(nodes: u32) -> Self {
        ExpectedNodes {
            low: nodes,
            high: None,
        }
    }

    /// The exact number, when known.
    pub fn exact(self) -> Option<u32> {
        (self.high == Some(self.low)).then_some(self.low)
    }
}

/// One graph replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// Row of its launch in `trace.runtime`.
    pub launch: u32,
    /// Its step, if inside one.
    pub step: Option<usize>,
    /// Its graph (`None`: unknown).
    pub graph: Option<usize>,
    /// Recorded GPU events.
    pub recorded_nodes: u32,
    /// Expected nodes.
    pub expected: ExpectedNodes,
    /// Verdict for this replay.
    pub status: ReplayStatus,
    /// Kernel order differs from the reference replay's.
    pub order_mismatch: bool,
    /// Its kernels started after its step ended and after work launched later onto its
    /// stream had finished (see `timing`).
    pub deferred: bool,
    /// It holds kernels ten times longer and ten times shorter than the same names in its
    /// graph's other replays: durations paired with other kernels.
    pub implausible: bool,
    /// Sum of recorded GPU event durations.
    pub recorded_time: Duration,
    /// GPU time of the nodes that were not recorded: at least, estimate, at most.
    pub missing_time: Range<Duration>,
    /// Evidence for its graph (short, empty, damaged) or for its size (complete).
    pub evidence: Option<Evidence>,
    /// Why a replay that recorded its graph's size is not proven complete.
    pub unverified: Option<Unverified>,
    /// Why it is damaged.
    pub damage: Option<ReplayDamage>,
}

/// Totals for one graph (or, with `graph: None`, for replays of unknown graph).
#[derive(Debug, Clone, PartialEq)]
pub struct GraphCoverage {
    /// Index into the graphs; `None` for the unknown-graph row.
    pub graph: Option<usize>,
    /// `graph id` from the trace, where present.
    pub graph_id: Option<u64>,
    /// First kernel name of the reference order, to recognise the graph by.
    pub first_kernel: Option<String>,
    /// Expected nodes per replay, the likeliest (`None` for the unknown-graph row without
    /// a capture).
    pub expected_nodes: Option<u32>,
    /// Expected nodes per replay: at least, and at most (`None`: unbounded).
    pub expected_range: Option<(u32, Option<u32>)>,
    /// Where that number comes from (`None`: unknown).
    pub size_source: Option<SizeSource>,
    /// GPU time of the reference replay.
    pub reference_time: Duration,
    /// Counts.
    pub totals: CoverageTotals,
}

/// The overall finding; serialised as its name in JSON output ([`Verdict::as_str`]:
/// `complete`, `no-replays`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The trace holds no events at all.
    NoEvents,
    /// The trace has no graph replays.
    NoReplays,
    /// Every replay has every expected node, and every expected size has evidence.
    Complete,
    /// No replay is short, empty or damaged, but some replays' sizes rest on themselves.
    Unverified,
    /// The trace cannot show replays: GPU work with no launch linkage (no host runtime
    /// calls, or a format that records whole graphs); see `ReplayCoverage::unavailable`.
    Unavailable,
    /// Every replay has its kernels, but some were recorded at the wrong time: after their
    /// step, or with other kernels' durations.
    Mistimed,
    /// Some replays lost events to bad data; none is short or empty otherwise.
    Damaged,
    /// Some replays are short or empty.
    Incomplete,
}

impl Verdict {
    /// Every verdict, from least to most severe (their order).
    pub const ALL: [Verdict; 8] = [
        Verdict::NoEvents,
        Verdict::NoReplays,
        Verdict::Complete,
        Verdict::Unverified,
        Verdict::Unavailable,
        Verdict::Mistimed,
        Verdict::Damaged,
        Verdict::Incomplete,
    ];

    /// Lower-case name, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::NoEvents => "no-events",
            Verdict::NoReplays => "no-replays",
            Verdict::Complete => "complete",
            Verdict::Unverified => "unverified",
            Verdict::Unavailable => "unavailable",
            Verdict::Damaged => "damaged",
            Verdict::Mistimed => "mistimed",
            Verdict::Incomplete => "incomplete",
        }
    }

    /// Whether a pipeline gating with `--fail-on-incomplete` should fail (`strict`: also on
    /// unverified sizes).
    pub fn fails_gate(self, strict: bool) -> bool {
        match self {
            Verdict::Incomplete
            | Verdict::Damaged
            | Verdict::Mistimed
            | Verdict::Unavailable
            | Verdict::NoEvents => true,
            Verdict::Unverified => strict,
            Verdict::Complete | Verdict::NoReplays => false,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An eager launch that produced more than one GPU event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiKernelLaunch {
    /// API name.
    pub api: String,
    /// Launch calls of this API with more than one GPU event.
    pub launches: u32,
    /// Most GPU events seen for one call.
    pub max_events: u32,
}

/// Everything the pass found.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayCoverage {
    /// Verdict.
    pub verdict: Verdict,
    /// Every replay, in launch order.
    pub replays: Vec<Replay>,
    /// Per graph, in order of first replay; a last row with `graph: None` when some replays
    /// are of unknown graph.
    pub graphs: Vec<GraphCoverage>,
    /// All replays together.
    pub totals: CoverageTotals,
    /// GPU time of everything recorded in the trace (kernels, memcpys, memsets).
    pub recorded_gpu_time: Duration,
    /// Idle time on the replays' streams where missing nodes could have run: the hard upper
    /// bound of the missing time (`None` when not needed or unbounded).
    pub idle_bound: Option<Duration>,
    /// Some window where missing nodes may have run has no end in the trace.
    pub idle_unbounded: bool,
    /// Whether that idle time was summed per stream (the streams' work overlapped).
    pub idle_per_stream: bool,
    /// Graph launches made under stream capture (not replays).
    pub launches_under_capture: u32,
    /// Graph launch calls refused for bad data.
    pub refused_launches: u32,
    /// Eager launches with more than one GPU event, per API.
    pub multi_kernel_launches: Vec<MultiKernelLaunch>,
    /// GPU events whose correlation matches no host call.
    pub orphans: OrphanCounts,
    /// Host calls sharing a correlation id with an earlier one.
    pub duplicate_correlations: u64,
    /// Labels of launch slots (see `Evidence::StepSlot`).
    pub slot_labels: Vec<String>,
    /// Slot or cycle classes whose replays conflict (evidence not used).
    pub inconsistent_classes: u32,
    /// A search limit was hit (lanes longer than the cycle search, too many contents).
    pub limits_hit: Vec<&'static str>,
    /// Graphs (or unknown-graph replays) sized by the `--capture` trace.
    pub capture_matches: u32,
    /// Why the trace cannot show replays (verdict `unavailable`), and how to record one that
    /// can.
    pub unavailable: Option<String>,
}

/// Inputs besides the trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CoverageInputs<'a> {
    /// Launch links of the trace.
    pub links: &'a LaunchLinks,
    /// Steps of the trace.
    pub steps: &'a Steps,
    /// The replays.
    pub launches: &'a GraphLaunches,
    /// Their graphs.
    pub assignment: &'a GraphAssignment,
    /// Node count shared by every `--capture` graph, for replays of unknown graph.
    pub capture_size: Option<u32>,
}

/// What each replay is, before time is looked at.
pub(crate) fn judge_replays(inputs: CoverageInputs<'_>) -> Vec<(ReplayStatus, ExpectedNodes)> {
    inputs
        .launches
        .launches
        .iter()
        .enumerate()
        .map(|(r, launch)| judge(r, launch.sequence.len() as u32, launch.damage, inputs))
        .collect()
}

fn judge(
    r: usize,
    recorded: u32,
    damage: Option<ReplayDamage>,
    inputs: CoverageInputs<'_>,
) -> (ReplayStatus, ExpectedNodes) {
    let identity = &inputs.assignment.replays[r];
    let graph = identity.graph.map(|g| &inputs.assignment.graphs[g]);
    let expected = match (graph, inputs.capture_size) {
        (Some(def), _) => ExpectedNodes {
            low: def.expected_low,
            high: def.expected_high,
        },
        // A capture's launches can exceed its nodes by one (see `SizeSource::Capture`).
        (None, Some(nodes)) => ExpectedNodes {
            low: nodes.saturating_sub(1).max(1),
            high: Some(nodes),
        },
        (None, None) => ExpectedNodes::at_least(recorded.max(1)),
    };
    if let Some(damage) = damage {
        let refused = recorded + damage.refused_events;
        let low = expected.low.max(refused);
        return (ReplayStatus::Damaged, ExpectedNodes { low, ..expected });
    }
    if recorded == 0 {
        return (ReplayStatus::Empty, expected);
    }
    if let Some(Evidence::IdleGap { .. }) = identity.evidence {
        // The idle time shows nodes were lost, not how many: up to the bigger graph's size.
        let high = expected.high.map(|h| h.max(recorded + 1));
        return (
            ReplayStatus::Short,
            ExpectedNodes {
                low: recorded + 1,
                high,
            },
        );
    }
    if recorded < expected.low {
        return (ReplayStatus::Short, expected);
    }
    match identity.unverified {
        Some(Unverified::SoleReplay | Unverified::OthersRecordedLess { .. }) => {
            (ReplayStatus::Unverified, ExpectedNodes::at_least(recorded))
        }
        Some(
            Unverified::PossiblyShortOf { nodes, .. } | Unverified::CaptureHoldsMore { nodes },
        ) => (
            ReplayStatus::Unverified,
            ExpectedNodes {
                low: recorded,
                high: Some(nodes.max(recorded)),
            },
        ),
        None if graph.is_some_and(|g| g.size_source == SizeSource::Single) => {
            (ReplayStatus::Unverified, ExpectedNodes::at_least(recorded))
        }
        None => (ReplayStatus::Complete, expected),
    }
}

/// What may be missing from each judged replay, for the missing-time pass.
pub(crate) fn missing_nodes(
    judged: &[(ReplayStatus, ExpectedNodes)],
    inputs: CoverageInputs<'_>,
) -> Vec<MissingNodes> {
    judged
        .iter()
        .zip(&inputs.launches.launches)
        .map(|((status, expected), launch)| {
            let recorded = launch.sequence.len() as u32;
            MissingNodes {
                at_least: expected.low.saturating_sub(recorded),
                possible: !matches!(status, ReplayStatus::Complete),
            }
        })
        .collect()
}

/// Computes replay coverage from judged replays and their missing time.
pub(crate) fn replay_coverage(
    trace: &Trace,
    inputs: CoverageInputs<'_>,
    judged: &[(ReplayStatus, ExpectedNodes)],
    missing: &MissingTime,
) -> ReplayCoverage {
    let launches = &inputs.launches.launches;
    let (deferred, implausible) = timing::timing_flags(trace, inputs);
    let replays: Vec<Replay> = launches
        .iter()
        .enumerate()
        .map(|(r, launch)| {
            let identity = &inputs.assignment.replays[r];
            let (status, expected) = judged[r];
            let time = missing.per_replay[r];
            Replay {
                launch: launch.launch,
                step: launch.step,
                graph: identity.graph,
                recorded_nodes: launch.sequence.len() as u32,
                expected,
                status,
                order_mismatch: identity.order_mismatch,
                deferred: deferred[r],
                implausible: implausible[r],
                recorded_time: launch.recorded_time,
                missing_time: Range {
                    low: time.low,
                    estimate: time.estimate,
                    high: time.high,
                },
                evidence: identity.evidence,
                unverified: identity.unverified,
                damage: launch.damage,
            }
        })
        .collect();
    summarise(trace, inputs, replays, missing)
}

fn graph_rows(
    trace: &Trace,
    inputs: CoverageInputs<'_>,
    per_graph: Vec<CoverageTotals>,
    unknown: CoverageTotals,
) -> Vec<GraphCoverage> {
    let mut graphs: Vec<GraphCoverage> = inputs
        .assignment
        .graphs
        .iter()
        .enumerate()
        .map(|(g, def)| GraphCoverage {
            graph: Some(g),
            graph_id: def.graph_id,
            first_kernel: def.reference.first().map(|n| trace.name(*n).to_owned()),
            expected_nodes: Some(def.expected_nodes),
            expected_range: Some((def.expected_low, def.expected_high)),
            size_source: Some(def.size_source),
            reference_time: inputs.launches.launches[def.reference_replay].recorded_time,
            totals: per_graph[g],
        })
        .collect();
    if unknown.replays > 0 {
        graphs.push(GraphCoverage {
            graph: None,
            graph_id: None,
            first_kernel: None,
            expected_nodes: inputs.capture_size,
            expected_range: inputs
                .capture_size
                .map(|n| (n.saturating_sub(1).max(1), Some(n))),
            size_source: inputs.capture_size.map(|_| SizeSource::Capture),
            reference_time: Duration::ZERO,
            totals: unknown,
        });
    }
    graphs
}

fn summarise(
    trace: &Trace,
    inputs: CoverageInputs<'_>,
    replays: Vec<Replay>,
    missing: &MissingTime,
) -> ReplayCoverage {
    let assignment = inputs.assignment;
    let mut totals = CoverageTotals::default();
    let mut per_graph = vec![CoverageTotals::default(); assignment.graphs.len()];
    let mut unknown = CoverageTotals::default();
    for replay in &replays {
        totals.add(replay);
        match replay.graph {
            Some(g) => per_graph[g].add(replay),
            None => unknown.add(replay),
        }
    }
    totals.refused_launches = inputs.launches.refused_launches;
    totals.apply_idle_bound(missing.idle_bound);
    let graphs = graph_rows(trace, inputs, per_graph, unknown);
    let unavailable = unavailable(trace, &totals, inputs.links.orphans);
    ReplayCoverage {
        verdict: match unavailable {
            Some(_) => Verdict::Unavailable,
            None => verdict(trace, &totals),
        },
        unavailable,
        replays,
        graphs,
        totals,
        recorded_gpu_time: trace.gpu.duration.iter().copied().sum(),
        idle_bound: match missing.idle_bound {
            IdleBound::Bounded(bound) => Some(bound),
            _ => None,
        },
        idle_unbounded: missing.idle_bound == IdleBound::Unbounded,
        idle_per_stream: missing.idle_per_stream,
        launches_under_capture: inputs.launches.under_capture,
        refused_launches: inputs.launches.refused_launches,
        multi_kernel_launches: multi_kernel_launches(trace, inputs.links),
        orphans: inputs.links.orphans,
        duplicate_correlations: inputs.links.duplicate_correlations,
        slot_labels: inputs.launches.slots.clone(),
        inconsistent_classes: assignment.inconsistent_classes,
        limits_hit: Vec::new(),
        capture_matches: assignment.capture_matches,
    }
}

fn verdict(trace: &Trace, totals: &CoverageTotals) -> Verdict {
    let no_events = trace.counts.events == 0 && trace.gpu.is_empty() && trace.runtime.is_empty();
    if totals.short_replays + totals.empty_replays > 0 {
        Verdict::Incomplete
    } else if totals.damaged_replays + totals.refused_launches > 0 {
        Verdict::Damaged
    } else if totals.deferred_replays + totals.implausible_replays > 0 {
        Verdict::Mistimed
    } else if totals.unverified_replays > 0 {
        Verdict::Unverified
    } else if totals.replays > 0 {
        Verdict::Complete
    } else if no_events {
        Verdict::NoEvents
    } else {
        Verdict::NoReplays
    }
}

/// Hint for traces whose GPU work has no launching host calls at all.
pub(crate) const NO_HOST_CALLS: &str = "the trace holds GPU work but no host call that launches it (no runtime API events), so graph launches — and whether their kernels were recorded — cannot be seen; record the host side too (PyTorch profiler: activities CPU and CUDA; rocprofv3: --hip-trace or --runtime-trace; nsys: --trace=cuda)";

/// Why replays cannot be judged in this trace: what its reader said, or GPU work that no
/// launch call links to (none recorded, or none sharing a correlation id with it).
fn unavailable(trace: &Trace, totals: &CoverageTotals, orphans: OrphanCounts) -> Option<String> {
    if let Some(reason) = &trace.metadata.linkage_unavailable {
        return Some(reason.clone());
    }
    let gpu_events = trace.gpu.len() as u64;
    if gpu_events == 0 {
        return None;
    }
    let launches = trace.runtime.kind.iter().any(|kind| {
        matches!(
            kind,
            RuntimeCallKind::EagerLaunch | RuntimeCallKind::GraphLaunch
        )
    });
    if totals.replays == 0 && !launches {
        return Some(NO_HOST_CALLS.to_owned());
    }
    // With graph launches too: replays would all read as empty, and the runtime's symptom
    // be diagnosed, where the file lost what links GPU work to its launches.
    (orphans.kernels + orphans.transfers == gpu_events).then(|| {
        format!(
            "none of the {gpu_events} GPU events shares a correlation id with a host call: the host and GPU records are not of one run, or their ids were not recorded, so graph launches and their kernels cannot be matched; record both sides in one profiler run"
        )
    })
}

fn multi_kernel_launches(trace: &Trace, links: &LaunchLinks) -> Vec<MultiKernelLaunch> {
    let runtime = &trace.runtime;
    let mut by_api: std::collections::BTreeMap<&str, MultiKernelLaunch> =
        std::collections::BTreeMap::new();
    for row in 0..runtime.len() {
        if runtime.kind[row] != RuntimeCallKind::EagerLaunch {
            continue;
        }
        let launched = links.launched(row);
        let kernels = launched
            .iter()
            .filter(|&&r| trace.gpu.kind[r as usize] == GpuEventKind::Kernel)
            .count();
        if kernels > 1 {
            let api = trace.name(runtime.name[row]);
            let entry = by_api.entry(api).or_insert_with(|| MultiKernelLaunch {
                api: api.to_owned(),
                launches: 0,
                max_events: 0,
            });
            entry.launches += 1;
            entry.max_events = entry.max_events.max(launched.len() as u32);
        }
    }
    by_api.into_values().collect()
}
