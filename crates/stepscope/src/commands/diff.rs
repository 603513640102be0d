//! `stepscope diff BASE NEW`: both sides read and analysed exactly as `analyze` does, then
//! compared per stage, kernel category and kernel; a stage holding a side's unrecorded
//! replays is refused unless `--force`.

use super::analyze::captures;
use super::analyze::{AnalyzeSettings, Analyzed, View, analyze_files, write_page};
use super::inputs::{
    FoundCapture, add_captures_beside, find_inputs, leave_out_captures, with_companions,
};
use super::outputs::{Output, refuse_overwrites};
use super::read_args::{CategoryTable, ReadArgs};
use crate::Outcome;
use crate::app::DiffRequest;
use crate::app::hinted;
use crate::cli::ColorChoice;
use crate::output;
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use stepscope_analysis::Stage;
use stepscope_analysis::diff::{Side, SideInput, diff_breakdowns};
use stepscope_analysis::{StageBreakdown, StageKey};
use stepscope_ingest::ReadOptions;
use stepscope_model::Hinted;
use stepscope_report::html::{Comparison, Page, Section};
use stepscope_report::schema::diff::{DiffDocument, DiffSide, SideFacts, SideSource, UnusableSide};
use stepscope_report::schema::diff_rates::OpRates;
use stepscope_report::schema::{Document, FailedFile, OverallVerdict};
use stepscope_report::terminal::TerminalOptions;

/// `diff`'s line in its parent's command list.
const ABOUT: &str = "Compare two runs before and after a change, stage by stage, beyond noise";

/// `diff --help`: each paragraph is one line, wrapped to the terminal's width.
const LONG_ABOUT: &str = "\
Compare two runs, before and after a change: replay coverage of each, then GPU time per \
stage, kernel category and kernel (largest changes first), and the kernels that appeared \
or vanished.

Each side is a trace file, a folder of rank files (combined, as `analyze DIR`), or a \
`stepscope profile` run directory (the rank traces of all its windows, combined; the \
report names the windows). Both are analysed with exactly the code of `analyze`.

A stage whose time lacks a side's unrecorded graph replays (verdict incomplete, damaged, \
mistimed, unavailable, or an unreadable file) is REFUSED: not compared, with the side, its \
verdict and counts, because its lost kernels would read as a speedup (lost in BASE: a \
slowdown). That is decode, and the stage of every replay that lost kernels (e.g. vLLM's \
mixed steps). Other stages are always compared; `unverified` sides are compared, with a \
note. --force compares refused stages anyway, marked forced.

Each compared stage also gets its GPU time per step: the median step on each side and the \
typical ratio of a new step to a base step (Hodges-Lehmann) with the 95 % interval of the \
Mann-Whitney test, so a change can be told from step-to-step noise.

Exit codes: 0 compared; 3 a stage or a whole side was refused (so a pipeline notices; \
--force makes it 0; a side is refused when one of its files could not be read, was read \
only up to a break, or holds no GPU event), or, with --fail-on-regression PCT, a stage's \
GPU time per step grew by more than PCT % across its whole interval; 2 bad input (a \
missing path, no file of a side readable, a profile run with no trace files, an output \
that could not be written); 1 internal error.

EXAMPLES:
  stepscope diff before.json.gz after.json.gz
  # folders of rank files
  stepscope diff runs/before/ runs/after/
  # profile run directories
  stepscope diff results/20260101-run1 results/20260102-run2
  stepscope diff a.json.gz b.json.gz --json > diff.json
  stepscope diff a.json.gz b.json.gz --top 25
  # compare refused stages anyway
  stepscope diff a.json.gz b.json.gz --force
  # exit 3 when a stage is slower per step by more than 5 % beyond noise
  stepscope diff a.json.gz b.json.gz --fail-on-regression 5";

