//! Failure rates: whether one side of a comparison fails its requests more often than the
//! other beyond chance, and an exact interval for a side's own rate.
//!
//! Requests are counted, not measured: a phase sends `n` requests and `f` of them fail. The
//! comparison pools each side's phases (every request is one trial) and asks, with
//! **Fisher's exact test** (one-sided), how likely the candidate's share of all the failures
//! would be as high as it is if both sides failed at one rate: given `K` failures among
//! `N = n_base + n_new` requests, the new side's count follows the hypergeometric law of
//! `n_new` draws. Exact at any count, so a side with 0 failures and one with 3 of 40 are
//! compared as honestly as 300 of 4000; no normal approximation, no continuity correction.
//!
//! A side's own rate gets the **Clopper–Pearson** interval (the beta-quantile inversion of
//! the binomial test): conservative, and defined at 0 and at `n` failures, where the normal
//! (Wald) interval collapses to a point.

use statrs::distribution::{Beta, ContinuousCDF, DiscreteCDF, Hypergeometric};

/// Requests sent and how many failed, on one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Counts {
    /// Requests sent (every one a trial).
    pub sent: u64,
    /// Of which failed.
    pub failed: u64,
}

impl Counts {
    /// The observed failure rate (0 with nothing sent).
    pub fn rate(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.failed as f64 / self.sent as f64
        }
    }

    /// The sum of two sides' counts.
    #[must_use]
    pub fn plus(self, other: Counts) -> Counts {
        Counts {
            sent: self.sent + other.sent,
            failed: self.failed + other.failed,
        }
    }
}

/// The one-sided p-value of Fisher's exact test that `new` fails more often than `base`:
/// the chance, were both one rate, that `new` would hold at least as many of all the
/// failures as it does. 1 when there is nothing to compare (no failure, or a side sent
/// nothing).
pub fn more_failures_p(base: Counts, new: Counts) -> f64 {
    let total = base.plus(new);
    if total.failed == 0 || base.sent == 0 || new.sent == 0 || new.failed == 0 {
        return 1.0;
    }
    let Ok(law) = Hypergeometric::new(total.sent, total.failed, new.sent) else {
        return 1.0;
    };
    // P(X ≥ x) = 1 − P(X ≤ x − 1).
    law.sf(new.failed - 1).clamp(0.0, 1.0)
}

/// The two-sided Clopper–Pearson interval of a side's failure rate at `confidence`, as
/// fractions; `(0, 1)` with nothing sent.
pub fn rate_interval(counts: Counts, confidence: f64) -> (f64, f64) {
    let (n, x) = (counts.sent as f64, counts.failed.min(counts.sent) as f64);
    if counts.sent == 0 || !(confidence > 0.0 && confidence < 1.0) {
        return (0.0, 1.0);
    }
    let tail = (1.0 - confidence) / 2.0;
    let quantile =
        |a: f64, b: f64, p: f64| Beta::new(a, b).map_or(f64::NAN, |law| law.inverse_cdf(p));
    let low = if x == 0.0 {
        0.0
    } else {
        quantile(x, n - x + 1.0, tail)
    };
    let high = if x == n {
        1.0
    } else {
        quantile(x + 1.0, n - x, 1.0 - tail)
    };
    (low, high)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(failed: u64, sent: u64) -> Counts {
        Counts { sent, failed }
    }

    /// Against R's `fisher.test(matrix(c(x_new, n_new - x_new, x_base, n_base - x_base),
    /// 2), alternative = "greater")$p.value`, worked by hand from the hypergeometric law.
    #[test]
    fn fisher_agrees_with_the_law_summed_by_hand() {
        // 3 of 10 against 0 of 10: K = 3, N = 20, 10 draws; P(X = 3) = C(10,3)/C(20,3).
        let p = more_failures_p(counts(0, 10), counts(3, 10));
        assert!((p - 120.0 / 1140.0).abs() < 1e-12, "{p}");
        // 1 of 10 against 1 of 10: P(X ≥ 1) = 1 − C(10,2)/C(20,2) = 1 − 45/190.
        let p = more_failures_p(counts(1, 10), counts(1, 10));
        assert!((p - (1.0 - 45.0 / 190.0)).abs() < 1e-12, "{p}");
        // No failure on the new side: nothing to find.
        assert_eq!(more_failures_p(counts(5, 10), counts(0, 10)), 1.0);
        assert_eq!(more_failures_p(counts(0, 0), counts(3, 10)), 1.0);
    }

    #[test]
    fn a_third_failing_is_beyond_chance_and_one_in_a_thousand_is_not() {
        // 27 % of 160 requests against none of 160: far beyond any 5 % test.
        assert!(more_failures_p(counts(0, 160), counts(43, 160)) < 1e-10);
        // 1 of 1000 against 0 of 1000: half the time by chance.
        let p = more_failures_p(counts(0, 1000), counts(1, 1000));
        assert!((p - 0.5).abs() < 1e-9, "{p}");
    }

    /// Against R's `binom.test(x, n)$conf.int`.
    #[test]
    fn clopper_pearson_matches_r() {
        let (low, high) = rate_interval(counts(0, 10), 0.95);
        assert_eq!(low, 0.0);
        assert!((high - 0.308_497_2).abs() < 1e-6, "{high}");
        let (low, high) = rate_interval(counts(3, 10), 0.95);
        assert!((low - 0.066_739_41).abs() < 1e-6, "{low}");
        assert!((high - 0.652_453_7).abs() < 1e-6, "{high}");
        let (low, high) = rate_interval(counts(10, 10), 0.95);
        assert!((low - 0.691_502_8).abs() < 1e-6 && high == 1.0, "{low}");
        assert_eq!(rate_interval(counts(0, 0), 0.95), (0.0, 1.0));
    }
}
