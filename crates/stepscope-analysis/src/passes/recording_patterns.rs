//! Recording patterns: which way the profile lost replays, so the cure fits the cause.
//!
//! What it computes, from the replays' statuses and the trace's launches:
//! - `NoGpuEvents`: launches exist and not one GPU event;
//! - `RecordingStopped`: eager launches without GPU work (at least 3, and 1 % of them, over
//!   at least the last 2 % of the host's launch span; launches under stream capture aside),
//!   all but a twentieth late enough that their work would have started after the last
//!   recorded GPU event at the longest launch-to-start delay the trace shows, or forming a
//!   tail (from the first of them on, no more launches with work than without). It explains
//!   the empty replays launched after that point and those cut off midway (their last
//!   recorded event is their stream's last). Eager launches are the witness: in every shared
//!   real trace each one has its GPU work;
//! - `PartialReplays`: short replays the stop does not explain, including launch slots and
//!   runs whose replays each kept a different part (graph identity sized them by the parts);
//! - `EmptyReplays`: whole replays without a kernel that the two above do not explain;
//! - `KernelsAfterStep`, `ImplausibleDurations`: replays `replay_coverage` flagged as deferred
//!   (after their step, against stream order) or holding other kernels' durations.
//!
//! Each finding carries its replays and their share of the GPU time.
//!
//! Why it matters: each has its own cure (`stepscope_model::patterns`, with the public issues
//! each rests on): the
//! packet-capture switches cure empty replays on HIP 7.1–7.2.3, not a roctracer race (ROCm
//! ≥ 7.2.2 and the wheel's copies), not the profiler's event cap (`ROCTRACER_MAX_EVENTS`,
//! or CUPTI's buffers on CUDA).
//! Example: GPU events end at 60 % of a window whose host launches go on: 412 eager launches
//! and 12 graph replays after that point have no GPU work → `RecordingStopped`, cure: raise
//! `ROCTRACER_MAX_EVENTS` or profile a shorter window.

use super::capture_graphs::CapturedGraph;
use super::graph_identity::SizeSource;
use super::launch_links::LaunchLinks;
use super::replay_coverage::{ReplayCoverage, ReplayStatus};
use super::steps::Steps;
use rustc_hash::{FxHashMap, FxHashSet};
use stepscope_model::patterns::RecordingPattern;
use stepscope_model::{
    CorrelationId, DamagedTable, Duration, RuntimeCallKind, StreamId, Timestamp, Trace,
};

/// What was seen, per pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PatternDetail {
    /// Replays without a kernel.
    EmptyReplays {
        /// How many.
        empty: u32,
    },
    /// Replays that kept part of their graph.
    PartialReplays {
        /// Smallest share of its graph's likeliest size a short replay kept.
        kept_low: f64,
        /// Largest share.
        kept_high: f64,
        /// Of them, replays at slots (or in runs) whose replays each kept a different part.
        in_partial_slots: u32,
    },
    /// GPU recording stopped.
    RecordingStopped {
        /// Start of the last eager launch that has GPU work (host).
        last_launch_with_work: Timestamp,
        /// End of the last recorded GPU event.
        last_gpu_end: Timestamp,
        /// Eager launches without GPU work (all but a twentieth of them late enough that
        /// their work would have run after the last recorded GPU event).
        eager_after: u32,
        /// Graph replays the stop explains: empty ones launched that late, and ones cut off
        /// midway.
        graph_after: u32,
        /// Share of the host's launch span from the last recorded GPU event (less the
        /// longest launch-to-start delay) to the last launch.
        window_after: f64,
    },
    /// No GPU event at all.
    NoGpuEvents {
        /// Eager and graph launches.
        launches: u32,
    },
    /// Replays' kernels recorded after their step.
    KernelsAfterStep {
        /// Of them, replays whose kernels started after the last step of their process
        /// ended (the burst after the last step marker).
        after_last_step: u32,
    },
    /// Replays holding other kernels' durations.
    ImplausibleDurations {
        /// Graphs they belong to.
        graphs: u32,
    },
}

/// One pattern found.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternFinding {
    /// The pattern.
    pub pattern: RecordingPattern,
    /// Replays it explains (indices in launch order).
    pub replays: Vec<usize>,
    /// What was seen.
    pub detail: PatternDetail,
    /// Share of the GPU time these replays account for: for lost kernels, their missing
    /// time over recorded + missing (at least, at most); for mistimed ones, their recorded
    /// time over all recorded GPU time.
    pub gpu_share: (f64, f64),
}