/// Arguments of `diff`.
#[derive(Debug, Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT)]
pub struct DiffArgs {
    /// The run before the change: a trace file, a folder of rank files (as `analyze DIR`),
    /// or a `stepscope profile` run directory (the rank traces of all its windows, combined).
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The run after the change, as BASE.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Print the comparison as JSON (schema in docs/json-schema.md) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Compare stages anyway whose time lacks a side's unrecorded replays (marked forced).
    #[arg(long)]
    pub force: bool,
    /// Exit 3 when a stage's GPU time per step grew by more than PCT percent beyond its
    /// step-to-step noise: the typical ratio of a new step to a base step, with the 95 %
    /// Mann-Whitney interval over both sides' steps, is above PCT across the whole interval.
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// Also write the comparison as one self-contained HTML page: both sides' full reports
    /// as tabs, and the comparison.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Read no `capture_traces/` folder on either side (beside a trace or in a folder), as
    /// `analyze --no-capture-folder`.
    #[arg(long)]
    pub no_capture_folder: bool,
    /// How to read both sides' files.
    #[command(flatten)]
    pub reading: ReadArgs,
    /// Kernels listed per stage in the terminal (the JSON keeps max(N, 50)).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Whole kernel names in the terminal's tables (by default they are cut to 64 characters,
    /// keeping the parts that tell them apart; the `id` column is the same either way).
    #[arg(long)]
    pub wide: bool,
    /// Colour the terminal report.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// One side's inputs.
struct SideSettings {
    source: SideSource,
    files: Vec<PathBuf>,
    /// Capture traces found in the side's folder (`capture_traces/`), never read as ranks.
    captures: Vec<FoundCapture>,
    /// What the folder search passed over.
    notes: Vec<String>,
}

/// Everything `diff` needs, resolved from the arguments.
pub struct DiffSettings {
    base: SideSettings,
    new: SideSettings,
    read: ReadOptions,
    categories: CategoryTable,
    json: bool,
    force: bool,
    fail_on_regression: Option<f64>,
    html: Option<PathBuf>,
    top: usize,
    wide: bool,
    color: bool,
    progress: bool,
    messages: bool,
}

impl DiffArgs {
    /// The request and the view the flags say; every field is destructured so a new flag
    /// cannot be ignored.
    pub fn request(self) -> (DiffRequest, View) {
        let DiffArgs {
            base,
            new,
            json,
            force,
            fail_on_regression,
            html,
            no_capture_folder,
            reading,
            top,
            color,
            wide,
            no_progress,
        } = self;
        let request = DiffRequest {
            base,
            new,
            capture_folders: !no_capture_folder,
            reading: reading.reading(),
            force,
            fail_on_regression,
            html,
            top,
        };
        let view = View::from_flags(json, wide, color, no_progress);
        (request, view)
    }
}

impl DiffSettings {
    /// Resolves a request; every field is destructured so a new option cannot be ignored.
    ///
    /// # Errors
    ///
    /// A side that does not exist or holds no trace, a category table that cannot be read,
    /// an HTML page that would write over an input.
    pub fn resolve(request: DiffRequest, view: View) -> anyhow::Result<Self> {
        let DiffRequest {
            base,
            new,
            capture_folders,
            reading,
            force,
            fail_on_regression,
            html,
            top,
        } = request;
        let no_capture_folder = !capture_folders;
        let categories_path = reading.categories.clone();
        let (read, categories) = reading.resolve()?;
        if let Some(path) = &html {
            output::check_output_file("--html", path)?;
        }
        let base = side_settings(&base, no_capture_folder)
            .with_context(|| format!("Failed to read the BASE side `{}`", base.display()))?;
        let new = side_settings(&new, no_capture_folder)
            .with_context(|| format!("Failed to read the NEW side `{}`", new.display()))?;
        if let Some(path) = &html {
            let captures = [&base.captures, &new.captures].into_iter().flatten();
            let files: Vec<PathBuf> = [&base.files, &new.files]
                .into_iter()
                .flatten()
                .cloned()
                .chain(captures.map(|c| c.path.clone()))
                .collect();
            let inputs = with_companions(&files, categories_path.iter());
            refuse_overwrites(&[Output::file("--html", path)], &inputs)?;
        }
        Ok(DiffSettings {
            base,
            new,
            read,
            categories,
            json: view.json,
            force,
            fail_on_regression,
            html,
            top,
            wide: view.wide,
            color: view.color,
            progress: view.progress,
            messages: view.messages,
        })
    }

