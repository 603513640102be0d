//! Grading a change by its serving throughput: KEEP, REVERT or INCONCLUSIVE, beyond the
//! noise between benchmark phases — and only for a candidate that did the same work,
//! correctly.
//!
//! Each side is a set of benchmark phases (`stepscope bench --json` documents) and output
//! probes. The speed rests on each phase's output tokens per second, counted from what
//! streamed (never from the server's usage): the typical ratio of a candidate phase to a base
//! phase, with its distribution-free confidence interval (`stepscope_stats::noise`:
//! Hodges–Lehmann with the Mann–Whitney interval), against a minimum effect. Before the
//! speed counts, the candidate must pass every check ([`gates`], [`outputs`]):
//!
//! - the two sides ran the same workload (model, lengths, load, prompts, sampling), or there
//!   is no grade at all (an error);
//! - its answers to the output probes equal the base's (REVERT "outputs changed");
//! - it fails no more requests than the base beyond chance, and at most
//!   `--max-failure-rate` (REVERT beyond noise; above the rate, never KEEP);
//! - it keeps every `--slo` the base keeps (REVERT when its whole interval breaks it; never
//!   KEEP while the interval reaches over the limit);
//! - no latency (TTFT, TPOT, ITL, E2E; median and p99) regresses beyond noise by more than
//!   its allowed margin (`--max-regression`; REVERT), the gated latencies sharing one error
//!   rate; one that does so only when judged alone holds KEEP back.
//!
//! KEEP then needs the whole throughput interval above `+min_effect`; REVERT follows from a
//! failed check or an interval below `−min_effect`; anything else is INCONCLUSIVE, with the
//! phases a side that would likely settle it.
//!
//! A live grading looks at its phases several times as they accumulate and stops at the
//! first decision; each look gets `1 / looks` of the 5 % error rate (Bonferroni), so that
//! the chance of any wrong decision over the whole run stays at most 5 %. The looks fall
//! where the phases a side double ([`look_points`]): few looks, each with much more evidence
//! than the one before, so little power is spent on the correction.
//!
//! Profile runs are never graded: the switches that make the profiler record every replay
//! change how fast replays run, so their throughput is not the server's.

mod decide;
pub mod engage;
pub mod gates;
pub mod live;
pub mod outputs;
mod phase;
pub mod schedule;
pub mod simulate;

pub use gates::{FailureCheck, MetricChange, Slo, SloCheck, Verdict};
pub use outputs::{OutputCheck, OutputDifference};
pub use phase::{Phase, SideEvidence, Workload, is_probe_file, read_phases, read_side};
pub use stepscope_stats::noise::RelativeChange;

use serde::Serialize;
use std::collections::BTreeMap;
use stepscope_stats::noise::{CONFIDENCE, relative_change};

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
    /// The most either side may fail, as a fraction (default 0.005: 0.5 %).
    pub max_failure_rate: f64,
    /// Allowed regressions beyond noise by metric, in percent, over the defaults (`None`:
    /// reported, not gated).
    pub max_regressions: BTreeMap<String, Option<f64>>,
    /// The similarity below which an answer has changed (default 1: identical).
    pub min_output_similarity: f64,
    /// Show changed outputs without deciding on them.
    pub allow_output_change: bool,
    /// Grade sides that serve different models.
    pub allow_model_change: bool,
}

impl Default for GradeSettings {
    fn default() -> Self {
        GradeSettings {
            min_effect_pct: 2.0,
            slos: Vec::new(),
            looks: 1,
            max_failure_rate: 0.005,
            max_regressions: BTreeMap::new(),
            min_output_similarity: 1.0,
            allow_output_change: false,
            allow_model_change: false,
        }
    }
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

/// The grade.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Decision {
    /// The candidate is faster beyond noise and the minimum effect, and passes every check.
    Keep,
    /// It is slower beyond both, or fails a check beyond noise.
    Revert,
    /// Neither: within noise or within the minimum effect, or held back by a check.
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

/// The server's own token counts against the streamed ones, over a side's phases.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SideTokens {
    /// Completed requests whose usage claims more than `max_tokens`.
    pub usage_over_max_tokens: u64,
    /// Completed requests whose usage disagrees with the streamed count.
    pub usage_disagreeing: u64,
    /// The first such request, in words.
    pub example: Option<String>,
}

impl SideTokens {
    fn of(phases: &[Phase]) -> Self {
        let mut tokens = SideTokens::default();
        for phase in phases {
            tokens.usage_over_max_tokens += phase.usage_over_max_tokens;
            tokens.usage_disagreeing += phase.usage_disagreeing;
            if tokens.example.is_none() {
                tokens.example.clone_from(&phase.usage_example);
            }
        }
        tokens
    }

