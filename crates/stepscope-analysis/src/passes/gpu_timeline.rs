//! GPU timeline: where the GPU's time goes, as computation, communication and memory copies
//! not hidden under computation, and idle time.
//!
//! What it computes: every GPU event falls in one class: **communication** (its category is
//! `communication`), **memcpy** (a copy, or a kernel the runtime runs as one:
//! `__amd_rocclr_copyBuffer…`, `MEMORY_COPY_…`), or **computation** (every other kernel, and
//! memsets). Over a span, with each class's intervals merged across streams and devices:
//! `computation` is the time any computation ran; `exposed_comm` the time communication ran
//! and no computation; `exposed_memcpy` the time a copy ran and neither; `busy` the time
//! anything ran; `idle` the span less `busy`. So computation + exposed communication +
//! exposed memcpy + idle is the span, exactly. `total_comm` and `total_memcpy` are each
//! class's own union. The whole trace's span runs from the first start to the last end of
//! the GPU work it links to a launch call (all its GPU work when it has no launch calls);
//! the GPU time of work launched before the profiler started, or from threads it did not
//! trace, is counted apart. A step's span runs from the first start to the last end of the
//! work it launched.
//!
//! These are TraceLens's `gpu_timeline` definitions (`GPUEventAnalyser.compute_metrics`),
//! with two differences: communication is the category table's (TraceLens matches `nccl`,
//! `rccl` and `cross_device_reduce` in names; the table also knows MSCCL++, quick and
//! custom all-reduce, all-to-all and ops that launch collectives), and times are integer
//! nanoseconds.
//! Why it matters: a step's kernel time is not its wall time. What the GPU spends in
//! exposed communication, copies or idle is time no kernel optimisation recovers.
//! Example: vLLM full-graph decode on an MI300X: computation 10.67 ms of 10.74 ms, exposed
//! memcpy 0.04 ms, idle 0.03 ms.

use super::event_categories::EventCategories;
use super::kernel_categories::KernelCategories;
use super::launch_links::LaunchLinks;
use stepscope_model::{Duration, GpuEventKind, Timestamp, Trace};

/// Where the GPU's time went over one span (see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuTimeline {
    /// Time any computation ran.
    pub computation: Duration,
    /// Time communication ran and no computation.
    pub exposed_comm: Duration,
    /// Time a copy ran and neither computation nor communication.
    pub exposed_memcpy: Duration,
    /// Time anything ran.
    pub busy: Duration,
    /// The span less the busy time.
    pub idle: Duration,
    /// The span.
    pub total: Duration,
    /// Time any communication ran, hidden or not.
    pub total_comm: Duration,
    /// Time any copy ran, hidden or not.
    pub total_memcpy: Duration,
}

impl GpuTimeline {
    /// The sum of two spans' timelines (the steps of a stage).
    pub fn plus(self, other: GpuTimeline) -> GpuTimeline {
        GpuTimeline {
            computation: self.computation + other.computation,
            exposed_comm: self.exposed_comm + other.exposed_comm,
            exposed_memcpy: self.exposed_memcpy + other.exposed_memcpy,
            busy: self.busy + other.busy,
            idle: self.idle + other.idle,
            total: self.total + other.total,
            total_comm: self.total_comm + other.total_comm,
            total_memcpy: self.total_memcpy + other.total_memcpy,
        }
    }
}

/// The class of a GPU event on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineClass {
    /// Kernels and memsets that are not communication.
    Computation,
    /// Collectives.
    Communication,
    /// Copies.
    Memcpy,
}

/// The class of every GPU event of `trace`.
pub fn timeline_classes(
    trace: &Trace,
    categories: &EventCategories,
    table: &KernelCategories,
) -> Vec<TimelineClass> {
    let communication = table.names().iter().position(|n| n == "communication");
    (0..trace.gpu.len())
        .map(|row| match trace.gpu.kind[row] {
            GpuEventKind::Memcpy => TimelineClass::Memcpy,
            _ if is_runtime_copy(trace.names.resolve(trace.gpu.name[row])) => TimelineClass::Memcpy,
            _ if Some(categories.category[row].index()) == communication => {
                TimelineClass::Communication
            }
            _ => TimelineClass::Computation,
        })
        .collect()
}

/// A kernel that HIP's runtime runs to copy memory (ROCm 7.1 and older label copies so).
fn is_runtime_copy(name: &str) -> bool {
    let name = name.strip_suffix(".kd").unwrap_or(name);
    let copy_buffer = name
        .strip_prefix("__amd_rocclr_copyBuffer")
        .is_some_and(|rest| matches!(rest, "" | "Rect" | "Aligned" | "RectAligned"));
    let memory_copy = matches!(
        name,
        "MEMORY_COPY_HOST_TO_DEVICE"
            | "MEMORY_COPY_DEVICE_TO_HOST"
            | "MEMORY_COPY_DEVICE_TO_DEVICE"
    );
    copy_buffer || memory_copy
}

/// Intervals of one timeline, by class.
#[derive(Debug, Clone, Default)]
pub struct ClassIntervals {
    computation: Vec<(Timestamp, Timestamp)>,
    communication: Vec<(Timestamp, Timestamp)>,
    memcpy: Vec<(Timestamp, Timestamp)>,
}

impl ClassIntervals {
    /// Adds an event of `class` that ran from `start` to `end`.
    pub fn push(&mut self, class: TimelineClass, start: Timestamp, end: Timestamp) {
        let list = match class {
            TimelineClass::Computation => &mut self.computation,
            TimelineClass::Communication => &mut self.communication,
            TimelineClass::Memcpy => &mut self.memcpy,
        };
        list.push((start, end));
    }

