//! How often the grader decides wrongly, measured: A/A gradings (both sides drawn from the
//! same law) that come out decided, and true 10 % shifts that are missed, over many trials
//! for several numbers of values a side, with the minimum effect `grade` uses by default
//! (2 %). The values are log-normal (positive, a long right tail: the shape of step times and
//! of a server's throughput) with a 5 % and a 10 % coefficient of variation.
//!
//! ```text
//! cargo bench -p stepscope-analysis --bench grade_rates            # 500 trials per row
//! cargo bench -p stepscope-analysis --bench grade_rates -- 2000    # more trials
//! ```
// A benchmark harness: its output is the result.
#![allow(clippy::print_stdout)]

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use stepscope_analysis::noise::{Direction, relative_median_change};

const MIN_EFFECT: f64 = 0.02;

fn draws(rng: &mut ChaCha8Rng, n: usize, center: f64, cv: f64) -> Vec<f64> {
    let sigma = (1.0 + cv * cv).ln().sqrt();
    let law = LogNormal::new(center.ln(), sigma).expect("a valid law");
    (0..n).map(|_| law.sample(rng)).collect()
}

/// Over `trials`: A/A gradings left unclear, and 10 % shifts found (as higher).
fn rates(n: usize, cv: f64, trials: usize, rng: &mut ChaCha8Rng) -> (f64, f64) {
    let (mut unclear, mut found) = (0usize, 0usize);
    for trial in 0..trials {
        let base = draws(rng, n, 100.0, cv);
        let same = draws(rng, n, 100.0, cv);
        let shifted = draws(rng, n, 110.0, cv);
        let aa = relative_median_change(&base, &same, trial as u64).expect("values");
        unclear += usize::from(aa.direction(MIN_EFFECT) == Direction::Unclear);
        let ab = relative_median_change(&base, &shifted, trial as u64).expect("values");
        found += usize::from(ab.direction(MIN_EFFECT) == Direction::Higher);
    }
    (unclear as f64 / trials as f64, found as f64 / trials as f64)
}

fn main() {
    let trials: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(500);
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    println!(
        "spread | values a side | A/A unclear | 10 % shift found   ({trials} trials a row, min effect 2 %)"
    );
    for cv in [0.05, 0.10] {
        for n in [4, 8, 16, 32, 64, 80, 128] {
            let (unclear, found) = rates(n, cv, trials, &mut rng);
            let (unclear, found) = (unclear * 100.0, found * 100.0);
            println!(
                "{:>4.0} % | {n:>13} | {unclear:>10.1} % | {found:>15.1} %",
                cv * 100.0
            );
        }
    }
}
