//! `stepscope demo`: the built-in example, end to end.
//!
//! Writes a realistic SGLang decode trace twice — complete, and with the ROCm symptom
//! (only the replay before each host sync keeps its kernels) — analyses both with the same
//! code as `analyze`, and shows what the symptom does to the numbers.

use super::analyze::{AnalyzeSettings, View, analyze_files};
use super::diff::{Analysed, Compared, compare};
use crate::Outcome;
use crate::app::AnalyzeRequest;
use crate::cli::ColorChoice;
use crate::output;
use anyhow::Context;
use clap::Args;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use stepscope_analysis::Stage;
use stepscope_analysis::StageKey;
use stepscope_demo::demo::{DemoSpec, Symptom, facts, generate};
use stepscope_report::html::{Comparison, Page, Section};
use stepscope_report::schema::diff::SideSource;
use stepscope_report::schema::{Document, Row};
use stepscope_report::terminal::{TerminalOptions, percent, render, render_diff};

/// `stepscope demo`.
pub fn run(args: DemoArgs) -> anyhow::Result<Outcome> {
    let DemoArgs {
        steps,
        keep,
        html,
        color,
    } = args;
    if let Some(Err(error)) = html
        .as_deref()
        .map(|path| output::check_output_file("--html", path))
    {
        output::print_error(&error);
        return Ok(Outcome::InputError);
    }
    let spec = DemoSpec {
        decode_steps: steps.max(2),
        ..DemoSpec::default()
    };
    let dir = match &keep {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("stepscope-demo-{}", std::process::id())),
    };
    let (complete, broken) = write_traces(&spec, &dir)?;
    let color = output::use_color(color);
    let compared = compare(
        analyse(complete.clone(), color)?,
        analyse(broken.clone(), color)?,
        false,
        5,
    );
    let mut out = narrate(&spec, &compared.base, &compared.new, color);
    if let Some(path) = &html {
        let bytes = write_page(&spec, &compared, path)?;
        let _ = writeln!(
            out,
            "\nreport: {} ({} KB) — open it in a browser (it needs no network)",
            path.display(),
            bytes.div_ceil(1024)
        );
    }
    match &keep {
        Some(_) => {
            let _ = writeln!(
                out,
                "\ntraces kept: {} and {}",
                complete.display(),
                broken.display()
            );
        }
        None => fs_err::remove_dir_all(&dir)?,
    }
    output::print(&out)?;
    Ok(Outcome::Success)
}

/// Writes the demo's two traces (complete, with the symptom) into `dir`.
fn write_traces(spec: &DemoSpec, dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    fs_err::create_dir_all(dir)?;
    let complete = write_trace(
        dir,
        "demo_complete.trace.json.gz",
        &generate(spec, Symptom::None),
    )?;
    let broken = write_trace(
        dir,
        "demo_rocm_symptom.trace.json.gz",
        &generate(spec, Symptom::RocmReplayLoss),
    )?;
    Ok((complete, broken))
}

/// Analyses one generated trace with the same code as `stepscope analyze` (and `diff`).
fn analyse(file: PathBuf, color: bool) -> anyhow::Result<Analysed> {
    let request = AnalyzeRequest {
        top: 5,
        ..AnalyzeRequest::new(vec![file.clone()])
    };
    let view = View {
        color,
        messages: true,
        ..View::default()
    };
    let settings = AnalyzeSettings::resolve(request, view)?;
    let source = SideSource {
        path: file.display().to_string(),
        kind: "file",
        windows: Vec::new(),
    };
    Analysed::new(source, analyze_files(&settings))
        .with_context(|| format!("the demo could not read its own trace `{}`", file.display()))
}

fn narrate(spec: &DemoSpec, good: &Document, bad: &Document, color: bool) -> String {
    let options = TerminalOptions::default()
        .with_color(color)
        .with_top_kernels(5)
        .with_width(output::table_width());
    let truth = facts(spec);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "stepscope demo: an SGLang server on ROCm (HIP 7.2), {} decode steps as graph replays of {} kernels, {} prefill steps eager.\n",
        truth.decode_steps, truth.kernels_per_replay, truth.prefill_steps
    );
    let _ = writeln!(
        out,
        "━━ 1. every replay recorded ━━\n{}",
        render(good, &options)
    );
    let _ = writeln!(
        out,
        "━━ 2. the ROCm symptom: only the replay before each host sync keeps its kernels ({} of {}) ━━\n{}",
        truth.replays_kept_with_symptom,
        truth.replays,
        render(bad, &options)
    );
    out.push_str(&comparison(good, bad));
    out
}

