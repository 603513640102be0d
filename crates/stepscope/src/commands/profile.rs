//! `stepscope profile`: the profile loop against a live server (boot or attach, steady load,
//! windows, collection, throughput), then every window's traces through `analyze`'s code.

mod analysis;
mod summary;

use crate::Outcome;
use crate::app::hinted;
use crate::cli::ColorChoice;
use crate::output;
use anyhow::{Context, bail};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;
use stepscope_serving::profile::record::LoadRecord;
use stepscope_serving::profile::{
    Interrupt, ProfileError, ProfilePlan, RunDir, RunRecord, RunStatus, ServerSource, Timeouts,
    attach_fingerprint, default_run_dir, profiler_dir, run_profile,
};
use stepscope_serving::{
    ConfigFile, ConfigKind, Fingerprint, Framework, ProfileWindow, check_config, load_config,
    may_reuse,
};

/// `profile`'s line in its parent's command list.
const ABOUT: &str = "Profile a live server end to end: boot, load, windows, analysis";

/// `profile --help`: each paragraph is one line, wrapped to the terminal's width.
const LONG_ABOUT: &str = "\
Profile a live server end to end: boot it from a profile config (or attach with --url), \
load it steadily at the config's concurrency, record each profile window through the \
framework's HTTP API, collect the traces, check every replay and break them down per stage \
(as `analyze`), and measure throughput with the profiler off and on (and on a --baseline \
server). Every server it starts is stopped (SIGTERM, then SIGKILL of its process group) on \
success, error, Ctrl-C or SIGTERM.

Writes a run directory (results.json, schema in docs/profile-results.md; report.txt; the \
config; server.log; windows/N-SPEC/ with the traces and their analysis; bench/ with every \
load phase).

Exit codes: 0 done; 2 a bad config or flag, or an attach refused (fingerprint unknown or \
different); 3 a window's verdict fails --fail-on-incomplete/--strict; 4 a phase failed \
(server, window, trace files, load: results.json says which); 130/143/129 stopped by \
SIGINT/SIGTERM/SIGHUP (what was done is kept); 1 internal error.

EXAMPLES:
  stepscope profile configs/profile_vllm.yaml
  # attach
  stepscope profile configs/profile_vllm.yaml --url http://HOST:8000
  stepscope profile configs/profile_sglang.yaml \\
      --window steps:128 --window by-stage:4 --window single-step
  stepscope profile configs/profile_vllm.yaml --baseline \\
      configs/baseline_vllm.yaml
  stepscope profile configs/profile_vllm.yaml --fail-on-incomplete --phases 0";

