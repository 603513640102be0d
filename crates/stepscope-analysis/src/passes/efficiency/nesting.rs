//! Modelled ops inside modelled ops. `aten::linear` runs `aten::matmul`, which runs
//! `aten::mm`: all three have a model, and each call's row holds the same kernels. Rows
//! keep every modelled op (TraceLens does too), but a call that encloses another modelled
//! call is marked, so that rankings and totals count its kernels once (at the innermost
//! op); and an op without a model inside a modelled one (`aten::_flash_attention_forward`
//! under `aten::_scaled_dot_product_flash_attention`) is not listed as unmodelled.

use rustc_hash::FxHashMap;
use stepscope_model::{ProcessId, ThreadId, Trace};

/// A modelled call: start, end (reversed, so that outer calls sort first at equal
/// starts), op row.
type Span = (i64, std::cmp::Reverse<i64>, u32);

/// Per host thread, the modelled calls by start (outer first at equal starts).
pub(super) struct Nesting {
    threads: FxHashMap<(ProcessId, ThreadId), Spans>,
    /// Per CPU op row: whether it is modelled and encloses another modelled call.
    encloses: Vec<bool>,
}

#[derive(Default)]
struct Spans {
    /// (start, end) in ns, sorted by start, then longest first.
    spans: Vec<(i64, i64)>,
    /// The latest end among `spans[..=i]`.
    max_end: Vec<i64>,
}

impl Nesting {
    /// `modelled[op]`: whether CPU op row `op` is a modelled call (a model and shapes).
    pub(super) fn new(trace: &Trace, modelled: &[bool]) -> Self {
        let ops = &trace.cpu_ops;
        let mut rows: FxHashMap<(ProcessId, ThreadId), Vec<Span>> = FxHashMap::default();
        for op in (0..ops.len()).filter(|&op| modelled[op]) {
            let span = (
                ops.start[op].as_nanos(),
                std::cmp::Reverse(ops.end(op).as_nanos()),
                op as u32,
            );
            rows.entry((ops.process[op], ops.thread[op]))
                .or_default()
                .push(span);
        }
        let mut encloses = vec![false; ops.len()];
        let mut threads = FxHashMap::default();
        for (thread, mut list) in rows {
            list.sort_unstable();
            // A call encloses another when the next call (by start) starts before it ends.
            for pair in list.windows(2) {
                let (_, std::cmp::Reverse(end), op) = pair[0];
                if pair[1].0 < end {
                    encloses[op as usize] = true;
                }
            }
            let spans: Vec<(i64, i64)> = list
                .iter()
                .map(|&(s, std::cmp::Reverse(e), _)| (s, e))
                .collect();
            let max_end = spans
                .iter()
                .scan(i64::MIN, |latest, &(_, end)| {
                    *latest = (*latest).max(end);
                    Some(*latest)
                })
                .collect();
            threads.insert(thread, Spans { spans, max_end });
        }
        Nesting { threads, encloses }
    }

    /// Whether op row `op` is a modelled call that encloses another.
    pub(super) fn encloses(&self, op: usize) -> bool {
        self.encloses[op]
    }

    /// Whether op row `op` starts inside a modelled call of its thread (other than itself).
    pub(super) fn inside_modelled(&self, trace: &Trace, op: usize) -> bool {
        let ops = &trace.cpu_ops;
        let Some(spans) = self.threads.get(&(ops.process[op], ops.thread[op])) else {
            return false;
        };
        let start = ops.start[op].as_nanos();
        // Modelled calls that start no later than this op; the latest end among them.
        let before = spans.spans.partition_point(|&(s, _)| s <= start);
        before > 0 && spans.max_end[before - 1] > start
    }
}
