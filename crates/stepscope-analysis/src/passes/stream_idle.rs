//! Stream idle time: how long a GPU stream sat idle where a replay's unrecorded nodes would
//! have run.
//!
//! What it computes: for chosen streams, the recorded busy intervals (merged) and, for any
//! launch, the *window* its work had to run in on that stream: from the launch call, or
//! the end of work launched on the stream before it if that is later, to the first GPU
//! work launched after it that started on the same stream (stream order: work submitted
//! later starts after earlier work ends), or the end of the trace. The idle time
//! inside a set of windows is their length minus the busy time inside them.
//! Why it matters: a replay's missing nodes ran somewhere in its window, in time the trace
//! shows as idle. So the idle time bounds the missing GPU time from above; and a replay
//! followed by much more idle time than the other replays of its graph, enough to hold the
//! nodes it lacks, is short, while one with no idle time to spare cannot be.
//! Example: piecewise vLLM runs backlogged: each replay is followed by ~13 µs of idle time
//! before the next eager kernel; a replay that lost half its 15 kernels leaves ~3 ms.

use super::launch_links::LaunchLinks;
use rustc_hash::{FxHashMap, FxHashSet};
use stepscope_model::{Duration, StreamId, Timestamp, Trace};

/// A GPU stream: device and stream number.
pub(crate) type StreamKey = (u32, StreamId);

/// Work on one stream.
#[derive(Debug, Clone, Default)]
struct StreamWork {
    /// (launcher host start, GPU start, GPU end, launcher row), sorted by launcher start.
    launched: Vec<(Timestamp, Timestamp, Timestamp, u32)>,
    /// Suffix minimum of GPU starts over `launched`.
    suffix_min: Vec<Timestamp>,
    /// Index into `launched` where each suffix minimum is reached.
    suffix_at: Vec<usize>,
    /// Launching host call (row of `trace.runtime`) of each entry of `launched`.
    launcher: Vec<u32>,
    /// Prefix maximum of GPU ends over `launched`.
    prefix_max: Vec<Timestamp>,
    /// Busy intervals, merged.
    busy: Vec<(Timestamp, Timestamp)>,
}

/// Idle-time queries on a set of streams.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamIdle {
    streams: FxHashMap<StreamKey, StreamWork>,
    /// Device-wide synchronize calls (host start, end), sorted: all work launched before one
    /// finished before it returned.
    device_syncs: Vec<(Timestamp, Timestamp)>,
}

impl StreamIdle {
    /// Indexes the recorded GPU work of `streams` (all streams when empty).
    pub fn new(trace: &Trace, links: &LaunchLinks, streams: &FxHashSet<StreamKey>) -> Self {
        let gpu = &trace.gpu;
        let mut work: FxHashMap<StreamKey, StreamWork> = FxHashMap::default();
        for row in 0..gpu.len() {
            let key = (gpu.device[row], gpu.stream[row]);
            if !streams.is_empty() && !streams.contains(&key) {
                continue;
            }
            let entry = work.entry(key).or_default();
            entry.busy.push((gpu.start[row], gpu.end(row)));
            if let Some(call) = links.launcher[row] {
                entry.launched.push((
                    trace.runtime.start[call as usize],
                    gpu.start[row],
                    gpu.end(row),
                    call,
                ));
            }
        }
        for stream in work.values_mut() {
            stream.launched.sort_unstable();
            let count = stream.launched.len();
            stream.suffix_min = vec![Timestamp::MAX; count];
            stream.suffix_at = vec![count; count];
            let mut running = (Timestamp::MAX, count);
            for (index, &(_, start, _, _)) in stream.launched.iter().enumerate().rev() {
                if start < running.0 {
                    running = (start, index);
                }
                stream.suffix_min[index] = running.0;
                stream.suffix_at[index] = running.1;
            }
            stream.launcher = stream.launched.iter().map(|l| l.3).collect();
            let mut latest = Timestamp::MIN;
            stream.prefix_max = stream
                .launched
                .iter()
                .map(|&(_, _, end, _)| {
                    latest = latest.max(end);
                    latest
                })
                .collect();
            stream.busy = merge(std::mem::take(&mut stream.busy));
        }
        StreamIdle {
            streams: work,
            device_syncs: device_syncs(trace),
        }
    }

