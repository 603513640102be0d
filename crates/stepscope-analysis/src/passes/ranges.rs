//! Ranges: the GPU work launched inside the user's own annotations (`--range REGEX`).
//!
//! What it computes: for every distinct name of a host `user_annotation` (a
//! `torch.profiler.record_function` or NVTX-style range) that the pattern matches, its
//! instances, their host time, the time of their device-side mirrors
//! (`gpu_user_annotation` of the same name, which Kineto draws from the range's first to
//! its last kernel on each stream), and the GPU events launched inside them: every GPU
//! event whose launch call starts inside an instance, in the same process (graph replays
//! through their graph launch), by category and by kernel, as the stage tables.
//! An event inside two instances of one name (a range nested in itself) counts once for it;
//! an event inside ranges of two names counts for each.
//! Why it matters: users annotate the parts they are optimising (`attention_block`,
//! `moe_dispatch`) and ask for kernel time per annotation (HolisticTraceAnalysis #180).
//! Example: `--range '^layer'` → `layer_0`: 28 instances, 412 kernels, 3.1 ms, 71% gemm.

use super::event_categories::EventCategories;
use super::kernel_categories::KernelCategories;
use super::launch_links::LaunchLinks;
use super::stage_breakdown::{DecidedTimes, RowSums, TimeRow, union_length};
use regex::Regex;
use rustc_hash::FxHashMap;
use stepscope_model::{Duration, NameId, ProcessId, Timestamp, Trace};

/// The `--range` pattern: a regex searched in annotation names.
#[derive(Debug, Clone)]
pub struct RangePattern {
    regex: Regex,
}

impl RangePattern {
    /// Compiles a pattern (Rust `regex` syntax).
    pub fn new(pattern: &str) -> Result<Self, regex::Error> {
        Ok(RangePattern {
            regex: Regex::new(pattern)?,
        })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        self.regex.as_str()
    }

    /// Whether an annotation name matches.
    pub fn matches(&self, name: &str) -> bool {
        self.regex.is_match(name)
    }
}

/// One matching annotation name and the work launched inside its instances.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeSummary {
    /// The annotation's name.
    pub name: String,
    /// Host instances.
    pub instances: u32,
    /// Sum of the instances' host durations.
    pub cpu_time: Duration,
    /// Sum of the durations of its device-side mirrors, `None` when the trace has none.
    pub gpu_mirror_time: Option<Duration>,
    /// GPU events launched inside.
    pub events: u64,
    /// Sum of their durations.
    pub gpu_time: Duration,
    /// Union of their intervals per device, summed over devices.
    pub busy_time: Duration,
    /// Per category, by time descending.
    pub categories: Vec<TimeRow>,
    /// Per kernel name and category, by time descending.
    pub kernels: Vec<TimeRow>,
    /// GPU time by what decided its category.
    pub decided: DecidedTimes,
}

/// The ranges of one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeBreakdown {
    /// The pattern, as given.
    pub pattern: String,
    /// Per matching annotation name, in order of first appearance; empty when none matches.
    pub ranges: Vec<RangeSummary>,
    /// When none matches: up to five of the trace's host annotation names, to correct the
    /// pattern by.
    pub other_names: Vec<String>,
}

/// How many annotation names [`RangeBreakdown::other_names`] shows.
const OTHER_NAMES: usize = 5;

/// What [`range_breakdown`] reads besides the trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RangeInputs<'a> {
    /// The pattern.
    pub pattern: &'a RangePattern,
    /// GPU events to launch calls and back.
    pub links: &'a LaunchLinks,
    /// The category table.
    pub table: &'a KernelCategories,
    /// The category of every GPU event.
    pub categories: &'a EventCategories,
}

/// Per matching annotation name, in order of first appearance.
pub(crate) fn range_breakdown(trace: &Trace, inputs: RangeInputs<'_>) -> RangeBreakdown {
    let ranges = summaries(trace, inputs);
    let other_names = if ranges.is_empty() {
        let mut seen: Vec<NameId> = Vec::new();
        for &name in &trace.annotations.name {
            if seen.len() == OTHER_NAMES {
                break;
            }
            if !seen.contains(&name) {
                seen.push(name);
            }
        }
        seen.iter().map(|&n| trace.name(n).to_owned()).collect()
    } else {
        Vec::new()
    };
    RangeBreakdown {
        pattern: inputs.pattern.as_str().to_owned(),
        ranges,
        other_names,
    }
}

