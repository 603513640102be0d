//! What profiling costs in throughput: load phases with the profiler off and on,
//! alternating on the same server at the same concurrency, and with `--baseline` the same
//! phases on a server booted from the baseline config (the runtime switches' own cost).
//! Every phase sends prompts of its own seed, so no phase is served from another's prefix
//! cache.

use super::load::LoadRun;
use super::record::{Comparison, PhaseRecord, ThroughputRecord};
use super::rundir::RunDir;
use super::{Interrupt, ProfileError, Timeouts};
use crate::collect::{Expected, TraceSnapshot, collect_traces};
use crate::windows::{ProfileEndpoint, start_open_window, stop_window};
use stepscope_load::{BenchOptions, BenchReport};

/// What the phases need from the run.
pub(super) struct PhaseContext<'a> {
    pub run: &'a RunDir,
    pub options: &'a BenchOptions,
    pub interrupt: &'a Interrupt,
    pub timeouts: &'a Timeouts,
}

/// `count` pairs of phases on the profile config's server: profiler off, then on.
pub(super) fn profile_phases(
    context: &PhaseContext<'_>,
    endpoint: &ProfileEndpoint,
    count: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<(), ProfileError> {
    for index in 1..=count {
        progress(&format!("throughput phase {index}/{count}: profiler off"));
        let report = run_phase(context, seed(context, index, 0))?;
        push(context, "unprofiled", index, &report, Vec::new(), false)?;
        progress(&format!("throughput phase {index}/{count}: profiler on"));
        let before = TraceSnapshot::take(&endpoint.trace_dir);
        start_open_window(endpoint)?;
        let report = run_phase(context, seed(context, index, 1));
        stop_window(endpoint, context.timeouts.window)?;
        let report = report?;
        let dest = context.run.path(&format!("throughput/profiled-{index}"));
        let options = context.timeouts.collect_options(Expected::default());
        let collected = collect_traces(
            endpoint.framework,
            &endpoint.trace_dir,
            &before,
            &dest,
            options,
            progress,
        )?;
        let traces = collected
            .traces
            .iter()
            .map(|t| context.run.relative(&t.path))
            .collect();
        push(context, "profiled", index, &report, traces, false)?;
    }
    Ok(())
}

/// `count` phases on the baseline config's server.
pub(super) fn baseline_phases(
    context: &PhaseContext<'_>,
    count: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<(), ProfileError> {
    for index in 1..=count {
        progress(&format!("baseline phase {index}/{count}"));
        let report = run_phase(context, seed(context, index, 0))?;
        push(context, "baseline", index, &report, Vec::new(), true)?;
    }
    Ok(())
}

/// Phase `index`'s prompts: `kind` 0 for profiler off (and the baseline's matching phase),
/// 1 for on.
fn seed(context: &PhaseContext<'_>, index: usize, kind: u64) -> u64 {
    context.options.seed + 1000 + 2 * index as u64 + kind
}

fn run_phase(context: &PhaseContext<'_>, seed: u64) -> Result<BenchReport, ProfileError> {
    let mut options = context.options.clone();
    options.seed = seed;
    let load = LoadRun::start(options, context.interrupt.flag())
        .map_err(|e| ProfileError::Load(e.to_string()))?;
    let report = load.join().map_err(ProfileError::Load)?;
    if context.interrupt.requested() {
        return Err(ProfileError::Interrupted);
    }
    if report.summary.requests_completed == 0 {
        let failures = serde_json::to_string(&report.summary.failure_examples).unwrap_or_default();
        return Err(ProfileError::Load(format!(
            "no request of the phase completed: {failures}"
        )));
    }
    Ok(report)
}

fn push(
    context: &PhaseContext<'_>,
    kind: &'static str,
    index: usize,
    report: &BenchReport,
    traces: Vec<String>,
    baseline: bool,
) -> Result<(), ProfileError> {
    let file = format!("bench/{kind}-{index}.json");
    let phase = PhaseRecord {
        kind,
        index,
        load: super::write_load_report(context.run, &file, report)?,
        traces,
    };
    context.run.update(|record| {
        let throughput = record
            .throughput
            .get_or_insert_with(ThroughputRecord::default);
        if baseline {
            throughput.baseline_phases.push(phase);
        } else {
            throughput.phases.push(phase);
        }
        throughput.comparisons = compare(throughput);
    })?;
    Ok(())
}

/// The comparisons the phases so far allow.
pub fn compare(throughput: &ThroughputRecord) -> Vec<Comparison> {
    let rates = |phases: &[PhaseRecord], kind: &str| -> Vec<f64> {
        phases
            .iter()
            .filter(|p| p.kind == kind)
            .map(|p| p.load.output_tokens_per_s)
            .collect()
    };
    let off = rates(&throughput.phases, "unprofiled");
    let on = rates(&throughput.phases, "profiled");
    let baseline = rates(&throughput.baseline_phases, "baseline");
    let mut comparisons = Vec::new();
    if let Some(mut comparison) = comparison(
        "profiler on vs off",
        ("unprofiled", &off),
        ("profiled", &on),
    ) {
        // Alternating phases pair up: each pair's own difference bounds the spread.
        let pairs: Vec<f64> = off
            .iter()
            .zip(&on)
            .map(|(off, on)| percent(*on, *off))
            .collect();
        comparison.spread_pct = [min(&pairs), max(&pairs)];
        comparisons.push(comparison);
    }
    if let Some(comparison) = comparison(
        "profile config (switches on, profiler off) vs baseline config",
        ("baseline", &baseline),
        ("unprofiled", &off),
    ) {
        comparisons.push(comparison);
    }
    comparisons
}

fn comparison(
    what: &str,
    (reference, reference_rates): (&'static str, &[f64]),
    (subject, subject_rates): (&'static str, &[f64]),
) -> Option<Comparison> {
    let reference_median = median(reference_rates)?;
    let subject_median = median(subject_rates)?;
    let phases = reference_rates.len().min(subject_rates.len());
    Some(Comparison {
        what: what.to_owned(),
        reference,
        subject,
        reference_median,
        subject_median,
        difference_pct: percent(subject_median, reference_median),
        spread_pct: [
            percent(min(subject_rates), max(reference_rates)),
            percent(max(subject_rates), min(reference_rates)),
        ],
        phases,
    })
}

fn percent(value: f64, reference: f64) -> f64 {
    if reference > 0.0 {
        (value - reference) / reference * 100.0
    } else {
        0.0
    }
}

fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    stepscope_load::stats::median_sorted(&sorted)
}

fn min(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}
