//! Idle time by cause: why each GPU stream sat idle between two pieces of its work.
//!
//! What it computes: per stream (device and stream number), its kernels, copies and memsets
//! in start order, and each gap from one's end to the next one's start, put in one cause:
//! - **host wait**: the next work's launch call started after the previous work ended: the
//!   stream ran dry because the host had not yet asked for more; of it, **after a sync**:
//!   the launching thread was in a synchronise call (stream, device or event) that returned
//!   inside the gap, so the host was held until the GPU drained and could not queue ahead;
//! - **kernel wait**: the next work was already queued and the gap is under
//!   [`KERNEL_WAIT_BELOW`]: the cost of starting back-to-back work;
//! - **other**: queued work that still waited longer, for an event from another stream
//!   (a collective, a copy) or for something the trace does not show.
//!
//! With step annotations, each gap also counts for a stage: a gap between two pieces of
//! work of one step counts for that step's stage, by the causes above; a gap from one
//! step's work to the next step's is **between steps** (the host scheduling, sampling and
//! preparing the next step, or the queue draining between them), counted for the stage of
//! the step that follows; gaps around work of no step count for no stage.
//!
//! These are HolisticTraceAnalysis's `get_idle_time_breakdown` categories
//! (`_analyze_idle_time_for_stream`), which its tests here match within 1 %. Three notes on
//! them. HTA documents its `consecutive_kernel_delay` threshold as 30 ns but compares it with
//! the trace's microseconds, so what it computes is 30 µs; that is the threshold here. Work
//! that starts before the previous work on its stream ended gives HTA a negative gap, which
//! it adds in; here such overlap counts as no idle time (it is counted apart, `overlaps`).
//! And "after a sync" is stepscope's own split of host wait; HTA has no such category.
//! Why it matters: idle time a kernel optimisation cannot recover has a cause: a host that
//! launches too late (Python, scheduling, a sync that drains the queue) calls for graphs or
//! fewer syncs; queued work that still waits calls for a look at cross-stream dependencies.
//! Example: in HTA's CUDA-graph training trace (cut as HTA cuts it), the main stream's 708
//! ms of idle time is 98 % other (its work was queued and still waited), while two side
//! streams' idle time is all host wait.

use super::launch_links::LaunchLinks;
use super::stage_breakdown::event_steps;
use super::steps::{Stage, Steps};
use rustc_hash::FxHashMap;
use stepscope_model::{
    Duration, GpuEventKind, ProcessId, RuntimeCallKind, StreamId, ThreadId, Timestamp, Trace,
};

/// A gap shorter than this between queued work is the cost of starting it (HTA's 30, in the
/// trace's microseconds).
pub const KERNEL_WAIT_BELOW: Duration = Duration::from_nanos(30_000);

/// Idle time by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Causes {
    /// Gaps where the next work was launched after the previous ended.
    pub host_wait: Duration,
    /// Of `host_wait`, the gaps in which the launching thread's synchronise call returned.
    pub host_wait_after_sync: Duration,
    /// Gaps under [`KERNEL_WAIT_BELOW`] before work already queued.
    pub kernel_wait: Duration,
    /// Longer gaps before work already queued.
    pub other: Duration,
}

impl Causes {
    /// The idle time of all causes.
    pub fn idle(&self) -> Duration {
        self.host_wait + self.kernel_wait + self.other
    }

    /// The sum of two.
    pub fn plus(self, other: Causes) -> Causes {
        Causes {
            host_wait: self.host_wait + other.host_wait,
            host_wait_after_sync: self.host_wait_after_sync + other.host_wait_after_sync,
            kernel_wait: self.kernel_wait + other.kernel_wait,
            other: self.other + other.other,
        }
    }

    fn add(&mut self, cause: Cause, gap: Duration) {
        match cause {
            Cause::HostWait { after_sync } => {
                self.host_wait = self.host_wait + gap;
                if after_sync {
                    self.host_wait_after_sync = self.host_wait_after_sync + gap;
                }
            }
            Cause::KernelWait => self.kernel_wait = self.kernel_wait + gap,
            Cause::Other => self.other = self.other + gap,
        }
    }
}

/// The cause of one gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    HostWait { after_sync: bool },
    KernelWait,
    Other,
}

/// One stream's idle time by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamIdleCauses {
    /// The device.
    pub device: u32,
    /// The stream.
    pub stream: StreamId,
    /// Pieces of GPU work (kernels, copies, memsets) on the stream.
    pub events: u64,
    /// Its gaps by cause.
    pub causes: Causes,
    /// Work that started before the previous work on the stream ended (no gap).
    pub overlaps: u64,
}

/// One stage's idle time, over all streams: inside its steps by cause, and before them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageIdleCauses {
    /// The stage.
    pub stage: Stage,
    /// Gaps between two pieces of work of one of its steps, by cause.
    pub within_steps: Causes,
    /// Gaps from the previous step's last work on a stream to one of its steps' first.
    pub between_steps: Duration,
}

/// Every stream's idle time by cause, in (device, stream) order, and, with step
/// annotations, every stage's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdleCauses {
    /// Per stream.
    pub streams: Vec<StreamIdleCauses>,
    /// Per stage, in [`Stage`]'s order (empty without step annotations).
    pub stages: Vec<StageIdleCauses>,
    /// Gaps before work of no step (all of them without step annotations): with the
    /// stages', the streams' idle time.
    pub outside_steps: Duration,
}

impl IdleCauses {
    /// The streams' sums.
    pub fn total(&self) -> Causes {
        self.streams
            .iter()
            .fold(Causes::default(), |sum, s| sum.plus(s.causes))
    }

