//! What a profile run writes to `results.json` (docs/profile-results.md): the record the
//! lifecycle keeps up to date after every phase, so an interrupted or failed run still says
//! what it did.

use crate::config::{LoadSettings, ServingConfig};
use crate::fingerprint::Fingerprint;
use serde::Serialize;
use std::path::Path;

/// `results.json`'s schema version; bumped on any change a reader would notice.
pub const RESULTS_SCHEMA_VERSION: u32 = 1;

/// How far the run got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Still running (what a reader sees mid-run, or after stepscope was killed).
    Running,
    /// Every phase ran.
    Complete,
    /// A phase failed; `error` says which and why.
    Failed,
    /// Stopped by SIGINT or SIGTERM.
    Interrupted,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    /// [`RESULTS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// How far it got.
    pub status: RunStatus,
    /// Why it failed or stopped.
    pub error: Option<String>,
    /// The phase it was in when it ended or is now.
    pub phase: String,
    /// UTC, RFC 3339.
    pub started_at: String,
    /// UTC, RFC 3339, once ended.
    pub finished_at: Option<String>,
    /// The profile config.
    pub config: ConfigRecord,
    /// The server the windows were recorded on.
    pub server: Option<ServerRecord>,
    /// The baseline config's server (`--baseline`).
    pub baseline_server: Option<ServerRecord>,
    /// The load every phase ran at.
    pub load: LoadRecord,
    /// The worst verdict of the windows' analyses, once analysed.
    pub verdict: Option<String>,
    /// Profile windows, in order.
    pub windows: Vec<WindowRecord>,
    /// The steady load that ran throughout the windows (`bench/windows_load.json`).
    pub windows_load: Option<LoadSummary>,
    /// Profiling's cost in throughput.
    pub throughput: Option<ThroughputRecord>,
}

impl RunRecord {
    /// A run of `config` (read from `path`, copied to `config.yaml`) starting now.
    pub fn start(config: &ServingConfig, path: &Path) -> Self {
        RunRecord {
            schema_version: RESULTS_SCHEMA_VERSION,
            status: RunStatus::Running,
            error: None,
            phase: "start".to_owned(),
            started_at: super::now(),
            finished_at: None,
            config: ConfigRecord::new(config, path, "config.yaml"),
            server: None,
            baseline_server: None,
            load: LoadRecord::from(config.load),
            verdict: None,
            windows: Vec::new(),
            windows_load: None,
            throughput: None,
        }
    }
}

/// A config as run.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigRecord {
    /// The file given.
    pub path: String,
    /// Its copy in the run directory.
    pub copy: String,
    /// `profile` or `baseline`.
    pub kind: String,
    /// Framework.
    pub framework: String,
    /// Model as the config names it.
    pub model: String,
    /// The reuse fingerprint of the server it boots.
    pub fingerprint: String,
}

impl ConfigRecord {
    /// The record of `config`, read from `path`, copied to `copy`.
    pub fn new(config: &ServingConfig, path: &Path, copy: &str) -> Self {
        ConfigRecord {
            path: path.display().to_string(),
            copy: copy.to_owned(),
            kind: config.kind.as_str().to_owned(),
            framework: config.framework.as_str().to_owned(),
            model: config.model.clone(),
            fingerprint: Fingerprint::of(config).to_string(),
        }
    }
}

/// A server a phase ran on.
#[derive(Debug, Clone, Serialize)]
pub struct ServerRecord {
    /// `booted` (by this run) or `attached` (`--url`).
    pub mode: &'static str,
    /// Base URL.
    pub url: String,
    /// The fingerprint it was booted with (attached: as checked).
    pub fingerprint: String,
    /// The model it serves (first of `/v1/models`).
    pub served_model: Option<String>,
    /// Booted: its log in the run directory.
    pub log: Option<String>,
    /// Booted: its process group (`kill -TERM -- -PGID` ends it).
    pub process_group: Option<i32>,
    /// Booted: seconds from start to its first completion.
    pub ready_s: Option<f64>,
    /// Booted: how it was stopped (`terminated`, `killed`, `already-gone`), `still-running`
    /// (its group is gone but its port still answers: the launcher let it escape), `kept`
    /// (`--keep-server`), or `running` while the run goes on.
    pub stop: Option<String>,
    /// With `still-running`: the process listening on the server's port, when it can be seen.
    pub still_running_pid: Option<i32>,
}

/// The load settings.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LoadRecord {
    /// Requests in flight.
    pub concurrency: u32,
    /// Prompt tokens.
    pub input_len: u32,
    /// Output tokens.
    pub output_len: u32,
    /// Requests per throughput phase.
    pub num_prompts: u32,
}

impl From<LoadSettings> for LoadRecord {
    fn from(load: LoadSettings) -> Self {
        LoadRecord {
            concurrency: load.concurrency,
            input_len: load.input_len,
            output_len: load.output_len,
            num_prompts: load.num_prompts,
        }
    }
}

