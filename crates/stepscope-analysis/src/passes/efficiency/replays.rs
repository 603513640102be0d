//! Graph replays: their kernels were captured, not launched by a CPU op, so they have no
//! shapes of their own. A replay whose GPU events match a captured graph node by node
//! (same count; the same kernel name wherever the capture's launch named it) takes the
//! capture's ops: each op that enclosed node launches under the capture is one call per
//! replay, its kernel time the busy time of its nodes' events in that replay. Capture
//! traces come from `--capture` or a `capture_traces/` folder beside the trace (vLLM,
//! SGLang and ATOM write them), or are the trace's own captures.
//!
//! Where the capture named every node's kernel (HIP does), a replay is also matched by
//! name when its events are not in capture order (a graph on several streams runs its
//! branches in any order) or the first or last of them are missing (the profiling window cut
//! the replay; at most half of it): each node takes the next unclaimed event of its kernel's
//! name, in time order. Every event must find a node; an op with a node left without an
//! event gets no call from that replay (its time is not known), and the replay counts as
//! partial.

use super::{Call, Pass, args, models};
use crate::passes::capture_graphs::CapturedGraph;
use crate::passes::launch_links::LaunchLinks;
use rustc_hash::FxHashMap;
use stepscope_model::{NameId, OpArgs, RuntimeCallKind};

/// One captured graph as the replays of this trace are matched against it.
struct Graph<'a> {
    captured: &'a CapturedGraph,
    /// Per node, the kernel name the capture named, as a name of this trace: `None` when
    /// the capture did not name it (any event matches), `Some(None)` when this trace has no
    /// such name (no replay matches).
    names: Vec<Option<Option<NameId>>>,
    /// Per op of the capture, its nodes.
    op_nodes: Vec<Vec<usize>>,
    /// Per op, whether it has a model and encloses another op that has one.
    encloses: Vec<bool>,
    /// Per op, whether it is a call with a row: a model and argument lists.
    costed: Vec<bool>,
    /// Per op, whether its cost needs the iteration's token counts.
    needs_iteration: Vec<bool>,
}

impl<'a> Graph<'a> {
    fn new(pass: &Pass<'_>, captured: &'a CapturedGraph) -> Self {
        let trace = pass.trace;
        let names = captured
            .kernel_names
            .iter()
            .map(|name| name.as_ref().map(|n| trace.names.get(n)))
            .collect();
        let mut op_nodes = vec![Vec::new(); captured.ops.len()];
        let mut encloses = vec![false; captured.ops.len()];
        let has_model: Vec<bool> = captured
            .ops
            .iter()
            .map(|op| models::has_model(&op.name))
            .collect();
        let modelled = |op: u32| has_model[op as usize];
        for (node, chain) in captured.node_ops.iter().enumerate() {
            for (depth, &op) in chain.iter().enumerate() {
                op_nodes[op as usize].push(node);
                if modelled(op) && chain[..depth].iter().any(|&inner| modelled(inner)) {
                    encloses[op as usize] = true;
                }
            }
        }
        let costed = (captured.ops.iter().zip(&has_model))
            .map(|(op, &model)| model && op.args[0].is_some())
            .collect();
        let needs_iteration = captured
            .ops
            .iter()
            .map(|op| models::needs_iteration(&op.name))
            .collect();
        Graph {
            captured,
            names,
            op_nodes,
            encloses,
            costed,
            needs_iteration,
        }
    }

    /// Whether a replay's events (kernel names in time order) are this graph's nodes.
    fn matches(&self, kernels: &[NameId]) -> bool {
        kernels.len() == self.names.len()
            && kernels
                .iter()
                .zip(&self.names)
                .all(|(kernel, name)| name.is_none_or(|name| name == Some(*kernel)))
    }

