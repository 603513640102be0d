//! `stepscope analyze`: read traces, run every pass, render.

mod args;
pub(crate) mod captures;
pub(crate) mod dataset;
mod honesty;

pub use args::AnalyzeArgs;

use super::inputs::{add_captures_beside, find_inputs, leave_out_captures, with_companions};
use super::outputs::{Output, OutputKind, refuse_overwrites};
use super::progress::{ReadProgress, RunProgress};
use super::read_args::CategoryTable;
use crate::Outcome;
use crate::app::hinted;
use crate::app::{AnalyzeRequest, Gate, Outputs};
use crate::cli::ColorChoice;
use crate::output;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use stepscope_analysis::DevicePeaks;
use stepscope_analysis::combine::{
    combine_breakdowns, combine_ranges, combine_totals, combine_verdicts,
};
use stepscope_analysis::diff::untrusted_stages;
use stepscope_analysis::{AnalysisOptions, TraceAnalysis, analyze};
use stepscope_analysis::{CapturedGraph, captured_graphs};
use stepscope_analysis::{CoverageTotals, Verdict};
use stepscope_analysis::{RangeBreakdown, RangePattern};
use stepscope_analysis::{StageBreakdown, StageKey};
use stepscope_ingest::{ReadOptions, read_trace_file};
use stepscope_model::Trace;
use stepscope_report::html::Page;
use stepscope_report::schema::efficiency::EfficiencyReport;
use stepscope_report::schema::{
    Breakdown, Combined, CoverageNumbers, Document, FailedFile, FileReport, Ranges, ReplayRecord,
    Tool, overall_verdict,
};
use stepscope_report::terminal::TerminalOptions;

/// Everything `analyze` needs, resolved from the arguments.
#[derive(Clone)]
pub struct AnalyzeSettings {
    /// Trace files, folders expanded.
    pub files: Vec<PathBuf>,
    /// JSON instead of tables.
    pub json: bool,
    /// CSV folder.
    pub csv: Option<PathBuf>,
    /// Chrome-trace (Perfetto) export of the one input file.
    pub perfetto: Option<PathBuf>,
    /// HTML report file.
    pub html: Option<PathBuf>,
    /// Parquet dataset folder and this run's id.
    pub parquet: Option<dataset::ParquetSettings>,
    /// Keep every replay's record (the Parquet `replays` table): with `--parquet`, and for
    /// in-process callers, who get every table.
    pub keep_replays: bool,
    /// Exit 3 on a failing verdict (2 on unreadable inputs).
    pub fail_on_incomplete: bool,
    /// Also fail on unverified sizes.
    pub strict: bool,
    /// Capture traces: `--capture` (for every file) and those found in `capture_traces/`
    /// folders (for the files of their run and rank).
    pub captures: Vec<captures::CaptureTrace>,
    /// What finding the inputs passed over or could not use (said as warnings).
    pub input_notes: Vec<String>,
    /// Category table.
    pub categories: CategoryTable,
    /// Annotation names to break down (`--range`).
    pub range: Option<RangePattern>,
    /// The device for the rooflines (`--device`).
    pub device: Option<&'static DevicePeaks>,
    /// Reader settings.
    pub read: ReadOptions,
    /// Kernels per stage.
    pub top: usize,
    /// Whole kernel names in the terminal (`--wide`).
    pub wide: bool,
    /// Colour.
    pub color: bool,
    /// Progress bar.
    pub progress: bool,
    /// Print each unreadable file's error on stderr as it happens (the command line); an
    /// in-process caller gets them in the result instead.
    pub messages: bool,
}

impl AnalyzeSettings {
    /// Settings for analysing `files` with nothing written: the built-in categories,
    /// default reading, 10 kernels per stage, no colour, no progress bar, no gate; an
    /// unreadable file's error is printed on stderr. Callers change what they need.
    pub fn for_files(files: Vec<PathBuf>) -> Self {
        AnalyzeSettings {
            files,
            json: false,
            csv: None,
            perfetto: None,
            html: None,
            parquet: None,
            keep_replays: false,
            fail_on_incomplete: false,
            strict: false,
            captures: Vec::new(),
            input_notes: Vec::new(),
            categories: CategoryTable::Builtin,
            range: None,
            device: None,
            read: ReadOptions::default(),
            top: 10,
            wide: false,
            color: false,
            progress: false,
            messages: true,
        }
    }

