//! The JSON document (`stepscope analyze --json`), schema version 2 (docs/json-schema.md).
//! Every renderer reads these types, so the terminal, CSV and JSON outputs cannot disagree.
//!
//! Times are microseconds (`*_us`, floats), as in Chrome traces and the PyTorch profiler.
//! Shares are fractions in `[0, 1]`. Fields are only ever added within a schema version.
//! Text taken from a trace (kernel names, labels) has its control characters escaped
//! (`\u{1b}`), so no report can be made to move a cursor or forge a line.

mod anatomy;
mod coverage;
pub mod diff;
pub mod diff_rates;
pub mod efficiency;
mod replays;
mod timeline;
mod verdict;

pub use anatomy::{
    GpuTimelineTimes, IdleCausesReport, LaunchReport, SpreadUs, StageIdleReport, StreamIdleReport,
};
pub use coverage::{
    Coverage, CoverageNumbers, CureWire, EvidenceWire, ExpectedSource, Finding, Graph,
    HOW_TO_SETTLE, MAX_FINDINGS, MultiKernel, PatternDetailWire, PatternWire, UnverifiedWire,
    count,
};
pub use replays::ReplayRecord;
pub use timeline::{TIMELINE_BINS, TIMELINE_CLASSES, TIMELINE_STAGES, Timeline, TimelineRow};
pub use verdict::{OverallVerdict, overall_verdict};

use serde::Serialize;
use stepscope_analysis::DecidedBy;
use stepscope_analysis::RangeBreakdown;
use stepscope_analysis::RuntimeAdvice;
use stepscope_analysis::TraceAnalysis;
use stepscope_analysis::Verdict;
use stepscope_analysis::{
    AssignmentMethod, DecidedTimes, IdleBasis, StageBreakdown, StageKey, StageSummary, TimeRow,
};
use stepscope_model::patterns::RecordingPattern;
use stepscope_model::switches::{CUDA_MISSING_KERNELS_NOTE, CUDA_NOTE, SwitchAdvice};
use stepscope_model::{DamageKind, Duration, GpuEventKind, Trace};

/// Version of this document's layout.
pub const SCHEMA_VERSION: u32 = 4;

fn micros(duration: Duration) -> f64 {
    (duration.as_nanos() as f64 / 1e3 * 1e3).round() / 1e3
}

fn share(part: Duration, whole: Duration) -> f64 {
    if whole.as_nanos() <= 0 {
        0.0
    } else {
        part.as_nanos() as f64 / whole.as_nanos() as f64
    }
}

/// `text` with control characters (C0, DEL, C1) escaped as `\u{..}`: text from a trace is
/// untrusted, and a terminal obeys what it prints. The rule is
/// [`stepscope_model::text::escape_controls`], the one every command uses.
pub fn text(raw: &str) -> String {
    stepscope_model::text::escape_controls(raw).into_owned()
}

/// The whole document.
#[derive(Debug, Clone, Serialize)]
pub struct Document {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `stepscope` and its version.
    pub tool: Tool,
    /// Worst verdict over all files ([`overall_verdict`]); `unreadable` when an input file
    /// could not be read.
    pub verdict: OverallVerdict,
    /// Whether any file was read only up to a break (`--allow-truncated`).
    pub partial: bool,
    /// Input files that could not be read, with the error.
    pub failed_files: Vec<FailedFile>,
    /// What the inputs disagree on or repeat (the same file twice, two files of one rank,
    /// different world sizes or runtimes, a capture that matches no graph).
    pub warnings: Vec<String>,
    /// One entry per input file read.
    pub files: Vec<FileReport>,
    /// All files together, when there is more than one.
    pub combined: Option<Combined>,
}

/// An input file that could not be read.
#[derive(Debug, Clone, Serialize)]
pub struct FailedFile {
    /// Path as given.
    pub path: String,
    /// The error, with its causes and its hint, as the command prints it.
    pub error: String,
    /// What went wrong, with its causes, without the hint.
    pub message: String,
    /// How to fix it (`null` when the error does not say).
    pub hint: Option<String>,
}

