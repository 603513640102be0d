//! Efficiency parity with TraceLens: per op row that both produce (same op, `Input Dims`,
//! `Input type` and `Input Strides` of the first call), GFLOPS and data moved equal
//! TraceLens's reference CSVs within 0.1 %, and TFLOP/s within 2 % where both rows hold
//! the same calls. Graph-replayed decode traces are not here: their ops come from capture
//! traces, which the efficiency pass does not read yet.

use crate::common;
use std::collections::HashMap;
use stepscope_analysis::passes::efficiency::OpRow;
use stepscope_analysis::passes::kernel_categories::KernelCategories;
use stepscope_analysis::{AnalysisOptions, analyze};

/// Trace, and its reference CSVs of modelled families.
const CASES: &[(&str, &[&str])] = &[
    (
        "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        &[
            "h100/Qwen_Qwen1.5-0.5B-Chat__1016005_perf_report_csvs/GEMM.csv",
            "h100/Qwen_Qwen1.5-0.5B-Chat__1016005_perf_report_csvs/SDPA_fwd.csv",
            "h100/Qwen_Qwen1.5-0.5B-Chat__1016005_perf_report_csvs/BinaryElementwise.csv",
            "h100/Qwen_Qwen1.5-0.5B-Chat__1016005_perf_report_csvs/UnaryElementwise.csv",
            "h100/Qwen_Qwen1.5-0.5B-Chat__1016005_perf_report_csvs/Reduce_fwd.csv",
        ],
    ),
    (
        "tracelens/tests/traces/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz",
        &[
            "mi300/google_owlv2-large-patch14-ensemble__1016001_perf_report_csvs/GEMM.csv",
            "mi300/google_owlv2-large-patch14-ensemble__1016001_perf_report_csvs/BinaryElementwise.csv",
            "mi300/google_owlv2-large-patch14-ensemble__1016001_perf_report_csvs/UnaryElementwise.csv",
            "mi300/google_owlv2-large-patch14-ensemble__1016001_perf_report_csvs/Reduce_fwd.csv",
            "mi300/google_owlv2-large-patch14-ensemble__1016001_perf_report_csvs/CONV_fwd.csv",
            "mi300/google_owlv2-large-patch14-ensemble__1016001_perf_report_csvs/Normalization.csv",
        ],
    ),
    (
        "tracelens/tests/traces/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz",
        &[
            "inference/xdit_sd_3.5/perf_csvs/GEMM.csv",
            "inference/xdit_sd_3.5/perf_csvs/SDPA_fwd.csv",
            "inference/xdit_sd_3.5/perf_csvs/BinaryElementwise.csv",
            "inference/xdit_sd_3.5/perf_csvs/UnaryElementwise.csv",
            "inference/xdit_sd_3.5/perf_csvs/Reduce_fwd.csv",
            "inference/xdit_sd_3.5/perf_csvs/Normalization_fwd.csv",
        ],
    ),
];

fn records(relative: &str) -> Vec<HashMap<String, String>> {
    let path = common::shared(&format!("tracelens/tests/traces/{relative}"));
    let mut reader =
        csv::Reader::from_path(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headers = reader.headers().expect("header").clone();
    reader
        .records()
        .map(|record| {
            let record = record.expect("record");
            headers
                .iter()
                .zip(record.iter())
                .map(|(h, v)| (h.to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

fn close(ours: f64, theirs: f64, tolerance: f64) -> bool {
    (ours - theirs).abs() <= tolerance * theirs.abs().max(1e-12)
}

fn number(row: &HashMap<String, String>, column: &str) -> Option<f64> {
    row.get(column).and_then(|v| v.parse().ok())
}

/// Checks one reference row against ours; `Err` says what differs.
fn compare(theirs: &HashMap<String, String>, ours: &OpRow) -> Result<(), String> {
    let gflops = number(theirs, "GFLOPS_first").expect("GFLOPS");
    if !close(ours.gflops, gflops, 1e-3) {
        return Err(format!("GFLOPS {} vs {gflops}", ours.gflops));
    }
    let moved = number(theirs, "Data Moved (MB)_first");
    match (ours.data_moved_mib, moved) {
        (Some(a), Some(b)) if close(a, b, 1e-3) => {}
        (None, None) => {}
        (a, b) => return Err(format!("data moved {a:?} vs {b:?}")),
    }
    let same_calls = number(theirs, "name_count") == Some(ours.count as f64);
    if let (true, Some(tflops)) = (same_calls, number(theirs, "TFLOPS/s_mean")) {
        let mean = ours.tflops.map(|t| t.mean).unwrap_or(0.0);
        if !close(mean, tflops, 0.02) {
            return Err(format!("TFLOP/s {mean} vs {tflops}"));
        }
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
fn op_rows_equal_tracelens_reference_csvs() {
    let table = KernelCategories::embedded();
    for (trace_path, csvs) in CASES {
        let trace = common::read(trace_path);
        let analysis = analyze(&trace, &AnalysisOptions::new(&table));
        let rows = &analysis.efficiency.rows;
        let (mut matched, mut total, mut failures) = (0, 0, Vec::new());
        for csv in *csvs {
            for theirs in records(csv) {
                total += 1;
                let key = |c: &str| theirs.get(c).cloned().unwrap_or_default();
                let candidates: Vec<&OpRow> = rows
                    .iter()
                    .filter(|r| {
                        r.name == key("name")
                            && r.args[0] == key("Input Dims_first")
                            && r.args[1] == key("Input type_first")
                    })
                    .collect();
                let outcomes: Vec<Result<(), String>> = candidates
                    .iter()
                    .map(|ours| compare(&theirs, ours))
                    .collect();
                if outcomes.iter().any(Result::is_ok) {
                    matched += 1;
                } else {
                    let why = outcomes
                        .into_iter()
                        .filter_map(Result::err)
                        .collect::<Vec<_>>();
                    failures.push(format!(
                        "{csv}: {} {} {why:?}",
                        key("name"),
                        key("Input Dims_first")
                    ));
                }
            }
        }
        assert!(total > 10, "{trace_path}: reference rows read");
        assert!(
            matched * 100 >= total * 95,
            "{trace_path}: {matched} of {total} reference rows matched; first misses:\n{}",
            failures
                .iter()
                .take(15)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
