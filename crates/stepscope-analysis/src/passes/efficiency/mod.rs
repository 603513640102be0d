//! Efficiency: how far each op runs from the GPU's limits.
//!
//! What it computes: for every CPU op whose name has a performance model (`models`, one
//! module per op family) and whose call was recorded with shapes (`record_shapes=True`),
//! its FLOPs and bytes moved from its argument lists, and its kernel time: the busy time
//! (union of intervals) of every GPU event launched from inside the op, nested ops
//! included. Calls of one op with equal model parameters form one row: count, kernel time
//! (mean, median, min, max, sum), GFLOPS, data moved, FLOPS/byte, achieved TFLOP/s and TB/s
//! (per call, then mean, median, std, min, max), and with the device's peaks (`devices`)
//! the roofline time, % of each peak and which roof bounds it.
//! Why it matters: a share of time says where it goes; this says whether it is well spent.
//! The definitions and units follow TraceLens (AMD-AGI/TraceLens) so that the numbers agree
//! with its reports: GFLOPS = 10^9 FLOP, data moved in MiB (2^20 bytes), TB/s = 10^12 B/s,
//! std with one degree of freedom.
//! Example: `aten::addmm` M=8944 N=1024 K=1024 bf16 on an H100, 72 calls, 32.3 µs each:
//! 18.77 GFLOPS, 36.94 MiB, 580 TFLOP/s (59 % of the 989 TFLOP/s BF16 peak, compute-bound).

pub(crate) mod args;
pub mod devices;
pub(crate) mod dtype;
mod iterations;
pub(crate) mod models;
mod nesting;
mod replays;
pub mod spec;
mod table;

pub use table::{Bound, Efficiency, OpRow, Roofline, RowStats, UnmodelledOp};

use crate::passes::capture_graphs::CapturedGraph;
use crate::passes::launch_links::LaunchLinks;
use crate::passes::launching_ops::LaunchingOps;
use devices::DevicePeaks;
use rustc_hash::FxHashMap;
use spec::Modelled;
use stepscope_model::{NameId, OpArgsId, ProcessId, RuntimeCallKind, ThreadId, Trace};

/// What the pass needs besides the trace.
#[derive(Debug, Clone, Copy)]
pub struct EfficiencyInputs<'a> {
    /// GPU events per runtime call.
    pub links: &'a LaunchLinks,
    /// The innermost op around each launch call.
    pub ops: &'a LaunchingOps,
    /// The device's peaks: `--device`, else found from the trace's device name.
    pub device: Option<&'static DevicePeaks>,
    /// Captured graphs (the trace's own and those of capture traces): their ops give the
    /// kernels of matching graph replays their shapes.
    pub captures: &'a [&'a CapturedGraph],
}

/// One modelled op call: its row key and what it ran.
struct Call {
    row: usize,
    kernel_us: f64,
    flops: f64,
    bytes: Option<f64>,
    /// It encloses another modelled call (whose row holds the same kernels).
    encloses: bool,
}

/// Runs the pass.
pub fn efficiency(trace: &Trace, inputs: EfficiencyInputs<'_>) -> Efficiency {
    let device = find_device(trace, inputs.device);
    // A CPU-only run: its calls are counted (a note may say shapes are missing), but every
    // row would be one of 0 µs kernel time, so none is made.
    let no_gpu_work = trace.gpu.is_empty();
    let launches = ThreadLaunches::new(trace, inputs.links, inputs.ops);
    let named: Vec<bool> = trace
        .names
        .iter()
        .map(|(_, n)| models::has_model(n))
        .collect();
    let ops = &trace.cpu_ops;
    let has_model = |op: usize| named[ops.name[op].index()];
    let modelled: Vec<bool> = (0..ops.len())
        .map(|op| has_model(op) && !ops.args[op].is_none())
        .collect();
    let nesting = nesting::Nesting::new(trace, &modelled);
    let mut pass = Pass {
        trace,
        launches: &launches,
        iterations: iterations::Iterations::new(trace),
        needs_iteration: trace
            .names
            .iter()
            .map(|(_, n)| models::needs_iteration(n))
            .collect(),
        builder: table::TableBuilder::default(),
        rows: FxHashMap::default(),
        parsed: FxHashMap::default(),
        calls: Vec::new(),
    };
    for (op, &with_shapes) in modelled.iter().enumerate() {
        if !has_model(op) {
            if !nesting.inside_modelled(trace, op) {
                pass.builder.unmodelled(trace, op, &launches);
            }
            continue;
        }
        pass.builder.modelled_call(!with_shapes);
        if with_shapes && !no_gpu_work {
            pass.add_call(op, nesting.encloses(op));
        }
    }
    replays::add_replay_calls(&mut pass, inputs.links, inputs.captures);
    let mut efficiency = pass.builder.finish(&pass.calls, device);
    efficiency.no_host_ops = trace.cpu_ops.is_empty();
    efficiency.no_gpu_work = no_gpu_work;
    efficiency
}