impl FailedFile {
    /// The fixes of `failed` files, each once, in the order the files came.
    pub fn distinct_hints(failed: &[FailedFile]) -> Vec<&str> {
        let mut hints: Vec<&str> = Vec::new();
        for hint in failed.iter().filter_map(|f| f.hint.as_deref()) {
            if !hints.contains(&hint) {
                hints.push(hint);
            }
        }
        hints
    }
}

/// Who wrote the document.
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    /// Always `stepscope`.
    pub name: &'static str,
    /// Crate version.
    pub version: &'static str,
}

impl Tool {
    /// This build.
    pub fn current() -> Self {
        Tool {
            name: "stepscope",
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// Results for all files together.
#[derive(Debug, Clone, Serialize)]
pub struct Combined {
    /// Input files, read or not.
    pub files: usize,
    /// Of them, files that could not be read.
    pub failed_files: usize,
    /// Of them, files read that hold no events.
    pub files_without_events: usize,
    /// Of them, files read only up to a break (`--allow-truncated`).
    pub partial_files: usize,
    /// The verdict of every input together ([`overall_verdict`]): never `complete` when a
    /// file could not be read, holds no events or was read only in part.
    pub verdict: OverallVerdict,
    /// Summed replay counts.
    pub replay_coverage: CoverageNumbers,
    /// Summed breakdown.
    pub breakdown: Option<Breakdown>,
    /// The files' `--range` results summed per annotation name; `null` without `--range`.
    pub ranges: Option<Ranges>,
}

/// One input file.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// Path as given.
    pub path: String,
    /// The format it was read as (`kineto-json`, `rocprof-json`, `rocprof-csv`, `rpd`,
    /// `rpd-json`, `nsys-sqlite`).
    pub format: Option<&'static str>,
    /// `distributedInfo.rank`.
    pub rank: Option<u32>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<u32>,
    /// GPU names from the header.
    pub devices: Vec<String>,
    /// Runtime from the header.
    pub runtime: Option<Runtime>,
    /// `hip`, `cuda` (by runtime version or device names) or `unknown`.
    pub platform: &'static str,
    /// Capture traces whose graphs gave this file's replays their expected sizes:
    /// `--capture`, and those found in a `capture_traces/` folder beside it.
    pub capture_traces: Vec<String>,
    /// What was read.
    pub events: EventNumbers,
    /// What the reader skipped or did not know.
    pub import: Import,
    /// Events refused for bad data, and the replays they touch.
    pub damage: Damage,
    /// Replay coverage and verdict.
    pub replay_coverage: Coverage,
    /// What to change so every replay is recorded.
    pub advice: Advice,
    /// Step annotations found.
    pub steps: StepNumbers,
    /// Per-stage breakdown.
    pub breakdown: Breakdown,
    /// Where the whole trace's GPU time went, over the GPU work it links to a launch call;
    /// `null` without GPU events.
    pub gpu_timeline: Option<GpuTimelineTimes>,
    /// GPU time of work linked to no launch call in a trace that has launch calls (launched
    /// before the profiler started, or from a thread it did not trace): not in
    /// `gpu_timeline`.
    pub unlinked_gpu_time_us: f64,
    /// Each GPU stream's idle time by cause: host wait, kernel wait, other (HTA's
    /// categories).
    pub idle_causes: IdleCausesReport,
    /// Launch statistics: CPU time, launch delay and GPU time of eager launches and graph
    /// replays.
    pub launches: LaunchReport,
    /// Work launched inside matching host annotations (`--range`); `null` without it.
    pub ranges: Option<Ranges>,
    /// Per op and shapes: FLOPs, bytes, achieved rates, the roofline.
    pub efficiency: efficiency::EfficiencyReport,
    /// The replays on a launch-time axis, aggregated (the HTML report's timeline; not in
    /// the JSON document).
    #[serde(skip)]
    pub timeline: Timeline,
    /// Every replay with its status and evidence (the Parquet `replays` table; not in the
    /// JSON document). `None` unless set with [`ReplayRecord::all`]: only `--parquet`
    /// needs them.
    #[serde(skip)]
    pub replays: Option<Vec<ReplayRecord>>,
}

/// The `--range` results of one file.
#[derive(Debug, Clone, Serialize)]
pub struct Ranges {
    /// The pattern, as given.
    pub pattern: String,
    /// Per matching annotation name, in order of first appearance.
    pub ranges: Vec<Range>,
    /// When no name matches: up to five host annotation names of the trace.
    pub other_names: Vec<String>,
}

/// One matching annotation name.
#[derive(Debug, Clone, Serialize)]
pub struct Range {
    /// The annotation's name.
    pub name: String,
    /// Host instances.
    pub instances: u32,
    /// Sum of the instances' host durations.
    pub cpu_time_us: f64,
    /// Sum of the durations of its device-side mirrors (`gpu_user_annotation`); `null`
    /// when the trace has none.
    pub gpu_mirror_time_us: Option<f64>,
    /// GPU events launched inside.
    pub events: u64,
    /// Sum of their durations.
    pub gpu_time_us: f64,
    /// Union of their intervals per device.
    pub busy_time_us: f64,
    /// GPU time by what decided its category.
    pub categorised_by: CategorisedBy,
    /// Per category; `share` is of the range's GPU time.
    pub categories: Vec<Row>,
    /// Top kernels.
    pub kernels: Vec<Row>,
}

impl Ranges {
    /// From the analysis's ranges, keeping the `top` kernels per range.
    pub fn new(breakdown: &RangeBreakdown, top: usize) -> Self {
        Ranges {
            pattern: text(&breakdown.pattern),
            ranges: breakdown
                .ranges
                .iter()
                .map(|r| Range {
                    name: text(&r.name),
                    instances: r.instances,
                    cpu_time_us: micros(r.cpu_time),
                    gpu_mirror_time_us: r.gpu_mirror_time.map(micros),
                    events: r.events,
                    gpu_time_us: micros(r.gpu_time),
                    busy_time_us: micros(r.busy_time),
                    categorised_by: CategorisedBy::new(&r.decided),
                    categories: time_rows(&r.categories, r.gpu_time, usize::MAX),
                    kernels: kernel_rows(&r.kernels, r.gpu_time, top),
                })
                .collect(),
            other_names: breakdown.other_names.iter().map(|n| text(n)).collect(),
        }
    }
}

/// The runtime that recorded the trace.
#[derive(Debug, Clone, Serialize)]
pub struct Runtime {
    /// `hip` or `cuda`.
    pub kind: &'static str,
    /// `major.minor`.
    pub version: String,
    /// The header value as written.
    pub header_value: u64,
}

/// Bad data in the trace: not a runtime symptom.
#[derive(Debug, Clone, Serialize)]
pub struct Damage {
    /// Events refused at import, per kind (`negative_duration`, `invalid_time`,
    /// `absurd_time`, `unknown_phase`).
    pub refused_events: std::collections::BTreeMap<&'static str, u64>,
    /// Refused GPU events whose correlation id is a graph replay's.
    pub refused_in_replays: u64,
    /// Graph launch calls refused.
    pub refused_launches: u32,
    /// Host calls sharing a correlation id with an earlier one.
    pub shared_correlations: u64,
    /// Replays that lost events to bad data.
    pub damaged_replays: u64,
    /// What the verdict could not check, one sentence each: refused GPU events without a
    /// correlation, GPU work naming a graph with no launch left, events refused where no
    /// replay was found. `--strict` fails on any.
    pub unchecked: Vec<String>,
}

/// Event counts.
#[derive(Debug, Clone, Serialize)]
pub struct EventNumbers {
    /// Entries of `traceEvents`, every phase.
    pub total: u64,
    /// Kernels.
    pub kernels: u64,
    /// Memcpys.
    pub memcpys: u64,
    /// Memsets.
    pub memsets: u64,
    /// Host runtime/driver calls.
    pub runtime_calls: u64,
    /// Host annotations.
    pub annotations: u64,
    /// CPU operators.
    pub cpu_ops: u64,
    /// Flow events.
    pub flows: u64,
}

/// Import statistics.
#[derive(Debug, Clone, Serialize)]
pub struct Import {
    /// Whether results are partial (the input broke off).
    pub partial: bool,
    /// Where it broke off.
    pub truncated_at_byte: Option<u64>,
    /// Named counters.
    pub counters: Vec<Counter>,
    /// Unknown categories with counts.
    pub unknown_categories: std::collections::BTreeMap<String, u64>,
    /// Unknown fields with counts.
    pub unknown_fields: std::collections::BTreeMap<String, u64>,
}

/// One import counter.
#[derive(Debug, Clone, Serialize)]
pub struct Counter {
    /// Name.
    pub name: &'static str,
    /// `info`, `data_loss` or `error`.
    pub severity: &'static str,
    /// Count.
    pub count: u64,
    /// What it counts.
    pub description: &'static str,
}

/// What to change so the profiler records every replay.
#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    /// What the header says about the runtime.
    pub runtime: String,
    /// Whether the verdict calls for this advice: short or empty replays (the runtime
    /// symptom). Never for damaged data, never switches for CUDA.
    pub applies: bool,
    /// Switches to set in the server's environment at start (only when `applies`, on HIP).
    pub switches: Vec<Switch>,
    /// Why these, or why none.
    pub reason: String,
}

/// One switch.
#[derive(Debug, Clone, Serialize)]
pub struct Switch {
    /// Variable.
    pub variable: &'static str,
    /// Value.
    pub value: &'static str,
    /// Runtime line.
    pub runtime_line: &'static str,
    /// Effect.
    pub effect: &'static str,
    /// Whether GPU runs have confirmed it.
    pub measured: bool,
    /// Notes.
    pub notes: &'static str,
}

/// Steps found.
#[derive(Debug, Clone, Serialize)]
pub struct StepNumbers {
    /// Framework whose annotations were used.
    pub framework: Option<&'static str>,
    /// Steps per `framework:mode`.
    pub counts: std::collections::BTreeMap<String, usize>,
}

/// Per-stage breakdown.
#[derive(Debug, Clone, Serialize)]
pub struct Breakdown {
    /// `step_annotations` or `replays_as_decode`.
    pub method: AssignmentMethod,
    /// All GPU time.
    pub total_gpu_time_us: f64,
    /// Share of GPU time no step claimed.
    pub unassigned_share: f64,
    /// Per stage.
    pub stages: Vec<Stage>,
}

/// One stage.
#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    /// `prefill`, `decode`, `mixed`, `other`, `step` or `unassigned`.
    pub stage: StageKey,
    /// Steps.
    pub steps: u32,
    /// GPU events.
    pub events: u64,
    /// Sum of durations.
    pub gpu_time_us: f64,
    /// Share of the file's GPU time.
    pub share_of_total: f64,
    /// Union of intervals per device.
    pub busy_time_us: f64,
    /// What the window spans: `step_windows`, `gpu_span`, `mixed` or `not_measured`.
    pub idle_basis: IdleBasis,
    /// Step windows, or the stage's GPU span per device.
    pub window_us: f64,
    /// Window minus busy.
    pub idle_time_us: f64,
    /// Short and empty graph replays of this stage.
    pub unrecorded_replays: u32,
    /// GPU time of their unrecorded nodes, at least: work inside what reads as idle time.
    pub missing_work_low_us: f64,
    /// Best estimate of it; `null` where the trace gives none.
    pub missing_work_us: Option<f64>,
    /// At most; `null` when unbounded.
    pub missing_work_high_us: Option<f64>,
    /// GPU time by what decided its category.
    pub categorised_by: CategorisedBy,
    /// Where the GPU's time went over the stage's step windows (summed), or its GPU span
    /// without steps; `null` without GPU events.
    pub timeline: Option<GpuTimelineTimes>,
    /// Per category.
    pub categories: Vec<Row>,
    /// Top kernels.
    pub kernels: Vec<Row>,
}

