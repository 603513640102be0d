//! The efficiency section of a file's report: per op and model parameters, FLOPs, bytes,
//! achieved rates and the roofline on the device's peaks.

use super::text;
use serde::Serialize;
use stepscope_analysis::{Efficiency, OpRow, Roofline, RowStats};

/// What to do when a trace holds no shapes.
pub const WITHOUT_SHAPES_NOTE: &str = "recorded without record_shapes; efficiency needs it \
    (vLLM: \"torch_profiler_record_shapes\": true in --profiler-config, or \
    VLLM_TORCH_PROFILER_RECORD_SHAPES=1; SGLang: \"record_shapes\": true in the /start_profile \
    body; ATOM and scripts: torch.profiler.profile(record_shapes=True))";

/// Why a trace without GPU work has no efficiency rows.
pub const NO_GPU_WORK_NOTE: &str = "the trace records no GPU kernel, memcpy or memset, so \
    there is no kernel time to price against a roofline";

/// Why a trace with no host ops (a GPU-only trace; rocprofv3, RPD and Nsight Systems record
/// none of PyTorch's ops) has no efficiency rows.
pub const NO_HOST_OPS_NOTE: &str = "the trace records no PyTorch ops, so no op shapes; \
    efficiency needs the PyTorch profiler's trace of the run, recorded with record_shapes=True \
    (rocprofv3, RPD and Nsight Systems record kernels, not ops)";

/// What to do when graph replays ran and no captured graph gave their kernels shapes.
pub const REPLAYS_NOTE: &str = "graph replays' kernels have no CPU op, so no shapes: give the \
    trace recorded while the graphs were captured (--capture FILE, or the capture_traces/ \
    folder vLLM, SGLang and ATOM write beside the trace) for their rows";

/// The section.
#[derive(Debug, Clone, Serialize)]
pub struct EfficiencyReport {
    /// The device whose peaks the rooflines use; `null` when the trace names none in the
    /// table and `--device` was not given (the table then has no % of peak).
    pub device: Option<Device>,
    /// Calls of ops that have a performance model.
    pub modelled_calls: u64,
    /// Of them, calls recorded without shapes.
    pub calls_without_shapes: u64,
    /// Said when no modelled call has shapes: how to record them.
    pub note: Option<&'static str>,
    /// Graph replays that ran GPU work.
    pub graph_replays: u64,
    /// Of them, replays matched node by node to a captured graph, whose ops gave their
    /// kernels shapes (one call per replay and op).
    pub replays_with_shapes: u64,
    /// Of those, replays that lost some of their graph's kernels: only the ops whose
    /// kernels were all recorded have calls from them.
    pub partial_replays: u64,
    /// Said when replays ran but none matched a captured graph: how to give one.
    pub replays_note: Option<&'static str>,
    /// Per op name and model parameters, by kernel time (sum) descending.
    pub ops: Vec<EfficiencyRow>,
    /// Ops without a row that launched GPU work themselves, with the reason.
    pub unmodelled: Vec<Unmodelled>,
}

/// A device's peaks.
#[derive(Debug, Clone, Serialize)]
pub struct Device {
    /// Table name (`MI300X`).
    pub name: &'static str,
    /// HBM bandwidth, TB/s.
    pub hbm_tbps: f64,
    /// Where the numbers come from.
    pub source: &'static str,
    /// How the device was found: `--device`, the trace's device name, or its
    /// `deviceProperties` (when the runtime left the name empty).
    pub identified_by: String,
}

/// Mean, median, sample std, min, max.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Stats {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Sample standard deviation (`null` under two calls).
    pub std: Option<f64>,
    /// Min.
    pub min: f64,
    /// Max.
    pub max: f64,
}

impl From<RowStats> for Stats {
    fn from(s: RowStats) -> Self {
        Stats {
            mean: s.mean,
            median: s.median,
            std: s.std,
            min: s.min,
            max: s.max,
        }
    }
}

