//! `stepscope grade` with live sides: each a running server's URL or a baseline config that
//! stepscope boots. The library runs the phases (A B B A, graded where the phases a side
//! double, stopped at the first KEEP or REVERT or at the budget) into a run directory; this
//! command resolves the sides and the load, shows progress, writes the HTML report and
//! prints the grade.

use super::grade::{GradeArgs, finish, settings};
use super::lines::PhaseLines;
use crate::Outcome;
use crate::app::hinted;
use crate::output;
use anyhow::{Context as _, bail};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use stepscope_ingest::{ReadOptions, read_trace_file};
use stepscope_load::{BenchOptions, ProbeSettings, ServedModel, has_credentials, redact_url};
use stepscope_model::GpuEventKind;
use stepscope_report::kernel_id::kernel_id;
use stepscope_serving::config::Framework;
use stepscope_serving::grade::engage::{Expectations, KernelReader};
use stepscope_serving::grade::live::{
    LivePlan, LiveRun, SideSource, default_out, different_models, run_live, served_model_at,
};
use stepscope_serving::profile::profiler_dir;
use stepscope_serving::profile::{Interrupt, Timeouts, attach_fingerprint};
use stepscope_serving::{ConfigKind, LoadSettings, load_config};

/// Whether a side is run live: a URL, or a config file (`.yaml`, `.yml`).
pub fn is_live(side: &Path) -> bool {
    is_url(side) || is_config(side)
}

fn is_url(side: &Path) -> bool {
    let text = side.to_string_lossy();
    text.starts_with("http://") || text.starts_with("https://")
}

fn is_config(side: &Path) -> bool {
    side.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}

/// Runs the live grading.
pub fn run(args: &GradeArgs) -> anyhow::Result<Outcome> {
    let plan = match resolve(args).and_then(|plan| check_models(&plan, args).map(|()| plan)) {
        Ok(plan) => plan,
        Err(error) => {
            output::print_error(&error);
            return Ok(Outcome::InputError);
        }
    };
    let out = args.out.clone().unwrap_or_else(default_out);
    let configs: Vec<PathBuf> = plan
        .sources
        .iter()
        .filter_map(|s| match s {
            SideSource::Config(file) => Some(file.path.clone()),
            SideSource::Url { .. } => None,
        })
        .collect();
    let outputs = [super::outputs::Output::folder("--out", &out)];
    if let Err(error) = super::outputs::refuse_overwrites(&outputs, &configs) {
        output::print_error(&error);
        return Ok(Outcome::InputError);
    }
    let interrupt = Interrupt::install(plan.stop_grace, |_| {})
        .context("Could not install the signal handlers")?;
    let mut lines = PhaseLines::of("grade", !args.no_progress);
    lines.say(&format!("run directory {}", out.display()));
    let run = run_live(&plan, &out, &interrupt, &mut |text| {
        if text.starts_with("phase ") {
            lines.line(text);
        } else {
            lines.say(text);
        }
    });
    lines.finish();
    let run = match run {
        Ok(run) => run,
        Err(error) => {
            output::print_error(&anyhow::Error::new(error));
            return Ok(Outcome::InputError);
        }
    };
    if let Ok(graded) = &run.grade {
        super::grade_page::write(&out, &run, graded)?;
    }
    conclude(&run, &out, args, &interrupt)
}

/// Prints the grade and where the run is, and gives the exit outcome.
fn conclude(
    run: &LiveRun,
    out: &Path,
    args: &GradeArgs,
    interrupt: &Interrupt,
) -> anyhow::Result<Outcome> {
    let signalled = || Outcome::Signalled(interrupt.signal().unwrap_or(2));
    let graded = match &run.grade {
        Ok(graded) => graded,
        Err(why) => {
            // No grade: the sides cannot be compared (refused), or the run ended first.
            output::print_error(&anyhow::anyhow!("{why}"));
            output::note(&format!(
                "run directory {} (grade.json has the run)",
                out.display()
            ));
            return Ok(match run.record.status {
                "interrupted" => signalled(),
                "failed" => Outcome::RunFailed,
                _ => Outcome::InputError,
            });
        }
    };
    let outcome = match run.record.status {
        "interrupted" => Some(signalled()),
        "failed" => {
            let error = run.record.error.clone().unwrap_or_default();
            output::print_error(&hinted(
                error,
                format!(
                    "the phases saved before it are graded below; {}/grade.json has the run",
                    out.display()
                ),
            ));
            Some(Outcome::RunFailed)
        }
        _ => None,
    };
    let decided = finish(graded, args.json)?;
    output::note(&format!(
        "run directory {} (grade.json, report.html); grade its phases again offline with: {}",
        out.display(),
        run.record.regrade
    ));
    Ok(outcome.unwrap_or(decided))
}

