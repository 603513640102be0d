//! The decision from the evidence: a failed check reverts, a held-back check blocks KEEP,
//! and the throughput's interval decides the rest.

use super::engage::EngageCheck;
use super::gates::{FailureCheck, MetricChange, SloCheck, Verdict};
use super::outputs::OutputCheck;
use super::{CheckLine, Decision, SideTokens};
use stepscope_stats::noise::{Direction, RelativeChange, min_samples};

/// What a grading found, before it decides.
pub(super) struct Evidence {
    pub(super) change: Option<RelativeChange>,
    pub(super) metrics: Vec<MetricChange>,
    pub(super) slos: Vec<SloCheck>,
    pub(super) failures: FailureCheck,
    pub(super) outputs: OutputCheck,
    pub(super) engage: EngageCheck,
    pub(super) tokens: [SideTokens; 2],
}

/// The decision, why, every check, and the phases that would settle an open one.
pub(super) struct Decided {
    pub(super) decision: Decision,
    pub(super) reason: String,
    pub(super) checks: Vec<CheckLine>,
    pub(super) phases_to_settle: Option<usize>,
}

/// Decides: the first check that reverts, else the throughput, held back to INCONCLUSIVE by
/// the first check that blocks KEEP.
pub(super) fn decide(evidence: &Evidence, min_effect: f64, phases: usize) -> Decided {
    let mut checks = Vec::new();
    let line = |check: &str, verdict: Verdict, detail: String| CheckLine {
        check: check.to_owned(),
        verdict,
        detail,
    };
    let engage = &evidence.engage;
    checks.push(line("engaged", engage.verdict, engage.detail.clone()));
    let outputs = &evidence.outputs;
    checks.push(line("outputs", outputs.verdict, outputs.detail.clone()));
    let failures = &evidence.failures;
    checks.push(line("failures", failures.verdict, failures.detail.clone()));
    let flagged = evidence.tokens.iter().any(|t| t.flagged() > 0);
    let verdict = if flagged {
        Verdict::Warn
    } else {
        Verdict::Pass
    };
    checks.push(line("tokens", verdict, tokens_detail(&evidence.tokens)));
    for slo in &evidence.slos {
        let check = format!("slo {}", slo.slo.metric);
        checks.push(line(&check, slo.verdict, slo_detail(slo)));
    }
    // The speed before the latencies: a slower candidate is reverted for its throughput,
    // the reason a user looks for first.
    let speed = throughput(evidence.change.as_ref(), min_effect, phases);
    checks.push(line("throughput", speed.verdict, speed.reason.clone()));
    checks.extend(latency_checks(&evidence.metrics));
    let first = |verdict: Verdict| checks.iter().find(|c| c.verdict == verdict);
    let (decision, reason, settle) = if let Some(void) = first(Verdict::Void) {
        (Decision::Inconclusive, void.detail.clone(), None)
    } else if let Some(revert) = first(Verdict::Revert) {
        (Decision::Revert, revert.detail.clone(), None)
    } else if speed.decision == Decision::Keep {
        match first(Verdict::BlocksKeep) {
            Some(blocked) => (
                Decision::Inconclusive,
                format!("{}, but {}", speed.reason, blocked.detail),
                None,
            ),
            None => (Decision::Keep, speed.reason.clone(), None),
        }
    } else {
        (speed.decision, speed.reason.clone(), speed.phases_to_settle)
    };
    Decided {
        decision,
        reason,
        checks,
        phases_to_settle: settle,
    }
}

fn tokens_detail(tokens: &[SideTokens; 2]) -> String {
    let side = |name: &str, t: &SideTokens| {
        (t.flagged() > 0).then(|| {
            format!(
                "the {name}'s usage disagrees with what streamed in {} requests ({} over max_tokens; e.g. {})",
                t.flagged(),
                t.usage_over_max_tokens,
                t.example.as_deref().unwrap_or("–")
            )
        })
    };
    let flagged: Vec<String> = [side("base", &tokens[0]), side("candidate", &tokens[1])]
        .into_iter()
        .flatten()
        .collect();
    if flagged.is_empty() {
        "output tokens counted from what streamed; the servers' usage agrees".to_owned()
    } else {
        format!(
            "{}: the streamed count is graded, not the usage",
            flagged.join("; ")
        )
    }
}

fn slo_detail(slo: &SloCheck) -> String {
    let name = format!("{} ≤ {}", slo.slo.metric, slo.slo.limit);
    let bounds = |b: &Option<stepscope_stats::location::MedianBounds>| match b {
        Some(b) if b.is_bounded() => {
            format!(
                "median phase {:.1} (CI {:.1} to {:.1})",
                b.median, b.low, b.high
            )
        }
        Some(b) => format!(
            "median phase {:.1} (too few phases for a {:.1} % interval)",
            b.median,
            b.confidence * 100.0
        ),
        None => "no phase has it".to_owned(),
    };
    match slo.verdict {
        Verdict::Revert => format!(
            "the candidate breaks {name}: {}, which the base meets ({})",
            bounds(&slo.candidate),
            bounds(&slo.base)
        ),
        Verdict::BlocksKeep => {
            format!("the candidate may break {name}: {}", bounds(&slo.candidate))
        }
        Verdict::Pass | Verdict::Warn | Verdict::Void => {
            format!("{name} kept: {}", bounds(&slo.candidate))
        }
        Verdict::NotChecked => format!(
            "the base itself does not meet {name} ({}): not judged",
            bounds(&slo.base)
        ),
    }
}