/// One model parameter.
#[derive(Debug, Clone, Serialize)]
pub struct Param {
    /// Name (`M`, `dtype_A_B`).
    pub name: &'static str,
    /// Value as TraceLens renders it.
    pub value: String,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct EfficiencyRow {
    /// Op name.
    pub name: String,
    /// Model family (`gemm`, `attention`, ...).
    pub family: &'static str,
    /// Compute roof (`matrix_bf16`); empty for integer work.
    pub compute_spec: String,
    /// Model parameters.
    pub params: Vec<Param>,
    /// The first call's `Input Dims`.
    pub input_dims: String,
    /// The first call's `Input type`.
    pub input_types: String,
    /// The first call's `Input Strides`.
    pub input_strides: String,
    /// The first call's `Concrete Inputs`.
    pub concrete_inputs: String,
    /// Calls.
    pub count: u64,
    /// Kernel busy time per call, µs.
    pub kernel_time_us: Option<Stats>,
    /// Kernel busy time of all calls, µs.
    pub kernel_time_us_sum: f64,
    /// GFLOP per call.
    pub gflops: f64,
    /// MiB moved per call.
    pub data_moved_mib: Option<f64>,
    /// FLOPs per byte.
    pub flops_per_byte: Option<f64>,
    /// Achieved TFLOP/s.
    pub tflops: Option<Stats>,
    /// Achieved TB/s.
    pub tbps: Option<Stats>,
    /// Against the device's peaks.
    pub roofline: Option<RooflineReport>,
    /// Every call encloses another modelled op (`aten::linear` around `aten::addmm`), whose
    /// row holds the same kernels: left out of rankings and totals.
    pub encloses_modelled_op: bool,
}

/// A row against the peaks.
#[derive(Debug, Clone, Serialize)]
pub struct RooflineReport {
    /// Compute peak of the row's spec, TFLOP/s.
    pub peak_tflops: Option<f64>,
    /// HBM peak, TB/s.
    pub peak_tbps: f64,
    /// `compute` or `memory`.
    pub bound: &'static str,
    /// Time per call at the peaks, µs.
    pub roofline_time_us: f64,
    /// Roofline time over mean kernel time, %.
    pub pct_of_roofline: Option<f64>,
    /// Mean TFLOP/s over the compute peak, %.
    pub pct_compute_peak: Option<f64>,
    /// Mean TB/s over the bandwidth peak, %.
    pub pct_bandwidth_peak: Option<f64>,
    /// Kernel time beyond the roofline, all calls, µs.
    pub time_lost_us: f64,
}

/// An op without a row.
#[derive(Debug, Clone, Serialize)]
pub struct Unmodelled {
    /// Op name.
    pub name: String,
    /// Calls.
    pub count: u64,
    /// Their kernel busy time, µs.
    pub kernel_time_us_sum: f64,
    /// `no model`, or why the arguments did not fit.
    pub reason: String,
}

impl EfficiencyRow {
    /// The parameters on one line, `name=value` joined by `; ` (the CSV and Parquet
    /// `params` column, and the key `diff` matches rows by).
    pub fn params_text(&self) -> String {
        let pairs: Vec<String> = self
            .params
            .iter()
            .map(|p| format!("{}={}", p.name, p.value))
            .collect();
        pairs.join("; ")
    }
}

impl EfficiencyReport {
    /// From the analysis.
    pub fn new(efficiency: &Efficiency) -> Self {
        EfficiencyReport {
            device: efficiency.device.map(|d| Device {
                name: d.name,
                hbm_tbps: d.hbm_tbps,
                source: d.source,
                identified_by: text(efficiency.device_basis.as_deref().unwrap_or("")),
            }),
            modelled_calls: efficiency.modelled_calls,
            calls_without_shapes: efficiency.calls_without_shapes,
            note: if efficiency.no_host_ops {
                Some(NO_HOST_OPS_NOTE)
            } else if efficiency.recorded_without_shapes() {
                Some(WITHOUT_SHAPES_NOTE)
            } else {
                efficiency.no_gpu_work.then_some(NO_GPU_WORK_NOTE)
            },
            graph_replays: efficiency.graph_replays,
            replays_with_shapes: efficiency.replays_with_shapes,
            partial_replays: efficiency.partial_replays,
            replays_note: (efficiency.graph_replays > 0 && efficiency.replays_with_shapes == 0)
                .then_some(REPLAYS_NOTE),
            ops: efficiency.rows.iter().map(row).collect(),
            unmodelled: efficiency
                .unmodelled
                .iter()
                .map(|u| Unmodelled {
                    name: text(&u.name),
                    count: u.count,
                    kernel_time_us_sum: u.kernel_us_sum,
                    reason: text(&u.reason),
                })
                .collect(),
        }
    }
}

fn row(row: &OpRow) -> EfficiencyRow {
    let [dims, types, strides, concrete] = &row.args;
    EfficiencyRow {
        name: text(&row.name),
        family: row.family.as_str(),
        compute_spec: row.spec.to_string(),
        params: row
            .params
            .iter()
            .map(|(name, value)| Param {
                name,
                value: text(value),
            })
            .collect(),
        input_dims: text(dims),
        input_types: text(types),
        input_strides: text(strides),
        concrete_inputs: text(concrete),
        count: row.count,
        kernel_time_us: row.kernel_us.map(Stats::from),
        kernel_time_us_sum: row.kernel_us_sum,
        gflops: row.gflops,
        data_moved_mib: row.data_moved_mib,
        flops_per_byte: row.flops_per_byte,
        tflops: row.tflops.map(Stats::from),
        tbps: row.tbps.map(Stats::from),
        roofline: row.roofline.as_ref().map(roofline),
        encloses_modelled_op: row.encloses_modelled,
    }
}

fn roofline(r: &Roofline) -> RooflineReport {
    RooflineReport {
        peak_tflops: r.peak_tflops,
        peak_tbps: r.peak_tbps,
        bound: r.bound.as_str(),
        roofline_time_us: r.roofline_us,
        pct_of_roofline: r.pct_of_roofline,
        pct_compute_peak: r.pct_compute_peak,
        pct_bandwidth_peak: r.pct_bandwidth_peak,
        time_lost_us: r.time_lost_us,
    }
}
