//! Coverage totals, and [`Counter`]: the one list of coverage counters that every report
//! reads.
//!
//! [`Counter`] names each integer counter of [`CoverageTotals`] once, with its column label
//! and meaning; the JSON schema, the CSV and Parquet columns, the terminal's graph table and
//! the tests iterate over [`Counter::ALL`], and renderers that need one counter read its
//! field of [`CoverageTotals`], so a counter added here appears everywhere and none can be
//! misspelt.

use super::{Replay, ReplayStatus};
use crate::passes::missing_time::IdleBound;
use serde::Serialize;
use stepscope_model::Duration;

/// A quantity known only within bounds: at least `low`, at most `high` (`None`: no upper
/// bound in the trace), with a best estimate where there is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Range<T> {
    /// At least.
    pub low: T,
    /// Best estimate (`None`: none).
    pub estimate: Option<T>,
    /// At most (`None`: unbounded).
    pub high: Option<T>,
}

/// Counts behind coverage and completeness, for all replays or one graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoverageTotals {
    /// Replays.
    pub replays: u32,
    /// Replays with at least one recorded node.
    pub recorded_replays: u32,
    /// Replays with every expected node, the size corroborated.
    pub complete_replays: u32,
    /// Replays with every node the trace shows, the size resting on themselves.
    pub unverified_replays: u32,
    /// Replays with some nodes missing.
    pub short_replays: u32,
    /// Replays with no recorded node.
    pub empty_replays: u32,
    /// Replays that lost events to bad data.
    pub damaged_replays: u32,
    /// Replays whose graph could not be told.
    pub unknown_graph_replays: u32,
    /// Replays whose order differs from the reference.
    pub order_mismatches: u32,
    /// Replays whose kernels were recorded after their step (see `timing`).
    pub deferred_replays: u32,
    /// Replays holding other kernels' durations.
    pub implausible_replays: u32,
    /// Graph launch calls refused for bad data (replays that could not be placed).
    pub refused_launches: u32,
    /// Recorded nodes.
    pub recorded_nodes: u64,
    /// Expected nodes, at least.
    pub expected_nodes_low: u64,
    /// Expected nodes, at most, over replays with an upper bound.
    pub expected_nodes_high: u64,
    /// Replays whose expected size has no upper bound.
    pub unbounded_replays: u32,
    /// Recorded replay GPU time.
    pub recorded_time: Duration,
    /// Missing replay GPU time: no estimate when a replay's graph is unknown, no upper
    /// bound when a replay has none of its own and no idle-time bound was applied.
    pub missing_time: Range<Duration>,
}

impl Default for CoverageTotals {
    fn default() -> Self {
        CoverageTotals {
            replays: 0,
            recorded_replays: 0,
            complete_replays: 0,
            unverified_replays: 0,
            short_replays: 0,
            empty_replays: 0,
            damaged_replays: 0,
            unknown_graph_replays: 0,
            order_mismatches: 0,
            deferred_replays: 0,
            implausible_replays: 0,
            refused_launches: 0,
            recorded_nodes: 0,
            expected_nodes_low: 0,
            expected_nodes_high: 0,
            unbounded_replays: 0,
            recorded_time: Duration::ZERO,
            missing_time: Range {
                low: Duration::ZERO,
                estimate: Some(Duration::ZERO),
                high: Some(Duration::ZERO),
            },
        }
    }
}

impl Range<Duration> {
    /// The range of a sum: bounds and estimates add; an unknown estimate or an unbounded
    /// upper end stays so.
    pub fn plus(self, other: Range<Duration>) -> Range<Duration> {
        let add_both = |a: Option<Duration>, b: Option<Duration>| Some(a? + b?);
        Range {
            low: self.low + other.low,
            estimate: add_both(self.estimate, other.estimate),
            high: add_both(self.high, other.high),
        }
    }
}

