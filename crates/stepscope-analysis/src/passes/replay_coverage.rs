//! Replay coverage: were the kernels of every graph replay recorded, completely and in order?
//!
//! What it computes (DESIGN.md §3): every graph launch is a replay; its GPU work is the
//! kernels, memcpys and memsets with its correlation id. Per graph and in total: coverage
//! (replays with ≥ 1 recorded node / replays), completeness (recorded / expected nodes),
//! empty and short replays, order mismatches, deferred bursts; plus eager launches with
//! more than one kernel and orphan GPU events; and a verdict.
//! Why it matters: several HIP runtimes make the ROCm profiler keep the kernels of only the
//! replay a host sync follows (1 of 127 in a measured 128-step window); every per-op share
//! computed from such a trace silently describes prefill and eager work instead of decode.
//! Example: 127 decode replays of a 764-node graph, one recorded → `incomplete`, coverage
//! 0.8 %, ≈ 96 % of the window's GPU time missing.

use super::capture_graphs::CapturedGraph;
use super::graph_identity::{GraphAssignment, ReplayContext, assign_graphs};
use super::launch_links::{LaunchLinks, OrphanCounts};
use super::steps::Steps;
use stepscope_model::{Duration, GpuEventKind, RuntimeCallKind, Trace};

/// How a replay's recorded nodes compare with its graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReplayStatus {
    /// Every expected node recorded.
    Complete,
    /// Some, not all.
    Short,
    /// None.
    Empty,
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
    /// Expected nodes, where known.
    pub expected_nodes: Option<u32>,
    /// Verdict for this replay.
    pub status: ReplayStatus,
    /// Kernel order differs from the reference replay's.
    pub order_mismatch: bool,
    /// Its kernels started after the step following its own had ended on the host.
    pub deferred: bool,
    /// Sum of recorded GPU event durations.
    pub recorded_time: Duration,
    /// Estimated GPU time of the nodes that were not recorded.
    pub missing_time: Duration,
    /// Evidence for its graph identity, where any was needed.
    pub evidence: Option<String>,
}

/// Where a graph's expected node count comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectedSource {
    /// A capture trace passed with `--capture`.
    CaptureTrace,
    /// The replay of this graph with the most recorded nodes.
    ReferenceReplay,
    /// Nothing recorded: unknown.
    Unknown,
}

/// Totals for one graph (or, with `graph: None`, for replays of unknown graph).
#[derive(Debug, Clone, PartialEq)]
pub struct GraphCoverage {
    /// Index into `ReplayCoverage::graphs` order; `None` for the unknown-graph row.
    pub graph: Option<usize>,
    /// `graph id` from the trace, where present.
    pub graph_id: Option<u64>,
    /// First kernel name of the reference order, to recognise the graph by.
    pub first_kernel: Option<String>,
    /// Expected nodes per replay.
    pub expected_nodes: Option<u32>,
    /// Where that number comes from.
    pub expected_source: ExpectedSource,
    /// GPU time of the reference replay.
    pub reference_time: Duration,
    /// Counts.
    pub totals: CoverageTotals,
}

/// Counts behind coverage and completeness.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CoverageTotals {
    /// Replays.
    pub replays: u32,
    /// Replays with at least one recorded node.
    pub recorded_replays: u32,
    /// Replays with every expected node.
    pub complete_replays: u32,
    /// Replays with some nodes missing.
    pub short_replays: u32,
    /// Replays with no recorded node.
    pub empty_replays: u32,
    /// Replays whose order differs from the reference.
    pub order_mismatches: u32,
    /// Replays whose kernels arrived after the next step ended.
    pub deferred_replays: u32,
    /// Recorded nodes.
    pub recorded_nodes: u64,
    /// Expected nodes over replays whose expectation is known.
    pub expected_nodes: u64,
    /// Replays whose expected count is unknown.
    pub unknown_expected: u32,
    /// Recorded replay GPU time.
    pub recorded_time: Duration,
    /// Estimated missing replay GPU time.
    pub missing_time: Duration,
}

