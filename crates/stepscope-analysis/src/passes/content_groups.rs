//! Content groups: graph replays that recorded exactly the same GPU work.
//!
//! What it computes: replays grouped by what they recorded — the `graph id` kernel arg where
//! the profiler wrote one, together with the multiset of recorded GPU event names — each
//! group with its members, its size and its reference order (the most common recorded
//! order); and, between two groups, whether one's work is contained in the other's
//! ([`Relation`]), answered from sorted name lists.
//! Why it matters: graph identity, launch cycles and coverage all compare replays; a replay
//! that lost kernels records a strict sub-multiset of its graph's nodes, while replays of
//! one graph in a different kernel order (a race in the profiler's ordering) hold the same
//! multiset. Comparing groups, not replays, keeps the work proportional to distinct
//! contents.
//! Example: the piecewise vLLM trace's 25 replays form 3 groups (4, 15 and 12 nodes; 23
//! members in the second); the 12-node group is `Inside` the 15-node one.

use super::graph_launches::GraphLaunches;
use rustc_hash::FxHashMap;
use stepscope_model::NameId;

/// How the recorded work of two groups compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relation {
    /// The same group (or, with `graph id`s, the same graph and size).
    Equal,
    /// The first is a strict sub-multiset of the second (fewer nodes, all present there).
    Inside,
    /// The first strictly contains the second.
    Contains,
    /// Neither contains the other; or two different `graph id`s.
    Conflict,
}

/// Replays that recorded the same work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContentGroup {
    /// `graph id` of its members' kernels, where the profiler wrote one.
    pub graph_id: Option<u64>,
    /// Member replays (indices into [`GraphLaunches::launches`]), in launch order.
    pub members: Vec<usize>,
    /// The member whose recorded order is the most common one: the reference order.
    pub reference: usize,
    /// Recorded GPU events per member.
    pub size: u32,
    /// Names sorted, for containment tests.
    sorted_names: Vec<NameId>,
}

/// All content groups of a trace.
#[derive(Debug, Clone, Default)]
pub(crate) struct ContentGroups {
    /// The groups, in order of first member.
    pub groups: Vec<ContentGroup>,
    /// Group of each replay; `None` for replays that recorded nothing or are damaged.
    pub group_of: Vec<Option<usize>>,
}

impl ContentGroups {
    /// How group `a` compares with group `b`.
    pub(crate) fn relation(&self, a: usize, b: usize) -> Relation {
        if a == b {
            return Relation::Equal;
        }
        let (ga, gb) = (&self.groups[a], &self.groups[b]);
        if let (Some(x), Some(y)) = (ga.graph_id, gb.graph_id) {
            return match (x == y, ga.size.cmp(&gb.size)) {
                (false, _) => Relation::Conflict,
                (true, std::cmp::Ordering::Less) => Relation::Inside,
                (true, std::cmp::Ordering::Greater) => Relation::Contains,
                // The same captured graph, recorded in another order or with other names.
                (true, std::cmp::Ordering::Equal) => Relation::Equal,
            };
        }
        if ga.size < gb.size && is_sub_multiset(&ga.sorted_names, &gb.sorted_names) {
            Relation::Inside
        } else if gb.size < ga.size && is_sub_multiset(&gb.sorted_names, &ga.sorted_names) {
            Relation::Contains
        } else {
            Relation::Conflict
        }
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.groups.len()
    }
}

/// Groups the recorded, undamaged replays by content.
pub(crate) fn content_groups(launches: &GraphLaunches) -> ContentGroups {
    let mut index: FxHashMap<(Option<u64>, Vec<NameId>), usize> = FxHashMap::default();
    let mut members: Vec<(Option<u64>, Vec<NameId>, Vec<usize>)> = Vec::new();
    let mut group_of = vec![None; launches.launches.len()];
    for (r, launch) in launches.launches.iter().enumerate() {
        if launch.sequence.is_empty() || launch.damage.is_some() {
            continue;
        }
        let mut sorted = launch.sequence.clone();
        sorted.sort_unstable();
        let key = (launch.graph_id, sorted);
        let next = members.len();
        let g = *index.entry(key.clone()).or_insert(next);
        if g == next {
            members.push((key.0, key.1, Vec::new()));
        }
        members[g].2.push(r);
        group_of[r] = Some(g);
    }
    let groups = members
        .into_iter()
        .map(|(graph_id, sorted_names, members)| {
            let reference = majority_order(&members, launches);
            ContentGroup {
                graph_id,
                size: sorted_names.len() as u32,
                members,
                reference,
                sorted_names,
            }
        })
        .collect();
    ContentGroups { groups, group_of }
}

/// The first member whose recorded order is the most common among the members.
fn majority_order(members: &[usize], launches: &GraphLaunches) -> usize {
    let mut counts: FxHashMap<&[NameId], usize> = FxHashMap::default();
    for &m in members {
        *counts.entry(&launches.launches[m].sequence).or_default() += 1;
    }
    let best = counts.values().copied().max().unwrap_or(0);
    members
        .iter()
        .copied()
        .find(|&m| counts[&launches.launches[m].sequence[..]] == best)
        .unwrap_or(members[0])
}

/// Whether sorted `small` is a sub-multiset of sorted `big`.
fn is_sub_multiset(small: &[NameId], big: &[NameId]) -> bool {
    let mut rest = big.iter();
    small.iter().all(|name| rest.any(|b| b == name))
}

/// Whether `small` is a subsequence of `big` (order kept, gaps allowed).
pub(crate) fn is_subsequence(small: &[NameId], big: &[NameId]) -> bool {
    let mut rest = big.iter();
    small.iter().all(|name| rest.any(|b| b == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(ids: &[u32]) -> Vec<NameId> {
        ids.iter()
            .map(|&i| NameId::from_index(i as usize))
            .collect()
    }

    #[test]
    fn sub_multisets_count_repeats() {
        assert!(is_sub_multiset(&names(&[1, 1, 3]), &names(&[1, 1, 2, 3])));
        assert!(!is_sub_multiset(&names(&[1, 1, 3]), &names(&[1, 2, 3])));
        assert!(is_sub_multiset(&names(&[]), &names(&[1])));
    }

    #[test]
    fn subsequences_keep_order() {
        assert!(is_subsequence(&names(&[1, 3]), &names(&[1, 2, 3])));
        assert!(!is_subsequence(&names(&[3, 1]), &names(&[1, 2, 3])));
    }
}
