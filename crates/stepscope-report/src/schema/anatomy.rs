//! Where a trace's GPU time goes and what holds the GPU back: the GPU timeline, each
//! stream's idle time by cause, and launch statistics.

use super::micros;
use serde::Serialize;
use stepscope_analysis::{
    Causes, GpuTimeline, IdleCauses, KERNEL_WAIT_BELOW, LONG_DELAY_OVER, LaunchSummary,
    SLOW_LAUNCH_OVER, Spread, StageIdleCauses,
};

/// Where the GPU's time went over a span, in µs: computation, communication and copies not
/// hidden under it, and idle time, which sum to `total_us`; TraceLens's `gpu_timeline` rows.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GpuTimelineTimes {
    /// Time any computation (kernels and memsets other than collectives and copies) ran.
    pub computation_us: f64,
    /// Time communication ran and no computation.
    pub exposed_comm_us: f64,
    /// Time a copy ran and neither computation nor communication.
    pub exposed_memcpy_us: f64,
    /// Time anything ran.
    pub busy_us: f64,
    /// The span less the busy time.
    pub idle_us: f64,
    /// The span.
    pub total_us: f64,
    /// Time any communication ran, hidden or not.
    pub total_comm_us: f64,
    /// Time any copy ran, hidden or not.
    pub total_memcpy_us: f64,
}

impl GpuTimelineTimes {
    /// A timeline's times.
    pub fn new(timeline: &GpuTimeline) -> Self {
        GpuTimelineTimes {
            computation_us: micros(timeline.computation),
            exposed_comm_us: micros(timeline.exposed_comm),
            exposed_memcpy_us: micros(timeline.exposed_memcpy),
            busy_us: micros(timeline.busy),
            idle_us: micros(timeline.idle),
            total_us: micros(timeline.total),
            total_comm_us: micros(timeline.total_comm),
            total_memcpy_us: micros(timeline.total_memcpy),
        }
    }
}

/// Each GPU stream's idle time by cause, in µs: between two pieces of its work, the stream
/// waited on the host (`host_wait`: the next launch call started after the previous work
/// ended), on starting queued work (`kernel_wait`: gaps under `kernel_wait_below_us`), or
/// on something else (`other`: queued work that waited longer, for another stream or an
/// event). HolisticTraceAnalysis's `get_idle_time_breakdown` categories.
#[derive(Debug, Clone, Serialize)]
pub struct IdleCausesReport {
    /// The gap under which queued work's wait is `kernel_wait` (HTA's 30).
    pub kernel_wait_below_us: f64,
    /// All streams together.
    pub total: StreamIdleReport,
    /// Per stream, by device and stream number.
    pub streams: Vec<StreamIdleReport>,
    /// Per stage, over all streams, with step annotations (empty without).
    pub stages: Vec<StageIdleReport>,
    /// Gaps before work of no step (all gaps without step annotations): with the stages'
    /// `idle_us`, `total.idle_us`.
    pub outside_steps_us: f64,
}

/// One stage's idle time over all streams, in µs: inside its steps by cause, and between
/// steps.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StageIdleReport {
    /// The stage.
    pub stage: &'static str,
    /// Gaps inside its steps, by cause, and gaps before its steps: the sum of the five
    /// below (less `host_wait_after_sync_us`, a part of `host_wait_us`).
    pub idle_us: f64,
    /// Gaps inside its steps before work launched after the previous work ended.
    pub host_wait_us: f64,
    /// Of `host_wait_us`, those in which the launching thread's synchronise call returned.
    pub host_wait_after_sync_us: f64,
    /// Short gaps inside its steps before work already queued.
    pub kernel_wait_us: f64,
    /// Longer gaps inside its steps before work already queued.
    pub other_us: f64,
    /// Gaps from the previous step's last work on a stream to one of its steps' first.
    pub between_steps_us: f64,
}

impl StageIdleReport {
    fn new(stage: &StageIdleCauses) -> Self {
        let causes = &stage.within_steps;
        StageIdleReport {
            stage: stage.stage.as_str(),
            idle_us: micros(causes.idle() + stage.between_steps),
            host_wait_us: micros(causes.host_wait),
            host_wait_after_sync_us: micros(causes.host_wait_after_sync),
            kernel_wait_us: micros(causes.kernel_wait),
            other_us: micros(causes.other),
            between_steps_us: micros(stage.between_steps),
        }
    }
}

/// One stream's idle time by cause, in µs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StreamIdleReport {
    /// The device (`null` in `total`).
    pub device: Option<u32>,
    /// The stream (`null` in `total`).
    pub stream: Option<u32>,
    /// Kernels, copies and memsets on it.
    pub events: u64,
    /// Idle time between its first and last work: the three causes' sum.
    pub idle_us: f64,
    /// Gaps before work launched after the previous work ended.
    pub host_wait_us: f64,
    /// Of `host_wait_us`, gaps in which the launching thread's synchronise call returned:
    /// the host was held until the GPU drained.
    pub host_wait_after_sync_us: f64,
    /// Short gaps before work already queued.
    pub kernel_wait_us: f64,
    /// Longer gaps before work already queued.
    pub other_us: f64,
    /// Work that started before the previous work on the stream ended (no gap counted).
    pub overlaps: u64,
}