    /// Resolves a request: inputs found, captures loaded, outputs checked; every field is
    /// destructured so a new option cannot be ignored.
    ///
    /// # Errors
    ///
    /// An input that does not exist, a folder without traces, a category table or capture
    /// that cannot be read, an output that would write over an input, a bad run id.
    pub fn resolve(request: AnalyzeRequest, view: View) -> anyhow::Result<Self> {
        let AnalyzeRequest {
            inputs,
            capture,
            capture_folders,
            reading,
            range,
            device,
            gate,
            outputs,
            top,
        } = request;
        let Outputs {
            csv,
            perfetto,
            html,
            parquet,
            run_id,
        } = outputs;
        let categories_path = reading.categories.clone();
        let (read, categories) = reading.resolve()?;
        let capture_path = capture;
        let source = CaptureSource::of(capture_path.is_some(), !capture_folders);
        let (files, captures, input_notes) =
            inputs_and_captures(&inputs, &capture_path, source, &read)?;
        one_file_for_perfetto(perfetto.as_deref(), files.len())?;
        let found_captures: Vec<PathBuf> = captures.iter().map(|c| c.path.clone()).collect();
        let outputs = [
            html.as_deref().map(|p| Output::file("--html", p)),
            perfetto.as_deref().map(|p| Output::file("--perfetto", p)),
            csv.as_deref().map(|p| Output::folder("--csv", p)),
            parquet.as_deref().map(|p| Output::folder("--parquet", p)),
        ];
        let others = [&capture_path, &categories_path];
        let others = others.into_iter().flatten().chain(&found_captures);
        check_outputs(&outputs, &files, others)?;
        let parquet = dataset::resolve(parquet, run_id, files.len())?;
        let keep_replays = parquet.is_some() || csv.is_some();
        Ok(AnalyzeSettings {
            files,
            json: view.json,
            csv,
            perfetto,
            html,
            keep_replays,
            parquet,
            fail_on_incomplete: gate != Gate::Report,
            strict: gate == Gate::Strict,
            captures,
            input_notes,
            categories,
            range,
            device,
            read,
            top,
            wide: view.wide,
            color: view.color,
            progress: view.progress,
            messages: view.messages,
        })
    }
}

/// How the command shows its result: the part of its flags no analysis depends on.
#[derive(Debug, Clone, Copy, Default)]
pub struct View {
    /// JSON instead of tables.
    pub json: bool,
    /// Whole kernel names in the terminal.
    pub wide: bool,
    /// Colour.
    pub color: bool,
    /// Progress bar.
    pub progress: bool,
    /// Errors and notes on stderr as they happen.
    pub messages: bool,
}

impl View {
    /// The view the command line's flags ask for; errors and notes go to stderr.
    pub fn from_flags(json: bool, wide: bool, color: ColorChoice, no_progress: bool) -> Self {
        View {
            json,
            wide,
            color: output::use_color(color),
            progress: !no_progress,
            messages: true,
        }
    }
}

/// Where capture traces come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CaptureSource {
    /// `capture_traces/` folders in searched folders and beside named files.
    Folders,
    /// `--capture`, and `capture_traces/` folders in searched folders (a folder's own
    /// captures still size its ranks; none is looked for beside a named file).
    GivenAndFolders,
    /// `--capture` only (`--no-capture-folder`).
    Given,
}

/// `--perfetto` exports one trace: refused with several files.
fn one_file_for_perfetto(perfetto: Option<&Path>, files: usize) -> anyhow::Result<()> {
    if perfetto.is_some() && files > 1 {
        return Err(hinted(
            format!(
                "the Perfetto export (`--perfetto`; in Python `perfetto=`) writes one trace, and {files} were given"
            ),
            "export once per rank file (`stepscope analyze FILE --perfetto OUT.json`)",
        ));
    }
    Ok(())
}

impl CaptureSource {
    /// From `--capture` (given or not) and `--no-capture-folder`.
    fn of(given: bool, no_capture_folder: bool) -> CaptureSource {
        match (given, no_capture_folder) {
            (_, true) => CaptureSource::Given,
            (true, false) => CaptureSource::GivenAndFolders,
            (false, false) => CaptureSource::Folders,
        }
    }
}

