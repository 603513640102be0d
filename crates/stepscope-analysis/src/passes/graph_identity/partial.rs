//! Partial slots and runs: replays that each recorded a different part of one graph, and
//! the graph they imply (the union of the parts).

use super::classes::{Class, Classes};
use super::{Context, GraphDef, SizeSource, Unverified};
use crate::passes::content_groups::{ContentGroups, Relation};
use crate::passes::graph_launches::GraphLaunches;
use rustc_hash::FxHashMap;

/// A launch slot whose replays each recorded a different part of one graph: the union of
/// what they recorded is a lower bound of its size (the roctracer race on ROCm 7.2.0–7.2.1
/// keeps 26–65 % of each replay's kernels, a different part every time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialSlot {
    /// Where its replays stand.
    pub key: PartialKey,
    /// Nodes the graph has at least: the union's size at a slot (one graph by position);
    /// the largest part in a run (the run may hold a smaller graph whose names are all in
    /// the bigger one's).
    pub floor: u32,
    /// The content groups of its members.
    pub member_groups: Vec<usize>,
    /// Names of the union (a multiset: the most of each name any member recorded), in the
    /// largest member's order, then the rest.
    pub union: Vec<stepscope_model::NameId>,
    /// Recorded members.
    pub members: u32,
}

/// Where the replays of a [`PartialSlot`] stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PartialKey {
    /// One launch slot, across steps.
    Slot(u32),
    /// One thread's launches in one step, `(lane, step)`: one graph replayed per layer, each
    /// replay keeping a different part.
    Run(u32, usize),
}

/// Recorded replays a run needs: fewer parts say too little.
pub(crate) const MIN_RUN: usize = 6;
/// Runs longer than this are not compared pair by pair.
const MAX_RUN: usize = 512;

/// The members no other member holds: each kept a part the others lack. A part inside
/// another may be a smaller graph's whole; the other evidence judges it.
fn maximal_parts(members: &[usize], groups: &ContentGroups) -> Vec<usize> {
    members
        .iter()
        .copied()
        .filter(|&a| {
            members
                .iter()
                .all(|&b| groups.relation(a, b) != Relation::Inside)
        })
        .collect()
}

/// The slots whose recorded replays conflict yet read as parts of one graph: the union is
/// at most 3× the largest member, and typical pairs share at least a fifth of the smaller
/// one's nodes (parts of one graph overlap; different graphs hardly do).
pub(crate) fn partial_slots(
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
    let mut found: Vec<PartialSlot> = slots
        .into_iter()
        .filter_map(|&slot| {
            let class = &classes.by_slot[&slot];
            partial_slot(PartialKey::Slot(slot), class, groups, launches)
        })
        .collect();
    found.extend(partial_runs(groups, launches));
    found
}

/// Runs — one thread's recorded replays in one step — whose members all recorded different
/// work (a run of distinct graphs repeats some, as layers do) and read as parts of one graph
/// once the members that cannot be are set aside: any holding a name no other member holds
/// (a part of a shared graph keeps names the others keep too), or smaller than a third of
/// the largest, or inside another member. At least [`MIN_RUN`] members must remain. The
/// largest part is the floor of the graph's size: that takes the run for one graph, which
/// its members' conflicts over one shared set of names support; a
/// smaller graph whose every name the bigger one has, launched in the same step, would
/// read as a part of it.
fn partial_runs(groups: &ContentGroups, launches: &GraphLaunches) -> Vec<PartialSlot> {
    let mut runs: std::collections::BTreeMap<(u32, usize), Vec<usize>> = Default::default();
    for (r, launch) in launches.launches.iter().enumerate() {
        if let (Some(step), Some(group)) = (launch.step, groups.group_of[r]) {
            runs.entry((launch.lane, step)).or_default().push(group);
        }
    }
    runs.into_iter()
        .filter(|(_, members)| members.len() >= MIN_RUN)
        .filter_map(|((lane, step), members)| {
            let mut sorted = members.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if sorted.len() != members.len() {
                return None;
            }
            let kept = shared_parts(&members, groups, launches);
            if kept.len() > MAX_RUN {
                return None;
            }
            let kept = maximal_parts(&kept, groups);
            if kept.len() < MIN_RUN {
                return None;
            }
            let mut class = Class::new(kept[0]);
            kept[1..].iter().for_each(|&g| class.add(g, groups));
            if class.consistent || groups.groups[class.largest].size < 4 {
                return None;
            }
            partial_slot(PartialKey::Run(lane, step), &class, groups, launches)
        })
        .collect()
}

/// The members without a name of their own and at least a third of the largest's size.
fn shared_parts(members: &[usize], groups: &ContentGroups, launches: &GraphLaunches) -> Vec<usize> {
    let mut holders: FxHashMap<stepscope_model::NameId, usize> = FxHashMap::default();
    for &member in members {
        let mut names = names_of(member, groups, launches);
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .for_each(|n| *holders.entry(n).or_default() += 1);
    }
    let shared: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&m| {
            names_of(m, groups, launches)
                .iter()
                .all(|n| holders[n] >= 2)
        })
        .collect();
    let largest = shared
        .iter()
        .map(|&m| groups.groups[m].size)
        .max()
        .unwrap_or(0);
    shared
        .into_iter()
        .filter(|&m| groups.groups[m].size * 3 >= largest)
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
    key: PartialKey,
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
    let floor = match key {
        PartialKey::Slot(_) => union.len() as u32,
        PartialKey::Run(..) => groups.groups[largest].size,
    };
    Some(PartialSlot {
        key,
        floor,
        member_groups: class.members.clone(),
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

/// The graph of a partial slot: its union, a lower bound.
pub(crate) fn union_def(
    context: &Context<'_>,
    reference: usize,
    partial: &PartialSlot,
) -> GraphDef {
    let launches = &context.inputs.launches.launches;
    let reference_replay = (0..launches.len())
        .filter(|&r| {
            let Some(group) = context.groups().group_of[r] else {
                return false;
            };
            match partial.key {
                PartialKey::Slot(slot) => launches[r].slot == Some(slot),
                PartialKey::Run(lane, step) => {
                    launches[r].lane == lane
                        && launches[r].step == Some(step)
                        && partial.member_groups.contains(&group)
                }
            }
        })
        .max_by_key(|&r| launches[r].sequence.len())
        .unwrap_or(0);
    let size = partial.union.len() as u32;
    GraphDef {
        graph_id: None,
        reference_group: reference,
        reference_replay,
        reference: partial.union.clone(),
        recorded_size: size,
        expected_nodes: size,
        expected_low: partial.floor,
        expected_high: None,
        size_source: SizeSource::Union(partial.members),
    }
}

/// Marks complete replays whose graph's size rests on themselves alone.
/// A run's largest part is its graph's floor: it may have lost nodes like the others.
pub(crate) fn run_floor(def: &GraphDef, size: u32) -> Option<Unverified> {
    let SizeSource::Union(members) = def.size_source else {
        return None;
    };
    (size >= def.expected_low && def.expected_nodes > def.expected_low).then_some(
        Unverified::OthersRecordedLess {
            replays: members.saturating_sub(1),
        },
    )
}
