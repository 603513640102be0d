//! CSV output: one file per table, for spreadsheets and pandas.

use crate::ReportError;
mod efficiency;
mod ranges;

use crate::schema::{Document, EvidenceWire, Row, UnverifiedWire};
use std::path::{Path, PathBuf};
use stepscope_analysis::passes::replay_coverage::Counter;

/// Writes `graphs.csv`, `findings.csv`, `stages.csv`, `categories.csv`, `kernels.csv` and
/// `efficiency.csv` into `dir` (created if missing), and with `--range` also `ranges.csv`,
/// `range_categories.csv` and `range_kernels.csv`; returns the paths written.
pub fn write_tables(document: &Document, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let mut written = vec![
        write(dir, "graphs.csv", &graphs(document))?,
        write(dir, "findings.csv", &findings(document))?,
        write(dir, "stages.csv", &stages(document))?,
        write(dir, "categories.csv", &rows(document, false))?,
        write(dir, "kernels.csv", &rows(document, true))?,
        write(dir, "efficiency.csv", &efficiency::efficiency(document))?,
    ];
    if document.files.iter().any(|f| f.ranges.is_some()) {
        written.extend([
            write(dir, "ranges.csv", &ranges::ranges(document))?,
            write(dir, "range_categories.csv", &ranges::rows(document, false))?,
            write(dir, "range_kernels.csv", &ranges::rows(document, true))?,
        ]);
    }
    Ok(written)
}

type Records = Vec<Vec<String>>;

fn write(dir: &Path, name: &str, records: &Records) -> Result<PathBuf, ReportError> {
    let path = dir.join(name);
    crate::atomic::write_with(&path, |out| {
        let mut writer = csv::Writer::from_writer(out);
        for record in records {
            for cell in record {
                writer.write_field(as_text(cell).as_bytes())?;
            }
            writer.write_record(std::iter::empty::<&[u8]>())?;
        }
        writer.flush()
    })?;
    Ok(path)
}

/// A cell as spreadsheets will show it: text that starts like a formula (`=`, `+`, `-`,
/// `@`, a tab or a carriage return — a kernel name such as `=cmd|' /C calc'!A0`) gets a
/// leading `'`, which Excel, LibreOffice and Google Sheets take as "this is text" and do not
/// show; numbers (`-1.5`, `+3`) are written as they are. This is the OWASP rule for CSV
/// injection; pandas and other programs reading the file see the `'`.
fn as_text(cell: &str) -> std::borrow::Cow<'_, str> {
    let formula_like = cell
        .chars()
        .next()
        .is_some_and(|c| matches!(c, '=' | '+' | '-' | '@' | '\t' | '\r'));
    if formula_like && cell.parse::<f64>().is_err() {
        std::borrow::Cow::Owned(format!("'{cell}"))
    } else {
        std::borrow::Cow::Borrowed(cell)
    }
}

fn graphs(document: &Document) -> Records {
    let mut header = strings(&[
        "file",
        "graph",
        "graph_id",
        "first_kernel",
        "expected_nodes_per_replay",
        "expected_source",
    ]);
    header.extend(Counter::ALL.iter().map(|c| c.name().to_owned()));
    header.extend(strings(&[
        "coverage",
        "completeness",
        "completeness_low",
        "completeness_high",
        "missing_gpu_time_us",
        "missing_gpu_time_low_us",
        "missing_gpu_time_high_us",
    ]));
    let mut out = vec![header];
    for file in &document.files {
        for g in &file.replay_coverage.graphs {
            let n = &g.numbers;
            let mut record = vec![
                file.path.clone(),
                opt(g.graph),
                opt(g.graph_id),
                g.first_kernel.clone().unwrap_or_default(),
                opt(g.expected_nodes_per_replay),
                g.expected_source.as_str().to_owned(),
            ];
            record.extend(Counter::ALL.iter().map(|c| c.value(&n.totals).to_string()));
            record.extend([
                n.coverage.to_string(),
                opt(n.completeness),
                n.completeness_low.to_string(),
                n.completeness_high.to_string(),
                opt(n.missing_gpu_time_us),
                n.missing_gpu_time_low_us.to_string(),
                opt(n.missing_gpu_time_high_us),
            ]);
            out.push(record);
        }
    }
    out
}

fn findings(document: &Document) -> Records {
    let mut out = vec![strings(&[
        "file",
        "kind",
        "replay",
        "launch_ts_us",
        "step",
        "graph",
        "recorded_nodes",
        "expected_nodes",
        "expected_nodes_low",
        "expected_nodes_high",
        "evidence_kind",
        "evidence",
        "unverified",
        "refused_events",
        "shared_correlation",
    ])];
    for file in &document.files {
        for f in &file.replay_coverage.findings {
            out.push(vec![
                file.path.clone(),
                f.kind.as_str().to_owned(),
                f.replay.to_string(),
                f.launch_ts_us.to_string(),
                f.step.clone().unwrap_or_default(),
                opt(f.graph),
                f.recorded_nodes.to_string(),
                opt(f.expected_nodes),
                f.expected_nodes_low.to_string(),
                opt(f.expected_nodes_high),
                f.evidence.as_ref().map(evidence_kind).unwrap_or_default(),
                f.evidence
                    .as_ref()
                    .map(EvidenceWire::sentence)
                    .unwrap_or_default(),
                f.unverified
                    .as_ref()
                    .map(unverified_text)
                    .unwrap_or_default(),
                f.refused_events.to_string(),
                f.shared_correlation.to_string(),
            ]);
        }
    }
    out
}

