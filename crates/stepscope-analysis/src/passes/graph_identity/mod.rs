//! Graph identity: which captured graph each replay replays, how many nodes that graph has,
//! and the evidence for both.
//!
//! What it computes: graphs from the content groups (merged by `graph id` where the
//! profiler wrote one); for each replay its graph, the [`Evidence`] for it, and for a
//! replay that recorded its graph's full size but whose size rests on that replay alone,
//! why it is [`Unverified`].
//! Why it matters: replays of different graphs differ in size (piecewise vLLM: 15, 12 and 4
//! kernels), so completeness can only be judged within one graph; a genuinely smaller graph
//! (the last layer's 12-kernel piece is a prefix of the 15-kernel one) must not be called a
//! short replay; and a size nothing corroborates must be said to be unverified.
//!
//! Evidence, strongest first: a capture trace; the same launch slot in
//! other steps with the same label; the same phase of the lane's launch cycle; the graph's
//! `graph id`; two neighbours of the graph on the same thread (only on lanes with no
//! cycle, within one step); the replay's own content repeated elsewhere. A replay whose
//! work is a strict part of what its slot, phase, `graph id` or neighbours hold is a short
//! replay of that graph; an empty replay takes the graph its place holds, else its graph
//! is unknown.
//! Example: 32 SGLang decode steps `step[DECODE bs=32]`, one launch each, 31 empty: the one
//! recorded replay gives the slot's graph (764 nodes) to the 31 others, with the evidence
//! "launch 1 of 1 in its step; that slot holds the graph in 1 other step".

mod classes;
mod idle_gap;
mod partial;

use super::capture_graphs::CapturedGraph;
use super::content_groups::{ContentGroups, Relation, is_subsequence};
use super::graph_launches::GraphLaunches;
use super::launch_cycles::LaunchCycles;
use super::launch_links::LaunchLinks;
use super::steps::Steps;
use classes::{Class, Classes};
use idle_gap::IdleVerdict;
use partial::{PartialKey, PartialSlot, partial_slots, run_floor, union_def};
use rustc_hash::FxHashMap;
use rustc_hash::FxHashSet;
use stepscope_model::{Duration, NameId, Trace};

/// The most groups compared with each other when looking for a bigger graph a replay
/// could be short of; above it the search is skipped and counted.
pub(crate) const MAX_GROUPS: usize = 2_000;

/// Why a replay was given its graph, or why its graph's size holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// A captured graph (`--capture`, or a capture in the trace) of this many nodes.
    Capture {
        /// Nodes of the captured graph.
        nodes: u32,
    },
    /// The same launch slot holds the graph in other steps with the same label.
    StepSlot {
        /// Index into `GraphLaunches::slots` (its label).
        slot: u32,
        /// 0-based position among its lane's launches in its step.
        position: u32,
        /// Launches of its lane in its step.
        launches: u32,
        /// Other steps whose replay at this slot recorded the graph.
        other_steps: u32,
    },
    /// The other steps' replays at its launch slot each recorded a different part of one
    /// graph (none holds the others): their union is the graph's size, at least.
    PartialSlot {
        /// Index into `GraphLaunches::slots` (its label).
        slot: u32,
        /// 0-based position among its lane's launches in its step.
        position: u32,
        /// Launches of its lane in its step.
        launches: u32,
        /// Replays recorded at this slot.
        recorded: u32,
        /// Nodes in the union of what they recorded.
        union_nodes: u32,
    },
    /// The replays its thread launched in its step each recorded a different part of one
    /// set of kernels (none repeats, none holds a name the others lack): one graph per
    /// layer, each replay keeping a different part.
    PartialRun {
        /// Replays of the run read as parts.
        recorded: u32,
        /// Nodes in the union of what they recorded.
        union_nodes: u32,
        /// Nodes of the largest part: the graph has at least that many.
        largest: u32,
    },
    /// The same phase of its thread's repeating cycle of launches holds the graph.
    CyclePosition {
        /// Launches per cycle.
        period: u32,
        /// 0-based phase.
        phase: u32,
        /// Other cycles whose replay at this phase recorded the graph.
        other_cycles: u32,
    },
    /// Its kernels carry the graph's `graph id`.
    GraphId {
        /// The id.
        id: u64,
        /// Other replays that recorded the graph's full size.
        other_replays: u32,
    },
    /// The nearest recorded replays before and after it on its thread (within its step)
    /// are both of the graph, and the thread has no launch cycle.
    Neighbours,
    /// Its stream sat idle after its launch long enough to run the nodes it lacks, while
    /// the graph's replays are followed by far less idle time.
    IdleGap {
        /// Idle time in its window.
        idle: Duration,
        /// Half the shortest recorded durations of the nodes it lacks, summed.
        needed: Duration,
        /// Median idle time after the graph's replays.
        typical: Duration,
    },
    /// Other replays recorded exactly the same work.
    Repeated {
        /// How many.
        other_replays: u32,
    },
}

