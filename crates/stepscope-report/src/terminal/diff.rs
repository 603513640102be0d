//! The terminal report of `stepscope diff`: each side's replay coverage, what was refused
//! and why, then per stage the time before and after, by category and by kernel.

use super::{
    KERNEL_COLUMN, TerminalOptions, kernel_id_note, kernel_names, micros_text, new_table, percent,
    right_align,
};
use super::{recorded_text, verdict_word};
use crate::schema::count;
use crate::schema::diff::{
    DiffDocument, DiffSide, PerStep, RefusedStage, RegressionGate, RowDelta, StageDelta,
};
use std::fmt::Write;

/// Renders a diff document.
pub fn render_diff(document: &DiffDocument, options: &TerminalOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "══ stepscope diff ══");
    side_line(&mut out, "BASE", &document.base, options);
    side_line(&mut out, "NEW ", &document.new, options);
    side_problems(&mut out, document);
    for side in &document.unusable_sides {
        let _ = writeln!(
            out,
            "\nREFUSED: {} cannot be compared{}: {}\n  fix: {}",
            side.side.to_uppercase(),
            if document.forced {
                " (compared anyway: --force)"
            } else {
                ""
            },
            side.reason,
            side.fix
        );
    }
    for refused in &document.refused {
        render_refused(&mut out, refused);
    }
    if !document.notes.is_empty() {
        out.push('\n');
        for note in &document.notes {
            let _ = writeln!(out, "note: {note}");
        }
    }
    if document.stages.is_empty() {
        let _ = writeln!(out, "\nno stage left to compare");
        return out;
    }
    let _ = writeln!(out, "\n{}", stage_table(&document.stages, options));
    if let Some(gate) = &document.regression_gate {
        render_gate(&mut out, gate);
    }
    for stage in &document.stages {
        render_stage(&mut out, stage, options);
    }
    super::efficiency::render_op_rates(&mut out, &document.op_rates, options);
    let kernels =
        |s: &StageDelta| !(s.kernels.is_empty() && s.appeared.is_empty() && s.vanished.is_empty());
    if document.stages.iter().any(kernels) {
        kernel_id_note(&mut out);
    }
    out
}

/// `BASE  a.json.gz: COMPLETE — kernels of 25 of 25 graph replays recorded (100%),
/// completeness 100%`.
/// Each side's warnings and unreadable files.
fn side_problems(out: &mut String, document: &DiffDocument) {
    for (label, side) in [("BASE", &document.base), ("NEW", &document.new)] {
        for warning in &side.warnings {
            let _ = writeln!(
                out,
                "warning ({label}): {}",
                stepscope_model::text::escape_controls_keep_lines(warning)
            );
        }
        for failed in &side.failed_files {
            let _ = writeln!(
                out,
                "unreadable ({label}): {}",
                stepscope_model::text::escape_controls(&failed.path)
            );
        }
    }
}

fn side_line(out: &mut String, label: &str, side: &DiffSide, options: &TerminalOptions) {
    let n = &side.replay_coverage;
    let files = match side.files.len() {
        1 => String::new(),
        many => format!(" ({many} files)"),
    };
    let windows = match side.windows.len() {
        0 => String::new(),
        _ => format!(" [windows {}]", side.windows.join(", ")),
    };
    let _ = writeln!(
        out,
        "{label}  {}{files}{windows}: {} — {}",
        stepscope_model::text::escape_controls(&side.path),
        verdict_word(side.verdict, options),
        recorded_text(n)
    );
}

fn render_refused(out: &mut String, refused: &RefusedStage) {
    let _ = writeln!(
        out,
        "\nREFUSED: {} not compared",
        refused.stage.as_str().to_uppercase()
    );
    for side in &refused.sides {
        let _ = writeln!(out, "  {}", side.explanation);
    }
    let _ = writeln!(out, "  fix: {}", refused.fix);
}