/// GPU time by what decided its category: the launching op, or the kernel name and why the
/// op did not (docs/categories.md).
#[derive(Debug, Clone, Serialize)]
pub struct CategorisedBy {
    /// The launching CPU op matched an `[[op]]` rule.
    pub launching_op_us: f64,
    /// Kernels of graph replays whose name the graph's capture launched from ops of one
    /// category.
    pub capturing_op_us: f64,
    /// Memcpy and memset events (always `memcpy_memset`).
    pub memcpy_memset_us: f64,
    /// Kernels of graph replays (by name).
    pub graph_replay_us: f64,
    /// Kernels no runtime call launched: orphans (by name).
    pub no_launch_call_us: f64,
    /// Kernels launched outside any CPU op (by name).
    pub no_launching_op_us: f64,
    /// Kernels whose launching op has no rule (by name).
    pub op_without_rule_us: f64,
}

impl CategorisedBy {
    /// From the analysis's sums.
    pub fn new(decided: &DecidedTimes) -> Self {
        let us = |by: DecidedBy| micros(decided.get(by));
        CategorisedBy {
            launching_op_us: us(DecidedBy::LaunchingOp),
            capturing_op_us: us(DecidedBy::CapturingOp),
            memcpy_memset_us: us(DecidedBy::MemoryEvent),
            graph_replay_us: us(DecidedBy::GraphReplay),
            no_launch_call_us: us(DecidedBy::NoLaunchCall),
            no_launching_op_us: us(DecidedBy::NoLaunchingOp),
            op_without_rule_us: us(DecidedBy::OpWithoutRule),
        }
    }