/// Arguments of `profile`.
#[derive(Debug, Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT)]
pub struct ProfileArgs {
    /// The profile config (YAML, `kind: profile`; schema in configs/README.md).
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    /// Attach to this running server instead of booting one. Refused unless its
    /// fingerprint equals the config's: found in the run directory of the run that booted
    /// it (with --keep-server, under the config's output_dir), or given with --fingerprint.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// With --url: the attached server's fingerprint (`sha256:…`), or the run directory
    /// (or file) that holds it.
    #[arg(long, value_name = "FP|RUN_DIR", requires = "url")]
    pub fingerprint: Option<String>,
    /// A window, replacing the config's `windows` (repeat for several): `steps:N`,
    /// `by-stage:N` (SGLang), `single-step`.
    #[arg(long = "window", value_name = "SPEC", value_parser = ProfileWindow::from_spec)]
    pub windows: Vec<ProfileWindow>,
    /// Also boot a server from this baseline config (after the profile server stops) and
    /// measure the same load on it: what the runtime switches cost.
    #[arg(long, value_name = "CONFIG")]
    pub baseline: Option<PathBuf>,
    /// Throughput phases of each kind: profiler off and on alternate on the profile
    /// server (and as many on the baseline server); 0 skips the comparison.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub phases: usize,
    /// The run directory (default: a folder in the config's output_dir named by the time and the config's file name).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Leave the booted server running at the end; a later `--url` run attaches to it.
    #[arg(long)]
    pub keep_server: bool,
    /// Exit 3 when any window's replays are short, empty or damaged (as `analyze`).
    #[arg(long)]
    pub fail_on_incomplete: bool,
    /// Like --fail-on-incomplete, and also exit 3 on unverified replay sizes.
    #[arg(long)]
    pub strict: bool,
    /// Seconds a booted server may take to answer its first completion.
    #[arg(long, default_value_t = 1800, value_name = "S")]
    pub ready_timeout: u64,
    /// Seconds a window may take to record its steps, close, and leave complete files.
    #[arg(long, default_value_t = 1200, value_name = "S")]
    pub window_timeout: u64,
    /// Milliseconds a trace file's size must hold still to count as written (tests).
    #[arg(long, default_value_t = 2000, value_name = "MS", hide = true)]
    pub settle_ms: u64,
    /// Kernels listed per stage in each window's report.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Print results.json instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Colour the report.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// No progress line (phase lines still go to stderr when it is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

/// `stepscope profile`.
pub fn run(args: ProfileArgs) -> anyhow::Result<Outcome> {
    let plan = match resolve(&args) {
        Ok(plan) => plan,
        Err(error) => {
            output::print_error(&error);
            return Ok(Outcome::InputError);
        }
    };
    let run_dir = args.out.clone().unwrap_or_else(|| default_run_dir(&plan));
    let configs: Vec<PathBuf> = std::iter::once(plan.config.path.clone())
        .chain(plan.baseline.as_ref().map(|b| b.path.clone()))
        .collect();
    let out = [super::outputs::Output::folder("--out", &run_dir)];
    if let Err(error) = super::outputs::refuse_overwrites(&out, &configs) {
        output::print_error(&error);
        return Ok(Outcome::InputError);
    }
    let run = match prepare_run_dir(&plan, &run_dir) {
        Ok(run) => run,
        Err(error) => {
            output::print_error(&error);
            return Ok(Outcome::InputError);
        }
    };
    let interrupt = install_interrupt(&run)?;
    let mut lines = super::lines::PhaseLines::new(!args.no_progress);
    lines.say(&format!("run directory {}", run.root().display()));
    let result = run_profile(&plan, &run, &interrupt, &mut |text| lines.say(text));
    lines.finish();
    let ended = end_status(&run, &interrupt, result)?;
    let analysed = analysis::analyse_windows(&run, &args)?;
    summary::finish(&run, &args, &analysed, ended)
}

/// How the lifecycle ended, recorded.
fn end_status(
    run: &RunDir,
    interrupt: &Interrupt,
    result: Result<(), ProfileError>,
) -> anyhow::Result<Ended> {
    match result {
        // A signal after the last phase still ends the run as interrupted.
        _ if interrupt.requested() => {
            let signal = interrupt.signal().unwrap_or(2);
            run.end(
                RunStatus::Interrupted,
                Some(format!("stopped by signal {signal}")),
            )?;
            Ok(Ended::Interrupted(signal))
        }
        Ok(()) => Ok(Ended::Complete),
        Err(error) => {
            let error = anyhow::Error::new(error);
            output::print_error(&error);
            run.end(RunStatus::Failed, Some(format!("{error:#}")))?;
            Ok(Ended::Failed)
        }
    }
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Every phase ran.
    Complete,
    /// A phase failed (recorded).
    Failed,
    /// A signal, by number.
    Interrupted(i32),
}

/// The signal thread: servers stopped at once, the run marked interrupted.
fn install_interrupt(run: &RunDir) -> anyhow::Result<Interrupt> {
    let marked = run.clone();
    Interrupt::install(Duration::from_secs(10), move |signal| {
        let _ = marked.end(
            RunStatus::Interrupted,
            Some(format!("stopped by signal {signal}")),
        );
    })
    .context("Could not install the signal handlers")
}

/// Reads and checks the configs and flags into a plan; errors are usage errors (exit 2).
fn resolve(args: &ProfileArgs) -> anyhow::Result<ProfilePlan> {
    let config = load_profile_config(&args.config, ConfigKind::Profile)?;
    let windows = if args.windows.is_empty() {
        config.config.windows.clone()
    } else {
        args.windows.clone()
    };
    check_windows(&config, &windows, args.phases)?;
    profiler_dir(&config.config)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("In `{}`", config.path.display()))?;
    let baseline = match &args.baseline {
        Some(path) => Some(load_baseline(path, &config, args.phases)?),
        None => None,
    };
    let server = match &args.url {
        None => ServerSource::Boot,
        Some(url) => {
            // The OpenAI base-URL form (`…/v1`) names the same server.
            let url = url.trim_end_matches('/').trim_end_matches("/v1").to_owned();
            let fingerprint = fingerprint_of(&url, args, &config)?;
            may_reuse(&fingerprint, &Fingerprint::of(&config.config)).with_context(|| {
                format!(
                    "The server at {url} was not booted from `{}`",
                    config.path.display()
                )
            })?;
            ServerSource::Attach { url, fingerprint }
        }
    };
    let load = config.config.load;
    let mut bench = stepscope_load::BenchOptions::default();
    bench.concurrency = load.concurrency as usize;
    bench.input_len = load.input_len as usize;
    bench.output_len = load.output_len as usize;
    bench.num_prompts = load.num_prompts as usize;
    Ok(ProfilePlan {
        config,
        windows,
        server,
        baseline,
        phases: args.phases,
        keep_server: args.keep_server,
        timeouts: Timeouts {
            ready: Duration::from_secs(args.ready_timeout),
            window: Duration::from_secs(args.window_timeout),
            settle: Duration::from_millis(args.settle_ms),
            ..Timeouts::default()
        },
        bench,
    })
}