/// The trace files to read, the capture traces (found beside them, and `--capture`) and what
/// finding them passed over or could not use.
fn inputs_and_captures(
    inputs: &[PathBuf],
    capture: &Option<PathBuf>,
    source: CaptureSource,
    read: &ReadOptions,
) -> anyhow::Result<(Vec<PathBuf>, Vec<captures::CaptureTrace>, Vec<String>)> {
    let mut found = find_inputs(inputs)?;
    match source {
        CaptureSource::Folders => add_captures_beside(&mut found),
        CaptureSource::GivenAndFolders => {}
        CaptureSource::Given => {
            leave_out_captures(&mut found);
        }
    }
    let mut notes = found.notes;
    let (mut captures, warnings) = captures::load_found(found.captures, read);
    notes.extend(warnings);
    if let Some(path) = capture {
        captures.push(captures::load_given(path, read)?);
    }
    Ok((found.files, captures, notes))
}

/// Each output file can be created, and no output writes over a file `analyze` reads.
fn check_outputs<'a>(
    outputs: &[Option<Output<'_>>],
    files: &[PathBuf],
    others: impl Iterator<Item = &'a PathBuf>,
) -> anyhow::Result<()> {
    let outputs: Vec<Output<'_>> = outputs.iter().flatten().copied().collect();
    for output in outputs.iter().filter(|o| o.kind == OutputKind::File) {
        output::check_output_file(output.flag, output.path)?;
    }
    refuse_overwrites(&outputs, &with_companions(files, others))
}

/// What is kept of one analysed file once its trace is dropped.
struct FileResult {
    report: FileReport,
    totals: CoverageTotals,
    verdict: Verdict,
    breakdown: StageBreakdown,
    ranges: Option<RangeBreakdown>,
    identity: honesty::TraceIdentity,
    /// Stages whose time lacks, or may lack, unrecorded replays' kernels (`diff` refuses them).
    untrusted: Vec<StageKey>,
    /// The `--perfetto` export could not be written (the file itself was read and analysed).
    export_failure: Option<anyhow::Error>,
    /// The graphs the file captured, when it replays none (it may be a capture trace).
    captured: Vec<CapturedGraph>,
}

fn read_with_progress(path: &Path, settings: &AnalyzeSettings) -> anyhow::Result<Trace> {
    let counter = Arc::new(AtomicU64::new(0));
    let options = settings.read.clone().with_progress(counter.clone());
    let progress = ReadProgress::start(&path.display().to_string(), counter, settings.progress);
    let result = read_trace_file(path, &options);
    progress.finish();
    Ok(result?)
}

fn analyze_file(path: &Path, settings: &AnalyzeSettings) -> anyhow::Result<FileResult> {
    let trace = read_with_progress(path, settings)?;
    let (capture_graphs, capture_paths) = captures::graphs_for(&settings.captures, path);
    let options = AnalysisOptions {
        categories: &settings.categories.table(),
        capture: &capture_graphs,
        ranges: settings.range.as_ref(),
        device: settings.device,
    };
    let analysis = analyze(&trace, &options);
    let export_failure = settings
        .perfetto
        .as_ref()
        .and_then(|out| export_perfetto(out, &trace, &analysis, settings.messages).err());
    let mut report = FileReport::new(
        &path.display().to_string(),
        &trace,
        &analysis,
        settings.top.max(50),
    );
    report.capture_traces = capture_paths;
    let captured = if analysis.coverage.totals.replays == 0 {
        captured_graphs(&trace)
    } else {
        Vec::new()
    };
    if settings.keep_replays {
        report.replays = Some(ReplayRecord::all(&trace, &analysis));
    }
    Ok(FileResult {
        captured,
        export_failure,
        identity: honesty::TraceIdentity::new(path, &trace, &report),
        report,
        totals: analysis.coverage.totals,
        verdict: analysis.coverage.verdict,
        untrusted: untrusted_stages(&analysis),
        breakdown: analysis.breakdown,
        ranges: analysis.ranges,
    })
}