    /// The parts in report order, with a short label each; the first two were decided by
    /// an op, the rest by kernel name.
    pub fn parts(&self) -> [(&'static str, f64); 7] {
        [
            ("launching op", self.launching_op_us),
            ("capturing op", self.capturing_op_us),
            ("memcpy/memset", self.memcpy_memset_us),
            ("graph replays", self.graph_replay_us),
            ("no launch call", self.no_launch_call_us),
            ("no launching op", self.no_launching_op_us),
            ("ops without a rule", self.op_without_rule_us),
        ]
    }
}

/// A category or kernel row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Category or kernel name.
    pub name: String,
    /// A kernel row's short id ([`crate::kernel_id`]); absent on category rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_id: Option<String>,
    /// Category.
    pub category: String,
    /// GPU events.
    pub events: u64,
    /// Sum of durations.
    pub time_us: f64,
    /// Share of the stage's GPU time.
    pub share: f64,
    /// Mean duration.
    pub mean_us: f64,
    /// Of `events`, those whose launching CPU op decided the category.
    pub events_by_op: u64,
    /// Of `time_us`, the time of the events whose launching CPU op decided the category;
    /// the rest was decided by the kernel's name.
    pub time_by_op_us: f64,
}

impl Breakdown {
    /// From an analysis breakdown, keeping the `top` kernels per stage.
    pub fn new(breakdown: &StageBreakdown, top: usize) -> Self {
        Breakdown {
            method: breakdown.method,
            total_gpu_time_us: micros(breakdown.total_gpu_time),
            unassigned_share: breakdown.unassigned_share(),
            stages: breakdown
                .stages
                .iter()
                .map(|s| stage(s, breakdown.total_gpu_time, top))
                .collect(),
        }
    }
}