    /// Whether any request's usage was flagged.
    pub fn flagged(&self) -> u64 {
        self.usage_over_max_tokens + self.usage_disagreeing
    }
}

/// One line of the checks: what was checked, how it bears on the decision, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckLine {
    /// `outputs`, `failures`, `tokens`, `slo ttft_ms.p99`, `regression ttft_ms.p99`,
    /// `throughput`.
    pub check: String,
    /// How it bears on the decision.
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub detail: String,
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
    /// What every phase of both sides ran (`null`: no phase says).
    pub workload: Option<Workload>,
    /// Every check, in the order they decide.
    pub checks: Vec<CheckLine>,
    /// Output tokens per second: the candidate's typical ratio to the base, minus one, with
    /// its interval at `1 − 5 % / looks` confidence; `null` with no phases on a side.
    pub output_throughput: Option<RelativeChange>,
    /// The other summary values with their intervals; latencies gated by their margins.
    pub metrics: Vec<MetricChange>,
    /// The objectives.
    pub slos: Vec<SloCheck>,
    /// Requests sent and failed on each side.
    pub failures: FailureCheck,
    /// The output probes' answers compared.
    pub outputs: OutputCheck,
    /// Whether the change engaged on the candidate (`--expect-kernel`, `--expect-env`).
    pub engage: engage::EngageCheck,
    /// The servers' own token counts against the streamed ones: base, candidate.
    pub tokens: [SideTokens; 2],
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
///
/// # Errors
///
/// The sides ran different workloads (naming every difference), or their output probes
/// asked different prompts: such sides are never graded.
pub fn grade(
    base: &SideEvidence,
    candidate: &SideEvidence,
    settings: &GradeSettings,
) -> Result<Grade, String> {
    let workload = same_workload(base, candidate, settings.allow_model_change)?;
    let outputs = outputs::check_outputs(
        &base.probes,
        &candidate.probes,
        settings.min_output_similarity,
        settings.allow_output_change,
    )?;
    let confidence = look_confidence(settings.looks);
    let (b, c) = (&base.phases, &candidate.phases);
    let tps =
        |phases: &[Phase]| -> Vec<f64> { phases.iter().map(|p| p.output_tokens_per_s).collect() };
    let evidence = decide::Evidence {
        change: relative_change(&tps(b), &tps(c), confidence),
        metrics: gates::metric_changes(b, c, confidence, &settings.max_regressions),
        slos: settings
            .slos
            .iter()
            .map(|slo| gates::check_slo(slo, b, c, confidence))
            .collect(),
        failures: gates::check_failures(b, c, settings.max_failure_rate, confidence),
        outputs,
        engage: engage::check_engage(candidate.engage.as_ref()),
        tokens: [SideTokens::of(b), SideTokens::of(c)],
    };
    let decided = decide::decide(
        &evidence,
        settings.min_effect_pct / 100.0,
        b.len().min(c.len()),
    );
    Ok(Grade {
        decision: decided.decision,
        reason: decided.reason,
        min_effect_pct: settings.min_effect_pct,
        looks: settings.looks.max(1),
        workload,
        checks: decided.checks,
        output_throughput: evidence.change,
        metrics: evidence.metrics,
        slos: evidence.slos,
        failures: evidence.failures,
        outputs: evidence.outputs,
        engage: evidence.engage,
        tokens: evidence.tokens,
        phases_to_settle: decided.phases_to_settle,
        base: b.clone(),
        candidate: c.clone(),
    })
}

/// The one workload both sides ran; an error naming each difference when they differ.
fn same_workload(
    base: &SideEvidence,
    candidate: &SideEvidence,
    allow_model_change: bool,
) -> Result<Option<Workload>, String> {
    let first = |side: &SideEvidence| side.phases.iter().find_map(|p| p.workload.clone());
    let (Some(a), Some(b)) = (first(base), first(candidate)) else {
        return Ok(first(base).or_else(|| first(candidate)));
    };
    let differences = a.differences(&b, allow_model_change);
    if differences.is_empty() {
        return Ok(Some(a));
    }
    let hint = if differences.iter().any(|d| d.starts_with("model")) {
        "run both sides with one workload; when the change is the model itself (a quantised copy, say), pass --allow-model-change"
    } else {
        "run both sides with one workload (the same flags or config `load:`)"
    };
    Err(format!(
        "The sides ran different work, so their speeds cannot be compared: {} (base vs candidate)\nhint: {hint}",
        differences.join("; ")
    ))
}