    /// The settings `analyze` would resolve for this side's files (no output of its own).
    fn analyze_settings(&self, side: &SideSettings) -> AnalyzeSettings {
        let (captures, mut input_notes) = captures::load_found(side.captures.clone(), &self.read);
        input_notes.splice(0..0, side.notes.iter().cloned());
        AnalyzeSettings {
            captures,
            input_notes,
            categories: self.categories.clone(),
            read: self.read.clone(),
            top: self.top,
            color: self.color,
            progress: self.progress,
            messages: self.messages,
            ..AnalyzeSettings::for_files(side.files.clone())
        }
    }
}

/// A trace file, a folder of rank files, or a profile run directory (it has `results.json`);
/// `no_capture_folder` leaves out the captures of `capture_traces/` folders.
fn side_settings(path: &Path, no_capture_folder: bool) -> anyhow::Result<SideSettings> {
    let shown = path.display().to_string();
    if path.is_dir() && path.join("results.json").is_file() {
        let (windows, files) = run_traces(path)?;
        return Ok(SideSettings {
            source: SideSource {
                path: shown,
                kind: "profile_run",
                windows,
            },
            files,
            captures: Vec::new(),
            notes: Vec::new(),
        });
    }
    let kind = if path.is_dir() { "folder" } else { "file" };
    let mut found = find_inputs(&[path.to_owned()])?;
    if no_capture_folder {
        leave_out_captures(&mut found);
    } else {
        add_captures_beside(&mut found);
    }
    Ok(SideSettings {
        source: SideSource {
            path: shown,
            kind,
            windows: Vec::new(),
        },
        files: found.files,
        captures: found.captures,
        notes: found.notes,
    })
}

/// The rank traces of every window of a `stepscope profile` run (docs/profile-results.md:
/// `windows[].traces[]` with role `rank`, paths relative to the run), and the windows
/// that had any.
fn run_traces(run: &Path) -> anyhow::Result<(Vec<String>, Vec<PathBuf>)> {
    let results = run.join("results.json");
    let text = fs_err::read_to_string(&results)?;
    let document: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("Failed to parse `{}`", results.display()))?;
    let mut windows = Vec::new();
    let mut files = Vec::new();
    for window in document["windows"].as_array().into_iter().flatten() {
        let ranks: Vec<PathBuf> = window["traces"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|trace| trace["role"] == "rank")
            .filter_map(|trace| trace["path"].as_str())
            .map(|path| run.join(path))
            .collect();
        if ranks.is_empty() {
            continue;
        }
        let name = window["dir"].as_str().map_or_else(
            || format!("window {}", window["index"]),
            |dir| dir.trim_start_matches("windows/").to_owned(),
        );
        windows.push(name);
        files.extend(ranks);
    }
    if files.is_empty() {
        return Err(hinted(
            format!(
                "`{}` is a stepscope profile run whose results.json lists no window trace files (`windows[].traces[]` with role `rank`)",
                run.display()
            ),
            format!(
                "its windows failed or were never recorded; `{}` says why",
                results.display()
            ),
        ));
    }
    Ok((windows, files))
}

/// One side analysed.
pub struct Analysed {
    source: SideSource,
    analyzed: Analyzed,
    breakdown: StageBreakdown,
    untrusted: Vec<StageKey>,
    verdict: OverallVerdict,
}

impl Analysed {
    /// A side from its analysis; `None` when no file of it could be read.
    pub fn new(source: SideSource, analyzed: Analyzed) -> Option<Self> {
        let breakdown = analyzed.breakdown()?;
        let mut untrusted = analyzed.untrusted_stages();
        let verdict = if analyzed.failed().is_empty() {
            OverallVerdict::Worst(analyzed.verdict())
        } else {
            // An unreadable rank's work is missing from the side, replays included.
            untrusted.push(StageKey::Stage(Stage::Decode));
            untrusted.sort();
            untrusted.dedup();
            OverallVerdict::Unreadable
        };
        Some(Analysed {
            source,
            analyzed,
            breakdown,
            untrusted,
            verdict,
        })
    }
}

/// A side analysed as `analyze` would; when none of its files could be read, what to say:
/// the side and each file's error, with their fixes apart.
fn analyse_side(
    settings: &DiffSettings,
    side: &SideSettings,
    label: &str,
) -> Result<Analysed, Hinted> {
    let analyzed = analyze_files(&settings.analyze_settings(side));
    let failed = analyzed.failed().to_vec();
    Analysed::new(side.source.clone(), analyzed).ok_or_else(|| {
        let mut message = format!(
            "{label} `{}`: no trace file could be read",
            side.source.path
        );
        for file in &failed {
            message.push_str(&format!("\n  {}: {}", file.path, file.message));
        }
        Hinted::new(message, unread_hint(&failed))
    })
}