/// The first `limit` kernel rows, shares of `whole`, each with its id.
fn kernel_rows(rows: &[TimeRow], whole: Duration, limit: usize) -> Vec<Row> {
    let mut out = time_rows(rows, whole, limit);
    for (row, source) in out.iter_mut().zip(rows) {
        row.kernel_id = Some(crate::kernel_id::kernel_id(&source.name));
    }
    out
}

/// The first `limit` rows, shares of `whole`.
fn time_rows(rows: &[TimeRow], whole: Duration, limit: usize) -> Vec<Row> {
    rows.iter()
        .take(limit)
        .map(|r| Row {
            name: text(&r.name),
            kernel_id: None,
            category: r.category.clone(),
            events: r.events,
            time_us: micros(r.time),
            share: share(r.time, whole),
            mean_us: if r.events == 0 {
                0.0
            } else {
                micros(r.time) / r.events as f64
            },
            events_by_op: r.events_by_op,
            time_by_op_us: micros(r.time_by_op),
        })
        .collect()
}

fn stage(summary: &StageSummary, total: Duration, top: usize) -> Stage {
    let rows = |rows: &[TimeRow], limit: usize| time_rows(rows, summary.gpu_time, limit);
    Stage {
        stage: summary.stage,
        steps: summary.steps,
        events: summary.events,
        gpu_time_us: micros(summary.gpu_time),
        share_of_total: share(summary.gpu_time, total),
        busy_time_us: micros(summary.busy_time),
        idle_basis: summary.idle_basis,
        window_us: micros(summary.window),
        idle_time_us: micros(summary.idle_time),
        unrecorded_replays: summary.unrecorded_replays,
        missing_work_low_us: micros(summary.missing_work.low),
        missing_work_us: summary.missing_work.estimate.map(micros),
        missing_work_high_us: summary.missing_work.high.map(micros),
        categorised_by: CategorisedBy::new(&summary.decided),
        timeline: summary.timeline.as_ref().map(GpuTimelineTimes::new),
        categories: rows(&summary.categories, usize::MAX),
        kernels: kernel_rows(&summary.kernels, summary.gpu_time, top),
    }
}