fn evidence_kind(evidence: &EvidenceWire) -> String {
    match evidence {
        EvidenceWire::Capture { .. } => "capture",
        EvidenceWire::StepSlot { .. } => "step_slot",
        EvidenceWire::PartialSlot { .. } => "partial_slot",
        EvidenceWire::PartialRun { .. } => "partial_run",
        EvidenceWire::CyclePosition { .. } => "cycle_position",
        EvidenceWire::GraphId { .. } => "graph_id",
        EvidenceWire::Neighbours => "neighbours",
        EvidenceWire::IdleGap { .. } => "idle_gap",
        EvidenceWire::Repeated { .. } => "repeated",
    }
    .to_owned()
}

fn unverified_text(unverified: &UnverifiedWire) -> String {
    match unverified {
        UnverifiedWire::SoleReplay => "sole_replay".to_owned(),
        UnverifiedWire::PossiblyShortOf { graph, nodes } => {
            format!("possibly_short_of graph {graph} ({nodes} nodes)")
        }
        UnverifiedWire::CaptureHoldsMore { nodes } => {
            format!("capture_holds_more ({nodes} launches)")
        }
        UnverifiedWire::OthersRecordedLess { replays } => {
            format!("others_recorded_less ({replays} replays)")
        }
    }
}

fn stages(document: &Document) -> Records {
    let mut out = vec![strings(&[
        "file",
        "stage",
        "steps",
        "events",
        "gpu_time_us",
        "share_of_total",
        "busy_time_us",
        "idle_time_us",
        "window_us",
        "idle_basis",
    ])];
    for file in &document.files {
        for s in &file.breakdown.stages {
            out.push(vec![
                file.path.clone(),
                s.stage.as_str().to_owned(),
                s.steps.to_string(),
                s.events.to_string(),
                s.gpu_time_us.to_string(),
                s.share_of_total.to_string(),
                s.busy_time_us.to_string(),
                s.idle_time_us.to_string(),
                s.window_us.to_string(),
                s.idle_basis.as_str().to_owned(),
            ]);
        }
    }
    out
}

/// The header of a category or kernel table, after the columns that say where it is.
fn row_header(kernels: bool) -> &'static [&'static str] {
    if kernels {
        &[
            "kernel",
            "kernel_id",
            "category",
            "events",
            "time_us",
            "share",
            "mean_us",
            "events_by_op",
            "time_by_op_us",
        ]
    } else {
        &[
            "category",
            "events",
            "time_us",
            "share",
            "mean_us",
            "events_by_op",
            "time_by_op_us",
        ]
    }
}

/// One category or kernel row after its leading columns.
fn row_record(mut record: Vec<String>, r: &Row, kernels: bool) -> Vec<String> {
    record.push(r.name.clone());
    if kernels {
        record.push(r.id.clone().unwrap_or_default());
        record.push(r.category.clone());
    }
    record.extend([
        r.events.to_string(),
        r.time_us.to_string(),
        r.share.to_string(),
        r.mean_us.to_string(),
        r.events_by_op.to_string(),
        r.time_by_op_us.to_string(),
    ]);
    record
}

fn rows(document: &Document, kernels: bool) -> Records {
    // Kernel rows carry their category; category rows are their own category.
    let mut header = strings(&["file", "stage"]);
    header.extend(strings(row_header(kernels)));
    let mut out = vec![header];
    for file in &document.files {
        for s in &file.breakdown.stages {
            let list = if kernels { &s.kernels } else { &s.categories };
            for r in list {
                let lead = vec![file.path.clone(), s.stage.as_str().to_owned()];
                out.push(row_record(lead, r, kernels));
            }
        }
    }
    out
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn opt<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::as_text;

    #[test]
    fn formula_like_text_is_quoted_and_numbers_are_not() {
        for (cell, shown) in [
            ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
            ("+SUM(A1)", "'+SUM(A1)"),
            ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
            ("@SUM(1)", "'@SUM(1)"),
            ("\t=1", "'\t=1"),
            ("\r=1", "'\r=1"),
            ("-1.5", "-1.5"),
            ("+3", "+3"),
            ("-0", "-0"),
            ("1e-3", "1e-3"),
            ("Cijk_Alik_Bljk", "Cijk_Alik_Bljk"),
            ("", ""),
        ] {
            assert_eq!(as_text(cell), shown, "{cell:?}");
        }
    }
}