/// The device for the rooflines, and how it was found: `--device`, else the first device
/// the trace names, else the first its properties identify.
fn find_device(
    trace: &Trace,
    given: Option<&'static DevicePeaks>,
) -> Option<(&'static DevicePeaks, String)> {
    if let Some(device) = given {
        return Some((device, "--device".to_owned()));
    }
    let metadata = &trace.metadata;
    let named = metadata.device_names.iter().find_map(|name| {
        devices::device_for_name(name).map(|d| (d, format!("the trace names `{name}`")))
    });
    named.or_else(|| {
        metadata.device_properties.iter().find_map(|p| {
            let device = devices::device_for_properties(p)?;
            let gib = p.memory_bytes.unwrap_or(0) as f64 / f64::from(1u32 << 30);
            let how = format!(
                "deviceProperties: compute {}.{}, {} multiprocessors, {gib:.0} GiB",
                p.compute_major.unwrap_or(0),
                p.compute_minor.unwrap_or(0),
                p.multiprocessors.unwrap_or(0)
            );
            Some((device, how))
        })
    })
}

/// A call's row key: op name, argument lists, the GPU events it ran (their count is a row
/// parameter; GEMM parameters read kernel names), and the iteration annotation it ran in
/// (for the ops costed by it).
type CallKey = (NameId, OpArgsId, Vec<NameId>, Option<u32>);

/// The pass's state over the ops of one trace.
struct Pass<'a> {
    trace: &'a Trace,
    launches: &'a ThreadLaunches,
    /// Step annotations that state their iteration's token counts.
    iterations: iterations::Iterations,
    /// Per name of the trace, whether an op of that name is costed by its iteration.
    needs_iteration: Vec<bool>,
    builder: table::TableBuilder,
    /// The row of each distinct call key (`None`: the arguments do not fit the model).
    rows: FxHashMap<CallKey, Option<usize>>,
    /// Argument lists parsed once each.
    parsed: FxHashMap<OpArgsId, Result<args::ParsedArgs, String>>,
    calls: Vec<Call>,
}

impl Pass<'_> {
    /// Adds a modelled call with shapes: its row, kernel time and cost.
    fn add_call(&mut self, op: usize, encloses: bool) {
        let trace = self.trace;
        let events = self.launches.events_within(trace, op);
        // Every GPU event the call launched (a copy's memcpy too): its count is the row's
        // `num_kernels`, and the GEMM models read `transpose` from the kernel names among them.
        let kernels: Vec<NameId> = events.iter().map(|&g| trace.gpu.name[g as usize]).collect();
        let ops = &trace.cpu_ops;
        let iteration = if self.needs_iteration[ops.name[op].index()] {
            let (start, end) = (ops.start[op].as_nanos(), ops.end(op).as_nanos());
            self.iterations.around(start, end).map(|(index, _)| index)
        } else {
            None
        };
        let key = (ops.name[op], ops.args[op], kernels, iteration);
        let row = match self.rows.get(&key) {
            Some(&row) => row,
            None => {
                let row = self.new_row(&key);
                self.rows.insert(key, row);
                row
            }
        };
        let Some(row) = row else {
            let name = models::normalized(trace.name(ops.name[op]));
            self.builder.unfit_call(name, &events, trace);
            return;
        };
        let (flops, bytes) = self.builder.cost_of(row);
        self.calls.push(Call {
            row,
            kernel_us: busy_micros(trace, &events),
            flops,
            bytes,
            encloses,
        });
    }

    /// Models a call key seen for the first time and finds or makes its row.
    fn new_row(&mut self, (name, args_id, kernels, iteration): &CallKey) -> Option<usize> {
        let trace = self.trace;
        let args = self
            .parsed
            .entry(*args_id)
            .or_insert_with(|| args::parse(trace.op_args.get(*args_id)));
        let kernel_names: Vec<&str> = kernels.iter().map(|&k| trace.name(k)).collect();
        let stats = iteration.and_then(|index| self.iterations.stats(index));
        let modelled = match args {
            Ok(args) => models::cost_in(trace.name(*name), args, &kernel_names, stats),
            Err(reason) => Modelled::Unfit(reason.clone()),
        };
        let op_args = trace.op_args.get(*args_id);
        let name = models::normalized(trace.name(*name));
        self.builder
            .row_for((name, op_args), modelled, kernels.len())
    }
}