    /// Work that started before the previous work on its stream ended, on all streams.
    pub fn overlaps(&self) -> u64 {
        self.streams.iter().map(|s| s.overlaps).sum()
    }
}

/// One piece of work on a stream: start, end, launch call's row, step.
#[derive(Debug, Clone, Copy)]
struct Work {
    start: Timestamp,
    end: Timestamp,
    launcher: Option<u32>,
    step: Option<u32>,
}

/// The idle time of every stream of `trace` by cause, and of every stage of `steps` (see
/// the module documentation).
pub fn idle_causes(trace: &Trace, links: &LaunchLinks, steps: &Steps) -> IdleCauses {
    let gpu = &trace.gpu;
    let steps_of = event_steps(trace, links, steps);
    let mut streams: FxHashMap<(u32, StreamId), Vec<Work>> = FxHashMap::default();
    for (row, &step) in steps_of.iter().enumerate() {
        if !matches!(
            gpu.kind[row],
            GpuEventKind::Kernel | GpuEventKind::Memcpy | GpuEventKind::Memset
        ) {
            continue;
        }
        streams
            .entry((gpu.device[row], gpu.stream[row]))
            .or_default()
            .push(Work {
                start: gpu.start[row],
                end: gpu.end(row),
                launcher: links.launcher[row],
                step,
            });
    }
    let context = Context {
        trace,
        steps,
        syncs: SyncCalls::new(trace),
    };
    let mut stages = StageGaps::default();
    let mut out: Vec<StreamIdleCauses> = streams
        .into_iter()
        .map(|((device, stream), mut work)| {
            work.sort_unstable_by_key(|w| (w.start, w.end));
            let mut causes = context.stream_causes(&work, &mut stages);
            causes.device = device;
            causes.stream = stream;
            causes
        })
        .collect();
    out.sort_unstable_by_key(|s| (s.device, s.stream));
    let mut by_stage: Vec<StageIdleCauses> = stages.stages.into_values().collect();
    by_stage.sort_unstable_by_key(|s| s.stage);
    IdleCauses {
        streams: out,
        stages: by_stage,
        outside_steps: stages.outside,
    }
}

/// Gaps by stage, and outside steps.
#[derive(Default)]
struct StageGaps {
    stages: FxHashMap<Stage, StageIdleCauses>,
    outside: Duration,
}

/// What the causes are found from.
struct Context<'a> {
    trace: &'a Trace,
    steps: &'a Steps,
    syncs: SyncCalls,
}

impl Context<'_> {
    /// The causes of the gaps between `work`, sorted by start; each gap also counted for
    /// its stage in `stages`.
    fn stream_causes(&self, work: &[Work], stages: &mut StageGaps) -> StreamIdleCauses {
        let mut causes = StreamIdleCauses {
            events: work.len() as u64,
            ..StreamIdleCauses::default()
        };
        for pair in work.windows(2) {
            let (previous, next) = (pair[0], pair[1]);
            if next.start < previous.end {
                causes.overlaps += 1;
                continue;
            }
            let gap = next.start - previous.end;
            let cause = self.cause(previous.end, next, gap);
            causes.causes.add(cause, gap);
            let Some(step) = next.step else {
                stages.outside = stages.outside + gap;
                continue;
            };
            let stage = self.steps.steps[step as usize].label.stage;
            let entry = stages.stages.entry(stage).or_insert(StageIdleCauses {
                stage,
                within_steps: Causes::default(),
                between_steps: Duration::ZERO,
            });
            if previous.step == next.step {
                entry.within_steps.add(cause, gap);
            } else {
                entry.between_steps = entry.between_steps + gap;
            }
        }
        causes
    }

    /// Why the stream sat idle from `previous_end` until `next` started, `gap` later.
    fn cause(&self, previous_end: Timestamp, next: Work, gap: Duration) -> Cause {
        let runtime = &self.trace.runtime;
        let late = next
            .launcher
            .map(|call| call as usize)
            .filter(|&call| runtime.start[call] > previous_end);
        match late {
            Some(call) => {
                let thread = (runtime.process[call], runtime.thread[call]);
                Cause::HostWait {
                    after_sync: self.syncs.returned_within(thread, previous_end, next.start),
                }
            }
            None if gap < KERNEL_WAIT_BELOW => Cause::KernelWait,
            None => Cause::Other,
        }
    }
}

/// A host thread: its process and thread.
type HostThread = (ProcessId, ThreadId);

/// Synchronise calls' ends per host thread, sorted.
struct SyncCalls {
    ends: FxHashMap<HostThread, Vec<Timestamp>>,
}

impl SyncCalls {
    fn new(trace: &Trace) -> Self {
        let runtime = &trace.runtime;
        let mut ends: FxHashMap<HostThread, Vec<Timestamp>> = FxHashMap::default();
        for call in 0..runtime.len() {
            if runtime.kind[call] == RuntimeCallKind::Synchronize {
                ends.entry((runtime.process[call], runtime.thread[call]))
                    .or_default()
                    .push(runtime.end(call));
            }
        }
        for list in ends.values_mut() {
            list.sort_unstable();
        }
        SyncCalls { ends }
    }

    /// Whether a synchronise call of `thread` returned at or after `from` and before `to`.
    fn returned_within(&self, thread: HostThread, from: Timestamp, to: Timestamp) -> bool {
        self.ends.get(&thread).is_some_and(|ends| {
            let first = ends.partition_point(|&end| end < from);
            ends.get(first).is_some_and(|&end| end < to)
        })
    }
}
