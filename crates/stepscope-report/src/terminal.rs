//! Terminal report: the verdict first, then the numbers behind it.

use crate::schema::{
    Advice, Breakdown, Coverage, Document, FileReport, Finding, Graph, MAX_FINDINGS, Row, Stage,
};
use comfy_table::{CellAlignment, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use owo_colors::OwoColorize;
use std::fmt::Write;

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
    /// Problem replays listed per file. Default: 5.
    pub findings: usize,
    /// How wide tables may be. Default: unbounded (pipes and files).
    pub width: TableWidth,
}

impl Default for TerminalOptions {
    fn default() -> Self {
        TerminalOptions {
            color: false,
            top_kernels: 10,
            findings: 3,
            width: TableWidth::Unbounded,
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

    /// With `top` kernels per stage.
    pub fn with_top_kernels(mut self, top: usize) -> Self {
        self.top_kernels = top;
        self
    }
}

/// Renders the whole document.
pub fn render(document: &Document, options: &TerminalOptions) -> String {
    let mut out = String::new();
    for file in &document.files {
        render_file(&mut out, file, options);
    }
    if let Some(combined) = &document.combined {
        let _ = writeln!(out, "══ all {} files ══", combined.files);
        let n = &combined.replay_coverage;
        let _ = writeln!(
            out,
            "replay coverage: {} — kernels of {} of {} graph replays recorded ({}), completeness {}",
            verdict_word(combined.verdict, options),
            n.recorded_replays,
            n.replays,
            percent(n.coverage),
            percent(n.completeness)
        );
        if let Some(breakdown) = &combined.breakdown {
            render_breakdown(&mut out, breakdown, options);
        }
    }
    out
}

fn render_file(out: &mut String, file: &FileReport, options: &TerminalOptions) {
    let rank = file
        .rank
        .map(|r| format!(" (rank {r} of {})", file.world_size.unwrap_or(1)))
        .unwrap_or_default();
    let _ = writeln!(out, "══ {}{rank} ══", file.path);
    render_verdict(out, &file.replay_coverage, &file.advice, options);
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
    let devices = if file.devices.is_empty() {
        "no device list".to_owned()
    } else {
        dedup_join(&file.devices)
    };
    let _ = writeln!(
        out,
        "\ntrace: {} events, {} kernels, {} memcpy, {} memset, {} runtime calls; {}; {}",
        file.events.total,
        file.events.kernels,
        file.events.memcpys,
        file.events.memsets,
        file.events.runtime_calls,
        devices,
        file.advice.runtime
    );
    render_steps(out, file);
    if !file.replay_coverage.graphs.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            graph_table(&file.replay_coverage.graphs, options)
        );
    }
    render_findings(out, &file.replay_coverage, options);
    render_breakdown(out, &file.breakdown, options);
    render_import(out, file);
    out.push('\n');
}

fn verdict_word(verdict: &str, options: &TerminalOptions) -> String {
    let word = verdict.to_uppercase();
    if !options.color {
        return word;
    }
    match verdict {
        "complete" => word.green().bold().to_string(),
        "incomplete" => word.red().bold().to_string(),
        _ => word.yellow().bold().to_string(),
    }
}

fn render_verdict(
    out: &mut String,
    coverage: &Coverage,
    advice: &Advice,
    options: &TerminalOptions,
) {
    let n = &coverage.numbers;
    let word = verdict_word(coverage.verdict, options);
    match coverage.verdict {
        "no-replays" => {
            let _ = writeln!(
                out,
                "replay coverage: {word} — the trace has no graph launches; nothing to check"
            );
            return;
        }
        "complete" => {
            let _ = writeln!(
                out,
                "replay coverage: {word} — kernels of all {} graph replays recorded ({} nodes), in capture order",
                n.replays, n.recorded_nodes
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "replay coverage: {word} — kernels of {} of {} graph replays recorded ({}); {} short, {} empty; completeness {}",
                n.recorded_replays,
                n.replays,
                percent(n.coverage),
                n.short_replays,
                n.empty_replays,
                percent(n.completeness)
            );
            let _ = writeln!(
                out,
                "  missing replay (decode) GPU time ≈ {} of the window; per-op shares below describe the work that was recorded, mostly prefill and eager ops",
                percent(coverage.missing_share)
            );
            render_advice(out, advice);
        }
    }
    if n.order_mismatches > 0 || n.deferred_replays > 0 {
        let _ = writeln!(
            out,
            "  also: {} replays out of capture order, {} replays whose kernels arrived after the next step ended",
            n.order_mismatches, n.deferred_replays
        );
    }
}

fn render_advice(out: &mut String, advice: &Advice) {
    if advice.switches.is_empty() {
        let _ = writeln!(
            out,
            "  trace recorded on {} → {}",
            advice.runtime, advice.reason
        );
        return;
    }
    let settings: Vec<String> = advice
        .switches
        .iter()
        .map(|s| format!("{}={}", s.variable, s.value))
        .collect();
    let _ = writeln!(
        out,
        "  trace recorded on {} → start the server with {}",
        advice.runtime,
        settings.join(" and ")
    );
    let _ = writeln!(out, "  ({})", advice.reason);
    for switch in &advice.switches {
        let measured = if switch.measured {
            "measured"
        } else {
            "not yet measured on a GPU"
        };
        let _ = writeln!(
            out,
            "    {}={}: {} [{}; {}]",
            switch.variable, switch.value, switch.effect, switch.runtime_line, measured
        );
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
                "steps: no SGLang/vLLM/ATOM step annotations; replayed kernels count as decode, the rest is unassigned"
            );
        }
    }
}

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
    table
}

