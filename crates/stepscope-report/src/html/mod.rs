//! The HTML report: one self-contained page (no network: the script, the styles and the data
//! are inline, so it opens from disk and can be mailed or attached to a ticket).
//!
//! Charting approach: no charting library. The page draws three kinds of chart, all small:
//! the replay timeline on one `<canvas>` from aggregated bins ([`Timeline`]: graphs × bins,
//! however many replays), and the stage/category bars and the rank-by-rank coverage as SVG
//! with one element per bar (stages × categories, ranks). A library such as Chart.js
//! (~200 KB minified) or Plotly (~3.5 MB) would have to be inlined into every report to work
//! offline, and draws an element per data point, which 100k replays must not have. The
//! script (`report.js`, about 37 KB) renders the page from the data with `textContent`
//! only, so no text from a trace is ever read as markup.
//!
//! What the page states as the verdict is the terminal report's own text
//! ([`crate::terminal::file_verdict`]), so the two cannot disagree.

use crate::ReportError;
use crate::schema::{Document, TIMELINE_BINS, Timeline};
use crate::terminal::{TerminalOptions, combined_verdict, file_verdict, finding_text, host_text};
use serde::Serialize;
use std::path::Path;
use stepscope_analysis::FindingKind;

const TEMPLATE: &str = include_str!("report.html");
const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// Timeline cells a page holds at most over all its files and graphs (before the bins of
/// many-graph, many-rank inputs are merged), so 64 ranks stay a few MB.
const CELL_BUDGET: usize = 24_000;

/// Coarsest timeline a page draws.
const MIN_BINS: u32 = 48;

/// One analysis shown in the page (`analyze` gives one; `demo` and `diff` give two).
#[derive(Debug, Clone)]
pub struct Section<'a> {
    /// Tab label, e.g. `base` or the file name.
    pub label: String,
    /// The analysis.
    pub document: &'a Document,
}

/// A comparison shown in the page (`stepscope diff`): its wire document and its terminal
/// text.
#[derive(Debug, Clone)]
pub struct Comparison<T: Serialize> {
    /// The `diff --json` document.
    pub document: T,
    /// The terminal report of the comparison.
    pub text: String,
}

/// The whole page.
#[derive(Debug, Clone)]
pub struct Page<'a, T: Serialize = ()> {
    /// Title (the `<title>` and the heading).
    pub title: String,
    /// A paragraph under the title (the demo's story); empty for none.
    pub intro: String,
    /// Analyses, each a tab when there are several.
    pub sections: Vec<Section<'a>>,
    /// A comparison, as its own tab.
    pub comparison: Option<Comparison<T>>,
}

impl<'a> Page<'a> {
    /// A page of one analysis and no comparison.
    pub fn single(title: String, label: String, document: &'a Document) -> Self {
        Page {
            title,
            intro: String::new(),
            sections: vec![Section { label, document }],
            comparison: None,
        }
    }
}

#[derive(Serialize)]
struct PageData<'a, T: Serialize> {
    title: &'a str,
    intro: &'a str,
    tool: String,
    classes: [&'static str; 6],
    stages: [&'static str; 5],
    sections: Vec<SectionData<'a>>,
    comparison: Option<ComparisonData<'a, T>>,
}

#[derive(Serialize)]
struct ComparisonData<'a, T: Serialize> {
    document: &'a T,
    text: &'a str,
}

#[derive(Serialize)]
struct SectionData<'a> {
    label: &'a str,
    /// The document, each file's efficiency rows cut to those the page draws.
    document: Document,
    /// The terminal's verdict of all files together, with several.
    combined_verdict: Option<String>,
    files: Vec<FileData>,
}

#[derive(Serialize)]
struct FileData {
    /// The terminal's verdict text of the file.
    verdict: String,
    /// Replay timeline, bins merged to the page's budget.
    timeline: Timeline,
    /// Where the GPU time goes and what held it back, as the terminal says it.
    host: String,
    /// Per finding, as the terminal says it: `[replay, why]`.
    findings: Vec<(String, String)>,
    /// How to settle unverified sizes, as the terminal says it, when a replay's is.
    settle: Option<&'static str>,
}

/// Timeline bins for a page whose files have `rows` graph rows in all.
fn bins_for(rows: usize) -> u32 {
    let bins = CELL_BUDGET / rows.max(1);
    (bins as u32).clamp(MIN_BINS, TIMELINE_BINS)
}