impl StreamIdleReport {
    /// A stream's row (`place`: its device and stream; `None` for the total).
    fn new(place: Option<(u32, u32)>, (events, overlaps): (u64, u64), causes: &Causes) -> Self {
        StreamIdleReport {
            device: place.map(|p| p.0),
            stream: place.map(|p| p.1),
            events,
            idle_us: micros(causes.idle()),
            host_wait_us: micros(causes.host_wait),
            host_wait_after_sync_us: micros(causes.host_wait_after_sync),
            kernel_wait_us: micros(causes.kernel_wait),
            other_us: micros(causes.other),
            overlaps,
        }
    }
}

impl IdleCausesReport {
    /// The report of every stream's causes.
    pub fn new(causes: &IdleCauses) -> Self {
        IdleCausesReport {
            kernel_wait_below_us: micros(KERNEL_WAIT_BELOW),
            total: StreamIdleReport::new(
                None,
                (
                    causes.streams.iter().map(|s| s.events).sum(),
                    causes.overlaps(),
                ),
                &causes.total(),
            ),
            streams: causes
                .streams
                .iter()
                .map(|s| {
                    let place = Some((s.device, s.stream.0));
                    StreamIdleReport::new(place, (s.events, s.overlaps), &s.causes)
                })
                .collect(),
            stages: causes.stages.iter().map(StageIdleReport::new).collect(),
            outside_steps_us: micros(causes.outside_steps),
        }
    }
}

/// A duration's median, 90th and 99th percentile and maximum, in µs.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SpreadUs {
    /// The median.
    pub median: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The maximum.
    pub max: f64,
}

impl SpreadUs {
    fn new(spread: &Spread) -> Self {
        SpreadUs {
            median: micros(spread.median),
            p90: micros(spread.p90),
            p99: micros(spread.p99),
            max: micros(spread.max),
        }
    }
}

/// Launch statistics: for each eagerly launched kernel, copy or memset, its launch call's
/// duration (`cpu_us`), the delay from the call's end to its start (`delay_us`) and its own
/// duration (`gpu_us`); graph replays as one launch each. HolisticTraceAnalysis's
/// `get_cuda_kernel_launch_stats`, over every runtime's launch calls.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LaunchReport {
    /// Eagerly launched pieces of GPU work.
    pub eager: u64,
    /// Their launch delays.
    pub delay_us: SpreadUs,
    /// Their launch calls' durations.
    pub cpu_us: SpreadUs,
    /// Their GPU durations.
    pub gpu_us: SpreadUs,
    /// Work that ran for less time than its launch call took: the host cannot keep up.
    pub launch_bound: u64,
    /// Their GPU time.
    pub launch_bound_gpu_time_us: f64,
    /// All eagerly launched work's GPU time.
    pub eager_gpu_time_us: f64,
    /// Launch calls over `slow_launch_over_us` (HTA's 50).
    pub slow_launches: u64,
    /// The bound for `slow_launches`.
    pub slow_launch_over_us: f64,
    /// Launch delays over `long_delay_over_us` (HTA's 100).
    pub long_delays: u64,
    /// The bound for `long_delays`.
    pub long_delay_over_us: f64,
    /// Graph replays with recorded work.
    pub replays: u64,
    /// Their delays, from the launch call's end to the first kernel's start.
    pub replay_delay_us: SpreadUs,
    /// Their spreads, from the first kernel's start to the last one's end.
    pub replay_spread_us: SpreadUs,
}

impl LaunchReport {
    /// The report of a launch summary.
    pub fn new(summary: &LaunchSummary) -> Self {
        LaunchReport {
            eager: summary.eager,
            delay_us: SpreadUs::new(&summary.delay),
            cpu_us: SpreadUs::new(&summary.cpu),
            gpu_us: SpreadUs::new(&summary.gpu),
            launch_bound: summary.launch_bound,
            launch_bound_gpu_time_us: micros(summary.launch_bound_gpu_time),
            eager_gpu_time_us: micros(summary.eager_gpu_time),
            slow_launches: summary.slow_launches,
            slow_launch_over_us: micros(SLOW_LAUNCH_OVER),
            long_delays: summary.long_delays,
            long_delay_over_us: micros(LONG_DELAY_OVER),
            replays: summary.replays,
            replay_delay_us: SpreadUs::new(&summary.replay_delay),
            replay_spread_us: SpreadUs::new(&summary.replay_spread),
        }
    }
}