/// The sides and the load, checked; errors are usage errors (exit 2). Nothing is created
/// before they pass: a URL with credentials is refused here, its secret not echoed.
fn resolve(args: &GradeArgs) -> anyhow::Result<LivePlan> {
    for (path, label) in [(&args.base, "BASE"), (&args.candidate, "CANDIDATE")] {
        let text = path.to_string_lossy();
        if is_url(path) && has_credentials(&text) {
            return Err(hinted(
                format!(
                    "{label} `{}` carries credentials: stepscope speaks plain HTTP and saves every side's URL in grade.json, so it takes none",
                    redact_url(&text)
                ),
                "give the server's address without `user:password@` (a server behind authentication: grade it through a local proxy that adds them)",
            ));
        }
    }
    let base = side(&args.base, args.base_fingerprint.as_deref(), "BASE")?;
    let candidate = side(
        &args.candidate,
        args.candidate_fingerprint.as_deref(),
        "CANDIDATE",
    )?;
    let sources = [base, candidate];
    let probe = (args.output_probes > 0).then_some(ProbeSettings {
        prompts: args.output_probes as usize,
        max_tokens: args.probe_tokens as usize,
    });
    let candidate_profiler = engage_profiler(args, &sources[1])?;
    Ok(LivePlan {
        bench: load_options(args, &sources)?,
        sources,
        settings: settings(args, 1),
        min_phases: args.min_phases as usize,
        max_phases: args.max_phases as usize,
        max_time: args.max_time,
        probe,
        expect: Expectations {
            kernels: args.expect_kernel.clone(),
            envs: args.expect_env.clone(),
            window_steps: args.engage_window_steps,
        },
        kernel_reader: (!args.expect_kernel.is_empty()).then(kernel_reader),
        candidate_profiler,
        ready_timeout: Duration::from_secs(args.ready_timeout),
        stop_grace: Timeouts::default().stop_grace,
    })
}

/// Where a `--expect-kernel` window on the candidate finds its traces: a URL candidate's
/// from the flags (required), a config's from its own profiler settings (which must be on).
fn engage_profiler(
    args: &GradeArgs,
    candidate: &SideSource,
) -> anyhow::Result<Option<(Framework, PathBuf)>> {
    if args.expect_kernel.is_empty() {
        return Ok(None);
    }
    match candidate {
        SideSource::Url { .. } => match &args.candidate_trace_dir {
            Some(dir) => Ok(Some((args.candidate_framework.framework(), dir.clone()))),
            None => Err(hinted(
                "--expect-kernel on a CANDIDATE URL needs the folder its torch profiler writes to",
                "give --candidate-trace-dir DIR (and --candidate-framework when it is not vLLM)",
            )),
        },
        SideSource::Config(file) => {
            profiler_dir(&file.config).map_err(|e| {
                anyhow::anyhow!(
                    "--expect-kernel records a profile window on the candidate, and `{}` does not enable its profiler: {e}\n(a profiler that is not recording costs nothing; the window is taken before the timed phases)",
                    file.path.display()
                )
            })?;
            Ok(None)
        }
    }
}

/// The kernel ids of trace files, read with the trace readers `analyze` uses.
fn kernel_reader() -> KernelReader {
    KernelReader(Arc::new(|files: &[PathBuf]| {
        let mut ids = BTreeSet::new();
        for file in files {
            let trace = read_trace_file(file, &ReadOptions::default())
                .map_err(|e| format!("`{}` could not be read: {e}", file.display()))?;
            for (kind, name) in trace.gpu.kind.iter().zip(&trace.gpu.name) {
                if *kind == GpuEventKind::Kernel {
                    ids.insert(kernel_id(trace.name(*name)));
                }
            }
        }
        Ok(ids)
    }))
}

