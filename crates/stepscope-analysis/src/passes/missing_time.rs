//! Missing time: how much GPU time the replays' unrecorded nodes took, as a range that
//! holds the truth.
//!
//! What it computes: per replay with nodes missing, a lower bound, an estimate and (where
//! its graph is known) a statistical upper bound of their GPU time; and for the trace, a
//! hard upper bound from the GPU's idle time.
//! - Known graph: each missing node is named (the graph's reference minus what the replay
//!   recorded); the other replays of the graph give that name's durations. Estimate: the
//!   mean; lower bound: half the shortest seen (a replay may run faster than every other
//!   sample: shorter contexts early in a window); statistical upper bound: twice the
//!   longest seen.
//! - Unknown graph: lower bound 0, no estimate.
//! - Idle-time bound: a replay's nodes run after its launch and before any GPU work
//!   launched after it on the same stream starts (stream order), so the missing nodes of
//!   all replays fit in the idle time of their streams inside those windows, summed per
//!   stream (see `stream_idle`). Every replay's window counts once any may miss nodes. A replay's streams are its own recorded ones, else its
//!   graph's, else those of its thread's replays or work.
//!
//! Why it matters: the share of GPU time that is missing says how wrong every per-op share
//! in the trace is; stating it more precisely than the trace allows misleads as much as
//! not stating it (a survivor from a small graph made 24 empty replays look cheap).
//! Example: piecewise vLLM with 24 of 25 replays emptied: graphs unknown, so the lower
//! bound is 0 and the upper bound is the GPU stream's idle time after the first empty
//! launch — the range holds the 21 % that is truly missing.

use super::content_groups::ContentGroups;
use super::graph_identity::GraphAssignment;
use super::graph_launches::{GraphLaunches, missing_names};
use super::launch_links::LaunchLinks;
use super::stream_idle::{StreamIdle, StreamKey};
use rustc_hash::{FxHashMap, FxHashSet};
use stepscope_model::{Duration, NameId, StreamId, Timestamp, Trace};

/// Missing GPU time of one replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ReplayMissing {
    /// At least this much.
    pub low: Duration,
    /// Best estimate (`None`: the graph is unknown).
    pub estimate: Option<Duration>,
    /// At most this much, from other replays' durations (`None`: no bound of its own).
    pub high: Option<Duration>,
}

/// The idle-time bound on the missing time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IdleBound {
    /// No replay may miss nodes.
    #[default]
    NotNeeded,
    /// At most this much.
    Bounded(Duration),
    /// Some replay's window has no end in the trace (no work launched after it on its
    /// stream, no device-wide synchronize): its nodes may have run after the last recorded
    /// event, as when recording stopped.
    Unbounded,
}

/// Missing time over a trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MissingTime {
    /// Per replay (zero for replays with nothing missing).
    pub per_replay: Vec<ReplayMissing>,
    /// Idle time of the replays' streams inside the windows where missing nodes ran: a
    /// hard upper bound on the total.
    pub idle_bound: IdleBound,
    /// Whether some replay's nodes may run on several streams, so idle time was summed
    /// over them.
    pub idle_per_stream: bool,
}

/// Which replays may miss nodes, and how many at least.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MissingNodes {
    /// Nodes certainly missing (0 for replays that may miss nodes but need not).
    pub at_least: u32,
    /// Whether nodes may be missing at all (short, empty, damaged or unverified).
    pub possible: bool,
}

/// Inputs besides the trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MissingInputs<'a> {
    /// Launch links.
    pub links: &'a LaunchLinks,
    /// Replays.
    pub launches: &'a GraphLaunches,
    /// Their content groups.
    pub groups: &'a ContentGroups,
    /// Their graphs.
    pub assignment: &'a GraphAssignment,
    /// Per replay: what may be missing.
    pub missing: &'a [MissingNodes],
}

/// Computes missing time per replay and the idle-time bound.
pub(crate) fn missing_time(trace: &Trace, inputs: MissingInputs<'_>) -> MissingTime {
    let stats = NodeStats::new(trace, inputs);
    let per_replay = (0..inputs.launches.launches.len())
        .map(|r| stats.replay(r, inputs))
        .collect();
    let (idle_bound, idle_per_stream) = idle_bound(trace, inputs);
    MissingTime {
        per_replay,
        idle_bound,
        idle_per_stream,
    }
}

/// Per graph and kernel name: shortest, longest, total and count of recorded durations.
struct NodeStats {
    by_graph_name: FxHashMap<(usize, NameId), (i64, i64, i64, i64)>,
}

impl NodeStats {
    fn new(trace: &Trace, inputs: MissingInputs<'_>) -> Self {
        let mut by_graph_name: FxHashMap<(usize, NameId), (i64, i64, i64, i64)> =
            FxHashMap::default();
        for (r, launch) in inputs.launches.launches.iter().enumerate() {
            let Some(graph) = inputs.assignment.replays[r].graph else {
                continue;
            };
            if inputs.groups.group_of[r].is_none() {
                continue;
            }
            for &row in inputs.links.launched(launch.launch as usize) {
                let row = row as usize;
                let duration = trace.gpu.duration[row].as_nanos();
                let entry = by_graph_name
                    .entry((graph, trace.gpu.name[row]))
                    .or_insert((i64::MAX, i64::MIN, 0, 0));
                *entry = (
                    entry.0.min(duration),
                    entry.1.max(duration),
                    entry.2 + duration,
                    entry.3 + 1,
                );
            }
        }
        NodeStats { by_graph_name }
    }

