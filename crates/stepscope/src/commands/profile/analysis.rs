//! Every window's rank traces through the same code as `stepscope analyze`: its JSON
//! document and terminal report written beside the traces, its headline numbers into
//! `results.json`, and the run's verdict the worst of its windows.

use super::ProfileArgs;
use crate::Outcome;
use crate::commands::analyze::{AnalyzeSettings, analyze_paths, outcome};
use std::path::PathBuf;
use stepscope_analysis::passes::kernel_categories::KernelCategories;
use stepscope_ingest::ReadOptions;
use stepscope_report::schema::Document;
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
        let settings = settings(files, args);
        let document = analyze_paths(&settings);
        let summary = write_window(run, window, &document, &settings)?;
        match outcome(&document, &settings) {
            Outcome::VerdictFailed => analysed.gate_failed = true,
            Outcome::InputError => analysed.unreadable = true,
            _ => {}
        }
        verdicts.push(summary.verdict.clone());
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

fn settings(files: Vec<PathBuf>, args: &ProfileArgs) -> AnalyzeSettings {
    AnalyzeSettings {
        files,
        json: false,
        csv: None,
        fail_on_incomplete: args.fail_on_incomplete || args.strict,
        strict: args.strict,
        capture_path: None,
        capture: Vec::new(),
        categories: KernelCategories::embedded(),
        range: None,
        read: ReadOptions::default(),
        top: args.top,
        color: false,
        progress: false,
    }
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
    let value: serde_json::Value = serde_json::from_str(&json)?;
    let files: Vec<AnalysedFile> = value["files"]
        .as_array()
        .map(|files| files.iter().map(|f| analysed_file(run, f)).collect())
        .unwrap_or_default();
    Ok(WindowAnalysis {
        verdict: value["verdict"].as_str().unwrap_or("unreadable").to_owned(),
        document: document_path,
        report: report_path,
        steps_in_trace: files
            .iter()
            .map(|f| f.steps.values().sum::<u64>())
            .max()
            .unwrap_or(0),
        files,
    })
}

fn analysed_file(run: &RunDir, file: &serde_json::Value) -> AnalysedFile {
    let coverage = &file["replay_coverage"];
    let steps = file["steps"]["counts"]
        .as_object()
        .map(|counts| {
            counts
                .iter()
                .filter_map(|(k, v)| v.as_u64().map(|v| (k.clone(), v)))
                .collect()
        })
        .unwrap_or_default();
    let path = file["path"].as_str().unwrap_or_default();
    AnalysedFile {
        path: run.relative(std::path::Path::new(path)),
        verdict: coverage["verdict"].as_str().unwrap_or_default().to_owned(),
        steps,
        replays: coverage["replays"].as_u64().unwrap_or(0),
        completeness: coverage["completeness"].as_f64(),
    }
}

/// The worst verdict, in `analyze`'s order (an unreadable file worst of all).
fn worst_verdict(verdicts: &[String]) -> Option<String> {
    const ORDER: [&str; 8] = [
        "no-events",
        "no-replays",
        "complete",
        "unverified",
        "mistimed",
        "damaged",
        "incomplete",
        "unreadable",
    ];
    verdicts
        .iter()
        .max_by_key(|v| ORDER.iter().position(|o| o == v).unwrap_or(0))
        .cloned()
}
