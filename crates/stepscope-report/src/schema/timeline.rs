//! The replay timeline of one file, aggregated: per graph, the launch-time axis cut into
//! bins, each bin counting its replays by status. The HTML report draws it; its size depends
//! on graphs × bins, never on the number of replays.

use serde::Serialize;
use stepscope_analysis::TraceAnalysis;
use stepscope_analysis::{GraphCoverage, Replay, ReplayStatus};
use stepscope_analysis::{Stage, Step};
use stepscope_model::Trace;

/// Bins per graph row: a multiple of every coarser count a report may merge them into
/// (see [`Timeline::coarsened`]).
pub const TIMELINE_BINS: u32 = 480;

/// The stages a step cell counts, in order (as [`Stage::ALL`]).
pub const TIMELINE_STAGES: [&str; 5] = ["prefill", "decode", "mixed", "other", "step"];

/// The classes a bin counts, in the order of a cell's counts.
pub const TIMELINE_CLASSES: [&str; 6] = [
    "complete",
    "unverified",
    "short",
    "empty",
    "damaged",
    "mistimed",
];

/// The replays of one file on a launch-time axis.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    /// Host time of the first replay's launch.
    pub start_us: f64,
    /// Host time of the last replay's launch.
    pub end_us: f64,
    /// Bins the span is cut into.
    pub bins: u32,
    /// One row per graph, in graph order; a last row for replays of unknown graph.
    pub rows: Vec<TimelineRow>,
    /// The steps over the same axis: non-empty bins as `[bin, prefill, decode, mixed,
    /// other, step]`, each count the steps whose host span overlaps the bin.
    pub steps: Vec<[u32; 6]>,
}

/// One graph's replays.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineRow {
    /// Graph number (1-based, as in the graph table); `null` for unknown graph.
    pub graph: Option<usize>,
    /// Replays in the row.
    pub replays: u32,
    /// Non-empty bins: `[bin, complete, unverified, short, empty, damaged, mistimed,
    /// example]`, where `example` is the number of the first replay of the bin's worst
    /// class (0-based, launch order).
    pub cells: Vec<[u32; 8]>,
}

/// Which count of a cell a replay adds to; a higher index is worse, except that a replay
/// with wrong timings but all nodes counts as mistimed.
fn class(replay: &Replay) -> usize {
    match replay.status {
        ReplayStatus::Complete | ReplayStatus::Unverified
            if replay.deferred || replay.implausible =>
        {
            5
        }
        ReplayStatus::Complete => 0,
        ReplayStatus::Unverified => 1,
        ReplayStatus::Short => 2,
        ReplayStatus::Empty => 3,
        ReplayStatus::Damaged => 4,
    }
}

/// How bad a class is, for choosing a bin's example.
fn severity(class: usize) -> usize {
    [0, 1, 4, 5, 3, 2][class]
}

impl Timeline {
    /// The replays of `analysis` in [`TIMELINE_BINS`] bins.
    pub fn new(trace: &Trace, analysis: &TraceAnalysis) -> Self {
        let replays = &analysis.coverage.replays;
        let launch_us = |r: &Replay| trace.runtime.start[r.launch as usize].as_micros_f64();
        if replays.is_empty() {
            return Timeline::default();
        }
        let steps = &analysis.steps.steps;
        let (start_us, end_us) = replays
            .iter()
            .map(|r| (launch_us(r), launch_us(r)))
            .chain(
                steps
                    .iter()
                    .map(|s| (s.start.as_micros_f64(), s.end.as_micros_f64())),
            )
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (a, b)| {
                (lo.min(a), hi.max(b))
            });
        let span = (end_us - start_us).max(f64::MIN_POSITIVE);
        let bin_of = |t: f64| {
            (((t - start_us) / span * f64::from(TIMELINE_BINS)) as u32).min(TIMELINE_BINS - 1)
        };
        let graphs = analysis.coverage.graphs.len();
        let mut rows: Vec<Vec<[u32; 8]>> = vec![Vec::new(); graphs.max(1)];
        let mut counts = vec![0u32; graphs.max(1)];
        let row_of = RowOf::new(&analysis.coverage.graphs);
        for (index, replay) in replays.iter().enumerate() {
            let row = row_of.get(replay.graph);
            counts[row] += 1;
            add(
                &mut rows[row],
                bin_of(launch_us(replay)),
                class(replay),
                index,
            );
        }
        Timeline {
            start_us,
            end_us,
            bins: TIMELINE_BINS,
            steps: step_cells(steps, &bin_of),
            rows: rows
                .into_iter()
                .zip(counts)
                .enumerate()
                .filter(|(_, (_, n))| *n > 0)
                .map(|(row, (cells, replays))| TimelineRow {
                    graph: analysis
                        .coverage
                        .graphs
                        .get(row)
                        .and_then(|g| g.graph)
                        .map(|g| g + 1),
                    replays,
                    cells,
                })
                .collect(),
        }
    }

    /// The same timeline in `bins` bins (a divisor of [`TIMELINE_BINS`]; otherwise the
    /// nearest larger divisor).
    pub fn coarsened(&self, bins: u32) -> Timeline {
        let target = (1..=TIMELINE_BINS)
            .filter(|d| TIMELINE_BINS % d == 0)
            .find(|d| *d >= bins.max(1))
            .unwrap_or(TIMELINE_BINS);
        if self.bins != TIMELINE_BINS || target == TIMELINE_BINS {
            return self.clone();
        }
        let factor = TIMELINE_BINS / target;
        let rows = self
            .rows
            .iter()
            .map(|row| {
                let mut cells: Vec<[u32; 8]> = Vec::new();
                for cell in &row.cells {
                    merge(&mut cells, cell, cell[0] / factor);
                }
                TimelineRow {
                    graph: row.graph,
                    replays: row.replays,
                    cells,
                }
            })
            .collect();
        let mut steps: Vec<[u32; 6]> = Vec::new();
        for cell in &self.steps {
            let bin = cell[0] / factor;
            match steps.last_mut() {
                Some(last) if last[0] == bin => {
                    for stage in 1..6 {
                        last[stage] = last[stage].max(cell[stage]);
                    }
                }
                _ => steps.push([bin, cell[1], cell[2], cell[3], cell[4], cell[5]]),
            }
        }
        Timeline {
            bins: target,
            rows,
            steps,
            ..*self
        }
    }
}

