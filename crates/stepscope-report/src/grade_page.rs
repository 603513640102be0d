//! The HTML report of a grading: the decision and why, what was compared, every check the
//! candidate had to pass (outputs, failures, tokens, objectives, latencies), every phase
//! plotted in the order it ran (so a drift over the run, or one boot that ran slow, is seen
//! at a glance; a phase with failed requests is ringed), and the reported metrics with
//! their intervals. One self-contained file: the chart is inline SVG
//! drawn here, no script, no network.

use crate::html::escape_html as escape;
use std::fmt::Write as _;

/// A phase on the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotPhase {
    /// 0 base, 1 candidate.
    pub side: usize,
    /// Output tokens per second.
    pub value: f64,
    /// The boot it ran on (a config side's), for the boot boundaries.
    pub boot: Option<usize>,
    /// Its bench document, as a tooltip.
    pub file: String,
    /// Its failed requests.
    pub failed: u64,
}

/// A row of the checks table.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRow {
    /// `outputs`, `failures`, `slo ttft_ms.p99`, …
    pub check: String,
    /// `pass`, `blocks_keep`, `revert`, `not_checked`.
    pub verdict: String,
    /// Why.
    pub detail: String,
}

/// A row of the metrics table.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRow {
    /// `output tok/s`, `ttft_ms.p99`, …
    pub metric: String,
    /// The base's median phase value.
    pub base: f64,
    /// The candidate's.
    pub candidate: f64,
    /// The change, its interval's ends (unbounded: `None`), all as fractions.
    pub change: (f64, Option<f64>, Option<f64>),
    /// The interval's confidence, in percent (the gated latencies share the error rate, so
    /// theirs is higher than the throughput's).
    pub confidence_pct: f64,
}

/// What the page shows.
#[derive(Debug, Clone, PartialEq)]
pub struct GradePage {
    /// KEEP, REVERT or INCONCLUSIVE.
    pub decision: String,
    /// Why.
    pub reason: String,
    /// The run's status line (complete, interrupted, failed …).
    pub status: String,
    /// The sides' names as given (URL, config path).
    pub sides: [String; 2],
    /// What every phase ran (model, lengths, load, prompts).
    pub compared: String,
    /// Every check, in the order they decide.
    pub checks: Vec<CheckRow>,
    /// The phases in the order they ran.
    pub phases: Vec<PlotPhase>,
    /// Output tok/s first, then the others.
    pub metrics: Vec<MetricRow>,
    /// The command that grades the phases again.
    pub regrade: String,
}

const COLORS: [&str; 2] = ["#1f77b4", "#ff7f0e"];
const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 40.0;

/// The page.
pub fn render(page: &GradePage) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>stepscope grade: {decision}</title>\n<style>{STYLE}</style></head><body>\n<h1 id=\"decision\" class=\"{class}\">{decision}</h1>\n<p id=\"reason\">{reason}</p>\n<p id=\"status\">{status}</p>\n<p class=\"sides\"><span style=\"color:{c0}\">● base</span> {base}<br><span style=\"color:{c1}\">● candidate</span> {candidate}</p>\n",
        decision = escape(&page.decision),
        class = escape(&page.decision.to_lowercase()),
        reason = escape(&page.reason),
        status = escape(&page.status),
        c0 = COLORS[0],
        c1 = COLORS[1],
        base = escape(&page.sides[0]),
        candidate = escape(&page.sides[1]),
    );
    let _ = writeln!(
        out,
        "<p id=\"compared\">Compared: {}</p>",
        escape(&page.compared)
    );
    out.push_str(&checks(&page.checks));
    out.push_str("<h2>Output tok/s of every phase, in the order they ran</h2>\n");
    out.push_str(&chart(&page.phases));
    out.push_str(&table(page));
    let _ = write!(
        out,
        "<p>Grade these phases again: <code id=\"regrade\">{}</code></p>\n</body></html>\n",
        escape(&page.regrade)
    );
    out
}

/// The chart's scales: x by order, y by value from 0 to 10 % over the highest phase.
struct Scale {
    count: usize,
    high: f64,
}

impl Scale {
    const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
    const PLOT_H: f64 = HEIGHT - TOP - BOTTOM;

    fn x(&self, at: usize) -> f64 {
        LEFT + Self::PLOT_W * (at as f64 + 0.5) / self.count as f64
    }

    fn y(&self, value: f64) -> f64 {
        TOP + Self::PLOT_H * (1.0 - (value / self.high).clamp(0.0, 1.0))
    }
}

