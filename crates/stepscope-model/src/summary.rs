//! Summary statistics shared by the crates that report them (the load generator's latency
//! percentiles, the efficiency table's per-row times, the grader's medians), so that a median
//! is computed one way everywhere: numpy's.

/// The median of values sorted ascending: the middle one, or the mean of the middle two for
/// an even count (numpy's `median`); `None` when there are none.
pub fn median_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_follow_numpy() {
        assert_eq!(median_sorted(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
        assert_eq!(median_sorted(&[1.0, 3.0, 10.0]), Some(3.0));
        assert_eq!(median_sorted(&[7.0]), Some(7.0));
        assert_eq!(median_sorted(&[]), None);
    }
}
