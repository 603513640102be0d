//! Graph launches: every graph replay of a trace, and where it stands.
//!
//! What it computes: each graph launch that is not made under stream capture, in host
//! time order, with its host thread (*lane*), its step, its *launch slot* — its position
//! among its lane's launches in its step, for steps with the same label — the GPU events
//! recorded under its correlation id (names in GPU start order, `graph id`, time), and
//! whether it is *damaged*: events with its correlation were refused for bad data, or
//! another host call claims its correlation id.
//! Why it matters: a replay's expected size comes from the replays that stand where it
//! stands (the same slot in other steps, the same place in a cycle of launches on its
//! thread), and damage must never pass for a runtime symptom.
//! Example: SGLang decode steps `step[DECODE bs=32]`, one launch each: every replay sits
//! in slot `sglang:DECODE bs=32`, position 1 of 1, on the scheduler thread.

use super::capture_graphs::CapturedGraph;
use super::launch_links::LaunchLinks;
use super::steps::Steps;
use rustc_hash::FxHashMap;
use stepscope_model::{
    DamagedTable, Duration, NameId, ProcessId, RuntimeCallKind, ThreadId, Trace,
};

/// A host thread that launches graphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lane {
    /// Process.
    pub process: ProcessId,
    /// Thread.
    pub thread: ThreadId,
}

/// Why a replay's recorded events cannot be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplayDamage {
    /// GPU events with its correlation id refused for bad data.
    pub refused_events: u32,
    /// Another host call carries the same correlation id, so its GPU events cannot be told
    /// from the other call's.
    pub shared_correlation: bool,
}

/// One graph replay.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphLaunch {
    /// Row of the launch in `trace.runtime`.
    pub launch: u32,
    /// Index into `GraphLaunches::lanes`.
    pub lane: u32,
    /// Its step, if inside one.
    pub step: Option<usize>,
    /// Its launch slot (index into `GraphLaunches::slots`), if inside a step.
    pub slot: Option<u32>,
    /// 0-based position among its lane's launches in its step, and their number.
    pub position: Option<(u32, u32)>,
    /// Recorded GPU event names, in GPU start order.
    pub sequence: Vec<NameId>,
    /// `graph id` of its kernels, where present.
    pub graph_id: Option<u64>,
    /// Sum of recorded GPU event durations.
    pub recorded_time: Duration,
    /// Damage, if any.
    pub damage: Option<ReplayDamage>,
}

/// The graph replays of one trace.
#[derive(Debug, Clone, Default)]
pub(crate) struct GraphLaunches {
    /// Replays in host launch order.
    pub launches: Vec<GraphLaunch>,
    /// Lanes, by first launch.
    pub lanes: Vec<Lane>,
    /// Slot labels: the step's slot key (e.g. `sglang:DECODE bs=32`) per slot id.
    pub slots: Vec<String>,
    /// Graph launches made under stream capture (not replays).
    pub under_capture: u32,
    /// Graph launch calls refused for bad data: replays that exist but cannot be placed.
    pub refused_launches: u32,
}

/// Inputs besides the trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchInputs<'a> {
    /// Launch links.
    pub links: &'a LaunchLinks,
    /// Steps.
    pub steps: &'a Steps,
    /// Captures in the trace itself: their launches are not replays.
    pub own_captures: &'a [CapturedGraph],
}

/// Collects every graph replay.
pub(crate) fn graph_launches(trace: &Trace, inputs: LaunchInputs<'_>) -> GraphLaunches {
    let runtime = &trace.runtime;
    let mut rows: Vec<usize> = (0..runtime.len())
        .filter(|&r| runtime.kind[r] == RuntimeCallKind::GraphLaunch)
        .collect();
    rows.sort_by_key(|&r| (runtime.start[r], r));
    let before = rows.len();
    rows.retain(|&r| {
        !inputs
            .own_captures
            .iter()
            .any(|c| c.contains(runtime.process[r], runtime.thread[r], runtime.start[r]))
    });
    let mut result = GraphLaunches {
        under_capture: (before - rows.len()) as u32,
        refused_launches: refused_graph_launches(trace),
        ..GraphLaunches::default()
    };
    let damage = damage_by_launch(trace, inputs.links, &rows);
    let mut places = Places::default();
    for (index, &row) in rows.iter().enumerate() {
        let launch = describe(trace, inputs, row, &mut result.lanes);
        result.launches.push(GraphLaunch {
            damage: damage[index],
            ..launch
        });
    }
    places.assign(trace, inputs.steps, &mut result);
    result
}

