//! Stage breakdown: where GPU time goes in prefill and in decode, by kernel category and
//! by kernel name.
//!
//! What it computes: each GPU event is assigned to the step whose host span contains its
//! launch (graph kernels through their graph launch), hence to a stage. Per stage: steps,
//! GPU time (sum of event durations), busy time (union of event intervals per device),
//! idle time inside the stage's step windows, time and share per category and per kernel.
//! Without step annotations, replayed kernels count as decode and the rest stays
//! unassigned; the share that could not be assigned is always reported.
//! Why it matters: decode is usually the target of optimisation, and its per-op shares
//! differ from prefill's; one mixed table answers neither question.
//! Example: decode 71 % GEMM, 12 % attention; prefill 58 % GEMM, 30 % attention.

use super::event_categories::{DecidedBy, EventCategories};
use super::gpu_timeline::{ClassIntervals, GpuTimeline, TimelineClass};
use super::kernel_categories::{CategoryId, KernelCategories};
use super::launch_links::LaunchLinks;
use super::replay_coverage::{Range, Replay, ReplayStatus};
use super::steps::{Stage, Steps};
use rustc_hash::FxHashMap;
use serde::Serialize;
use stepscope_model::{Duration, NameId, RuntimeCallKind, Timestamp, Trace};

/// A stage, or work no step could claim; serialised as its name ([`StageKey::as_str`]).
/// Ordered: the framework's stages in [`Stage`]'s order, then unassigned work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StageKey {
    /// One of the framework's stages.
    Stage(Stage),
    /// Not inside any step.
    Unassigned,
}

impl Serialize for StageKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl StageKey {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            StageKey::Stage(stage) => stage.as_str(),
            StageKey::Unassigned => "unassigned",
        }
    }
}

impl std::fmt::Display for StageKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How events were assigned to stages; serialised as its name
/// ([`AssignmentMethod::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AssignmentMethod {
    /// Through step annotations.
    StepAnnotations,
    /// No annotations: graph replays count as decode, the rest is unassigned.
    ReplaysAsDecode,
}

impl AssignmentMethod {
    /// Its name, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            AssignmentMethod::StepAnnotations => "step_annotations",
            AssignmentMethod::ReplaysAsDecode => "replays_as_decode",
        }
    }
}

impl std::fmt::Display for AssignmentMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Time of one category or kernel within a stage.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeRow {
    /// Category name, or kernel name.
    pub name: String,
    /// Category of the kernel (for kernel rows; equal to `name` for category rows).
    pub category: String,
    /// GPU events.
    pub events: u64,
    /// Sum of durations.
    pub time: Duration,
    /// Of `events`, those whose launching CPU op decided the category (the rest: the
    /// kernel's name).
    pub events_by_op: u64,
    /// Of `time`, the time of the events whose launching op decided the category.
    pub time_by_op: Duration,
}

impl TimeRow {
    /// Time of the events whose name decided the category.
    pub fn time_by_name(&self) -> Duration {
        self.time - self.time_by_op
    }

    /// Adds another row's counts to this one.
    pub fn add(&mut self, other: &TimeRow) {
        self.events += other.events;
        self.time = self.time + other.time;
        self.events_by_op += other.events_by_op;
        self.time_by_op = self.time_by_op + other.time_by_op;
    }
}

/// What a stage's window (and so its idle time) is measured over; serialised as its name
/// ([`IdleBasis::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleBasis {
    /// Its steps' windows: from each step's first GPU event start to its last end.
    StepWindows,
    /// Per device, from the stage's first GPU event start to its last end, with the device's
    /// busy time (every GPU event of the file, any stage) taken out: work outside steps,
    /// or a trace without step annotations.
    GpuSpan,
    /// Ranks measured on different bases (combined figures).
    Mixed,
    /// No GPU event: nothing to measure.
    NotMeasured,
}

impl IdleBasis {
    /// Lower-case name, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleBasis::StepWindows => "step_windows",
            IdleBasis::GpuSpan => "gpu_span",
            IdleBasis::Mixed => "mixed",
            IdleBasis::NotMeasured => "not_measured",
        }
    }

    /// The basis of two parts added together.
    pub fn merge(self, other: IdleBasis) -> IdleBasis {
        match (self, other) {
            (a, IdleBasis::NotMeasured) => a,
            (IdleBasis::NotMeasured, b) => b,
            (a, b) if a == b => a,
            _ => IdleBasis::Mixed,
        }
    }
}

