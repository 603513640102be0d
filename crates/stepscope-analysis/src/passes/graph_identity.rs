//! Graph identity: which captured graph each replay is a replay of.
//!
//! What it computes: a graph for every replay — from the `graph id` kernel arg where the
//! profiler wrote one, else from the recorded kernel-name sequence — and, for replays whose
//! sequence is a strict subsequence of another graph's, whether they are *short replays* of
//! that graph or a graph of their own.
//! Why it matters: replays of different graphs differ in size (piecewise vLLM: 15, 12 and 4
//! kernels), so completeness can only be judged within one graph; and a genuinely smaller
//! graph (the last layer's 12-kernel piece is a prefix of the 15-kernel one) must not be
//! called a short replay.
//! Evidence, strongest first: (1) the same slot — launch position in steps with the same
//! number of launches — holds a bigger graph in other steps; (2) the sequence repeats
//! exactly, so it is a graph of its own; (3) the replay sits between two replays of the
//! bigger graph. Without evidence a replay is its own graph. Replays with no kernels take
//! the graph of their slot, of steps with the same label, or of their neighbours, else
//! stay unknown.

use rustc_hash::FxHashMap;
use stepscope_model::NameId;

/// Where a replay stands, as graph identity needs it.
#[derive(Debug, Clone)]
pub struct ReplayContext {
    /// Recorded GPU event names, in GPU start order.
    pub sequence: Vec<NameId>,
    /// `graph id` arg of its kernels, where present.
    pub graph_id: Option<u64>,
    /// Index of its step, if inside one.
    pub step: Option<usize>,
    /// Launches in that step and this launch's position among them.
    pub slot: Option<(u32, u32)>,
    /// The step's label key with batch size (e.g. `sglang:DECODE bs=32`).
    pub step_key: Option<String>,
}

/// A graph: a set of replays of one captured graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphDef {
    /// `graph id` from the trace, where present.
    pub graph_id: Option<u64>,
    /// The replay with the most recorded nodes: the reference order.
    pub reference_replay: usize,
    /// Its recorded sequence.
    pub reference: Vec<NameId>,
}

/// The outcome for all replays of a trace.
#[derive(Debug, Clone, Default)]
pub struct GraphAssignment {
    /// Graphs, ordered by first replay.
    pub graphs: Vec<GraphDef>,
    /// Graph of each replay (`None`: unknown graph).
    pub graph_of: Vec<Option<usize>>,
    /// Why a replay was matched as it was, where it took evidence.
    pub evidence: Vec<Option<String>>,
    /// Replays whose kernel order differs from their graph's reference order.
    pub order_mismatch: Vec<bool>,
}

/// Assigns every replay to a graph.
pub fn assign_graphs(replays: &[ReplayContext]) -> GraphAssignment {
    let groups = group_sequences(replays);
    let mut result = GraphAssignment {
        graphs: Vec::new(),
        graph_of: vec![None; replays.len()],
        evidence: vec![None; replays.len()],
        order_mismatch: vec![false; replays.len()],
    };
    let mut group_graph: Vec<Option<usize>> = vec![None; groups.len()];
    let supersets = find_supersets(&groups);
    let slots = SlotIndex::new(replays, &groups.group_of);
    for (g, group) in groups.groups.iter().enumerate() {
        for &replay in &group.members {
            result.order_mismatch[replay] = group.mismatched.contains(&replay);
            let target = short_of(replay, g, &groups, &supersets[g], &slots, replays);
            let graph_group = match target {
                Some((bigger, why)) => {
                    result.evidence[replay] = Some(why);
                    bigger
                }
                None => g,
            };
            let graph = *group_graph[graph_group].get_or_insert_with(|| {
                result
                    .graphs
                    .push(graph_def(&groups.groups[graph_group], replays));
                result.graphs.len() - 1
            });
            result.graph_of[replay] = Some(graph);
        }
    }
    assign_empty(replays, &groups.group_of, &group_graph, &slots, &mut result);
    order_graphs(&mut result);
    result
}

fn graph_def(group: &Group, replays: &[ReplayContext]) -> GraphDef {
    GraphDef {
        graph_id: group.graph_id,
        reference_replay: group.reference,
        reference: replays[group.reference].sequence.clone(),
    }
}