    /// Per node, the index of the replay event that ran it (`None`: lost): in order when the
    /// events match node by node, else by name when the capture named every node.
    fn node_events(&self, kernels: &[NameId]) -> Option<Vec<Option<usize>>> {
        if self.matches(kernels) {
            return Some((0..kernels.len()).map(Some).collect());
        }
        // Every node named (`None` inside: a name this trace lacks, so that node was lost).
        let named: Vec<Option<NameId>> = self.names.iter().copied().collect::<Option<_>>()?;
        if kernels.len() > named.len() || kernels.is_empty() {
            return None;
        }
        let mut by_name: FxHashMap<NameId, std::collections::VecDeque<usize>> =
            FxHashMap::default();
        for (index, &kernel) in kernels.iter().enumerate() {
            by_name.entry(kernel).or_default().push_back(index);
        }
        let nodes: Vec<Option<usize>> = named
            .iter()
            .map(|name| by_name.get_mut(&(*name)?)?.pop_front())
            .collect();
        // Every event must have found a node of its name, and what is lost must be the start
        // or the end of the graph, at most half of it (a replay cut by the profiling
        // window): another, smaller graph made of kernels of this one is not its part.
        let every_event = by_name.values().all(|left| left.is_empty());
        (every_event && cut_at_an_end(&nodes)).then_some(nodes)
    }
}

/// Adds one call per modelled capture op per replay matched to a captured graph.
pub(super) fn add_replay_calls(
    pass: &mut Pass<'_>,
    links: &LaunchLinks,
    captures: &[&CapturedGraph],
) {
    let trace = pass.trace;
    let graphs: Vec<Graph<'_>> = captures
        .iter()
        .filter(|c| !c.node_ops.is_empty())
        .map(|c| Graph::new(pass, c))
        .collect();
    let mut matched: FxHashMap<Vec<NameId>, Option<Matched>> = FxHashMap::default();
    let mut rows: FxHashMap<RowKey, Option<usize>> = FxHashMap::default();
    let runtime = &trace.runtime;
    for call in (0..runtime.len()).filter(|&c| runtime.kind[c] == RuntimeCallKind::GraphLaunch) {
        let mut events = links.launched(call).to_vec();
        if events.is_empty() {
            continue;
        }
        pass.builder.graph_replays += 1;
        events.sort_by_key(|&g| (trace.gpu.start[g as usize], g));
        let kernels: Vec<NameId> = events.iter().map(|&g| trace.gpu.name[g as usize]).collect();
        let found = matched
            .entry(kernels)
            .or_insert_with_key(|kernels| match_graph(&graphs, kernels));
        let Some((index, nodes)) = found.clone() else {
            continue;
        };
        pass.builder.replays_with_shapes += 1;
        let lost = nodes.iter().any(Option::is_none);
        pass.builder.partial_replays += u64::from(lost);
        let (start, end) = (runtime.start[call].as_nanos(), runtime.end(call).as_nanos());
        let iteration = pass.iterations.around(start, end).map(|(i, _)| i);
        let in_node_order: Vec<Option<u32>> =
            nodes.iter().map(|event| event.map(|e| events[e])).collect();
        let replay = Replay {
            index,
            graph: &graphs[index],
            events: &in_node_order,
            iteration,
        };
        add_one_replay(pass, &replay, &mut rows);
    }
}

/// Whether the nodes that found an event are all of them, or a run from the first or to the
/// last node holding at least half of them.
fn cut_at_an_end(nodes: &[Option<usize>]) -> bool {
    let kept = nodes.iter().filter(|n| n.is_some()).count();
    let lead = nodes.iter().take_while(|n| n.is_some()).count();
    let tail = nodes.iter().rev().take_while(|n| n.is_some()).count();
    kept == nodes.len() || (kept * 2 >= nodes.len() && (lead == kept || tail == kept))
}

/// A replay's graph, and per node the index of its event (`None`: lost).
type Matched = (usize, std::rc::Rc<Vec<Option<usize>>>);