/// One stage's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct StageSummary {
    /// The stage.
    pub stage: StageKey,
    /// Steps of this stage.
    pub steps: u32,
    /// GPU events.
    pub events: u64,
    /// Sum of GPU event durations.
    pub gpu_time: Duration,
    /// Union of GPU event intervals, per device, summed over devices.
    pub busy_time: Duration,
    /// What `window` spans: step windows, or the stage's GPU span per device.
    pub idle_basis: IdleBasis,
    /// With step windows: from each step's first GPU event start to its last end, summed
    /// over steps. With the GPU span: per device, from the stage's first GPU event start to
    /// its last end, summed over devices.
    pub window: Duration,
    /// Step windows: `window − busy`. GPU span: `window` less the time any GPU event of the
    /// file ran on the device inside it. At least zero.
    pub idle_time: Duration,
    /// Per category, by time descending, categories with no time left out.
    pub categories: Vec<TimeRow>,
    /// Per kernel name and category, by time descending (all of them; reports cut to top
    /// N). A kernel launched by ops of different categories has one row per category.
    pub kernels: Vec<TimeRow>,
    /// GPU time by what decided its category (the launching op, or the name and why).
    pub decided: DecidedTimes,
    /// Graph replays of this stage that recorded only part of their nodes, or none.
    pub unrecorded_replays: u32,
    /// The GPU time of their unrecorded nodes: work that ran in what reads as idle time
    /// (see `add_missing_work`).
    pub missing_work: Range<Duration>,
    /// Per step of this stage that ran GPU work, the sum of its events' durations, in step
    /// order (files combined: each file's steps in turn): the step-to-step spread that
    /// tells a change of the stage's time from noise.
    pub step_gpu_times: Vec<Duration>,
    /// Where the GPU's time went (computation, exposed communication and copies, idle):
    /// over each step's window, summed, with step windows; else over the stage's GPU span
    /// (devices merged). `None` without events.
    pub timeline: Option<GpuTimeline>,
    /// Per step of this stage that ran GPU work, its window's timeline, in the order of
    /// `step_gpu_times`.
    pub step_timelines: Vec<GpuTimeline>,
}

/// The breakdown of one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct StageBreakdown {
    /// How events were assigned.
    pub method: AssignmentMethod,
    /// Stages with any events (or steps), prefill, decode, mixed, other, unassigned.
    pub stages: Vec<StageSummary>,
    /// Sum of all GPU event durations.
    pub total_gpu_time: Duration,
    /// Time of events no step claimed.
    pub unassigned_time: Duration,
}

impl StageBreakdown {
    /// Share of GPU time no step claimed.
    pub fn unassigned_share(&self) -> f64 {
        let total = self.total_gpu_time.as_nanos();
        if total == 0 {
            0.0
        } else {
            self.unassigned_time.as_nanos() as f64 / total as f64
        }
    }
}

/// Inputs besides the trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BreakdownInputs<'a> {
    /// Launch links.
    pub links: &'a LaunchLinks,
    /// Steps.
    pub steps: &'a Steps,
    /// Category table.
    pub table: &'a KernelCategories,
    /// Category of every GPU event.
    pub categories: &'a EventCategories,
    /// Timeline class of every GPU event.
    pub classes: &'a [TimelineClass],
}

/// The step (if any) of every GPU event.
pub(crate) fn event_steps(trace: &Trace, links: &LaunchLinks, steps: &Steps) -> Vec<Option<u32>> {
    let runtime = &trace.runtime;
    links
        .launcher
        .iter()
        .map(|launcher| {
            let call = (*launcher)? as usize;
            steps
                .containing(runtime.process[call], runtime.start[call])
                .map(|s| s as u32)
        })
        .collect()
}