/// The demo as one HTML page: the two analyses as tabs, under the story.
fn write_page(spec: &DemoSpec, compared: &Compared, path: &Path) -> anyhow::Result<usize> {
    let truth = facts(spec);
    let intro = format!(
        "An SGLang server on ROCm (HIP 7.2) profiled twice over the same window: {} decode steps run as graph replays of {} kernels, {} prefill steps run eagerly. \
         The first tab is the trace with every replay recorded. The second is what the ROCm profiler records on several HIP runtimes: only the replay before each host sync keeps its kernels ({} of {}). \
         A per-op tool reads both the same way and reports the second's shares as the server's profile; the verdict, the timeline (red: replays with no kernel) and the unrecorded-work range on the decode bar show why they are wrong, and the advice names the runtime switches that fix it. \
         The third tab is `stepscope diff` of the two: it compares prefill and refuses to compare decode, since the second trace lost its replays' kernels.",
        truth.decode_steps,
        truth.kernels_per_replay,
        truth.prefill_steps,
        truth.replays_kept_with_symptom,
        truth.replays
    );
    let page = Page {
        title: "stepscope demo: graph replays and the ROCm profiler".to_owned(),
        intro,
        sections: vec![
            Section {
                label: "1. every replay recorded".to_owned(),
                document: &compared.base,
            },
            Section {
                label: "2. the ROCm symptom".to_owned(),
                document: &compared.new,
            },
        ],
        comparison: Some(Comparison {
            document: &compared.diff,
            text: render_diff(&compared.diff, &TerminalOptions::default()),
        }),
    };
    Ok(stepscope_report::html::write(&page, path)?)
}

fn write_trace(dir: &Path, name: &str, json: &[u8]) -> anyhow::Result<PathBuf> {
    use std::io::Write as _;
    let path = dir.join(name);
    stepscope_report::atomic::write_with(&path, |file| {
        let mut encoder = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        encoder.write_all(json)?;
        encoder.finish().map(drop)
    })?;
    Ok(path)
}

/// Category shares over the whole window, as a per-op tool reports them, side by side.
fn comparison(good: &Document, bad: &Document) -> String {
    let (Some(good_file), Some(bad_file)) = (good.files.first(), bad.files.first()) else {
        return String::new();
    };
    let (before, after) = (category_shares(good_file), category_shares(bad_file));
    let mut out = String::from("━━ 3. what a per-op report shows for the same server ━━\n");
    let _ = writeln!(
        out,
        "{:<16} {:>14} {:>20}",
        "", "all recorded", "with the symptom"
    );
    let decode = |file: &stepscope_report::schema::FileReport| {
        let stage = file
            .breakdown
            .stages
            .iter()
            .find(|s| s.stage == StageKey::Stage(Stage::Decode));
        (
            stage.map_or(0.0, |s| s.gpu_time_us),
            stage.map_or(0.0, |s| s.share_of_total),
        )
    };
    let ((good_us, good_share), (bad_us, bad_share)) = (decode(good_file), decode(bad_file));
    let ms = |us: f64| format!("{:.1} ms", us / 1e3);
    let total = (
        ms(good_file.breakdown.total_gpu_time_us),
        ms(bad_file.breakdown.total_gpu_time_us),
    );
    let _ = writeln!(out, "{:<16} {:>14} {:>20}", "GPU time", total.0, total.1);
    let good_decode = format!("{} ({})", ms(good_us), percent(good_share));
    let bad_decode = format!("{} ({})", ms(bad_us), percent(bad_share));
    let _ = writeln!(
        out,
        "{:<16} {:>14} {:>20}",
        "decode time", good_decode, bad_decode
    );
    let _ = writeln!(out, "share by category:");
    for row in &before {
        let broken = after
            .iter()
            .find(|r| r.name == row.name)
            .map_or(0.0, |r| r.share);
        let _ = writeln!(
            out,
            "{:<16} {:>14} {:>20}",
            row.name,
            percent(row.share),
            percent(broken)
        );
    }
    let _ = writeln!(
        out,
        "\nWith the symptom, a per-op tool reports these shares for the prefill and eager work around the\nreplays and calls them the server's profile. stepscope's verdict above says so, and names the fix."
    );
    out
}

/// Category shares over every stage of one file, as a per-op tool computes them.
fn category_shares(file: &stepscope_report::schema::FileReport) -> Vec<Row> {
    let mut all: Vec<Row> = Vec::new();
    for stage in &file.breakdown.stages {
        for row in &stage.categories {
            match all.iter_mut().find(|r| r.name == row.name) {
                Some(existing) => existing.time_us += row.time_us,
                None => all.push(row.clone()),
            }
        }
    }
    let total: f64 = all.iter().map(|r| r.time_us).sum();
    for row in &mut all {
        row.share = if total > 0.0 {
            row.time_us / total
        } else {
            0.0
        };
    }
    all.sort_by(|a, b| b.time_us.total_cmp(&a.time_us));
    all
}

/// `demo`'s line in its parent's command list.
const ABOUT: &str = "Run the built-in example: one trace complete, one with the ROCm symptom";

/// `demo --help`: each paragraph is one line, wrapped to the terminal's width.
const LONG_ABOUT: &str = "\
Run the built-in example: a realistic SGLang decode trace, once complete and once with the \
ROCm symptom (only the replay before each host sync keeps its kernels).

EXAMPLES:
  stepscope demo
  # also keep the two generated traces
  stepscope demo --keep demo-traces/
  # also write stepscope-demo.html
  stepscope demo --html";

/// Arguments of `demo`.
#[derive(Debug, Args)]
#[command(about = ABOUT, long_about = LONG_ABOUT)]
pub struct DemoArgs {
    /// Decode steps in the generated window.
    #[arg(long, default_value_t = 48, value_name = "N")]
    pub steps: usize,
    /// Keep the two generated traces in this folder.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Also write the demo as one self-contained HTML page (both analyses as tabs).
    #[arg(
        long,
        value_name = "FILE",
        num_args = 0..=1,
        default_missing_value = "stepscope-demo.html"
    )]
    pub html: Option<PathBuf>,
    /// Colour the terminal report.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}