impl CoverageTotals {
    fn add(&mut self, replay: &Replay) {
        self.replays += 1;
        self.recorded_replays += u32::from(replay.recorded_nodes > 0);
        match replay.status {
            ReplayStatus::Complete => self.complete_replays += 1,
            ReplayStatus::Short => self.short_replays += 1,
            ReplayStatus::Empty => self.empty_replays += 1,
        }
        self.order_mismatches += u32::from(replay.order_mismatch);
        self.deferred_replays += u32::from(replay.deferred);
        self.recorded_nodes += u64::from(replay.recorded_nodes);
        match replay.expected_nodes {
            Some(expected) => self.expected_nodes += u64::from(expected),
            None => self.unknown_expected += 1,
        }
        self.recorded_time = self.recorded_time + replay.recorded_time;
        self.missing_time = self.missing_time + replay.missing_time;
    }

    /// Replays with ≥ 1 recorded node / replays (1 when there are none).
    pub fn coverage(&self) -> f64 {
        ratio(u64::from(self.recorded_replays), u64::from(self.replays))
    }

    /// Recorded / expected nodes over replays whose expectation is known.
    pub fn completeness(&self) -> f64 {
        let recorded_known = self.recorded_nodes.min(self.expected_nodes);
        ratio(recorded_known, self.expected_nodes)
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

/// The overall finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every replay has every expected node.
    Complete,
    /// Some replays are short or empty.
    Incomplete,
    /// The trace has no graph replays.
    NoReplays,
}

impl Verdict {
    /// Lower-case name, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Complete => "complete",
            Verdict::Incomplete => "incomplete",
            Verdict::NoReplays => "no-replays",
        }
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
    /// Missing replay time as a share of recorded + missing GPU time.
    pub missing_share: f64,
    /// Graph launches made under stream capture (not replays).
    pub launches_under_capture: u32,
    /// Eager launches with more than one GPU event, per API.
    pub multi_kernel_launches: Vec<MultiKernelLaunch>,
    /// GPU events whose correlation matches no host call.
    pub orphans: OrphanCounts,
}

/// Inputs besides the trace.
#[derive(Debug, Clone, Copy)]
pub struct CoverageInputs<'a> {
    /// Launch links of the trace.
    pub links: &'a LaunchLinks,
    /// Steps of the trace.
    pub steps: &'a Steps,
    /// Captures in the trace itself (their launches are excluded).
    pub own_captures: &'a [CapturedGraph],
    /// Captured graphs from a capture trace (`--capture`), for expected node counts.
    pub capture: &'a [CapturedGraph],
}

/// Computes replay coverage.
pub fn replay_coverage(trace: &Trace, inputs: CoverageInputs<'_>) -> ReplayCoverage {
    let (launches, launches_under_capture) = graph_launches(trace, inputs.own_captures);
    let contexts = replay_contexts(trace, &launches, inputs);
    let assignment = assign_graphs(&contexts);
    let expected = expected_nodes(trace, &assignment, inputs.capture);
    let reference_times: Vec<Duration> = assignment
        .graphs
        .iter()
        .map(|g| replay_time(trace, inputs.links, launches[g.reference_replay]))
        .collect();
    let fallback_time = mean(&reference_times);
    let unknown_expected = uniform_capture_size(inputs.capture);
    let replays: Vec<Replay> = launches
        .iter()
        .enumerate()
        .map(|(r, &launch)| {
            let graph = assignment.graph_of[r];
            let expected_nodes = graph.map_or(unknown_expected, |g| expected[g].0);
            let reference = graph.map_or(fallback_time, |g| reference_times[g]);
            let recorded_nodes = contexts[r].sequence.len() as u32;
            let status = status_of(recorded_nodes, expected_nodes);
            Replay {
                launch: launch as u32,
                step: contexts[r].step,
                graph,
                recorded_nodes,
                expected_nodes,
                status,
                order_mismatch: assignment.order_mismatch[r],
                deferred: is_deferred(trace, inputs, launch, contexts[r].step),
                recorded_time: replay_time(trace, inputs.links, launch),
                missing_time: missing_time(recorded_nodes, expected_nodes, reference, status),
                evidence: assignment.evidence[r].clone(),
            }
        })
        .collect();
    let graphs = GraphFacts {
        assignment: &assignment,
        expected: &expected,
        reference_times: &reference_times,
    };
    summarise(trace, inputs, replays, graphs, launches_under_capture)
}

