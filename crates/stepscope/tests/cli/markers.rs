//! Steps from ROCm markers. The step annotations of real traces (vLLM's
//! `execute_context_…`, SGLang's `step[DECODE bs=…]`) written as each profiler records a host
//! range — a ROCTx range in rocprofv3's CSV (`marker_api_trace.csv`), JSON (`marker_api`) and
//! SQLite database (a `MARKER_CORE_RANGE_API` region), a `UserMarker` row in RPD, an NVTX
//! range in Nsight Systems — must give the steps and stages the Kineto reader gives.

use crate::common::{SGLANG_DECODE, VLLM_PIECEWISE, analyzed_file, gunzip, tempdir};
use serde_json::Value;

/// The stage names of a file's breakdown, in order.
fn stages(file: &Value) -> Vec<String> {
    file["breakdown"]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter(|s| s["steps"].as_u64() > Some(0))
        .map(|s| s["stage"].as_str().unwrap_or("?").to_owned())
        .collect()
}

#[test]
fn rocm_markers_give_the_steps_and_stages_of_the_kineto_annotations() {
    for (label, relative) in [("vllm", VLLM_PIECEWISE), ("sglang", SGLANG_DECODE)] {
        let dir = tempdir();
        let doc: Value = serde_json::from_slice(&gunzip(relative)).expect("JSON");
        let formats = crate::damage_matrix::every_format(&doc, dir.path());
        let (_, kineto) = &formats[0];
        let expected = analyzed_file(kineto);
        assert!(
            expected["steps"]["counts"]
                .as_object()
                .is_some_and(|c| !c.is_empty()),
            "{label}: the Kineto trace has steps"
        );
        for (format, file) in &formats[1..] {
            if *format == "rpd-json" {
                // rpd2tracing's export of this writer carries no markers.
                continue;
            }
            let got = analyzed_file(file);
            assert_eq!(got["steps"], expected["steps"], "{label} {format}");
            assert_eq!(
                got["breakdown"]["method"], "step_annotations",
                "{label} {format}"
            );
            assert_eq!(stages(&got), stages(&expected), "{label} {format}");
        }
    }
}
