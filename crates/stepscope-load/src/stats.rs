//! Mean, median and percentiles exactly as numpy computes them, so stepscope's numbers agree
//! with `vllm bench serve` (which calls `np.mean`, `np.median` and `np.percentile`) and
//! `sglang.bench_serving` on the same samples.
//!
//! Percentiles use numpy's default method, `linear` (Hyndman & Fan type 7): for `n` sorted
//! values and `p` in percent, the virtual index is `h = (n − 1) · p/100`, and the result
//! interpolates between `x[⌊h⌋]` and `x[⌊h⌋ + 1]` with numpy's two-sided `_lerp`. The median
//! is numpy's: the middle value, or the mean of the two middle values.

use serde::Serialize;

/// The name of the percentile method, as the report states it.
pub const PERCENTILE_METHOD: &str =
    "linear interpolation between closest ranks (numpy's default, as vllm bench serve)";

/// Mean, median and the 90th, 95th and 99th percentiles of one metric, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyStats {
    /// Arithmetic mean.
    pub mean: f64,
    /// `np.median`.
    pub median: f64,
    /// `np.percentile(values, 90)`.
    pub p90: f64,
    /// `np.percentile(values, 95)`.
    pub p95: f64,
    /// `np.percentile(values, 99)`.
    pub p99: f64,
}

impl LatencyStats {
    /// The statistics of `values` (sorted in place); `None` when there are none.
    pub fn of(values: &mut [f64]) -> Option<Self> {
        values.sort_unstable_by(f64::total_cmp);
        Some(Self {
            mean: mean(values)?,
            median: median_sorted(values)?,
            p90: percentile_sorted(values, 90.0)?,
            p95: percentile_sorted(values, 95.0)?,
            p99: percentile_sorted(values, 99.0)?,
        })
    }
}

/// The arithmetic mean; `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// `np.percentile(sorted, percent)` with the default `linear` method; `sorted` must be in
/// ascending order and `percent` in `[0, 100]`. `None` for no values.
pub fn percentile_sorted(sorted: &[f64], percent: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let virtual_index = last as f64 * (percent / 100.0);
    let below = virtual_index.floor().clamp(0.0, last as f64);
    let gamma = virtual_index - below;
    let lower = below as usize;
    let upper = (lower + 1).min(last);
    Some(lerp(sorted[lower], sorted[upper], gamma))
}

/// numpy's `_lerp`: computed from the nearer end, so it is exact at both ends and monotonic.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let difference = b - a;
    if t >= 0.5 {
        b - difference * (1.0 - t)
    } else {
        a + difference * t
    }
}

