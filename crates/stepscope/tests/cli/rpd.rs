//! rocmProfileData (RPD) through `analyze`. The public RPD sample has no graph launches, so
//! the replay tests write the database rpdTracer would (its tables and columns, ns
//! timestamps, `rocpd_api_ops` linking each call to its ops) from the real piecewise vLLM
//! trace — its kernels and its HIP runtime calls, a `hipGraphLaunch` linked to every kernel
//! of its replay — and check that the RPD run gives the replay numbers the JSON gives; then
//! with the ops of two launches deleted from the database (the symptom).

use crate::common::{
    VLLM_PIECEWISE, arg, assert_same_replays, replay_coverage, stepscope, tempdir, trace,
};
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};
use stepscope_synth::formats::{Parts, rpd_json, write_rpd};
use stepscope_synth::removal::read_json;

const SAMPLE: &str = "rocmprofiledata/examples/rocm-profile-data/results/matmul_result.rpd";

/// An RPD database of the Kineto trace at `kineto` (see `stepscope_synth::formats`).
fn rpd_from_kineto(kineto: &Path, path: &Path) -> PathBuf {
    let parts = Parts::of_kineto(&read_json(kineto).expect("trace"));
    write_rpd(&parts, path).expect("rpd");
    path.to_owned()
}

#[test]
fn replays_read_from_rpd_match_the_same_run_read_from_json() {
    let dir = tempdir();
    let rpd = rpd_from_kineto(&trace(VLLM_PIECEWISE), &dir.path().join("run.rpd"));
    let from_rpd = replay_coverage(&rpd);
    // MANIFEST.md: 25 replays of 3 graphs (23 × 15 kernels, 12, 4).
    assert_eq!(from_rpd["replays"], 25);
    assert_eq!(from_rpd["recorded_nodes"], 23 * 15 + 12 + 4);
    assert_same_replays(&from_rpd, &replay_coverage(&trace(VLLM_PIECEWISE)));
}

#[test]
fn replays_whose_ops_were_deleted_from_the_rpd_fail_the_gate() {
    let dir = tempdir();
    let rpd = rpd_from_kineto(&trace(VLLM_PIECEWISE), &dir.path().join("run.rpd"));
    // Delete every op of the 3rd and 10th hipGraphLaunch (in host start order).
    let conn = Connection::open(&rpd).expect("open");
    let launches: Vec<i64> = conn
        .prepare("SELECT a.id FROM rocpd_api a JOIN rocpd_string s ON s.id = a.apiName_id WHERE s.string = 'hipGraphLaunch' ORDER BY a.start")
        .expect("query")
        .query_map([], |row| row.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("ids");
    assert_eq!(launches.len(), 25);
    for launch in [launches[2], launches[9]] {
        conn.execute(
            "DELETE FROM rocpd_op WHERE id IN (SELECT op_id FROM rocpd_api_ops WHERE api_id = ?1)",
            [launch],
        )
        .expect("delete");
    }
    drop(conn);
    let c = replay_coverage(&rpd);
    assert_eq!(c["verdict"], "incomplete");
    assert_eq!(c["empty_replays"], 2);
    assert_eq!(c["recorded_replays"], 23);
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&rpd),
        arg(Path::new("--fail-on-incomplete")),
    ]);
    run.expect_code(3);
}

#[test]
fn the_rpd_sample_is_analysed_and_has_no_replays() {
    // 29 kernels, 55 copies, 1 fill, 125 HIP calls, none a graph launch (see the ingest
    // test for the queries).
    let run = stepscope([
        "analyze",
        trace(SAMPLE).to_str().expect("path"),
        "--json",
        "--no-progress",
    ]);
    run.expect_code(0);
    let file = &run.json()["files"][0];
    assert_eq!(file["replay_coverage"]["verdict"], "no-replays");
    assert_eq!(file["events"]["kernels"], 29);
    assert_eq!(file["replay_coverage"]["orphan_kernels"], 0);
}