/// Inputs besides the trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PatternInputs<'a> {
    /// Launch links.
    pub links: &'a LaunchLinks,
    /// Their coverage.
    pub coverage: &'a ReplayCoverage,
    /// Steps.
    pub steps: &'a Steps,
    /// Graphs captured in this trace: eager launches inside them run no GPU work.
    pub captures: &'a [CapturedGraph],
}

/// Finds the patterns, most basic first (no GPU events, recording stopped, partial, empty).
pub(crate) fn recording_patterns(trace: &Trace, inputs: PatternInputs<'_>) -> Vec<PatternFinding> {
    let mut found = Vec::new();
    let replays = &inputs.coverage.replays;
    let mut explained = vec![false; replays.len()];
    if let Some(finding) = no_gpu_events(trace, inputs) {
        finding.replays.iter().for_each(|&r| explained[r] = true);
        found.push(finding);
    } else if let Some(finding) = recording_stopped(trace, inputs) {
        finding.replays.iter().for_each(|&r| explained[r] = true);
        found.push(finding);
    }
    if let Some(finding) = partial_replays(inputs, &explained) {
        found.push(finding);
    }
    let empty: Vec<usize> = (0..replays.len())
        .filter(|&r| replays[r].status == ReplayStatus::Empty && !explained[r])
        .collect();
    if !empty.is_empty() {
        found.push(finding(
            RecordingPattern::EmptyReplays,
            PatternDetail::EmptyReplays {
                empty: empty.len() as u32,
            },
            empty,
        ));
    }
    found.extend(kernels_after_step(trace, inputs));
    found.extend(implausible_durations(inputs));
    for f in &mut found {
        f.gpu_share = gpu_share(f, inputs.coverage);
    }
    found
}

fn finding(
    pattern: RecordingPattern,
    detail: PatternDetail,
    replays: Vec<usize>,
) -> PatternFinding {
    PatternFinding {
        pattern,
        replays,
        detail,
        gpu_share: (0.0, 0.0),
    }
}

/// See [`PatternFinding::gpu_share`].
fn gpu_share(finding: &PatternFinding, coverage: &ReplayCoverage) -> (f64, f64) {
    let replays = finding.replays.iter().map(|&r| &coverage.replays[r]);
    let recorded = coverage.recorded_gpu_time.as_nanos() as f64;
    let share = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
    if matches!(
        finding.pattern,
        RecordingPattern::KernelsAfterStep | RecordingPattern::ImplausibleDurations
    ) {
        let time: f64 = replays.map(|r| r.recorded_time.as_nanos() as f64).sum();
        let s = share(time, recorded);
        return (s, s);
    }
    let (mut low, mut high) = (0.0, Some(0.0));
    for r in replays {
        low += r.missing_time.low.as_nanos() as f64;
        high = high
            .zip(r.missing_time.high)
            .map(|(h, m)| h + m.as_nanos() as f64);
    }
    let total_high = coverage
        .totals
        .missing_time
        .high
        .map(|h| h.as_nanos() as f64);
    let high = match (high, total_high) {
        (Some(h), Some(t)) => Some(h.min(t)),
        (h, t) => h.or(t),
    };
    (
        share(low, recorded + low),
        high.map_or(1.0, |h| share(h, recorded + h)),
    )
}

fn kernels_after_step(trace: &Trace, inputs: PatternInputs<'_>) -> Option<PatternFinding> {
    let replays = &inputs.coverage.replays;
    let deferred: Vec<usize> = (0..replays.len())
        .filter(|&r| replays[r].deferred)
        .collect();
    if deferred.is_empty() {
        return None;
    }
    let mut last_end: FxHashMap<_, Timestamp> = FxHashMap::default();
    for step in &inputs.steps.steps {
        let end = last_end.entry(step.process).or_insert(step.end);
        *end = (*end).max(step.end);
    }
    let after_last_step = deferred
        .iter()
        .filter(|&&r| {
            let launch = replays[r].launch as usize;
            let end = last_end.get(&trace.runtime.process[launch]);
            let first = inputs.links.first_start(trace, launch);
            first.zip(end).is_some_and(|(f, end)| f > *end)
        })
        .count() as u32;
    Some(finding(
        RecordingPattern::KernelsAfterStep,
        PatternDetail::KernelsAfterStep { after_last_step },
        deferred,
    ))
}

