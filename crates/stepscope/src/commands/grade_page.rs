//! A live grading's `report.html`: the grade and its run, handed to the report crate's page.

use std::path::Path;
use stepscope_report::grade_page::{GradePage, MetricRow, PlotPhase, render};
use stepscope_serving::grade::RelativeChange;
use stepscope_serving::grade::live::LiveRun;

/// Writes `OUT/report.html`.
pub fn write(out: &Path, run: &LiveRun) -> anyhow::Result<()> {
    let html = render(&page(run));
    stepscope_report::atomic::write_bytes(&out.join("report.html"), html.as_bytes())?;
    Ok(())
}

fn page(run: &LiveRun) -> GradePage {
    let grade = &run.grade;
    let record = &run.record;
    let phases = record
        .order
        .iter()
        .map(|p| PlotPhase {
            side: usize::from(p.side == "candidate"),
            value: p.output_tokens_per_s,
            boot: p.boot,
            file: p.file.clone(),
        })
        .collect();
    let metrics = metric_rows(grade);
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
    GradePage {
        decision: grade.decision.as_str().to_owned(),
        reason: grade.reason.clone(),
        status,
        sides: [side(0), side(1)],
        phases,
        metrics,
        confidence_pct: stepscope_serving::grade::look_confidence(grade.looks) * 100.0,
        regrade: record.regrade.clone(),
    }
}

/// Output tok/s, then the reported metrics, each with its medians and change.
fn metric_rows(grade: &stepscope_serving::grade::Grade) -> Vec<MetricRow> {
    let bounded = |v: f64| v.is_finite().then_some(v);
    let row = |metric: &str, base: f64, candidate: f64, change: &RelativeChange| MetricRow {
        metric: metric.to_owned(),
        base,
        candidate,
        change: (change.estimate, bounded(change.low), bounded(change.high)),
    };
    let tps = |phases: &[stepscope_serving::grade::Phase]| {
        let mut values: Vec<f64> = phases.iter().map(|p| p.output_tokens_per_s).collect();
        stepscope_analysis::noise::median(&mut values)
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