#[test]
fn an_rpd_cut_inside_its_ops_is_an_error_or_a_partial_report_when_allowed() {
    let dir = tempdir();
    let rpd = rpd_from_kineto(&trace(VLLM_PIECEWISE), &dir.path().join("run.rpd"));
    let bytes = std::fs::read(&rpd).expect("read");
    let cut = dir.path().join("cut.rpd");
    // The schema is on the first page; the cut loses the last third of the table pages.
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).expect("write");
    let failed = stepscope(["analyze", cut.to_str().expect("path"), "--no-progress"]);
    failed.expect_code(2);
    assert!(failed.stderr.contains("cut.rpd"), "{}", failed.stderr);
    // SQLite refuses a file shorter than its header's page count outright; the hint says
    // what reads the rows the cut left.
    assert!(
        failed.stderr.contains("cut short or corrupt"),
        "{}",
        failed.stderr
    );
    assert!(
        failed.stderr.contains("--allow-truncated"),
        "{}",
        failed.stderr
    );
    let partial = stepscope([
        "analyze",
        cut.to_str().expect("path"),
        "--no-progress",
        "--json",
        "--allow-truncated",
    ]);
    partial.expect_code(0);
    let doc = partial.json();
    assert_eq!(doc["partial"], true, "{doc}");
    let file = &doc["files"][0];
    let broke = file["import"]["counters"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "sqlite_read_broke_off"))
        .and_then(|c| c["count"].as_u64());
    assert!(broke >= Some(1), "{file}");
    // Only rows before the cut: fewer kernels than the whole run's 413.
    assert!(file["events"]["kernels"].as_u64() < Some(413), "{file}");
}

const SAMPLE_JSON: &str = "rocmprofiledata/examples/rocm-profile-data/results/matmul_result.json";

#[test]
fn the_rpd2tracing_sample_reads_as_rpd_not_as_an_empty_kineto_trace() {
    // python3 (json.load): 706 entries; X on pid "2" (process_name "GPU2"): 85 ops, by
    // args.desc KernelExecution 29, CopyDeviceToHost 53, CopyHostToDevice 2, FillBuffer 1,
    // sum(int(dur)) = 183859 µs; X elsewhere: 125 HIP calls; 85 `api_op` flows, each s
    // inside one HIP call and each f at one GPU op's ts: 85 of 85 ops linked.
    let run = stepscope([
        "analyze",
        trace(SAMPLE_JSON).to_str().expect("path"),
        "--json",
        "--no-progress",
    ]);
    run.expect_code(0);
    let file = &run.json()["files"][0];
    assert_eq!(file["events"]["kernels"], 29);
    assert_eq!(file["events"]["memcpys"], 55);
    assert_eq!(file["events"]["memsets"], 1);
    assert_eq!(file["events"]["runtime_calls"], 125);
    assert_eq!(file["replay_coverage"]["orphan_kernels"], 0);
    assert_eq!(file["replay_coverage"]["orphan_transfers"], 0);
    assert_eq!(file["replay_coverage"]["verdict"], "no-replays");
    let gpu_us = file["replay_coverage"]["recorded_gpu_time_us"]
        .as_f64()
        .expect("time");
    assert!((gpu_us - 183_859.0).abs() < 0.5, "{gpu_us}");
}

/// rpd2tracing's array of the Kineto trace, without the kernels of the `skip`-th graph
/// launches (see `stepscope_synth::formats`).
fn rpd_json_from_kineto(kineto: &Path, skip: &[usize]) -> Value {
    let parts = Parts::of_kineto(&read_json(kineto).expect("trace"));
    rpd_json(&parts.without_replays(skip))
}

#[test]
fn replays_read_from_rpd2tracing_json_match_and_lost_kernels_fail_the_gate() {
    let dir = tempdir();
    let whole = dir.path().join("whole.json");
    let doc = rpd_json_from_kineto(&trace(VLLM_PIECEWISE), &[]);
    std::fs::write(&whole, serde_json::to_vec(&doc).expect("json")).expect("write");
    let c = replay_coverage(&whole);
    assert_eq!(c["replays"], 25);
    assert_eq!(c["recorded_replays"], 25);
    assert_eq!(c["recorded_nodes"], 23 * 15 + 12 + 4);
    assert_eq!(c["orphan_kernels"], 0);
    let cut = dir.path().join("lost.json");
    let doc = rpd_json_from_kineto(&trace(VLLM_PIECEWISE), &[4, 17]);
    std::fs::write(&cut, serde_json::to_vec(&doc).expect("json")).expect("write");
    let c = replay_coverage(&cut);
    assert_eq!(c["verdict"], "incomplete");
    assert_eq!(c["empty_replays"], 2);
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&cut),
        arg(Path::new("--fail-on-incomplete")),
    ]);
    run.expect_code(3);
}
