//! Position classes: replays that stand in the same place — one launch slot in steps with
//! the same label, or one phase of a lane's launch cycle — and so replay one graph.

use crate::passes::content_groups::{ContentGroups, Relation};
use crate::passes::graph_launches::GraphLaunches;
use crate::passes::launch_cycles::LaunchCycles;
use rustc_hash::FxHashMap;

/// What the recorded replays of one class agree on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
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
    fn new(group: usize) -> Self {
        Class {
            members: vec![group],
            largest: group,
            exact: 1,
            recorded: 1,
            consistent: true,
        }
    }

    fn add(&mut self, group: usize, groups: &ContentGroups) {
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
    pub fn seen_by(&self, own: Option<usize>) -> Option<(usize, u32)> {
        if !self.consistent {
            return None;
        }
        let others = self.exact - u32::from(own == Some(self.largest));
        (others > 0).then_some((self.largest, others))
    }
}

/// Classes by launch slot and by cycle phase.
#[derive(Debug, Clone, Default)]
pub struct Classes {
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
    pub fn inconsistent(&self) -> u32 {
        let count = |c: &Class| u32::from(!c.consistent);
        self.by_slot.values().map(count).sum::<u32>()
            + self.by_phase.values().map(count).sum::<u32>()
    }
}

/// A launch slot whose replays each recorded a different part of one graph: the union of
/// what they recorded is a lower bound of its size (the roctracer race on ROCm 7.2.0–7.2.1
/// keeps 26–65 % of each replay's kernels, a different part every time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialSlot {
    /// The slot.
    pub slot: u32,
    /// Names of the union (a multiset: the most of each name any member recorded), in the
    /// largest member's order, then the rest.
    pub union: Vec<stepscope_model::NameId>,
    /// Recorded members.
    pub members: u32,
}

/// The slots whose recorded replays conflict yet read as parts of one graph: the union is
/// at most 3× the largest member, and typical pairs share at least a fifth of the smaller
/// one's nodes (parts of one graph overlap; different graphs hardly do).
pub fn partial_slots(
    classes: &Classes,
    groups: &ContentGroups,
    launches: &GraphLaunches,
) -> Vec<PartialSlot> {
    let mut slots: Vec<&u32> = classes
        .by_slot
        .iter()
        .filter(|(_, c)| !c.consistent && c.recorded >= 2)
        .map(|(slot, _)| slot)
        .collect();
    slots.sort_unstable();
    slots
        .into_iter()
        .filter_map(|&slot| partial_slot(slot, &classes.by_slot[&slot], groups, launches))
        .collect()
}

fn names_of(
    group: usize,
    groups: &ContentGroups,
    launches: &GraphLaunches,
) -> Vec<stepscope_model::NameId> {
    launches.launches[groups.groups[group].reference]
        .sequence
        .clone()
}

fn partial_slot(
    slot: u32,
    class: &Class,
    groups: &ContentGroups,
    launches: &GraphLaunches,
) -> Option<PartialSlot> {
    let mut counts: FxHashMap<stepscope_model::NameId, usize> = FxHashMap::default();
    let mut largest = class.members[0];
    for &member in &class.members {
        if groups.groups[member].size > groups.groups[largest].size {
            largest = member;
        }
        let mut own: FxHashMap<stepscope_model::NameId, usize> = FxHashMap::default();
        for name in names_of(member, groups, launches) {
            *own.entry(name).or_default() += 1;
        }
        for (name, n) in own {
            let entry = counts.entry(name).or_default();
            *entry = (*entry).max(n);
        }
    }
    let total: usize = counts.values().sum();
    if total > 3 * groups.groups[largest].size as usize
        || median_overlap(class, groups, launches) < 0.2
    {
        return None;
    }
    let mut union = names_of(largest, groups, launches);
    for name in &union {
        if let Some(n) = counts.get_mut(name) {
            *n -= 1;
        }
    }
    let mut rest: Vec<(stepscope_model::NameId, usize)> =
        counts.into_iter().filter(|(_, n)| *n > 0).collect();
    rest.sort_unstable();
    union.extend(
        rest.into_iter()
            .flat_map(|(name, n)| std::iter::repeat_n(name, n)),
    );
    Some(PartialSlot {
        slot,
        union,
        members: class.recorded,
    })
}

/// Median over pairs of consecutive members of the shared part (as a multiset) over the
/// smaller one's size.
fn median_overlap(class: &Class, groups: &ContentGroups, launches: &GraphLaunches) -> f64 {
    let mut overlaps: Vec<f64> = class
        .members
        .windows(2)
        .take(64)
        .map(|pair| {
            let (a, b) = (
                names_of(pair[0], groups, launches),
                names_of(pair[1], groups, launches),
            );
            let mut left: FxHashMap<stepscope_model::NameId, i64> = FxHashMap::default();
            for name in &a {
                *left.entry(*name).or_default() += 1;
            }
            let shared = b
                .iter()
                .filter(|name| {
                    let n = left.entry(**name).or_default();
                    *n -= 1;
                    *n >= 0
                })
                .count();
            shared as f64 / a.len().min(b.len()).max(1) as f64
        })
        .collect();
    overlaps.sort_by(f64::total_cmp);
    overlaps.get(overlaps.len() / 2).copied().unwrap_or(0.0)
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
