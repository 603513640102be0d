//! What else a candidate must pass besides being faster: it fails no more requests than the
//! base (and at most `--max-failure-rate`), keeps every `--slo` the base keeps, and regresses
//! no latency beyond its allowed margin (`--max-regression`). Each is judged beyond noise, at
//! the look's confidence, like the throughput itself.

use super::phase::Phase;
use serde::Serialize;
use std::collections::BTreeMap;
use stepscope_stats::location::{MedianBounds, median_bounds};
use stepscope_stats::noise::{RelativeChange, median, relative_change};
use stepscope_stats::rates::{Counts, more_failures_p, rate_interval};

/// How a check bears on the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Nothing against the candidate.
    Pass,
    /// Nothing that bears on the decision, but worth a look (the servers' token counts
    /// disagree with what streamed; the streamed ones are graded).
    Warn,
    /// The candidate cannot be kept, but it is not shown worse either (INCONCLUSIVE at best).
    BlocksKeep,
    /// The candidate is worse beyond noise: REVERT.
    Revert,
    /// Not checked (no evidence: offline phases without probes, say).
    NotChecked,
    /// The comparison says nothing about the change (it did not engage on the candidate):
    /// INCONCLUSIVE, whatever else was found.
    Void,
}

/// One side's requests over all its phases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideFailures {
    /// Requests sent and failed, all phases together.
    #[serde(flatten)]
    pub counts: Counts,
    /// `failed / sent`.
    pub rate: f64,
    /// The rate's Clopper–Pearson interval at the look's confidence.
    pub rate_low: f64,
    /// Its upper end.
    pub rate_high: f64,
    /// Failed requests by kind.
    pub by_kind: BTreeMap<String, u64>,
}

/// The failure check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureCheck {
    /// The most a side may fail, as a fraction.
    pub max_rate: f64,
    /// The base's requests.
    pub base: SideFailures,
    /// The candidate's.
    pub candidate: SideFailures,
    /// Fisher's exact one-sided p that the candidate fails more often than the base.
    pub more_failures_p: f64,
    /// How it bears on the decision.
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub detail: String,
}

fn side_failures(phases: &[Phase], confidence: f64) -> SideFailures {
    let mut counts = Counts::default();
    let mut by_kind = BTreeMap::new();
    for phase in phases {
        counts = counts.plus(phase.requests);
        for (kind, n) in &phase.failures {
            *by_kind.entry(kind.clone()).or_insert(0) += n;
        }
    }
    let (rate_low, rate_high) = rate_interval(counts, confidence);
    SideFailures {
        rate: counts.rate(),
        counts,
        rate_low,
        rate_high,
        by_kind,
    }
}

/// `12 of 40 requests (30.0 %: http_status 12)`.
pub fn describe_failures(side: &SideFailures) -> String {
    let kinds: Vec<String> = side
        .by_kind
        .iter()
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    let kinds = if kinds.is_empty() {
        String::new()
    } else {
        format!(": {}", kinds.join(", "))
    };
    format!(
        "{} of {} requests ({:.1} %{kinds})",
        side.counts.failed,
        side.counts.sent,
        side.rate * 100.0
    )
}

/// Checks the failures of both sides at `confidence`.
pub fn check_failures(
    base: &[Phase],
    candidate: &[Phase],
    max_rate: f64,
    confidence: f64,
) -> FailureCheck {
    let (b, c) = (
        side_failures(base, confidence),
        side_failures(candidate, confidence),
    );
    let p = more_failures_p(b.counts, c.counts);
    let limit = format!("{:.2} %", max_rate * 100.0);
    let (verdict, detail) = if c.rate_low > max_rate {
        (
            Verdict::Revert,
            format!(
                "the candidate failed {}, over the {limit} allowed beyond chance",
                describe_failures(&c)
            ),
        )
    } else if p < 1.0 - confidence {
        (
            Verdict::Revert,
            format!(
                "the candidate failed {} against the base's {}: more often beyond chance (p = {p:.2e})",
                describe_failures(&c),
                describe_failures(&b)
            ),
        )
    } else if c.rate > max_rate {
        (
            Verdict::BlocksKeep,
            format!(
                "the candidate failed {}, over the {limit} allowed",
                describe_failures(&c)
            ),
        )
    } else if b.rate > max_rate {
        (
            Verdict::BlocksKeep,
            format!(
                "the base failed {}, over the {limit} allowed: a grade needs a base that serves",
                describe_failures(&b)
            ),
        )
    } else {
        (
            Verdict::Pass,
            format!(
                "failed: base {}, candidate {}",
                describe_failures(&b),
                describe_failures(&c)
            ),
        )
    };
    FailureCheck {
        max_rate,
        base: b,
        candidate: c,
        more_failures_p: p,
        verdict,
        detail,
    }
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
        let known_name = LATENCIES.contains(&name);
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
}

