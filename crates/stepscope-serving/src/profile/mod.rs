//! The profile loop as one call: boot (or attach to) a server, put it under steady load,
//! record each profile window through the framework's HTTP API, collect its traces, measure
//! throughput with the profiler off and on (and on a baseline server), and stop every
//! server it started — on success, error, or a signal ([`Interrupt`]).
//!
//! [`run_profile`] writes everything into a [`RunDir`] and keeps `results.json`
//! ([`RunRecord`]) current after every phase; analysing the collected traces is the
//! caller's (the binary runs them through the same code as `stepscope analyze`).

pub(crate) mod escaped;
mod interrupt;
mod load;
pub mod record;
pub(crate) mod rundir;
pub(crate) mod server_phase;
mod steps;
mod throughput;
pub(crate) mod window;

pub use interrupt::Interrupt;
pub use load::LoadRun;
pub use record::{RESULTS_SCHEMA_VERSION, RunRecord, RunStatus};
pub use rundir::{BootedServer, RunDir, RunDirError, default_run_name, now, runs_serving};
pub use server_phase::{attach_fingerprint, profiler_dir};
pub use steps::StepCounter;
pub use throughput::compare;

use crate::collect::CollectError;
use crate::config::{ConfigFile, ProfileWindow};
use crate::fingerprint::Fingerprint;
use crate::server::ServerError;
use crate::windows::{ProfileEndpoint, WindowError};
use record::LoadSummary;
use server_phase::Session;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use stepscope_load::BenchOptions;

/// Where the windows' server comes from.
#[derive(Debug, Clone)]
pub enum ServerSource {
    /// Boot it from the profile config.
    Boot,
    /// Attach to a running one whose fingerprint is known to equal the config's.
    Attach {
        /// Base URL.
        url: String,
        /// The fingerprint it was booted with.
        fingerprint: Fingerprint,
    },
}

/// How long each wait may take.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// From boot to the first completion.
    pub ready: Duration,
    /// A window's steps, its `/stop_profile`, and its files.
    pub window: Duration,
    /// The steady load's first tokens.
    pub steady: Duration,
    /// SIGTERM to SIGKILL when stopping a server.
    pub stop_grace: Duration,
    /// How long a trace file's size must hold still to count as written.
    pub settle: Duration,
}

impl Timeouts {
    /// How to collect a window's files: within the window's timeout, waiting for `expected`.
    pub fn collect_options(
        &self,
        expected: crate::collect::Expected,
    ) -> crate::collect::CollectOptions {
        crate::collect::CollectOptions {
            timeout: self.window,
            settle: self.settle,
            expected,
            ..crate::collect::CollectOptions::default()
        }
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            ready: Duration::from_secs(1800),
            window: Duration::from_secs(1200),
            steady: Duration::from_secs(600),
            stop_grace: Duration::from_secs(30),
            settle: Duration::from_secs(2),
        }
    }
}

/// One profile run.
#[derive(Debug, Clone)]
pub struct ProfilePlan {
    /// The profile config.
    pub config: ConfigFile,
    /// Windows to record (the config's, or `--window`'s).
    pub windows: Vec<ProfileWindow>,
    /// Boot or attach.
    pub server: ServerSource,
    /// A baseline config to measure throughput on as well.
    pub baseline: Option<ConfigFile>,
    /// Throughput phases of each kind (0: none).
    pub phases: usize,
    /// Leave a booted server running (its `server.json` lets `--url` attach later).
    pub keep_server: bool,
    /// Waits.
    pub timeouts: Timeouts,
    /// The load generator's options beyond the config's `load` (URL and model are set here).
    pub bench: BenchOptions,
}