/// Renumbers graphs by their first replay so output does not depend on hash order.
fn order_graphs(result: &mut GraphAssignment) {
    let mut first = vec![usize::MAX; result.graphs.len()];
    for (replay, graph) in result.graph_of.iter().enumerate() {
        if let Some(g) = graph {
            first[*g] = first[*g].min(replay);
        }
    }
    let mut order: Vec<usize> = (0..result.graphs.len()).collect();
    order.sort_by_key(|&g| first[g]);
    let mut new_index = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    result.graphs = order.iter().map(|&g| result.graphs[g].clone()).collect();
    for graph in result.graph_of.iter_mut().flatten() {
        *graph = new_index[*graph];
    }
}

/// Replays with the same recorded nodes (same graph id, or the same names in any order).
#[derive(Debug)]
struct Group {
    graph_id: Option<u64>,
    members: Vec<usize>,
    /// Members whose order differs from the majority order.
    mismatched: Vec<usize>,
    reference: usize,
    length: usize,
}

struct Groups {
    groups: Vec<Group>,
    group_of: Vec<Option<usize>>,
}

impl Groups {
    fn len(&self) -> usize {
        self.groups.len()
    }
}

fn group_sequences(replays: &[ReplayContext]) -> Groups {
    // Key: graph id, else the sorted multiset of names (order variants merge).
    let mut index: FxHashMap<(Option<u64>, Vec<NameId>), usize> = FxHashMap::default();
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut group_of = vec![None; replays.len()];
    for (r, replay) in replays.iter().enumerate() {
        if replay.sequence.is_empty() {
            continue;
        }
        let key = match replay.graph_id {
            Some(id) => (Some(id), Vec::new()),
            None => {
                let mut sorted = replay.sequence.clone();
                sorted.sort_unstable();
                (None, sorted)
            }
        };
        let next = members.len();
        let g = *index.entry(key).or_insert(next);
        if g == next {
            members.push(Vec::new());
        }
        members[g].push(r);
        group_of[r] = Some(g);
    }
    let groups = members
        .into_iter()
        .map(|m| make_group(m, replays))
        .collect();
    Groups { groups, group_of }
}

fn make_group(members: Vec<usize>, replays: &[ReplayContext]) -> Group {
    // Majority order is the reference order; the longest member is the reference replay.
    let mut orders: FxHashMap<&[NameId], usize> = FxHashMap::default();
    for &m in &members {
        *orders.entry(&replays[m].sequence).or_default() += 1;
    }
    let majority = members
        .iter()
        .map(|&m| &replays[m].sequence[..])
        .max_by_key(|s| (s.len(), orders[s]))
        .unwrap_or(&[]);
    let reference = members
        .iter()
        .copied()
        .find(|&m| replays[m].sequence[..] == *majority)
        .unwrap_or(members[0]);
    let graph_id = replays[reference].graph_id;
    let mismatched = if graph_id.is_some() {
        members
            .iter()
            .copied()
            .filter(|&m| !is_subsequence(&replays[m].sequence, majority))
            .collect()
    } else {
        members
            .iter()
            .copied()
            .filter(|&m| replays[m].sequence[..] != *majority)
            .collect()
    };
    Group {
        graph_id,
        length: majority.len(),
        members,
        mismatched,
        reference,
    }
}

/// Whether `small` is a subsequence of `big` (order kept, gaps allowed).
pub fn is_subsequence(small: &[NameId], big: &[NameId]) -> bool {
    let mut rest = big.iter();
    small.iter().all(|name| rest.any(|b| b == name))
}

/// For each sequence group, the bigger groups it is a strict subsequence of.
fn find_supersets(groups: &Groups) -> Vec<Vec<usize>> {
    // Bounded work: traces with thousands of distinct sequences are not graph workloads.
    const MAX_GROUPS: usize = 2_000;
    let mut supersets = vec![Vec::new(); groups.len()];
    if groups.len() > MAX_GROUPS {
        return supersets;
    }
    for (s, small) in groups.groups.iter().enumerate() {
        if small.graph_id.is_some() {
            continue;
        }
        for (t, big) in groups.groups.iter().enumerate() {
            if big.graph_id.is_none() && big.length > small.length {
                supersets[s].push(t);
            }
        }
    }
    supersets
}