/// One integer counter of [`CoverageTotals`], as reports name it: its JSON key and CSV
/// column ([`Counter::name`], also its serde name), its column label in the terminal's graph
/// table ([`Counter::label`]) and what it counts ([`Counter::description`]).
///
/// [`Counter::ALL`] is the report order: the JSON, the CSV columns, the Parquet columns, the
/// terminal's graph table and the tests iterate over it, so a counter added here appears in
/// every report (and each `match` below fails to compile until it is named and read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Counter {
    /// [`CoverageTotals::replays`].
    Replays,
    /// [`CoverageTotals::recorded_replays`].
    RecordedReplays,
    /// [`CoverageTotals::complete_replays`].
    CompleteReplays,
    /// [`CoverageTotals::unverified_replays`].
    UnverifiedReplays,
    /// [`CoverageTotals::short_replays`].
    ShortReplays,
    /// [`CoverageTotals::empty_replays`].
    EmptyReplays,
    /// [`CoverageTotals::damaged_replays`].
    DamagedReplays,
    /// [`CoverageTotals::unknown_graph_replays`].
    UnknownGraphReplays,
    /// [`CoverageTotals::order_mismatches`].
    OrderMismatches,
    /// [`CoverageTotals::deferred_replays`].
    DeferredReplays,
    /// [`CoverageTotals::implausible_replays`].
    ImplausibleReplays,
    /// [`CoverageTotals::refused_launches`].
    RefusedLaunches,
    /// [`CoverageTotals::recorded_nodes`].
    RecordedNodes,
    /// [`CoverageTotals::expected_nodes_low`].
    ExpectedNodesLow,
    /// [`CoverageTotals::expected_nodes_high`].
    ExpectedNodesHigh,
    /// [`CoverageTotals::unbounded_replays`].
    UnboundedReplays,
}

impl Counter {
    /// Every counter, in report order.
    pub const ALL: [Counter; 16] = [
        Counter::Replays,
        Counter::RecordedReplays,
        Counter::CompleteReplays,
        Counter::UnverifiedReplays,
        Counter::ShortReplays,
        Counter::EmptyReplays,
        Counter::DamagedReplays,
        Counter::UnknownGraphReplays,
        Counter::OrderMismatches,
        Counter::DeferredReplays,
        Counter::ImplausibleReplays,
        Counter::RefusedLaunches,
        Counter::RecordedNodes,
        Counter::ExpectedNodesLow,
        Counter::ExpectedNodesHigh,
        Counter::UnboundedReplays,
    ];