/// Computes the per-stage breakdown.
pub(crate) fn stage_breakdown(trace: &Trace, inputs: BreakdownInputs<'_>) -> StageBreakdown {
    let method = if inputs.steps.steps.is_empty() {
        AssignmentMethod::ReplaysAsDecode
    } else {
        AssignmentMethod::StepAnnotations
    };
    let steps_of = event_steps(trace, inputs.links, inputs.steps);
    let stage_of = |row: usize| -> StageKey {
        match (method, steps_of[row]) {
            (AssignmentMethod::StepAnnotations, Some(step)) => {
                StageKey::Stage(inputs.steps.steps[step as usize].label.stage)
            }
            (AssignmentMethod::ReplaysAsDecode, _) if is_replayed(trace, inputs.links, row) => {
                StageKey::Stage(Stage::Decode)
            }
            _ => StageKey::Unassigned,
        }
    };
    let mut accumulators: FxHashMap<StageKey, Accumulator> = FxHashMap::default();
    for (row, step) in steps_of.iter().enumerate() {
        accumulators.entry(stage_of(row)).or_default().add(
            trace,
            row,
            *step,
            (inputs.categories, inputs.classes[row]),
        );
    }
    for step in &inputs.steps.steps {
        accumulators
            .entry(StageKey::Stage(step.label.stage))
            .or_default()
            .steps += 1;
    }
    let device_busy = DeviceBusy::new(trace);
    let mut stages: Vec<StageSummary> = accumulators
        .into_iter()
        .map(|(key, acc)| acc.finish(key, trace, (inputs, &device_busy)))
        .collect();
    stages.sort_by_key(|s| s.stage);
    let total_gpu_time = trace.gpu.duration.iter().copied().sum();
    let unassigned_time = stages
        .iter()
        .filter(|s| s.stage == StageKey::Unassigned)
        .map(|s| s.gpu_time)
        .sum();
    StageBreakdown {
        method,
        stages,
        total_gpu_time,
        unassigned_time,
    }
}

fn is_replayed(trace: &Trace, links: &LaunchLinks, row: usize) -> bool {
    links.launcher[row]
        .is_some_and(|call| trace.runtime.kind[call as usize] == RuntimeCallKind::GraphLaunch)
}

#[derive(Default)]
struct Accumulator {
    steps: u32,
    events: u64,
    gpu_time: Duration,
    /// Per kernel name and category.
    rows: RowSums,
    /// (device, start, end) of every event, for busy time.
    intervals: Vec<(u32, Timestamp, Timestamp)>,
    /// Per step: first start and last end.
    step_spans: FxHashMap<u32, (Timestamp, Timestamp)>,
    /// Per step: the sum of its events' durations.
    step_times: FxHashMap<u32, Duration>,
    /// Per step: its events by timeline class.
    step_classes: FxHashMap<u32, ClassIntervals>,
    /// Events without a step, by timeline class (the stage's span).
    classes: ClassIntervals,
}

impl Accumulator {
    fn add(
        &mut self,
        trace: &Trace,
        row: usize,
        step: Option<u32>,
        (categories, class): (&EventCategories, TimelineClass),
    ) {
        let gpu = &trace.gpu;
        let (start, end) = (gpu.start[row], gpu.end(row));
        // A stage's events all have steps (annotated stages) or none (unassigned work,
        // replays as decode): each event is kept once, by step or for the span.
        match step {
            Some(step) => self
                .step_classes
                .entry(step)
                .or_default()
                .push(class, start, end),
            None => self.classes.push(class, start, end),
        }
        self.events += 1;
        self.gpu_time = self.gpu_time + gpu.duration[row];
        self.rows.add(trace, row, categories);
        self.intervals.push((gpu.device[row], start, end));
        if let Some(step) = step {
            let span = self.step_spans.entry(step).or_insert((start, end));
            span.0 = span.0.min(start);
            span.1 = span.1.max(end);
            let time = self.step_times.entry(step).or_insert(Duration::ZERO);
            *time = *time + gpu.duration[row];
        }
    }