    /// The timeline over the span from the first start to the last end; `None` without
    /// events.
    pub fn timeline(mut self) -> Option<GpuTimeline> {
        let all = merged(
            [&self.computation, &self.communication, &self.memcpy]
                .into_iter()
                .flatten()
                .copied()
                .collect(),
        );
        let (first, last) = (all.first()?.0, all.last()?.1);
        let computation = merged(std::mem::take(&mut self.computation));
        let communication = merged(std::mem::take(&mut self.communication));
        let memcpy = merged(std::mem::take(&mut self.memcpy));
        let exposed_comm = subtract(&computation, &communication);
        let exposed_memcpy = subtract(&communication, &subtract(&computation, &memcpy));
        let busy = length(&all);
        let total = last - first;
        Some(GpuTimeline {
            computation: length(&computation),
            exposed_comm: length(&exposed_comm),
            exposed_memcpy: length(&exposed_memcpy),
            busy,
            idle: total - busy,
            total,
            total_comm: length(&communication),
            total_memcpy: length(&memcpy),
        })
    }
}

/// The whole trace's timeline: of the GPU work the trace links to a launch call, or of all
/// of it in a trace with no launch calls (as TraceLens counts, leaving out kernels launched
/// before the profiler started or from threads it did not trace); `None` without such work.
/// Also the GPU time of the work left out.
pub fn trace_timeline(
    trace: &Trace,
    classes: &[TimelineClass],
    links: &LaunchLinks,
) -> (Option<GpuTimeline>, Duration) {
    let any_linked = links.launcher.iter().any(Option::is_some);
    let mut intervals = ClassIntervals::default();
    let mut unlinked = Duration::ZERO;
    for (row, &class) in classes.iter().enumerate() {
        if any_linked && links.launcher[row].is_none() {
            unlinked = unlinked + trace.gpu.duration[row];
            continue;
        }
        intervals.push(class, trace.gpu.start[row], trace.gpu.end(row));
    }
    (intervals.timeline(), unlinked)
}

/// The union of `intervals`, sorted and disjoint (touching intervals joined).
fn merged(mut intervals: Vec<(Timestamp, Timestamp)>) -> Vec<(Timestamp, Timestamp)> {
    intervals.sort_unstable();
    let mut out: Vec<(Timestamp, Timestamp)> = Vec::with_capacity(intervals.len());
    for (start, end) in intervals {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end.max(start))),
        }
    }
    out
}

/// `from` less `cut`, both sorted and disjoint.
fn subtract(
    cut: &[(Timestamp, Timestamp)],
    from: &[(Timestamp, Timestamp)],
) -> Vec<(Timestamp, Timestamp)> {
    let mut out = Vec::new();
    let mut next = 0;
    for &(start, end) in from {
        while next < cut.len() && cut[next].1 <= start {
            next += 1;
        }
        let mut current = start;
        for &(cut_start, cut_end) in cut[next..].iter().take_while(|c| c.0 < end) {
            if cut_start > current {
                out.push((current, cut_start));
            }
            current = current.max(cut_end);
        }
        if current < end {
            out.push((current, end));
        }
    }
    out
}

fn length(intervals: &[(Timestamp, Timestamp)]) -> Duration {
    intervals.iter().map(|&(start, end)| end - start).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: i64) -> Timestamp {
        Timestamp::from_nanos(us * 1000)
    }

    #[test]
    fn the_classes_sum_to_the_span_and_hidden_time_is_not_exposed() {
        let mut intervals = ClassIntervals::default();
        // Computation 0–10 and 20–30; communication 5–25 (10–20 exposed); a copy 8–40
        // (30–40 exposed: 10–20 lies under communication); idle 40–50 before a last kernel.
        intervals.push(TimelineClass::Computation, at(0), at(10));
        intervals.push(TimelineClass::Computation, at(20), at(30));
        intervals.push(TimelineClass::Communication, at(5), at(25));
        intervals.push(TimelineClass::Memcpy, at(8), at(40));
        intervals.push(TimelineClass::Computation, at(50), at(55));
        let timeline = intervals.timeline().unwrap();
        let us = |d: Duration| d.as_nanos() / 1000;
        assert_eq!(us(timeline.computation), 25);
        assert_eq!(us(timeline.exposed_comm), 10);
        assert_eq!(us(timeline.exposed_memcpy), 10);
        assert_eq!(us(timeline.busy), 45);
        assert_eq!(us(timeline.idle), 10);
        assert_eq!(us(timeline.total), 55);
        assert_eq!(
            (us(timeline.total_comm), us(timeline.total_memcpy)),
            (20, 32)
        );
        assert_eq!(
            timeline.computation + timeline.exposed_comm + timeline.exposed_memcpy + timeline.idle,
            timeline.total
        );
        assert_eq!(ClassIntervals::default().timeline(), None);
    }

    #[test]
    fn runtime_copy_kernels_are_copies() {
        for name in [
            "__amd_rocclr_copyBuffer",
            "__amd_rocclr_copyBufferAligned.kd",
            "MEMORY_COPY_DEVICE_TO_HOST",
        ] {
            assert!(is_runtime_copy(name), "{name}");
        }
        for name in ["__amd_rocclr_fillBuffer", "copyBufferish", "Cijk_Ailk"] {
            assert!(!is_runtime_copy(name), "{name}");
        }
    }
}