fn summaries(trace: &Trace, inputs: RangeInputs<'_>) -> Vec<RangeSummary> {
    let instances = matching_instances(trace, inputs.pattern);
    if instances.is_empty() {
        return Vec::new();
    }
    let calls = CallsByProcess::new(trace);
    let mirrors = mirror_times(trace, inputs.pattern);
    instances
        .into_iter()
        .map(|(name, rows)| {
            let mut summary = summarise(trace, inputs, &calls, &rows);
            summary.name = trace.name(name).to_owned();
            summary.gpu_mirror_time = mirrors.get(&name).copied();
            summary
        })
        .collect()
}

/// Annotation rows per matching name, names in order of first appearance.
fn matching_instances(trace: &Trace, pattern: &RangePattern) -> Vec<(NameId, Vec<usize>)> {
    let annotations = &trace.annotations;
    let mut verdicts: FxHashMap<NameId, Option<usize>> = FxHashMap::default();
    let mut out: Vec<(NameId, Vec<usize>)> = Vec::new();
    for (row, &name) in annotations.name.iter().enumerate() {
        let slot = *verdicts.entry(name).or_insert_with(|| {
            if pattern.matches(trace.name(name)) {
                out.push((name, Vec::new()));
                Some(out.len() - 1)
            } else {
                None
            }
        });
        if let Some(slot) = slot {
            out[slot].1.push(row);
        }
    }
    out
}

/// Summed durations of the device-side mirrors of matching names.
fn mirror_times(trace: &Trace, pattern: &RangePattern) -> FxHashMap<NameId, Duration> {
    let mirrors = &trace.gpu_annotations;
    let mut times: FxHashMap<NameId, Duration> = FxHashMap::default();
    let mut verdicts: FxHashMap<NameId, bool> = FxHashMap::default();
    for (row, &name) in mirrors.name.iter().enumerate() {
        let matches = *verdicts
            .entry(name)
            .or_insert_with(|| pattern.matches(trace.name(name)));
        if matches {
            let time = times.entry(name).or_insert(Duration::ZERO);
            *time = *time + mirrors.duration[row];
        }
    }
    times
}

/// Runtime call rows per process, by start.
struct CallsByProcess {
    calls: FxHashMap<ProcessId, Vec<(Timestamp, u32)>>,
}

impl CallsByProcess {
    fn new(trace: &Trace) -> Self {
        let runtime = &trace.runtime;
        let mut calls: FxHashMap<ProcessId, Vec<(Timestamp, u32)>> = FxHashMap::default();
        for row in 0..runtime.len() {
            calls
                .entry(runtime.process[row])
                .or_default()
                .push((runtime.start[row], row as u32));
        }
        for list in calls.values_mut() {
            list.sort_unstable();
        }
        CallsByProcess { calls }
    }

    /// Calls of `process` starting in `[start, end]`.
    fn within(&self, process: ProcessId, start: Timestamp, end: Timestamp) -> &[(Timestamp, u32)] {
        let Some(list) = self.calls.get(&process) else {
            return &[];
        };
        let from = list.partition_point(|&(at, _)| at < start);
        let to = list.partition_point(|&(at, _)| at <= end);
        &list[from..to]
    }
}