/// One profile window.
#[derive(Debug, Clone, Serialize)]
pub struct WindowRecord {
    /// 1-based.
    pub index: usize,
    /// `steps:N`, `by-stage:N` or `single-step`.
    pub spec: String,
    /// Its folder in the run directory.
    pub dir: String,
    /// Steps asked for (per stage for `by-stage`).
    pub requested_steps: u32,
    /// How the window was closed.
    pub ended_by: String,
    /// Steps stepscope counted while it was open, where it counts them.
    pub counted_steps: Option<u64>,
    /// How they were counted.
    pub counted_by: Option<String>,
    /// Seconds from start to closed.
    pub open_s: f64,
    /// Seconds from closed to every file complete.
    pub collect_s: f64,
    /// The files it wrote, moved here.
    pub traces: Vec<TraceRecord>,
    /// Files that never completed (left where the server wrote them).
    pub incomplete: Vec<IncompleteRecord>,
    /// Rank or stage files that never appeared.
    pub missing: Option<String>,
    /// Why the window failed, if it did.
    pub error: Option<String>,
    /// The analysis of its rank traces (filled in by the caller, after the lifecycle).
    pub analysis: Option<WindowAnalysis>,
}

/// A window's traces through `stepscope analyze`.
#[derive(Debug, Clone, Serialize)]
pub struct WindowAnalysis {
    /// The worst verdict of its files (`unreadable` when one could not be read).
    pub verdict: String,
    /// `analyze --json`'s document, relative to the run directory.
    pub document: String,
    /// `analyze`'s terminal report, relative to the run directory.
    pub report: String,
    /// `analyze --html`'s page, relative to the run directory.
    pub html: String,
    /// Steps the trace holds (the most of any rank file).
    pub steps_in_trace: u64,
    /// Per file.
    pub files: Vec<AnalysedFile>,
}

/// One rank file's headline numbers.
#[derive(Debug, Clone, Serialize)]
pub struct AnalysedFile {
    /// The file, relative to the run directory.
    pub path: String,
    /// Its verdict.
    pub verdict: String,
    /// Steps per `framework:mode`.
    pub steps: std::collections::BTreeMap<String, u64>,
    /// Graph replays.
    pub replays: u64,
    /// Replays whose kernels were all recorded, as a share (none without replays).
    pub completeness: Option<f64>,
}

/// A trace file of a window.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRecord {
    /// In the run directory, relative to it.
    pub path: String,
    /// Where the server wrote it.
    pub source: String,
    /// Bytes.
    pub bytes: u64,
    /// `rank` (analysed) or `frontend` (vLLM's API-server trace: host only, kept, not analysed).
    pub role: &'static str,
}

/// A file that never completed.
#[derive(Debug, Clone, Serialize)]
pub struct IncompleteRecord {
    /// Where it is.
    pub path: String,
    /// Why it does not count.
    pub reason: String,
}

/// What a load phase measured.
#[derive(Debug, Clone, Serialize)]
pub struct LoadSummary {
    /// Its bench JSON, relative to the run directory (`stepscope bench --json`'s schema).
    pub file: String,
    /// Requests completed.
    pub requests_completed: u64,
    /// Requests failed.
    pub requests_failed: u64,
    /// Requests in flight at the stop.
    pub requests_cancelled: u64,
    /// Seconds measured.
    pub duration_s: f64,
    /// Output tokens per second.
    pub output_tokens_per_s: f64,
}

impl LoadSummary {
    /// The summary of a bench report written to `file`.
    pub fn of(report: &stepscope_load::BenchReport, file: &str) -> Self {
        let summary = &report.summary;
        LoadSummary {
            file: file.to_owned(),
            requests_completed: summary.requests_completed,
            requests_failed: summary.requests_failed,
            requests_cancelled: summary.requests_cancelled,
            duration_s: summary.duration_s,
            output_tokens_per_s: summary.throughput.output_tokens_per_s,
        }
    }
}

/// Throughput with and without profiling.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ThroughputRecord {
    /// Phases on the profile config's server, in the order run.
    pub phases: Vec<PhaseRecord>,
    /// Phases on the baseline config's server (`--baseline`).
    pub baseline_phases: Vec<PhaseRecord>,
    /// The comparisons, once the phases ran.
    pub comparisons: Vec<Comparison>,
}

/// One measured phase.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseRecord {
    /// `unprofiled`, `profiled` or `baseline`.
    pub kind: &'static str,
    /// 1-based within its kind.
    pub index: usize,
    /// The measurement.
    pub load: LoadSummary,
    /// Profiled phases: the trace files the open window wrote, kept in the run directory.
    pub traces: Vec<String>,
}

/// `subject` against `reference`: medians of output tok/s and their relative difference.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// What is measured, e.g. `profiler on vs off` or `profile config vs baseline config`.
    pub what: String,
    /// Phases of the reference (`unprofiled`, `baseline`).
    pub reference: &'static str,
    /// Phases of the subject (`profiled`, `unprofiled`).
    pub subject: &'static str,
    /// Median output tok/s of the reference phases.
    pub reference_median: f64,
    /// Median output tok/s of the subject phases.
    pub subject_median: f64,
    /// (subject − reference) / reference, percent: negative when the subject is slower.
    pub difference_pct: f64,
    /// Lowest and highest difference the phases allow, percent: paired phases' own
    /// differences where phases alternate, else the extremes of the two ranges.
    pub spread_pct: [f64; 2],
    /// Phases of each side.
    pub phases: usize,
}
