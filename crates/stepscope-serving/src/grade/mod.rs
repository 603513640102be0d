//! Grading a change by its serving throughput: KEEP, REVERT or INCONCLUSIVE, beyond the
//! noise between benchmark phases.
//!
//! Each side is a set of benchmark phases (`stepscope bench --json` documents). The decision
//! rests on each phase's output tokens per second: the typical ratio of a candidate phase to
//! a base phase, with its distribution-free confidence interval (`stepscope_stats::noise`:
//! Hodges–Lehmann with the Mann–Whitney interval), against a minimum effect. KEEP when the
//! whole interval lies above `+min_effect`; REVERT when it lies below `−min_effect`, or when
//! the candidate breaks a service-level objective (`--slo ttft_ms.p99=500`: the median
//! phase's value) that the base meets; INCONCLUSIVE otherwise, with the phases a side that
//! would likely settle it.
//!
//! A live grading looks at its phases several times as they accumulate and stops at the
//! first decision; each look gets `1 / looks` of the 5 % error rate (Bonferroni), so that
//! the chance of any wrong decision over the whole run stays at most 5 %. The looks fall
//! where the phases a side double ([`look_points`]): few looks, each with much more evidence
//! than the one before, so little power is spent on the correction.
//!
//! Profile runs are never graded: the switches that make the profiler record every replay
//! change how fast replays run, so their throughput is not the server's.

pub mod live;
pub mod schedule;

use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
pub use stepscope_stats::noise::RelativeChange;
use stepscope_stats::noise::{CONFIDENCE, Direction, median, min_samples, relative_change};

/// How a grading is made.
#[derive(Debug, Clone, PartialEq)]
pub struct GradeSettings {
    /// The smallest change worth a decision, in percent.
    pub min_effect_pct: f64,
    /// Objectives the candidate must keep where the base does.
    pub slos: Vec<Slo>,
    /// How many times the phases are graded before the last grading (1 offline; a live
    /// run's `looks`, to grade its phases again as it did).
    pub looks: usize,
}

/// The confidence of each of `looks` gradings, so that all of them together are wrong at
/// most 5 % of the time: `1 − 5 % / looks`.
pub fn look_confidence(looks: usize) -> f64 {
    1.0 - (1.0 - CONFIDENCE) / looks.max(1) as f64
}

/// The phases a side at which a live run grades: `min`, then doubling, and `max` last.
pub fn look_points(min: usize, max: usize) -> Vec<usize> {
    let mut points = Vec::new();
    let mut n = min.max(1);
    while n < max {
        points.push(n);
        n = n.saturating_mul(2);
    }
    points.push(max.max(min));
    points
}

/// The summary values whose change is reported beside output tok/s (not decided on).
pub const REPORTED_METRICS: [&str; 6] = [
    "throughput.requests_per_s",
    "throughput.total_tokens_per_s",
    "ttft_ms.median",
    "ttft_ms.p99",
    "tpot_ms.median",
    "tpot_ms.p99",
];

/// One reported metric on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricChange {
    /// `throughput.requests_per_s`, `ttft_ms.p99`, …, as in the bench summary.
    pub metric: String,
    /// The base's median phase value.
    pub base_median: f64,
    /// The candidate's.
    pub candidate_median: f64,
    /// The candidate's typical ratio to the base, minus one, with its interval (for
    /// latencies, positive is slower).
    pub change: RelativeChange,
}

/// One benchmark phase, as its `bench --json` document states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    /// The document.
    pub path: String,
    /// `summary.throughput.output_tokens_per_s`.
    pub output_tokens_per_s: f64,
    /// `summary.throughput.requests_per_s`.
    pub requests_per_s: f64,
    /// The whole document's `summary`, for objectives (`ttft_ms.p99`).
    #[serde(skip)]
    pub summary: Value,
}

/// A service-level objective: a summary value (`ttft_ms.p99`) that must stay at or below a
/// limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slo {
    /// `METRIC.STAT` as in the bench summary: `ttft_ms.p99`, `tpot_ms.median`, `e2e_ms.p95`.
    pub metric: String,
    /// The limit, in the metric's unit.
    pub limit: f64,
}

impl Slo {
    /// Parses `METRIC.STAT=LIMIT`.
    ///
    /// # Errors
    ///
    /// The text is not of that form, names an unknown metric or statistic, or has no
    /// finite limit.
    pub fn parse(text: &str) -> Result<Slo, String> {
        let bad = || {
            format!(
                "`{text}` is not an objective: write METRIC.STAT=LIMIT with METRIC one of ttft_ms, tpot_ms, itl_ms, e2e_ms and STAT one of mean, median, p90, p95, p99 (e.g. ttft_ms.p99=500)"
            )
        };
        let (metric, limit) = text.split_once('=').ok_or_else(bad)?;
        let (name, stat) = metric.split_once('.').ok_or_else(bad)?;
        let known_name = ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"].contains(&name);
        let known_stat = ["mean", "median", "p90", "p95", "p99"].contains(&stat);
        let limit: f64 = limit.trim().parse().map_err(|_| bad())?;
        if !known_name || !known_stat || !limit.is_finite() {
            return Err(bad());
        }
        Ok(Slo {
            metric: metric.to_owned(),
            limit,
        })
    }