    /// Window and idle time, and their basis (see [`IdleBasis`]).
    fn idle(
        &self,
        busy_time: Duration,
        device_busy: &DeviceBusy,
    ) -> (IdleBasis, Duration, Duration) {
        if !self.step_spans.is_empty() {
            let window: Duration = self.step_spans.values().map(|(s, e)| *e - *s).sum();
            return (
                IdleBasis::StepWindows,
                window,
                (window - busy_time).clamp_non_negative(),
            );
        }
        let mut spans: FxHashMap<u32, (Timestamp, Timestamp)> = FxHashMap::default();
        for &(device, start, end) in &self.intervals {
            let span = spans.entry(device).or_insert((start, end));
            span.0 = span.0.min(start);
            span.1 = span.1.max(end);
        }
        if spans.is_empty() {
            return (IdleBasis::NotMeasured, Duration::ZERO, Duration::ZERO);
        }
        let window: Duration = spans.values().map(|(s, e)| *e - *s).sum();
        let busy: Duration = spans
            .iter()
            .map(|(&device, &(s, e))| device_busy.within(device, s, e))
            .sum();
        (
            IdleBasis::GpuSpan,
            window,
            (window - busy).clamp_non_negative(),
        )
    }

    fn finish(
        mut self,
        stage: StageKey,
        trace: &Trace,
        (inputs, device_busy): (BreakdownInputs<'_>, &DeviceBusy),
    ) -> StageSummary {
        let busy_time = union_length(&mut self.intervals);
        let (idle_basis, window, idle_time) = self.idle(busy_time, device_busy);
        let (categories, kernels) = self.rows.rows(trace, inputs.table);
        let decided = self.rows.decided();
        let mut step_times: Vec<(u32, Duration)> = self.step_times.into_iter().collect();
        step_times.sort_unstable_by_key(|&(step, _)| step);
        let (timeline, step_timelines) = timelines(self.step_classes, self.classes);
        StageSummary {
            stage,
            steps: self.steps,
            events: self.events,
            gpu_time: self.gpu_time,
            busy_time,
            idle_basis,
            window,
            idle_time,
            categories,
            kernels,
            decided,
            unrecorded_replays: 0,
            missing_work: NO_MISSING_WORK,
            step_gpu_times: step_times.into_iter().map(|(_, time)| time).collect(),
            timeline,
            step_timelines,
        }
    }
}

/// A stage's timeline (its steps' summed, or its span's without steps) and its steps', in
/// step order.
fn timelines(
    steps: FxHashMap<u32, ClassIntervals>,
    all: ClassIntervals,
) -> (Option<GpuTimeline>, Vec<GpuTimeline>) {
    if steps.is_empty() {
        return (all.timeline(), Vec::new());
    }
    let mut steps: Vec<(u32, ClassIntervals)> = steps.into_iter().collect();
    steps.sort_unstable_by_key(|&(step, _)| step);
    let step_timelines: Vec<GpuTimeline> = steps
        .into_iter()
        .filter_map(|(_, intervals)| intervals.timeline())
        .collect();
    let sum = step_timelines.iter().copied().reduce(GpuTimeline::plus);
    (sum, step_timelines)
}

/// No missing work: zero, known exactly.
const NO_MISSING_WORK: Range<Duration> = Range {
    low: Duration::ZERO,
    estimate: Some(Duration::ZERO),
    high: Some(Duration::ZERO),
};

/// Adds the missing work of short and empty replays to their stages (the stage of their
/// step; without step annotations decode, as their recorded kernels are), so that reports
/// can say how much of a stage's idle time is unrecorded work rather than idleness. A
/// replay's missing time is the estimate of its `missing_time` pass (at least, estimate,
/// at most); sums keep an unbounded upper end unbounded.
pub(crate) fn add_missing_work(breakdown: &mut StageBreakdown, replays: &[Replay], steps: &Steps) {
    for replay in replays {
        if !matches!(replay.status, ReplayStatus::Short | ReplayStatus::Empty) {
            continue;
        }
        let key = replay_stage(replay, steps, breakdown.method);
        if !breakdown.stages.iter().any(|s| s.stage == key) {
            breakdown.stages.push(StageSummary::empty(key));
            breakdown.stages.sort_by_key(|s| s.stage);
        }
        if let Some(summary) = breakdown.stages.iter_mut().find(|s| s.stage == key) {
            summary.add_missing(1, replay.missing_time);
        }
    }
}

/// The stage a replay's kernels count in: its step's stage; without step annotations
/// decode; a replay outside every step of an annotated trace is unassigned.
pub(crate) fn replay_stage(replay: &Replay, steps: &Steps, method: AssignmentMethod) -> StageKey {
    match (replay.step, method) {
        (Some(step), _) => StageKey::Stage(steps.steps[step].label.stage),
        (None, AssignmentMethod::ReplaysAsDecode) => StageKey::Stage(Stage::Decode),
        (None, AssignmentMethod::StepAnnotations) => StageKey::Unassigned,
    }
}

impl StageSummary {
    /// A stage with no events, steps or missing work.
    pub fn empty(stage: StageKey) -> Self {
        StageSummary {
            stage,
            steps: 0,
            events: 0,
            gpu_time: Duration::ZERO,
            busy_time: Duration::ZERO,
            idle_basis: IdleBasis::NotMeasured,
            window: Duration::ZERO,
            idle_time: Duration::ZERO,
            categories: Vec::new(),
            kernels: Vec::new(),
            decided: DecidedTimes::default(),
            unrecorded_replays: 0,
            missing_work: NO_MISSING_WORK,
            step_gpu_times: Vec::new(),
            timeline: None,
            step_timelines: Vec::new(),
        }
    }

