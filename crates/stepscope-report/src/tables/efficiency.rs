//! The `efficiency` table: each file's op rows, as the JSON's `efficiency.ops`.

use super::coverage::{Keyed, keyed, keyed_table};
use super::ns;
use super::table::Table;
use crate::schema::Document;
use crate::schema::efficiency::{EfficiencyRow, Stats};

type Row<'a> = Keyed<'a, &'a EfficiencyRow>;

/// One row per op and model parameters of each file.
pub fn efficiency(document: &Document, run_id: &str) -> Table {
    let rows = keyed(document, |f| f.efficiency.ops.iter());
    let mut table = keyed_table("efficiency", run_id, &rows);
    table
        .column("name", &rows, |r| r.item.name.as_str())
        .column("family", &rows, |r| r.item.family)
        .column("compute_spec", &rows, |r| r.item.compute_spec.as_str())
        .column("params", &rows, |r| r.item.params_text())
        .column("input_dims", &rows, |r| r.item.input_dims.as_str())
        .column("input_types", &rows, |r| r.item.input_types.as_str())
        .column("input_strides", &rows, |r| r.item.input_strides.as_str())
        .column("concrete_inputs", &rows, |r| {
            r.item.concrete_inputs.as_str()
        })
        .column("count", &rows, |r| r.item.count)
        .column("kernel_time_mean_ns", &rows, |r| {
            r.item.kernel_time_us.map(|k| ns(k.mean))
        })
        .column("kernel_time_median_ns", &rows, |r| {
            r.item.kernel_time_us.map(|k| ns(k.median))
        })
        .column("kernel_time_sum_ns", &rows, |r| {
            ns(r.item.kernel_time_us_sum)
        })
        .column("gflops", &rows, |r| r.item.gflops)
        .column("data_moved_mib", &rows, |r| r.item.data_moved_mib)
        .column("flops_per_byte", &rows, |r| r.item.flops_per_byte);
    rates(&mut table, &rows);
    roofline(&mut table, &rows);
    table
}

fn rates(table: &mut Table, rows: &[Row<'_>]) {
    let stat = |s: Option<Stats>, f: fn(Stats) -> f64| s.map(f);
    table
        .column("tflops_mean", rows, |r| stat(r.item.tflops, |s| s.mean))
        .column("tflops_median", rows, |r| stat(r.item.tflops, |s| s.median))
        .column("tflops_min", rows, |r| stat(r.item.tflops, |s| s.min))
        .column("tflops_max", rows, |r| stat(r.item.tflops, |s| s.max))
        .column("tbps_mean", rows, |r| stat(r.item.tbps, |s| s.mean))
        .column("tbps_median", rows, |r| stat(r.item.tbps, |s| s.median));
}

fn roofline(table: &mut Table, rows: &[Row<'_>]) {
    table
        .column("device", rows, |r| {
            r.file.efficiency.device.as_ref().map(|d| d.name)
        })
        .column("bound", rows, |r| r.item.roofline.as_ref().map(|x| x.bound))
        .column("roofline_time_ns", rows, |r| {
            r.item.roofline.as_ref().map(|x| ns(x.roofline_time_us))
        })
        .column("pct_of_roofline", rows, |r| {
            r.item.roofline.as_ref().and_then(|x| x.pct_of_roofline)
        })
        .column("pct_compute_peak", rows, |r| {
            r.item.roofline.as_ref().and_then(|x| x.pct_compute_peak)
        })
        .column("pct_bandwidth_peak", rows, |r| {
            r.item.roofline.as_ref().and_then(|x| x.pct_bandwidth_peak)
        })
        .column("time_lost_ns", rows, |r| {
            r.item.roofline.as_ref().map(|x| ns(x.time_lost_us))
        })
        .column("encloses_modelled_op", rows, |r| {
            r.item.encloses_modelled_op
        });
}
