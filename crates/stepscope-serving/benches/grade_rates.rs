//! How often `stepscope grade` decides wrongly, measured: the whole live procedure (phases
//! A B B A, graded where the phases a side double, stopped at the first KEEP or REVERT)
//! against a stand-in server whose phase throughput is drawn from a known law. Per row, over
//! many runs: the A/A runs (both sides the same law) that end decided, which must not exceed
//! 5 %, and the runs with a true 10 % faster candidate that end KEEP, with the phases a side
//! they took. The law is log-normal (positive, a long right tail: the shape of a server's
//! throughput from phase to phase) with a 2 %, 5 % and 10 % coefficient of variation; the
//! minimum effect is `grade`'s default, 2 %.
//!
//! ```text
//! cargo bench -p stepscope-serving --bench grade_rates            # 1000 runs a row
//! cargo bench -p stepscope-serving --bench grade_rates -- 4000    # more runs
//! ```
// A benchmark harness: its output is the result.
#![allow(clippy::print_stdout)]

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use stepscope_serving::grade::schedule::{Schedule, run_schedule};
use stepscope_serving::grade::{Decision, GradeSettings, Phase, look_points};

/// One phase of a stand-in server: output tok/s drawn from `law`.
fn phase(law: &LogNormal<f64>, rng: &mut ChaCha8Rng) -> Phase {
    Phase {
        path: String::new(),
        output_tokens_per_s: law.sample(rng),
        requests_per_s: 1.0,
        summary: serde_json::Value::Null,
    }
}

/// Over `runs` live gradings with `budget` phases a side: the share of A/A runs decided,
/// the share of 10 % shifts found, and the mean phases a side those took.
fn rates(cv: f64, budget: (usize, usize), runs: usize, rng: &mut ChaCha8Rng) -> (f64, f64, f64) {
    let sigma = (1.0 + cv * cv).ln().sqrt();
    let base = LogNormal::new(100.0_f64.ln(), sigma).expect("a law");
    let faster = LogNormal::new(110.0_f64.ln(), sigma).expect("a law");
    let settings = GradeSettings {
        min_effect_pct: 2.0,
        slos: Vec::new(),
        looks: look_points(budget.0, budget.1).len(),
    };
    let (mut decided, mut found, mut phases) = (0usize, 0usize, 0usize);
    for _ in 0..runs {
        let mut schedule = Schedule::new(budget.0, budget.1);
        let aa = run_schedule(&mut schedule, &settings, |_| phase(&base, rng));
        decided += usize::from(aa.decision != Decision::Inconclusive);
        let mut schedule = Schedule::new(budget.0, budget.1);
        let ab = run_schedule(&mut schedule, &settings, |side| {
            phase([&base, &faster][side], rng)
        });
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
    println!("{runs} live gradings a row on a stand-in server, min effect 2 %");
    println!(
        "| spread (CV) | phases a side (looks) | A/A decided | 10 % faster found | phases a side to find it |"
    );
    println!("|---|---|---|---|---|");
    for cv in [0.02, 0.05, 0.10] {
        for budget in [(5, 5), (5, 20), (8, 32)] {
            let (decided, found, phases) = rates(cv, budget, runs, &mut rng);
            println!(
                "| {:.0} % | {}–{} ({:?}) | {decided:.1} % | {found:.1} % | {phases:.1} |",
                cv * 100.0,
                budget.0,
                budget.1,
                look_points(budget.0, budget.1)
            );
        }
    }
}
