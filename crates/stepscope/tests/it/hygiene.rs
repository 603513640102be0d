//! What the terminal report prints is safe and readable: control characters from the trace
//! are escaped, table headers are never split mid-word at 80 columns, counts agree with
//! their nouns, orphans are named, cut kernel names stay distinguishable.

use crate::variants::{TraceDoc, WITH_REPLAYS, analyse};
use serde_json::Value;
use stepscope_ingest::{ReadOptions, read_trace_bytes};
use stepscope_report::schema::{Document, FileReport, SCHEMA_VERSION, Tool};
use stepscope_report::terminal::{TableWidth, TerminalOptions, render};
use stepscope_synth::removal::to_json_bytes;

fn document(doc: &Value) -> Document {
    let trace = read_trace_bytes(&to_json_bytes(doc), &ReadOptions::default()).expect("reads");
    let analysis = analyse(doc, &[]);
    let file = FileReport::new("trace.json", &trace, &analysis, 50);
    Document {
        schema_version: SCHEMA_VERSION,
        tool: Tool::current(),
        verdict: file.replay_coverage.verdict.into(),
        partial: false,
        failed_files: Vec::new(),
        warnings: Vec::new(),
        files: vec![file],
        combined: None,
    }
}

fn terminal(doc: &Value, width: TableWidth) -> String {
    render(
        &document(doc),
        &TerminalOptions::default().with_width(width),
    )
}

#[test]
fn control_characters_from_the_trace_are_escaped() {
    let doc = TraceDoc::load(WITH_REPLAYS[2].1);
    let mut edited = doc.doc.clone();
    let row = doc.launches[0][0];
    edited["traceEvents"][row]["name"] = Value::from("evil\u{1b}[2J\nkernel\u{7}");
    let events = edited["traceEvents"].as_array_mut().expect("events");
    let step = events
        .iter_mut()
        .find(|e| e["name"] == "step[DECODE bs=32]" && e["cat"] == "user_annotation")
        .expect("the step");
    step["args"]["note"] = Value::from("unused");
    let text = terminal(&edited, TableWidth::Unbounded);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "raw control characters"
    );
    assert!(text.contains("evil\\u{1b}[2J\\u{a}kernel\\u{7}"), "{text}");
    let json = stepscope_report::json::render(&document(&edited));
    assert!(json.contains("evil\\\\u{1b}[2J\\\\u{a}kernel\\\\u{7}"));
}

#[test]
fn header_words_are_never_split_at_80_columns() {
    let doc = TraceDoc::load(WITH_REPLAYS[1].1);
    let text = terminal(&doc.doc, TableWidth::Columns(80));
    // Counter columns that are zero for every graph are not shown.
    assert!(!text.contains("damaged ┆"), "{text}");
    for word in [
        "graph",
        "first",
        "expected",
        "nodes",
        "replays",
        "recorded",
        "complete",
        "unverified",
        "completeness",
        "category",
        "kernel",
        "share",
        "events",
        "mean",
    ] {
        assert!(
            text.lines()
                .any(|l| l.split(|c: char| !c.is_alphanumeric()).any(|w| w == word)),
            "header word `{word}` split:\n{text}"
        );
    }
}

#[test]
fn counts_agree_with_their_nouns_and_orphans_are_named() {
    let sglang = terminal(
        &TraceDoc::load(WITH_REPLAYS[2].1).doc,
        TableWidth::Unbounded,
    );
    assert!(sglang.contains("DECODE — 1 step,"), "{sglang}");
    assert!(sglang.contains("UnverifiedReplay: 1 replay:"), "{sglang}");
    assert!(
        !sglang.contains("1 steps") && !sglang.contains("1 replays"),
        "{sglang}"
    );
    let hta = terminal(
        &TraceDoc::load(WITH_REPLAYS[0].1).doc,
        TableWidth::Unbounded,
    );
    assert!(
        hta.contains("705 kernels and 167 memcpy/memsets whose correlation matches no host call"),
        "{hta}"
    );
}

#[test]
fn cut_kernel_names_stay_distinguishable() {
    // The demo's GEMM kernels share their first and last characters and differ inside.
    let bytes = stepscope_synth::demo::generate(
        &stepscope_synth::demo::DemoSpec::default(),
        stepscope_synth::demo::Symptom::None,
    );
    let doc: Value = serde_json::from_slice(&bytes).expect("json");
    let text = terminal(&doc, TableWidth::Unbounded);
    for table in text.split("kernel ").skip(1) {
        let rows: Vec<&str> = table
            .lines()
            .filter(|l| l.starts_with('│'))
            .map(|l| l.split('┆').next().unwrap_or(""))
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for row in &rows {
            assert!(seen.insert(*row), "two kernel rows read the same: {row}");
        }
    }
}

/// Every number, and every roofline bound, that the efficiency table prints whole on a wide
/// terminal is whole at 80 columns too: only the op and shapes columns give up width.
#[test]
fn numbers_are_never_split_at_80_columns() {
    let doc = TraceDoc::load("tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    let tokens = |text: &str| -> std::collections::HashSet<String> {
        text.split(|c: char| c.is_whitespace() || "│┆".contains(c))
            .filter(|w| {
                let number = w.chars().any(|c| c.is_ascii_digit())
                    && w.chars().all(|c| c.is_ascii_digit() || c == '.');
                number || *w == "compute" || *w == "memory"
            })
            .map(str::to_owned)
            .collect()
    };
    let wide = terminal(&doc.doc, TableWidth::Unbounded);
    assert!(wide.contains("EFFICIENCY"), "{wide}");
    let narrow = terminal(&doc.doc, TableWidth::Columns(80));
    let narrow_tokens = tokens(&narrow);
    let split: Vec<String> = tokens(&wide)
        .into_iter()
        .filter(|t| !narrow_tokens.contains(t))
        .collect();
    assert!(split.is_empty(), "split at 80 columns: {split:?}\n{narrow}");
}
