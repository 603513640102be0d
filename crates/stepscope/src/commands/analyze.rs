//! `stepscope analyze`: read traces, run every pass, render.

use super::progress::ReadProgress;
use crate::Outcome;
use crate::cli::AnalyzeArgs;
use crate::output;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use stepscope_analysis::combine::{combine_breakdowns, combine_totals, combine_verdicts};
use stepscope_analysis::passes::capture_graphs::{CapturedGraph, captured_graphs};
use stepscope_analysis::passes::kernel_categories::KernelCategories;
use stepscope_analysis::passes::replay_coverage::{CoverageTotals, Verdict};
use stepscope_analysis::passes::stage_breakdown::StageBreakdown;
use stepscope_analysis::{AnalysisOptions, analyze};
use stepscope_ingest::{KinetoJsonOptions, ReadOptions, read_trace_file};
use stepscope_model::Trace;
use stepscope_report::schema::{Breakdown, Combined, CoverageNumbers, Document, FileReport, Tool};
use stepscope_report::terminal::TerminalOptions;

/// Everything `analyze` needs, resolved from the arguments.
pub struct AnalyzeSettings {
    /// Trace files, folders expanded.
    pub files: Vec<PathBuf>,
    /// JSON instead of tables.
    pub json: bool,
    /// CSV folder.
    pub csv: Option<PathBuf>,
    /// Exit 3 on an incomplete verdict.
    pub fail_on_incomplete: bool,
    /// Captured graphs from `--capture`.
    pub capture: Vec<CapturedGraph>,
    /// Category table.
    pub categories: KernelCategories,
    /// Reader settings.
    pub read: ReadOptions,
    /// Kernels per stage.
    pub top: usize,
    /// Colour.
    pub color: bool,
    /// Progress bar.
    pub progress: bool,
}

impl AnalyzeSettings {
    /// Resolves arguments; every field is destructured so a new flag cannot be ignored.
    pub fn resolve(args: AnalyzeArgs) -> anyhow::Result<Self> {
        let AnalyzeArgs {
            inputs,
            json,
            csv,
            fail_on_incomplete,
            capture,
            categories,
            allow_truncated,
            threads,
            top,
            color,
            no_progress,
        } = args;
        let kineto = KinetoJsonOptions::default()
            .with_threads(threads)
            .with_allow_truncated(allow_truncated);
        let read = ReadOptions::default().with_kineto(kineto);
        let categories = match categories {
            Some(path) => load_categories(&path)?,
            None => KernelCategories::embedded(),
        };
        let capture = match capture {
            Some(path) => load_capture(&path, &read)?,
            None => Vec::new(),
        };
        Ok(AnalyzeSettings {
            files: expand_inputs(&inputs)?,
            json,
            csv,
            fail_on_incomplete,
            capture,
            categories,
            read,
            top,
            color: output::use_color(color),
            progress: !no_progress,
        })
    }
}

fn load_categories(path: &Path) -> anyhow::Result<KernelCategories> {
    let text = fs_err::read_to_string(path)?;
    KernelCategories::from_toml(&text)
        .with_context(|| format!("Failed to load the category table `{}`", path.display()))
}

fn load_capture(path: &Path, read: &ReadOptions) -> anyhow::Result<Vec<CapturedGraph>> {
    let trace = read_trace_file(path, read)?;
    let graphs = captured_graphs(&trace);
    if graphs.is_empty() {
        bail!(
            "`{}` holds no stream capture (no hipStreamBeginCapture/cudaStreamBeginCapture … EndCapture pair)\nhint: pass the trace recorded while the server captured its graphs",
            path.display()
        );
    }
    Ok(graphs)
}

const TRACE_SUFFIXES: [&str; 3] = [".json", ".json.gz", ".json.zst"];

/// Files as given, and trace files found (recursively, sorted) in folders.
fn expand_inputs(inputs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let before = files.len();
            collect_traces(input, &mut files)?;
            if files.len() == before {
                bail!(
                    "`{}` holds no trace files (*.json, *.json.gz, *.json.zst)",
                    input.display()
                );
            }
        } else if input.exists() {
            files.push(input.clone());
        } else {
            bail!("`{}` does not exist", input.display());
        }
    }
    Ok(files)
}

fn collect_traces(dir: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let mut seen = std::collections::HashSet::new();
    walk(dir, files, &mut seen)
}

