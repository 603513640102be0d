//! Terminal report: the verdict first, then the numbers behind it.

mod diff;
mod efficiency;
pub(crate) mod kernel_names;
mod ranges;
mod timeline;
mod verdict;

pub use diff::render_diff;
use stepscope_model::text::{escape_controls, escape_controls_keep_lines};
pub use verdict::{
    completeness_text, finding_text, ranges, recorded_text, share_range, verdict_word,
};

use crate::schema::{
    Breakdown, CategorisedBy, Combined, Document, FileReport, GpuTimelineTimes, Ranges, Row, Stage,
    count,
};
use comfy_table::{
    CellAlignment, ColumnConstraint, ContentArrangement, Table, Width, presets::UTF8_FULL_CONDENSED,
};
use std::fmt::Write;
use stepscope_analysis::IdleBasis;
use verdict::{graph_table, misses_work, render_findings, render_verdict};

/// How wide tables may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableWidth {
    /// Never wrap (pipes, files, tests).
    Unbounded,
    /// Wrap to the terminal's width.
    Terminal,
    /// Wrap to this many columns.
    Columns(u16),
}

/// How to render.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TerminalOptions {
    /// ANSI colour (only on a TTY). Default: `false`.
    pub color: bool,
    /// Kernels listed per stage. Default: 10.
    pub top_kernels: usize,
    /// Example replays shown per kind of finding. Default: 3.
    pub findings: usize,
    /// How wide tables may be. Default: unbounded (pipes and files).
    pub width: TableWidth,
    /// Whole kernel names, never cut. Default: `false` (cut to 64 characters).
    pub wide: bool,
}

impl Default for TerminalOptions {
    fn default() -> Self {
        TerminalOptions {
            color: false,
            top_kernels: 10,
            findings: 3,
            width: TableWidth::Unbounded,
            wide: false,
        }
    }
}

impl TerminalOptions {
    /// With colour on or off.
    pub fn with_color(mut self, color: bool) -> Self {
        self.color = color;
        self
    }

    /// With a table width.
    pub fn with_width(mut self, width: TableWidth) -> Self {
        self.width = width;
        self
    }

    /// With whole kernel names (`--wide`).
    pub fn with_wide(mut self, wide: bool) -> Self {
        self.wide = wide;
        self
    }

    /// With `top` kernels per stage.
    pub fn with_top_kernels(mut self, top: usize) -> Self {
        self.top_kernels = top;
        self
    }
}

/// Renders the whole document.
pub fn render(document: &Document, options: &TerminalOptions) -> String {
    let mut out = String::new();
    for warning in &document.warnings {
        let _ = writeln!(out, "warning: {}", escape_controls_keep_lines(warning));
    }
    if !document.warnings.is_empty() {
        out.push('\n');
    }
    for file in &document.files {
        render_file(&mut out, file, options);
    }
    if !document.failed_files.is_empty() {
        let _ = writeln!(
            out,
            "{} could not be read (errors above): verdict {}, the results cover only the files read",
            count(document.failed_files.len() as u32, "input file"),
            verdict_word(document.verdict, options)
        );
        for failed in &document.failed_files {
            let _ = writeln!(out, "  {}", escape_controls(&failed.path));
        }
        out.push('\n');
    }
    if let Some(combined) = &document.combined {
        let _ = writeln!(out, "══ all {} files ══", combined.files);
        out.push_str(&combined_verdict(combined, options));
        if let Some(breakdown) = &combined.breakdown {
            render_breakdown(&mut out, (breakdown, None), false, options);
        }
        if let Some(found) = &combined.ranges {
            ranges::render_ranges(&mut out, found, options);
        }
    }
    if shows_kernels(document) {
        kernel_id_note(&mut out);
    }
    out
}

