//! Combining per-rank results into one view.

use crate::passes::replay_coverage::{CoverageTotals, Verdict};
use crate::passes::stage_breakdown::{StageBreakdown, StageKey, StageSummary, TimeRow};
use rustc_hash::FxHashMap;
use stepscope_model::Duration;

/// Sums coverage counts over ranks.
pub fn combine_totals<'a>(totals: impl IntoIterator<Item = &'a CoverageTotals>) -> CoverageTotals {
    let mut sum = CoverageTotals::default();
    for t in totals {
        sum.merge(t);
    }
    sum
}

/// The worst verdict: incomplete over damaged over unverified over complete over
/// no-replays over no-events.
pub fn combine_verdicts(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
    verdicts.into_iter().max().unwrap_or(Verdict::NoReplays)
}

/// Sums stage breakdowns over ranks: times and counts add, rows merge by name.
pub fn combine_breakdowns<'a>(
    parts: impl IntoIterator<Item = &'a StageBreakdown>,
) -> Option<StageBreakdown> {
    let mut parts = parts.into_iter().peekable();
    let method = parts.peek()?.method;
    let mut stages: FxHashMap<StageKey, StageSummary> = FxHashMap::default();
    let (mut total, mut unassigned) = (Duration::ZERO, Duration::ZERO);
    for part in parts {
        total = total + part.total_gpu_time;
        unassigned = unassigned + part.unassigned_time;
        for stage in &part.stages {
            match stages.get_mut(&stage.stage) {
                Some(sum) => add_stage(sum, stage),
                None => {
                    stages.insert(stage.stage, stage.clone());
                }
            }
        }
    }
    let mut stages: Vec<StageSummary> = stages.into_values().collect();
    stages.sort_by_key(|s| s.stage);
    Some(StageBreakdown {
        method,
        stages,
        total_gpu_time: total,
        unassigned_time: unassigned,
    })
}

fn add_stage(sum: &mut StageSummary, part: &StageSummary) {
    sum.steps += part.steps;
    sum.events += part.events;
    sum.gpu_time = sum.gpu_time + part.gpu_time;
    sum.busy_time = sum.busy_time + part.busy_time;
    sum.window = sum.window + part.window;
    sum.idle_basis = sum.idle_basis.merge(part.idle_basis);
    sum.idle_time = sum.idle_time + part.idle_time;
    sum.add_missing(part.unrecorded_replays, part.missing_work);
    sum.decided.merge(&part.decided);
    merge_rows(&mut sum.categories, &part.categories);
    merge_rows(&mut sum.kernels, &part.kernels);
}

fn merge_rows(sum: &mut Vec<TimeRow>, part: &[TimeRow]) {
    let mut index: FxHashMap<(String, String), usize> = sum
        .iter()
        .enumerate()
        .map(|(i, r)| ((r.name.clone(), r.category.clone()), i))
        .collect();
    for row in part {
        let key = (row.name.clone(), row.category.clone());
        match index.get(&key) {
            Some(&i) => sum[i].add(row),
            None => {
                index.insert(key, sum.len());
                sum.push(row.clone());
            }
        }
    }
    sum.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| a.name.cmp(&b.name)));
}