/// Why a run ended early.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The server could not start, get ready or was lost.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// A window or phase could not be opened or closed.
    #[error(transparent)]
    Window(#[from] WindowError),
    /// Traces of a profiled phase could not be collected.
    #[error(transparent)]
    Collect(#[from] CollectError),
    /// The run directory could not be written.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// The load generator failed.
    #[error("The load failed: {0}")]
    Load(String),
    /// Refused before anything ran (a port in use, no profiler directory, a fingerprint).
    #[error("{0}")]
    Refused(String),
    /// A signal came.
    #[error("Interrupted")]
    Interrupted,
    /// The booted server's process group was stopped, and its port still answers: the
    /// launcher let it escape the group (it daemonised).
    #[error("{0}")]
    StillRunning(String),
}

/// Runs the plan into `run`; `progress` hears each phase and wait.
pub fn run_profile(
    plan: &ProfilePlan,
    run: &RunDir,
    interrupt: &Interrupt,
    progress: &mut dyn FnMut(&str),
) -> Result<(), ProfileError> {
    let config = &plan.config.config;
    let trace_dir = profiler_dir(config).map_err(ProfileError::Refused)?;
    let mut session = Session::open(plan, run, interrupt, progress)?;
    let endpoint = ProfileEndpoint {
        framework: config.framework,
        base_url: session.url.clone(),
        trace_dir,
    };
    let options = bench_options(&plan.bench, &session.url, &session.model);
    let phases = profile_phases(plan, run, &endpoint, &options, interrupt, progress);
    if let Err(error) = phases {
        // The server is stopped and its record made final before the error ends the run.
        let _ = session.finish(run, false, interrupt);
        return Err(error);
    }
    session.close(run, plan.keep_server, interrupt)?;
    if let Some(baseline) = &plan.baseline {
        baseline_run(plan, baseline, run, interrupt, progress)?;
    }
    Ok(())
}

/// The windows, then the throughput phases on the profile server.
fn profile_phases(
    plan: &ProfilePlan,
    run: &RunDir,
    endpoint: &ProfileEndpoint,
    options: &BenchOptions,
    interrupt: &Interrupt,
    progress: &mut dyn FnMut(&str),
) -> Result<(), ProfileError> {
    record_windows(plan, run, endpoint, options, interrupt, progress)?;
    if plan.phases > 0 {
        run.phase("throughput")?;
        let context = throughput::PhaseContext {
            run,
            options,
            interrupt,
            timeouts: &plan.timeouts,
        };
        throughput::profile_phases(&context, endpoint, plan.phases, progress)?;
    }
    Ok(())
}

/// The windows, under a steady load started before the first and stopped after the last.
fn record_windows(
    plan: &ProfilePlan,
    run: &RunDir,
    endpoint: &ProfileEndpoint,
    options: &BenchOptions,
    interrupt: &Interrupt,
    progress: &mut dyn FnMut(&str),
) -> Result<(), ProfileError> {
    if plan.windows.is_empty() {
        return Ok(());
    }
    run.phase("steady load")?;
    let mut steady = options.clone();
    steady.num_prompts = 1 << 40;
    let load =
        LoadRun::start(steady, interrupt.flag()).map_err(|e| ProfileError::Load(e.to_string()))?;
    let concurrency = plan.config.config.load.concurrency;
    if let Err(error) = wait_steady(&load, concurrency, &plan.timeouts, interrupt, progress) {
        let _ = load.stop();
        return Err(error);
    }
    let context = window::WindowContext {
        endpoint,
        root: run.root(),
        load: &load,
        concurrency,
        interrupt,
        timeouts: &plan.timeouts,
        ranks: plan.config.config.parallel_ranks(),
    };
    let count = plan.windows.len();
    for (at, window) in plan.windows.iter().enumerate() {
        run.phase(&format!("window {}/{count} ({})", at + 1, window.spec()))?;
        progress(&format!("window {}/{count} ({})", at + 1, window.spec()));
        let record = window::record_window(&context, at + 1, *window, progress);
        run.update(|r| r.windows.push(record))?;
        if interrupt.requested() {
            let _ = load.stop();
            return Err(ProfileError::Interrupted);
        }
    }
    let report = load.stop().map_err(ProfileError::Load)?;
    let summary = write_load_report(run, "bench/windows-load.json", &report)?;
    run.update(|r| r.windows_load = Some(summary))?;
    Ok(())
}

/// Writes a load phase's report to `file` (`stepscope bench --json`'s schema); returns its
/// summary for the record.
fn write_load_report(
    run: &RunDir,
    file: &str,
    report: &stepscope_load::BenchReport,
) -> Result<LoadSummary, ProfileError> {
    let mut bytes = Vec::new();
    report
        .write_json(&mut bytes)
        .map_err(|e| ProfileError::Load(e.to_string()))?;
    run.write(file, &bytes)?;
    Ok(LoadSummary::of(report, file))
}

/// Waits until every request slot has streamed: the test request passed and the server
/// runs at the load's concurrency.
fn wait_steady(
    load: &LoadRun,
    concurrency: u32,
    timeouts: &Timeouts,
    interrupt: &Interrupt,
    progress: &mut dyn FnMut(&str),
) -> Result<(), ProfileError> {
    let started = Instant::now();
    let target = u64::from(concurrency);
    loop {
        let state = load.progress();
        if state.started() >= target && state.streamed_chunks() >= 2 * target {
            return Ok(());
        }
        if interrupt.requested() {
            return Err(ProfileError::Interrupted);
        }
        if load.is_finished() {
            return Err(ProfileError::Load(format!(
                "the steady load ended before the windows: {}",
                describe_end(load)
            )));
        }
        if started.elapsed() >= timeouts.steady {
            return Err(ProfileError::Load(format!(
                "the load did not reach {concurrency} requests streaming in {} s ({} started, {} tokens)",
                timeouts.steady.as_secs(),
                state.started(),
                state.streamed_chunks()
            )));
        }
        progress(&format!(
            "steady load: {} of {concurrency} requests started, {} tokens streamed",
            state.started(),
            state.streamed_chunks()
        ));
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn describe_end(load: &LoadRun) -> String {
    let state = load.progress();
    format!("{} failed, {} completed", state.failed(), state.completed())
}

/// Boots the baseline config's server and runs its phases.
fn baseline_run(
    plan: &ProfilePlan,
    baseline: &ConfigFile,
    run: &RunDir,
    interrupt: &Interrupt,
    progress: &mut dyn FnMut(&str),
) -> Result<(), ProfileError> {
    run.phase("baseline server")?;
    let mut session = Session::boot(baseline, "baseline-server", plan, run, interrupt, progress)?;
    run.update(|r| r.baseline_server = Some(session.record.clone()))?;
    let options = bench_options(&plan.bench, &session.url, &session.model);
    run.phase("baseline throughput")?;
    let context = throughput::PhaseContext {
        run,
        options: &options,
        interrupt,
        timeouts: &plan.timeouts,
    };
    if let Err(error) = throughput::baseline_phases(&context, plan.phases.max(1), progress) {
        let _ = session.finish(run, false, interrupt);
        return Err(error);
    }
    session.close(run, false, interrupt)
}

/// The plan's load options sent to `url`, for `model`.
fn bench_options(base: &BenchOptions, url: &str, model: &str) -> BenchOptions {
    let mut options = base.clone();
    url.clone_into(&mut options.base_url);
    model.clone_into(&mut options.model);
    options
}

/// The run directory path for a config with no `--out`.
pub fn default_run_dir(plan: &ProfilePlan) -> PathBuf {
    plan.config
        .config
        .output_dir
        .join(default_run_name(&plan.config.path))
}
