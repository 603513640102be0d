//! Combining per-rank results into one view.

use crate::passes::ranges::{RangeBreakdown, RangeSummary};
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
    sum.step_gpu_times.extend_from_slice(&part.step_gpu_times);
    sum.step_timelines.extend_from_slice(&part.step_timelines);
    sum.timeline = match (sum.timeline, part.timeline) {
        (Some(a), Some(b)) => Some(a.plus(b)),
        (a, b) => a.or(b),
    };
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

/// The files' `--range` results summed per annotation name (names in order of first
/// appearance over the files); `None` when no file has ranges.
pub fn combine_ranges<'a>(
    parts: impl IntoIterator<Item = &'a RangeBreakdown>,
) -> Option<RangeBreakdown> {
    let mut parts = parts.into_iter().peekable();
    let pattern = parts.peek()?.pattern.clone();
    let mut ranges: Vec<RangeSummary> = Vec::new();
    let mut other_names: Vec<String> = Vec::new();
    for part in parts {
        for range in &part.ranges {
            match ranges.iter_mut().find(|r| r.name == range.name) {
                Some(sum) => add_range(sum, range),
                None => ranges.push(range.clone()),
            }
        }
        for name in &part.other_names {
            if other_names.len() < 5 && !other_names.contains(name) {
                other_names.push(name.clone());
            }
        }
    }
    if !ranges.is_empty() {
        other_names.clear();
    }
    Some(RangeBreakdown {
        pattern,
        ranges,
        other_names,
    })
}

fn add_range(sum: &mut RangeSummary, part: &RangeSummary) {
    sum.instances += part.instances;
    sum.cpu_time = sum.cpu_time + part.cpu_time;
    sum.gpu_mirror_time = match (sum.gpu_mirror_time, part.gpu_mirror_time) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    sum.events += part.events;
    sum.gpu_time = sum.gpu_time + part.gpu_time;
    sum.busy_time = sum.busy_time + part.busy_time;
    sum.decided.merge(&part.decided);
    merge_rows(&mut sum.categories, &part.categories);
    merge_rows(&mut sum.kernels, &part.kernels);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::stage_breakdown::DecidedTimes;

    fn range(name: &str, events: u64, mirror: Option<i64>) -> RangeSummary {
        let us = |n: u64| Duration::from_nanos(n as i64 * 1000);
        let row = |name: &str| TimeRow {
            name: name.to_owned(),
            category: "gemm".to_owned(),
            events,
            time: us(events),
            events_by_op: events,
            time_by_op: us(events),
        };
        RangeSummary {
            name: name.to_owned(),
            instances: 1,
            cpu_time: us(10),
            gpu_mirror_time: mirror.map(Duration::from_nanos),
            events,
            gpu_time: us(events),
            busy_time: us(events),
            categories: vec![row("gemm")],
            kernels: vec![row("Cijk_")],
            decided: DecidedTimes::default(),
        }
    }

    #[test]
    fn ranges_of_ranks_add_up_per_name() {
        let rank0 = RangeBreakdown {
            pattern: "^layer".to_owned(),
            ranges: vec![range("layer_0", 3, None), range("layer_1", 1, Some(5))],
            other_names: Vec::new(),
        };
        let rank1 = RangeBreakdown {
            pattern: "^layer".to_owned(),
            ranges: vec![range("layer_1", 2, Some(7)), range("layer_2", 4, None)],
            other_names: Vec::new(),
        };
        let none = RangeBreakdown {
            pattern: "^layer".to_owned(),
            ranges: Vec::new(),
            other_names: vec!["ProfilerStep#1".to_owned()],
        };
        let sum = combine_ranges([&rank0, &rank1, &none]).expect("ranges");
        let names: Vec<&str> = sum.ranges.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["layer_0", "layer_1", "layer_2"]);
        let layer_1 = &sum.ranges[1];
        assert_eq!((layer_1.instances, layer_1.events), (2, 3));
        assert_eq!(layer_1.gpu_mirror_time, Some(Duration::from_nanos(12)));
        assert_eq!(layer_1.categories.len(), 1);
        assert_eq!(layer_1.categories[0].events, 3);
        assert_eq!(layer_1.kernels[0].time_by_op, Duration::from_nanos(3000));
        assert!(sum.other_names.is_empty(), "names matched in some file");
        let only_none = combine_ranges([&none]).expect("ranges");
        assert_eq!(only_none.other_names, ["ProfilerStep#1"]);
        assert!(combine_ranges(std::iter::empty()).is_none());
    }
}
