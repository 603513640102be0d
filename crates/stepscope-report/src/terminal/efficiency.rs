//! The efficiency section: the ops furthest below their roofline first (by time lost), or
//! by kernel time when the device's peaks are unknown.

use super::{TerminalOptions, new_table, right_align};
use crate::schema::count;
use crate::schema::diff_rates::OpRates;
use crate::schema::efficiency::{EfficiencyReport, EfficiencyRow};
use std::fmt::Write;

/// `EFFICIENCY …` and a table of the top rows; nothing when no op has a model.
pub(super) fn render_efficiency(
    out: &mut String,
    report: &EfficiencyReport,
    options: &TerminalOptions,
) {
    if let Some(note) = report.note {
        let _ = writeln!(out, "\nEFFICIENCY: {note}");
        return;
    }
    if report.ops.is_empty() {
        return;
    }
    let mut rows: Vec<&EfficiencyRow> = report
        .ops
        .iter()
        .filter(|r| !r.encloses_modelled_op)
        .collect();
    let outer = report.ops.len() - rows.len();
    let heading = match &report.device {
        Some(device) => {
            rows.sort_by(|a, b| time_lost(b).total_cmp(&time_lost(a)));
            format!(
                "on {} peaks ({}); furthest below the roofline first (kernel time beyond it, all calls)",
                device.name, device.identified_by
            )
        }
        None => "device not in the peaks table (--device NAME gives % of peak); by kernel time"
            .to_owned(),
    };
    let _ = writeln!(
        out,
        "\nEFFICIENCY — {} from {}, {heading}",
        count(small(report.ops.len()), "op row"),
        count(
            u32::try_from(report.modelled_calls).unwrap_or(u32::MAX),
            "modelled call"
        ),
    );
    let mut header = vec!["op", "shapes", "calls", "mean µs", "TFLOP/s", "TB/s"];
    let with_roof = report.device.is_some();
    if with_roof {
        header.extend(["bound", "% roof", "lost µs"]);
    }
    let mut table = new_table(options, &header);
    for row in rows.iter().take(options.top_kernels) {
        let mut cells = cells(row);
        cells.truncate(header.len());
        table.add_row(cells);
    }
    right_align(&mut table, 2);
    let _ = writeln!(out, "{table}");
    render_notes(out, report, outer);
    if rows.len() > options.top_kernels {
        let _ = writeln!(out, "(--json or --csv lists all {} rows)", report.ops.len());
    }
}

/// What the table leaves out, and where graph replays' shapes came from.
fn render_notes(out: &mut String, report: &EfficiencyReport, outer: usize) {
    if outer > 0 {
        let _ = writeln!(
            out,
            "{} of ops around other modelled ops (aten::linear around aten::addmm) left out: their kernels are in the rows of the ops inside",
            count(small(outer), "row")
        );
    }
    if let Some(note) = report.replays_note {
        let _ = writeln!(out, "{note}");
    } else if report.replays_with_shapes > 0 {
        let partial = match report.partial_replays {
            0 => String::new(),
            n => {
                format!(" ({n} lost kernels: only their ops whose kernels were all recorded count)")
            }
        };
        let _ = writeln!(
            out,
            "{} of {} graph replays take their ops' shapes from a captured graph{partial}",
            report.replays_with_shapes, report.graph_replays
        );
    }
}

fn time_lost(row: &EfficiencyRow) -> f64 {
    row.roofline.as_ref().map_or(0.0, |r| r.time_lost_us)
}

fn cells(row: &EfficiencyRow) -> Vec<String> {
    let number = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
    let roof = row.roofline.as_ref();
    vec![
        row.name.clone(),
        shapes(row),
        row.count.to_string(),
        number(row.kernel_time_us.map(|k| k.mean)),
        number(row.tflops.map(|t| t.mean)),
        number(row.tbps.map(|t| t.mean)),
        roof.map_or_else(|| "–".to_owned(), |r| r.bound.to_owned()),
        number(roof.and_then(|r| r.pct_of_roofline)),
        number(roof.map(|r| r.time_lost_us)),
    ]
}

/// The shapes column: the row's `Input Dims`, cut to 48 characters.
fn shapes(row: &EfficiencyRow) -> String {
    cut(&row.input_dims)
}

fn cut(text: &str) -> String {
    let kept: String = text.chars().take(48).collect();
    if kept.len() < text.len() {
        format!("{kept}…")
    } else {
        kept
    }
}

/// `diff`'s `OP RATES` section: achieved TFLOP/s per op row both sides have.
pub(super) fn render_op_rates(out: &mut String, rates: &OpRates, options: &TerminalOptions) {
    if rates.shared.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nOP RATES — {} op rows on both sides ({} only in BASE, {} only in NEW); achieved TFLOP/s, largest kernel time first",
        rates.shared.len(),
        rates.only_base,
        rates.only_new
    );
    let header = [
        "op",
        "shapes",
        "calls",
        "mean µs BASE",
        "mean µs NEW",
        "TFLOP/s BASE",
        "TFLOP/s NEW",
        "change",
    ];
    let mut table = new_table(options, &header);
    let number = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
    for row in rates.shared.iter().take(options.top_kernels) {
        table.add_row(vec![
            row.name.clone(),
            cut(&row.input_dims),
            format!("{} → {}", row.base_calls, row.new_calls),
            format!("{:.2}", row.base_mean_us),
            format!("{:.2}", row.new_mean_us),
            number(row.base_tflops),
            number(row.new_tflops),
            row.tflops_change
                .map_or_else(|| "–".to_owned(), |c| format!("{:+.1}%", c * 100.0)),
        ]);
    }
    right_align(&mut table, 2);
    let _ = writeln!(out, "{table}");
}

/// A row count as `count` takes it.
fn small(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