/// A line for each latency slower beyond noise and its margin (REVERT), or past its margin
/// with too few phases to judge it (held back from KEEP); else one saying none is.
fn latency_checks(metrics: &[MetricChange]) -> Vec<CheckLine> {
    let gated: Vec<&MetricChange> = metrics
        .iter()
        .filter(|m| m.max_regression_pct.is_some())
        .collect();
    let mut lines: Vec<CheckLine> = gated
        .iter()
        .filter_map(|metric| {
            let verdict = latency_verdict(metric)?;
            Some(CheckLine {
                check: format!("latency {}", metric.metric),
                verdict,
                detail: regression_detail(metric, gated.len()),
            })
        })
        .collect();
    if lines.is_empty() && !gated.is_empty() {
        lines.push(CheckLine {
            check: "latency".to_owned(),
            verdict: Verdict::Pass,
            detail: latency_detail(&gated),
        });
    }
    lines
}

/// REVERT for a latency slower beyond noise and its margin among all the gated ones; held
/// back from KEEP when it is so only judged alone; else nothing.
fn latency_verdict(metric: &MetricChange) -> Option<Verdict> {
    if metric.regressed {
        Some(Verdict::Revert)
    } else if metric.regressed_alone {
        Some(Verdict::BlocksKeep)
    } else {
        None
    }
}

/// The latencies checked, none slower beyond noise and its margin.
fn latency_detail(gated: &[&MetricChange]) -> String {
    let margins: Vec<String> = gated
        .iter()
        .map(|m| format!("{} {}", m.metric, m.max_regression_pct.unwrap_or(0.0)))
        .collect();
    let confidence = gated[0].change.confidence;
    let together = if gated.iter().all(|m| m.change.is_bounded()) {
        format!(
            "{} judged together, each at {:.1} %",
            gated.len(),
            confidence * 100.0
        )
    } else {
        format!(
            "too few phases to judge {} together, each at {:.1} %: it takes {} a side",
            gated.len(),
            confidence * 100.0,
            min_samples(confidence)
        )
    };
    format!(
        "no latency slower beyond noise and its allowed % ({}; {together})",
        margins.join(", ")
    )
}

fn regression_detail(metric: &MetricChange, gated: usize) -> String {
    let allowed = metric.max_regression_pct.unwrap_or(0.0);
    let interval = |change: &RelativeChange| {
        change.interval_text().unwrap_or_else(|| {
            format!(
                "too few phases for a {:.1} % interval",
                change.confidence * 100.0
            )
        })
    };
    let verdict = match (&metric.alone, metric.regressed) {
        (Some(alone), false) if metric.regressed_alone => format!(
            "slower beyond noise and the {allowed} % allowed judged alone ({}), not among {gated} latencies ({}): held back from KEEP",
            interval(alone),
            interval(&metric.change)
        ),
        (_, true) => format!(
            "slower beyond noise and the {allowed} % allowed ({}, {gated} latencies judged together)",
            interval(&metric.change)
        ),
        _ => format!(
            "not slower beyond noise and the {allowed} % allowed ({})",
            interval(&metric.change)
        ),
    };
    format!(
        "{} {:+.1} %: {verdict}",
        metric.metric,
        metric.change.estimate * 100.0
    )
}

/// The throughput's own decision.
struct Speed {
    decision: Decision,
    verdict: Verdict,
    reason: String,
    phases_to_settle: Option<usize>,
}

fn throughput(change: Option<&RelativeChange>, min_effect: f64, phases: usize) -> Speed {
    let unclear = |reason: String, settle: Option<usize>| Speed {
        decision: Decision::Inconclusive,
        verdict: Verdict::Pass,
        reason,
        phases_to_settle: settle,
    };
    let Some(change) = change else {
        return unclear(
            "grading needs phases with an output throughput on both sides".to_owned(),
            None,
        );
    };
    let effect = min_effect * 100.0;
    let confidence = change.confidence * 100.0;
    let Some(interval) = change.interval_text() else {
        let needed = min_samples(change.confidence);
        let reason = format!(
            "output tok/s {:+.1} %, but {phases} phases a side cannot give a {confidence:.1} % interval (it takes {needed})",
            change.estimate * 100.0
        );
        return unclear(reason, Some(needed));
    };
    let span = format!(
        "output tok/s {:+.1} % ({interval})",
        change.estimate * 100.0
    );
    match change.direction(min_effect) {
        Direction::Higher => Speed {
            decision: Decision::Keep,
            verdict: Verdict::Pass,
            reason: format!("{span}: faster beyond noise and {effect} %"),
            phases_to_settle: None,
        },
        Direction::Lower => Speed {
            decision: Decision::Revert,
            verdict: Verdict::Revert,
            reason: format!("{span}: slower beyond noise and {effect} %"),
            phases_to_settle: None,
        },
        Direction::Unclear => unclear(
            format!("{span}: not beyond noise and {effect} %"),
            phases_to_settle(change, min_effect, phases),
        ),
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