impl FileReport {
    /// Builds one file's report.
    pub fn new(path: &str, trace: &Trace, analysis: &TraceAnalysis, top: usize) -> Self {
        let count =
            |kind: GpuEventKind| trace.gpu.kind.iter().filter(|k| **k == kind).count() as u64;
        FileReport {
            path: text(path),
            format: trace.metadata.format,
            rank: trace.metadata.rank,
            world_size: trace.metadata.world_size,
            devices: trace
                .metadata
                .device_names
                .iter()
                .map(|d| text(d))
                .collect(),
            runtime: runtime(&analysis.advice),
            platform: platform(&analysis.advice),
            capture_traces: Vec::new(),
            events: EventNumbers {
                total: trace.counts.events,
                kernels: count(GpuEventKind::Kernel),
                memcpys: count(GpuEventKind::Memcpy),
                memsets: count(GpuEventKind::Memset),
                runtime_calls: trace.runtime.len() as u64,
                annotations: trace.annotations.len() as u64,
                cpu_ops: trace.counts.cpu_ops,
                flows: trace.flows.len() as u64,
            },
            import: import(trace),
            damage: damage(trace, analysis),
            replay_coverage: coverage::coverage(trace, analysis),
            advice: advice(&analysis.advice, empty_replays(analysis)),
            steps: StepNumbers {
                framework: analysis.steps.framework.map(|f| f.as_str()),
                counts: analysis
                    .steps
                    .counts_by_key()
                    .into_iter()
                    .map(|(k, n)| (text(&k), n))
                    .collect(),
            },
            breakdown: Breakdown::new(&analysis.breakdown, top),
            gpu_timeline: analysis.timeline.as_ref().map(GpuTimelineTimes::new),
            unlinked_gpu_time_us: micros(analysis.unlinked_gpu_time),
            idle_causes: IdleCausesReport::new(&analysis.idle_causes),
            launches: LaunchReport::new(&analysis.launches.summary()),
            ranges: analysis.ranges.as_ref().map(|r| Ranges::new(r, top)),
            efficiency: efficiency::EfficiencyReport::new(&analysis.efficiency),
            timeline: Timeline::new(trace, analysis),
            replays: None,
        }
    }
}

fn damage(trace: &Trace, analysis: &TraceAnalysis) -> Damage {
    let coverage = &analysis.coverage;
    Damage {
        refused_events: DamageKind::ALL
            .iter()
            .map(|k| (k.as_str(), trace.damaged.count(*k) as u64))
            .filter(|(_, n)| *n > 0)
            .collect(),
        refused_in_replays: coverage
            .replays
            .iter()
            .filter_map(|r| r.damage)
            .map(|d| u64::from(d.refused_events))
            .sum(),
        refused_launches: coverage.refused_launches,
        shared_correlations: coverage.duplicate_correlations,
        damaged_replays: u64::from(coverage.totals.damaged_replays),
        unchecked: analysis.unchecked.reasons(),
    }
}

fn import(trace: &Trace) -> Import {
    let stats = &trace.stats;
    Import {
        partial: stats.is_partial(),
        truncated_at_byte: stats.truncated_at_byte,
        counters: stats
            .counters
            .iter()
            .map(|(name, c)| Counter {
                name,
                severity: c.severity.as_str(),
                count: c.count,
                description: c.description,
            })
            .collect(),
        unknown_categories: stats.unknown_categories.clone(),
        unknown_fields: stats.unknown_fields.clone(),
    }
}

