//! The order of a live grading's phases and where it grades them: the same schedule drives
//! a run against real servers and the simulation that measures how often it decides wrongly.
//!
//! Phases alternate A B B A, repeated: within every four phases each side goes first once,
//! so a drift over the run (a host warming up, a neighbour arriving) weighs on both sides
//! alike. After every pair both sides have the same count; the phases are graded when that
//! count is one of the look points ([`look_points`]: the first at `min`, then each time the
//! count doubles, the last at `max`), and the run stops at the first KEEP or REVERT.

use super::{Decision, Grade, GradeSettings, Phase, SideEvidence, grade, look_points};

/// Base (index 0) or candidate (index 1).
pub const SIDES: [&str; 2] = ["base", "candidate"];

/// Where a live grading stands.
#[derive(Debug, Clone)]
pub struct Schedule {
    looks: Vec<usize>,
    max: usize,
    done: [usize; 2],
}

impl Schedule {
    /// `min` phases a side at the first grading, `max` at the last.
    pub fn new(min: usize, max: usize) -> Self {
        let max = max.max(min).max(1);
        Schedule {
            looks: look_points(min, max),
            max,
            done: [0, 0],
        }
    }

    /// The phases a side at which it grades.
    pub fn looks(&self) -> &[usize] {
        &self.looks
    }

    /// The side (0 base, 1 candidate) of the next phase; `None` once both sides have `max`.
    pub fn next_side(&self) -> Option<usize> {
        let index = self.done[0] + self.done[1];
        (index < 2 * self.max).then_some(usize::from(index % 4 == 1 || index % 4 == 2))
    }

    /// Records that a phase of `side` ended.
    pub fn done(&mut self, side: usize) {
        self.done[side] += 1;
    }

    /// Phases done, a side.
    pub fn counts(&self) -> [usize; 2] {
        self.done
    }

    /// Whether the phases so far are to be graded now.
    pub fn at_look(&self) -> bool {
        self.done[0] == self.done[1] && self.looks.contains(&self.done[0])
    }
}

/// Runs the schedule with phases from `phase` (given the side, 0 or 1), grading at every
/// look and stopping at the first decision: what a live run does, without servers (the
/// stand-in that measures the grader's error rates).
///
/// # Errors
///
/// The phases cannot be graded against each other (their workloads differ).
pub fn run_schedule(
    schedule: &mut Schedule,
    settings: &GradeSettings,
    mut phase: impl FnMut(usize) -> Phase,
) -> Result<Grade, String> {
    let mut sides: [SideEvidence; 2] = Default::default();
    while let Some(side) = schedule.next_side() {
        sides[side].phases.push(phase(side));
        schedule.done(side);
        if schedule.at_look() {
            let graded = grade(&sides[0], &sides[1], settings)?;
            if graded.decision != Decision::Inconclusive || schedule.next_side().is_none() {
                return Ok(graded);
            }
        }
    }
    grade(&sides[0], &sides[1], settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_alternate_a_b_b_a_and_grade_where_the_counts_double() {
        let mut schedule = Schedule::new(3, 12);
        assert_eq!(schedule.looks(), [3, 6, 12]);
        let mut order = String::new();
        let mut looks = Vec::new();
        while let Some(side) = schedule.next_side() {
            order.push(['A', 'B'][side]);
            schedule.done(side);
            if schedule.at_look() {
                looks.push(schedule.counts()[0]);
            }
        }
        assert_eq!(order, "ABBA".repeat(6));
        assert_eq!(looks, [3, 6, 12]);
        assert_eq!(look_points(5, 5), [5]);
        assert_eq!(look_points(5, 20), [5, 10, 20]);
        assert_eq!(look_points(4, 13), [4, 8, 13]);
    }

    /// The grader graded, as a live run grades: 1000 runs of the whole procedure (the
    /// default budget, 5 to 20 phases a side, looks at 5, 10 and 20, every check on: the
    /// eight latencies against their margins, failures) against a stand-in server whose
    /// phases vary with a 5 % spread. The same server on both sides ends INCONCLUSIVE in at
    /// least 95 % of runs; a candidate truly 10 % faster ends KEEP in at least 90 %.
    #[test]
    fn live_gradings_are_wrong_no_more_often_than_they_say() {
        use crate::grade::simulate::StandIn;
        use rand::SeedableRng;
        use rand::rngs::ChaCha8Rng;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let base = StandIn {
            cv: 0.05,
            speedup: 1.0,
            failure_rate: 0.0,
            requests: 128,
        };
        let faster = StandIn {
            speedup: 1.1,
            ..base
        };
        let settings = GradeSettings {
            looks: 3,
            ..GradeSettings::default()
        };
        let runs = 1000;
        let (mut unclear, mut found) = (0, 0);
        for _ in 0..runs {
            let aa = run_schedule(&mut Schedule::new(5, 20), &settings, |_| {
                base.phase(&mut rng)
            })
            .unwrap();
            unclear += usize::from(aa.decision == Decision::Inconclusive);
            let sides = [base, faster];
            let ab = run_schedule(&mut Schedule::new(5, 20), &settings, |side| {
                sides[side].phase(&mut rng)
            })
            .unwrap();
            found += usize::from(ab.decision == Decision::Keep);
        }
        assert!(
            unclear * 100 >= runs * 95,
            "A/A unclear in {unclear} of {runs}"
        );
        assert!(found * 100 >= runs * 90, "10 % found in {found} of {runs}");
    }

    /// Eight latencies that vary independently and far more than their margins (a 30 %
    /// spread, 60 % for the p99s: short phases on a busy machine) against the same law: some
    /// latency is reverted in at most 2.5 % of gradings (the one-sided share of the 5 %), at
    /// 4 phases a side and at 8, because the eight share that error rate. Each judged at the
    /// full confidence, one of them lands wholly past its margin in about one grading in ten.
    #[test]
    fn independent_latencies_share_one_error_rate() {
        use crate::grade::gates::Verdict;
        use crate::grade::simulate::StandIn;
        use rand::SeedableRng;
        use rand::rngs::ChaCha8Rng;
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let same = StandIn {
            cv: 0.3,
            speedup: 1.0,
            failure_rate: 0.0,
            requests: 128,
        };
        let runs = 1000;
        for phases in [4, 8] {
            let mut reverted = 0;
            for _ in 0..runs {
                let side = |rng: &mut ChaCha8Rng| SideEvidence {
                    phases: (0..phases).map(|_| same.phase(rng)).collect(),
                    ..SideEvidence::default()
                };
                let (base, candidate) = (side(&mut rng), side(&mut rng));
                let graded = grade(&base, &candidate, &GradeSettings::default()).unwrap();
                let latency = |c: &crate::grade::CheckLine| c.check.starts_with("latency ");
                reverted += usize::from(
                    graded
                        .checks
                        .iter()
                        .any(|c| latency(c) && c.verdict == Verdict::Revert),
                );
            }
            assert!(
                reverted * 1000 <= runs * 30,
                "{phases} phases a side: a latency reverted in {reverted} of {runs}"
            );
        }
    }
}
