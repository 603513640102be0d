//! rocprofv3 CSV through `analyze`: replay coverage needs the HIP table's `hipGraphLaunch`
//! rows joined to the kernel table's dispatches. No public rocprofv3 CSV holds graph
//! launches, so the tests write the tables rocprofv3 would (its column sets, ns timestamps)
//! from the real piecewise vLLM trace — its kernels and its HIP runtime calls, correlation ids
//! kept — and check that the CSV run gives the replay numbers the JSON gives; then the same
//! with the kernels of two replays removed (the symptom), made from the same real file.

use crate::common::{
    VLLM_PIECEWISE, arg, assert_same_replays, incomplete_piecewise, replay_coverage, stepscope,
    tempdir, trace,
};
use std::path::Path;
use stepscope_synth::formats::{Parts, write_rocprof_csv};
use stepscope_synth::removal::read_json;

/// rocprofv3's tables of the Kineto trace at `kineto` (see `stepscope_synth::formats`).
fn rocprof_tables(kineto: &Path, dir: &Path, prefix: &str) -> std::path::PathBuf {
    let doc = read_json(kineto).expect("trace");
    write_rocprof_csv(&Parts::of_kineto(&doc), dir, prefix).expect("tables")
}

#[test]
fn replays_read_from_rocprof_csv_match_the_same_run_read_from_json() {
    let dir = tempdir();
    let kernels = rocprof_tables(&trace(VLLM_PIECEWISE), dir.path(), "4242_");
    let csv = replay_coverage(&kernels);
    let json = replay_coverage(&trace(VLLM_PIECEWISE));
    // testdata/SOURCES.md: 25 replays of 3 graphs.
    assert_eq!(csv["replays"], 25);
    assert_same_replays(&csv, &json);
    // A folder holding the run's tables is one trace (its kernel table, the others with it).
    let run = stepscope([
        "analyze",
        dir.path().to_str().expect("dir"),
        "--json",
        "--no-progress",
    ]);
    run.expect_code(0);
    assert_eq!(run.json()["files"].as_array().map(Vec::len), Some(1));
}

#[test]
fn replays_that_lost_their_kernels_in_rocprof_csv_fail_the_gate() {
    let dir = tempdir();
    let json = incomplete_piecewise(dir.path(), "incomplete.json");
    let kernels = rocprof_tables(&json, dir.path(), "");
    let csv = replay_coverage(&kernels);
    assert_eq!(csv["verdict"], "incomplete");
    assert_eq!(
        csv["empty_replays"], 2,
        "the two replays whose kernels were removed"
    );
    assert_same_replays(&csv, &replay_coverage(&json));
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&kernels),
        arg(Path::new("--fail-on-incomplete")),
    ]);
    run.expect_code(3);
    // Forcing the format reads the same; forcing the wrong one says why not.
    let forced = stepscope([
        "analyze",
        kernels.to_str().expect("path"),
        "--format",
        "kineto-json",
        "--no-progress",
    ]);
    forced.expect_code(2);
}

#[test]
fn a_kernel_table_without_its_hip_table_cannot_show_replays() {
    // The same real run's tables, the HIP API table deleted: the 25 graph launches are gone
    // with it, so nothing says whether replays kept their kernels. "no-replays" would be
    // the wrong answer (the run had 25): the verdict is `unavailable`, with how to record.
    let dir = tempdir();
    let kernels = rocprof_tables(&trace(VLLM_PIECEWISE), dir.path(), "");
    std::fs::remove_file(dir.path().join("hip_api_trace.csv")).expect("rm");
    let csv = replay_coverage(&kernels);
    assert_eq!(csv["verdict"], "unavailable");
    assert_eq!(csv["replays"], 0);
    let reason = csv["unavailable_reason"].as_str().expect("reason");
    assert!(reason.contains("--hip-trace"), "{reason}");
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&kernels),
        arg(Path::new("--fail-on-incomplete")),
    ]);
    run.expect_code(3);
    assert!(run.stdout.contains("UNAVAILABLE"), "{}", run.stdout);
}

#[test]
fn tables_of_two_runs_link_nothing_and_say_so() {
    // rocprofiler-sdk's documentation samples, read together as one run's tables:
    // kernel_trace.csv (7 dispatches) and hip_runtime_trace.csv (8 calls). Independent
    // reading (python3: `[r['Correlation_Id'] for r in csv.DictReader(f)]`): the dispatches
    // carry ids 1451-1550, the calls 1-8 (its one hipLaunchKernel is id 5) — two runs, so
    // every dispatch is an orphan and there is no linkage to judge.
    let csv = replay_coverage(&trace("rocprofiler-sdk/source/docs/data/kernel_trace.csv"));
    assert_eq!(csv["verdict"], "unavailable");
    assert_eq!(csv["orphan_kernels"], 7);
    let reason = csv["unavailable_reason"].as_str().expect("reason");
    assert!(reason.contains("none of the 7 GPU events"), "{reason}");
}