fn describe(
    trace: &Trace,
    inputs: LaunchInputs<'_>,
    row: usize,
    lanes: &mut Vec<Lane>,
) -> GraphLaunch {
    let runtime = &trace.runtime;
    let lane = Lane {
        process: runtime.process[row],
        thread: runtime.thread[row],
    };
    let lane_index = match lanes.iter().position(|l| *l == lane) {
        Some(index) => index,
        None => {
            lanes.push(lane);
            lanes.len() - 1
        }
    };
    let events = inputs.links.launched(row);
    GraphLaunch {
        launch: row as u32,
        lane: lane_index as u32,
        step: inputs.steps.containing(lane.process, runtime.start[row]),
        slot: None,
        position: None,
        sequence: events.iter().map(|&r| trace.gpu.name[r as usize]).collect(),
        graph_id: events.iter().find_map(|&r| trace.gpu.graph_id[r as usize]),
        recorded_time: events.iter().map(|&r| trace.gpu.duration[r as usize]).sum(),
        damage: None,
    }
}

/// Graph launch calls the importer refused (bad times, unknown phase), and refused calls
/// whose name could not be read (an id into a damaged string table) that GPU work is linked
/// to: any of them may have been a graph launch, so its replay cannot be vouched for.
fn refused_graph_launches(trace: &Trace) -> u32 {
    let refused = trace
        .damaged
        .events
        .iter()
        .filter(|e| e.table == DamagedTable::Runtime);
    let unnamed = refused.clone().any(|e| e.name.is_none());
    let launched: rustc_hash::FxHashSet<u64> = if unnamed {
        trace.gpu.correlation.iter().map(|c| c.0).collect()
    } else {
        rustc_hash::FxHashSet::default()
    };
    refused
        .filter(|e| match e.name {
            Some(name) => {
                RuntimeCallKind::classify(trace.name(name)) == RuntimeCallKind::GraphLaunch
            }
            None => e.correlation.0 != 0 && launched.contains(&e.correlation.0),
        })
        .count() as u32
}

/// Damage of each launch in `rows`: refused GPU events with its correlation, and shared ids.
fn damage_by_launch(
    trace: &Trace,
    links: &LaunchLinks,
    rows: &[usize],
) -> Vec<Option<ReplayDamage>> {
    let mut by_correlation: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    for (index, &row) in rows.iter().enumerate() {
        let correlation = trace.runtime.correlation[row];
        if correlation.is_some() {
            by_correlation.entry(correlation.0).or_default().push(index);
        }
    }
    let mut damage: Vec<Option<ReplayDamage>> = vec![None; rows.len()];
    let launches_of = |correlation: u64| by_correlation.get(&correlation).into_iter().flatten();
    for event in &trace.damaged.events {
        if event.table == DamagedTable::Gpu && event.correlation.is_some() {
            for &index in launches_of(event.correlation.0) {
                damage[index]
                    .get_or_insert_with(ReplayDamage::default)
                    .refused_events += 1;
            }
        }
    }
    for shared in &links.shared_correlations {
        for &index in launches_of(shared.0) {
            damage[index]
                .get_or_insert_with(ReplayDamage::default)
                .shared_correlation = true;
        }
    }
    damage
}

/// Interns launch slots: (step slot key, lane, launches of the lane in the step, position).
#[derive(Default)]
struct Places {
    ids: FxHashMap<(String, u32, u32, u32), u32>,
}

impl Places {
    fn assign(&mut self, trace: &Trace, steps: &Steps, result: &mut GraphLaunches) {
        let mut per_step_lane: FxHashMap<(usize, u32), u32> = FxHashMap::default();
        for launch in &result.launches {
            if let Some(step) = launch.step {
                *per_step_lane.entry((step, launch.lane)).or_default() += 1;
            }
        }
        let mut seen: FxHashMap<(usize, u32), u32> = FxHashMap::default();
        let mut keys: FxHashMap<usize, String> = FxHashMap::default();
        for launch in &mut result.launches {
            let Some(step) = launch.step else { continue };
            let count = per_step_lane[&(step, launch.lane)];
            let position = seen.entry((step, launch.lane)).or_default();
            let key = keys
                .entry(step)
                .or_insert_with(|| steps.steps[step].label.slot_key())
                .clone();
            let next = self.ids.len() as u32;
            let id = *self
                .ids
                .entry((key.clone(), launch.lane, count, *position))
                .or_insert_with(|| {
                    result.slots.push(key);
                    next
                });
            launch.slot = Some(id);
            launch.position = Some((*position, count));
            *position += 1;
        }
        let _ = trace;
    }
}

/// The reference's names that `recorded` lacks, as a multiset difference.
pub(crate) fn missing_names(reference: &[NameId], recorded: &[NameId]) -> Vec<NameId> {
    let mut left: FxHashMap<NameId, i64> = FxHashMap::default();
    for name in recorded {
        *left.entry(*name).or_default() += 1;
    }
    reference
        .iter()
        .filter(|name| {
            let count = left.entry(**name).or_default();
            *count -= 1;
            *count < 0
        })
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_names_are_a_multiset_difference() {
        let n = |i: usize| NameId::from_index(i);
        let reference = [n(1), n(2), n(1), n(3)];
        assert_eq!(missing_names(&reference, &[n(1), n(3)]), vec![n(2), n(1)]);
        assert!(missing_names(&reference, &reference).is_empty());
    }
}