/// An objective on both sides: each side's phase values, their median and its bounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SloCheck {
    /// The objective.
    #[serde(flatten)]
    pub slo: Slo,
    /// The base's median phase value with its bounds (`null`: no phase has it).
    pub base: Option<MedianBounds>,
    /// The candidate's.
    pub candidate: Option<MedianBounds>,
    /// How it bears on the decision: REVERT when the candidate's whole interval is above the
    /// limit and the base's median meets it; blocks KEEP while the interval reaches over it.
    pub verdict: Verdict,
}

/// Checks `slo` on both sides at `confidence`.
pub fn check_slo(slo: &Slo, base: &[Phase], candidate: &[Phase], confidence: f64) -> SloCheck {
    let bounds = |phases: &[Phase]| median_bounds(&summary_values(&slo.metric, phases), confidence);
    let (b, c) = (bounds(base), bounds(candidate));
    let base_meets = b.is_some_and(|b| b.median <= slo.limit);
    let verdict = match c {
        _ if !base_meets => Verdict::NotChecked,
        None => Verdict::BlocksKeep,
        Some(c) if c.low > slo.limit => Verdict::Revert,
        Some(c) if c.high <= slo.limit => Verdict::Pass,
        Some(_) => Verdict::BlocksKeep,
    };
    SloCheck {
        slo: slo.clone(),
        base: b,
        candidate: c,
        verdict,
    }
}

/// The latency metrics of a bench summary.
pub const LATENCIES: [&str; 4] = ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"];

/// The summary values whose change is reported beside output tok/s; the latencies among
/// them are gated by their allowed regression.
pub const REPORTED_METRICS: [&str; 10] = [
    "throughput.requests_per_s",
    "throughput.total_tokens_per_s",
    "ttft_ms.median",
    "ttft_ms.p99",
    "tpot_ms.median",
    "tpot_ms.p99",
    "itl_ms.median",
    "itl_ms.p99",
    "e2e_ms.median",
    "e2e_ms.p99",
];

/// The regression a latency may show beyond noise before it reverts the candidate, in
/// percent: 5 % for a median, 10 % for a p99 (a tail is noisier).
pub fn default_max_regression(metric: &str) -> Option<f64> {
    let (name, stat) = metric.split_once('.')?;
    if !LATENCIES.contains(&name) {
        return None;
    }
    match stat {
        "median" => Some(5.0),
        "p99" => Some(10.0),
        _ => None,
    }
}

/// `--max-regression METRIC=PCT`: `p99_ttft=5%` or `ttft_ms.p99=5`, or `=off` to report a
/// metric without gating it. Returns the metric's summary name and the margin.
///
/// # Errors
///
/// An unknown metric, or a margin that is not a non-negative percentage or `off`.
pub fn parse_max_regression(text: &str) -> Result<(String, Option<f64>), String> {
    let bad = || {
        format!(
            "`{text}` is not an allowed regression: write METRIC=PCT with METRIC one of p50_ttft, p99_ttft, p50_tpot, p99_tpot, p50_itl, p99_itl, p50_e2e, p99_e2e (or ttft_ms.p99, …) and PCT a percentage or `off` (e.g. p99_ttft=5%)"
        )
    };
    let (metric, value) = text.split_once('=').ok_or_else(bad)?;
    let metric = canonical_metric(metric.trim()).ok_or_else(bad)?;
    let value = value.trim();
    if value.eq_ignore_ascii_case("off") {
        return Ok((metric, None));
    }
    let pct: f64 = value
        .strip_suffix('%')
        .unwrap_or(value)
        .trim()
        .parse()
        .map_err(|_| bad())?;
    if !(pct.is_finite() && pct >= 0.0) {
        return Err(bad());
    }
    Ok((metric, Some(pct)))
}