/// Before anything is created: every URL side answers with its model, and the sides serve
/// one model (configs: name one) unless --allow-model-change.
fn check_models(plan: &LivePlan, args: &GradeArgs) -> anyhow::Result<()> {
    let mut models = [None, None];
    for (at, source) in plan.sources.iter().enumerate() {
        let label = ["base", "candidate"][at];
        match source {
            SideSource::Url { url, .. } => {
                let mut options = plan.bench.clone();
                options.base_url.clone_from(url);
                let served = served_model_at(&options, label).map_err(|e| anyhow::anyhow!(e))?;
                models[at] = Some(served);
            }
            SideSource::Config(file) => {
                models[at] = Some(ServedModel {
                    id: file.config.model.clone(),
                    root: None,
                    max_model_len: None,
                });
            }
        }
    }
    if let [Some(base), Some(candidate)] = &models
        && !args.allow_model_change
        && let Some(why) = different_models(base, candidate)
    {
        bail!(why);
    }
    Ok(())
}

fn side(path: &Path, fingerprint: Option<&str>, label: &str) -> anyhow::Result<SideSource> {
    if is_url(path) {
        let url = path.to_string_lossy();
        // The OpenAI base-URL form (`…/v1`) names the same server.
        let url = url.trim_end_matches('/').trim_end_matches("/v1").to_owned();
        let fingerprint = match fingerprint {
            Some(given) => Some(
                attach_fingerprint(&url, Some(given), Path::new("."), Path::new(""))
                    .map_err(|e| anyhow::anyhow!("--{}-fingerprint: {e}", label.to_lowercase()))?,
            ),
            None => None,
        };
        return Ok(SideSource::Url { url, fingerprint });
    }
    if fingerprint.is_some() {
        bail!(
            "--{}-fingerprint is for a URL side; {label} is the config `{}`, whose fingerprint is computed from it",
            label.to_lowercase(),
            path.display()
        );
    }
    let file = load_config(path).with_context(|| label.to_owned())?;
    if file.config.kind == ConfigKind::Profile {
        return Err(hinted(
            format!(
                "{label} `{}` is a profile config: profile runs are never graded (the switches that make the profiler record every replay change how fast replays run, so its throughput is not the server's as shipped)",
                path.display()
            ),
            "grade a baseline config (`kind: baseline`) of the same server",
        ));
    }
    let file = super::profile::load_profile_config(path, ConfigKind::Baseline)?;
    Ok(SideSource::Config(Box::new(file)))
}

/// The load of every phase: the flags, else the configs' `load` (which must agree), else
/// the defaults.
fn load_options(args: &GradeArgs, sources: &[SideSource; 2]) -> anyhow::Result<BenchOptions> {
    let loads: Vec<(&Path, LoadSettings)> = sources
        .iter()
        .filter_map(|s| match s {
            SideSource::Config(file) => Some((file.path.as_path(), file.config.load)),
            SideSource::Url { .. } => None,
        })
        .collect();
    let flags = [
        args.concurrency,
        args.num_prompts,
        args.input_len,
        args.output_len,
    ];
    if let [(first, a), (second, b)] = loads.as_slice()
        && a != b
        && flags.iter().any(Option::is_none)
    {
        return Err(hinted(
            format!(
                "The configs ask for different loads (`{}`: {a:?}; `{}`: {b:?}), and a grading runs one load on both sides",
                first.display(),
                second.display()
            ),
            "make their `load:` equal, or give --concurrency, --num-prompts, --input-len and --output-len",
        ));
    }
    let config = loads.first().map(|(_, load)| *load);
    let pick = |flag: Option<u32>, from: fn(&LoadSettings) -> u32, default: u32| {
        flag.or(config.as_ref().map(from)).unwrap_or(default) as usize
    };
    let mut options = BenchOptions::default();
    options.model = args.model.clone().unwrap_or_default();
    options.concurrency = pick(args.concurrency, |l| l.concurrency, 16);
    options.num_prompts = pick(args.num_prompts, |l| l.num_prompts, 128);
    options.input_len = pick(args.input_len, |l| l.input_len, 256);
    options.output_len = pick(args.output_len, |l| l.output_len, 128);
    options.warmup = args.warmup as usize;
    options.timeout = args.request_timeout;
    // The server was checked when its model was read: a failed first request of a phase is
    // the candidate's failure, counted and graded, not a reason to stop the run.
    options.initial_test = false;
    options.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(options)
}
