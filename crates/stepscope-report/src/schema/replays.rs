//! Every replay of a file with its status and evidence: the `replays` Parquet table. Not in
//! the JSON document (which lists at most [`super::MAX_FINDINGS`] problem replays), and made
//! only when asked ([`super::FileReport::replays`]), since a trace may hold 100 000 replays.

use super::coverage::{EvidenceWire, UnverifiedWire};
use super::text;
use stepscope_analysis::TraceAnalysis;
use stepscope_analysis::{FindingKind, ReplayStatus};
use stepscope_model::Trace;

/// One graph replay.
#[derive(Debug, Clone)]
pub struct ReplayRecord {
    /// Replay number (0-based, launch order), as in findings.
    pub replay: usize,
    /// Host time of its launch, ns on the trace's clock (findings' `launch_ts_us` × 1000).
    pub launch_ts_ns: i64,
    /// Its step's label.
    pub step: Option<String>,
    /// Its graph number (1-based); `None`: unknown graph.
    pub graph: Option<usize>,
    /// `complete`, `unverified`, `short`, `empty` or `damaged`.
    pub status: ReplayStatus,
    /// The finding it raises, if any (`ShortReplay`, …).
    pub finding: Option<FindingKind>,
    /// Recorded GPU events.
    pub recorded_nodes: u32,
    /// Expected nodes, at least.
    pub expected_nodes_low: u32,
    /// Expected nodes, at most (`None`: no upper bound).
    pub expected_nodes_high: Option<u32>,
    /// Kernel order differs from the reference replay's.
    pub order_mismatch: bool,
    /// Its kernels ran after its step and after later work on its stream.
    pub deferred: bool,
    /// Its kernels' durations are implausible for their names.
    pub implausible: bool,
    /// Sum of its recorded GPU events' durations.
    pub recorded_time_ns: i64,
    /// GPU time of its unrecorded nodes, at least.
    pub missing_time_low_ns: i64,
    /// Best estimate (`None`: none).
    pub missing_time_ns: Option<i64>,
    /// At most (`None`: unbounded).
    pub missing_time_high_ns: Option<i64>,
    /// Evidence for its graph or size.
    pub evidence: Option<EvidenceWire>,
    /// Why its size is unproven.
    pub unverified: Option<UnverifiedWire>,
    /// GPU events refused with its correlation id.
    pub refused_events: u32,
    /// Another host call carries its correlation id.
    pub shared_correlation: bool,
}

impl ReplayRecord {
    /// Every replay of `analysis`, in launch order.
    pub fn all(trace: &Trace, analysis: &TraceAnalysis) -> Vec<ReplayRecord> {
        let steps = &analysis.steps.steps;
        let coverage = &analysis.coverage;
        coverage
            .replays
            .iter()
            .enumerate()
            .map(|(index, replay)| ReplayRecord {
                replay: index,
                launch_ts_ns: trace.runtime.start[replay.launch as usize].as_nanos(),
                step: replay.step.map(|s| text(trace.name(steps[s].name))),
                graph: replay.graph.map(|g| g + 1),
                status: replay.status,
                finding: replay.finding(),
                recorded_nodes: replay.recorded_nodes,
                expected_nodes_low: replay.expected.low,
                expected_nodes_high: replay.expected.high,
                order_mismatch: replay.order_mismatch,
                deferred: replay.deferred,
                implausible: replay.implausible,
                recorded_time_ns: replay.recorded_time.as_nanos(),
                missing_time_low_ns: replay.missing_time.low.as_nanos(),
                missing_time_ns: replay.missing_time.estimate.map(|d| d.as_nanos()),
                missing_time_high_ns: replay.missing_time.high.map(|d| d.as_nanos()),
                evidence: replay
                    .evidence
                    .map(|e| EvidenceWire::new(e, &coverage.slot_labels)),
                unverified: replay.unverified.map(UnverifiedWire::new),
                refused_events: replay.damage.map_or(0, |d| d.refused_events),
                shared_correlation: replay.damage.is_some_and(|d| d.shared_correlation),
            })
            .collect()
    }
}
