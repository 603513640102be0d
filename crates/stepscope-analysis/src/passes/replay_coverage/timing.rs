//! Replays whose kernels were recorded at the wrong time: after their step, or with other
//! kernels' durations.
//!
//! What it computes, per replay launched inside a step whose first recorded GPU event
//! started after that step ended on the host (the GPU may run behind the host, so that
//! alone proves nothing):
//! - *deferred* when it also started after the **next** step of its process ended (a GPU
//!   more than a whole step behind a host that waits for its results each step), or after
//!   GPU work that its thread's process launched **later** onto one of the replay's streams
//!   had already finished (a stream runs its work in launch order, so a later launch cannot
//!   finish first unless the replay's timestamps are wrong);
//! - *implausible* when, against the median duration of the same kernel name in the same
//!   graph's replays (names seen in at least three replays), it holds a kernel ten times
//!   longer **and** one ten times shorter (each at least 10 µs away): durations paired with
//!   other kernels, not slower or faster work, which moves one way; or when one of its
//!   kernels ends at least 10 µs after the next of its kernels on the same stream started
//!   (a stream runs one kernel at a time; the shared real traces overlap by 2.4 µs at most).
//!
//! Why it matters: the per-stage breakdown and the step windows read kernels by their time;
//! a burst after the last step marker (sglang #31545) or names joined to the wrong timings
//! (ROCm/rocm-systems #10579) make every per-op figure wrong while every kernel is there.
//! Example: 24 decode replays whose kernels all start after the last step ended, while the
//! sampling kernels launched after each replay ran inside their steps → 24 deferred.

use super::CoverageInputs;
use crate::passes::graph_launches::GraphLaunches;
use crate::passes::launch_links::LaunchLinks;
use std::collections::HashMap;
use stepscope_model::{Duration, NameId, RuntimeCallKind, StreamId, Timestamp, Trace};

/// Per replay: deferred, implausible.
pub fn timing_flags(trace: &Trace, inputs: CoverageInputs<'_>) -> (Vec<bool>, Vec<bool>) {
    let order = StreamOrder::new(trace, inputs);
    let deferred = (0..inputs.launches.launches.len())
        .map(|r| is_deferred(trace, inputs, &order, r))
        .collect();
    let overlapping = overlapping_replays(trace, inputs.links, inputs.launches);
    let implausible = implausible(trace, inputs)
        .into_iter()
        .zip(overlapping)
        .map(|(a, b)| a || b)
        .collect();
    (deferred, implausible)
}

/// Overlap on one stream that no timer error explains.
const MIN_OVERLAP: Duration = Duration::from_nanos(10_000);

/// Per replay: one of its kernels ends at least 10 µs after the next of its
/// kernels on the same stream started. Its durations are not its kernels' own, and idle
/// gaps between its kernels are no evidence of missing nodes.
pub fn overlapping_replays(
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

/// Start of a replay's first recorded GPU event.
pub fn first_start(trace: &Trace, inputs: CoverageInputs<'_>, replay: usize) -> Option<Timestamp> {
    let launch = inputs.launches.launches[replay].launch as usize;
    inputs
        .links
        .launched(launch)
        .iter()
        .map(|&g| trace.gpu.start[g as usize])
        .min()
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
    let Some(first) = first_start(trace, inputs, replay) else {
        return false;
    };
    let steps = &inputs.steps.steps;
    if first <= steps[step].end {
        return false;
    }
    let past_next = steps
        .get(step + 1)
        .filter(|next| next.process == steps[step].process)
        .is_some_and(|next| first > next.end);
    past_next || order.overtaken(trace, inputs, replay, first)
}

/// Eager GPU work per stream, in host launch order, with the earliest end of everything
/// launched from each position on.
struct StreamOrder {
    streams: HashMap<(u32, StreamId), (Vec<Timestamp>, Vec<Timestamp>)>,
}

impl StreamOrder {
    fn new(trace: &Trace, inputs: CoverageInputs<'_>) -> Self {
        let runtime = &trace.runtime;
        let mut work: HashMap<(u32, StreamId), Vec<(Timestamp, Timestamp)>> = HashMap::new();
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
        let host = trace.runtime.start[launch];
        inputs.links.launched(launch).iter().any(|&g| {
            let key = (trace.gpu.device[g as usize], trace.gpu.stream[g as usize]);
            self.streams.get(&key).is_some_and(|(hosts, earliest)| {
                let after = hosts.partition_point(|&h| h <= host);
                earliest.get(after).is_some_and(|&end| end < first)
            })
        })
    }
}

/// Names seen in fewer replays give no typical duration.
const MIN_REPLAYS_PER_NAME: usize = 3;
/// An order of magnitude.
const FACTOR: i64 = 10;
/// Differences under this are timer noise on short kernels.
const MIN_DIFFERENCE: Duration = Duration::from_nanos(10_000);

fn implausible(trace: &Trace, inputs: CoverageInputs<'_>) -> Vec<bool> {
    let replays = &inputs.launches.launches;
    let graph_of = |r: usize| inputs.assignment.replays[r].graph;
    // (graph, name) → (durations, distinct replays).
    let mut seen: HashMap<(usize, NameId), (Vec<i64>, usize, usize)> = HashMap::new();
    for (r, launch) in replays.iter().enumerate() {
        let Some(graph) = graph_of(r) else { continue };
        for &g in inputs.links.launched(launch.launch as usize) {
            let g = g as usize;
            let entry =
                seen.entry((graph, trace.gpu.name[g]))
                    .or_insert((Vec::new(), 0, usize::MAX));
            entry.0.push(trace.gpu.duration[g].as_nanos());
            if entry.2 != r {
                entry.1 += 1;
                entry.2 = r;
            }
        }
    }
    let medians: HashMap<(usize, NameId), i64> = seen
        .into_iter()
        .filter(|(_, (_, replays, _))| *replays >= MIN_REPLAYS_PER_NAME)
        .map(|(key, (mut durations, _, _))| {
            let mid = durations.len() / 2;
            (key, *durations.select_nth_unstable(mid).1)
        })
        .collect();
    (0..replays.len())
        .map(|r| {
            graph_of(r).is_some_and(|graph| {
                let launched = inputs.links.launched(replays[r].launch as usize);
                let (mut longer, mut shorter) = (false, false);
                for &g in launched {
                    let g = g as usize;
                    let Some(&median) = medians.get(&(graph, trace.gpu.name[g])) else {
                        continue;
                    };
                    let d = trace.gpu.duration[g].as_nanos();
                    let gap = MIN_DIFFERENCE.as_nanos();
                    longer |= d > median * FACTOR && d - median >= gap;
                    shorter |= d * FACTOR < median && median - d >= gap;
                }
                longer && shorter
            })
        })
        .collect()
}