/// Whether any kernel table is printed (then the ids are explained once, at the end).
fn shows_kernels(document: &Document) -> bool {
    let in_breakdown = |b: &Breakdown| b.stages.iter().any(|s| !s.kernels.is_empty());
    let in_ranges = |r: &Ranges| r.ranges.iter().any(|r| !r.kernels.is_empty());
    let files = document
        .files
        .iter()
        .any(|f| in_breakdown(&f.breakdown) || f.ranges.as_ref().is_some_and(in_ranges));
    let combined = document.combined.as_ref().is_some_and(|c| {
        c.breakdown.as_ref().is_some_and(in_breakdown) || c.ranges.as_ref().is_some_and(in_ranges)
    });
    files || combined
}

/// The footer under kernel tables: what the `id` column is.
pub(crate) fn kernel_id_note(out: &mut String) {
    // One blank line between the report and the note, however the report ended.
    out.truncate(out.trim_end_matches('\n').len());
    out.push_str("\n\n");
    out.push_str(crate::kernel_id::KERNEL_ID_NOTE);
    out.push('\n');
}

fn render_file(out: &mut String, file: &FileReport, options: &TerminalOptions) {
    let rank = file
        .rank
        .map(|r| format!(" (rank {r} of {})", file.world_size.unwrap_or(1)))
        .unwrap_or_default();
    let _ = writeln!(out, "══ {}{rank} ══", escape_controls(&file.path));
    out.push_str(&file_verdict(file, options));
    render_trace_line(out, file);
    render_steps(out, file);
    if !file.replay_coverage.graphs.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            graph_table(&file.replay_coverage.graphs, options)
        );
    }
    render_findings(out, &file.replay_coverage, options);
    let missing_work = misses_work(file.replay_coverage.verdict);
    let whole = file
        .gpu_timeline
        .as_ref()
        .map(|times| (times, file.unlinked_gpu_time_us));
    render_breakdown(out, (&file.breakdown, whole), missing_work, options);
    timeline::render_host(out, &file.idle_causes, &file.launches);
    if let Some(found) = &file.ranges {
        ranges::render_ranges(out, found, options);
    }
    efficiency::render_efficiency(out, &file.efficiency, options);
    render_import(out, file);
    out.push('\n');
}

/// Beside unrecorded replays, the GPU timeline's idle time is partly their work.
const UNRECORDED_IDLE_NOTE: &str = " (its idle time holds the work of unrecorded replays)";

/// Where a file's GPU time goes and what held the GPU back, as the terminal prints it: the
/// GPU timeline, the streams' idle time by cause, the launches (empty without GPU work).
pub fn host_text(file: &FileReport) -> String {
    let mut out = String::new();
    if let Some(times) = &file.gpu_timeline {
        let note = if misses_work(file.replay_coverage.verdict) {
            UNRECORDED_IDLE_NOTE
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{}{note}",
            timeline::timeline_line("GPU timeline", times)
        );
    }
    timeline::render_host(&mut out, &file.idle_causes, &file.launches);
    out.replace("\n\n", "\n").trim().to_owned()
}

/// A file's verdict, as the terminal report states it under the file's name: the verdict
/// line, what is missing, the patterns, the advice, and a partial input's break.
pub fn file_verdict(file: &FileReport, options: &TerminalOptions) -> String {
    let mut out = String::new();
    render_verdict(&mut out, file, options);
    if file.import.partial {
        let at = file
            .import
            .truncated_at_byte
            .map(|b| format!(" at byte {b}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  PARTIAL: the input broke off{at}; every number below covers only the events before the break"
        );
    }
    out
}

/// The verdict line of all files together; what kept it from `complete` when an input
/// could not be read, holds no events or was read only in part.
pub fn combined_verdict(combined: &Combined, options: &TerminalOptions) -> String {
    let n = &combined.replay_coverage;
    let files = combined.files;
    let mut why = Vec::new();
    if combined.failed_files > 0 {
        why.push(format!(
            "{} of {files} input files could not be read",
            combined.failed_files
        ));
    }
    if combined.files_without_events > 0 {
        why.push(format!(
            "{} of {files} files hold no events",
            combined.files_without_events
        ));
    }
    if combined.partial_files > 0 {
        why.push(format!(
            "{} of {files} files read only up to a break",
            combined.partial_files
        ));
    }
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(" ({})", why.join("; "))
    };
    format!(
        "replay coverage: {}{why} — {}\n",
        verdict_word(combined.verdict, options),
        verdict::recorded_text(n)
    )
}