/// Busy time of GPU events (the union of their intervals), in microseconds.
fn busy_micros(trace: &Trace, events: &[u32]) -> f64 {
    let mut spans: Vec<(i64, i64)> = events
        .iter()
        .map(|&g| {
            let g = g as usize;
            (trace.gpu.start[g].as_nanos(), trace.gpu.end(g).as_nanos())
        })
        .collect();
    spans.sort_unstable();
    let mut busy = 0i64;
    let mut current: Option<(i64, i64)> = None;
    for (start, end) in spans {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                busy += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some((s, e)) = current {
        busy += e - s;
    }
    busy as f64 / 1e3
}

/// Launch calls per host thread, by start, with the GPU events each launched; graph
/// launches are left out (their replayed kernels were not launched by the op around them).
struct ThreadLaunches {
    by_thread: FxHashMap<(ProcessId, ThreadId), Vec<(i64, u32)>>,
    links_rows: Vec<Vec<u32>>,
    /// Per launch call kept, its innermost enclosing op.
    inner_ops: Vec<Option<u32>>,
}

impl ThreadLaunches {
    fn new(trace: &Trace, links: &LaunchLinks, ops: &LaunchingOps) -> Self {
        let runtime = &trace.runtime;
        let mut by_thread: FxHashMap<(ProcessId, ThreadId), Vec<(i64, u32)>> = FxHashMap::default();
        let mut links_rows = Vec::new();
        let mut inner_ops = Vec::new();
        for call in 0..runtime.len() {
            let launched = links.launched(call);
            if launched.is_empty() || runtime.kind[call] == RuntimeCallKind::GraphLaunch {
                continue;
            }
            let index = links_rows.len() as u32;
            links_rows.push(launched.to_vec());
            inner_ops.push(ops.op_of_call.get(call).copied().flatten());
            by_thread
                .entry((runtime.process[call], runtime.thread[call]))
                .or_default()
                .push((runtime.start[call].as_nanos(), index));
        }
        for calls in by_thread.values_mut() {
            calls.sort_unstable();
        }
        ThreadLaunches {
            by_thread,
            links_rows,
            inner_ops,
        }
    }

    /// The GPU events launched by calls that the op made itself: inside it, with no other
    /// op of its thread between (the innermost op around the call).
    fn direct_events(&self, trace: &Trace, op: usize) -> Vec<u32> {
        let ops = &trace.cpu_ops;
        let (start, end) = (ops.start[op].as_nanos(), ops.end(op).as_nanos());
        let Some(calls) = self.by_thread.get(&(ops.process[op], ops.thread[op])) else {
            return Vec::new();
        };
        let first = calls.partition_point(|&(at, _)| at < start);
        let inner = &self.inner_ops;
        calls[first..]
            .iter()
            .take_while(|&&(at, _)| at < end)
            .filter(|&&(_, index)| inner[index as usize] == Some(op as u32))
            .flat_map(|&(_, index)| self.links_rows[index as usize].iter().copied())
            .collect()
    }

    /// The GPU events launched by calls of the op's thread that start inside the op.
    fn events_within(&self, trace: &Trace, op: usize) -> Vec<u32> {
        let ops = &trace.cpu_ops;
        let Some(calls) = self.by_thread.get(&(ops.process[op], ops.thread[op])) else {
            return Vec::new();
        };
        let (start, end) = (ops.start[op].as_nanos(), ops.end(op).as_nanos());
        let first = calls.partition_point(|&(at, _)| at < start);
        calls[first..]
            .iter()
            .take_while(|&&(at, _)| at < end)
            .flat_map(|&(_, index)| self.links_rows[index as usize].iter().copied())
            .collect()
    }
}
