//! Distribution-free bounds on the median of one set of values, for judging a set against a
//! fixed limit (a service-level objective: is the candidate's p99 TTFT per phase below
//! 500 ms, beyond the noise between phases?).
//!
//! The bounds are order statistics: for `n` values of any continuous law, the median lies
//! between the `k`-th smallest and the `k`-th largest value with probability
//! `1 − 2·P(B < k)`, `B` binomial with `n` trials of ½ (the sign test's interval; Conover,
//! *Practical Nonparametric Statistics*, §3.2). `k` is the largest that keeps that at or
//! above the confidence; with too few values (`2·½ⁿ` above `1 − confidence`: fewer than 6
//! at 95 %) no bound exists and the interval is unbounded on both sides.

/// Bounds on the median of a set.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MedianBounds {
    /// The median of the values (the mean of the middle two for an even count).
    pub median: f64,
    /// The lower bound (−∞ when too few values).
    pub low: f64,
    /// The upper bound (+∞ when too few values).
    pub high: f64,
    /// The interval's confidence.
    pub confidence: f64,
}

impl MedianBounds {
    /// Whether the interval has both ends.
    pub fn is_bounded(&self) -> bool {
        self.low.is_finite() && self.high.is_finite()
    }
}

/// The median of `values` with its two-sided `confidence` bounds; `None` when there are no
/// values, a value is not finite, or `confidence` is not between 0 and 1.
pub fn median_bounds(values: &[f64], confidence: f64) -> Option<MedianBounds> {
    if values.is_empty()
        || values.iter().any(|v| !v.is_finite())
        || !(confidence > 0.0 && confidence < 1.0)
    {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = stepscope_model::summary::median_sorted(&sorted)?;
    let (low, high) = match order_rank(sorted.len(), 1.0 - confidence) {
        Some(k) => (sorted[k - 1], sorted[sorted.len() - k]),
        None => (f64::NEG_INFINITY, f64::INFINITY),
    };
    Some(MedianBounds {
        median,
        low,
        high,
        confidence,
    })
}

/// The largest 1-based `k` with `2·P(B ≤ k − 1) ≤ alpha`, `B ~ Binomial(n, ½)`; `None` when
/// even `k = 1` misses it.
fn order_rank(n: usize, alpha: f64) -> Option<usize> {
    // P(B = i) by the recurrence C(n, i+1) = C(n, i)·(n − i)/(i + 1), on the log scale so
    // that thousands of values do not underflow ½ⁿ.
    let mut log_p = -(n as f64) * std::f64::consts::LN_2;
    let mut below = 0.0; // P(B ≤ k − 1)
    let mut best = None;
    for k in 1..=n.div_ceil(2) {
        below += log_p.exp();
        if 2.0 * below > alpha * (1.0 + 1e-12) {
            break;
        }
        best = Some(k);
        let i = (k - 1) as f64;
        log_p += ((n as f64 - i) / (i + 1.0)).ln();
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_values_have_no_bounds_at_95_percent() {
        // 5 values: 2·(1/32) = 6.25 % > 5 %.
        let five = median_bounds(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95).unwrap();
        assert!(!five.is_bounded());
        assert_eq!(five.median, 3.0);
        // 6 values: 2/64 = 3.1 %: the extremes bound it.
        let six = median_bounds(&[6.0, 1.0, 2.0, 3.0, 4.0, 5.0], 0.95).unwrap();
        assert_eq!((six.low, six.high), (1.0, 6.0));
        assert_eq!(six.median, 3.5);
    }

    /// Against the sign-test ranks tabulated for n = 20 at 95 %: the 6th and 15th values
    /// (R: `qbinom(0.025, 20, 0.5)` = 6, so k = 6: P(B ≤ 5) = 0.0207).
    #[test]
    fn twenty_values_take_the_sixth_from_each_end() {
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        let bounds = median_bounds(&values, 0.95).unwrap();
        assert_eq!((bounds.low, bounds.high), (6.0, 15.0));
    }

    #[test]
    fn coverage_holds_over_many_draws() {
        use rand::SeedableRng;
        use rand::rngs::ChaCha8Rng;
        use rand_distr::{Distribution, Exp};
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let law = Exp::new(1.0).unwrap();
        let true_median = std::f64::consts::LN_2;
        for n in [8, 15, 40] {
            let covered = (0..2000)
                .filter(|_| {
                    let values: Vec<f64> = (0..n).map(|_| law.sample(&mut rng)).collect();
                    let b = median_bounds(&values, 0.95).unwrap();
                    b.low <= true_median && true_median <= b.high
                })
                .count();
            assert!(covered >= 1900, "n = {n}: {covered} of 2000");
        }
        assert!(median_bounds(&[], 0.95).is_none());
        assert!(median_bounds(&[f64::NAN], 0.95).is_none());
    }
}