    /// Field name in JSON, CSV and Parquet: the name of the [`CoverageTotals`] field.
    pub fn name(self) -> &'static str {
        match self {
            Counter::Replays => "replays",
            Counter::RecordedReplays => "recorded_replays",
            Counter::CompleteReplays => "complete_replays",
            Counter::UnverifiedReplays => "unverified_replays",
            Counter::ShortReplays => "short_replays",
            Counter::EmptyReplays => "empty_replays",
            Counter::DamagedReplays => "damaged_replays",
            Counter::UnknownGraphReplays => "unknown_graph_replays",
            Counter::OrderMismatches => "order_mismatches",
            Counter::DeferredReplays => "deferred_replays",
            Counter::ImplausibleReplays => "implausible_replays",
            Counter::RefusedLaunches => "refused_launches",
            Counter::RecordedNodes => "recorded_nodes",
            Counter::ExpectedNodesLow => "expected_nodes_low",
            Counter::ExpectedNodesHigh => "expected_nodes_high",
            Counter::UnboundedReplays => "unbounded_replays",
        }
    }

    /// Column label in the terminal's graph table (`None`: not shown there).
    pub fn label(self) -> Option<&'static str> {
        match self {
            Counter::Replays => Some("replays"),
            Counter::RecordedReplays => Some("recorded"),
            Counter::CompleteReplays => Some("complete"),
            Counter::UnverifiedReplays => Some("unverified"),
            Counter::ShortReplays => Some("short"),
            Counter::EmptyReplays => Some("empty"),
            Counter::DamagedReplays => Some("damaged"),
            Counter::OrderMismatches => Some("out of order"),
            Counter::UnknownGraphReplays
            | Counter::DeferredReplays
            | Counter::ImplausibleReplays
            | Counter::RefusedLaunches
            | Counter::RecordedNodes
            | Counter::ExpectedNodesLow
            | Counter::ExpectedNodesHigh
            | Counter::UnboundedReplays => None,
        }
    }

    /// What it counts.
    pub fn description(self) -> &'static str {
        match self {
            Counter::Replays => "graph launches that are not under stream capture",
            Counter::RecordedReplays => "replays with at least one recorded node",
            Counter::CompleteReplays => {
                "replays with every expected node, the size corroborated by a capture, a slot, a cycle or a repeat"
            }
            Counter::UnverifiedReplays => {
                "replays with every node the trace shows, but whose size rests on themselves alone"
            }
            Counter::ShortReplays => "replays with some expected nodes not recorded",
            Counter::EmptyReplays => "replays with no recorded node",
            Counter::DamagedReplays => {
                "replays that lost events to bad data (refused at import, or a shared correlation id)"
            }
            Counter::UnknownGraphReplays => "replays whose graph nothing in the trace tells",
            Counter::OrderMismatches => {
                "replays whose kernel order differs from the graph's reference order"
            }
            Counter::DeferredReplays => {
                "replays whose kernels started after their step ended and after work launched later onto their stream had finished"
            }
            Counter::ImplausibleReplays => {
                "replays with kernels ten times longer and ten times shorter than the same names in their graph's other replays"
            }
            Counter::RefusedLaunches => "graph launch calls refused for bad data",
            Counter::RecordedNodes => "GPU events recorded under the replays' correlation ids",
            Counter::ExpectedNodesLow => "nodes the replays should have, at least",
            Counter::ExpectedNodesHigh => {
                "nodes the replays should have, at most, over replays whose size has an upper bound"
            }
            Counter::UnboundedReplays => {
                "replays whose expected size has no upper bound in the trace"
            }
        }
    }

    /// Its value in `totals`.
    pub fn value(self, totals: &CoverageTotals) -> u64 {
        let t = totals;
        match self {
            Counter::Replays => u64::from(t.replays),
            Counter::RecordedReplays => u64::from(t.recorded_replays),
            Counter::CompleteReplays => u64::from(t.complete_replays),
            Counter::UnverifiedReplays => u64::from(t.unverified_replays),
            Counter::ShortReplays => u64::from(t.short_replays),
            Counter::EmptyReplays => u64::from(t.empty_replays),
            Counter::DamagedReplays => u64::from(t.damaged_replays),
            Counter::UnknownGraphReplays => u64::from(t.unknown_graph_replays),
            Counter::OrderMismatches => u64::from(t.order_mismatches),
            Counter::DeferredReplays => u64::from(t.deferred_replays),
            Counter::ImplausibleReplays => u64::from(t.implausible_replays),
            Counter::RefusedLaunches => u64::from(t.refused_launches),
            Counter::RecordedNodes => t.recorded_nodes,
            Counter::ExpectedNodesLow => t.expected_nodes_low,
            Counter::ExpectedNodesHigh => t.expected_nodes_high,
            Counter::UnboundedReplays => u64::from(t.unbounded_replays),
        }
    }
}

impl std::fmt::Display for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl CoverageTotals {
    /// Adds one replay.
    pub fn add(&mut self, replay: &Replay) {
        self.merge(&Self::of(replay));
    }

    /// The totals of one replay.
    fn of(replay: &Replay) -> Self {
        let status = |s: ReplayStatus| u32::from(replay.status == s);
        CoverageTotals {
            replays: 1,
            recorded_replays: u32::from(replay.recorded_nodes > 0),
            complete_replays: status(ReplayStatus::Complete),
            unverified_replays: status(ReplayStatus::Unverified),
            short_replays: status(ReplayStatus::Short),
            empty_replays: status(ReplayStatus::Empty),
            damaged_replays: status(ReplayStatus::Damaged),
            unknown_graph_replays: u32::from(replay.graph.is_none()),
            order_mismatches: u32::from(replay.order_mismatch),
            deferred_replays: u32::from(replay.deferred),
            implausible_replays: u32::from(replay.implausible),
            refused_launches: 0,
            recorded_nodes: u64::from(replay.recorded_nodes),
            expected_nodes_low: u64::from(replay.expected.low),
            expected_nodes_high: replay.expected.high.map_or(0, u64::from),
            unbounded_replays: u32::from(replay.expected.high.is_none()),
            recorded_time: replay.recorded_time,
            missing_time: replay.missing_time,
        }
    }

