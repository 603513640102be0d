//! A live grading: output probes and benchmark phases against the two sides in the
//! [`Schedule`]'s order, graded at its looks, every phase and probe saved so that the same
//! grading can be made offline.
//!
//! A side is a running server's URL or a baseline config that stepscope boots, as `profile`
//! boots servers (the port must be free; the process group is stopped on every exit and on
//! a signal). Booted sides run one at a time: a side's server is booted when its turn comes
//! and stopped when the other side's turn comes, so the middle pair of A B B A shares one
//! boot. Phases of one boot share its warm state (caches, autotuned kernels), which is why
//! the order alternates rather than running one side's phases in a block.
//!
//! Every turn starts with an output probe (fixed prompts at temperature 0, one at a time),
//! and the run ends with one on each server still up: a candidate whose answers differ from
//! the base's first is reverted at once, before any more phases. When the candidate must
//! show that it runs the change (`--expect-kernel`, `--expect-env`), its first turn checks
//! that too ([`super::engage`]: its processes' environment, a short profile window's
//! kernels, saved as `candidate/engage.check.json` and the window under `windows/`), and a
//! candidate that cannot show it ends the run, INCONCLUSIVE. The served model is read at
//! each side's first turn; sides serving different models are refused unless allowed. The
//! time budget cuts the phase or probe in progress within a second of its end (a phase cut
//! short is not saved); a side that streamed nothing for the last
//! [`STALL_SECONDS`] before the cut is reported as stalled, an error with its count of
//! requests in flight.
//!
//! ```text
//! OUT/
//!   grade.json            the grade and the run (status, order, boots, models, probes),
//!                         rewritten at every look, so an interrupted run keeps its evidence
//!   base/phaseNN.json     every base phase, as `stepscope bench --json` writes it
//!   base/probeNN.outputs.json   every base output probe
//!   candidate/…           the same for the candidate
//!   base.yaml, candidate.yaml   a config side, as given
//!   logs/SIDE-NN.log      each boot's server output
//! ```

mod runner;

use super::engage::{Expectations, KernelReader};
use super::schedule::{SIDES, Schedule};
use super::{Grade, GradeSettings};
use crate::config::{ConfigFile, Framework};
use crate::fingerprint::Fingerprint;
use crate::profile::rundir::{make_new_dir, now};
use crate::profile::{Interrupt, RunDirError};
use runner::Runner;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use stepscope_load::{BenchOptions, ProbeSettings, ServedModel};

/// A side that streamed nothing for this long when the time budget ran out had stalled.
pub const STALL_SECONDS: u64 = 10;

/// Where a side's phases go.
#[derive(Debug, Clone)]
pub enum SideSource {
    /// A server already running.
    Url {
        /// Its base URL.
        url: String,
        /// The fingerprint it was booted with, when the caller knows it.
        fingerprint: Option<Fingerprint>,
    },
    /// A baseline config, booted for the side's turns.
    Config(Box<ConfigFile>),
}

/// One live grading.
#[derive(Debug, Clone)]
pub struct LivePlan {
    /// Base, then candidate.
    pub sources: [SideSource; 2],
    /// How phases are graded (`looks` is set from the schedule).
    pub settings: GradeSettings,
    /// Phases a side at the first look.
    pub min_phases: usize,
    /// Phases a side at the last.
    pub max_phases: usize,
    /// The budget: the phase or probe in progress when it ends is cut, and the run stops.
    pub max_time: Option<Duration>,
    /// Every phase's load (URL and model are set per side; `timeout` bounds each request).
    pub bench: BenchOptions,
    /// The output probes (`None`: outputs are not checked).
    pub probe: Option<ProbeSettings>,
    /// What the candidate must show to have engaged the change.
    pub expect: Expectations,
    /// Reads the kernel ids of a window's traces (needed for expected kernels).
    pub kernel_reader: Option<KernelReader>,
    /// A URL candidate's framework and the folder its profiler writes to (a config
    /// candidate's come from its config).
    pub candidate_profiler: Option<(Framework, PathBuf)>,
    /// From boot to the first completion.
    pub ready_timeout: Duration,
    /// SIGTERM to SIGKILL when a booted server stops.
    pub stop_grace: Duration,
}