/// Why a replay that recorded its graph's full size is not proven complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unverified {
    /// The only replay that recorded this work, and nothing else gives its graph's size.
    SoleReplay,
    /// Its work is a strict part of another graph's: a graph of its own, or a short replay
    /// of that graph; nothing in the trace says which.
    PossiblyShortOf {
        /// The bigger graph.
        graph: usize,
        /// Its nodes.
        nodes: u32,
    },
    /// A capture of its graph holds one launch more than the replay recorded: the replay
    /// lost a node, or that launch never became one (seen in a real trace: the last launch
    /// under capture had no kernel in the replay).
    CaptureHoldsMore {
        /// Launches under the capture.
        nodes: u32,
    },
    /// It recorded its graph's largest content, but most replays of the graph recorded less:
    /// where losses happen, the largest may be short too.
    OthersRecordedLess {
        /// Replays of the graph that recorded less.
        replays: u32,
    },
}

/// Where a graph's expected size comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeSource {
    /// A captured graph. Its launch count can exceed the graph's nodes by one (seen in a
    /// real trace: the last launch under capture had no kernel in the replay), so the size
    /// is that count, or one less unless a replay recorded that count.
    Capture,
    /// The largest recorded replay, recorded identically by this many replays (≥ 2).
    Repeated(u32),
    /// The largest recorded replay, recorded by that replay alone: a lower bound.
    Single,
    /// The largest recorded replay, recorded identically by this many replays while more of
    /// the graph's replays recorded less: losses happen in this graph, so the largest may be
    /// short too — a lower bound.
    Largest(u32),
    /// The union of what this many replays at one launch slot (or in one run) recorded,
    /// each a different part: the likeliest size; at a slot also a lower bound, in a run the
    /// largest part is.
    Union(u32),
}

/// One graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GraphDef {
    /// `graph id` from the trace, where present.
    pub graph_id: Option<u64>,
    /// The content group of its largest recorded replays.
    pub reference_group: usize,
    /// The replay whose recorded order is the reference order.
    pub reference_replay: usize,
    /// That replay's recorded names, in order.
    pub reference: Vec<NameId>,
    /// Nodes of its largest recorded replay.
    pub recorded_size: u32,
    /// Expected nodes per replay, the likeliest: the capture's launches where one matched,
    /// else `recorded_size`.
    pub expected_nodes: u32,
    /// Expected nodes per replay, at least.
    pub expected_low: u32,
    /// Expected nodes per replay, at most (`None`: no upper bound in the trace).
    pub expected_high: Option<u32>,
    /// Where `expected_nodes` comes from.
    pub size_source: SizeSource,
}

/// What graph identity found for one replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ReplayIdentity {
    /// Its graph (`None`: unknown).
    pub graph: Option<usize>,
    /// Evidence for its graph (short, empty, damaged replays) or for its size (complete).
    pub evidence: Option<Evidence>,
    /// Set for a replay that recorded its graph's size when that size rests on it alone.
    pub unverified: Option<Unverified>,
    /// Its recorded order differs from the graph's reference order.
    pub order_mismatch: bool,
}

/// The outcome for all replays of a trace.
#[derive(Debug, Clone, Default)]
pub(crate) struct GraphAssignment {
    /// Graphs, in order of first replay.
    pub graphs: Vec<GraphDef>,
    /// Per replay.
    pub replays: Vec<ReplayIdentity>,
    /// Slot or phase classes whose recorded replays conflict (so they gave no evidence).
    pub inconsistent_classes: u32,
    /// Set when there were more than [`MAX_GROUPS`] distinct contents, so sole replays were
    /// not compared with every other graph.
    pub groups_over_limit: bool,
    /// Graphs whose size came from a `--capture` trace, plus replays of unknown graph given
    /// its single size.
    pub capture_matches: u32,
}