fn implausible_durations(inputs: PatternInputs<'_>) -> Option<PatternFinding> {
    let replays = &inputs.coverage.replays;
    let flagged: Vec<usize> = (0..replays.len())
        .filter(|&r| replays[r].implausible)
        .collect();
    if flagged.is_empty() {
        return None;
    }
    let mut graphs: Vec<usize> = flagged.iter().filter_map(|&r| replays[r].graph).collect();
    graphs.sort_unstable();
    graphs.dedup();
    Some(finding(
        RecordingPattern::ImplausibleDurations,
        PatternDetail::ImplausibleDurations {
            graphs: graphs.len() as u32,
        },
        flagged,
    ))
}

fn launch_rows(trace: &Trace) -> impl Iterator<Item = usize> + '_ {
    (0..trace.runtime.len()).filter(|&r| {
        matches!(
            trace.runtime.kind[r],
            RuntimeCallKind::EagerLaunch | RuntimeCallKind::GraphLaunch
        )
    })
}

fn no_gpu_events(trace: &Trace, inputs: PatternInputs<'_>) -> Option<PatternFinding> {
    let launches = launch_rows(trace).count() as u32;
    // GPU events refused for bad data were recorded: the damage says so, not a pattern.
    let refused = refused_gpu_correlations(trace);
    (trace.gpu.is_empty() && launches > 0 && refused.is_empty()).then(|| {
        finding(
            RecordingPattern::NoGpuEvents,
            PatternDetail::NoGpuEvents { launches },
            (0..inputs.coverage.replays.len()).collect(),
        )
    })
}

/// The correlation ids of GPU events refused for bad data: their launches had GPU work,
/// which the file recorded and the reader refused.
fn refused_gpu_correlations(trace: &Trace) -> FxHashSet<CorrelationId> {
    trace
        .damaged
        .events
        .iter()
        .filter(|e| e.table == DamagedTable::Gpu && e.correlation != CorrelationId::NONE)
        .map(|e| e.correlation)
        .collect()
}

/// Eager launches not under stream capture (host start, GPU start of their first event, if
/// any), in host order. A launch whose GPU work was refused for bad data is left out: its
/// work was recorded, so it is no witness of a recording that stopped.
fn eager_launches(trace: &Trace, inputs: PatternInputs<'_>) -> Vec<(Timestamp, Option<Timestamp>)> {
    let (runtime, links) = (&trace.runtime, inputs.links);
    let captured = |r: usize| {
        inputs
            .captures
            .iter()
            .any(|c| c.contains(runtime.process[r], runtime.thread[r], runtime.start[r]))
    };
    let refused = refused_gpu_correlations(trace);
    let mut eager: Vec<(Timestamp, Option<Timestamp>)> = (0..runtime.len())
        .filter(|&r| runtime.kind[r] == RuntimeCallKind::EagerLaunch && !captured(r))
        .filter(|&r| !refused.contains(&runtime.correlation[r]))
        .map(|r| (runtime.start[r], links.first_start(trace, r)))
        .collect();
    eager.sort_unstable();
    eager
}

/// Share of the host's launch span a stop must leave without GPU work.
const MIN_WINDOW_AFTER: f64 = 0.02;