/// The work launched inside the instances `rows` of one name.
fn summarise(
    trace: &Trace,
    inputs: RangeInputs<'_>,
    calls: &CallsByProcess,
    rows: &[usize],
) -> RangeSummary {
    let annotations = &trace.annotations;
    let mut inside: Vec<u32> = Vec::new();
    let mut cpu_time = Duration::ZERO;
    for &row in rows {
        cpu_time = cpu_time + annotations.duration[row];
        let within = calls.within(
            annotations.process[row],
            annotations.start[row],
            annotations.end(row),
        );
        inside.extend(within.iter().map(|&(_, call)| call));
    }
    inside.sort_unstable();
    inside.dedup();
    let mut sums = RowSums::default();
    let mut intervals = Vec::new();
    let (mut events, mut gpu_time) = (0_u64, Duration::ZERO);
    for call in inside {
        for &event in inputs.links.launched(call as usize) {
            let event = event as usize;
            sums.add(trace, event, inputs.categories);
            events += 1;
            gpu_time = gpu_time + trace.gpu.duration[event];
            intervals.push((
                trace.gpu.device[event],
                trace.gpu.start[event],
                trace.gpu.end(event),
            ));
        }
    }
    let (categories, kernels) = sums.rows(trace, inputs.table);
    let decided = sums.decided();
    RangeSummary {
        name: String::new(),
        instances: rows.len() as u32,
        cpu_time,
        gpu_mirror_time: None,
        events,
        gpu_time,
        busy_time: union_length(&mut intervals),
        categories,
        kernels,
        decided,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::event_categories::EventCategories;
    use crate::passes::kernel_categories::categorize_names;
    use crate::passes::launch_links::link_launches;
    use stepscope_model::{
        AnnotationRecord, CorrelationId, GpuEventKind, GpuEventRecord, RuntimeCallKind,
        RuntimeCallRecord, StreamId, ThreadId, TraceBuilder,
    };

    fn span(b: &mut TraceBuilder, name: &str, pid: i64, start: i64, end: i64) {
        let name = b.intern(name);
        let process = b.process_number(pid);
        b.add_annotation(AnnotationRecord {
            name,
            process,
            thread: ThreadId::Number(1),
            start: Timestamp::from_nanos(start),
            duration: Duration::from_nanos(end - start),
        });
    }

    /// A launch at `at` in process `pid` and its 10 ns kernel.
    fn launch(b: &mut TraceBuilder, pid: i64, at: i64) {
        let call = b.intern("cudaLaunchKernel");
        let kernel = b.intern("Cijk_gemm");
        let process = b.process_number(pid);
        b.add_runtime_call(RuntimeCallRecord {
            kind: RuntimeCallKind::EagerLaunch,
            name: call,
            process,
            thread: ThreadId::Number(2),
            start: Timestamp::from_nanos(at),
            duration: Duration::from_nanos(1),
            correlation: CorrelationId(at as u64),
            launched_kernel: None,
        });
        b.add_gpu_event(GpuEventRecord {
            kind: GpuEventKind::Kernel,
            name: kernel,
            process,
            device: 0,
            stream: StreamId(7),
            start: Timestamp::from_nanos(at + 1000),
            duration: Duration::from_nanos(10),
            correlation: CorrelationId(at as u64),
            graph_id: None,
        });
    }

    fn run(trace: &Trace, pattern: &str) -> RangeBreakdown {
        let table = KernelCategories::embedded();
        let links = link_launches(trace);
        let names = categorize_names(trace, &table);
        let categories = EventCategories::by_name(trace, &names);
        let pattern = RangePattern::new(pattern).unwrap();
        range_breakdown(
            trace,
            RangeInputs {
                pattern: &pattern,
                links: &links,
                table: &table,
                categories: &categories,
            },
        )
    }

    #[test]
    fn nested_instances_count_an_event_once_per_name_and_once_per_other_name() {
        let mut b = TraceBuilder::new();
        span(&mut b, "block", 1, 0, 100);
        span(&mut b, "block", 1, 10, 50); // nested in itself
        span(&mut b, "attention", 1, 20, 30);
        span(&mut b, "block", 2, 0, 100); // another process
        span(&mut b, "unrelated", 1, 0, 100);
        launch(&mut b, 1, 25); // in both blocks of process 1 and in attention
        launch(&mut b, 1, 60); // in the outer block only
        launch(&mut b, 1, 200); // in no range
        launch(&mut b, 2, 5); // in process 2's block
        let trace = b.finish();
        let found = run(&trace, "^(block|attention)$");
        let names: Vec<&str> = found.ranges.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["block", "attention"]);
        let block = &found.ranges[0];
        assert_eq!(block.instances, 3);
        assert_eq!(block.events, 3, "25 once, 60, and process 2's 5");
        assert_eq!(block.gpu_time.as_nanos(), 30);
        assert_eq!(block.cpu_time.as_nanos(), 100 + 40 + 100);
        assert_eq!(block.kernels.len(), 1);
        assert_eq!(block.categories[0].name, "gemm");
        let attention = &found.ranges[1];
        assert_eq!((attention.instances, attention.events), (1, 1));
        assert!(found.other_names.is_empty());
        let none = run(&trace, "^nothing$");
        assert!(none.ranges.is_empty());
        assert_eq!(none.other_names, ["block", "attention", "unrelated"]);
    }
}
