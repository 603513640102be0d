//! Efficiency parity with TraceLens: for every row of its reference CSVs, the row with the
//! same op, `Input Dims` and `Input type` of the first call has GFLOPS and data moved equal
//! TraceLens's reference CSVs within 0.1 %, and wherever the reference has a rate, the same
//! number of calls and TFLOP/s within 2 %; for eager traces and for graph-replayed decode
//! with its capture trace. (Reference rows without a rate are ops TraceLens found no kernel
//! time for: CPU-side ops.)

use crate::common;
use std::collections::HashMap;
use stepscope_analysis::KernelCategories;
use stepscope_analysis::OpRow;
use stepscope_analysis::{AnalysisOptions, analyze};
use stepscope_analysis::{CapturedGraph, captured_graphs};

/// A trace, the capture trace its graph replays take their shapes from, and its reference
/// CSVs of modelled families (under `tracelens/tests/traces/`).
struct Case {
    trace: &'static str,
    capture: Option<&'static str>,
    csvs: &'static [&'static str],
}

const H100: &str = "h100/Qwen_Qwen1.5-0.5B-Chat__1016005_perf_report_csvs";
const MI300: &str = "mi300/Qwen_Qwen1.5-0.5B-Chat__1016005_perf_report_csvs";
const OWL: &str = "mi300/google_owlv2-large-patch14-ensemble__1016001_perf_report_csvs";

const CASES: &[Case] = &[
    Case {
        trace: "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        capture: None,
        csvs: &[
            "GEMM",
            "SDPA_fwd",
            "BinaryElementwise",
            "UnaryElementwise",
            "Reduce_fwd",
        ],
    },
    Case {
        trace: "tracelens/tests/traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        capture: None,
        csvs: &[
            "GEMM",
            "SDPA_fwd",
            "BinaryElementwise",
            "UnaryElementwise",
            "Reduce_fwd",
        ],
    },
    Case {
        trace: "tracelens/tests/traces/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz",
        capture: None,
        csvs: &[
            "GEMM",
            "BinaryElementwise",
            "UnaryElementwise",
            "Reduce_fwd",
            "CONV_fwd",
            "Normalization",
        ],
    },
    Case {
        trace: "tracelens/tests/traces/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz",
        capture: None,
        csvs: &[
            "GEMM",
            "SDPA_fwd",
            "BinaryElementwise",
            "UnaryElementwise",
            "Reduce_fwd",
            "Normalization_fwd",
            "CONV_fwd",
        ],
    },
    Case {
        trace: "tracelens/tests/traces/torch_compile_triton/trace.json.gz",
        capture: None,
        csvs: &["GEMM", "SDPA_fwd"],
    },
    Case {
        trace: "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
        capture: None,
        csvs: &[
            "GEMM",
            "UnaryElementwise",
            "Reduce_fwd",
            "RMSNorm_fwd",
            "InferenceAttention_fwd",
            "RoPE_fwd",
        ],
    },
    // Graph-replayed decode: every per-layer op's kernels were replayed, their shapes come
    // from the capture trace. (The vLLM traces' MoE_unfused_fwd.csv is left out: TraceLens
    // builds those rows from pseudo-ops it makes of vLLM's fused-MoE kernels, and MoE has no
    // model here yet.)
    Case {
        trace: "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        capture: Some(
            "tracelens/tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz",
        ),
        csvs: &[
            "GEMM",
            "UnaryElementwise",
            "Reduce_fwd",
            "RMSNorm_fwd",
            "InferenceAttention_fwd",
            "RoPE_fwd",
        ],
    },
    Case {
        trace: "tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz",
        capture: Some(
            "tracelens/tests/traces/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
        ),
        csvs: &[
            "GEMM",
            "UnaryElementwise",
            "RMSNorm_fwd",
            "InferenceAttention_fwd",
        ],
    },
    Case {
        trace: "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
        capture: Some(
            "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz",
        ),
        csvs: &[
            "GEMM",
            "UnaryElementwise",
            "RMSNorm_fwd",
            "InferenceAttention_fwd",
        ],
    },
];

