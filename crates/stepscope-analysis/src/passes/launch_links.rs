//! Launch links: which host call launched each GPU event.
//!
//! What it computes: for every GPU event, the runtime call with the same correlation id,
//! and for every runtime call, the GPU events it launched in GPU start order.
//! Why it matters: graph replays are recognised by their launch, kernels are assigned to
//! steps through their launch, and orphans (no launch) are a symptom of a broken trace.
//! Correlation ids are unique within one trace file (one rank); flows are not used,
//! since some real traces lack them.
//! Example: `hipGraphLaunch` with correlation 92178 → the 544 kernels of that replay.

use rustc_hash::FxHashMap;
use stepscope_model::{CorrelationId, GpuEventKind, Timestamp, Trace};

/// Links between runtime calls and GPU events.
#[derive(Debug, Clone, Default)]
pub struct LaunchLinks {
    /// For each GPU event row, the runtime call row that launched it.
    pub launcher: Vec<Option<u32>>,
    offsets: Vec<u32>,
    rows: Vec<u32>,
    /// GPU events whose correlation matches no runtime call, by kind.
    pub orphans: OrphanCounts,
    /// Runtime calls that share a correlation id with an earlier one (only the first is linked).
    pub duplicate_correlations: u64,
    /// Correlation ids that more than one runtime call carries, sorted: the GPU events
    /// under them cannot be told apart, so replays launched with them are damaged.
    pub shared_correlations: Vec<CorrelationId>,
}

/// GPU events with no launching call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OrphanCounts {
    /// Kernels.
    pub kernels: u64,
    /// Memcpys and memsets.
    pub transfers: u64,
}

impl LaunchLinks {
    /// GPU event rows launched by runtime call `call`, in GPU start order.
    pub fn launched(&self, call: usize) -> &[u32] {
        let (start, end) = (self.offsets[call] as usize, self.offsets[call + 1] as usize);
        &self.rows[start..end]
    }

    /// Start of the first GPU event runtime call `call` launched, if any.
    pub(crate) fn first_start(&self, trace: &Trace, call: usize) -> Option<Timestamp> {
        self.launched(call)
            .first()
            .map(|&g| trace.gpu.start[g as usize])
    }
}

/// Links every GPU event to its launching runtime call.
pub fn link_launches(trace: &Trace) -> LaunchLinks {
    let runtime = &trace.runtime;
    let mut by_correlation: FxHashMap<u64, u32> = FxHashMap::default();
    by_correlation.reserve(runtime.len());
    let mut duplicate_correlations = 0;
    let mut shared_correlations = Vec::new();
    for (row, correlation) in runtime.correlation.iter().enumerate() {
        if correlation.is_some() {
            let previous = by_correlation.insert(correlation.0, row as u32);
            if let Some(first) = previous {
                by_correlation.insert(correlation.0, first);
                duplicate_correlations += 1;
                shared_correlations.push(*correlation);
            }
        }
    }
    shared_correlations.sort_unstable();
    shared_correlations.dedup();
    let gpu = &trace.gpu;
    let mut orphans = OrphanCounts::default();
    let launcher: Vec<Option<u32>> = (0..gpu.len())
        .map(|row| {
            let found = by_correlation.get(&gpu.correlation[row].0).copied();
            if found.is_none() {
                match gpu.kind[row] {
                    GpuEventKind::Kernel => orphans.kernels += 1,
                    _ => orphans.transfers += 1,
                }
            }
            found
        })
        .collect();
    let (offsets, rows) = invert(trace, &launcher);
    LaunchLinks {
        launcher,
        offsets,
        rows,
        orphans,
        duplicate_correlations,
        shared_correlations,
    }
}

/// Groups GPU rows by launcher (compressed rows), each group sorted by GPU start.
fn invert(trace: &Trace, launcher: &[Option<u32>]) -> (Vec<u32>, Vec<u32>) {
    let calls = trace.runtime.len();
    let mut offsets = vec![0u32; calls + 1];
    for call in launcher.iter().flatten() {
        offsets[*call as usize + 1] += 1;
    }
    for i in 0..calls {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut rows = vec![0u32; offsets[calls] as usize];
    for (row, call) in launcher.iter().enumerate() {
        if let Some(call) = call {
            let slot = &mut fill[*call as usize];
            rows[*slot as usize] = row as u32;
            *slot += 1;
        }
    }
    let gpu = &trace.gpu;
    for call in 0..calls {
        let group = &mut rows[offsets[call] as usize..offsets[call + 1] as usize];
        if group.len() > 1 {
            group.sort_by_key(|&r| (gpu.start[r as usize], gpu.stream[r as usize], r));
        }
    }
    (offsets, rows)
}