/// Per-graph facts computed before the replays are judged.
struct GraphFacts<'a> {
    assignment: &'a GraphAssignment,
    expected: &'a [(Option<u32>, ExpectedSource)],
    reference_times: &'a [Duration],
}

fn summarise(
    trace: &Trace,
    inputs: CoverageInputs<'_>,
    replays: Vec<Replay>,
    facts: GraphFacts<'_>,
    launches_under_capture: u32,
) -> ReplayCoverage {
    let GraphFacts {
        assignment,
        expected,
        reference_times,
    } = facts;
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
    let mut graphs: Vec<GraphCoverage> = assignment
        .graphs
        .iter()
        .enumerate()
        .map(|(g, def)| GraphCoverage {
            graph: Some(g),
            graph_id: def.graph_id,
            first_kernel: def.reference.first().map(|n| trace.name(*n).to_owned()),
            expected_nodes: expected[g].0,
            expected_source: expected[g].1,
            reference_time: reference_times[g],
            totals: per_graph[g],
        })
        .collect();
    if unknown.replays > 0 {
        graphs.push(unknown_graph(unknown, inputs.capture));
    }
    let recorded_gpu_time: Duration = trace.gpu.duration.iter().copied().sum();
    let denominator = (recorded_gpu_time + totals.missing_time).as_nanos();
    let missing_share = if denominator > 0 {
        totals.missing_time.as_nanos() as f64 / denominator as f64
    } else {
        0.0
    };
    ReplayCoverage {
        verdict: verdict(&totals),
        replays,
        graphs,
        totals,
        recorded_gpu_time,
        missing_share,
        launches_under_capture,
        multi_kernel_launches: multi_kernel_launches(trace, inputs.links),
        orphans: inputs.links.orphans,
    }
}

/// The row for replays whose graph could not be told.
fn unknown_graph(totals: CoverageTotals, capture: &[CapturedGraph]) -> GraphCoverage {
    let expected_nodes = uniform_capture_size(capture);
    let expected_source = if expected_nodes.is_some() {
        ExpectedSource::CaptureTrace
    } else {
        ExpectedSource::Unknown
    };
    GraphCoverage {
        graph: None,
        graph_id: None,
        first_kernel: None,
        expected_nodes,
        expected_source,
        reference_time: Duration::ZERO,
        totals,
    }
}

fn verdict(totals: &CoverageTotals) -> Verdict {
    if totals.replays == 0 {
        Verdict::NoReplays
    } else if totals.short_replays + totals.empty_replays > 0 {
        Verdict::Incomplete
    } else {
        Verdict::Complete
    }
}

fn status_of(recorded: u32, expected: Option<u32>) -> ReplayStatus {
    match (recorded, expected) {
        (0, _) => ReplayStatus::Empty,
        (r, Some(e)) if r < e => ReplayStatus::Short,
        _ => ReplayStatus::Complete,
    }
}

fn missing_time(
    recorded: u32,
    expected: Option<u32>,
    reference: Duration,
    status: ReplayStatus,
) -> Duration {
    match (status, expected) {
        (ReplayStatus::Complete, _) => Duration::ZERO,
        (_, Some(e)) if e > 0 => {
            let missing = f64::from(e.saturating_sub(recorded)) / f64::from(e);
            Duration::from_nanos((reference.as_nanos() as f64 * missing).round() as i64)
        }
        (ReplayStatus::Empty, _) => reference,
        _ => Duration::ZERO,
    }
}

fn mean(times: &[Duration]) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    let total: i64 = times.iter().map(|t| t.as_nanos()).sum();
    Duration::from_nanos(total / times.len() as i64)
}

/// Graph launches in host time order, without those made under stream capture.
fn graph_launches(trace: &Trace, captures: &[CapturedGraph]) -> (Vec<usize>, u32) {
    let runtime = &trace.runtime;
    let mut launches: Vec<usize> = (0..runtime.len())
        .filter(|&r| runtime.kind[r] == RuntimeCallKind::GraphLaunch)
        .collect();
    launches.sort_by_key(|&r| (runtime.start[r], r));
    let before = launches.len();
    launches.retain(|&r| {
        !captures
            .iter()
            .any(|c| c.contains(runtime.process[r], runtime.thread[r], runtime.start[r]))
    });
    let under_capture = (before - launches.len()) as u32;
    (launches, under_capture)
}

