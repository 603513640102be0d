//! The efficiency table: calls grouped into rows by op name and model parameters, with
//! their statistics and roofline.

use super::devices::DevicePeaks;
use super::spec::{ComputeSpec, Family, Modelled, OpCost};
use super::{Call, ThreadLaunches, busy_micros};
use rustc_hash::FxHashMap;
use stepscope_model::{OpArgs, Trace};

/// Mean, median, sample standard deviation (one degree of freedom; `None` under two
/// values), min and max of a row's per-call values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowStats {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Sample standard deviation.
    pub std: Option<f64>,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl RowStats {
    fn of(values: &mut [f64]) -> Option<RowStats> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let median = stepscope_model::summary::median_sorted(values)?;
        let std = (n > 1).then(|| {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            var.sqrt()
        });
        Some(RowStats {
            mean,
            median,
            std,
            min: values[0],
            max: values[n - 1],
        })
    }
}

/// Which roof bounds an op on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Its FLOPs at peak rate take longer than its bytes at peak bandwidth.
    Compute,
    /// Its bytes at peak bandwidth take longer.
    Memory,
}

impl Bound {
    /// `compute` or `memory`.
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        }
    }
}

/// A row against the device's peaks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Roofline {
    /// The compute peak of the row's spec, TFLOP/s (`None` when the device has no rate at
    /// that precision).
    pub peak_tflops: Option<f64>,
    /// The device's HBM bandwidth, TB/s.
    pub peak_tbps: f64,
    /// The roof that bounds it.
    pub bound: Bound,
    /// The shortest time one call could take at the peaks, µs.
    pub roofline_us: f64,
    /// Roofline time over the mean kernel time, %.
    pub pct_of_roofline: Option<f64>,
    /// Mean achieved TFLOP/s over the compute peak, %.
    pub pct_compute_peak: Option<f64>,
    /// Mean achieved TB/s over the bandwidth peak, %.
    pub pct_bandwidth_peak: Option<f64>,
    /// Kernel time beyond the roofline, summed over the calls, µs.
    pub time_lost_us: f64,
}

/// One row: the calls of one op with equal model parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct OpRow {
    /// Op name.
    pub name: String,
    /// Model family.
    pub family: Family,
    /// Compute roof (`matrix_bf16`).
    pub spec: ComputeSpec,
    /// Model parameters, as TraceLens names and renders them.
    pub params: Vec<(&'static str, String)>,
    /// The first call's argument lists (`Input Dims`, `Input type`, `Input Strides`,
    /// `Concrete Inputs`), on one line.
    pub args: [String; 4],
    /// Calls.
    pub count: u64,
    /// Kernel time per call, µs.
    pub kernel_us: Option<RowStats>,
    /// Kernel time of all calls, µs.
    pub kernel_us_sum: f64,
    /// GFLOP per call.
    pub gflops: f64,
    /// MiB moved per call (`None` when a dtype's size is unknown).
    pub data_moved_mib: Option<f64>,
    /// FLOPs per byte.
    pub flops_per_byte: Option<f64>,
    /// Achieved TFLOP/s per call (calls that ran no kernel left out).
    pub tflops: Option<RowStats>,
    /// Achieved TB/s per call.
    pub tbps: Option<RowStats>,
    /// Against the device's peaks, when the device is known.
    pub roofline: Option<Roofline>,
    /// Every call encloses another modelled call (`aten::linear` around `aten::addmm`): its
    /// kernels are counted in the inner op's row too, so rankings and totals leave it out.
    pub encloses_modelled: bool,
}

/// Op names without a model that launched kernels themselves (as the innermost op).
#[derive(Debug, Clone, PartialEq)]
pub struct UnmodelledOp {
    /// Op name.
    pub name: String,
    /// Calls that launched GPU work.
    pub count: u64,
    /// Their kernel busy time, µs.
    pub kernel_us_sum: f64,
    /// Why there is no row: `no model`, or why the arguments did not fit the model.
    pub reason: String,
}

/// The pass's result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Efficiency {
    /// The device whose peaks the rooflines use.
    pub device: Option<&'static DevicePeaks>,
    /// How it was found (`--device`, the trace's device name, or its properties).
    pub device_basis: Option<String>,
    /// Rows, by kernel time (sum) descending.
    pub rows: Vec<OpRow>,
    /// Ops with no row, by kernel time descending.
    pub unmodelled: Vec<UnmodelledOp>,
    /// Calls of modelled ops (host calls, and calls replayed in graphs).
    pub modelled_calls: u64,
    /// Graph replays (launches that ran GPU work).
    pub graph_replays: u64,
    /// Of them, replays matched node by node to a captured graph, whose ops gave their
    /// kernels shapes.
    pub replays_with_shapes: u64,
    /// Of those, replays that lost some of their graph's kernels (matched by name): the ops
    /// whose kernels were all recorded have calls, the others none.
    pub partial_replays: u64,
    /// Of those, calls recorded without shapes (no `Input Dims`).
    pub calls_without_shapes: u64,
    /// Whether the trace records no host ops at all (a GPU-only trace, or a format without
    /// PyTorch's ops: rocprofv3, RPD, Nsight Systems), so there is nothing to model.
    pub no_host_ops: bool,
    /// Whether the trace records no GPU work at all (a CPU-only run), so there is no kernel
    /// time to price and no row is made.
    pub no_gpu_work: bool,
}