fn stage_table(stages: &[StageDelta], options: &TerminalOptions) -> comfy_table::Table {
    let mut table = new_table(
        options,
        &[
            "stage",
            "base",
            "new",
            "delta",
            "relative",
            "base share",
            "new share",
            "base events",
            "new events",
        ],
    );
    for stage in stages {
        let name = if stage.forced {
            format!("{} (forced)", stage.stage)
        } else {
            stage.stage.to_string()
        };
        table.add_row(vec![
            name,
            micros_text(stage.base.time_us),
            micros_text(stage.new.time_us),
            signed_micros(stage.delta_us),
            relative_text(stage.relative, stage.new.time_us),
            percent(stage.base.share),
            percent(stage.new.share),
            stage.base.events.to_string(),
            stage.new.events.to_string(),
        ]);
    }
    right_align(&mut table, 1);
    table
}

fn render_stage(out: &mut String, stage: &StageDelta, options: &TerminalOptions) {
    let _ = writeln!(
        out,
        "\n{} — {} → {} ({}, {})",
        stage.stage.as_str().to_uppercase(),
        micros_text(stage.base.time_us),
        micros_text(stage.new.time_us),
        signed_micros(stage.delta_us),
        relative_text(stage.relative, stage.new.time_us)
    );
    if let Some(step) = &stage.per_step {
        render_per_step(out, step);
    }
    if let Some(reason) = &stage.forced_reason {
        let _ = writeln!(
            out,
            "FORCED: compared anyway (--force), and not to be trusted: {reason}"
        );
    }
    if stage.categories.is_empty() {
        return;
    }
    let mut table = new_table(
        options,
        &[
            "category",
            "base",
            "new",
            "delta",
            "relative",
            "base share",
            "new share",
        ],
    );
    for row in &stage.categories {
        table.add_row(vec![
            row.name.clone(),
            micros_text(row.base.time_us),
            micros_text(row.new.time_us),
            signed_micros(row.delta_us),
            relative_text(row.relative, row.new.time_us),
            percent(row.base.share),
            percent(row.new.share),
        ]);
    }
    right_align(&mut table, 1);
    let _ = writeln!(out, "{table}");
    render_kernels(out, stage, options);
}

fn render_kernels(out: &mut String, stage: &StageDelta, options: &TerminalOptions) {
    let shown: Vec<&RowDelta> = stage.kernels.iter().take(options.top_kernels).collect();
    let mut table = new_table(
        options,
        &[
            "id",
            "kernel (largest change first)",
            "category",
            "base",
            "new",
            "delta",
            "relative",
        ],
    );
    let names: Vec<&str> = shown.iter().map(|r| r.name.as_str()).collect();
    let labels = kernel_names::kernel_labels(&names, KERNEL_COLUMN, options.wide);
    for (row, name) in shown.iter().zip(labels) {
        table.add_row(vec![
            row.kernel_id.clone().unwrap_or_default(),
            name,
            row.category.clone(),
            micros_text(row.base.time_us),
            micros_text(row.new.time_us),
            signed_micros(row.delta_us),
            relative_text(row.relative, row.new.time_us),
        ]);
    }
    right_align(&mut table, 3);
    let _ = writeln!(out, "{table}");
    let more = stage.kernels.len() - shown.len() + stage.kernels_left_out;
    if more > 0 {
        let _ = writeln!(
            out,
            "{} more kernels changed less (--top N shows more; --json lists every kernel up to its limit)",
            more
        );
    }
    one_sided(
        out,
        "appeared in NEW",
        &stage.appeared,
        stage.appeared_left_out,
        true,
        options,
    );
    one_sided(
        out,
        "vanished from BASE",
        &stage.vanished,
        stage.vanished_left_out,
        false,
        options,
    );
}