/// The fixes of files that could not be read, each once, then how to find out more.
fn unread_hint(failed: &[FailedFile]) -> String {
    let mut hints = FailedFile::distinct_hints(failed);
    hints.push("`stepscope analyze SIDE` shows what is wrong with a side");
    hints.join("; ")
}

fn wire_side(side: &Analysed) -> DiffSide {
    let totals = side.analyzed.totals();
    let facts = SideFacts {
        verdict: side.verdict,
        totals: &totals,
        method: side.breakdown.method,
        partial: side.analyzed.partial(),
    };
    let files = side.analyzed.paths();
    let extras = (
        side.analyzed.failed().to_vec(),
        side.analyzed.warnings().to_vec(),
    );
    DiffSide::new(side.source.clone(), files, facts, extras)
}

/// Two sides compared, with each side's own report.
pub struct Compared {
    /// The comparison.
    pub diff: DiffDocument,
    /// BASE's report, as `analyze` gives it.
    pub base: Document,
    /// NEW's report.
    pub new: Document,
}

/// How to get a comparison of a side that cannot be compared.
const UNUSABLE_FIX: &str = "compare sides whose every file reads whole and holds GPU work (`stepscope analyze SIDE` shows what is wrong with it); or pass --force to compare anyway";

/// Why a side cannot be compared at all: a file that could not be read (its rank's work is
/// missing), a read cut short (`--allow-truncated`), or no GPU event (every stage would
/// read −100 %).
fn unusable(side: &Analysed, label: Side) -> Option<UnusableSide> {
    let failed = side.analyzed.failed();
    let files = failed.len() + side.analyzed.paths().len();
    let reason = if !failed.is_empty() {
        let names: Vec<String> = failed.iter().map(|f| format!("`{}`", f.path)).collect();
        format!(
            "{} of its {files} input files could not be read ({}): its time lacks their work",
            failed.len(),
            names.join(", ")
        )
    } else if side.analyzed.partial() {
        "it was read only up to a break (--allow-truncated): its time covers only the events before it".to_owned()
    } else if side.breakdown.total_gpu_time.as_nanos() == 0 {
        format!(
            "it holds no GPU event (verdict {}): every stage would read as −100 % or as new",
            side.verdict
        )
    } else {
        return None;
    };
    Some(UnusableSide {
        side: label.as_str(),
        reason,
        fix: UNUSABLE_FIX.to_owned(),
    })
}

/// A note when both sides hold the same traces (the same files, or copies of them): every
/// delta is zero by construction.
fn same_traces_note(base: &Analysed, new: &Analysed) -> Option<String> {
    let (a, b) = (base.analyzed.identities(), new.analyzed.identities());
    let same = !a.is_empty()
        && a.len() == b.len()
        && a.iter().all(|x| b.iter().any(|y| x.same_content(y)));
    same.then(|| {
        "BASE and NEW hold the same trace files (the same events and time ranges): every delta is zero by construction; was another run meant?".to_owned()
    })
}

/// Compares two analysed sides as `stepscope diff` does (`top` kernels kept per stage, at
/// least 50).
pub fn compare(base: Analysed, new: Analysed, force: bool, top: usize) -> Compared {
    let unusable_sides: Vec<UnusableSide> = [(&base, Side::Base), (&new, Side::New)]
        .into_iter()
        .filter_map(|(side, label)| unusable(side, label))
        .collect();
    let same_note = same_traces_note(&base, &new);
    let diff = diff_breakdowns(
        SideInput {
            breakdown: &base.breakdown,
            untrusted: &base.untrusted,
        },
        SideInput {
            breakdown: &new.breakdown,
            untrusted: &new.untrusted,
        },
        force,
    );
    let mut document = DiffDocument::new(wire_side(&base), wire_side(&new), &diff, top.max(50))
        .with_unusable_sides(unusable_sides, force);
    document.notes.extend(same_note);
    document.op_rates = OpRates::new(
        base.analyzed.efficiency(),
        new.analyzed.efficiency(),
        top.max(50),
    );
    Compared {
        diff: document,
        base: base.analyzed.into_document(top.max(50)),
        new: new.analyzed.into_document(top.max(50)),
    }
}

