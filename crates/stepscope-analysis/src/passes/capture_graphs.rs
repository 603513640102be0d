//! Captured graphs: node counts from a capture trace.
//!
//! What it computes: for every stream capture (`cudaStreamBeginCapture` …
//! `cudaStreamEndCapture` on one host thread), the launches made under it — the nodes of
//! the graph being captured — with the kernel names where the runtime wrote them.
//! Why it matters: when every replay of a graph lost kernels, no recorded replay shows the
//! full graph; the capture trace still does (`--capture FILE`).
//! Example: SGLang's `bs_32_rank0` capture trace: 544 launches under capture → 544 nodes.

use super::launching_ops::{LaunchingOps, launching_ops};
use rustc_hash::FxHashMap;
use stepscope_model::{ProcessId, RuntimeCallKind, ThreadId, Timestamp, Trace};

/// A CPU op of a capture that encloses at least one node's launch: what the replays of the
/// graph run it for, with the argument lists it was called with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedOp {
    /// Op name.
    pub name: String,
    /// `Input Dims`, `Input type`, `Input Strides`, `Concrete Inputs` as the trace wrote
    /// them (`None` where absent).
    pub args: [Option<String>; 4],
}

/// One captured graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedGraph {
    /// Launches under the capture.
    pub nodes: u32,
    /// Kernel names of those launches, where the runtime call named them.
    pub kernel_names: Vec<Option<String>>,
    /// The CPU op each of those launches was made from (see
    /// [`launching_ops`](crate::launching_ops)), where one encloses it.
    pub op_names: Vec<Option<String>>,
    /// The CPU ops that enclose launches under the capture, in the order they first do.
    pub ops: Vec<CapturedOp>,
    /// Per node, the indices into `ops` of every op enclosing its launch, innermost first.
    pub node_ops: Vec<Vec<u32>>,
    /// Capturing process.
    pub process: ProcessId,
    /// Capturing thread.
    pub thread: ThreadId,
    /// Start of the begin-capture call.
    pub start: Timestamp,
    /// End of the end-capture call.
    pub end: Timestamp,
}

impl CapturedGraph {
    /// Whether a host call at `at` on `process`/`thread` happened under this capture.
    pub fn contains(&self, process: ProcessId, thread: ThreadId, at: Timestamp) -> bool {
        self.process == process && self.thread == thread && self.start <= at && at <= self.end
    }
}

/// Finds every capture in a trace, in time order, with the launching ops of its nodes.
pub fn captured_graphs(trace: &Trace) -> Vec<CapturedGraph> {
    let has_capture = trace.runtime.kind.contains(&RuntimeCallKind::CaptureBegin);
    if !has_capture || trace.cpu_ops.is_empty() {
        return captured_graphs_with_ops(trace, &LaunchingOps::default());
    }
    let launch = |row: usize| trace.runtime.kind[row] == RuntimeCallKind::EagerLaunch;
    captured_graphs_with_ops(trace, &launching_ops(trace, launch))
}

/// [`captured_graphs`] with the launching ops already found.
pub(crate) fn captured_graphs_with_ops(trace: &Trace, ops: &LaunchingOps) -> Vec<CapturedGraph> {
    let runtime = &trace.runtime;
    let mut order: Vec<usize> = (0..runtime.len()).collect();
    order.sort_by_key(|&r| {
        (
            runtime.process[r],
            thread_key(runtime.thread[r]),
            runtime.start[r],
            r,
        )
    });
    let mut graphs = Vec::new();
    let mut node_calls: Vec<Vec<usize>> = Vec::new();
    let mut open_calls = Vec::new();
    let mut open: Option<CapturedGraph> = None;
    let mut open_on = None;
    for row in order {
        let on = (runtime.process[row], thread_key(runtime.thread[row]));
        if open_on.is_some() && open_on != Some(on) {
            open = None;
        }
        match runtime.kind[row] {
            RuntimeCallKind::CaptureBegin => {
                open = Some(CapturedGraph {
                    nodes: 0,
                    kernel_names: Vec::new(),
                    op_names: Vec::new(),
                    ops: Vec::new(),
                    node_ops: Vec::new(),
                    process: runtime.process[row],
                    thread: runtime.thread[row],
                    start: runtime.start[row],
                    end: runtime.start[row],
                });
                open_on = Some(on);
                open_calls = Vec::new();
            }
            RuntimeCallKind::CaptureEnd => {
                if let Some(mut graph) = open.take() {
                    graph.end = runtime.end(row);
                    graphs.push(graph);
                    node_calls.push(std::mem::take(&mut open_calls));
                }
            }
            RuntimeCallKind::EagerLaunch => {
                if let Some(graph) = open.as_mut() {
                    graph.nodes += 1;
                    let name = runtime.launched_kernel[row].map(|n| trace.name(n).to_owned());
                    graph.kernel_names.push(name);
                    let op = ops.op_of_call.get(row).copied().flatten();
                    let op = op.map(|op| trace.name(trace.cpu_ops.name[op as usize]).to_owned());
                    graph.op_names.push(op);
                    open_calls.push(row);
                }
            }
            _ => {}
        }
    }
    attach_ops(trace, &mut graphs, &node_calls);
    graphs
}