/// The folder of a case's reference CSVs.
fn csv_dir(trace: &str) -> String {
    let folder = trace.rsplit_once('/').map_or("", |(dir, _)| dir);
    let relative = folder.trim_start_matches("tracelens/tests/traces/");
    match relative {
        "h100" => H100.to_owned(),
        "mi300" if trace.contains("owlv2") => OWL.to_owned(),
        "mi300" => MI300.to_owned(),
        "torch_compile_triton" => "torch_compile_triton/trace_perf_report_csvs".to_owned(),
        other => format!("{other}/perf_csvs"),
    }
}

/// The records of a reference CSV under `tracelens/tests/traces/`.
fn records(relative: &str) -> Vec<HashMap<String, String>> {
    crate::parity::records(&format!("tracelens/tests/traces/{relative}"))
}

fn close(ours: f64, theirs: f64, tolerance: f64) -> bool {
    (ours - theirs).abs() <= tolerance * theirs.abs().max(1e-12)
}

fn number(row: &HashMap<String, String>, column: &str) -> Option<f64> {
    row.get(column).and_then(|v| v.parse().ok())
}

/// Checks one reference row against ours: `Ok(true)` when the achieved TFLOP/s were
/// compared too (the reference has them: then the calls must be the same); `Err` says what
/// differs.
fn compare(theirs: &HashMap<String, String>, ours: &OpRow) -> Result<bool, String> {
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
    let Some(tflops) = number(theirs, "TFLOPS/s_mean") else {
        return Ok(false);
    };
    let calls = number(theirs, "name_count");
    if calls != Some(ours.count as f64) {
        return Err(format!("{} calls vs {calls:?}", ours.count));
    }
    let mean = ours.tflops.map(|t| t.mean).unwrap_or(0.0);
    if !close(mean, tflops, 0.02) {
        return Err(format!("TFLOP/s {mean} vs {tflops}"));
    }
    Ok(true)
}

/// How a case's reference rows compared.
#[derive(Default)]
struct Tally {
    total: usize,
    matched: usize,
    /// Matched rows whose rates were compared too.
    rates: usize,
    failures: Vec<String>,
}

fn check_case(case: &Case, table: &KernelCategories) -> Tally {
    let trace = common::read(case.trace);
    let capture: Vec<CapturedGraph> = case
        .capture
        .map(|path| captured_graphs(&common::read(path)))
        .unwrap_or_default();
    let options = AnalysisOptions {
        capture: &capture,
        ..AnalysisOptions::new(table)
    };
    let rows = analyze(&trace, &options).efficiency.rows;
    let mut tally = Tally::default();
    for name in case.csvs {
        let csv = format!("{}/{name}.csv", csv_dir(case.trace));
        for theirs in records(&csv) {
            tally.total += 1;
            let key = |c: &str| theirs.get(c).cloned().unwrap_or_default();
            let outcomes: Vec<Result<bool, String>> = rows
                .iter()
                .filter(|r| {
                    r.name == key("name")
                        && r.args[0] == key("Input Dims_first")
                        && r.args[1] == key("Input type_first")
                })
                .map(|ours| compare(&theirs, ours))
                .collect();
            if outcomes.iter().any(Result::is_ok) {
                tally.matched += 1;
                tally.rates += usize::from(outcomes.contains(&Ok(true)));
            } else {
                let why: Vec<String> = outcomes.into_iter().filter_map(Result::err).collect();
                let row = format!("{} {}", key("name"), key("Input Dims_first"));
                tally.failures.push(format!("{csv}: {row} {why:?}"));
            }
        }
    }
    tally
}

#[test]
#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
fn op_rows_equal_tracelens_reference_csvs() {
    let table = KernelCategories::embedded();
    for case in CASES {
        let tally = check_case(case, &table);
        let trace = case.trace;
        // The CSVs were found and read (the smallest case, torch.compile's, has 4 rows).
        assert!(tally.total >= 4, "{trace}: reference rows read");
        // Most rows hold the same calls on both sides, so their rates are compared too.
        assert!(
            tally.rates * 2 > tally.total,
            "{trace}: {} rates compared",
            tally.rates
        );
        assert!(
            tally.matched == tally.total,
            "{trace}: {} of {} reference rows matched; first misses:\n{}",
            tally.matched,
            tally.total,
            tally
                .failures
                .iter()
                .take(15)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