fn render_trace_line(out: &mut String, file: &FileReport) {
    let devices = if file.devices.is_empty() {
        "no device list".to_owned()
    } else {
        dedup_join(&file.devices)
    };
    let coverage = &file.replay_coverage;
    let orphans = match (coverage.orphan_kernels, coverage.orphan_transfers) {
        (0, 0) => String::new(),
        (k, t) => format!(
            "; {} and {} whose correlation matches no host call (orphans)",
            count(k as u32, "kernel"),
            count(t as u32, "memcpy/memset")
        ),
    };
    let _ = writeln!(
        out,
        "\ntrace: {}, {}, {} memcpy, {} memset, {}; {}; {}{orphans}",
        count(file.events.total as u32, "event"),
        count(file.events.kernels as u32, "kernel"),
        file.events.memcpys,
        file.events.memsets,
        count(file.events.runtime_calls as u32, "runtime call"),
        devices,
        file.advice.runtime
    );
    for capture in &file.capture_traces {
        let _ = writeln!(out, "capture trace: {}", crate::schema::text(capture));
    }
}

fn render_steps(out: &mut String, file: &FileReport) {
    match file.steps.framework {
        Some(framework) => {
            let counts: Vec<String> = file
                .steps
                .counts
                .iter()
                .map(|(k, n)| format!("{n} × {k}"))
                .collect();
            let _ = writeln!(
                out,
                "steps ({framework} annotations): {}",
                counts.join(", ")
            );
        }
        None => {
            let _ = writeln!(
                out,
                "steps: no SGLang/vLLM/ATOM or ProfilerStep annotations; replayed kernels count as decode, the rest is unassigned"
            );
        }
    }
}

/// A table with the report's style; each column at least as wide as its header's longest
/// word, so narrow terminals never split a header word.
fn new_table(options: &TerminalOptions, header: &[&str]) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    match options.width {
        TableWidth::Columns(width) => table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(width),
        TableWidth::Terminal => table.set_content_arrangement(ContentArrangement::Dynamic),
        TableWidth::Unbounded => table.set_content_arrangement(ContentArrangement::Disabled),
    };
    table.set_header(header.iter().copied());
    for (index, title) in header.iter().enumerate() {
        let longest = title
            .split(' ')
            .map(|w| w.chars().count())
            .max()
            .unwrap_or(0);
        if let Some(column) = table.column_mut(index) {
            // The width includes the cell's padding (one space each side).
            column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(
                longest as u16 + 2,
            )));
        }
    }
    table
}