fn replay_contexts(
    trace: &Trace,
    launches: &[usize],
    inputs: CoverageInputs<'_>,
) -> Vec<ReplayContext> {
    let runtime = &trace.runtime;
    let steps: Vec<Option<usize>> = launches
        .iter()
        .map(|&l| {
            inputs
                .steps
                .containing(runtime.process[l], runtime.start[l])
        })
        .collect();
    let mut per_step: rustc_hash::FxHashMap<usize, u32> = rustc_hash::FxHashMap::default();
    for step in steps.iter().flatten() {
        *per_step.entry(*step).or_default() += 1;
    }
    let mut seen: rustc_hash::FxHashMap<usize, u32> = rustc_hash::FxHashMap::default();
    launches
        .iter()
        .zip(&steps)
        .map(|(&launch, &step)| {
            let rows = inputs.links.launched(launch);
            let slot = step.map(|s| {
                let position = seen.entry(s).or_default();
                *position += 1;
                (per_step[&s], *position - 1)
            });
            let step_key = step.map(|s| {
                let label = &inputs.steps.steps[s].label;
                format!(
                    "{} bs={}",
                    label.key(),
                    label.batch_size.map_or("?".to_owned(), |b| b.to_string())
                )
            });
            ReplayContext {
                sequence: rows.iter().map(|&r| trace.gpu.name[r as usize]).collect(),
                graph_id: rows.iter().find_map(|&r| trace.gpu.graph_id[r as usize]),
                step,
                slot,
                step_key,
            }
        })
        .collect()
}

fn replay_time(trace: &Trace, links: &LaunchLinks, launch: usize) -> Duration {
    links
        .launched(launch)
        .iter()
        .map(|&r| trace.gpu.duration[r as usize])
        .sum()
}

/// Expected nodes per graph: from the capture trace when one matches, else the reference.
fn expected_nodes(
    trace: &Trace,
    assignment: &GraphAssignment,
    capture: &[CapturedGraph],
) -> Vec<(Option<u32>, ExpectedSource)> {
    assignment
        .graphs
        .iter()
        .map(|graph| {
            let recorded = graph.reference.len() as u32;
            match matching_capture(trace, &graph.reference, capture) {
                Some(nodes) if nodes >= recorded => (Some(nodes), ExpectedSource::CaptureTrace),
                _ => (Some(recorded), ExpectedSource::ReferenceReplay),
            }
        })
        .collect()
}

/// The smallest captured graph that can hold `reference`: by kernel names where the
/// capture named them, else by count.
fn matching_capture(
    trace: &Trace,
    reference: &[stepscope_model::NameId],
    capture: &[CapturedGraph],
) -> Option<u32> {
    let names: Vec<&str> = reference.iter().map(|n| trace.name(*n)).collect();
    let fits = |c: &&CapturedGraph| {
        let captured: Vec<&str> = c
            .kernel_names
            .iter()
            .flatten()
            .map(String::as_str)
            .collect();
        if captured.len() == c.kernel_names.len() && !captured.is_empty() {
            let kernels: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| captured.contains(n))
                .collect();
            kernels.len() * 2 >= names.len() && is_str_subsequence(&kernels, &captured)
        } else {
            c.nodes as usize >= names.len()
        }
    };
    capture.iter().filter(fits).map(|c| c.nodes).min()
}

fn is_str_subsequence(small: &[&str], big: &[&str]) -> bool {
    let mut rest = big.iter();
    small.iter().all(|s| rest.any(|b| b == s))
}

/// The node count shared by every captured graph, if they all agree.
fn uniform_capture_size(capture: &[CapturedGraph]) -> Option<u32> {
    let first = capture.first()?.nodes;
    capture.iter().all(|c| c.nodes == first).then_some(first)
}

fn is_deferred(
    trace: &Trace,
    inputs: CoverageInputs<'_>,
    launch: usize,
    step: Option<usize>,
) -> bool {
    let Some(step) = step else { return false };
    let steps = &inputs.steps.steps;
    let Some(next) = steps
        .get(step + 1)
        .filter(|n| n.process == steps[step].process)
    else {
        return false;
    };
    let first_start = inputs
        .links
        .launched(launch)
        .iter()
        .map(|&r| trace.gpu.start[r as usize])
        .min();
    first_start.is_some_and(|start| start > next.end)
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
