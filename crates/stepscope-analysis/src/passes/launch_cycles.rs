//! Launch cycles: a repeating period in the sequence of graph launches on one host thread.
//!
//! What it computes: per lane (host thread), the smallest period `p` such that replays `p`
//! launches apart recorded the same graph: some two recorded replays exactly `p` launches
//! apart recorded the same work; no two recorded replays at the same position of the cycle
//! (*phase*) conflict (neither's work contains the other's); and pairs at a phase where one
//! is a strict part of the other (a short replay beside a complete one) are no more than
//! the pairs that recorded exactly the same work (*confirmations*). At least two full
//! periods must have been launched. Replays that recorded nothing neither confirm nor
//! contradict a period, so a phase never recorded gives no graph.
//! Only threads whose launches lie outside steps are searched: within steps the launch slot
//! says where a replay stands, and a cycle found inside one step (23 identical layer pieces)
//! would also claim the step's first and last pieces, which are other graphs.
//! Why it matters: without step annotations, the position in a cycle is the launch slot: an empty or short replay takes its expected
//! graph from the replays at its phase in other cycles, and two graphs that alternate
//! (forward and backward on two threads, or on one) are not mixed up by looking at the
//! nearest neighbours.
//! Example: HTA's A100 training trace launches 7 graphs on its forward thread and 7 on
//! its backward thread, 5 times each: period 7 on both lanes, 28 confirmations each.

use super::content_groups::{ContentGroups, Relation};
use super::graph_launches::GraphLaunches;

/// The largest period searched; longer lanes are searched up to it and counted.
pub(crate) const MAX_PERIOD: usize = 4096;

/// A lane's cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaunchCycle {
    /// Launches per cycle.
    pub period: u32,
    /// Pairs of replays at one phase that recorded the same work.
    pub confirmations: u32,
}

/// Cycles of every lane, and each replay's place in its lane's cycle.
#[derive(Debug, Clone, Default)]
pub(crate) struct LaunchCycles {
    /// Per lane (indices of [`GraphLaunches::lanes`]).
    pub by_lane: Vec<Option<LaunchCycle>>,
    /// Per replay: `(period, phase)` where its lane has a cycle.
    pub phase_of: Vec<Option<(u32, u32)>>,
    /// Lanes longer than two [`MAX_PERIOD`]s that had no cycle up to it (a limit was hit).
    pub lanes_over_limit: u32,
}

/// Finds each lane's cycle.
pub(crate) fn launch_cycles(launches: &GraphLaunches, groups: &ContentGroups) -> LaunchCycles {
    let mut result = LaunchCycles {
        by_lane: vec![None; launches.lanes.len()],
        phase_of: vec![None; launches.launches.len()],
        lanes_over_limit: 0,
    };
    for lane in 0..launches.lanes.len() {
        let members: Vec<usize> = (0..launches.launches.len())
            .filter(|&r| launches.launches[r].lane as usize == lane)
            .collect();
        // Steps give launch slots; inside a step a cycle would span its edges, where the
        // first and last pieces of a forward pass differ from the middle ones.
        if members.iter().any(|&r| launches.launches[r].step.is_some()) {
            continue;
        }
        let labels: Vec<Option<usize>> = members.iter().map(|&r| groups.group_of[r]).collect();
        let (cycle, over_limit) = find_period(&labels, groups);
        result.lanes_over_limit += u32::from(over_limit);
        if let Some(cycle) = cycle {
            for (position, &r) in members.iter().enumerate() {
                result.phase_of[r] = Some((cycle.period, (position as u32) % cycle.period));
            }
        }
        result.by_lane[lane] = cycle;
    }
    result
}

/// The smallest accepted period of `labels` (group per launch, `None` for nothing
/// recorded), and whether the search stopped at [`MAX_PERIOD`].
fn find_period(labels: &[Option<usize>], groups: &ContentGroups) -> (Option<LaunchCycle>, bool) {
    let recorded: Vec<(usize, usize)> = labels
        .iter()
        .enumerate()
        .filter_map(|(i, g)| g.map(|g| (i, g)))
        .collect();
    // No two replays recorded the same work: nothing can confirm a period.
    let distinct: std::collections::HashSet<usize> = recorded.iter().map(|(_, g)| *g).collect();
    if recorded.len() < 2 || (distinct.len() == recorded.len() && !has_graph_ids(&distinct, groups))
    {
        return (None, false);
    }
    let longest = labels.len() / 2;
    for period in 1..=longest.min(MAX_PERIOD) {
        if let Some(cycle) = evaluate(period, &recorded, groups) {
            return (Some(cycle), false);
        }
    }
    (None, longest > MAX_PERIOD)
}

fn has_graph_ids(distinct: &std::collections::HashSet<usize>, groups: &ContentGroups) -> bool {
    distinct
        .iter()
        .any(|&g| groups.groups[g].graph_id.is_some())
}

/// Per phase: the largest group seen, how many members recorded exactly it, and how many
/// recorded a strict part of it.
#[derive(Debug, Clone, Copy)]
struct Phase {
    largest: usize,
    exact: u32,
    nested: u32,
}