fn section_data<'a>(section: &'a Section<'a>, bins: u32) -> SectionData<'a> {
    let options = TerminalOptions::default();
    let mut document = section.document.clone();
    let per_file = (ROOFLINE_BUDGET / document.files.len().max(1)).clamp(4, 60);
    for file in &mut document.files {
        keep_roofline_rows(&mut file.efficiency, per_file);
        // The page shows the idle causes and the launches as the terminal's lines (`host`),
        // not their numbers one by one.
        file.idle_causes.streams.clear();
        file.idle_causes.stages.clear();
        file.launches = Default::default();
    }
    SectionData {
        label: &section.label,
        document,
        combined_verdict: section
            .document
            .combined
            .as_ref()
            .map(|c| combined_verdict(c, &options)),
        files: section
            .document
            .files
            .iter()
            .map(|file| FileData {
                verdict: file_verdict(file, &options),
                host: host_text(file),
                timeline: file.timeline.coarsened(bins),
                findings: file
                    .replay_coverage
                    .findings
                    .iter()
                    .map(finding_text)
                    .collect(),
                settle: file
                    .replay_coverage
                    .findings
                    .iter()
                    .any(|f| f.kind == FindingKind::UnverifiedReplay)
                    .then_some(crate::schema::HOW_TO_SETTLE),
            })
            .collect(),
    }
}

/// Efficiency rows the page keeps over all files: the roofline chart and its table.
const ROOFLINE_BUDGET: usize = 480;

/// Keeps a file's `keep` efficiency rows with the most kernel time, leaving out rows whose
/// kernels are in the rows of the ops inside them, no unmodelled list, and of each row what
/// the page shows: with every row in full, a run of many ranks outgrows the page's budget.
fn keep_roofline_rows(efficiency: &mut crate::schema::efficiency::EfficiencyReport, keep: usize) {
    efficiency.ops.retain(|row| !row.encloses_modelled_op);
    efficiency
        .ops
        .sort_by(|a, b| b.kernel_time_us_sum.total_cmp(&a.kernel_time_us_sum));
    efficiency.ops.truncate(keep);
    efficiency.unmodelled.clear();
    // What the page shows of a row: its op, shapes and numbers.
    for row in &mut efficiency.ops {
        row.params.clear();
        row.input_types.clear();
        row.input_strides.clear();
        row.concrete_inputs.clear();
    }
}

/// JSON that may sit inside a `<script>` element: every `<` escaped (it can only occur in
/// strings), so no `</script>` or `<!--` in a kernel name ends or bends the element.
fn script_json<T: Serialize>(value: &T) -> String {
    let json = serde_json::to_string(value).expect("the page data serialises");
    json.replace('<', "\\u003c")
}

/// `raw` as HTML text: `&`, `<`, `>` and `"` escaped.
pub(crate) fn escape_html(raw: &str) -> String {
    raw.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page as one HTML document.
pub fn render<T: Serialize>(page: &Page<'_, T>) -> String {
    let rows: usize = page
        .sections
        .iter()
        .flat_map(|s| &s.document.files)
        .map(|f| f.timeline.rows.len())
        .sum();
    let bins = bins_for(rows);
    let data = PageData {
        title: &page.title,
        intro: &page.intro,
        tool: format!("stepscope {}", env!("CARGO_PKG_VERSION")),
        classes: crate::schema::TIMELINE_CLASSES,
        stages: crate::schema::TIMELINE_STAGES,
        sections: page
            .sections
            .iter()
            .map(|s| section_data(s, bins))
            .collect(),
        comparison: page.comparison.as_ref().map(|c| ComparisonData {
            document: &c.document,
            text: &c.text,
        }),
    };
    let fallback: String = data
        .sections
        .iter()
        .flat_map(|s| &s.files)
        .map(|f| f.verdict.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    fill(
        TEMPLATE,
        &[
            ("TITLE", &escape_html(&page.title)),
            ("STYLE", STYLE),
            ("FALLBACK", &escape_html(&fallback)),
            ("DATA", &script_json(&data)),
            ("SCRIPT", SCRIPT),
        ],
    )
}

/// `template` with each `{{KEY}}` replaced by its value, in one pass over the template, so
/// a value that holds `{{…}}` (a kernel name may) is never filled in again.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        match values.iter().find(|(key, _)| *key == &after[..end]) {
            Some((_, value)) => out.push_str(value),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Writes the page to `path` (whole or not at all: [`crate::atomic`]); returns its size in
/// bytes.
///
/// # Errors
///
/// The file cannot be written.
pub fn write<T: Serialize>(page: &Page<'_, T>, path: &Path) -> Result<usize, ReportError> {
    let html = render(page);
    crate::atomic::write_bytes(path, html.as_bytes())?;
    Ok(html.len())
}