pub use stepscope_model::summary::median_sorted;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Expected values worked by hand with h = (n − 1)·p/100; the literals are numpy 2.3.5's
    // `repr(np.percentile(...))`, compared bit for bit.
    #[test]
    fn matches_numpy_linear_on_fixed_vectors() {
        let four = [1.0, 2.0, 3.0, 4.0];
        // h = 3 · 0.99 = 2.97 → 4 − (1 − 0.97) · (4 − 3); numpy prints 3.9699999999999998.
        assert_eq!(percentile_sorted(&four, 99.0), Some(3.9699999999999998));
        // h = 1.5 → 2.5
        assert_eq!(percentile_sorted(&four, 50.0), Some(2.5));
        assert_eq!(percentile_sorted(&four, 0.0), Some(1.0));
        assert_eq!(percentile_sorted(&four, 100.0), Some(4.0));
        let five = [15.0, 20.0, 35.0, 40.0, 50.0];
        // h = 4 · 0.4 = 1.6 → 20 + 0.6 · 15 = 29
        assert_eq!(percentile_sorted(&five, 40.0), Some(29.0));
        // h = 4 · 0.99 = 3.96 → 40 + 0.96 · 10 = 49.6
        assert_eq!(percentile_sorted(&five, 99.0), Some(49.6));
        // np.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90) = 9.1
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile_sorted(&ten, 90.0), Some(9.1));
        // np.percentile([2, 4, 6, 8, 10], 99) = 9.92
        assert_eq!(
            percentile_sorted(&[2.0, 4.0, 6.0, 8.0, 10.0], 99.0),
            Some(9.92)
        );
        // np.percentile(range(101), 99) = 99.0; np.percentile(range(100), 99) = 98.01
        let hundred_one: Vec<f64> = (0..=100).map(f64::from).collect();
        assert_eq!(percentile_sorted(&hundred_one, 99.0), Some(99.0));
        let hundred: Vec<f64> = (0..100).map(f64::from).collect();
        assert_eq!(percentile_sorted(&hundred, 99.0), Some(98.01));
        assert_eq!(percentile_sorted(&[7.5], 99.0), Some(7.5));
        assert_eq!(percentile_sorted(&[], 99.0), None);
    }

    #[test]
    fn median_and_mean_match_numpy() {
        assert_eq!(median_sorted(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
        assert_eq!(median_sorted(&[1.0, 3.0, 10.0]), Some(3.0));
        assert_eq!(median_sorted(&[]), None);
        let mut values = [4.0, 1.0, 3.0, 2.0];
        let stats = LatencyStats::of(&mut values).unwrap();
        // numpy's linear method worked in f64 (h = (n − 1)·p/100, then `_lerp`):
        // np.percentile([1, 2, 3, 4], [90, 95, 99]) = [3.7, 3.8499999999999996, 3.9699999999999998].
        assert_eq!(
            stats,
            LatencyStats {
                mean: 2.5,
                median: 2.5,
                p90: 3.7,
                p95: 3.8499999999999996,
                p99: 3.9699999999999998
            }
        );
        // np.percentile(range(1, 11), [90, 95]) = [9.1, 9.549999999999999]
        let mut ten: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let stats = LatencyStats::of(&mut ten).unwrap();
        assert_eq!((stats.p90, stats.p95), (9.1, 9.549999999999999));
        assert_eq!(LatencyStats::of(&mut []), None);
    }

    proptest! {
        #[test]
        fn percentiles_are_bounded_and_monotonic(
            mut values in prop::collection::vec(-1e6f64..1e6, 1..200),
            p in 0.0f64..=100.0,
            q in 0.0f64..=100.0,
        ) {
            values.sort_unstable_by(f64::total_cmp);
            let (low, high) = (values[0], values[values.len() - 1]);
            let at_p = percentile_sorted(&values, p).unwrap();
            let at_q = percentile_sorted(&values, q).unwrap();
            prop_assert!(low <= at_p && at_p <= high);
            if p <= q {
                prop_assert!(at_p <= at_q);
            }
            prop_assert_eq!(percentile_sorted(&values, 0.0), Some(low));
            prop_assert_eq!(percentile_sorted(&values, 100.0), Some(high));
        }

        #[test]
        fn percentile_lies_between_its_two_ranks(
            mut values in prop::collection::vec(0.0f64..1e4, 2..100),
            p in 0.0f64..=100.0,
        ) {
            values.sort_unstable_by(f64::total_cmp);
            let h = (values.len() - 1) as f64 * p / 100.0;
            let (lower, upper) = (h.floor() as usize, (h.ceil() as usize).min(values.len() - 1));
            let at_p = percentile_sorted(&values, p).unwrap();
            prop_assert!(values[lower] <= at_p && at_p <= values[upper]);
        }

        #[test]
        fn median_is_the_50th_percentile(mut values in prop::collection::vec(0.0f64..1e4, 1..100)) {
            values.sort_unstable_by(f64::total_cmp);
            let median = median_sorted(&values).unwrap();
            let p50 = percentile_sorted(&values, 50.0).unwrap();
            prop_assert!((median - p50).abs() <= 1e-9 * median.abs().max(1.0));
        }

        #[test]
        fn mean_is_within_the_range(values in prop::collection::vec(-1e6f64..1e6, 1..100)) {
            let mean = mean(&values).unwrap();
            let low = values.iter().copied().fold(f64::INFINITY, f64::min);
            let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(low - 1e-6 <= mean && mean <= high + 1e-6);
        }
    }
}
