//! Replays whose kernels were recorded at the wrong time: after their step, or with other
//! kernels' durations.
//!
//! What it computes, per replay launched inside a step whose first recorded GPU event
//! started after that step ended on the host (the GPU may run behind the host, so that
//! alone proves nothing):
//! - *deferred* when GPU work launched onto one of the replay's streams **after** its launch
//!   call returned had already finished before it started (a stream runs its work in launch
//!   order, so a later launch cannot finish first unless the replay's timestamps are wrong).
//!   Only GPU times are compared with GPU times: host and GPU clocks can be offset (the
//!   shared piecewise vLLM trace's kernels all start 125 ms after its only step ended), and
//!   a GPU may run steps behind its host, so lateness against step markers alone proves
//!   nothing. A trace whose every GPU event moved late, in order, cannot be told from an
//!   offset clock and is not flagged;
//! - *deferred* too when its first kernel started later after its launch than any eager
//!   launch of the file took to start, on an idle GPU ([`super::late_start`]): the witness
//!   for a file with a single replay and nothing launched after it on its stream;
//! - *implausible* when, against the median duration of the same node in its graph's other
//!   replays (a node: the k-th kernel of a name, seen in at least three replays), it holds a
//!   kernel ten times longer **and** one ten times shorter (each at least 10 µs away):
//!   durations paired with other kernels, not slower or faster work, which moves one way.
//!   Kernels overlapping on one stream are not taken for proof: some ROCm builds report a
//!   graph's parallel branches on its launch stream (ROCm/rocm-systems #8935); such replays
//!   only lose idle-gap evidence (see [`overlapping_replays`]).
//!
//! Why it matters: the per-stage breakdown and the step windows read kernels by their time;
//! a burst after the last step marker (sglang #31545) or names joined to the wrong timings
//! (ROCm/rocm-systems #10579) make every per-op figure wrong while every kernel is there.
//! Example: 24 decode replays whose kernels all start after the last step ended, while the
//! sampling kernels launched after each replay on the same stream ran inside their steps →
//! 24 deferred.

use super::CoverageInputs;
use crate::passes::graph_launches::GraphLaunches;
use crate::passes::launch_links::LaunchLinks;
use rustc_hash::FxHashMap as HashMap;
use stepscope_model::{Duration, NameId, RuntimeCallKind, StreamId, Timestamp, Trace};

/// Per replay: deferred, implausible.
pub(crate) fn timing_flags(trace: &Trace, inputs: CoverageInputs<'_>) -> (Vec<bool>, Vec<bool>) {
    let order = StreamOrder::new(trace, inputs);
    let late = super::late_start::late_replays(trace, inputs);
    let deferred = (0..inputs.launches.launches.len())
        .map(|r| late[r] || is_deferred(trace, inputs, &order, r))
        .collect();
    (deferred, implausible(trace, inputs))
}

/// Overlap on one stream that no timer error explains.
const MIN_OVERLAP: Duration = Duration::from_nanos(10_000);

/// Per replay: one of its kernels ends at least 10 µs after the next of its
/// kernels on the same stream started. Its durations are not its kernels' own, and idle
/// gaps between its kernels are no evidence of missing nodes.
pub(crate) fn overlapping_replays(
    trace: &Trace,
    links: &LaunchLinks,
    launches: &GraphLaunches,
) -> Vec<bool> {
    let gpu = &trace.gpu;
    launches
        .launches
        .iter()
        .map(|launch| {
            let mut rows: Vec<(u32, StreamId, Timestamp, Timestamp)> = links
                .launched(launch.launch as usize)
                .iter()
                .map(|&g| {
                    let g = g as usize;
                    (gpu.device[g], gpu.stream[g], gpu.start[g], gpu.end(g))
                })
                .collect();
            rows.sort_unstable();
            rows.windows(2)
                .any(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1) && w[0].3 - w[1].2 >= MIN_OVERLAP)
        })
        .collect()
}

fn is_deferred(
    trace: &Trace,
    inputs: CoverageInputs<'_>,
    order: &StreamOrder,
    replay: usize,
) -> bool {
    let Some(step) = inputs.launches.launches[replay].step else {
        return false;
    };
    let launch = inputs.launches.launches[replay].launch as usize;
    let Some(first) = inputs.links.first_start(trace, launch) else {
        return false;
    };
    let steps = &inputs.steps.steps;
    if first <= steps[step].end {
        return false;
    }
    order.overtaken(trace, inputs, replay, first)
}

/// Eager GPU work per stream, in host launch order, with the earliest end of everything
/// launched from each position on.
struct StreamOrder {
    streams: HashMap<(u32, StreamId), (Vec<Timestamp>, Vec<Timestamp>)>,
}