/// Right-aligns the columns from `from` on: numbers (and short words such as a roofline
/// bound), which are never wrapped — a narrow terminal takes width from the name columns.
fn right_align(table: &mut Table, from: usize) {
    let count = table.column_count();
    for index in from..count {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
            column.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
}

/// The breakdown, after the whole trace's timeline where there is one.
fn render_breakdown(
    out: &mut String,
    (breakdown, whole): (&Breakdown, Option<(&GpuTimelineTimes, f64)>),
    missing_work: bool,
    options: &TerminalOptions,
) {
    let _ = writeln!(
        out,
        "\nGPU time {} in all; {} not assigned to a step",
        micros_text(breakdown.total_gpu_time_us),
        percent(breakdown.unassigned_share)
    );
    if let Some((times, unlinked_us)) = whole {
        let note = if missing_work {
            UNRECORDED_IDLE_NOTE
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{}{note}",
            timeline::timeline_line("GPU timeline", times)
        );
        if unlinked_us > 0.0 {
            let _ = writeln!(
                out,
                "  not in it: {} of GPU work linked to no launch call (launched before the profiler started, or from a thread it did not trace)",
                micros_text(unlinked_us)
            );
        }
    }
    for stage in &breakdown.stages {
        render_stage(out, stage, missing_work, options);
    }
}

/// `, idle X of Y step windows` (or GPU span), with a warning beside unrecorded replays.
fn idle_text(stage: &Stage, missing_work: bool) -> String {
    let over = match stage.idle_basis {
        IdleBasis::StepWindows => "step windows",
        IdleBasis::GpuSpan => "GPU span (first to last event, per device)",
        IdleBasis::Mixed => "step windows and GPU spans",
        IdleBasis::NotMeasured => return String::new(),
    };
    let note = if stage.unrecorded_replays > 0 {
        let estimate = stage
            .missing_work_us
            .map(|us| format!(" (≈ {})", micros_text(us)))
            .unwrap_or_default();
        format!(
            " — at least {}{estimate} of it is the unrecorded work of {}, not idleness",
            micros_text(stage.missing_work_low_us),
            count(stage.unrecorded_replays, "short or empty replay")
        )
    } else if missing_work && stage.idle_time_us > 0.0 {
        " (beside unrecorded replays, idle time is missing work, not idleness)".to_owned()
    } else {
        String::new()
    };
    format!(
        ", idle {} of {} {over}{note}",
        micros_text(stage.idle_time_us),
        micros_text(stage.window_us)
    )
}

fn render_stage(out: &mut String, stage: &Stage, missing_work: bool, options: &TerminalOptions) {
    let idle = idle_text(stage, missing_work);
    let _ = writeln!(
        out,
        "\n{} — {}, {}, GPU time {} ({} of all), busy {}{idle}",
        stage.stage.as_str().to_uppercase(),
        count(stage.steps, "step"),
        count(stage.events as u32, "event"),
        micros_text(stage.gpu_time_us),
        percent(stage.share_of_total),
        micros_text(stage.busy_time_us),
    );
    if stage.events == 0 {
        return;
    }
    if let Some(times) = &stage.timeline {
        let note = if stage.unrecorded_replays > 0 {
            " (its idle time holds the unrecorded work above)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{}{note}",
            timeline::timeline_line("where its GPU time goes", times)
        );
    }
    render_rows(
        out,
        &stage.categorised_by,
        &stage.categories,
        &stage.kernels,
        options,
    );
}

/// `categorised: 62% by launching op; by name: 30% graph replays, 8% ops without a rule`.
fn categorised_line(by: &CategorisedBy) -> Option<String> {
    let total: f64 = by.parts().iter().map(|(_, us)| us).sum();
    if total <= 0.0 {
        return None;
    }
    let parts = by.parts();
    let (launching, capturing) = (parts[0].1, parts[1].1);
    let names: Vec<String> = parts[2..]
        .iter()
        .filter(|(_, us)| *us > 0.0)
        .map(|(label, us)| format!("{} {label}", percent(us / total)))
        .collect();
    let mut line = format!(
        "categorised: {} by launching op",
        percent(launching / total)
    );
    if capturing > 0.0 {
        let _ = write!(line, ", {} by capturing op", percent(capturing / total));
    }
    if !names.is_empty() {
        line.push_str("; by kernel name: ");
        line.push_str(&names.join(", "));
    }
    Some(line)
}

/// The category table and the top-kernel table of a stage or a range, after a line on
/// what decided the categories.
fn render_rows(
    out: &mut String,
    categorised_by: &CategorisedBy,
    categories: &[Row],
    kernels: &[Row],
    options: &TerminalOptions,
) {
    if let Some(line) = categorised_line(categorised_by) {
        let _ = writeln!(out, "{line}");
    }
    let mut table = new_table(options, &["category", "time", "share", "events", "by op"]);
    for row in categories {
        table.add_row(vec![
            row.name.clone(),
            micros_text(row.time_us),
            percent(row.share),
            row.events.to_string(),
            by_op_text(row),
        ]);
    }
    right_align(&mut table, 1);
    let _ = writeln!(out, "{table}");
    let mut table = new_table(
        options,
        &[
            "id", "kernel", "category", "time", "share", "events", "mean",
        ],
    );
    let shown: Vec<&Row> = kernels.iter().take(options.top_kernels).collect();
    let names: Vec<&str> = shown.iter().map(|r| r.name.as_str()).collect();
    let labels = kernel_names::kernel_labels(&names, KERNEL_COLUMN, options.wide);
    for (row, name) in shown.iter().zip(labels) {
        table.add_row(vec![
            row.kernel_id.clone().unwrap_or_default(),
            name,
            row.category.clone(),
            micros_text(row.time_us),
            percent(row.share),
            row.events.to_string(),
            micros_text(row.mean_us),
        ]);
    }
    right_align(&mut table, 3);
    let _ = writeln!(out, "{table}");
}

/// Characters of a kernel name shown in a table (whole names with `--wide`).
pub(crate) const KERNEL_COLUMN: usize = 64;

/// The share of a row's time that its launching CPU ops categorised (the rest, the
/// kernels' names), or `-` when none did.
fn by_op_text(row: &Row) -> String {
    if row.events_by_op == 0 || row.time_us <= 0.0 {
        "-".to_owned()
    } else {
        percent(row.time_by_op_us / row.time_us)
    }
}

fn render_import(out: &mut String, file: &FileReport) {
    let import = &file.import;
    let notable: Vec<String> = import
        .counters
        .iter()
        .filter(|c| c.severity != "info")
        .map(|c| format!("{} {} ({}): {}", c.count, c.name, c.severity, c.description))
        .collect();
    if notable.is_empty() && import.unknown_categories.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nimport:");
    for line in notable {
        let _ = writeln!(out, "  {line}");
    }
    if !import.unknown_categories.is_empty() {
        let list: Vec<String> = import
            .unknown_categories
            .iter()
            .map(|(k, v)| format!("{} ({v})", crate::schema::text(k)))
            .collect();
        let _ = writeln!(
            out,
            "  unknown event categories, counted and skipped: {}",
            list.join(", ")
        );
    }
}

fn dedup_join(names: &[String]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for name in names {
        match counts.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 += 1,
            None => counts.push((name.clone(), 1)),
        }
    }
    counts
        .into_iter()
        .map(|(n, c)| {
            if c > 1 {
                format!("{c} × {}", if n.is_empty() { "unnamed GPU" } else { &n })
            } else {
                n
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `0.8%`, `96%`, `100%`; never `100%` for less than all, never `0%` for more than none.
pub fn percent(fraction: f64) -> String {
    let value = fraction * 100.0;
    if value > 0.0 && value < 0.05 {
        "<0.1%".to_owned()
    } else if value > 99.5 && value < 100.0 {
        format!("{:.1}%", value.min(99.9))
    } else if value > 0.0 && value < 9.95 {
        format!("{value:.1}%")
    } else {
        format!("{value:.0}%")
    }
}

fn micros_text(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.3} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.1} µs")
    }
}

/// `text` cut to `max` characters by replacing its middle with `…`, so both the start
/// (namespace, kernel family) and the end (template arguments, tile sizes) stay readable.
pub fn truncate_middle(text: &str, max: usize) -> String {
    let length = text.chars().count();
    if length <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub(1);
    let head = keep * 2 / 3;
    let tail = keep - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(length - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_compact() {
        assert_eq!(ranges(&[0, 1, 2, 4, 6, 7]), "#0–2, #4, #6–7");
        assert_eq!(ranges(&[]), "");
    }

    #[test]
    fn percent_keeps_small_values_readable() {
        assert_eq!(percent(1.0 / 127.0), "0.8%");
        assert_eq!(percent(0.96), "96%");
        assert_eq!(percent(1.0), "100%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(0.9996), "99.9%", "never 100% for less than all");
        assert_eq!(percent(0.0001), "<0.1%", "never 0% for more than none");
    }

    #[test]
    fn cut_names_keep_both_ends() {
        let name = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align4>";
        let cut = truncate_middle(name, 40);
        assert_eq!(cut.chars().count(), 40);
        assert!(cut.starts_with("void cutlass::Kernel"));
        assert!(cut.ends_with("tn_align4>"));
    }

    #[test]
    fn ranges_of_shares() {
        assert_eq!(share_range(0.5, Some(0.5), 0.5), "≈ 50%");
        assert_eq!(share_range(0.0, None, 0.75), "between 0% and 75%");
        assert_eq!(
            share_range(0.41, Some(0.58), 0.61),
            "between 41% and 61% (estimate 58%)"
        );
    }
}
