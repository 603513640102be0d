//! Captured graphs: node counts from a capture trace.
//!
//! What it computes: for every stream capture (`cudaStreamBeginCapture` …
//! `cudaStreamEndCapture` on one host thread), the launches made under it — the nodes of
//! the graph being captured — with the kernel names where the runtime wrote them.
//! Why it matters: when every replay of a graph lost kernels, no recorded replay shows the
//! full graph; the capture trace still does (`--capture FILE`).
//! Example: SGLang's `bs_32_rank0` capture trace: 544 launches under capture → 544 nodes.

use super::launching_ops::{LaunchingOps, launching_ops};
use stepscope_model::{ProcessId, RuntimeCallKind, ThreadId, Timestamp, Trace};

/// One captured graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedGraph {
    /// Launches under the capture.
    pub nodes: u32,
    /// Kernel names of those launches, where the runtime call named them.
    pub kernel_names: Vec<Option<String>>,
    /// The CPU op each of those launches was made from (see
    /// [`launching_ops`](super::launching_ops)), where one encloses it.
    pub op_names: Vec<Option<String>>,
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
                    process: runtime.process[row],
                    thread: runtime.thread[row],
                    start: runtime.start[row],
                    end: runtime.start[row],
                });
                open_on = Some(on);
            }
            RuntimeCallKind::CaptureEnd => {
                if let Some(mut graph) = open.take() {
                    graph.end = runtime.end(row);
                    graphs.push(graph);
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
                }
            }
            _ => {}
        }
    }
    graphs
}

fn thread_key(thread: ThreadId) -> (i64, u32) {
    match thread {
        ThreadId::Number(n) => (n, 0),
        ThreadId::Label(l) => (i64::MIN, l.index() as u32),
    }
}