/// Inputs besides the trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdentityInputs<'a> {
    /// Launch links.
    pub links: &'a LaunchLinks,
    /// Steps.
    pub steps: &'a Steps,
    /// The replays.
    pub launches: &'a GraphLaunches,
    /// Their content groups.
    pub groups: &'a ContentGroups,
    /// Their lanes' cycles.
    pub cycles: &'a LaunchCycles,
    /// Captured graphs in the trace itself.
    pub own_captures: &'a [CapturedGraph],
    /// Captured graphs from `--capture`.
    pub capture: &'a [CapturedGraph],
    /// Replays whose kernels overlap on a stream: their durations are wrong, so their idle
    /// gaps are no evidence.
    pub overlapping: &'a [bool],
}

/// Assigns every replay to a graph.
pub(crate) fn assign_graphs(trace: &Trace, inputs: IdentityInputs<'_>) -> GraphAssignment {
    let classes = Classes::new(inputs.launches, inputs.groups, inputs.cycles);
    let partials = partial_slots(&classes, inputs.groups, inputs.launches);
    let mut base = base_graphs(inputs.groups);
    base.extend(inputs.groups.len()..inputs.groups.len() + partials.len());
    let context = Context {
        inputs,
        classes: &classes,
        base: &base,
        near: nearest_recorded(inputs.launches, inputs.groups),
        contained: contained_groups(inputs.groups),
        partials,
    };
    let mut identity: Vec<ReplayIdentity> =
        vec![ReplayIdentity::default(); inputs.launches.launches.len()];
    let mut graph_group: Vec<Option<usize>> = vec![None; inputs.launches.launches.len()];
    for r in 0..identity.len() {
        if let Some(group) = inputs.groups.group_of[r] {
            let (graph_of_group, evidence) = context.recorded(r, group);
            graph_group[r] = Some(graph_of_group);
            identity[r].evidence = evidence;
        }
    }
    let given: Vec<bool> = identity
        .iter()
        .zip(inputs.overlapping)
        .map(|(i, &overlap)| i.evidence.is_some() || overlap)
        .collect();
    let mut no_room = FxHashSet::default();
    for (r, verdict) in idle_gap::idle_verdicts(trace, &context, &graph_group, &given) {
        match verdict {
            IdleVerdict::Short {
                reference,
                idle,
                needed,
                typical,
            } => {
                graph_group[r] = Some(reference);
                identity[r].evidence = Some(Evidence::IdleGap {
                    idle,
                    needed,
                    typical,
                });
            }
            IdleVerdict::NoRoom => {
                no_room.insert(r);
            }
        }
    }
    for r in 0..identity.len() {
        if inputs.groups.group_of[r].is_none() {
            let (reference, evidence) = context.unrecorded(r, &graph_group);
            graph_group[r] = reference;
            identity[r].evidence = evidence;
        }
    }
    let mut result = build_graphs(trace, &context, &graph_group, identity, &no_room);
    result.inconsistent_classes = classes.inconsistent();
    result
}

/// Per content group, the reference group of its graph: itself, or with a `graph id`, the
/// largest group with that id.
fn base_graphs(groups: &ContentGroups) -> Vec<usize> {
    let mut by_id: FxHashMap<u64, usize> = FxHashMap::default();
    for (g, group) in groups.groups.iter().enumerate() {
        if let Some(id) = group.graph_id {
            let best = by_id.entry(id).or_insert(g);
            let current = &groups.groups[*best];
            if (group.size, group.members.len()) > (current.size, current.members.len()) {
                *best = g;
            }
        }
    }
    groups
        .groups
        .iter()
        .enumerate()
        .map(|(g, group)| group.graph_id.map_or(g, |id| by_id[&id]))
        .collect()
}

struct Context<'a> {
    inputs: IdentityInputs<'a>,
    classes: &'a Classes,
    base: &'a [usize],
    /// Per replay, the nearest recorded replays before and after it on its lane.
    near: Vec<(Option<usize>, Option<usize>)>,
    /// Per content group, whether its work is a strict part of another group's: its own
    /// repetition then proves little (replays that lost the same kernels look alike).
    contained: Vec<bool>,
    /// Slots whose replays each recorded a different part of one graph; graph references
    /// from `groups.len()` on stand for them.
    partials: Vec<PartialSlot>,
}

