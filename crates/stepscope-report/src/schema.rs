//! The JSON document (`stepscope analyze --json`), schema version 1. Every renderer reads
//! these types, so the terminal, CSV and JSON outputs cannot disagree.
//!
//! Times are microseconds (`*_us`, floats), as in Chrome traces and the PyTorch profiler.
//! Shares are fractions in `[0, 1]`. Fields are only ever added within a schema version.

use serde::Serialize;
use stepscope_analysis::TraceAnalysis;
use stepscope_analysis::passes::replay_coverage::{
    CoverageTotals, ExpectedSource, GraphCoverage, Replay, ReplayCoverage, ReplayStatus,
};
use stepscope_analysis::passes::runtime_advice::RuntimeAdvice;
use stepscope_analysis::passes::stage_breakdown::{
    AssignmentMethod, StageBreakdown, StageSummary, TimeRow,
};
use stepscope_model::{Duration, GpuEventKind, Trace};

/// Version of this document's layout.
pub const SCHEMA_VERSION: u32 = 1;

/// Findings listed per file at most; counts always cover all of them.
pub const MAX_FINDINGS: usize = 200;

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

/// The whole document.
#[derive(Debug, Clone, Serialize)]
pub struct Document {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `stepscope` and its version.
    pub tool: Tool,
    /// Worst verdict over all files.
    pub verdict: &'static str,
    /// Whether any file was read only up to a break (`--allow-truncated`).
    pub partial: bool,
    /// One entry per input file.
    pub files: Vec<FileReport>,
    /// All files together, when there is more than one.
    pub combined: Option<Combined>,
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
    /// Files combined.
    pub files: usize,
    /// Worst verdict.
    pub verdict: &'static str,
    /// Summed replay counts.
    pub replay_coverage: CoverageNumbers,
    /// Summed breakdown.
    pub breakdown: Option<Breakdown>,
}

/// One input file.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// Path as given.
    pub path: String,
    /// `distributedInfo.rank`.
    pub rank: Option<u32>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<u32>,
    /// GPU names from the header.
    pub devices: Vec<String>,
    /// Runtime from the header.
    pub runtime: Option<Runtime>,
    /// What was read.
    pub events: EventNumbers,
    /// What the reader skipped or did not know.
    pub import: Import,
    /// Replay coverage and verdict.
    pub replay_coverage: Coverage,
    /// Switch advice.
    pub advice: Advice,
    /// Step annotations found.
    pub steps: StepNumbers,
    /// Per-stage breakdown.
    pub breakdown: Breakdown,
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

/// Replay coverage of one file.
#[derive(Debug, Clone, Serialize)]
pub struct Coverage {
    /// `complete`, `incomplete` or `no-replays`.
    pub verdict: &'static str,
    /// Counts and ratios.
    #[serde(flatten)]
    pub numbers: CoverageNumbers,
    /// Recorded GPU time of the whole file.
    pub recorded_gpu_time_us: f64,
    /// Missing replay time / (recorded GPU time + missing).
    pub missing_share: f64,
    /// Graph launches under stream capture (not replays).
    pub launches_under_capture: u32,
    /// Kernels whose correlation matches no host call.
    pub orphan_kernels: u64,
    /// Memcpys/memsets whose correlation matches no host call.
    pub orphan_transfers: u64,
    /// Eager launches with more than one kernel, per API.
    pub multi_kernel_launches: Vec<MultiKernel>,
    /// Per graph.
    pub graphs: Vec<Graph>,
    /// Problem replays (at most [`MAX_FINDINGS`]).
    pub findings: Vec<Finding>,
}

/// Replay counts and ratios.
#[derive(Debug, Clone, Serialize)]
pub struct CoverageNumbers {
    /// Replays.
    pub replays: u32,
    /// Replays with ≥ 1 recorded node.
    pub recorded_replays: u32,
    /// Replays with every node.
    pub complete_replays: u32,
    /// Replays with some nodes missing.
    pub short_replays: u32,
    /// Replays with none.
    pub empty_replays: u32,
    /// Replays in a different order than the reference.
    pub order_mismatches: u32,
    /// Replays whose kernels arrived after the next step ended.
    pub deferred_replays: u32,
    /// `recorded_replays / replays`.
    pub coverage: f64,
    /// Recorded / expected nodes (over replays with a known expectation).
    pub completeness: f64,
    /// Recorded nodes.
    pub recorded_nodes: u64,
    /// Expected nodes.
    pub expected_nodes: u64,
    /// Replays whose expected node count is unknown.
    pub unknown_expected_replays: u32,
    /// Estimated GPU time of the nodes not recorded.
    pub missing_gpu_time_us: f64,
}

