//! What the verdict could not check: refused data that may have been graph replays'. The
//! replay-coverage verdict judges the replays it finds; events refused before it (bad times,
//! dangling names) or GPU work whose launches did not survive can hide replays it never saw.
//! A `--strict` gate fails on any of these, so that a trace cannot pass by having its
//! evidence refused.

use crate::passes::replay_coverage::{ReplayCoverage, Verdict};
use stepscope_model::{DamagedTable, Trace};

/// Why the verdict could not vouch for every replay, beyond the replays it found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unchecked {
    /// Refused GPU events that carried no correlation: nothing tells whether a graph
    /// replay launched them.
    pub uncorrelated_refused_gpu: u64,
    /// GPU events that name a graph (a graph or graph-exec id) when no graph launch was
    /// found: replays ran, and none of them can be checked.
    pub graph_work_without_launch: u64,
    /// Events refused in a trace where no graph replay was found: the refused ones may
    /// have been the replays' launches or kernels.
    pub refused_without_replays: u64,
}

impl Unchecked {
    /// Whether anything was left unchecked.
    pub fn any(&self) -> bool {
        *self != Unchecked::default()
    }

    /// One sentence per reason, for reports.
    pub fn reasons(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        if self.graph_work_without_launch > 0 {
            reasons.push(format!(
                "{} GPU events name a graph, but no graph launch survives in the trace: their replays cannot be checked (was the host side of the trace lost or refused?)",
                self.graph_work_without_launch
            ));
        }
        if self.uncorrelated_refused_gpu > 0 {
            reasons.push(format!(
                "{} refused GPU events carry no correlation id: whether a graph replay launched them cannot be told",
                self.uncorrelated_refused_gpu
            ));
        }
        if self.refused_without_replays > 0 {
            reasons.push(format!(
                "{} events were refused and no graph replay was found: the refused events may have been the replays'",
                self.refused_without_replays
            ));
        }
        reasons
    }
}

/// What `coverage` could not check in `trace`.
pub fn unchecked(trace: &Trace, coverage: &ReplayCoverage) -> Unchecked {
    let no_replays = coverage.replays.is_empty();
    let uncorrelated_refused_gpu = (trace.damaged.events.iter())
        .filter(|event| event.table == DamagedTable::Gpu && !event.correlation.is_some())
        .count() as u64;
    let graph_work_without_launch = match no_replays {
        true => trace.gpu.graph_id.iter().filter(|id| id.is_some()).count() as u64,
        false => 0,
    };
    let nothing_checked = matches!(coverage.verdict, Verdict::NoReplays | Verdict::NoEvents);
    let refused_without_replays = match nothing_checked {
        true => trace.damaged.len() as u64,
        false => 0,
    };
    Unchecked {
        uncorrelated_refused_gpu,
        graph_work_without_launch,
        refused_without_replays,
    }
}