    fn replay(&self, r: usize, inputs: MissingInputs<'_>) -> ReplayMissing {
        let need = inputs.missing[r];
        if need.at_least == 0 {
            // Nothing certainly missing; a replay that may still miss nodes (unverified)
            // has no upper bound of its own: the idle-time bound covers it.
            return ReplayMissing {
                low: Duration::ZERO,
                estimate: Some(Duration::ZERO),
                high: (!need.possible).then_some(Duration::ZERO),
            };
        }
        let Some(graph) = inputs.assignment.replays[r].graph else {
            return ReplayMissing {
                low: Duration::ZERO,
                estimate: None,
                high: None,
            };
        };
        let def = &inputs.assignment.graphs[graph];
        let missing = missing_names(&def.reference, &inputs.launches.launches[r].sequence);
        let (mut low, mut estimate, mut high) = (0i64, 0i64, 0i64);
        for name in &missing {
            let Some(&(min, max, total, count)) = self.by_graph_name.get(&(graph, *name)) else {
                continue;
            };
            low += min / 2;
            estimate += total / count.max(1);
            high += max.saturating_mul(2);
        }
        // Nodes beyond the recorded reference (a capture says the graph is bigger) have no
        // name: count them at the graph's mean node time for the estimate only.
        let unnamed = need.at_least.saturating_sub(missing.len() as u32);
        let mean_node = if def.reference.is_empty() {
            0
        } else {
            estimate_reference(self, graph, &def.reference) / def.reference.len() as i64
        };
        ReplayMissing {
            low: Duration::from_nanos(low),
            estimate: Some(Duration::from_nanos(
                estimate + mean_node * i64::from(unnamed),
            )),
            high: (unnamed == 0).then_some(Duration::from_nanos(high)),
        }
    }
}

fn estimate_reference(stats: &NodeStats, graph: usize, reference: &[NameId]) -> i64 {
    reference
        .iter()
        .filter_map(|name| stats.by_graph_name.get(&(graph, *name)))
        .map(|&(_, _, total, count)| total / count.max(1))
        .sum()
}

/// Idle time of each replay's streams inside its window, summed per stream over the union
/// of windows. Once any replay may miss nodes, every replay's window counts: a replay judged
/// complete may have lost the same kernels as another (they then look alike), and the bound
/// must hold all the same.
fn idle_bound(trace: &Trace, inputs: MissingInputs<'_>) -> (IdleBound, bool) {
    let launches = &inputs.launches.launches;
    if !inputs.missing.iter().any(|m| m.possible) {
        return (IdleBound::NotNeeded, false);
    }
    let candidates: Vec<usize> = (0..launches.len()).collect();
    let streams: Vec<Vec<StreamKey>> = candidates
        .iter()
        .map(|&r| replay_streams(trace, inputs, r))
        .collect();
    let wanted: FxHashSet<StreamKey> = streams.iter().flatten().copied().collect();
    let idle = StreamIdle::new(trace, inputs.links, &wanted);
    let mut windows: FxHashMap<StreamKey, Vec<(Timestamp, Timestamp)>> = FxHashMap::default();
    let mut several = false;
    for (&r, keys) in candidates.iter().zip(&streams) {
        let call = launches[r].launch as usize;
        let (start, end) = (trace.runtime.start[call], trace.runtime.end(call));
        several |= keys.len() > 1;
        for &key in keys {
            let (from, until) = idle.window(key, start, end);
            let Some(until) = until else {
                return (IdleBound::Unbounded, several);
            };
            windows.entry(key).or_default().push((from, until));
        }
    }
    let total = windows
        .into_iter()
        .map(|(key, list)| idle.idle(key, list))
        .sum();
    (IdleBound::Bounded(total), several)
}

/// A stream no recorded work used: its idle time is its whole window.
const NO_STREAM: StreamKey = (u32::MAX, StreamId(u32::MAX));

/// The streams a replay's nodes run on: its own recorded ones, else its graph's, else
/// those of the graph replays on its thread, else those of any work its thread launched.
fn replay_streams(trace: &Trace, inputs: MissingInputs<'_>, r: usize) -> Vec<StreamKey> {
    let launches = &inputs.launches.launches;
    let streams_of = |replays: &mut dyn Iterator<Item = usize>| -> FxHashSet<StreamKey> {
        replays
            .flat_map(|m| {
                inputs
                    .links
                    .launched(launches[m].launch as usize)
                    .iter()
                    .copied()
            })
            .map(|row| {
                (
                    trace.gpu.device[row as usize],
                    trace.gpu.stream[row as usize],
                )
            })
            .collect()
    };
    let mut found = streams_of(&mut std::iter::once(r));
    if found.is_empty() {
        if let Some(graph) = inputs.assignment.replays[r].graph {
            found = streams_of(
                &mut (0..launches.len())
                    .filter(|&m| inputs.assignment.replays[m].graph == Some(graph)),
            );
        }
    }
    if found.is_empty() {
        let lane = launches[r].lane;
        found = streams_of(&mut (0..launches.len()).filter(|&m| launches[m].lane == lane));
    }
    if found.is_empty() {
        found = lane_streams(trace, inputs, launches[r].lane);
    }
    let mut found: Vec<StreamKey> = found.into_iter().collect();
    found.sort_unstable();
    if found.is_empty() {
        found.push(NO_STREAM);
    }
    found
}

/// The streams of GPU work launched from a lane's thread.
fn lane_streams(trace: &Trace, inputs: MissingInputs<'_>, lane: u32) -> FxHashSet<StreamKey> {
    let key = inputs.launches.lanes[lane as usize];
    let runtime = &trace.runtime;
    let mut streams = FxHashSet::default();
    for (row, launcher) in inputs.links.launcher.iter().enumerate() {
        let Some(call) = launcher else { continue };
        let call = *call as usize;
        if runtime.process[call] == key.process && runtime.thread[call] == key.thread {
            streams.insert((trace.gpu.device[row], trace.gpu.stream[row]));
        }
    }
    streams
}
