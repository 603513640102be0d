//! `efficiency.csv`: one row per file, op and model parameters, with TraceLens's column
//! meanings (GFLOPS per call, data moved in MiB, TFLOP/s and TB/s per call then averaged).

use super::{Records, opt, strings};
use crate::schema::Document;
use crate::schema::efficiency::{EfficiencyRow, Stats};

const HEADER: [&str; 28] = [
    "file",
    "name",
    "family",
    "compute_spec",
    "params",
    "input_dims",
    "input_types",
    "input_strides",
    "concrete_inputs",
    "count",
    "kernel_time_us_mean",
    "kernel_time_us_median",
    "kernel_time_us_sum",
    "gflops",
    "data_moved_mib",
    "flops_per_byte",
    "tflops_mean",
    "tflops_median",
    "tbps_mean",
    "tbps_median",
    "device",
    "bound",
    "roofline_time_us",
    "pct_of_roofline",
    "pct_compute_peak",
    "pct_bandwidth_peak",
    "time_lost_us",
    "encloses_modelled_op",
];

/// The table.
pub(super) fn efficiency(document: &Document) -> Records {
    let mut out = vec![strings(&HEADER)];
    for file in &document.files {
        let report = &file.efficiency;
        let device = report.device.as_ref().map(|d| d.name).unwrap_or("");
        for row in &report.ops {
            out.push(record(&file.path, device, row, row.params_text()));
        }
    }
    out
}

fn record(path: &str, device: &str, row: &EfficiencyRow, params: String) -> Vec<String> {
    let stat = |s: Option<Stats>, f: fn(Stats) -> f64| opt(s.map(f));
    let roof = row.roofline.as_ref();
    vec![
        path.to_owned(),
        row.name.clone(),
        row.family.to_owned(),
        row.compute_spec.clone(),
        params,
        row.input_dims.clone(),
        row.input_types.clone(),
        row.input_strides.clone(),
        row.concrete_inputs.clone(),
        row.count.to_string(),
        stat(row.kernel_time_us, |s| s.mean),
        stat(row.kernel_time_us, |s| s.median),
        row.kernel_time_us_sum.to_string(),
        row.gflops.to_string(),
        opt(row.data_moved_mib),
        opt(row.flops_per_byte),
        stat(row.tflops, |s| s.mean),
        stat(row.tflops, |s| s.median),
        stat(row.tbps, |s| s.mean),
        stat(row.tbps, |s| s.median),
        device.to_owned(),
        roof.map(|r| r.bound.to_owned()).unwrap_or_default(),
        opt(roof.map(|r| r.roofline_time_us)),
        opt(roof.and_then(|r| r.pct_of_roofline)),
        opt(roof.and_then(|r| r.pct_compute_peak)),
        opt(roof.and_then(|r| r.pct_bandwidth_peak)),
        opt(roof.map(|r| r.time_lost_us)),
        row.encloses_modelled_op.to_string(),
    ]
}