/// Writes the Chrome-trace export (whole or not at all); with `say`, says where on stderr.
fn export_perfetto(
    out: &Path,
    trace: &Trace,
    analysis: &TraceAnalysis,
    say: bool,
) -> anyhow::Result<()> {
    let mut summary = None;
    stepscope_report::atomic::write_with(out, |file| {
        summary = Some(stepscope_report::perfetto::write_perfetto(
            trace, analysis, file,
        )?);
        Ok(())
    })?;
    let summary = summary.unwrap_or_default();
    if !say {
        return Ok(());
    }
    output::note(&format!(
        "perfetto: {} events, {} graph replays ({} with no kernel) written to {} (open it in ui.perfetto.dev or chrome://tracing)",
        summary.events,
        summary.replays,
        summary.empty_replays,
        out.display()
    ));
    Ok(())
}

/// Every input file's results before they are rendered: what `analyze` prints, and what
/// `diff` compares.
pub struct Analyzed {
    results: Vec<FileResult>,
    failed: Vec<FailedFile>,
    warnings: Vec<String>,
}

/// The first output that could not be written while files were analysed (`--perfetto`).
fn take_export_failure(analyzed: &mut Analyzed) -> Option<anyhow::Error> {
    analyzed
        .results
        .iter_mut()
        .find_map(|r| r.export_failure.take())
}

impl Analyzed {
    /// The files' breakdowns combined (`None` when no file was read).
    pub fn breakdown(&self) -> Option<StageBreakdown> {
        combine_breakdowns(self.results.iter().map(|r| &r.breakdown))
    }

    /// The worst verdict over the files read.
    pub fn verdict(&self) -> Verdict {
        combine_verdicts(self.results.iter().map(|r| r.verdict))
    }

    /// Replay counts summed over the files read.
    pub fn totals(&self) -> CoverageTotals {
        combine_totals(self.results.iter().map(|r| &r.totals))
    }

    /// Stages whose time lacks, or may lack, some file's unrecorded replays' kernels.
    pub fn untrusted_stages(&self) -> Vec<StageKey> {
        let mut stages: Vec<StageKey> = self
            .results
            .iter()
            .flat_map(|r| r.untrusted.iter().copied())
            .collect();
        stages.sort();
        stages.dedup();
        stages
    }

    /// The files' efficiency sections.
    pub fn efficiency(&self) -> impl Iterator<Item = &EfficiencyReport> {
        self.results.iter().map(|r| &r.report.efficiency)
    }

    /// The paths of the files read, as given.
    pub fn paths(&self) -> Vec<String> {
        self.results.iter().map(|r| r.report.path.clone()).collect()
    }

    /// Whether any file was read only up to a break.
    pub fn partial(&self) -> bool {
        self.results.iter().any(|r| r.report.import.partial)
    }

    /// What identifies each file's trace (its content, not its path).
    pub fn identities(&self) -> Vec<&honesty::TraceIdentity> {
        self.results.iter().map(|r| &r.identity).collect()
    }

    /// Files that could not be read.
    pub fn failed(&self) -> &[FailedFile] {
        &self.failed
    }

    /// What the inputs repeat or disagree on.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The document `analyze` renders, with `top` kernels per stage.
    pub fn into_document(self, top: usize) -> Document {
        document(self.results, self.failed, self.warnings, top)
    }
}

/// Reads and analyses every file (each once); failed files are listed in the document.
pub fn analyze_paths(settings: &AnalyzeSettings) -> Document {
    analyze_files(settings).into_document(settings.top.max(50))
}

/// Reads and analyses every file (each once), keeping what each rendering needs.
pub fn analyze_files(settings: &AnalyzeSettings) -> Analyzed {
    let (files, mut warnings) = honesty::distinct_paths(&settings.files);
    warnings.extend(settings.input_notes.iter().cloned());
    let mut results: Vec<FileResult> = Vec::new();
    let mut failed = Vec::new();
    for (path, outcome) in files.iter().zip(analyze_each(&files, settings)) {
        match outcome {
            Ok(result) => {
                if let Some(warning) = honesty::same_trace(&results, &result, |r| &r.identity) {
                    warnings.push(warning);
                    continue;
                }
                results.push(result);
            }
            Err(error) => {
                if settings.messages {
                    output::print_error(&error);
                }
                let (message, hint) = crate::app::message_and_hint(&error);
                failed.push(FailedFile {
                    path: path.display().to_string(),
                    error: format!("{error:#}"),
                    message,
                    hint,
                });
            }
        }
    }
    captures::adopt_capture_files(&mut results, settings, &mut warnings);
    let identities: Vec<&honesty::TraceIdentity> = results.iter().map(|r| &r.identity).collect();
    warnings.extend(honesty::disagreements(&identities));
    warnings.extend(capture_warnings(settings, &results));
    Analyzed {
        results,
        failed,
        warnings,
    }
}