impl StreamOrder {
    fn new(trace: &Trace, inputs: CoverageInputs<'_>) -> Self {
        let runtime = &trace.runtime;
        let mut work: HashMap<(u32, StreamId), Vec<(Timestamp, Timestamp)>> = HashMap::default();
        for call in 0..runtime.len() {
            if runtime.kind[call] != RuntimeCallKind::EagerLaunch {
                continue;
            }
            for &g in inputs.links.launched(call) {
                let g = g as usize;
                work.entry((trace.gpu.device[g], trace.gpu.stream[g]))
                    .or_default()
                    .push((runtime.start[call], trace.gpu.end(g)));
            }
        }
        let streams = work
            .into_iter()
            .map(|(key, mut launches)| {
                launches.sort_unstable();
                let hosts = launches.iter().map(|l| l.0).collect();
                let mut earliest: Vec<Timestamp> = launches.iter().map(|l| l.1).collect();
                for i in (0..earliest.len().saturating_sub(1)).rev() {
                    earliest[i] = earliest[i].min(earliest[i + 1]);
                }
                (key, (hosts, earliest))
            })
            .collect();
        StreamOrder { streams }
    }

    /// Whether eager work launched after the replay onto one of its streams had finished
    /// before the replay's first event started.
    fn overtaken(
        &self,
        trace: &Trace,
        inputs: CoverageInputs<'_>,
        replay: usize,
        first: Timestamp,
    ) -> bool {
        let launch = inputs.launches.launches[replay].launch as usize;
        // Launches that began after the graph launch call returned were surely queued
        // after it, whatever thread made them.
        let host = trace.runtime.end(launch);
        inputs.links.launched(launch).iter().any(|&g| {
            let key = (trace.gpu.device[g as usize], trace.gpu.stream[g as usize]);
            self.streams.get(&key).is_some_and(|(hosts, earliest)| {
                let after = hosts.partition_point(|&h| h <= host);
                earliest.get(after).is_some_and(|&end| end < first)
            })
        })
    }
}

/// Nodes seen in fewer replays give no typical duration.
const MIN_REPLAYS_PER_NAME: usize = 3;
/// An order of magnitude.
const FACTOR: i64 = 10;
/// Differences under this are timer noise on short kernels.
const MIN_DIFFERENCE: Duration = Duration::from_nanos(10_000);

/// A node of a graph: the `k`-th kernel of a name in a replay, in start order (the same
/// name can run at several shapes in one graph, as a projection and the LM head do).
type NodeKey = (usize, NameId, u32);

/// Per replay of a known graph: its GPU events' node keys and durations.
fn nodes(trace: &Trace, inputs: CoverageInputs<'_>, replay: usize) -> Vec<(NodeKey, i64)> {
    let Some(graph) = inputs.assignment.replays[replay].graph else {
        return Vec::new();
    };
    let launch = inputs.launches.launches[replay].launch as usize;
    let mut rows: Vec<usize> = inputs
        .links
        .launched(launch)
        .iter()
        .map(|&g| g as usize)
        .collect();
    rows.sort_by_key(|&g| trace.gpu.start[g]);
    let mut seen: HashMap<NameId, u32> = HashMap::default();
    rows.into_iter()
        .map(|g| {
            let name = trace.gpu.name[g];
            let k = seen.entry(name).or_default();
            *k += 1;
            ((graph, name, *k), trace.gpu.duration[g].as_nanos())
        })
        .collect()
}

fn implausible(trace: &Trace, inputs: CoverageInputs<'_>) -> Vec<bool> {
    let per_replay: Vec<Vec<(NodeKey, i64)>> = (0..inputs.launches.launches.len())
        .map(|r| nodes(trace, inputs, r))
        .collect();
    let mut durations: HashMap<NodeKey, Vec<i64>> = HashMap::default();
    for (key, d) in per_replay.iter().flatten() {
        durations.entry(*key).or_default().push(*d);
    }
    let medians: HashMap<NodeKey, i64> = durations
        .into_iter()
        .filter(|(_, d)| d.len() >= MIN_REPLAYS_PER_NAME)
        .map(|(key, mut d)| {
            let mid = d.len() / 2;
            (key, *d.select_nth_unstable(mid).1)
        })
        .collect();
    let gap = MIN_DIFFERENCE.as_nanos();
    per_replay
        .iter()
        .map(|nodes| {
            let (mut longer, mut shorter) = (false, false);
            for (key, d) in nodes {
                let Some(&median) = medians.get(key) else {
                    continue;
                };
                longer |= *d > median * FACTOR && d - median >= gap;
                shorter |= d * FACTOR < median && median - d >= gap;
            }
            longer && shorter
        })
        .collect()
}
