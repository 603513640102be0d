//! Launch statistics: how long the host took to launch each piece of GPU work, how long the
//! work waited after its launch returned, and how long it ran.
//!
//! What it computes: for every eager launch call (kernel, copy or memset launch) and each
//! piece of GPU work it launched: the call's own duration (**CPU time**), the work's
//! duration (**GPU time**), and the **launch delay**, from the call's end to the work's
//! start (0 when the GPU started it before the call returned, as HTA clips it). Work whose GPU time is
//! under its launch's CPU time is **launch-bound**: the host cannot launch such kernels as
//! fast as the GPU runs them, and a run of them leaves the GPU waiting. Launch calls over
//! [`SLOW_LAUNCH_OVER`] and delays over [`LONG_DELAY_OVER`] are outliers. A graph replay is
//! one launch: its delay runs to its first kernel's start, and its **spread** from there to
//! its last kernel's end.
//!
//! The eager rows are HolisticTraceAnalysis's `get_cuda_kernel_launch_stats` (a row per
//! correlated CPU and GPU event; the same cut-offs, 50 and 100 µs), which its tests here
//! match exactly on every launch HTA counts. HTA counts four CUDA calls by name
//! (`cudaLaunchKernel`, `cudaLaunchKernelExC`, `cudaMemcpyAsync`, `cudaMemsetAsync`); here
//! every eager launch call of CUDA, HIP and their drivers counts.
//! Why it matters: a decode step of a small model is often launch-bound: its kernels take
//! less time on the GPU than on the host, so its time is the host's, and graphs (or fusing
//! kernels) are what shorten it.
//! Example: in HTA's CUDA-graph training trace, 2216 of the 6530 eagerly launched kernels
//! and copies ran for less time than their launch call (median 4.0 µs).

use super::launch_links::LaunchLinks;
use stepscope_model::{Duration, RuntimeCallKind, Trace};

/// A launch call longer than this is an outlier (HTA's `runtime_cutoff`).
pub const SLOW_LAUNCH_OVER: Duration = Duration::from_nanos(50_000);

/// A launch delay longer than this is an outlier (HTA's `launch_delay_cutoff`).
pub const LONG_DELAY_OVER: Duration = Duration::from_nanos(100_000);

/// One piece of GPU work and its eager launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EagerLaunch {
    /// The launch call (row of `trace.runtime`).
    pub call: u32,
    /// The GPU work (row of `trace.gpu`).
    pub gpu_row: u32,
    /// The launch call's duration.
    pub cpu: Duration,
    /// The work's duration.
    pub gpu: Duration,
    /// From the call's end to the work's start (0 when it started before).
    pub delay: Duration,
}

/// One graph replay as a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayLaunch {
    /// The graph launch call (row of `trace.runtime`).
    pub call: u32,
    /// Recorded GPU events of the replay.
    pub events: u32,
    /// The call's duration.
    pub cpu: Duration,
    /// From the call's end to the first event's start (0 when it started before).
    pub delay: Duration,
    /// From the first event's start to the last event's end.
    pub spread: Duration,
}

/// Every launch of a trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchStats {
    /// Per piece of eagerly launched GPU work, in launch call order.
    pub eager: Vec<EagerLaunch>,
    /// Per graph replay with recorded work, in launch call order.
    pub replays: Vec<ReplayLaunch>,
}

/// Median, 90th and 99th percentile and maximum of a set of durations (linear
/// interpolation between order statistics, as NumPy and pandas compute them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spread {
    /// The median.
    pub median: Duration,
    /// The 90th percentile.
    pub p90: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The maximum.
    pub max: Duration,
}

impl Spread {
    /// The spread of `values`; all zero when empty.
    pub fn of(mut values: Vec<i64>) -> Spread {
        values.sort_unstable();
        let at = |q: f64| Duration::from_nanos(percentile_sorted(&values, q));
        Spread {
            median: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: Duration::from_nanos(values.last().copied().unwrap_or(0)),
        }
    }
}

/// The `q` quantile of sorted `values`, rounded to the nanosecond; 0 when empty.
fn percentile_sorted(values: &[i64], q: f64) -> i64 {
    let Some(last) = values.len().checked_sub(1) else {
        return 0;
    };
    let position = q * last as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(last);
    let weight = position - below as f64;
    let (low, high) = (values[below] as f64, values[above] as f64);
    (low + (high - low) * weight).round() as i64
}