impl Efficiency {
    /// Whether the trace was recorded without shapes: modelled ops ran, none with shapes.
    pub fn recorded_without_shapes(&self) -> bool {
        self.modelled_calls > 0 && self.calls_without_shapes == self.modelled_calls
    }
}

struct Draft {
    name: String,
    cost: OpCost,
    args: [String; 4],
}

/// A row's key: op name and model parameters.
type RowKey = (String, Vec<(&'static str, String)>);

#[derive(Default)]
pub(super) struct TableBuilder {
    drafts: Vec<Draft>,
    by_key: FxHashMap<RowKey, usize>,
    unmodelled: FxHashMap<String, UnmodelledOp>,
    modelled_calls: u64,
    calls_without_shapes: u64,
    pub(super) graph_replays: u64,
    pub(super) replays_with_shapes: u64,
    pub(super) partial_replays: u64,
}

impl TableBuilder {
    pub(super) fn modelled_call(&mut self, without_shapes: bool) {
        self.modelled_calls += 1;
        self.calls_without_shapes += u64::from(without_shapes);
    }

    /// Counts an op without a model when it launched GPU work itself.
    pub(super) fn unmodelled(&mut self, trace: &Trace, op: usize, launches: &ThreadLaunches) {
        let events = launches.direct_events(trace, op);
        if events.is_empty() {
            return;
        }
        self.count_unmodelled(
            trace.name(trace.cpu_ops.name[op]),
            "no model",
            &events,
            trace,
        );
    }

    fn count_unmodelled(&mut self, name: &str, reason: &str, events: &[u32], trace: &Trace) {
        let entry = self
            .unmodelled
            .entry(name.to_owned())
            .or_insert_with(|| UnmodelledOp {
                name: name.to_owned(),
                count: 0,
                kernel_us_sum: 0.0,
                reason: reason.to_owned(),
            });
        entry.count += 1;
        entry.kernel_us_sum += busy_micros(trace, events);
    }

    /// Counts one call of a modelled op whose arguments did not fit its model (its row was
    /// `None`), with the kernel time of `events`.
    pub(super) fn unfit_call(&mut self, name: &str, events: &[u32], trace: &Trace) {
        if let Some(entry) = self.unmodelled.get_mut(name) {
            entry.count += 1;
            entry.kernel_us_sum += busy_micros(trace, events);
        }
    }

    /// The row of a modelled call, made when new; `None` when the arguments do not fit the
    /// model (listed as unmodelled with the reason; each such call counted by
    /// [`Self::unfit_call`]).
    ///
    /// Calls that launched different numbers of kernels are different rows (`num_kernels`,
    /// after the model's parameters, as TraceLens groups inference traces): the same op and
    /// shapes dispatched to a split-K pair or a single kernel are two implementations, with
    /// two efficiencies (vLLM's unified attention runs a 3-D kernel and its reduction on
    /// full-attention layers, one 2-D kernel on sliding-window ones).
    pub(super) fn row_for(
        &mut self,
        (name, args): (&str, OpArgs<'_>),
        modelled: Modelled,
        kernels: usize,
    ) -> Option<usize> {
        let mut cost = match modelled {
            Modelled::Cost(cost) => cost,
            Modelled::Unfit(reason) => {
                let reason = format!("arguments do not fit: {reason}");
                self.unmodelled
                    .entry(name.to_owned())
                    .or_insert_with(|| UnmodelledOp {
                        name: name.to_owned(),
                        count: 0,
                        kernel_us_sum: 0.0,
                        reason,
                    });
                return None;
            }
            Modelled::NoModel => return None,
        };
        cost.params.push(("num_kernels", kernels.to_string()));
        let key = (name.to_owned(), cost.params.clone());
        if let Some(&row) = self.by_key.get(&key) {
            return Some(row);
        }
        let row = self.drafts.len();
        let args = one_line_args(args);
        self.drafts.push(Draft {
            name: name.to_owned(),
            cost,
            args,
        });
        self.by_key.insert(key, row);
        Some(row)
    }

    pub(super) fn cost_of(&self, row: usize) -> (f64, Option<f64>) {
        let cost = &self.drafts[row].cost;
        (cost.flops, cost.bytes)
    }

    pub(super) fn finish(
        self,
        calls: &[Call],
        found: Option<(&'static DevicePeaks, String)>,
    ) -> Efficiency {
        let (device, device_basis) = match found {
            Some((device, basis)) => (Some(device), Some(basis)),
            None => (None, None),
        };
        let mut per_row: Vec<Vec<&Call>> = vec![Vec::new(); self.drafts.len()];
        for call in calls {
            per_row[call.row].push(call);
        }
        let mut rows: Vec<OpRow> = self
            .drafts
            .into_iter()
            .zip(per_row)
            .map(|(draft, calls)| make_row(draft, &calls, device))
            .collect();
        rows.sort_by(|a, b| b.kernel_us_sum.total_cmp(&a.kernel_us_sum));
        let mut unmodelled: Vec<UnmodelledOp> = self.unmodelled.into_values().collect();
        unmodelled.sort_by(|a, b| {
            b.kernel_us_sum
                .total_cmp(&a.kernel_us_sum)
                .then_with(|| a.name.cmp(&b.name))
        });
        Efficiency {
            device,
            device_basis,
            rows,
            unmodelled,
            graph_replays: self.graph_replays,
            replays_with_shapes: self.replays_with_shapes,
            partial_replays: self.partial_replays,
            modelled_calls: self.modelled_calls,
            calls_without_shapes: self.calls_without_shapes,
            no_host_ops: false,
            no_gpu_work: false,
        }
    }
}

fn make_row(draft: Draft, calls: &[&Call], device: Option<&'static DevicePeaks>) -> OpRow {
    let Draft { name, cost, args } = draft;
    let mut times: Vec<f64> = calls.iter().map(|c| c.kernel_us).collect();
    let kernel_us_sum = times.iter().sum();
    let ran: Vec<&&Call> = calls.iter().filter(|c| c.kernel_us > 0.0).collect();
    let mut tflops: Vec<f64> = ran
        .iter()
        .map(|c| (c.flops / 1e12) / (c.kernel_us / 1e6))
        .collect();
    let mut tbps: Vec<f64> = ran
        .iter()
        .filter_map(|c| Some((c.bytes? / 1e12) / (c.kernel_us / 1e6)))
        .collect();
    let gflops = cost.flops / 1e9;
    let mut row = OpRow {
        name,
        family: cost.family,
        spec: cost.spec,
        params: cost.params,
        args,
        count: calls.len() as u64,
        kernel_us: RowStats::of(&mut times),
        kernel_us_sum,
        gflops,
        data_moved_mib: cost.bytes.map(|b| b / (1024.0 * 1024.0)),
        flops_per_byte: cost.bytes.filter(|&b| b > 0.0).map(|b| gflops * 1e9 / b),
        tflops: RowStats::of(&mut tflops),
        tbps: RowStats::of(&mut tbps),
        roofline: None,
        encloses_modelled: !calls.is_empty() && calls.iter().all(|c| c.encloses),
    };
    row.roofline = device.and_then(|device| roofline(&row, cost.flops, cost.bytes, device));
    row
}

fn roofline(row: &OpRow, flops: f64, bytes: Option<f64>, device: &DevicePeaks) -> Option<Roofline> {
    let peak_tflops = device.compute_tflops(row.spec);
    let compute_us = peak_tflops.map(|peak| flops / (peak * 1e12) * 1e6);
    let memory_us = bytes.map(|b| b / (device.hbm_tbps * 1e12) * 1e6);
    let (bound, roofline_us) = match (compute_us, memory_us) {
        (Some(c), Some(m)) if c >= m => (Bound::Compute, c),
        (_, Some(m)) => (Bound::Memory, m),
        (Some(c), None) => (Bound::Compute, c),
        (None, None) => return None,
    };
    let mean_us = row.kernel_us.map(|k| k.mean).filter(|&m| m > 0.0);
    let pct = |num: Option<f64>, den: Option<f64>| Some(num? / den? * 100.0);
    Some(Roofline {
        peak_tflops,
        peak_tbps: device.hbm_tbps,
        bound,
        roofline_us,
        pct_of_roofline: mean_us.map(|m| roofline_us / m * 100.0),
        pct_compute_peak: pct(row.tflops.map(|t| t.mean), peak_tflops),
        pct_bandwidth_peak: pct(row.tbps.map(|t| t.mean), Some(device.hbm_tbps)),
        time_lost_us: (row.kernel_us_sum - row.count as f64 * roofline_us).max(0.0),
    })
}

/// Argument lists on one line, as TraceLens prints them (`[[8944, 1024], [1024, 2816]]`):
/// the trace's JSON with its layout dropped.
fn one_line_args(args: OpArgs<'_>) -> [String; 4] {
    [
        args.input_dims,
        args.input_types,
        args.input_strides,
        args.concrete_inputs,
    ]
    .map(|text| text.map(one_line).unwrap_or_default())
}

fn one_line(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => python_repr(&value),
        Err(_) => text.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

fn python_repr(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(python_repr).collect();
            format!("[{}]", inner.join(", "))
        }
        serde_json::Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}