    /// Counts `replays` more unrecorded replays and their missing time.
    pub(crate) fn add_missing(&mut self, replays: u32, missing: Range<Duration>) {
        self.unrecorded_replays += replays;
        self.missing_work = self.missing_work.plus(missing);
    }
}

/// Events and time per kernel name and category, and the part decided by op: the
/// category and kernel tables of a stage or a range.
#[derive(Debug, Default)]
pub(crate) struct RowSums {
    by_name: FxHashMap<(NameId, CategoryId), TimeCounts>,
    decided: DecidedTimes,
}

impl RowSums {
    /// Counts GPU event `row`.
    pub(crate) fn add(&mut self, trace: &Trace, row: usize, categories: &EventCategories) {
        let key = (trace.gpu.name[row], categories.category[row]);
        let entry = self.by_name.entry(key).or_default();
        entry.add(trace.gpu.duration[row], categories.by_op(row));
        self.decided
            .add(categories.decided_by[row], trace.gpu.duration[row]);
    }

    /// GPU time by what decided its category.
    pub(crate) fn decided(&self) -> DecidedTimes {
        self.decided
    }

    /// The category rows and the kernel rows, each by time descending.
    pub(crate) fn rows(
        &self,
        trace: &Trace,
        table: &KernelCategories,
    ) -> (Vec<TimeRow>, Vec<TimeRow>) {
        let names = table.names();
        let mut categories: Vec<TimeRow> = Vec::new();
        let mut category_rows: FxHashMap<CategoryId, usize> = FxHashMap::default();
        let mut kernels: Vec<TimeRow> = Vec::with_capacity(self.by_name.len());
        for (&(name, id), counts) in &self.by_name {
            let category = &names[id.index()];
            let row = counts.row(trace.name(name), category);
            let index = *category_rows.entry(id).or_insert_with(|| {
                categories.push(TimeCounts::default().row(category, category));
                categories.len() - 1
            });
            categories[index].add(&row);
            kernels.push(row);
        }
        sort_rows(&mut categories);
        sort_rows(&mut kernels);
        (categories, kernels)
    }
}

/// GPU time by what decided its category, indexed by [`DecidedBy::index`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DecidedTimes(pub [Duration; 7]);

impl DecidedTimes {
    /// Adds `duration` to `by`.
    pub fn add(&mut self, by: DecidedBy, duration: Duration) {
        self.0[by.index()] = self.0[by.index()] + duration;
    }

    /// The time `by` decided.
    pub fn get(&self, by: DecidedBy) -> Duration {
        self.0[by.index()]
    }

    /// Adds another sum to this one.
    pub fn merge(&mut self, other: &DecidedTimes) {
        for by in DecidedBy::ALL {
            self.add(by, other.get(by));
        }
    }
}

/// Events and time of one kernel name in one category, and the part decided by op.
#[derive(Debug, Default, Clone, Copy)]
struct TimeCounts {
    events: u64,
    time: Duration,
    events_by_op: u64,
    time_by_op: Duration,
}

impl TimeCounts {
    fn add(&mut self, duration: Duration, by_op: bool) {
        self.events += 1;
        self.time = self.time + duration;
        if by_op {
            self.events_by_op += 1;
            self.time_by_op = self.time_by_op + duration;
        }
    }