impl CoverageNumbers {
    /// From analysis totals.
    pub fn new(t: &CoverageTotals) -> Self {
        CoverageNumbers {
            replays: t.replays,
            recorded_replays: t.recorded_replays,
            complete_replays: t.complete_replays,
            short_replays: t.short_replays,
            empty_replays: t.empty_replays,
            order_mismatches: t.order_mismatches,
            deferred_replays: t.deferred_replays,
            coverage: t.coverage(),
            completeness: t.completeness(),
            recorded_nodes: t.recorded_nodes,
            expected_nodes: t.expected_nodes,
            unknown_expected_replays: t.unknown_expected,
            missing_gpu_time_us: micros(t.missing_time),
        }
    }
}

/// One API's multi-kernel eager launches.
#[derive(Debug, Clone, Serialize)]
pub struct MultiKernel {
    /// API name.
    pub api: String,
    /// Calls with more than one kernel.
    pub launches: u32,
    /// Most GPU events from one call.
    pub max_events: u32,
}

/// One graph's coverage.
#[derive(Debug, Clone, Serialize)]
pub struct Graph {
    /// Graph number (1-based in order of first replay); `null` for replays of unknown graph.
    pub graph: Option<usize>,
    /// `graph id` from the trace.
    pub graph_id: Option<u64>,
    /// First kernel of the reference order.
    pub first_kernel: Option<String>,
    /// Expected nodes per replay.
    pub expected_nodes_per_replay: Option<u32>,
    /// `capture_trace`, `reference_replay` or `unknown`.
    pub expected_source: &'static str,
    /// GPU time of the reference replay.
    pub reference_time_us: f64,
    /// Counts and ratios.
    #[serde(flatten)]
    pub numbers: CoverageNumbers,
}

/// A replay with a problem.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// `ReplayWithoutKernels`, `ShortReplay`, `ReplayOrderMismatch` or `DeferredKernelBurst`.
    pub kind: &'static str,
    /// Replay number (0-based, launch order).
    pub replay: usize,
    /// Host time of its launch.
    pub launch_ts_us: f64,
    /// Its step's label.
    pub step: Option<String>,
    /// Its graph number.
    pub graph: Option<usize>,
    /// Recorded nodes.
    pub recorded_nodes: u32,
    /// Expected nodes.
    pub expected_nodes: Option<u32>,
    /// Evidence for the graph it was matched to.
    pub evidence: Option<String>,
}

/// Switch advice.
#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    /// What the header says about the runtime.
    pub runtime: String,
    /// Switches to set in the server's environment at start.
    pub switches: Vec<Switch>,
    /// Why these.
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
    pub method: &'static str,
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
    /// `prefill`, `decode`, `mixed`, `other` or `unassigned`.
    pub stage: &'static str,
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
    /// Step windows.
    pub window_us: f64,
    /// Window minus busy.
    pub idle_time_us: f64,
    /// Per category.
    pub categories: Vec<Row>,
    /// Top kernels.
    pub kernels: Vec<Row>,
}

/// A category or kernel row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Category or kernel name.
    pub name: String,
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
}