/// What the launches of a trace add up to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchSummary {
    /// Eagerly launched pieces of GPU work.
    pub eager: u64,
    /// Their launch delays.
    pub delay: Spread,
    /// Their launch calls' durations.
    pub cpu: Spread,
    /// Their GPU durations.
    pub gpu: Spread,
    /// Of them, those whose GPU time is under their launch call's.
    pub launch_bound: u64,
    /// The launch-bound work's GPU time.
    pub launch_bound_gpu_time: Duration,
    /// All the eagerly launched work's GPU time.
    pub eager_gpu_time: Duration,
    /// Launches whose call took over [`SLOW_LAUNCH_OVER`].
    pub slow_launches: u64,
    /// Launches whose delay was over [`LONG_DELAY_OVER`].
    pub long_delays: u64,
    /// Graph replays with recorded work.
    pub replays: u64,
    /// Their launch delays.
    pub replay_delay: Spread,
    /// Their spreads, first start to last end.
    pub replay_spread: Spread,
}

impl LaunchStats {
    /// The summary (see [`LaunchSummary`]).
    pub fn summary(&self) -> LaunchSummary {
        let eager = &self.eager;
        let nanos = |pick: fn(&EagerLaunch) -> Duration| -> Vec<i64> {
            eager.iter().map(|l| pick(l).as_nanos()).collect()
        };
        let bound = eager.iter().filter(|l| l.gpu < l.cpu);
        let replays = |pick: fn(&ReplayLaunch) -> Duration| -> Spread {
            Spread::of(self.replays.iter().map(|r| pick(r).as_nanos()).collect())
        };
        LaunchSummary {
            eager: eager.len() as u64,
            delay: Spread::of(nanos(|l| l.delay)),
            cpu: Spread::of(nanos(|l| l.cpu)),
            gpu: Spread::of(nanos(|l| l.gpu)),
            launch_bound: bound.clone().count() as u64,
            launch_bound_gpu_time: bound.map(|l| l.gpu).sum(),
            eager_gpu_time: eager.iter().map(|l| l.gpu).sum(),
            slow_launches: eager.iter().filter(|l| l.cpu > SLOW_LAUNCH_OVER).count() as u64,
            long_delays: eager.iter().filter(|l| l.delay > LONG_DELAY_OVER).count() as u64,
            replays: self.replays.len() as u64,
            replay_delay: replays(|r| r.delay),
            replay_spread: replays(|r| r.spread),
        }
    }
}

/// Every eager launch and graph replay of `trace` with recorded GPU work.
pub fn launch_stats(trace: &Trace, links: &LaunchLinks) -> LaunchStats {
    let (runtime, gpu) = (&trace.runtime, &trace.gpu);
    let mut stats = LaunchStats::default();
    for call in 0..runtime.len() {
        let launched = links.launched(call);
        let Some(&first) = launched.first() else {
            continue;
        };
        let (cpu, end) = (runtime.duration[call], runtime.end(call));
        match runtime.kind[call] {
            RuntimeCallKind::GraphLaunch => {
                let first_start = gpu.start[first as usize];
                let last_end = launched
                    .iter()
                    .map(|&row| gpu.end(row as usize))
                    .max()
                    .unwrap_or(first_start);
                stats.replays.push(ReplayLaunch {
                    call: call as u32,
                    events: launched.len() as u32,
                    cpu,
                    delay: (first_start - end).clamp_non_negative(),
                    spread: last_end - first_start,
                });
            }
            RuntimeCallKind::EagerLaunch => {
                stats.eager.extend(launched.iter().map(|&row| EagerLaunch {
                    call: call as u32,
                    gpu_row: row,
                    cpu,
                    gpu: gpu.duration[row as usize],
                    delay: (gpu.start[row as usize] - end).clamp_non_negative(),
                }));
            }
            _ => {}
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_as_numpy_does() {
        // numpy.percentile([1, 2, 3, 4], [50, 90, 99]) = 2.5, 3.7, 3.97
        let spread = Spread::of(vec![4000, 1000, 3000, 2000]);
        assert_eq!(spread.median, Duration::from_nanos(2500));
        assert_eq!(spread.p90, Duration::from_nanos(3700));
        assert_eq!(spread.p99, Duration::from_nanos(3970));
        assert_eq!(spread.max, Duration::from_nanos(4000));
        assert_eq!(Spread::of(Vec::new()), Spread::default());
    }
}