/// Fills each graph's `ops` and `node_ops`: the CPU ops of its thread that enclose each
/// node's launch call.
fn attach_ops(trace: &Trace, graphs: &mut [CapturedGraph], node_calls: &[Vec<usize>]) {
    let ops = &trace.cpu_ops;
    if ops.is_empty() || graphs.is_empty() {
        return;
    }
    let mut by_thread: FxHashMap<(ProcessId, ThreadId), Vec<usize>> = FxHashMap::default();
    for op in (0..ops.len()).filter(|&op| ops.duration[op].as_nanos() > 0) {
        by_thread
            .entry((ops.process[op], ops.thread[op]))
            .or_default()
            .push(op);
    }
    for rows in by_thread.values_mut() {
        rows.sort_by_key(|&op| (ops.start[op], std::cmp::Reverse(ops.end(op))));
    }
    for (graph, calls) in graphs.iter_mut().zip(node_calls) {
        let Some(rows) = by_thread.get(&(graph.process, graph.thread)) else {
            continue;
        };
        // Ops that start before the capture ends; those that also end after its start.
        let before_end = rows.partition_point(|&op| ops.start[op] <= graph.end);
        let window: Vec<usize> = rows[..before_end]
            .iter()
            .copied()
            .filter(|&op| ops.end(op) > graph.start)
            .collect();
        let mut index_of: FxHashMap<usize, u32> = FxHashMap::default();
        graph.node_ops = calls
            .iter()
            .map(|&call| enclosing(trace, &window, call, graph, &mut index_of))
            .collect();
    }
}

/// The ops of `window` around launch call `call`, innermost first, as indices into the
/// graph's `ops` (added when new).
fn enclosing(
    trace: &Trace,
    window: &[usize],
    call: usize,
    graph: &mut CapturedGraph,
    index_of: &mut FxHashMap<usize, u32>,
) -> Vec<u32> {
    let ops = &trace.cpu_ops;
    let at = trace.runtime.start[call];
    let mut around: Vec<usize> = window
        .iter()
        .copied()
        .filter(|&op| ops.start[op] <= at && at < ops.end(op))
        .collect();
    around.sort_by_key(|&op| (ops.duration[op], std::cmp::Reverse(ops.start[op])));
    around
        .into_iter()
        .map(|op| {
            *index_of.entry(op).or_insert_with(|| {
                let args = trace.op_args.get(ops.args[op]);
                graph.ops.push(CapturedOp {
                    name: trace.name(ops.name[op]).to_owned(),
                    args: [
                        args.input_dims,
                        args.input_types,
                        args.input_strides,
                        args.concrete_inputs,
                    ]
                    .map(|field| field.map(str::to_owned)),
                });
                (graph.ops.len() - 1) as u32
            })
        })
        .collect()
}

fn thread_key(thread: ThreadId) -> (i64, u32) {
    match thread {
        ThreadId::Number(n) => (n, 0),
        ThreadId::Label(l) => (i64::MIN, l.index() as u32),
    }
}
