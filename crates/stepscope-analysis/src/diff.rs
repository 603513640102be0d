//! Breakdown diff: two runs' stage breakdowns side by side, before and after a change.
//!
//! What it computes: per stage present on either side (prefill, decode, mixed, other,
//! step, unassigned), per kernel category and per kernel (by name and category, the
//! breakdown's row key), each side's GPU time and events and the difference; the kernels
//! found on one side only (appeared in NEW, vanished from BASE) fall out of the same rows.
//! A stage that holds a side's unrecorded graph replays is **refused** (not compared)
//! unless forced: see [`untrusted_stages`].
//! Why it matters: optimisation work is a comparison, and a profile that lost replays'
//! kernels shows less time in their stage; compared with a complete profile, the
//! profiler's loss would read as a speedup (or, lost on the base side, a slowdown).
//! Example: decode 10.72 ms → 9.91 ms (−7.6 %), gemm −0.61 ms; a `fused_moe` kernel
//! vanished; NEW lost 36 of 48 replays, so its decode row is refused.

use crate::TraceAnalysis;
use crate::noise::{CONFIDENCE, RelativeChange, median, relative_change};
use crate::passes::replay_coverage::{ReplayStatus, Verdict};
use crate::passes::stage_breakdown::{
    StageBreakdown, StageKey, StageSummary, TimeRow, replay_stage,
};
use crate::passes::steps::Stage;
use rustc_hash::FxHashMap;
use stepscope_model::Duration;

/// One side of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    /// Before the change.
    Base,
    /// After it.
    New,
}

impl Side {
    /// Lower-case name, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::New => "new",
        }
    }
}

/// What the diff needs of one side.
#[derive(Debug, Clone, Copy)]
pub struct SideInput<'a> {
    /// The side's breakdown (its files combined).
    pub breakdown: &'a StageBreakdown,
    /// Stages whose time lacks unrecorded replays' kernels, or may (see
    /// [`untrusted_stages`]); empty when every replay was recorded.
    pub untrusted: &'a [StageKey],
}

/// GPU time and events of one row on one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Amount {
    /// Sum of durations.
    pub time: Duration,
    /// GPU events.
    pub events: u64,
}

/// A category or kernel on both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct RowDiff {
    /// Category name, or kernel name.
    pub name: String,
    /// Category (equal to `name` for category rows).
    pub category: String,
    /// Before.
    pub base: Amount,
    /// After.
    pub new: Amount,
}

impl RowDiff {
    /// `new − base`.
    pub fn delta(&self) -> Duration {
        self.new.time - self.base.time
    }

    /// Only in NEW.
    pub fn appeared(&self) -> bool {
        self.base.events == 0 && self.new.events > 0
    }

    /// Only in BASE.
    pub fn vanished(&self) -> bool {
        self.new.events == 0 && self.base.events > 0
    }
}

/// `(new − base) / base`; `None` when base is zero (nothing to be relative to).
pub fn relative(base: Duration, new: Duration) -> Option<f64> {
    let base = base.as_nanos();
    (base != 0).then(|| (new.as_nanos() - base) as f64 / base as f64)
}

/// One compared stage.
#[derive(Debug, Clone, PartialEq)]
pub struct StageDiff {
    /// The stage.
    pub stage: StageKey,
    /// Before: the stage's GPU time and events.
    pub base: Amount,
    /// After.
    pub new: Amount,
    /// Sides whose unrecorded replays would have refused this stage, compared anyway
    /// (`force`); empty for a trustworthy comparison.
    pub forced: Vec<Side>,
    /// Per category, by |delta| descending, then name.
    pub categories: Vec<RowDiff>,
    /// Per kernel (name and category), all of them, by |delta| descending, then name.
    pub kernels: Vec<RowDiff>,
    /// The change of the stage's GPU time per step, beyond its step-to-step noise; `None`
    /// when a side has fewer than 2 steps with GPU work.
    pub per_step: Option<StepChange>,
}

/// How a stage's GPU time per step changed: the medians of its steps on each side, and the
/// relative shift between the sides with its confidence interval ([`crate::noise`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepChange {
    /// Median GPU time of a BASE step.
    pub base_median: Duration,
    /// Median GPU time of a NEW step.
    pub new_median: Duration,
    /// The typical ratio of a NEW step's time to a BASE step's, minus one, with its interval
    /// and sample counts.
    pub change: RelativeChange,
}

/// The per-step change of a stage between two sides' step times. A step whose events all
/// lasted 0 ns (a damaged trace) has no time to compare and is left out.
pub fn step_change(base: &[Duration], new: &[Duration]) -> Option<StepChange> {
    let nanos = |times: &[Duration]| -> Vec<f64> {
        times
            .iter()
            .filter(|t| **t > Duration::ZERO)
            .map(|t| t.as_nanos() as f64)
            .collect()
    };
    let (base, new) = (nanos(base), nanos(new));
    if base.len() < 2 || new.len() < 2 {
        return None;
    }
    let change = relative_change(&base, &new, CONFIDENCE)?;
    let as_duration = |values: &[f64]| Duration::from_nanos(median(&mut values.to_vec()) as i64);
    Some(StepChange {
        base_median: as_duration(&base),
        new_median: as_duration(&new),
        change,
    })
}