/// Per bin, the steps of each stage whose span overlaps it.
fn step_cells(steps: &[Step], bin_of: &impl Fn(f64) -> u32) -> Vec<[u32; 6]> {
    let mut bins = vec![[0u32; 5]; TIMELINE_BINS as usize];
    for step in steps {
        let stage = Stage::ALL
            .iter()
            .position(|s| *s == step.label.stage)
            .unwrap_or(4);
        let (first, last) = (
            bin_of(step.start.as_micros_f64()),
            bin_of(step.end.as_micros_f64()),
        );
        for bin in first..=last {
            bins[bin as usize][stage] += 1;
        }
    }
    bins.iter()
        .enumerate()
        .filter(|(_, counts)| counts.iter().any(|n| *n > 0))
        .map(|(bin, c)| [bin as u32, c[0], c[1], c[2], c[3], c[4]])
        .collect()
}

/// The row of a replay by its graph: the graph's row, or the unknown-graph row (the last).
struct RowOf {
    by_graph: std::collections::HashMap<usize, usize>,
    unknown: usize,
}

impl RowOf {
    fn new(graphs: &[GraphCoverage]) -> Self {
        let last = graphs.len().saturating_sub(1);
        RowOf {
            by_graph: graphs
                .iter()
                .enumerate()
                .filter_map(|(row, g)| Some((g.graph?, row)))
                .collect(),
            unknown: graphs
                .iter()
                .position(|g| g.graph.is_none())
                .unwrap_or(last),
        }
    }

    fn get(&self, graph: Option<usize>) -> usize {
        graph
            .and_then(|g| self.by_graph.get(&g).copied())
            .unwrap_or(self.unknown)
    }
}

/// The class index of a cell's worst count.
fn worst(cell: &[u32; 8]) -> Option<usize> {
    (0..TIMELINE_CLASSES.len())
        .filter(|c| cell[1 + c] > 0)
        .max_by_key(|c| severity(*c))
}

/// Counts a replay in its bin; cells stay sorted by bin (replays come in launch order, so
/// a new bin is almost always the last).
fn add(cells: &mut Vec<[u32; 8]>, bin: u32, class: usize, replay: usize) {
    let at = match cells.last() {
        Some(last) if last[0] == bin => cells.len() - 1,
        _ => match cells.binary_search_by_key(&bin, |c| c[0]) {
            Ok(at) => at,
            Err(at) => {
                cells.insert(at, [bin, 0, 0, 0, 0, 0, 0, replay as u32]);
                at
            }
        },
    };
    let cell = &mut cells[at];
    let before = worst(cell);
    cell[1 + class] += 1;
    if before.is_none_or(|w| severity(class) > severity(w)) {
        cell[7] = replay as u32;
    }
}

/// Adds `cell`'s counts to the coarse bin `bin`, keeping the example of the worse class.
fn merge(cells: &mut Vec<[u32; 8]>, cell: &[u32; 8], bin: u32) {
    if cells.last().is_none_or(|c| c[0] != bin) {
        let mut first = *cell;
        first[0] = bin;
        cells.push(first);
        return;
    }
    let coarse = cells.last_mut().expect("checked above");
    let (before, incoming) = (worst(coarse), worst(cell));
    for class in 0..TIMELINE_CLASSES.len() {
        coarse[1 + class] += cell[1 + class];
    }
    if let (Some(b), Some(i)) = (before, incoming)
        && severity(i) > severity(b)
    {
        coarse[7] = cell[7];
    }
}