/// The most groups compared pairwise to find groups contained in others.
const MAX_CONTAINMENT_GROUPS: usize = 500;

/// Per group, whether another group strictly contains it (none when there are more than
/// [`MAX_CONTAINMENT_GROUPS`] groups).
fn contained_groups(groups: &ContentGroups) -> Vec<bool> {
    let count = groups.len();
    if count > MAX_CONTAINMENT_GROUPS {
        return vec![false; count];
    }
    (0..count)
        .map(|g| {
            (0..count).any(|h| {
                groups.groups[h].size > groups.groups[g].size
                    && groups.relation(g, h) == Relation::Inside
            })
        })
        .collect()
}

/// The nearest recorded (undamaged) replays before and after each replay on its lane.
fn nearest_recorded(
    launches: &GraphLaunches,
    groups: &ContentGroups,
) -> Vec<(Option<usize>, Option<usize>)> {
    let count = launches.launches.len();
    let mut near = vec![(None, None); count];
    let mut last: Vec<Option<usize>> = vec![None; launches.lanes.len()];
    for (r, entry) in near.iter_mut().enumerate() {
        let lane = launches.launches[r].lane as usize;
        entry.0 = last[lane];
        if groups.group_of[r].is_some() {
            last[lane] = Some(r);
        }
    }
    last.fill(None);
    for r in (0..count).rev() {
        let lane = launches.launches[r].lane as usize;
        near[r].1 = last[lane];
        if groups.group_of[r].is_some() {
            last[lane] = Some(r);
        }
    }
    near
}

