//! rocprofv3 JSON through `analyze`. The public sample was recorded without `--hip-trace`
//! (`unavailable`); the replay tests write the document rocprofv3 writes with it (the
//! `rocprofiler-sdk-tool` schema: kernel symbols, dispatches and HIP API records sharing
//! `correlation_id.internal`, names of HIP operations in `strings.buffer_records`) from the
//! real piecewise vLLM trace, and check it gives the JSON's replay numbers; then with the
//! dispatches of two launches removed (the symptom).

use crate::common::{
    VLLM_PIECEWISE, arg, assert_same_replays, replay_coverage, stepscope, tempdir, trace,
};
use serde_json::Value;
use std::path::Path;
use stepscope_synth::formats::{Parts, rocprof_json};
use stepscope_synth::removal::read_json;

const SAMPLE: &str = "tracelens/tests/rocprof/908_results.json.gz";

/// The rocprofv3 JSON document of a Kineto trace, without the dispatches of the `skip`-th
/// graph launches (see `stepscope_synth::formats`).
fn rocprof_json_from_kineto(kineto: &Path, skip: &[usize]) -> Value {
    let parts = Parts::of_kineto(&read_json(kineto).expect("trace"));
    rocprof_json(&parts.without_replays(skip))
}

#[test]
fn replays_read_from_rocprofv3_json_match_and_lost_dispatches_fail_the_gate() {
    let dir = tempdir();
    let whole = dir.path().join("run_results.json");
    let doc = rocprof_json_from_kineto(&trace(VLLM_PIECEWISE), &[]);
    std::fs::write(&whole, serde_json::to_vec(&doc).expect("json")).expect("write");
    let c = replay_coverage(&whole);
    let from_kineto = replay_coverage(&trace(VLLM_PIECEWISE));
    assert_same_replays(&c, &from_kineto);
    assert_eq!(c["replays"], 25);
    let lost = dir.path().join("lost_results.json");
    let doc = rocprof_json_from_kineto(&trace(VLLM_PIECEWISE), &[0, 12]);
    std::fs::write(&lost, serde_json::to_vec(&doc).expect("json")).expect("write");
    let c = replay_coverage(&lost);
    assert_eq!(c["verdict"], "incomplete");
    assert_eq!(c["empty_replays"], 2);
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&lost),
        arg(Path::new("--fail-on-incomplete")),
    ]);
    run.expect_code(3);
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn the_sample_without_hip_records_is_unavailable_and_says_how_to_record() {
    let run = stepscope([
        "analyze",
        trace(SAMPLE).to_str().expect("path"),
        "--no-progress",
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains("UNAVAILABLE"), "{}", run.stdout);
    assert!(run.stdout.contains("--hip-trace"), "{}", run.stdout);
    let gated = stepscope([
        "analyze",
        trace(SAMPLE).to_str().expect("path"),
        "--no-progress",
        "--fail-on-incomplete",
    ]);
    gated.expect_code(3);
}

#[test]
fn a_cut_rocprofv3_json_is_an_error_and_with_allow_truncated_a_partial_read() {
    // rocprofv3 writes its JSON at exit: a file copied while it was written breaks off.
    // Without --allow-truncated that is an error naming the break; with it, the records
    // whole before the break are analysed and the result is marked partial.
    let dir = tempdir();
    let doc = rocprof_json_from_kineto(&trace(VLLM_PIECEWISE), &[]);
    let text = serde_json::to_vec_pretty(&doc).expect("json");
    let cut = dir.path().join("cut_results.json");
    std::fs::write(&cut, &text[..text.len() * 3 / 4]).expect("write");
    let refused = stepscope([arg(Path::new("analyze")), arg(&cut)]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("--allow-truncated"),
        "{}",
        refused.stderr
    );
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&cut),
        arg(Path::new("--allow-truncated")),
        arg(Path::new("--json")),
        arg(Path::new("--no-progress")),
    ]);
    run.expect_code(0);
    let document = run.json();
    assert_eq!(document["partial"], true, "{}", run.stderr);
    let file = &document["files"][0];
    let kernels = file["events"]["kernels"].as_u64().expect("kernels");
    assert!(kernels > 0, "the whole records before the break are read");
    let whole = dir.path().join("whole_results.json");
    std::fs::write(&whole, &text).expect("write");
    let all = crate::common::analyzed_file(&whole)["events"]["kernels"]
        .as_u64()
        .expect("kernels");
    assert!(kernels <= all, "{kernels} of {all}");
    // With the gate, a partial read fails it.
    let gated = stepscope([
        arg(Path::new("analyze")),
        arg(&cut),
        arg(Path::new("--allow-truncated")),
        arg(Path::new("--fail-on-incomplete")),
    ]);
    gated.expect_code(3);
}
