//! A live grading's `report.html`: the grade and its run, handed to the report crate's page.

use std::path::Path;
use stepscope_report::grade_page::{CheckRow, GradePage, MetricRow, PlotPhase, render};
use stepscope_serving::grade::live::LiveRun;
use stepscope_serving::grade::{Grade, Phase, RelativeChange, Verdict};

/// Writes `OUT/report.html`.
pub fn write(out: &Path, run: &LiveRun, graded: &Grade) -> anyhow::Result<()> {
    let html = render(&page(run, graded));
    stepscope_report::atomic::write_bytes(&out.join("report.html"), html.as_bytes())?;
    Ok(())
}

fn page(run: &LiveRun, grade: &Grade) -> GradePage {
    let record = &run.record;
    let phases = record
        .order
        .iter()
        .map(|p| PlotPhase {
            side: usize::from(p.side == "candidate"),
            value: p.output_tokens_per_s,
            boot: p.boot,
            file: p.file.clone(),
            failed: p.requests_failed,
        })
        .collect();
    let side = |at: usize| {
        let s = &record.sides[at];
        s.config
            .clone()
            .or_else(|| s.url.clone())
            .unwrap_or_default()
    };
    let status = match &record.error {
        Some(error) => format!("{}: {error}", record.status),
        None => format!(
            "{}: {} base and {} candidate phases ({})",
            record.status,
            grade.base.len(),
            grade.candidate.len(),
            record.stopped_by.unwrap_or("stopped")
        ),
    };
    let checks = grade
        .checks
        .iter()
        .map(|check| CheckRow {
            check: check.check.clone(),
            verdict: verdict_word(check.verdict).to_owned(),
            detail: check.detail.clone(),
        })
        .collect();
    GradePage {
        decision: grade.decision.as_str().to_owned(),
        reason: grade.reason.clone(),
        status,
        sides: [side(0), side(1)],
        compared: grade
            .workload
            .as_ref()
            .map_or_else(|| "no phase ended".to_owned(), |w| w.describe()),
        checks,
        phases,
        metrics: metric_rows(grade),
        regrade: record.regrade.clone(),
    }
}

fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Warn => "note",
        Verdict::BlocksKeep => "blocks_keep",
        Verdict::Revert => "revert",
        Verdict::NotChecked => "not_checked",
        Verdict::Void => "void",
    }
}

/// Output tok/s, then the reported metrics, each with its medians and change.
fn metric_rows(grade: &Grade) -> Vec<MetricRow> {
    let bounded = |v: f64| v.is_finite().then_some(v);
    let row = |metric: &str, base: f64, candidate: f64, change: &RelativeChange| MetricRow {
        metric: metric.to_owned(),
        base,
        candidate,
        change: (change.estimate, bounded(change.low), bounded(change.high)),
        confidence_pct: change.confidence * 100.0,
    };
    let tps = |phases: &[Phase]| {
        let mut values: Vec<f64> = phases.iter().map(|p| p.output_tokens_per_s).collect();
        stepscope_stats::noise::median(&mut values)
    };
    let mut metrics = Vec::new();
    if let Some(change) = &grade.output_throughput {
        metrics.push(row(
            "output tok/s",
            tps(&grade.base),
            tps(&grade.candidate),
            change,
        ));
    }
    for m in &grade.metrics {
        metrics.push(row(&m.metric, m.base_median, m.candidate_median, &m.change));
    }
    metrics
}