impl Context<'_> {
    fn groups(&self) -> &ContentGroups {
        self.inputs.groups
    }

    /// The graph (as its reference group) of a recorded replay, and the evidence: for a
    /// bigger graph it is short of, or for its own size.
    fn recorded(&self, r: usize, group: usize) -> (usize, Option<Evidence>) {
        let own = self.base[group];
        if let Some(bigger) = self.bigger_graph(r, group, own) {
            return bigger;
        }
        (own, self.support(r, group))
    }

    fn bigger_graph(
        &self,
        r: usize,
        group: usize,
        own: usize,
    ) -> Option<(usize, Option<Evidence>)> {
        let groups = self.groups();
        if own != group && groups.relation(group, own) == Relation::Inside {
            let reference = &groups.groups[own];
            let evidence = Evidence::GraphId {
                id: reference.graph_id.unwrap_or_default(),
                other_replays: reference.members.len() as u32,
            };
            return Some((own, Some(evidence)));
        }
        let is_bigger = |(largest, _): (usize, u32)| {
            if largest >= groups.len() {
                // Every member of a partial slot is part of its union.
                return groups.groups[group].size < self.reference_size(largest);
            }
            groups.relation(group, largest) == Relation::Inside
        };
        if let Some((largest, evidence)) = self.slot_view(r).filter(|(seen, _)| is_bigger(*seen)) {
            return Some((self.base[largest.0], Some(evidence)));
        }
        if let Some((largest, evidence)) = self.phase_view(r).filter(|(seen, _)| is_bigger(*seen)) {
            return Some((self.base[largest.0], Some(evidence)));
        }
        if let Some((largest, evidence)) = self.run_view(r, group) {
            return Some((largest.0, Some(evidence)));
        }
        let (before, after) = self.neighbour_groups(r)?;
        (before == after && groups.relation(group, before) == Relation::Inside)
            .then(|| (self.base[before], Some(Evidence::Neighbours)))
    }

    /// What the replay's launch slot in other steps holds, with the evidence.
    fn slot_view(&self, r: usize) -> Option<((usize, u32), Evidence)> {
        let launch = &self.inputs.launches.launches[r];
        let slot = launch.slot?;
        let (position, launches) = launch.position?;
        let class: &Class = self.classes.by_slot.get(&slot)?;
        if let Some(index) = self
            .partials
            .iter()
            .position(|p| p.key == PartialKey::Slot(slot))
        {
            let partial = &self.partials[index];
            let evidence = Evidence::PartialSlot {
                slot,
                position,
                launches,
                recorded: partial.members,
                union_nodes: partial.union.len() as u32,
            };
            return Some(((self.groups().len() + index, partial.members), evidence));
        }
        let seen = class.seen_by(self.groups().group_of[r])?;
        let evidence = Evidence::StepSlot {
            slot,
            position,
            launches,
            other_steps: seen.1,
        };
        Some((seen, evidence))
    }

    /// The partial run the replay is a part of, with the evidence.
    fn run_view(&self, r: usize, group: usize) -> Option<((usize, u32), Evidence)> {
        let launch = &self.inputs.launches.launches[r];
        let key = PartialKey::Run(launch.lane, launch.step?);
        let index = self
            .partials
            .iter()
            .position(|p| p.key == key && p.member_groups.contains(&group))?;
        let partial = &self.partials[index];
        let evidence = Evidence::PartialRun {
            recorded: partial.members,
            union_nodes: partial.union.len() as u32,
            largest: partial.floor,
        };
        Some(((self.groups().len() + index, partial.members), evidence))
    }

    /// Nodes of a graph reference: a content group's size, or a partial slot's union.
    fn reference_size(&self, reference: usize) -> u32 {
        match reference.checked_sub(self.groups().len()) {
            Some(index) => self.partials[index].union.len() as u32,
            None => self.groups().groups[reference].size,
        }
    }

    /// What the replay's phase in its lane's cycle holds in other cycles, with the evidence.
    fn phase_view(&self, r: usize) -> Option<((usize, u32), Evidence)> {
        let (period, phase) = self.inputs.cycles.phase_of[r]?;
        let lane = self.inputs.launches.launches[r].lane;
        let class = self.classes.by_phase.get(&(lane, phase))?;
        let seen = class.seen_by(self.groups().group_of[r])?;
        let evidence = Evidence::CyclePosition {
            period,
            phase,
            other_cycles: seen.1,
        };
        Some((seen, evidence))
    }

    /// Groups of the nearest recorded replays before and after `r` on its lane, within its
    /// step, when neighbours may be used: the lane has no cycle and no other step holds
    /// the slot.
    fn neighbour_groups(&self, r: usize) -> Option<(usize, usize)> {
        let (before, after) = self.neighbours(r)?;
        let groups = self.groups();
        Some((groups.group_of[before]?, groups.group_of[after]?))
    }

    fn neighbours(&self, r: usize) -> Option<(usize, usize)> {
        let launches = &self.inputs.launches.launches;
        let lane = launches[r].lane as usize;
        if self.inputs.cycles.by_lane[lane].is_some() || self.slot_view(r).is_some() {
            return None;
        }
        let (before, after) = self.near[r];
        let same_step = |c: usize| launches[c].step == launches[r].step;
        Some((
            before.filter(|&c| same_step(c))?,
            after.filter(|&c| same_step(c))?,
        ))
    }

    /// Evidence that a replay's own content is its graph's size.
    fn support(&self, r: usize, group: usize) -> Option<Evidence> {
        let equal = |seen: &((usize, u32), Evidence)| seen.0.0 == group;
        if let Some((_, evidence)) = self.slot_view(r).filter(equal) {
            return Some(evidence);
        }
        if let Some((_, evidence)) = self.phase_view(r).filter(equal) {
            return Some(evidence);
        }
        let members = self.groups().groups[group].members.len() as u32;
        (members >= 2 && !self.contained[group]).then_some(Evidence::Repeated {
            other_replays: members - 1,
        })
    }

    /// The graph (as its reference group) an unrecorded or damaged replay's place holds.
    fn unrecorded(
        &self,
        r: usize,
        resolved: &[Option<usize>],
    ) -> (Option<usize>, Option<Evidence>) {
        if let Some(((largest, _), evidence)) = self.slot_view(r) {
            return (Some(self.base[largest]), Some(evidence));
        }
        if let Some(((largest, _), evidence)) = self.phase_view(r) {
            return (Some(self.base[largest]), Some(evidence));
        }
        match self.neighbours(r) {
            Some((before, after))
                if resolved[before].is_some() && resolved[before] == resolved[after] =>
            {
                (resolved[before], Some(Evidence::Neighbours))
            }
            _ => (None, None),
        }
    }
}