fn one_sided(
    out: &mut String,
    what: &str,
    rows: &[RowDelta],
    left_out: usize,
    new_side: bool,
    options: &TerminalOptions,
) {
    let total = rows.len() + left_out;
    if total == 0 {
        return;
    }
    let _ = writeln!(out, "{} {what}:", count(total as u32, "kernel"));
    let shown: Vec<&RowDelta> = rows.iter().take(options.top_kernels).collect();
    let names: Vec<&str> = shown.iter().map(|r| r.name.as_str()).collect();
    let labels = kernel_names::kernel_labels(&names, 96, options.wide);
    for (row, label) in shown.iter().zip(labels) {
        let amount = if new_side { &row.new } else { &row.base };
        let _ = writeln!(
            out,
            "  {} {label} [{}]: {} in {} events",
            row.kernel_id.as_deref().unwrap_or_default(),
            row.category,
            micros_text(amount.time_us),
            amount.events
        );
    }
    let shown = rows.len().min(options.top_kernels);
    if total > shown {
        let _ = writeln!(out, "  … {} more", total - shown);
    }
}

/// `+0.81 ms`, `-12.0 µs`, `0.0 µs`.
/// `per step: 10.2 ms → 12.3 ms (median of 25 → 25 steps), +20.6 % (95 % CI … ): …`.
fn render_per_step(out: &mut String, step: &PerStep) {
    let percent = |v: f64| format!("{:+.1} %", v * 100.0);
    let confidence = step.confidence * 100.0;
    let interval = if step.relative_low.is_finite() && step.relative_high.is_finite() {
        let noise = if step.relative_low > 0.0 || step.relative_high < 0.0 {
            "beyond step-to-step noise"
        } else {
            "within step-to-step noise"
        };
        format!(
            "({confidence:.0} % CI {} to {}): {noise}",
            percent(step.relative_low),
            percent(step.relative_high)
        )
    } else {
        format!("(too few steps for a {confidence:.0} % interval: 4 a side at least)")
    };
    let _ = writeln!(
        out,
        "per step: {} → {} (median of {} → {} steps), {} {interval}",
        micros_text(step.base_median_us),
        micros_text(step.new_median_us),
        step.base_steps,
        step.new_steps,
        percent(step.relative),
    );
}

/// The `--fail-on-regression` line: the stages it fails on, or none.
fn render_gate(out: &mut String, gate: &RegressionGate) {
    let threshold = gate.threshold_pct;
    if gate.slower.is_empty() {
        let _ = writeln!(
            out,
            "regression gate: no stage's GPU time per step grew by more than {threshold} % beyond noise"
        );
        return;
    }
    let stages: Vec<&str> = gate.slower.iter().map(|s| s.as_str()).collect();
    let _ = writeln!(
        out,
        "REGRESSION: {} GPU time per step grew by more than {threshold} % across its whole 95 % interval (exit 3)",
        stages.join(", ")
    );
}

fn signed_micros(us: f64) -> String {
    if us > 0.0 {
        format!("+{}", micros_text(us))
    } else if us < 0.0 {
        format!("-{}", micros_text(-us))
    } else {
        micros_text(0.0)
    }
}

/// `+7.6%`, `-100%` (vanished), `new` (nothing before), `-` (nothing on either side).
fn relative_text(relative: Option<f64>, new_us: f64) -> String {
    match relative {
        Some(0.0) => "0%".to_owned(),
        Some(r) if r > 0.0 => format!("+{}", percent(r)),
        Some(r) => format!("-{}", percent(-r)),
        None if new_us > 0.0 => "new".to_owned(),
        None => "-".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_are_explicit() {
        assert_eq!(signed_micros(810.0), "+810.0 µs");
        assert_eq!(signed_micros(-1500.0), "-1.50 ms");
        assert_eq!(signed_micros(0.0), "0.0 µs");
        assert_eq!(relative_text(Some(-0.076), 1.0), "-7.6%");
        assert_eq!(relative_text(Some(0.5), 1.0), "+50%");
        assert_eq!(relative_text(None, 3.0), "new");
        assert_eq!(relative_text(None, 0.0), "-");
    }
}