/// Every file read and analysed, in input order. Several files are read at once, one per
/// core, each with its share of the parse threads (`--threads N` per file when given), so a
/// folder of rank files uses every core and holds at most one trace per core in memory.
fn analyze_each(files: &[PathBuf], settings: &AnalyzeSettings) -> Vec<anyhow::Result<FileResult>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores.min(files.len());
    if workers <= 1 {
        return files
            .iter()
            .map(|path| analyze_file(path, settings))
            .collect();
    }
    let mut shared = AnalyzeSettings {
        progress: false,
        ..settings.clone()
    };
    if settings.read.threads == 0 {
        let threads = (cores / workers).max(1);
        shared.read = shared.read.clone().with_threads(threads);
    }
    let progress = RunProgress::start(files.len(), settings.progress);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<anyhow::Result<FileResult>>>> =
        files.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(index) else { break };
                    let outcome = analyze_file(path, &shared);
                    progress.file_done(fs_err::metadata(path).map_or(0, |m| m.len()));
                    if let Ok(mut slot) = slots[index].lock() {
                        *slot = Some(outcome);
                    }
                }
            });
        }
    });
    progress.finish();
    slots
        .into_iter()
        .zip(files)
        .map(|(slot, path)| {
            slot.into_inner().ok().flatten().unwrap_or_else(|| {
                Err(anyhow::anyhow!(
                    "`{}` was not analysed (a reader thread stopped)",
                    path.display()
                ))
            })
        })
        .collect()
}

/// Each capture trace that sized no graph of the files it was given to.
fn capture_warnings(settings: &AnalyzeSettings, results: &[FileResult]) -> Vec<String> {
    let files: Vec<(&Path, u32, u64)> = results
        .iter()
        .map(|r| {
            let coverage = &r.report.replay_coverage;
            let replays = u64::from(coverage.numbers.totals.replays);
            (Path::new(&r.report.path), coverage.capture_matches, replays)
        })
        .collect();
    captures::unmatched(&settings.captures, &files)
}

fn document(
    results: Vec<FileResult>,
    failed: Vec<FailedFile>,
    warnings: Vec<String>,
    top: usize,
) -> Document {
    let verdicts: Vec<Verdict> = results.iter().map(|r| r.verdict).collect();
    let partial_files = results.iter().filter(|r| r.report.import.partial).count();
    let verdict = overall_verdict(&verdicts, failed.len(), partial_files);
    let combined = (results.len() + failed.len() > 1 && !results.is_empty()).then(|| Combined {
        files: results.len() + failed.len(),
        failed_files: failed.len(),
        files_without_events: verdicts.iter().filter(|v| **v == Verdict::NoEvents).count(),
        partial_files,
        verdict,
        replay_coverage: CoverageNumbers::new(&combine_totals(results.iter().map(|r| &r.totals))),
        breakdown: combine_breakdowns(results.iter().map(|r| &r.breakdown))
            .map(|b| Breakdown::new(&b, top)),
        ranges: combine_ranges(results.iter().filter_map(|r| r.ranges.as_ref()))
            .map(|r| Ranges::new(&r, top)),
    });
    let files: Vec<FileReport> = results.into_iter().map(|r| r.report).collect();
    Document {
        schema_version: stepscope_report::schema::SCHEMA_VERSION,
        tool: Tool::current(),
        verdict,
        partial: files.iter().any(|f| f.import.partial),
        failed_files: failed,
        warnings,
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
            .with_wide(settings.wide)
            .with_width(output::table_width());
        output::print(&stepscope_report::terminal::render(document, &options))?;
    }
    write_files(document, settings)
}