/// `p99_ttft` → `ttft_ms.p99`; `ttft_ms.median` as it is; `None` when not a gated latency.
fn canonical_metric(text: &str) -> Option<String> {
    let metric = match text.split_once('_') {
        Some((stat @ ("p50" | "p99"), name))
            if LATENCIES.contains(&format!("{name}_ms").as_str()) =>
        {
            let stat = if stat == "p50" { "median" } else { "p99" };
            format!("{name}_ms.{stat}")
        }
        _ => text.to_owned(),
    };
    default_max_regression(&metric).map(|_| metric)
}

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
    /// The regression allowed beyond noise, in percent (`null`: not gated).
    pub max_regression_pct: Option<f64>,
    /// Slower beyond noise by more than the allowed regression, with the confidence shared
    /// among the gated latencies: REVERT.
    pub regressed: bool,
    /// For a gated latency, the same change at the look's confidence, as if it were the only
    /// one judged (`null` for a metric not gated, whose `change` is already that).
    pub alone: Option<RelativeChange>,
    /// Slower beyond noise by more than the allowed regression when judged alone, though not
    /// among all the gated latencies: too little evidence to revert, enough to hold back KEEP.
    pub regressed_alone: bool,
}

/// A summary value (`ttft_ms.p99`) of every phase that has it.
pub fn summary_values(metric: &str, phases: &[Phase]) -> Vec<f64> {
    let Some((group, name)) = metric.split_once('.') else {
        return Vec::new();
    };
    phases
        .iter()
        .filter_map(|p| p.summary[group][name].as_f64())
        .collect()
}

/// Every reported metric's change, with the allowed regressions `margins` (percent by
/// metric; `None`: not gated) over the defaults.
///
/// An ungated metric's interval is at `confidence`. The gated latencies share its error rate
/// (Bonferroni): each of the `g` that both sides report gets `1 − (1 − confidence) / g`, so
/// that a candidate no slower than the base is reverted for some latency at most as often
/// as the confidence allows, however many latencies are gated and however independently
/// they vary.
pub fn metric_changes(
    base: &[Phase],
    candidate: &[Phase],
    confidence: f64,
    margins: &BTreeMap<String, Option<f64>>,
) -> Vec<MetricChange> {
    // Each metric both sides report: its name, its values on each side, and its margin.
    type Measured<'a> = (&'a str, Vec<f64>, Vec<f64>, Option<f64>);
    let measured: Vec<Measured> = REPORTED_METRICS
        .iter()
        .map(|metric| {
            let margin = margins
                .get(*metric)
                .copied()
                .unwrap_or_else(|| default_max_regression(metric));
            let values = |phases| summary_values(metric, phases);
            (*metric, values(base), values(candidate), margin)
        })
        .filter(|(_, b, c, _)| !b.is_empty() && !c.is_empty())
        .collect();
    let gated = measured.iter().filter(|m| m.3.is_some()).count();
    let shared = shared_confidence(confidence, gated);
    measured
        .into_iter()
        .filter_map(|(metric, mut b, mut c, margin)| {
            let level = if margin.is_some() { shared } else { confidence };
            let change = relative_change(&b, &c, level)?;
            let past = |change: &RelativeChange| margin.is_some_and(|pct| change.low > pct / 100.0);
            let alone = margin.and_then(|_| relative_change(&b, &c, confidence));
            Some(MetricChange {
                metric: metric.to_owned(),
                base_median: median(&mut b),
                candidate_median: median(&mut c),
                regressed: past(&change),
                regressed_alone: alone.as_ref().is_some_and(past),
                change,
                max_regression_pct: margin,
                alone,
            })
        })
        .collect()
}

/// The confidence of each of `tests` judgements that share the error rate of one at
/// `confidence`: `1 − (1 − confidence) / tests`.
pub fn shared_confidence(confidence: f64, tests: usize) -> f64 {
    1.0 - (1.0 - confidence) / tests.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regressions_are_named_either_way_and_can_be_turned_off() {
        assert_eq!(
            parse_max_regression("p99_ttft=5%").unwrap(),
            ("ttft_ms.p99".to_owned(), Some(5.0))
        );
        assert_eq!(
            parse_max_regression("tpot_ms.median=2.5").unwrap(),
            ("tpot_ms.median".to_owned(), Some(2.5))
        );
        assert_eq!(
            parse_max_regression("p50_e2e=off").unwrap(),
            ("e2e_ms.median".to_owned(), None)
        );
        for bad in [
            "p95_ttft=5",
            "ttft=5",
            "p99_ttft=-1",
            "p99_ttft",
            "p99_ttft=x",
        ] {
            assert!(parse_max_regression(bad).is_err(), "{bad}");
        }
        assert_eq!(default_max_regression("throughput.requests_per_s"), None);
    }
}