    /// Sums two totals (ranks, or graphs).
    pub fn merge(&mut self, other: &CoverageTotals) {
        self.replays += other.replays;
        self.recorded_replays += other.recorded_replays;
        self.complete_replays += other.complete_replays;
        self.unverified_replays += other.unverified_replays;
        self.short_replays += other.short_replays;
        self.empty_replays += other.empty_replays;
        self.damaged_replays += other.damaged_replays;
        self.unknown_graph_replays += other.unknown_graph_replays;
        self.order_mismatches += other.order_mismatches;
        self.deferred_replays += other.deferred_replays;
        self.implausible_replays += other.implausible_replays;
        self.refused_launches += other.refused_launches;
        self.recorded_nodes += other.recorded_nodes;
        self.expected_nodes_low += other.expected_nodes_low;
        self.expected_nodes_high += other.expected_nodes_high;
        self.unbounded_replays += other.unbounded_replays;
        self.recorded_time = self.recorded_time + other.recorded_time;
        self.missing_time = self.missing_time.plus(other.missing_time);
    }

    /// Makes the trace's idle-time bound (a hard bound) the missing time's upper bound, in
    /// place of the sum of statistical ones (a slow first replay can break those), and
    /// keeps the lower bound and the estimate inside it.
    pub(crate) fn apply_idle_bound(&mut self, idle: IdleBound) {
        match idle {
            IdleBound::Bounded(idle) => self.missing_time.high = Some(idle),
            IdleBound::Unbounded => self.missing_time.high = None,
            IdleBound::NotNeeded => {}
        }
        if let Some(high) = self.missing_time.high {
            let low = self.missing_time.low.min(high);
            self.missing_time.low = low;
            self.missing_time.estimate = self.missing_time.estimate.map(|e| e.max(low).min(high));
        }
    }

    /// Replays with ≥ 1 recorded node / replays (1 when there are none).
    pub fn coverage(&self) -> f64 {
        ratio(u64::from(self.recorded_replays), u64::from(self.replays))
    }

    /// Recorded / expected nodes: at least, exactly where every size is known, at most.
    pub fn completeness(&self) -> Range<f64> {
        let high = ratio(
            self.recorded_nodes.min(self.expected_nodes_low),
            self.expected_nodes_low,
        );
        let low = if self.unbounded_replays > 0 {
            0.0
        } else {
            ratio(
                self.recorded_nodes.min(self.expected_nodes_high),
                self.expected_nodes_high,
            )
        };
        let exact =
            self.unbounded_replays == 0 && self.expected_nodes_low == self.expected_nodes_high;
        Range {
            low,
            estimate: exact.then_some(high),
            high: Some(high),
        }
    }

    /// Missing GPU time as a share of recorded + missing GPU time `total_recorded`.
    pub fn missing_share(&self, total_recorded: Duration) -> Range<f64> {
        let share = |missing: Duration| {
            let whole = (total_recorded + missing).as_nanos();
            if whole <= 0 {
                0.0
            } else {
                missing.as_nanos() as f64 / whole as f64
            }
        };
        // Bounds widened by 1e-9 so rounding of microsecond timestamps to nanoseconds never
        // puts the truth a hair outside them.
        Range {
            low: (share(self.missing_time.low) - 1e-9).max(0.0),
            estimate: self.missing_time.estimate.map(share),
            high: Some(
                self.missing_time
                    .high
                    .map_or(1.0, |h| (share(h) + 1e-9).min(1.0)),
            ),
        }
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}