/// The first graph whose nodes a replay's events (kernel names in time order) match: node
/// by node on any graph first, then by name (reordered or partial replays).
fn match_graph(graphs: &[Graph<'_>], kernels: &[NameId]) -> Option<Matched> {
    let exact = graphs.iter().position(|g| g.matches(kernels));
    let (index, nodes) = match exact {
        Some(index) => (index, graphs[index].node_events(kernels)?),
        None => graphs
            .iter()
            .enumerate()
            .find_map(|(index, g)| Some((index, g.node_events(kernels)?)))?,
    };
    Some((index, std::rc::Rc::new(nodes)))
}

/// A row of a replayed op: graph, op of the capture, the iteration annotation the replay
/// ran in (for the ops costed by it).
type RowKey = (usize, usize, Option<u32>);

/// One replay matched to a captured graph.
struct Replay<'a> {
    index: usize,
    graph: &'a Graph<'a>,
    /// Its GPU events, in node order (`None`: the node's event was lost).
    events: &'a [Option<u32>],
    /// The iteration annotation around its launch.
    iteration: Option<u32>,
}

fn add_one_replay(
    pass: &mut Pass<'_>,
    replay: &Replay<'_>,
    rows: &mut FxHashMap<RowKey, Option<usize>>,
) {
    let trace = pass.trace;
    let (index, graph, events) = (replay.index, replay.graph, replay.events);
    for (op, nodes) in graph.op_nodes.iter().enumerate() {
        if !graph.costed[op] {
            continue;
        }
        // An op whose nodes did not all run in this replay's record has no known time.
        let Some(own) = nodes
            .iter()
            .map(|&node| events[node])
            .collect::<Option<Vec<u32>>>()
        else {
            continue;
        };
        let iteration = replay.iteration.filter(|_| graph.needs_iteration[op]);
        let row = *rows
            .entry((index, op, iteration))
            .or_insert_with(|| replay_row(pass, (graph, op, iteration), &own));
        pass.builder.modelled_call(false);
        let Some(row) = row else {
            let name = models::normalized(&graph.captured.ops[op].name);
            pass.builder.unfit_call(name, &own, trace);
            continue;
        };
        let (flops, bytes) = pass.builder.cost_of(row);
        pass.calls.push(Call {
            row,
            kernel_us: super::busy_micros(trace, &own),
            flops,
            bytes,
            encloses: graph.encloses[op],
        });
    }
}

/// Models a capture op the first time a replay runs it.
fn replay_row(
    pass: &mut Pass<'_>,
    (graph, op, iteration): (&Graph<'_>, usize, Option<u32>),
    events: &[u32],
) -> Option<usize> {
    let trace = pass.trace;
    let captured = &graph.captured.ops[op];
    let [dims, types, strides, concrete] = &captured.args;
    let op_args = OpArgs {
        input_dims: dims.as_deref(),
        input_types: types.as_deref(),
        input_strides: strides.as_deref(),
        concrete_inputs: concrete.as_deref(),
    };
    let kernel_names: Vec<&str> = events
        .iter()
        .filter(|&&g| trace.gpu.kind[g as usize] == stepscope_model::GpuEventKind::Kernel)
        .map(|&g| trace.name(trace.gpu.name[g as usize]))
        .collect();
    let stats = iteration.and_then(|index| pass.iterations.stats(index));
    let modelled = match args::parse(op_args) {
        Ok(parsed) => models::cost_in(&captured.name, &parsed, &kernel_names, stats),
        Err(reason) => super::Modelled::Unfit(reason),
    };
    let name = models::normalized(&captured.name);
    pass.builder
        .row_for((name, op_args), modelled, events.len())
}

#[cfg(test)]
mod tests {
    use super::cut_at_an_end;

    #[test]
    fn only_a_cut_start_or_end_of_at_most_half_is_a_partial_replay() {
        let nodes = |kept: &str| -> Vec<Option<usize>> {
            kept.chars().map(|c| (c == '+').then_some(0)).collect()
        };
        for fine in ["++++", "+++-", "++--", "--++", "-+++"] {
            assert!(cut_at_an_end(&nodes(fine)), "{fine}");
        }
        for not in ["+-++", "+--+", "+---", "---+", "-++-", "----"] {
            assert!(!cut_at_an_end(&nodes(not)), "{not}");
        }
    }
}
