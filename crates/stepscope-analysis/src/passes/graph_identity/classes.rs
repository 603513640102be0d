//! Position classes: replays that stand in the same place — one launch slot in steps with
//! the same label, or one phase of a lane's launch cycle — and so replay one graph.

use crate::passes::content_groups::{ContentGroups, Relation};
use crate::passes::graph_launches::GraphLaunches;
use crate::passes::launch_cycles::LaunchCycles;
use rustc_hash::FxHashMap;

/// What the recorded replays of one class agree on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Class {
    /// The group each recorded member recorded.
    pub members: Vec<usize>,
    /// The largest recorded group; every other recorded member's work is part of it.
    pub largest: usize,
    /// Members that recorded exactly `largest`.
    pub exact: u32,
    /// Recorded members in all.
    pub recorded: u32,
    /// False when two recorded members conflict (neither contains the other): the class
    /// then says nothing.
    pub consistent: bool,
}

impl Class {
    pub(super) fn new(group: usize) -> Self {
        Class {
            members: vec![group],
            largest: group,
            exact: 1,
            recorded: 1,
            consistent: true,
        }
    }

    pub(super) fn add(&mut self, group: usize, groups: &ContentGroups) {
        self.recorded += 1;
        self.members.push(group);
        match groups.relation(group, self.largest) {
            Relation::Equal => self.exact += 1,
            Relation::Inside => {}
            Relation::Contains => {
                self.largest = group;
                self.exact = 1;
            }
            Relation::Conflict => self.consistent = false,
        }
    }

    /// The class's graph as seen by a member that recorded `own` (`None`: nothing), if
    /// other members give one: `(largest group, members other than this one that recorded
    /// it)`.
    pub(crate) fn seen_by(&self, own: Option<usize>) -> Option<(usize, u32)> {
        if !self.consistent {
            return None;
        }
        let others = self.exact - u32::from(own == Some(self.largest));
        (others > 0).then_some((self.largest, others))
    }
}

/// Classes by launch slot and by cycle phase.
#[derive(Debug, Clone, Default)]
pub(crate) struct Classes {
    /// By slot id.
    pub by_slot: FxHashMap<u32, Class>,
    /// By `(lane, phase)`.
    pub by_phase: FxHashMap<(u32, u32), Class>,
}

impl Classes {
    /// Builds both kinds of class from the recorded, undamaged replays.
    pub fn new(launches: &GraphLaunches, groups: &ContentGroups, cycles: &LaunchCycles) -> Self {
        let mut classes = Classes::default();
        for (r, launch) in launches.launches.iter().enumerate() {
            let Some(group) = groups.group_of[r] else {
                continue;
            };
            if let Some(slot) = launch.slot {
                add(&mut classes.by_slot, slot, group, groups);
            }
            if let Some((_, phase)) = cycles.phase_of[r] {
                add(&mut classes.by_phase, (launch.lane, phase), group, groups);
            }
        }
        classes
    }

    /// Classes whose recorded replays conflict.
    pub(crate) fn inconsistent(&self) -> u32 {
        let count = |c: &Class| u32::from(!c.consistent);
        self.by_slot.values().map(count).sum::<u32>()
            + self.by_phase.values().map(count).sum::<u32>()
    }
}

fn add<K: std::hash::Hash + Eq>(
    map: &mut FxHashMap<K, Class>,
    key: K,
    group: usize,
    groups: &ContentGroups,
) {
    match map.get_mut(&key) {
        Some(class) => class.add(group, groups),
        None => {
            map.insert(key, Class::new(group));
        }
    }
}