    fn row(self, name: &str, category: &str) -> TimeRow {
        TimeRow {
            name: name.to_owned(),
            category: category.to_owned(),
            events: self.events,
            time: self.time,
            events_by_op: self.events_by_op,
            time_by_op: self.time_by_op,
        }
    }
}

/// Merged busy intervals of one device, and the busy time before each.
type BusyIntervals = (Vec<(Timestamp, Timestamp)>, Vec<Duration>);

/// Per device, the union of every GPU event's interval, with running sums.
struct DeviceBusy {
    devices: FxHashMap<u32, BusyIntervals>,
}

impl DeviceBusy {
    fn new(trace: &Trace) -> Self {
        let gpu = &trace.gpu;
        Self::from_intervals(
            (0..gpu.len()).map(|row| (gpu.device[row], gpu.start[row], gpu.end(row))),
        )
    }

    fn from_intervals(intervals: impl Iterator<Item = (u32, Timestamp, Timestamp)>) -> Self {
        let mut per: FxHashMap<u32, Vec<(Timestamp, Timestamp)>> = FxHashMap::default();
        for (device, start, end) in intervals {
            per.entry(device).or_default().push((start, end));
        }
        let devices = per
            .into_iter()
            .map(|(device, mut spans)| {
                spans.sort_unstable();
                let mut merged: Vec<(Timestamp, Timestamp)> = Vec::with_capacity(spans.len());
                for (start, end) in spans {
                    match merged.last_mut() {
                        Some(last) if start <= last.1 => last.1 = last.1.max(end),
                        _ => merged.push((start, end)),
                    }
                }
                let mut sums = vec![Duration::ZERO];
                for (start, end) in &merged {
                    let before = sums.last().copied().unwrap_or(Duration::ZERO);
                    sums.push(before + (*end - *start));
                }
                (device, (merged, sums))
            })
            .collect();
        DeviceBusy { devices }
    }

    /// Busy time of `device` before `at`.
    fn before(&self, device: u32, at: Timestamp) -> Duration {
        let Some((merged, sums)) = self.devices.get(&device) else {
            return Duration::ZERO;
        };
        let i = merged.partition_point(|span| span.1 <= at);
        let partial = merged
            .get(i)
            .filter(|span| span.0 < at)
            .map_or(Duration::ZERO, |span| at - span.0);
        sums[i] + partial
    }

    /// Busy time of `device` between `start` and `end`.
    fn within(&self, device: u32, start: Timestamp, end: Timestamp) -> Duration {
        self.before(device, end) - self.before(device, start)
    }
}

/// By time descending, then name, so output is stable.
fn sort_rows(rows: &mut [TimeRow]) {
    rows.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| a.name.cmp(&b.name)));
}

/// Length of the union of intervals, per device, summed.
pub(crate) fn union_length(intervals: &mut [(u32, Timestamp, Timestamp)]) -> Duration {
    intervals.sort_unstable();
    let mut total = Duration::ZERO;
    let mut current: Option<(u32, Timestamp, Timestamp)> = None;
    for &(device, start, end) in intervals.iter() {
        match current {
            Some((d, s, e)) if d == device && start <= e => current = Some((d, s, e.max(end))),
            _ => {
                if let Some((_, s, e)) = current {
                    total = total + (e - s);
                }
                current = Some((device, start, end));
            }
        }
    }
    if let Some((_, s, e)) = current {
        total = total + (e - s);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_busy_counts_the_union_inside_a_span() {
        let t = Timestamp::from_nanos;
        let busy = DeviceBusy::from_intervals(
            [(0, 10), (5, 15), (20, 25)]
                .into_iter()
                .map(|(start, end)| (0, t(start), t(end))),
        );
        assert_eq!(busy.within(0, t(0), t(30)).as_nanos(), 20);
        assert_eq!(busy.within(0, t(12), t(22)).as_nanos(), 3 + 2);
        assert_eq!(busy.within(1, t(0), t(30)).as_nanos(), 0);
    }

    #[test]
    fn union_merges_overlaps_per_device() {
        let t = Timestamp::from_nanos;
        let mut intervals = vec![
            (0, t(0), t(10)),
            (0, t(5), t(15)),
            (0, t(20), t(25)),
            (1, t(0), t(10)),
        ];
        assert_eq!(union_length(&mut intervals).as_nanos(), 15 + 5 + 10);
    }
}