fn recording_stopped(trace: &Trace, inputs: PatternInputs<'_>) -> Option<PatternFinding> {
    let eager = eager_launches(trace, inputs);
    // How far the GPU ran behind the host: the longest launch-to-start delay recorded.
    let lag = eager
        .iter()
        .filter_map(|(host, gpu)| gpu.map(|g| g - *host))
        .max()?;
    let last_gpu_end = (0..trace.gpu.len()).map(|r| trace.gpu.end(r)).max()?;
    let without: Vec<Timestamp> = eager
        .iter()
        .filter(|(_, gpu)| gpu.is_none())
        .map(|(host, _)| *host)
        .collect();
    let enough = without.len() >= 3 && without.len() * 100 >= eager.len();
    // A launch whose work would have started after the last recorded GPU event, at the
    // longest delay seen, is explained by the recording having stopped.
    let explained = without.iter().filter(|&&h| h + lag >= last_gpu_end).count();
    // Or the launches without work are a tail: from the first of them on, most launches
    // lack work (a backlogged GPU runs later launches later still than the delay seen).
    let first_without = *without.first()?;
    let with_after = eager
        .iter()
        .filter(|(host, gpu)| *host > first_without && gpu.is_some())
        .count();
    let tail = with_after <= without.len();
    if !enough || (explained * 20 < without.len() * 19 && !tail) {
        return None;
    }
    let runtime = &trace.runtime;
    let cut = if tail {
        first_without.min(last_gpu_end.offset(Duration::ZERO - lag))
    } else {
        last_gpu_end.offset(Duration::ZERO - lag)
    };
    let replays = stopped_replays(trace, inputs, cut);
    let hosts: Vec<Timestamp> = launch_rows(trace).map(|r| runtime.start[r]).collect();
    let (first, last) = (*hosts.iter().min()?, *hosts.iter().max()?);
    let span = (last - first).as_nanos().max(1) as f64;
    let last_with = eager
        .iter()
        .filter(|(_, gpu)| gpu.is_some())
        .map(|(host, _)| *host)
        .max()?;
    let window_after = ((last - cut.max(first)).as_nanos().max(0) as f64 / span).min(1.0);
    // The last launches of a window may lose their GPU records as the profiler stops: a
    // stop that matters spans more than that.
    if window_after < MIN_WINDOW_AFTER {
        return None;
    }
    Some(finding(
        RecordingPattern::RecordingStopped,
        PatternDetail::RecordingStopped {
            last_launch_with_work: last_with,
            last_gpu_end,
            eager_after: without.len() as u32,
            graph_after: replays.len() as u32,
            window_after,
        },
        replays,
    ))
}

/// Replays the stop explains: empty ones launched after `cut`, and short or unverified ones
/// launched after `cut` or whose last recorded event is the last GPU event that started on
/// their stream (cut off midway).
fn stopped_replays(trace: &Trace, inputs: PatternInputs<'_>, cut: Timestamp) -> Vec<usize> {
    let gpu = &trace.gpu;
    let mut last_start: FxHashMap<(u32, StreamId), Timestamp> = FxHashMap::default();
    for g in 0..gpu.len() {
        let entry = last_start
            .entry((gpu.device[g], gpu.stream[g]))
            .or_insert(gpu.start[g]);
        *entry = (*entry).max(gpu.start[g]);
    }
    let cut_off = |launch: usize| {
        let launched = inputs.links.launched(launch);
        launched
            .iter()
            .map(|&g| g as usize)
            .max_by_key(|&g| gpu.start[g])
            .is_some_and(|g| last_start.get(&(gpu.device[g], gpu.stream[g])) == Some(&gpu.start[g]))
    };
    let replays = &inputs.coverage.replays;
    (0..replays.len())
        .filter(|&i| {
            let r = &replays[i];
            let launch = r.launch as usize;
            match r.status {
                ReplayStatus::Empty => trace.runtime.start[launch] >= cut,
                ReplayStatus::Short | ReplayStatus::Unverified => {
                    trace.runtime.start[launch] >= cut || cut_off(launch)
                }
                _ => false,
            }
        })
        .collect()
}

fn partial_replays(inputs: PatternInputs<'_>, explained: &[bool]) -> Option<PatternFinding> {
    let coverage = inputs.coverage;
    let replays: Vec<usize> = (0..coverage.replays.len())
        .filter(|&r| coverage.replays[r].status == ReplayStatus::Short && !explained[r])
        .collect();
    let mut kept: Vec<f64> = replays
        .iter()
        .map(|&r| {
            let replay = &coverage.replays[r];
            // Against the likeliest size: a run's union, not its floor.
            let likeliest = replay
                .graph
                .and_then(|g| coverage.graphs.get(g))
                .and_then(|g| g.expected_nodes)
                .unwrap_or(0)
                .max(replay.expected.low)
                .max(1);
            f64::from(replay.recorded_nodes) / f64::from(likeliest)
        })
        .collect();
    if replays.is_empty() {
        return None;
    }
    kept.sort_by(f64::total_cmp);
    let unions = replays
        .iter()
        .filter(|&&r| {
            coverage.replays[r]
                .graph
                .and_then(|g| coverage.graphs.get(g))
                .is_some_and(|g| matches!(g.size_source, Some(SizeSource::Union(_))))
        })
        .count() as u32;
    Some(finding(
        RecordingPattern::PartialReplays,
        PatternDetail::PartialReplays {
            kept_low: kept.first().copied().unwrap_or(0.0),
            kept_high: kept.last().copied().unwrap_or(0.0),
            in_partial_slots: unions,
        },
        replays,
    ))
}