/// A stage not compared, and which sides' replays are to blame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The stage.
    pub stage: StageKey,
    /// The sides whose unrecorded replays make it untrustworthy.
    pub sides: Vec<Side>,
}

/// The comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakdownDiff {
    /// All GPU time of the base side.
    pub base_total: Duration,
    /// All GPU time of the new side.
    pub new_total: Duration,
    /// Compared stages, in stage order.
    pub stages: Vec<StageDiff>,
    /// Stages refused, in stage order (none when forced).
    pub refused: Vec<Refusal>,
}

/// Compares two breakdowns; `force` compares refused stages too (marking them).
pub fn diff_breakdowns(base: SideInput<'_>, new: SideInput<'_>, force: bool) -> BreakdownDiff {
    let mut keys: Vec<StageKey> = base
        .breakdown
        .stages
        .iter()
        .chain(&new.breakdown.stages)
        .map(|s| s.stage)
        .collect();
    keys.sort();
    keys.dedup();
    let mut stages = Vec::new();
    let mut refused = Vec::new();
    for key in keys {
        let blamed: Vec<Side> = [(Side::Base, base), (Side::New, new)]
            .into_iter()
            .filter(|(_, side)| side.untrusted.contains(&key))
            .map(|(side, _)| side)
            .collect();
        if !blamed.is_empty() && !force {
            refused.push(Refusal {
                stage: key,
                sides: blamed,
            });
            continue;
        }
        let empty = StageSummary::empty(key);
        let before = stage_of(base.breakdown, key).unwrap_or(&empty);
        let after = stage_of(new.breakdown, key).unwrap_or(&empty);
        stages.push(diff_stage(before, after, blamed));
    }
    BreakdownDiff {
        base_total: base.breakdown.total_gpu_time,
        new_total: new.breakdown.total_gpu_time,
        stages,
        refused,
    }
}

fn stage_of(breakdown: &StageBreakdown, key: StageKey) -> Option<&StageSummary> {
    breakdown.stages.iter().find(|s| s.stage == key)
}

fn diff_stage(base: &StageSummary, new: &StageSummary, forced: Vec<Side>) -> StageDiff {
    StageDiff {
        stage: base.stage,
        base: Amount {
            time: base.gpu_time,
            events: base.events,
        },
        new: Amount {
            time: new.gpu_time,
            events: new.events,
        },
        forced,
        categories: diff_rows(&base.categories, &new.categories),
        kernels: diff_rows(&base.kernels, &new.kernels),
        per_step: step_change(&base.step_gpu_times, &new.step_gpu_times),
    }
}

/// Rows matched by name and category; a row on one side only has zero on the other.
fn diff_rows(base: &[TimeRow], new: &[TimeRow]) -> Vec<RowDiff> {
    let mut rows: Vec<RowDiff> = Vec::with_capacity(base.len().max(new.len()));
    let mut index: FxHashMap<(&str, &str), usize> = FxHashMap::default();
    for (row, is_base) in base
        .iter()
        .map(|r| (r, true))
        .chain(new.iter().map(|r| (r, false)))
    {
        let slot = *index
            .entry((row.name.as_str(), row.category.as_str()))
            .or_insert_with(|| {
                rows.push(RowDiff {
                    name: row.name.clone(),
                    category: row.category.clone(),
                    base: Amount::default(),
                    new: Amount::default(),
                });
                rows.len() - 1
            });
        let amount = if is_base {
            &mut rows[slot].base
        } else {
            &mut rows[slot].new
        };
        amount.time = amount.time + row.time;
        amount.events += row.events;
    }
    rows.sort_by(|a, b| {
        b.delta()
            .as_nanos()
            .abs()
            .cmp(&a.delta().as_nanos().abs())
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.category.cmp(&b.category))
    });
    rows
}

/// The stages of one analysed file whose time lacks, or may lack, replays' kernels: none
/// when its verdict says every replay was recorded (`complete`, `unverified`,
/// `no-replays`, `no-events`); otherwise (`incomplete`, `damaged`, `mistimed`,
/// `unavailable`) decode — where replayed kernels count without step annotations, and
/// where serving frameworks replay graphs — and the stage of every replay that is short,
/// empty or damaged, or whose kernels came late or with implausible durations.
pub fn untrusted_stages(analysis: &TraceAnalysis) -> Vec<StageKey> {
    if !untrusted_verdict(analysis.coverage.verdict) {
        return Vec::new();
    }
    let mut stages = vec![StageKey::Stage(Stage::Decode)];
    for replay in &analysis.coverage.replays {
        let lost = matches!(
            replay.status,
            ReplayStatus::Short | ReplayStatus::Empty | ReplayStatus::Damaged
        );
        if lost || replay.deferred || replay.implausible {
            stages.push(replay_stage(
                replay,
                &analysis.steps,
                analysis.breakdown.method,
            ));
        }
    }
    stages.sort();
    stages.dedup();
    stages
}