/// What `grade.json` says about the run, beside the grade.
#[derive(Debug, Clone, Serialize)]
pub struct LiveRecord {
    /// `running`, `complete`, `interrupted`, `refused` or `failed`.
    pub status: &'static str,
    /// Why it failed, was refused or interrupted.
    pub error: Option<String>,
    /// Why it stopped adding phases: `decided`, `outputs-changed`, `not-engaged`,
    /// `max-phases` or `max-time`.
    pub stopped_by: Option<&'static str>,
    /// When it started (UTC).
    pub started: String,
    /// The phases a side at which it grades.
    pub looks_at: Vec<usize>,
    /// Base, then candidate.
    pub sides: [SideRecord; 2],
    /// Every phase in the order it ran.
    pub order: Vec<PhaseRecord>,
    /// Every output probe in the order it ran.
    pub probes: Vec<ProbeRecord>,
    /// The command that grades the saved phases again, offline, as this run did.
    pub regrade: String,
}

/// One side of the run.
#[derive(Debug, Clone, Serialize)]
pub struct SideRecord {
    /// `base` or `candidate`.
    pub name: &'static str,
    /// `url` or `config`.
    pub source: &'static str,
    /// The server's URL (a config side: its local URL).
    pub url: Option<String>,
    /// A config side: the config as given, and its copy in the run directory.
    pub config: Option<String>,
    /// The config's copy.
    pub config_copy: Option<String>,
    /// The reuse fingerprint: a config's own, or the one given for a URL (`null`: not known).
    pub fingerprint: Option<String>,
    /// The model it serves, as `GET /v1/models` lists it at its first turn.
    pub served_model: Option<ServedModel>,
    /// A config side's boots, in order.
    pub boots: Vec<BootRecord>,
}

/// One boot of a config side's server.
#[derive(Debug, Clone, Serialize)]
pub struct BootRecord {
    /// Its output, relative to the run directory.
    pub log: String,
    /// Its process group.
    pub process_group: i32,
    /// Seconds from start to the first completion (`null`: never ready).
    pub ready_s: Option<f64>,
    /// The model it serves.
    pub served_model: Option<String>,
    /// How it stopped: `stopped`, `killed`, `still-running`; `running` until then.
    pub stop: String,
}

/// One phase.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseRecord {
    /// `base` or `candidate`.
    pub side: &'static str,
    /// Its bench document, relative to the run directory.
    pub file: String,
    /// The boot it ran on (1-based, a config side's), `null` for a URL side.
    pub boot: Option<usize>,
    /// When it started (UTC).
    pub started: String,
    /// Its output tokens per second.
    pub output_tokens_per_s: f64,
    /// Its requests that failed.
    pub requests_failed: u64,
}

/// One output probe.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeRecord {
    /// `base` or `candidate`.
    pub side: &'static str,
    /// Its answers, relative to the run directory.
    pub file: String,
    /// The boot it ran on, `null` for a URL side.
    pub boot: Option<usize>,
    /// When it started (UTC).
    pub started: String,
    /// Its answers that failed.
    pub failed: usize,
}

/// A finished live run: its grade of every phase and probe saved (an error when the sides
/// cannot be graded against each other: different models or work), and its record.
#[derive(Debug, Clone)]
pub struct LiveRun {
    /// The grade, or why there is none.
    pub grade: Result<Grade, String>,
    /// The run.
    pub record: LiveRecord,
}

/// Runs `plan` into `out` (made; refused when it already holds files). A failed phase, a
/// refused boot or a signal ends the run with what was saved, graded, and the reason in the
/// record; only a run directory that cannot be written is an error.
///
/// # Errors
///
/// `out` cannot be made or written, or already holds files.
pub fn run_live(
    plan: &LivePlan,
    out: &Path,
    interrupt: &Interrupt,
    progress: &mut dyn FnMut(&str),
) -> Result<LiveRun, RunDirError> {
    prepare(out)?;
    let schedule = Schedule::new(plan.min_phases, plan.max_phases);
    let deadline = plan.max_time.map(|limit| Instant::now() + limit);
    let record = start_record(plan, out, &schedule);
    let mut runner = Runner::new(plan, out, interrupt, record, schedule, deadline);
    runner.copy_configs()?;
    let ended = runner.run(progress);
    let stopped = runner.leave();
    let error = ended.err().or(stopped.err());
    let graded = runner.finish(error)?;
    Ok(LiveRun {
        grade: graded,
        record: runner.into_record(),
    })
}

/// Makes the run directory (refused when it holds files) and its sides' folders.
fn prepare(out: &Path) -> Result<(), RunDirError> {
    make_new_dir(out)?;
    for side in SIDES {
        let folder = out.join(side);
        std::fs::create_dir_all(&folder).map_err(|source| RunDirError {
            path: folder,
            source,
        })?;
    }
    Ok(())
}