    /// The window on `stream` of work launched by a call that started at `start` and ended
    /// at `end`: from the call (or the end of work launched on the stream before it, if
    /// later) until the earliest GPU start of work launched after it — or, with none, the
    /// end of the next device-wide synchronize; `None` as the end when neither exists (the
    /// work may have run after the last recorded event, when recording had stopped).
    pub fn window(
        &self,
        stream: StreamKey,
        start: Timestamp,
        end: Timestamp,
    ) -> (Timestamp, Option<Timestamp>) {
        let Some(work) = self.streams.get(&stream) else {
            return (start, self.synced_after(end).map(|u| u.max(start)));
        };
        let before = work
            .launched
            .partition_point(|&(host, _, _, _)| host < start);
        let from = match before {
            0 => start,
            n => start.max(work.prefix_max[n - 1]),
        };
        let after = work
            .launched
            .partition_point(|&(host, _, _, _)| host <= end);
        let until = work
            .suffix_min
            .get(after)
            .copied()
            .or_else(|| self.synced_after(end));
        (from, until.map(|u| u.max(from)))
    }

    /// The end of the first device-wide synchronize that starts after `at`.
    fn synced_after(&self, at: Timestamp) -> Option<Timestamp> {
        let index = self.device_syncs.partition_point(|&(start, _)| start <= at);
        self.device_syncs.get(index).map(|&(_, end)| end)
    }

    /// The host call (row of `trace.runtime`) whose work closes the window of a call that
    /// ended at `end` on `stream`: the one launched after it that started first on the GPU;
    /// `None` when the window runs to the end of the trace.
    pub(crate) fn closed_by(&self, stream: StreamKey, end: Timestamp) -> Option<u32> {
        let work = self.streams.get(&stream)?;
        let after = work
            .launched
            .partition_point(|&(host, _, _, _)| host <= end);
        let at = *work.suffix_at.get(after)?;
        work.launcher.get(at).copied()
    }

    /// Idle time on `stream` inside `windows` (any order, may overlap).
    pub fn idle(&self, stream: StreamKey, windows: Vec<(Timestamp, Timestamp)>) -> Duration {
        let windows = merge(windows);
        match self.streams.get(&stream) {
            Some(work) => idle_in(&windows, &work.busy),
            None => windows.iter().map(|(s, e)| *e - *s).sum(),
        }
    }
}

/// Device-wide synchronize calls (`cudaDeviceSynchronize`, `hipDeviceSynchronize`,
/// `cuCtxSynchronize`), sorted by start.
fn device_syncs(trace: &Trace) -> Vec<(Timestamp, Timestamp)> {
    let runtime = &trace.runtime;
    let mut syncs: Vec<(Timestamp, Timestamp)> = (0..runtime.len())
        .filter(|&r| runtime.kind[r] == stepscope_model::RuntimeCallKind::Synchronize)
        .filter(|&r| {
            let name = trace.name(runtime.name[r]);
            name.contains("DeviceSynchronize") || name.contains("CtxSynchronize")
        })
        .map(|r| (runtime.start[r], runtime.end(r)))
        .collect();
    syncs.sort_unstable();
    syncs
}

/// Sorts and merges overlapping intervals.
pub fn merge(mut intervals: Vec<(Timestamp, Timestamp)>) -> Vec<(Timestamp, Timestamp)> {
    intervals.sort_unstable();
    let mut merged: Vec<(Timestamp, Timestamp)> = Vec::with_capacity(intervals.len());
    for (start, end) in intervals {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// Length of `windows` not covered by `busy` (both merged and sorted).
fn idle_in(windows: &[(Timestamp, Timestamp)], busy: &[(Timestamp, Timestamp)]) -> Duration {
    let mut idle = Duration::ZERO;
    for &(start, end) in windows {
        let first = busy.partition_point(|b| b.1 <= start);
        let mut covered = Duration::ZERO;
        for &(s, e) in busy[first..].iter().take_while(|b| b.0 < end) {
            covered = covered + (e.min(end) - s.max(start));
        }
        idle = idle + ((end - start) - covered).clamp_non_negative();
    }
    idle
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: i64) -> Timestamp {
        Timestamp::from_nanos(ns)
    }

    #[test]
    fn idle_time_inside_windows() {
        let windows = merge(vec![(t(0), t(100)), (t(50), t(150)), (t(300), t(400))]);
        assert_eq!(windows, vec![(t(0), t(150)), (t(300), t(400))]);
        let busy = merge(vec![(t(10), t(20)), (t(140), t(310)), (t(390), t(500))]);
        // [0,150): busy 10 + 10; [300,400): busy 10 + 10.
        assert_eq!(idle_in(&windows, &busy).as_nanos(), 130 + 80);
    }
}