/// Turns reference groups into numbered graphs, sizes them, and fills in order mismatches
/// and unverified sizes.
fn build_graphs(
    trace: &Trace,
    context: &Context<'_>,
    graph_group: &[Option<usize>],
    mut identity: Vec<ReplayIdentity>,
    no_room: &FxHashSet<usize>,
) -> GraphAssignment {
    let groups = context.groups();
    let mut numbering: FxHashMap<usize, usize> = FxHashMap::default();
    let mut graphs: Vec<GraphDef> = Vec::new();
    let mut capture_matches = 0;
    for (r, reference) in graph_group.iter().enumerate() {
        let Some(reference) = *reference else {
            continue;
        };
        let graph = *numbering.entry(reference).or_insert_with(|| {
            let def = graph_def(trace, context, reference);
            capture_matches += u32::from(def.1);
            graphs.push(def.0);
            graphs.len() - 1
        });
        identity[r].graph = Some(graph);
    }
    demote_sizes_where_losses_dominate(context, &identity, &mut graphs);
    let launches = &context.inputs.launches.launches;
    for (r, id) in identity.iter_mut().enumerate() {
        let (Some(graph), Some(group)) = (id.graph, groups.group_of[r]) else {
            continue;
        };
        let def = &graphs[graph];
        id.order_mismatch = if matches!(def.size_source, SizeSource::Union(_)) {
            // A union has no recorded order to compare with.
            false
        } else if group == def.reference_group {
            launches[r].sequence != def.reference
        } else {
            !is_subsequence(&launches[r].sequence, &def.reference)
        };
        if def.size_source == SizeSource::Capture && group == def.reference_group {
            id.evidence = Some(Evidence::Capture {
                nodes: def.expected_nodes,
            });
        }
        if def.size_source == SizeSource::Capture && id.evidence.is_none() {
            id.evidence = Some(Evidence::Capture {
                nodes: def.expected_nodes,
            });
        }
    }
    let groups_over_limit = groups.len() > MAX_GROUPS;
    mark_unverified(context, &graphs, &numbering, &mut identity, no_room);
    capture_matches += unknown_with_capture_size(context, &identity);
    GraphAssignment {
        graphs,
        replays: identity,
        inconsistent_classes: 0,
        groups_over_limit,
        capture_matches,
    }
}

/// A size recorded identically by two replays proves little when most of the graph's
/// replays recorded less (losses are happening): such sizes become lower bounds.
fn demote_sizes_where_losses_dominate(
    context: &Context<'_>,
    identity: &[ReplayIdentity],
    graphs: &mut [GraphDef],
) {
    let recorded = recorded_per_graph(context, identity, graphs.len());
    for (def, recorded) in graphs.iter_mut().zip(recorded) {
        if let SizeSource::Repeated(at_max) = def.size_source {
            if at_max * 2 < recorded {
                def.size_source = SizeSource::Largest(at_max);
                def.expected_high = None;
            }
        }
    }
}

/// Replays with recorded (undamaged) work, per graph.
fn recorded_per_graph(
    context: &Context<'_>,
    identity: &[ReplayIdentity],
    graphs: usize,
) -> Vec<u32> {
    let mut recorded = vec![0u32; graphs];
    for (r, id) in identity.iter().enumerate() {
        if let (Some(graph), Some(_)) = (id.graph, context.groups().group_of[r]) {
            recorded[graph] += 1;
        }
    }
    recorded
}

/// A graph's definition, and whether its size came from `--capture`.
fn graph_def(trace: &Trace, context: &Context<'_>, reference: usize) -> (GraphDef, bool) {
    let groups = context.groups();
    if let Some(index) = reference.checked_sub(groups.len()) {
        return (
            union_def(context, reference, &context.partials[index]),
            false,
        );
    }
    let group = &groups.groups[reference];
    let sequence = context.inputs.launches.launches[group.reference]
        .sequence
        .clone();
    let external = matching_capture(trace, &sequence, context.inputs.capture);
    let captured =
        external.or_else(|| matching_capture(trace, &sequence, context.inputs.own_captures));
    let members = group.members.len() as u32;
    let size = group.size;
    let (expected_nodes, expected_low, expected_high, size_source) = match captured {
        Some(nodes) if nodes == size => (nodes, nodes, Some(nodes), SizeSource::Capture),
        Some(nodes) if nodes > size => (nodes, nodes - 1, Some(nodes), SizeSource::Capture),
        _ if members >= 2 => (size, size, Some(size), SizeSource::Repeated(members)),
        _ => (size, size, None, SizeSource::Single),
    };
    let def = GraphDef {
        graph_id: group.graph_id,
        reference_group: reference,
        reference_replay: group.reference,
        reference: sequence,
        recorded_size: size,
        expected_nodes,
        expected_low,
        expected_high,
        size_source,
    };
    (def, external.is_some_and(|n| n >= size))
}