impl Breakdown {
    /// From an analysis breakdown, keeping the `top` kernels per stage.
    pub fn new(breakdown: &StageBreakdown, top: usize) -> Self {
        let method = match breakdown.method {
            AssignmentMethod::StepAnnotations => "step_annotations",
            AssignmentMethod::ReplaysAsDecode => "replays_as_decode",
        };
        Breakdown {
            method,
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

fn stage(summary: &StageSummary, total: Duration, top: usize) -> Stage {
    let rows = |rows: &[TimeRow], limit: usize| -> Vec<Row> {
        rows.iter()
            .take(limit)
            .map(|r| Row {
                name: r.name.clone(),
                category: r.category.clone(),
                events: r.events,
                time_us: micros(r.time),
                share: share(r.time, summary.gpu_time),
                mean_us: if r.events == 0 {
                    0.0
                } else {
                    micros(r.time) / r.events as f64
                },
            })
            .collect()
    };
    Stage {
        stage: summary.stage.as_str(),
        steps: summary.steps,
        events: summary.events,
        gpu_time_us: micros(summary.gpu_time),
        share_of_total: share(summary.gpu_time, total),
        busy_time_us: micros(summary.busy_time),
        window_us: micros(summary.window),
        idle_time_us: micros(summary.idle_time),
        categories: rows(&summary.categories, usize::MAX),
        kernels: rows(&summary.kernels, top),
    }
}

impl FileReport {
    /// Builds one file's report.
    pub fn new(path: &str, trace: &Trace, analysis: &TraceAnalysis, top: usize) -> Self {
        let count =
            |kind: GpuEventKind| trace.gpu.kind.iter().filter(|k| **k == kind).count() as u64;
        FileReport {
            path: path.to_owned(),
            rank: trace.metadata.rank,
            world_size: trace.metadata.world_size,
            devices: trace.metadata.device_names.clone(),
            runtime: runtime(&analysis.advice),
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
            replay_coverage: coverage(trace, analysis),
            advice: advice(&analysis.advice),
            steps: StepNumbers {
                framework: analysis.steps.framework.map(|f| f.as_str()),
                counts: analysis.steps.counts_by_key().into_iter().collect(),
            },
            breakdown: Breakdown::new(&analysis.breakdown, top),
        }
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
        RuntimeAdvice::Cuda { version } => Some(Runtime {
            kind: "cuda",
            version: format!("{}.{}", version / 1000, (version % 1000) / 10),
            header_value: *version,
        }),
        RuntimeAdvice::Unknown => None,
    }
}

fn advice(advice: &RuntimeAdvice) -> Advice {
    match advice {
        RuntimeAdvice::Hip { version, advice } => Advice {
            runtime: format!("HIP runtime {}.{} (build {})", version.major, version.minor, version.build),
            switches: advice
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
                .collect(),
            reason: advice.reason.clone(),
        },
        RuntimeAdvice::Cuda { version } => Advice {
            runtime: format!("CUDA runtime {}.{}", version / 1000, (version % 1000) / 10),
            switches: Vec::new(),
            reason: "CUPTI records every kernel of a replay under its cudaGraphLaunch: the PyTorch profiler needs no switch; Nsight Systems needs --cuda-graph-trace=node".to_owned(),
        },
        RuntimeAdvice::Unknown => Advice {
            runtime: "unknown (no runtime version in the trace header)".to_owned(),
            switches: Vec::new(),
            reason: "on a HIP runtime, set DEBUG_CLR_GRAPH_PACKET_CAPTURE=0, DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0 and DEBUG_HIP_GRAPH_CLASSIC_PATH=1 (a runtime ignores variables it does not define)".to_owned(),
        },
    }
}

fn coverage(trace: &Trace, analysis: &TraceAnalysis) -> Coverage {
    let c: &ReplayCoverage = &analysis.coverage;
    Coverage {
        verdict: c.verdict.as_str(),
        numbers: CoverageNumbers::new(&c.totals),
        recorded_gpu_time_us: micros(c.recorded_gpu_time),
        missing_share: c.missing_share,
        launches_under_capture: c.launches_under_capture,
        orphan_kernels: c.orphans.kernels,
        orphan_transfers: c.orphans.transfers,
        multi_kernel_launches: c
            .multi_kernel_launches
            .iter()
            .map(|m| MultiKernel {
                api: m.api.clone(),
                launches: m.launches,
                max_events: m.max_events,
            })
            .collect(),
        graphs: c.graphs.iter().map(graph).collect(),
        findings: findings(trace, analysis),
    }
}

fn graph(g: &GraphCoverage) -> Graph {
    Graph {
        graph: g.graph.map(|g| g + 1),
        graph_id: g.graph_id,
        first_kernel: g.first_kernel.clone(),
        expected_nodes_per_replay: g.expected_nodes,
        expected_source: match g.expected_source {
            ExpectedSource::CaptureTrace => "capture_trace",
            ExpectedSource::ReferenceReplay => "reference_replay",
            ExpectedSource::Unknown => "unknown",
        },
        reference_time_us: micros(g.reference_time),
        numbers: CoverageNumbers::new(&g.totals),
    }
}

fn finding_kind(replay: &Replay) -> Option<&'static str> {
    match replay.status {
        ReplayStatus::Empty => Some("ReplayWithoutKernels"),
        ReplayStatus::Short => Some("ShortReplay"),
        ReplayStatus::Complete if replay.order_mismatch => Some("ReplayOrderMismatch"),
        ReplayStatus::Complete if replay.deferred => Some("DeferredKernelBurst"),
        ReplayStatus::Complete => None,
    }
}

fn findings(trace: &Trace, analysis: &TraceAnalysis) -> Vec<Finding> {
    let steps = &analysis.steps.steps;
    analysis
        .coverage
        .replays
        .iter()
        .enumerate()
        .filter_map(|(index, replay)| {
            let kind = finding_kind(replay)?;
            Some(Finding {
                kind,
                replay: index,
                launch_ts_us: trace.runtime.start[replay.launch as usize].as_micros_f64(),
                step: replay.step.map(|s| trace.name(steps[s].name).to_owned()),
                graph: replay.graph.map(|g| g + 1),
                recorded_nodes: replay.recorded_nodes,
                expected_nodes: replay.expected_nodes,
                evidence: replay.evidence.clone(),
            })
        })
        .take(MAX_FINDINGS)
        .collect()
}