fn fingerprint_of(
    url: &str,
    args: &ProfileArgs,
    config: &ConfigFile,
) -> anyhow::Result<Fingerprint> {
    attach_fingerprint(
        url,
        args.fingerprint.as_deref(),
        &config.config.output_dir,
        &config.path,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// A config of `kind` that passes `config check`.
pub(crate) fn load_profile_config(path: &Path, kind: ConfigKind) -> anyhow::Result<ConfigFile> {
    let file = load_config(path)?;
    if file.config.kind != kind {
        return Err(hinted(
            format!(
                "`{}` is a {} config; this needs a {kind} config",
                path.display(),
                file.config.kind
            ),
            "`stepscope profile PROFILE.yaml --baseline BASELINE.yaml`",
        ));
    }
    let findings = check_config(&file);
    if !findings.is_empty() {
        let all: Vec<String> = findings.iter().map(ToString::to_string).collect();
        return Err(hinted(
            format!(
                "`{}` does not pass `stepscope config check` ({} finding(s)):\n{}",
                path.display(),
                findings.len(),
                all.join("\n")
            ),
            format!(
                "a {kind} run with the wrong switches or no profiler measures the wrong thing; fix what each finding says"
            ),
        ));
    }
    Ok(file)
}

fn load_baseline(path: &Path, profile: &ConfigFile, phases: usize) -> anyhow::Result<ConfigFile> {
    let baseline = load_profile_config(path, ConfigKind::Baseline)?;
    if baseline.config.framework != profile.config.framework {
        bail!(
            "The baseline `{}` runs {}, the profile {}: a comparison needs the same framework",
            path.display(),
            baseline.config.framework,
            profile.config.framework
        );
    }
    if phases == 0 {
        bail!(
            "--baseline compares throughput phases: give --phases N (N at least 1; 3 or more for a spread)"
        );
    }
    Ok(baseline)
}

fn check_windows(
    config: &ConfigFile,
    windows: &[ProfileWindow],
    phases: usize,
) -> anyhow::Result<()> {
    let framework = config.config.framework;
    if windows
        .iter()
        .any(|w| matches!(w, ProfileWindow::ByStage(_)))
        && framework != Framework::Sglang
    {
        return Err(hinted(
            format!("`by-stage` windows are an SGLang profiler feature, not {framework}'s"),
            "use --window steps:N or --window single-step",
        ));
    }
    if windows.is_empty() && phases == 0 {
        return Err(hinted(
            format!(
                "Nothing to do: `{}` has no windows and --phases is 0",
                config.path.display()
            ),
            "add --window steps:128 (or `windows:` in the config)",
        ));
    }
    Ok(())
}

/// Makes the run directory and writes what the run starts from.
fn prepare_run_dir(plan: &ProfilePlan, root: &Path) -> anyhow::Result<RunDir> {
    let config = &plan.config;
    let record = RunRecord::start(&config.config, &config.path);
    let run = RunDir::create(root, record)?;
    let text = fs_err::read(&config.path)?;
    run.write("config.yaml", &text)?;
    run.write(
        "fingerprint",
        format!("{}\n", Fingerprint::of(&config.config)).as_bytes(),
    )?;
    if let Some(baseline) = &plan.baseline {
        run.write("baseline.yaml", &fs_err::read(&baseline.path)?)?;
    }
    let windows: Vec<String> = plan.windows.iter().map(|w| w.spec()).collect();
    let source = match &plan.server {
        ServerSource::Boot => serde_json::json!({"boot": true}),
        ServerSource::Attach { url, fingerprint } => {
            serde_json::json!({"attach": url, "fingerprint": fingerprint.to_string()})
        }
    };
    run.write_json(
        "resolved.json",
        &serde_json::json!({
            "config": config.path.display().to_string(),
            "baseline": plan.baseline.as_ref().map(|b| b.path.display().to_string()),
            "windows": windows,
            "server": source,
            "phases": plan.phases,
            "keep_server": plan.keep_server,
            "load": LoadRecord::from(config.config.load),
            "trace_dir": profiler_dir(&config.config).ok(),
            "timeouts_s": {
                "ready": plan.timeouts.ready.as_secs(),
                "window": plan.timeouts.window.as_secs(),
            },
        }),
    )?;
    Ok(run)
}