fn start_record(plan: &LivePlan, out: &Path, schedule: &Schedule) -> LiveRecord {
    let side = |at: usize| match &plan.sources[at] {
        SideSource::Url { url, fingerprint } => SideRecord {
            name: SIDES[at],
            source: "url",
            url: Some(url.clone()),
            config: None,
            config_copy: None,
            fingerprint: fingerprint.as_ref().map(ToString::to_string),
            served_model: None,
            boots: Vec::new(),
        },
        SideSource::Config(file) => SideRecord {
            name: SIDES[at],
            source: "config",
            url: None,
            config: Some(file.path.display().to_string()),
            config_copy: Some(format!("{}.yaml", SIDES[at])),
            fingerprint: Some(Fingerprint::of(&file.config).to_string()),
            served_model: None,
            boots: Vec::new(),
        },
    };
    LiveRecord {
        status: "running",
        error: None,
        stopped_by: None,
        started: now(),
        looks_at: schedule.looks().to_vec(),
        sides: [side(0), side(1)],
        order: Vec::new(),
        probes: Vec::new(),
        regrade: regrade_command(plan, out, schedule),
    }
}

/// The offline command that grades the saved phases as this run does.
fn regrade_command(plan: &LivePlan, out: &Path, schedule: &Schedule) -> String {
    let settings = &plan.settings;
    let mut regrade = format!(
        "stepscope grade {} {} --looks {} --min-effect {} --max-failure-rate {}",
        out.join("base").display(),
        out.join("candidate").display(),
        schedule.looks().len(),
        settings.min_effect_pct,
        settings.max_failure_rate * 100.0
    );
    for slo in &settings.slos {
        regrade.push_str(&format!(" --slo {}={}", slo.metric, slo.limit));
    }
    for (metric, margin) in &settings.max_regressions {
        let margin = margin.map_or_else(|| "off".to_owned(), |pct| pct.to_string());
        regrade.push_str(&format!(" --max-regression {metric}={margin}"));
    }
    if settings.min_output_similarity < 1.0 {
        regrade.push_str(&format!(
            " --output-similarity {}",
            settings.min_output_similarity
        ));
    }
    for (flag, on) in [
        ("--allow-output-change", settings.allow_output_change),
        ("--allow-model-change", settings.allow_model_change),
    ] {
        if on {
            regrade.push(' ');
            regrade.push_str(flag);
        }
    }
    regrade
}

/// The model the server of `options` serves (the one named, or its first), as its
/// `GET /v1/models` lists it; the error says what to do, naming the side.
///
/// # Errors
///
/// Nothing answers, the list cannot be read, or it lacks the model named.
pub fn served_model_at(options: &BenchOptions, side: &str) -> Result<ServedModel, String> {
    let url = stepscope_load::redact_url(&options.base_url);
    let listed = runner::block_on(stepscope_load::list_model(options)).and_then(|r| r);
    listed.map_err(|problem| {
        let hint = if problem.starts_with("failed to connect") {
            "nothing answers there: start the server, or give its address"
        } else if !options.model.is_empty() {
            "give the model it serves with --model, or leave --model out to take the first it lists"
        } else {
            "check that the URL is the server's base URL (`http://host:port`)"
        };
        format!(
            "The {side} at {url} does not say what it serves (`GET /v1/models`): {problem}\nhint: {hint}"
        )
    })
}

/// Why two sides' models differ (other ids, or other roots where both list one), or `None`.
pub fn different_models(base: &ServedModel, candidate: &ServedModel) -> Option<String> {
    let differ = base.id != candidate.id
        || matches!((&base.root, &candidate.root), (Some(x), Some(y)) if x != y);
    differ.then(|| {
        format!(
            "The sides serve different models (base {}, candidate {}), so their speeds cannot be compared\nhint: grade two servers of one model; when the change is the model itself (a quantised copy, say), pass --allow-model-change",
            describe_model(base),
            describe_model(candidate)
        )
    })
}

/// `` `tiny` (/models/tiny) ``.
pub fn describe_model(model: &ServedModel) -> String {
    let id = stepscope_model::text::escape_controls(&model.id);
    match &model.root {
        Some(root) if root != &model.id => format!("`{id}` ({root})"),
        _ => format!("`{id}`"),
    }
}

/// The run directory's default name: `grade-YYYYmmdd-HHMMSS`.
pub fn default_out() -> PathBuf {
    PathBuf::from(format!(
        "grade-{}",
        jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S")
    ))
}