    /// The objective's value in one phase (`None` when the phase has none).
    fn value(&self, phase: &Phase) -> Option<f64> {
        let (name, stat) = self.metric.split_once('.')?;
        phase.summary[name][stat].as_f64()
    }
}

/// The grade.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Decision {
    /// The candidate is faster beyond noise and the minimum effect, and breaks no objective.
    Keep,
    /// It is slower beyond both, or breaks an objective the base meets.
    Revert,
    /// Neither: within noise or within the minimum effect.
    Inconclusive,
}

impl Decision {
    /// The word, as in the JSON: `KEEP`, `REVERT`, `INCONCLUSIVE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Keep => "KEEP",
            Decision::Revert => "REVERT",
            Decision::Inconclusive => "INCONCLUSIVE",
        }
    }
}

/// An objective on both sides: the median phase's value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SloCheck {
    /// The objective.
    #[serde(flatten)]
    pub slo: Slo,
    /// The base's median phase value (`null`: no phase has it).
    pub base: Option<f64>,
    /// The candidate's.
    pub candidate: Option<f64>,
    /// The base meets it and the candidate does not.
    pub broken: bool,
}

/// The grading and its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grade {
    /// KEEP, REVERT or INCONCLUSIVE.
    pub decision: Decision,
    /// Why, in one sentence.
    pub reason: String,
    /// The minimum effect, in percent.
    pub min_effect_pct: f64,
    /// The gradings the error rate is shared by (1 offline; a live run's looks).
    pub looks: usize,
    /// Output tokens per second: the candidate's typical ratio to the base, minus one, with
    /// its interval at `1 − 5 % / looks` confidence; `null` with no phases on a side.
    pub output_throughput: Option<RelativeChange>,
    /// The other summary values, reported with their intervals (not decided on).
    pub metrics: Vec<MetricChange>,
    /// The objectives.
    pub slos: Vec<SloCheck>,
    /// With INCONCLUSIVE: the phases a side that would likely settle it, when more phases
    /// can (the fewest that give the interval both ends, or where an interval narrowing as
    /// one over the square root of the phases would clear the minimum effect).
    pub phases_to_settle: Option<usize>,
    /// The base's phases, in order.
    pub base: Vec<Phase>,
    /// The candidate's phases, in order.
    pub candidate: Vec<Phase>,
}

/// Grades `candidate` against `base`.
pub fn grade(base: Vec<Phase>, candidate: Vec<Phase>, settings: &GradeSettings) -> Grade {
    let confidence = look_confidence(settings.looks);
    let tps =
        |phases: &[Phase]| -> Vec<f64> { phases.iter().map(|p| p.output_tokens_per_s).collect() };
    let change = relative_change(&tps(&base), &tps(&candidate), confidence);
    let slos: Vec<SloCheck> = settings
        .slos
        .iter()
        .map(|slo| check(slo, &base, &candidate))
        .collect();
    let metrics = REPORTED_METRICS
        .iter()
        .filter_map(|metric| metric_change(metric, &base, &candidate, confidence))
        .collect();
    let min_effect = settings.min_effect_pct / 100.0;
    let (decision, reason, phases_to_settle) = decide(
        change.as_ref(),
        min_effect,
        &slos,
        base.len().min(candidate.len()),
    );
    Grade {
        decision,
        reason,
        min_effect_pct: settings.min_effect_pct,
        looks: settings.looks.max(1),
        output_throughput: change,
        metrics,
        slos,
        phases_to_settle,
        base,
        candidate,
    }
}

/// A summary value (`ttft_ms.p99`) of every phase that has it.
fn summary_values(metric: &str, phases: &[Phase]) -> Vec<f64> {
    let Some((group, name)) = metric.split_once('.') else {
        return Vec::new();
    };
    phases
        .iter()
        .filter_map(|p| p.summary[group][name].as_f64())
        .collect()
}

fn metric_change(
    metric: &str,
    base: &[Phase],
    candidate: &[Phase],
    confidence: f64,
) -> Option<MetricChange> {
    let (mut b, mut c) = (
        summary_values(metric, base),
        summary_values(metric, candidate),
    );
    let change = relative_change(&b, &c, confidence)?;
    Some(MetricChange {
        metric: metric.to_owned(),
        base_median: median(&mut b),
        candidate_median: median(&mut c),
        change,
    })
}

fn check(slo: &Slo, base: &[Phase], candidate: &[Phase]) -> SloCheck {
    let value = |phases: &[Phase]| {
        let mut values: Vec<f64> = phases.iter().filter_map(|p| slo.value(p)).collect();
        (!values.is_empty()).then(|| median(&mut values))
    };
    let (base, candidate) = (value(base), value(candidate));
    let meets = |v: Option<f64>| v.is_some_and(|v| v <= slo.limit);
    SloCheck {
        slo: slo.clone(),
        base,
        candidate,
        broken: meets(base) && !meets(candidate),
    }
}