/// The phases as points (x: order, y: output tok/s), each side's median as a line, and a
/// dashed line wherever a new boot began.
fn chart(phases: &[PlotPhase]) -> String {
    if phases.is_empty() {
        return "<p id=\"no-phases\">No phase ended.</p>\n".to_owned();
    }
    let highest = phases
        .iter()
        .map(|p| p.value)
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let scale = Scale {
        count: phases.len(),
        high: highest.max(1e-9) * 1.1,
    };
    let (plot_w, plot_h) = (Scale::PLOT_W, Scale::PLOT_H);
    let mut svg = format!(
        "<svg id=\"phases\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"output tokens per second by phase\">\n<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"none\" stroke=\"#999\"/>\n"
    );
    for tick in 0..=4 {
        let v = scale.high * f64::from(tick) / 4.0;
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\">{v:.0}</text>",
            LEFT - 6.0,
            scale.y(v) + 4.0
        );
    }
    boots(&mut svg, phases, &scale);
    medians(&mut svg, phases, &scale);
    for (at, phase) in phases.iter().enumerate() {
        let (ring, failed) = if phase.failed > 0 {
            (
                " failed\" stroke=\"#b22\" stroke-width=\"3",
                format!(", {} requests failed", phase.failed),
            )
        } else {
            ("", String::new())
        };
        let _ = writeln!(
            svg,
            "<circle class=\"phase side{}{ring}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"{}\"><title>{} — {:.1} output tok/s{failed}</title></circle>",
            phase.side,
            scale.x(at),
            scale.y(phase.value),
            COLORS[phase.side % 2],
            escape(&phase.file),
            phase.value
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\">phase, in the order run (dashed: a server boot)</text>\n</svg>",
        LEFT + plot_w / 2.0,
        HEIGHT - 10.0
    );
    svg
}

/// A dashed line between two phases where the second ran on a new boot.
fn boots(svg: &mut String, phases: &[PlotPhase], scale: &Scale) {
    for (at, pair) in phases.windows(2).enumerate() {
        let new_boot =
            pair[1].boot.is_some() && (pair[0].side, pair[0].boot) != (pair[1].side, pair[1].boot);
        if new_boot {
            let between = (scale.x(at) + scale.x(at + 1)) / 2.0;
            let _ = writeln!(
                svg,
                "<line class=\"boot\" x1=\"{between:.1}\" x2=\"{between:.1}\" y1=\"{TOP}\" y2=\"{}\" stroke=\"#bbb\" stroke-dasharray=\"4 3\"/>",
                TOP + Scale::PLOT_H
            );
        }
    }
}

/// Each side's median phase, as a faint line across the chart.
fn medians(svg: &mut String, phases: &[PlotPhase], scale: &Scale) {
    for (side, color) in COLORS.iter().enumerate() {
        let mut own: Vec<f64> = phases
            .iter()
            .filter(|p| p.side == side)
            .map(|p| p.value)
            .collect();
        if own.is_empty() {
            continue;
        }
        let median = stepscope_analysis::noise::median(&mut own);
        let _ = writeln!(
            svg,
            "<line class=\"median\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-opacity=\"0.5\"/>",
            LEFT + Scale::PLOT_W,
            y = scale.y(median)
        );
    }
}

/// The checks, one row each, marked by how they bear on the decision.
fn checks(rows: &[CheckRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = "<h2>Checks</h2>\n<table id=\"checks\"><thead><tr><th>check</th><th>verdict</th><th>detail</th></tr></thead><tbody>\n".to_owned();
    for row in rows {
        let _ = writeln!(
            out,
            "<tr class=\"{verdict}\"><td>{}</td><td>{}</td><td class=\"detail\">{}</td></tr>",
            escape(&row.check),
            escape(&row.verdict.replace('_', " ")),
            escape(&row.detail),
            verdict = escape(&row.verdict),
        );
    }
    out.push_str("</tbody></table>\n");
    out
}

fn table(page: &GradePage) -> String {
    let mut out = "<h2>Medians and changes</h2>\n<table id=\"metrics\"><thead><tr><th>metric</th><th>base</th><th>candidate</th><th>change</th><th>interval</th><th>confidence</th></tr></thead><tbody>\n".to_owned();
    let percent = |v: Option<f64>| v.map_or("open".to_owned(), |v| format!("{:+.1} %", v * 100.0));
    for row in &page.metrics {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{} to {}</td><td>{:.1} %</td></tr>",
            escape(&row.metric),
            row.base,
            row.candidate,
            percent(Some(row.change.0)),
            percent(row.change.1),
            percent(row.change.2),
            row.confidence_pct
        );
    }
    out.push_str("</tbody></table>\n");
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;max-width:960px;color:#222}\
h1.keep{color:#2a7d2a}h1.revert{color:#b22}h1.inconclusive{color:#a60}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}\
td:first-child,th:first-child{text-align:left}code{background:#f4f4f4;padding:2px 4px}\
td.detail{text-align:left}tr.revert td{background:#fbe9e9}tr.blocks_keep td,tr.void td{background:#fff4e0}\
tr.note td{background:#f4f4fb}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_a_name_stays_text_and_an_empty_run_says_so() {
        let page = GradePage {
            decision: "INCONCLUSIVE".to_owned(),
            reason: "no phase".to_owned(),
            status: "interrupted".to_owned(),
            sides: ["<b>base</b>".to_owned(), "c.yaml".to_owned()],
            compared: "model `m`".to_owned(),
            checks: vec![CheckRow {
                check: "outputs".to_owned(),
                verdict: "revert".to_owned(),
                detail: "answer \"<script>\"".to_owned(),
            }],
            phases: Vec::new(),
            metrics: Vec::new(),
            regrade: "stepscope grade a b".to_owned(),
        };
        let html = render(&page);
        assert!(html.contains("&lt;b&gt;base&lt;/b&gt;"));
        assert!(!html.contains("<b>base"));
        assert!(html.contains("&lt;script&gt;") && !html.contains("\"<script>"));
        assert!(html.contains("<tr class=\"revert\">"));
        assert!(html.contains("id=\"no-phases\""));
    }
}
