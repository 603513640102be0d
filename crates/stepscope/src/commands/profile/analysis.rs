//! Every window's rank traces through the same code as `stepscope analyze`: its JSON
//! document and terminal report written beside the traces, its headline numbers into
//! `results.json`, and the run's verdict the worst of its windows.

use super::ProfileArgs;
use crate::Outcome;
use crate::app::{AnalyzeRequest, Gate};
use crate::commands::analyze::{AnalyzeSettings, View, analyze_paths, outcome};
use std::path::PathBuf;
use stepscope_analysis::combine::combine_verdicts;
use stepscope_report::html::Page;
use stepscope_report::schema::{Document, FileReport, OverallVerdict};
use stepscope_report::terminal::{TableWidth, TerminalOptions};
use stepscope_serving::profile::RunDir;
use stepscope_serving::profile::record::{AnalysedFile, WindowAnalysis, WindowRecord};

/// What the analyses decided for the exit code.
#[derive(Debug, Clone, Copy, Default)]
pub struct Analysed {
    /// Some window's verdict fails the gate (with --fail-on-incomplete or --strict).
    pub gate_failed: bool,
    /// Some window's file could not be read.
    pub unreadable: bool,
    /// Windows with analysed traces.
    pub windows: usize,
}

/// Analyses each window that collected rank traces; records the results.
pub fn analyse_windows(run: &RunDir, args: &ProfileArgs) -> anyhow::Result<Analysed> {
    let mut analysed = Analysed::default();
    let windows = run.record().windows;
    let mut verdicts = Vec::new();
    for window in &windows {
        let files: Vec<PathBuf> = window
            .traces
            .iter()
            .filter(|t| t.role == "rank")
            .map(|t| run.path(&t.path))
            .collect();
        if files.is_empty() {
            continue;
        }
        let settings = match settings(files, args) {
            Ok(settings) => settings,
            Err(error) => {
                crate::output::print_error(&error);
                analysed.unreadable = true;
                continue;
            }
        };
        let document = analyze_paths(&settings);
        let summary = write_window(run, window, &document, &settings)?;
        match outcome(&document, &settings) {
            Outcome::VerdictFailed => analysed.gate_failed = true,
            Outcome::InputError => analysed.unreadable = true,
            _ => {}
        }
        verdicts.push(document.verdict);
        analysed.windows += 1;
        let index = window.index;
        run.update(|r| {
            if let Some(w) = r.windows.iter_mut().find(|w| w.index == index) {
                w.analysis = Some(summary);
            }
        })?;
    }
    let worst = worst_verdict(&verdicts);
    run.update(|r| r.verdict = worst)?;
    Ok(analysed)
}

/// The window's analysis, asked for as `analyze FILES` with the run's gate and `--top`
/// would ask (the same request, so the same reading, captures and checks).
fn settings(files: Vec<PathBuf>, args: &ProfileArgs) -> anyhow::Result<AnalyzeSettings> {
    let request = AnalyzeRequest {
        gate: Gate::of(args.strict, args.fail_on_incomplete),
        top: args.top,
        ..AnalyzeRequest::new(files)
    };
    let view = View {
        messages: true,
        ..View::default()
    };
    AnalyzeSettings::resolve(request, view)
}

/// Writes `analysis.json` and `report.txt` into the window's folder; returns the summary.
fn write_window(
    run: &RunDir,
    window: &WindowRecord,
    document: &Document,
    settings: &AnalyzeSettings,
) -> anyhow::Result<WindowAnalysis> {
    let json = stepscope_report::json::render(document);
    let options = TerminalOptions::default()
        .with_color(false)
        .with_top_kernels(settings.top)
        .with_width(TableWidth::Unbounded);
    let text = stepscope_report::terminal::render(document, &options);
    let document_path = format!("{}/analysis.json", window.dir);
    let report_path = format!("{}/report.txt", window.dir);
    run.write(&document_path, json.as_bytes())?;
    run.write(&report_path, text.as_bytes())?;
    let html_path = format!("{}/report.html", window.dir);
    let page = Page::single(
        format!("stepscope profile: {}", window.dir),
        window.dir.clone(),
        document,
    );
    run.write(&html_path, stepscope_report::html::render(&page).as_bytes())?;
    let files: Vec<AnalysedFile> = document
        .files
        .iter()
        .map(|file| analysed_file(run, file))
        .collect();
    Ok(WindowAnalysis {
        verdict: document.verdict.to_string(),
        document: document_path,
        report: report_path,
        html: html_path,
        steps_in_trace: files
            .iter()
            .map(|f| f.steps.values().sum::<u64>())
            .max()
            .unwrap_or(0),
        files,
    })
}

fn analysed_file(run: &RunDir, file: &FileReport) -> AnalysedFile {
    let coverage = &file.replay_coverage;
    AnalysedFile {
        path: run.relative(std::path::Path::new(&file.path)),
        verdict: coverage.verdict.to_string(),
        steps: file
            .steps
            .counts
            .iter()
            .map(|(mode, count)| (mode.clone(), *count as u64))
            .collect(),
        replays: u64::from(coverage.numbers.totals.replays),
        completeness: coverage.numbers.completeness,
    }
}

/// The worst verdict of the windows, as `analyze` combines files: `unreadable` when a window
/// could not be read, else the worst window verdict — `partial` instead of a passing one
/// (complete, unverified, no-replays) when a window was read only up to a break, so a cut
/// window neither hides a failing verdict nor passes as complete.
fn worst_verdict(verdicts: &[OverallVerdict]) -> Option<String> {
    if verdicts.is_empty() {
        return None;
    }
    if verdicts.contains(&OverallVerdict::Unreadable) {
        return Some(OverallVerdict::Unreadable.to_string());
    }
    let known = verdicts.iter().filter_map(|v| match v {
        OverallVerdict::Worst(verdict) => Some(*verdict),
        OverallVerdict::Unreadable | OverallVerdict::Partial => None,
    });
    let worst = combine_verdicts(known);
    let partial = verdicts.contains(&OverallVerdict::Partial);
    let overall = if partial && !worst.fails_gate(false) {
        OverallVerdict::Partial
    } else {
        OverallVerdict::Worst(worst)
    };
    Some(overall.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use stepscope_analysis::Verdict;

    #[test]
    fn a_partial_window_makes_the_run_partial_unless_a_window_fails() {
        use OverallVerdict::{Partial, Unreadable, Worst};
        let word = |v: &[OverallVerdict]| worst_verdict(v).expect("windows");
        assert_eq!(word(&[Partial, Worst(Verdict::Complete)]), "partial");
        assert_eq!(word(&[Partial]), "partial");
        assert_eq!(
            word(&[Partial, Worst(Verdict::Incomplete)]),
            "incomplete",
            "a failing window is never hidden"
        );
        assert_eq!(word(&[Worst(Verdict::Complete), Unreadable]), "unreadable");
        assert_eq!(
            word(&[Worst(Verdict::Complete), Worst(Verdict::Unverified)]),
            "unverified"
        );
        assert_eq!(worst_verdict(&[]), None);
    }
}