/// The file outputs: `--html`, `--csv`, `--parquet`.
pub fn write_files(document: &Document, settings: &AnalyzeSettings) -> anyhow::Result<()> {
    if let Some(path) = &settings.html {
        write_html(document, path, settings.messages)?;
    }
    if let Some(dir) = &settings.csv {
        let run = match &settings.parquet {
            Some(parquet) => parquet.run.clone(),
            None => dataset::new_run(settings.files.len(), None),
        };
        let written = stepscope_report::csv::write_tables(document, &run, dir)?;
        let names: Vec<String> = written
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        if settings.messages {
            output::note(&format!(
                "wrote {} CSV files to `{}`: {}",
                written.len(),
                dir.display(),
                names.join(", ")
            ));
        }
    }
    if let Some(parquet) = &settings.parquet {
        dataset::write(document, parquet, settings.messages)?;
    }
    Ok(())
}

fn write_html(document: &Document, path: &Path, say: bool) -> anyhow::Result<()> {
    let names: Vec<&str> = document.files.iter().map(|f| f.path.as_str()).collect();
    let title = match names.as_slice() {
        [one] => format!(
            "stepscope: {}",
            Path::new(one)
                .file_name()
                .map_or((*one).into(), |n| n.to_string_lossy())
        ),
        more => format!("stepscope: {} files", more.len()),
    };
    let page = Page::single(title, "analysis".to_owned(), document);
    write_page(&stepscope_report::html::render(&page), path, say)
}

/// Writes a rendered HTML page to `path` (`analyze --html`, `diff --html`); with `say`,
/// says where on stderr.
pub(super) fn write_page(html: &str, path: &Path, say: bool) -> anyhow::Result<()> {
    stepscope_report::atomic::write_bytes(path, html.as_bytes())?;
    if !say {
        return Ok(());
    }
    output::note(&format!(
        "html: wrote {} ({} KB); open it in a browser (it needs no network)",
        path.display(),
        html.len().div_ceil(1024)
    ));
    Ok(())
}

/// The exit code for a rendered document: 2 for unreadable input, 3 for a verdict that
/// fails the gate (when asked), else 0.
pub fn outcome(document: &Document, settings: &AnalyzeSettings) -> Outcome {
    if !document.failed_files.is_empty() {
        return Outcome::InputError;
    }
    if !settings.fail_on_incomplete {
        return Outcome::Success;
    }
    let verdicts = document.files.iter().map(|f| f.replay_coverage.verdict);
    if verdicts.clone().any(|v| v == Verdict::NoEvents) {
        return Outcome::InputError;
    }
    // No-events files returned above; the rest fail as their verdict says.
    // Under --strict, data the verdict could not check fails too: a trace must not pass
    // by having its evidence refused.
    let unchecked = settings.strict
        && document
            .files
            .iter()
            .any(|f| !f.damage.unchecked.is_empty());
    if document.partial || unchecked || verdicts.clone().any(|v| v.fails_gate(settings.strict)) {
        Outcome::VerdictFailed
    } else {
        Outcome::Success
    }
}

/// `stepscope analyze`.
pub fn run(args: AnalyzeArgs) -> anyhow::Result<Outcome> {
    let (request, view) = args.request();
    let settings = match AnalyzeSettings::resolve(request, view) {
        Ok(settings) => settings,
        Err(error) => {
            output::print_error(&error);
            return Ok(Outcome::InputError);
        }
    };
    let Documented::Read(document, export_failure) = documented(&settings)? else {
        return Ok(Outcome::InputError);
    };
    emit(&document, &settings)?;
    match export_failure {
        Some(error) => Err(error),
        None => Ok(outcome(&document, &settings)),
    }
}

/// What [`documented`] made of the inputs.
pub enum Documented {
    /// The document, and the first export that failed (`--perfetto`).
    Read(Box<Document>, Option<anyhow::Error>),
    /// No file could be read: each, and why (a dataset still records the run).
    Unread(Vec<FailedFile>),
}

/// Every file read and analysed into the document.
///
/// # Errors
///
/// No file could be read and the dataset that records so could not be written.
pub fn documented(settings: &AnalyzeSettings) -> anyhow::Result<Documented> {
    let mut analyzed = analyze_files(settings);
    let export_failure = take_export_failure(&mut analyzed);
    let document = analyzed.into_document(settings.top.max(50));
    if !document.files.is_empty() {
        return Ok(Documented::Read(Box::new(document), export_failure));
    }
    if let Some(parquet) = &settings.parquet {
        dataset::write(&document, parquet, settings.messages)?;
    }
    Ok(Documented::Unread(document.failed_files))
}
