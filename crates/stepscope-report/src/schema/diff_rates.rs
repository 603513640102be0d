//! `diff`'s op rates: per op row both sides have (same op name and model parameters), the
//! achieved TFLOP/s and TB/s of each side and their change. A row's rate over a side is
//! its FLOPs (bytes) over its kernel time, all calls of all files together.

use super::efficiency::{EfficiencyReport, EfficiencyRow};
use serde::Serialize;
use std::collections::BTreeMap;

/// The op rates section.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OpRates {
    /// Rows both sides have, by the larger side's kernel time, descending (the first
    /// `kernel_limit`).
    pub shared: Vec<OpRateDelta>,
    /// Rows only the base has.
    pub only_base: usize,
    /// Rows only the new side has.
    pub only_new: usize,
}

/// One op row on both sides.
#[derive(Debug, Clone, Serialize)]
pub struct OpRateDelta {
    /// Op name.
    pub name: String,
    /// Model parameters, `name=value` joined by `; `.
    pub params: String,
    /// The first call's `Input Dims` on the base side.
    pub input_dims: String,
    /// Calls on the base side.
    pub base_calls: u64,
    /// Calls on the new side.
    pub new_calls: u64,
    /// Base TFLOP/s (FLOPs over kernel time, all calls); `null` without kernel time.
    pub base_tflops: Option<f64>,
    /// New TFLOP/s.
    pub new_tflops: Option<f64>,
    /// New over base, minus one (`0.1`: 10 % faster).
    pub tflops_change: Option<f64>,
    /// Base TB/s.
    pub base_tbps: Option<f64>,
    /// New TB/s.
    pub new_tbps: Option<f64>,
    /// Mean kernel time per call on the base side, µs.
    pub base_mean_us: f64,
    /// On the new side, µs.
    pub new_mean_us: f64,
}

/// A row summed over a side's files.
#[derive(Default)]
struct Summed {
    input_dims: String,
    calls: u64,
    kernel_us: f64,
    flops: f64,
    bytes: Option<f64>,
}

fn key(row: &EfficiencyRow) -> (String, String) {
    (row.name.clone(), row.params_text())
}

fn summed<'a>(
    reports: impl Iterator<Item = &'a EfficiencyReport>,
) -> BTreeMap<(String, String), Summed> {
    let mut rows: BTreeMap<(String, String), Summed> = BTreeMap::new();
    for row in reports
        .flat_map(|r| &r.ops)
        .filter(|r| !r.encloses_modelled_op)
    {
        let entry = rows.entry(key(row)).or_default();
        if entry.calls == 0 {
            entry.input_dims = row.input_dims.clone();
            entry.bytes = Some(0.0);
        }
        let calls = row.count as f64;
        entry.calls += row.count;
        entry.kernel_us += row.kernel_time_us_sum;
        entry.flops += row.gflops * 1e9 * calls;
        entry.bytes = match (entry.bytes, row.data_moved_mib) {
            (Some(sum), Some(mib)) => Some(sum + mib * 1024.0 * 1024.0 * calls),
            _ => None,
        };
    }
    rows
}

fn rate(amount: Option<f64>, micros: f64) -> Option<f64> {
    (micros > 0.0).then_some(())?;
    Some(amount? / 1e12 / (micros / 1e6))
}

impl OpRates {
    /// Compares the sides' rows, keeping the first `limit` shared ones.
    pub fn new<'a>(
        base: impl Iterator<Item = &'a EfficiencyReport>,
        new: impl Iterator<Item = &'a EfficiencyReport>,
        limit: usize,
    ) -> Self {
        let (base, new) = (summed(base), summed(new));
        let mut shared: Vec<OpRateDelta> = base
            .iter()
            .filter_map(|(key, b)| Some(delta(key, b, new.get(key)?)))
            .collect();
        shared.sort_by(|a, b| {
            let larger = |d: &OpRateDelta| {
                (d.base_mean_us * d.base_calls as f64).max(d.new_mean_us * d.new_calls as f64)
            };
            larger(b).total_cmp(&larger(a))
        });
        let count = shared.len();
        shared.truncate(limit);
        OpRates {
            shared,
            only_base: base.len() - count,
            only_new: new.len() - count,
        }
    }
}

fn delta((name, params): &(String, String), base: &Summed, new: &Summed) -> OpRateDelta {
    let base_tflops = rate(Some(base.flops), base.kernel_us);
    let new_tflops = rate(Some(new.flops), new.kernel_us);
    let mean = |s: &Summed| s.kernel_us / s.calls.max(1) as f64;
    OpRateDelta {
        name: name.clone(),
        params: params.clone(),
        input_dims: base.input_dims.clone(),
        base_calls: base.calls,
        new_calls: new.calls,
        base_tflops,
        new_tflops,
        tflops_change: match (base_tflops, new_tflops) {
            (Some(b), Some(n)) if b > 0.0 => Some(n / b - 1.0),
            _ => None,
        },
        base_tbps: rate(base.bytes, base.kernel_us),
        new_tbps: rate(new.bytes, new.kernel_us),
        base_mean_us: mean(base),
        new_mean_us: mean(new),
    }
}