/// Recorded replays per slot and per step key, for evidence.
struct SlotIndex {
    by_slot: FxHashMap<(u32, u32), Vec<usize>>,
    by_key: FxHashMap<(String, u32), Vec<usize>>,
}

impl SlotIndex {
    fn new(replays: &[ReplayContext], group_of: &[Option<usize>]) -> Self {
        let mut by_slot: FxHashMap<(u32, u32), Vec<usize>> = FxHashMap::default();
        let mut by_key: FxHashMap<(String, u32), Vec<usize>> = FxHashMap::default();
        for (r, replay) in replays.iter().enumerate() {
            if group_of[r].is_none() {
                continue;
            }
            if let Some(slot) = replay.slot {
                by_slot.entry(slot).or_default().push(r);
                if let Some(key) = &replay.step_key {
                    by_key.entry((key.clone(), slot.1)).or_default().push(r);
                }
            }
        }
        SlotIndex { by_slot, by_key }
    }

    /// The most common group among other recorded replays at `replay`'s slot, with its count.
    fn majority(
        &self,
        replay: usize,
        replays: &[ReplayContext],
        group_of: &[Option<usize>],
    ) -> Option<(usize, usize)> {
        let context = &replays[replay];
        let slot = context.slot?;
        let from_slot = self.by_slot.get(&slot);
        let from_key = context
            .step_key
            .as_ref()
            .and_then(|k| self.by_key.get(&(k.clone(), slot.1)));
        [from_slot, from_key]
            .into_iter()
            .flatten()
            .find_map(|others| majority_group(others, replay, group_of))
    }
}