/// The comparison as one HTML page: both sides' reports as tabs, then the comparison.
pub fn html_page<'a>(
    compared: &'a Compared,
    title: String,
    intro: String,
) -> Page<'a, &'a DiffDocument> {
    let text = stepscope_report::terminal::render_diff(&compared.diff, &TerminalOptions::default());
    Page {
        title,
        intro,
        sections: vec![
            Section {
                label: format!("BASE · {}", compared.diff.base.path),
                document: &compared.base,
            },
            Section {
                label: format!("NEW · {}", compared.diff.new.path),
                document: &compared.new,
            },
        ],
        comparison: Some(Comparison {
            document: &compared.diff,
            text,
        }),
    }
}

/// `stepscope diff`.
pub fn run(args: DiffArgs) -> anyhow::Result<Outcome> {
    let (request, view) = args.request();
    let settings = match DiffSettings::resolve(request, view) {
        Ok(settings) => settings,
        Err(error) => {
            output::print_error(&error);
            return Ok(Outcome::InputError);
        }
    };
    let compared = match compared(&settings)? {
        Ok(compared) => compared,
        Err(unreadable) => {
            output::print_error(&anyhow::Error::new(unreadable));
            return Ok(Outcome::InputError);
        }
    };
    emit(&compared.diff, &settings)?;
    Ok(outcome(&compared.diff))
}

/// Both sides analysed and compared, the gate applied and `--html` written; `Err` with
/// what to say when a side could not be read.
///
/// # Errors
///
/// An HTML page that could not be written.
pub fn compared(settings: &DiffSettings) -> anyhow::Result<Result<Compared, Hinted>> {
    let base = analyse_side(settings, &settings.base, "BASE");
    let new = analyse_side(settings, &settings.new, "NEW");
    let (base, new) = match (base, new) {
        (Ok(base), Ok(new)) => (base, new),
        (Err(base), Err(new)) => {
            let both = Hinted::new(
                format!("{}\n{}", base.message, new.message),
                if base.hint == new.hint {
                    base.hint
                } else {
                    format!("{}; {}", base.hint, new.hint)
                },
            );
            return Ok(Err(both));
        }
        (Err(one), _) | (_, Err(one)) => return Ok(Err(one)),
    };
    let mut compared = compare(base, new, settings.force, settings.top);
    if let Some(threshold) = settings.fail_on_regression {
        compared.diff = compared.diff.with_regression_gate(threshold);
    }
    if let Some(path) = &settings.html {
        let title = format!(
            "stepscope diff: {} → {}",
            compared.diff.base.path, compared.diff.new.path
        );
        let page = html_page(&compared, title, String::new());
        write_page(
            &stepscope_report::html::render(&page),
            path,
            settings.messages,
        )?;
    }
    Ok(Ok(compared))
}

fn emit(document: &DiffDocument, settings: &DiffSettings) -> anyhow::Result<()> {
    if settings.json {
        output::print(&stepscope_report::json::render_diff(document))?;
    } else {
        let options = TerminalOptions::default()
            .with_color(settings.color)
            .with_top_kernels(settings.top)
            .with_wide(settings.wide)
            .with_width(output::table_width());
        output::print(&stepscope_report::terminal::render_diff(document, &options))?;
    }
    Ok(())
}

/// 3 when a side or a stage was refused (a side with an unreadable file, a partial read or
/// no GPU event; a stage lacking unrecorded replays), or a stage is slower beyond noise and
/// `--fail-on-regression`; else 0.
pub fn outcome(document: &DiffDocument) -> Outcome {
    let side_refused = !document.unusable_sides.is_empty() && !document.forced;
    let regressed = document
        .regression_gate
        .as_ref()
        .is_some_and(|gate| !gate.slower.is_empty());
    if side_refused || !document.refused.is_empty() || regressed {
        Outcome::VerdictFailed
    } else {
        Outcome::Success
    }
}

/// A percentage: a finite number, at least 0 (`--fail-on-regression`, `grade --min-effect`).
pub(super) fn parse_percent(text: &str) -> Result<f64, String> {
    match text.trim_end_matches('%').parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 => Ok(value),
        _ => Err(format!(
            "`{text}` is not a percentage (a number ≥ 0, e.g. 5 or 2.5)"
        )),
    }
}