fn mark_unverified(
    context: &Context<'_>,
    graphs: &[GraphDef],
    numbering: &FxHashMap<usize, usize>,
    identity: &mut [ReplayIdentity],
    no_room: &FxHashSet<usize>,
) {
    let groups = context.groups();
    // Reference groups of the graphs replays were given, biggest first.
    let recorded = recorded_per_graph(context, identity, graphs.len());
    let mut references: Vec<(usize, usize)> = numbering
        .iter()
        .filter(|(g, _)| **g < groups.len())
        .map(|(&g, &n)| (g, n))
        .collect();
    references.sort_by_key(|&(g, n)| (std::cmp::Reverse(groups.groups[g].size), n));
    for (r, id) in identity.iter_mut().enumerate() {
        let (Some(graph), Some(group)) = (id.graph, groups.group_of[r]) else {
            continue;
        };
        let def = &graphs[graph];
        if matches!(def.size_source, SizeSource::Union(_)) {
            id.unverified = run_floor(def, groups.groups[group].size);
            continue;
        }
        if group != def.reference_group {
            continue;
        }
        if let SizeSource::Largest(at_max) = def.size_source {
            id.unverified = Some(Unverified::OthersRecordedLess {
                replays: recorded[graph].saturating_sub(at_max),
            });
            continue;
        }
        if def.size_source == SizeSource::Capture && def.expected_low < def.expected_nodes {
            if def.recorded_size == def.expected_low {
                id.unverified = Some(Unverified::CaptureHoldsMore {
                    nodes: def.expected_nodes,
                });
            }
            continue;
        }
        let own_evidence =
            matches!(def.size_source, SizeSource::Repeated(_)) && !context.contained[group];
        if id.evidence.is_some() || own_evidence {
            continue;
        }
        let bigger = if groups.len() > MAX_GROUPS || no_room.contains(&r) {
            None
        } else {
            references
                .iter()
                .take_while(|(g, _)| groups.groups[*g].size > groups.groups[group].size)
                .find(|(g, _)| groups.relation(group, *g) == Relation::Inside)
        };
        id.unverified = Some(match bigger {
            Some(&(other, graph)) => Unverified::PossiblyShortOf {
                graph,
                nodes: graphs[graph].expected_nodes.max(groups.groups[other].size),
            },
            None => Unverified::SoleReplay,
        });
    }
}

/// Replays of unknown graph that take the single size all `--capture` graphs share.
fn unknown_with_capture_size(context: &Context<'_>, identity: &[ReplayIdentity]) -> u32 {
    if uniform_capture_size(context.inputs.capture).is_none() {
        return 0;
    }
    identity.iter().filter(|id| id.graph.is_none()).count() as u32
}

/// The node count shared by every captured graph, if they all agree.
pub(crate) fn uniform_capture_size(capture: &[CapturedGraph]) -> Option<u32> {
    let first = capture.first()?.nodes;
    capture.iter().all(|c| c.nodes == first).then_some(first)
}

/// The smallest captured graph that can hold `reference`: by kernel names where the
/// capture named them, else by count.
fn matching_capture(trace: &Trace, reference: &[NameId], capture: &[CapturedGraph]) -> Option<u32> {
    let names: Vec<&str> = reference.iter().map(|n| trace.name(*n)).collect();
    let fits = |c: &&CapturedGraph| {
        let captured: Vec<&str> = c
            .kernel_names
            .iter()
            .flatten()
            .map(String::as_str)
            .collect();
        if captured.len() == c.kernel_names.len() && !captured.is_empty() {
            let kernels: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| captured.contains(n))
                .collect();
            kernels.len() * 2 >= names.len() && is_str_subsequence(&kernels, &captured)
        } else {
            c.nodes as usize >= names.len()
        }
    };
    capture.iter().filter(fits).map(|c| c.nodes).min()
}

fn is_str_subsequence(small: &[&str], big: &[&str]) -> bool {
    let mut rest = big.iter();
    small.iter().all(|s| rest.any(|b| b == s))
}