fn majority_group(
    others: &[usize],
    exclude: usize,
    group_of: &[Option<usize>],
) -> Option<(usize, usize)> {
    let mut counts: FxHashMap<usize, usize> = FxHashMap::default();
    for &other in others.iter().filter(|&&o| o != exclude) {
        if let Some(g) = group_of[other] {
            *counts.entry(g).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .max_by_key(|&(g, count)| (count, std::cmp::Reverse(g)))
}

fn short_of(
    replay: usize,
    group: usize,
    groups: &Groups,
    supersets: &[usize],
    slots: &SlotIndex,
    replays: &[ReplayContext],
) -> Option<(usize, String)> {
    if supersets.is_empty() {
        return None;
    }
    let sequence = &replays[replay].sequence;
    let contains =
        |t: usize| is_subsequence(sequence, &replays[groups.groups[t].reference].sequence);
    if let Some((majority, count)) = slots.majority(replay, replays, &groups.group_of) {
        if majority == group {
            return None;
        }
        if supersets.contains(&majority) && contains(majority) {
            let slot = replays[replay].slot.unwrap_or_default();
            let why = format!(
                "launch {} of {} in its step; that position holds the {}-node graph in {count} other step(s)",
                slot.1 + 1,
                slot.0,
                groups.groups[majority].length
            );
            return Some((majority, why));
        }
    }
    if groups.groups[group].members.len() >= 2 {
        return None;
    }
    let (before, after) = recorded_neighbours(replay, replays, &groups.group_of);
    let (before, after) = (
        before.and_then(|b| groups.group_of[b]),
        after.and_then(|a| groups.group_of[a]),
    );
    match (before, after) {
        (Some(b), Some(a)) if a == b && supersets.contains(&b) && contains(b) => {
            let why = format!(
                "between two replays of the {}-node graph it is a subsequence of",
                groups.groups[b].length
            );
            Some((b, why))
        }
        _ => None,
    }
}

/// The nearest recorded replays before and after `replay` in launch order, within its
/// step when it has one.
fn recorded_neighbours(
    replay: usize,
    replays: &[ReplayContext],
    group_of: &[Option<usize>],
) -> (Option<usize>, Option<usize>) {
    let step = replays[replay].step;
    let same_step = |r: &usize| replays[*r].step == step;
    let before = (0..replay)
        .rev()
        .take_while(same_step)
        .find(|&r| group_of[r].is_some());
    let after = (replay + 1..replays.len())
        .take_while(same_step)
        .find(|&r| group_of[r].is_some());
    (before, after)
}

fn assign_empty(
    replays: &[ReplayContext],
    group_of: &[Option<usize>],
    group_graph: &[Option<usize>],
    slots: &SlotIndex,
    result: &mut GraphAssignment,
) {
    for (replay, context) in replays.iter().enumerate() {
        if !context.sequence.is_empty() {
            continue;
        }
        if let Some((group, count)) = slots.majority(replay, replays, group_of) {
            let slot = context.slot.unwrap_or_default();
            result.graph_of[replay] = group_graph[group];
            result.evidence[replay] = Some(format!(
                "no kernels recorded; launch {} of {} in its step, a position that holds this graph in {count} other step(s)",
                slot.1 + 1,
                slot.0
            ));
            continue;
        }
        let (before, after) = recorded_neighbours(replay, replays, group_of);
        let graphs = (
            before.and_then(|b| result.graph_of[b]),
            after.and_then(|a| result.graph_of[a]),
        );
        if let (Some(b), Some(a)) = graphs {
            if a == b {
                result.graph_of[replay] = Some(a);
                result.evidence[replay] = Some(
                    "no kernels recorded; between two recorded replays of this graph".to_owned(),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(ids: &[u32]) -> Vec<NameId> {
        ids.iter()
            .map(|&i| NameId::from_index(i as usize))
            .collect()
    }

    fn context(sequence: &[u32], step: usize, slot: (u32, u32)) -> ReplayContext {
        ReplayContext {
            sequence: names(sequence),
            graph_id: None,
            step: Some(step),
            slot: Some(slot),
            step_key: None,
        }
    }

    #[test]
    fn subsequence() {
        assert!(is_subsequence(&names(&[1, 3]), &names(&[1, 2, 3])));
        assert!(!is_subsequence(&names(&[3, 1]), &names(&[1, 2, 3])));
        assert!(is_subsequence(&names(&[]), &names(&[1])));
    }

    #[test]
    fn prefix_piece_at_end_of_single_step_is_its_own_graph() {
        let layer: Vec<u32> = (10..25).collect();
        let mut replays = vec![context(&[1, 2, 3, 4], 0, (25, 0))];
        for p in 1..24 {
            replays.push(context(&layer, 0, (25, p)));
        }
        replays.push(context(&layer[..12], 0, (25, 24)));
        let out = assign_graphs(&replays);
        assert_eq!(out.graphs.len(), 3);
        assert_ne!(out.graph_of[24], out.graph_of[23]);
    }

    #[test]
    fn shortened_replay_inside_a_run_is_short() {
        let layer: Vec<u32> = (10..25).collect();
        let mut replays = vec![context(&[1, 2, 3, 4], 0, (25, 0))];
        for p in 1..24 {
            replays.push(context(&layer, 0, (25, p)));
        }
        replays.push(context(&layer[..12], 0, (25, 24)));
        let short: Vec<u32> = layer.iter().copied().filter(|k| k % 3 != 0).collect();
        replays[7] = context(&short, 0, (25, 7));
        let out = assign_graphs(&replays);
        assert_eq!(out.graphs.len(), 3);
        assert_eq!(out.graph_of[7], out.graph_of[6]);
        assert!(
            out.evidence[7]
                .as_deref()
                .unwrap()
                .contains("between two replays")
        );
    }

    #[test]
    fn empty_replays_take_their_slot_graph() {
        let graph: Vec<u32> = (0..300).collect();
        let mut replays: Vec<ReplayContext> = (0..10).map(|s| context(&[], s, (1, 0))).collect();
        replays[9] = context(&graph, 9, (1, 0));
        let out = assign_graphs(&replays);
        assert_eq!(out.graphs.len(), 1);
        assert!(out.graph_of.iter().all(|g| *g == Some(0)));
    }

    #[test]
    fn repeated_small_graphs_stay_separate() {
        // A 14-launch cycle where 1-kernel graphs are subsequences of 2-kernel ones.
        let cycle: [&[u32]; 3] = [&[1, 2], &[1], &[2]];
        let replays: Vec<ReplayContext> = (0..15)
            .map(|i| ReplayContext {
                sequence: names(cycle[i % 3]),
                graph_id: None,
                step: None,
                slot: None,
                step_key: None,
            })
            .collect();
        let out = assign_graphs(&replays);
        assert_eq!(out.graphs.len(), 3);
        assert!(out.evidence.iter().all(Option::is_none));
    }
}