fn decide(
    change: Option<&RelativeChange>,
    min_effect: f64,
    slos: &[SloCheck],
    phases: usize,
) -> (Decision, String, Option<usize>) {
    if let Some(broken) = slos.iter().find(|s| s.broken) {
        let reason = format!(
            "the candidate breaks {} ≤ {} (median phase {}), which the base meets",
            broken.slo.metric,
            broken.slo.limit,
            broken
                .candidate
                .map_or("missing".to_owned(), |v| format!("{v:.1}"))
        );
        return (Decision::Revert, reason, None);
    }
    let Some(change) = change else {
        let reason = "grading needs phases with an output throughput on both sides".to_owned();
        return (Decision::Inconclusive, reason, None);
    };
    let effect = min_effect * 100.0;
    let confidence = change.confidence * 100.0;
    if !change.is_bounded() {
        let needed = min_samples(change.confidence);
        let reason = format!(
            "output tok/s {:+.1} %, but {phases} phases a side cannot give a {confidence:.1} % interval (it takes {needed})",
            change.estimate * 100.0
        );
        return (Decision::Inconclusive, reason, Some(needed));
    }
    let span = format!(
        "output tok/s {:+.1} % ({confidence:.1} % CI {:+.1} % to {:+.1} %)",
        change.estimate * 100.0,
        change.low * 100.0,
        change.high * 100.0
    );
    match change.direction(min_effect) {
        Direction::Higher => (
            Decision::Keep,
            format!("{span}: faster beyond noise and {effect} %"),
            None,
        ),
        Direction::Lower => (
            Decision::Revert,
            format!("{span}: slower beyond noise and {effect} %"),
            None,
        ),
        Direction::Unclear => {
            let settle = phases_to_settle(change, min_effect, phases);
            (
                Decision::Inconclusive,
                format!("{span}: not beyond noise and {effect} %"),
                settle,
            )
        }
    }
}

/// The phases a side at which the interval, narrowing as `1/√n`, would likely clear the
/// minimum effect on the side of the estimate; `None` when the estimate itself is within it.
fn phases_to_settle(change: &RelativeChange, min_effect: f64, phases: usize) -> Option<usize> {
    let margin = change.estimate.abs() - min_effect;
    if margin <= 0.0 {
        return None;
    }
    let half_width = if change.estimate > 0.0 {
        change.estimate - change.low
    } else {
        change.high - change.estimate
    };
    let needed = phases as f64 * (half_width / margin).powi(2);
    Some((needed.ceil() as usize).max(phases + 1))
}

/// Reads a side: a folder of `bench --json` documents (its `*.json` files, sorted by name),
/// or one such document.
///
/// # Errors
///
/// The path does not exist, is a `stepscope profile` run (never graded), holds no bench
/// document, or a document cannot be read or is not a complete bench run; each names the
/// file and the fix.
pub fn read_phases(path: &Path) -> Result<Vec<Phase>, String> {
    if path.join("results.json").is_file() {
        return Err(format!(
            "`{}` is a stepscope profile run: profile runs are never graded (the switches that record every replay change replay speed)\nhint: grade baseline runs: folders of `stepscope bench --json` documents",
            path.display()
        ));
    }
    let files = phase_files(path)?;
    if files.is_empty() {
        return Err(format!(
            "`{}` holds no bench documents (*.json)\nhint: save each phase with `stepscope bench ... --json PHASE.json`",
            path.display()
        ));
    }
    files.iter().map(|file| read_phase(file)).collect()
}

fn phase_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    if path.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    let entries = fs_err::read_dir(path).map_err(|e| e.to_string())?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

fn read_phase(file: &Path) -> Result<Phase, String> {
    let shown = file.display();
    let bytes = fs_err::read(file).map_err(|e| e.to_string())?;
    let doc: Value = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "`{shown}` is not JSON ({e})\nhint: give the documents `stepscope bench --json` writes"
        )
    })?;
    if doc["partial"].as_bool() == Some(true) {
        return Err(format!(
            "`{shown}` is a partial bench run (stopped before every request ended)\nhint: leave it out, or run the phase again"
        ));
    }
    let throughput = &doc["summary"]["throughput"];
    let (Some(tokens), Some(requests)) = (
        throughput["output_tokens_per_s"].as_f64(),
        throughput["requests_per_s"].as_f64(),
    ) else {
        return Err(format!(
            "`{shown}` has no summary.throughput.output_tokens_per_s: not a `stepscope bench --json` document"
        ));
    };
    Ok(Phase {
        path: shown.to_string(),
        output_tokens_per_s: tokens,
        requests_per_s: requests,
        summary: doc["summary"].clone(),
    })
}