/// Recursive walk; `seen` holds canonical folder paths so a symlink loop is entered once.
fn walk(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    seen: &mut std::collections::HashSet<PathBuf>,
) -> anyhow::Result<()> {
    if !seen.insert(fs_err::canonicalize(dir)?) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = fs_err::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, files, seen)?;
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| TRACE_SUFFIXES.iter().any(|s| n.ends_with(s)))
        {
            files.push(path);
        }
    }
    Ok(())
}

/// What is kept of one analysed file once its trace is dropped.
struct FileResult {
    report: FileReport,
    totals: CoverageTotals,
    verdict: Verdict,
    breakdown: StageBreakdown,
}

fn read_with_progress(path: &Path, settings: &AnalyzeSettings) -> anyhow::Result<Trace> {
    let counter = Arc::new(AtomicU64::new(0));
    let mut kineto = settings.read.kineto.clone();
    kineto.progress = Some(counter.clone());
    let progress = ReadProgress::start(&path.display().to_string(), counter, settings.progress);
    let result = read_trace_file(path, &ReadOptions::default().with_kineto(kineto));
    progress.finish();
    Ok(result?)
}

fn analyze_file(path: &Path, settings: &AnalyzeSettings) -> anyhow::Result<FileResult> {
    let trace = read_with_progress(path, settings)?;
    let options = AnalysisOptions {
        categories: &settings.categories,
        capture: &settings.capture,
    };
    let analysis = analyze(&trace, &options);
    Ok(FileResult {
        report: FileReport::new(
            &path.display().to_string(),
            &trace,
            &analysis,
            settings.top.max(50),
        ),
        totals: analysis.coverage.totals,
        verdict: analysis.coverage.verdict,
        breakdown: analysis.breakdown,
    })
}

/// Reads and analyses every file; returns the document and how many files failed.
pub fn analyze_paths(settings: &AnalyzeSettings) -> (Document, usize) {
    let mut results = Vec::new();
    let mut failed = 0;
    for path in &settings.files {
        match analyze_file(path, settings) {
            Ok(result) => results.push(result),
            Err(error) => {
                output::print_error(&error);
                failed += 1;
            }
        }
    }
    (document(results, settings.top.max(50)), failed)
}

fn document(results: Vec<FileResult>, top: usize) -> Document {
    let verdict = combine_verdicts(results.iter().map(|r| r.verdict));
    let combined = (results.len() > 1).then(|| Combined {
        files: results.len(),
        verdict: verdict.as_str(),
        replay_coverage: CoverageNumbers::new(&combine_totals(results.iter().map(|r| &r.totals))),
        breakdown: combine_breakdowns(results.iter().map(|r| &r.breakdown))
            .map(|b| Breakdown::new(&b, top)),
    });
    let files: Vec<FileReport> = results.into_iter().map(|r| r.report).collect();
    Document {
        schema_version: stepscope_report::schema::SCHEMA_VERSION,
        tool: Tool::current(),
        verdict: verdict.as_str(),
        partial: files.iter().any(|f| f.import.partial),
        files,
        combined,
    }
}

/// Prints the document as the settings ask, writes CSVs.
pub fn emit(document: &Document, settings: &AnalyzeSettings) -> anyhow::Result<()> {
    if settings.json {
        output::print(&stepscope_report::json::render(document))?;
    } else {
        let options = TerminalOptions::default()
            .with_color(settings.color)
            .with_top_kernels(settings.top)
            .with_width(output::table_width());
        output::print(&stepscope_report::terminal::render(document, &options))?;
    }
    if let Some(dir) = &settings.csv {
        stepscope_report::csv::write_tables(document, dir)?;
    }
    Ok(())
}

/// `stepscope analyze`.
pub fn run(args: AnalyzeArgs) -> anyhow::Result<Outcome> {
    let settings = match AnalyzeSettings::resolve(args) {
        Ok(settings) => settings,
        Err(error) => {
            output::print_error(&error);
            return Ok(Outcome::InputError);
        }
    };
    let (document, failed) = analyze_paths(&settings);
    if document.files.is_empty() {
        return Ok(Outcome::InputError);
    }
    emit(&document, &settings)?;
    if failed > 0 {
        Ok(Outcome::InputError)
    } else if settings.fail_on_incomplete && document.verdict == "incomplete" {
        Ok(Outcome::VerdictFailed)
    } else {
        Ok(Outcome::Success)
    }
}
