//! How often `stepscope grade` decides wrongly, measured: the whole live procedure (phases
//! A B B A, graded where the phases a side double, stopped at the first KEEP or REVERT, every
//! check on: the eight latencies against their margins, failures against each other and
//! `--max-failure-rate`) against a stand-in server whose phases are drawn from known laws
//! (`stepscope_serving::grade::simulate`). Per row, over many runs: the A/A runs (both sides
//! the same law) that end decided, which must not exceed 5 %, and the runs with a true 10 %
//! faster candidate that end KEEP, with the phases a side they took; budgets from 4 phases a
//! side (the fewest with a 95 % interval) up. Spreads of 2 %, 5 % and 10 %; the minimum
//! effect is `grade`'s default, 2 %; 128 requests a phase, none failing, or 0.2 % failing on
//! both sides (under the 0.5 % allowed).
//!
//! ```text
//! cargo bench -p stepscope-serving --bench grade_rates            # 1000 runs a row
//! cargo bench -p stepscope-serving --bench grade_rates -- 4000    # more runs
//! ```
// A benchmark harness: its output is the result.
#![allow(clippy::print_stdout)]

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use stepscope_serving::grade::schedule::{Schedule, run_schedule};
use stepscope_serving::grade::simulate::StandIn;
use stepscope_serving::grade::{Decision, GradeSettings, look_points};

/// Over `runs` live gradings with `budget` phases a side: the share of A/A runs decided,
/// the share of 10 % shifts found, and the mean phases a side those took.
fn rates(
    base: StandIn,
    budget: (usize, usize),
    runs: usize,
    rng: &mut ChaCha8Rng,
) -> (f64, f64, f64) {
    let faster = StandIn {
        speedup: 1.1,
        ..base
    };
    let settings = GradeSettings {
        looks: look_points(budget.0, budget.1).len(),
        ..GradeSettings::default()
    };
    let (mut decided, mut found, mut phases) = (0usize, 0usize, 0usize);
    for _ in 0..runs {
        let mut schedule = Schedule::new(budget.0, budget.1);
        let aa = run_schedule(&mut schedule, &settings, |_| base.phase(rng)).expect("one workload");
        decided += usize::from(aa.decision != Decision::Inconclusive);
        let mut schedule = Schedule::new(budget.0, budget.1);
        let sides = [base, faster];
        let ab = run_schedule(&mut schedule, &settings, |side| sides[side].phase(rng))
            .expect("one workload");
        if ab.decision == Decision::Keep {
            found += 1;
            phases += ab.base.len();
        }
    }
    let share = |n: usize| n as f64 * 100.0 / runs as f64;
    (
        share(decided),
        share(found),
        phases as f64 / found.max(1) as f64,
    )
}

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(1000);
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    println!("{runs} live gradings a row on a stand-in server, min effect 2 %, every check on");
    println!(
        "| spread (CV) | failing requests | phases a side (looks) | A/A decided | 10 % faster found | phases a side to find it |"
    );
    println!("|---|---|---|---|---|---|");
    let rows = [(0.02, 0.0), (0.05, 0.0), (0.10, 0.0), (0.05, 0.002)];
    for (cv, failure_rate) in rows {
        let base = StandIn {
            cv,
            speedup: 1.0,
            failure_rate,
            requests: 128,
        };
        for budget in [(4, 4), (5, 5), (5, 20), (8, 32)] {
            let (decided, found, phases) = rates(base, budget, runs, &mut rng);
            println!(
                "| {:.0} % | {:.1} % | {}–{} ({:?}) | {decided:.1} % | {found:.1} % | {phases:.1} |",
                cv * 100.0,
                failure_rate * 100.0,
                budget.0,
                budget.1,
                look_points(budget.0, budget.1)
            );
        }
    }
}