fn evaluate(
    period: usize,
    recorded: &[(usize, usize)],
    groups: &ContentGroups,
) -> Option<LaunchCycle> {
    if !adjacent_pair_agrees(period, recorded, groups) {
        return None;
    }
    let mut phases: Vec<Option<Phase>> = vec![None; period];
    for &(position, group) in recorded {
        let slot = &mut phases[position % period];
        let Some(phase) = slot else {
            *slot = Some(Phase {
                largest: group,
                exact: 1,
                nested: 0,
            });
            continue;
        };
        match groups.relation(group, phase.largest) {
            Relation::Equal => phase.exact += 1,
            Relation::Inside => phase.nested += 1,
            Relation::Contains => {
                phase.nested += phase.exact;
                phase.exact = 1;
                phase.largest = group;
            }
            Relation::Conflict => return None,
        }
    }
    let confirmations: u32 = phases.iter().flatten().map(|p| p.exact - 1).sum();
    let nested: u32 = phases.iter().flatten().map(|p| p.nested).sum();
    (confirmations >= 1 && confirmations >= nested).then_some(LaunchCycle {
        period: period as u32,
        confirmations,
    })
}

/// Whether two recorded replays exactly `period` launches apart recorded the same work:
/// without such a pair, `period` is not seen in the data (A ? A ? fits period 1 as well as
/// 2, and only the pairs at distance 2 were seen).
fn adjacent_pair_agrees(
    period: usize,
    recorded: &[(usize, usize)],
    groups: &ContentGroups,
) -> bool {
    let mut later = recorded.iter().peekable();
    recorded.iter().any(|&(position, group)| {
        while later.peek().is_some_and(|(p, _)| *p < position + period) {
            later.next();
        }
        later.peek().is_some_and(|&&(p, g)| {
            p == position + period && groups.relation(group, g) == Relation::Equal
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::content_groups::content_groups;
    use crate::passes::graph_launches::{GraphLaunch, GraphLaunches, Lane};
    use stepscope_model::{Duration, NameId, ProcessId, ThreadId};

    /// Launches on one lane recording these name lists (empty: nothing recorded).
    fn launches(contents: &[&[u32]]) -> GraphLaunches {
        let lane = Lane {
            process: ProcessId::from_index(0),
            thread: ThreadId::Number(1),
        };
        GraphLaunches {
            launches: contents
                .iter()
                .enumerate()
                .map(|(i, names)| GraphLaunch {
                    launch: i as u32,
                    lane: 0,
                    step: None,
                    slot: None,
                    position: None,
                    sequence: names
                        .iter()
                        .map(|&n| NameId::from_index(n as usize))
                        .collect(),
                    graph_id: None,
                    recorded_time: Duration::ZERO,
                    damage: None,
                })
                .collect(),
            lanes: vec![lane],
            ..GraphLaunches::default()
        }
    }

    fn period(contents: &[&[u32]]) -> Option<u32> {
        let launches = launches(contents);
        let groups = content_groups(&launches);
        launch_cycles(&launches, &groups).by_lane[0].map(|c| c.period)
    }

    #[test]
    fn alternating_graphs_have_period_two() {
        let (a, b): (&[u32], &[u32]) = (&[1, 2], &[3]);
        assert_eq!(period(&[a, b, a, b, a, b]), Some(2));
        // Every other replay lost: phase 1 is never seen, period 1 is not confirmed.
        assert_eq!(period(&[a, &[], a, &[], a, &[]]), Some(2));
    }

    #[test]
    fn a_short_replay_does_not_break_its_cycle() {
        let (a, b, c): (&[u32], &[u32], &[u32]) = (&[1, 2, 3], &[4], &[5, 6]);
        assert_eq!(period(&[a, b, c, a, b, c, &[1, 3], b, c]), Some(3));
    }

    #[test]
    fn nested_small_graphs_at_other_phases_are_not_a_cycle() {
        // A 1-node graph that is part of a 2-node graph, interleaved: period 2, not 1.
        let (a, b): (&[u32], &[u32]) = (&[1, 2], &[1]);
        assert_eq!(period(&[a, b, a, b, a, b]), Some(2));
    }

    #[test]
    fn a_lane_longer_than_the_search_is_counted() {
        // Three graphs in a pseudo-random order: no period, on a lane of 2 × 4,100 launches.
        let (a, b, c): (&[u32], &[u32], &[u32]) = (&[1], &[2], &[3]);
        let mut state = 7u64;
        let contents: Vec<&[u32]> = (0..8_200)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                [a, b, c][(state >> 33) as usize % 3]
            })
            .collect();
        let launches = launches(&contents);
        let groups = content_groups(&launches);
        let cycles = launch_cycles(&launches, &groups);
        assert_eq!(cycles.by_lane[0], None);
        assert_eq!(cycles.lanes_over_limit, 1);
    }

    #[test]
    fn no_cycle_without_repetition() {
        let (a, b, c): (&[u32], &[u32], &[u32]) = (&[1], &[2], &[3]);
        assert_eq!(period(&[a, b, b, b, c]), None);
        assert_eq!(period(&[a, &[], &[], &[]]), None);
    }
}