fn right_align(table: &mut Table, from: usize) {
    let count = table.column_count();
    for index in from..count {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
}

fn graph_table(graphs: &[Graph], options: &TerminalOptions) -> Table {
    let mut table = new_table(
        options,
        &[
            "graph",
            "first kernel",
            "expected nodes",
            "replays",
            "recorded",
            "complete",
            "short",
            "empty",
            "out of order",
            "completeness",
        ],
    );
    for g in graphs {
        let n = &g.numbers;
        let expected = match (g.expected_nodes_per_replay, g.expected_source) {
            (Some(e), "capture_trace") => format!("{e} (capture)"),
            (Some(e), _) => e.to_string(),
            (None, _) => "unknown".to_owned(),
        };
        table.add_row(vec![
            g.graph.map_or("unknown".to_owned(), |g| g.to_string()),
            truncate(g.first_kernel.as_deref().unwrap_or("—"), 48),
            expected,
            n.replays.to_string(),
            n.recorded_replays.to_string(),
            n.complete_replays.to_string(),
            n.short_replays.to_string(),
            n.empty_replays.to_string(),
            n.order_mismatches.to_string(),
            percent(n.completeness),
        ]);
    }
    right_align(&mut table, 2);
    table
}

fn render_findings(out: &mut String, coverage: &Coverage, options: &TerminalOptions) {
    let kinds = [
        "ReplayWithoutKernels",
        "ShortReplay",
        "ReplayOrderMismatch",
        "DeferredKernelBurst",
    ];
    for kind in kinds {
        let found: Vec<&Finding> = coverage
            .findings
            .iter()
            .filter(|f| f.kind == kind)
            .collect();
        if found.is_empty() {
            continue;
        }
        let replays: Vec<usize> = found.iter().map(|f| f.replay).collect();
        let listed = if found.len() == coverage.findings.len() && found.len() >= MAX_FINDINGS {
            " (first listed)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {kind}: {} replays{listed}: {}",
            found.len(),
            ranges(&replays)
        );
        // One line per distinct piece of evidence, up to `findings` lines.
        let mut shown: Vec<&Option<String>> = Vec::new();
        for finding in &found {
            if shown.len() >= options.findings || shown.contains(&&finding.evidence) {
                continue;
            }
            shown.push(&finding.evidence);
            let expected = finding
                .expected_nodes
                .map_or("?".to_owned(), |e| e.to_string());
            let step = finding
                .step
                .as_deref()
                .map(|s| format!(" in {}", truncate(s, 40)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    e.g. #{} (graph {}){step}: {} of {expected} nodes{}",
                finding.replay,
                finding
                    .graph
                    .map_or("unknown".to_owned(), |g| g.to_string()),
                finding.recorded_nodes,
                finding
                    .evidence
                    .as_deref()
                    .map(|e| format!(" — {e}"))
                    .unwrap_or_default()
            );
        }
    }
}

/// `0–14, 16–30, 47`.
fn ranges(sorted: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut index = 0;
    while index < sorted.len() {
        let start = sorted[index];
        let mut end = start;
        while index + 1 < sorted.len() && sorted[index + 1] == end + 1 {
            index += 1;
            end += 1;
        }
        parts.push(if end > start {
            format!("#{start}–{end}")
        } else {
            format!("#{start}")
        });
        index += 1;
    }
    if parts.len() > 8 {
        let more = parts.len() - 8;
        parts.truncate(8);
        parts.push(format!("… {more} more runs"));
    }
    parts.join(", ")
}

fn render_breakdown(out: &mut String, breakdown: &Breakdown, options: &TerminalOptions) {
    let _ = writeln!(
        out,
        "\nGPU time {} in all; {} not assigned to a step",
        micros_text(breakdown.total_gpu_time_us),
        percent(breakdown.unassigned_share)
    );
    for stage in &breakdown.stages {
        render_stage(out, stage, options);
    }
}

fn render_stage(out: &mut String, stage: &Stage, options: &TerminalOptions) {
    let idle = if stage.steps > 0 {
        format!(
            ", idle {} of {} step windows",
            micros_text(stage.idle_time_us),
            micros_text(stage.window_us)
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "\n{} — {} step{}, {} events, GPU time {} ({} of all), busy {}{idle}",
        stage.stage.to_uppercase(),
        stage.steps,
        if stage.steps == 1 { "" } else { "s" },
        stage.events,
        micros_text(stage.gpu_time_us),
        percent(stage.share_of_total),
        micros_text(stage.busy_time_us),
    );
    if stage.events == 0 {
        return;
    }
    let mut table = new_table(options, &["category", "time", "share", "events"]);
    for row in &stage.categories {
        table.add_row(vec![
            row.name.clone(),
            micros_text(row.time_us),
            percent(row.share),
            row.events.to_string(),
        ]);
    }
    right_align(&mut table, 1);
    let _ = writeln!(out, "{table}");
    let mut table = new_table(
        options,
        &["kernel", "category", "time", "share", "events", "mean"],
    );
    for row in stage.kernels.iter().take(options.top_kernels) {
        table.add_row(kernel_row(row));
    }
    right_align(&mut table, 2);
    let _ = writeln!(out, "{table}");
}

fn kernel_row(row: &Row) -> Vec<String> {
    vec![
        truncate(&row.name, 64),
        row.category.clone(),
        micros_text(row.time_us),
        percent(row.share),
        row.events.to_string(),
        micros_text(row.mean_us),
    ]
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
            .map(|(k, v)| format!("{k} ({v})"))
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

/// `0.8%`, `96%`, `100%`.
pub fn percent(fraction: f64) -> String {
    let value = fraction * 100.0;
    if value > 0.0 && value < 9.95 {
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

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
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
    }
}