fn runtime(advice: &RuntimeAdvice) -> Option<Runtime> {
    match advice {
        RuntimeAdvice::Hip { version, .. } => Some(Runtime {
            kind: "hip",
            version: format!("{}.{}", version.major, version.minor),
            header_value: u64::from(version.major) * 10_000_000
                + u64::from(version.minor) * 100_000
                + u64::from(version.build),
        }),
        RuntimeAdvice::Cuda {
            version: Some(version),
        } => Some(Runtime {
            kind: "cuda",
            version: format!("{}.{}", version / 1000, (version % 1000) / 10),
            header_value: *version,
        }),
        _ => None,
    }
}

fn platform(advice: &RuntimeAdvice) -> &'static str {
    match advice {
        RuntimeAdvice::Hip { .. } | RuntimeAdvice::AmdDevices { .. } => "hip",
        RuntimeAdvice::Cuda { .. } => "cuda",
        RuntimeAdvice::Unknown => "unknown",
    }
}

fn switches(advice: &SwitchAdvice) -> Vec<Switch> {
    advice
        .switches
        .iter()
        .map(|s| Switch {
            variable: s.variable,
            value: s.value,
            runtime_line: s.runtime_line,
            effect: s.effect,
            measured: s.measured,
            notes: s.notes,
        })
        .collect()
}

/// The runtime as the report names it.
fn runtime_text(advice: &RuntimeAdvice) -> String {
    match advice {
        RuntimeAdvice::Hip { version, .. } => format!(
            "HIP runtime {}.{} (build {})",
            version.major, version.minor, version.build
        ),
        RuntimeAdvice::AmdDevices { .. } => {
            "a HIP runtime (AMD devices; no runtime version in the trace header)".to_owned()
        }
        RuntimeAdvice::Cuda { version: Some(v) } => {
            format!("CUDA runtime {}.{}", v / 1000, (v % 1000) / 10)
        }
        RuntimeAdvice::Cuda { version: None } => {
            "CUDA (NVIDIA devices; no runtime version in the trace header)".to_owned()
        }
        RuntimeAdvice::Unknown => {
            "unknown (no runtime version or device names in the trace header)".to_owned()
        }
    }
}

/// Whether whole replays went unrecorded for no other reason found (the symptom the
/// runtime switches cure), or the verdict is damage.
fn empty_replays(analysis: &TraceAnalysis) -> Option<bool> {
    if matches!(
        analysis.coverage.verdict,
        Verdict::Damaged | Verdict::Unavailable
    ) {
        return None;
    }
    Some(
        analysis
            .patterns
            .iter()
            .any(|p| p.pattern == RecordingPattern::EmptyReplays),
    )
}

fn advice(advice: &RuntimeAdvice, symptom: Option<bool>) -> Advice {
    let runtime = runtime_text(advice);
    let Some(symptom) = symptom else {
        return Advice {
            runtime,
            applies: false,
            switches: Vec::new(),
            reason: "the trace holds bad data (see damage) or cannot show its replays (see the verdict): that is the file, not a runtime symptom, and no switch repairs it; re-export or re-record the trace".to_owned(),
        };
    };
    let (switch_advice, cuda) = match advice {
        RuntimeAdvice::Hip { advice, .. } | RuntimeAdvice::AmdDevices { advice } => {
            (Some(advice.clone()), false)
        }
        RuntimeAdvice::Cuda { .. } => (None, true),
        RuntimeAdvice::Unknown => (
            Some(stepscope_model::switches::advice_for_text("unknown")),
            false,
        ),
    };
    let reason = match (&switch_advice, cuda, symptom) {
        (_, true, true) => CUDA_MISSING_KERNELS_NOTE.to_owned(),
        (_, true, false) => CUDA_NOTE.to_owned(),
        (Some(a), false, _) if matches!(advice, RuntimeAdvice::Unknown) => format!(
            "if the trace was recorded on a HIP runtime, set all three switches (a runtime ignores variables it does not define); {}",
            a.reason
        ),
        (Some(a), false, _) => a.reason.clone(),
        (None, false, _) => String::new(),
    };
    Advice {
        runtime,
        applies: symptom,
        switches: match (&switch_advice, symptom) {
            (Some(a), true) => switches(a),
            _ => Vec::new(),
        },
        reason,
    }
}