/// Whether a verdict leaves some replay's kernels unrecorded or misplaced.
pub(crate) fn untrusted_verdict(verdict: Verdict) -> bool {
    matches!(
        verdict,
        Verdict::Incomplete | Verdict::Damaged | Verdict::Mistimed | Verdict::Unavailable
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::stage_breakdown::AssignmentMethod;

    fn row(name: &str, category: &str, micros: i64, events: u64) -> TimeRow {
        let time = Duration::from_nanos(micros * 1000);
        TimeRow {
            name: name.to_owned(),
            category: category.to_owned(),
            events,
            time,
            events_by_op: 0,
            time_by_op: Duration::ZERO,
        }
    }

    fn breakdown(stages: &[(Stage, &[TimeRow])]) -> StageBreakdown {
        let stages: Vec<StageSummary> = stages
            .iter()
            .map(|(stage, kernels)| {
                let mut summary = StageSummary::empty(StageKey::Stage(*stage));
                summary.kernels = kernels.to_vec();
                summary.events = kernels.iter().map(|k| k.events).sum();
                summary.gpu_time = kernels.iter().map(|k| k.time).sum();
                let mut categories: FxHashMap<String, TimeRow> = FxHashMap::default();
                for k in kernels.iter() {
                    categories
                        .entry(k.category.clone())
                        .or_insert_with(|| row(&k.category, &k.category, 0, 0))
                        .add(k);
                }
                summary.categories = categories.into_values().collect();
                summary
            })
            .collect();
        let total = stages.iter().map(|s| s.gpu_time).sum();
        StageBreakdown {
            method: AssignmentMethod::StepAnnotations,
            stages,
            total_gpu_time: total,
            unassigned_time: Duration::ZERO,
        }
    }

    fn sides() -> (StageBreakdown, StageBreakdown) {
        let base = breakdown(&[
            (Stage::Prefill, &[row("gemm_a", "gemm", 100, 2)]),
            (
                Stage::Decode,
                &[row("gemm_a", "gemm", 50, 5), row("moe", "moe", 30, 5)],
            ),
        ]);
        let new = breakdown(&[
            (Stage::Prefill, &[row("gemm_a", "gemm", 80, 2)]),
            (
                Stage::Decode,
                &[row("gemm_a", "gemm", 40, 5), row("moe_fused", "moe", 10, 5)],
            ),
        ]);
        (base, new)
    }

    #[test]
    fn rows_match_by_name_and_category_and_sort_by_size_of_change() {
        let (base, new) = sides();
        let diff = diff_breakdowns(
            SideInput {
                breakdown: &base,
                untrusted: &[],
            },
            SideInput {
                breakdown: &new,
                untrusted: &[],
            },
            false,
        );
        assert!(diff.refused.is_empty());
        let decode = &diff.stages[1];
        assert_eq!(decode.stage, StageKey::Stage(Stage::Decode));
        assert_eq!(
            decode.new.time - decode.base.time,
            Duration::from_nanos(-30_000)
        );
        let names: Vec<&str> = decode.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            ["moe", "gemm_a", "moe_fused"],
            "|-30|, |-10| = |+10| by name"
        );
        assert!(decode.kernels[0].vanished() && decode.kernels[2].appeared());
        let moe = decode
            .categories
            .iter()
            .find(|c| c.name == "moe")
            .expect("moe");
        assert_eq!(moe.delta(), Duration::from_nanos(-20_000));
        assert_eq!(
            relative(decode.base.time, decode.new.time),
            Some(-30.0 / 80.0)
        );
        assert_eq!(relative(Duration::ZERO, decode.new.time), None);
    }

    #[test]
    fn untrusted_stages_are_refused_unless_forced() {
        let (base, new) = sides();
        let decode = [StageKey::Stage(Stage::Decode)];
        let base_side = SideInput {
            breakdown: &base,
            untrusted: &[],
        };
        let new_side = SideInput {
            breakdown: &new,
            untrusted: &decode,
        };
        let diff = diff_breakdowns(base_side, new_side, false);
        let compared: Vec<StageKey> = diff.stages.iter().map(|s| s.stage).collect();
        assert_eq!(compared, [StageKey::Stage(Stage::Prefill)]);
        assert_eq!(
            diff.refused,
            [Refusal {
                stage: StageKey::Stage(Stage::Decode),
                sides: vec![Side::New],
            }]
        );
        let forced = diff_breakdowns(base_side, new_side, true);
        assert!(forced.refused.is_empty());
        assert_eq!(forced.stages[1].forced, [Side::New]);
        assert!(forced.stages[0].forced.is_empty());
    }

    #[test]
    fn a_stage_on_one_side_only_is_compared_against_zero() {
        let (base, _) = sides();
        let new = breakdown(&[(Stage::Decode, &[row("gemm_a", "gemm", 50, 5)])]);
        let diff = diff_breakdowns(
            SideInput {
                breakdown: &base,
                untrusted: &[],
            },
            SideInput {
                breakdown: &new,
                untrusted: &[],
            },
            false,
        );
        let prefill = &diff.stages[0];
        assert_eq!(prefill.new, Amount::default());
        assert!(prefill.kernels.iter().all(RowDiff::vanished));
    }
}
