//! rocmProfileData (RPD) through `analyze`. The public RPD sample has no graph launches, so
//! the replay tests write the database rpdTracer would (its tables and columns, ns
//! timestamps, `rocpd_api_ops` linking each call to its ops) from the real piecewise vLLM
//! trace — its kernels and its HIP runtime calls, a `hipGraphLaunch` linked to every kernel
//! of its replay — and check that the RPD run gives the replay numbers the JSON gives; then
//! with the ops of two launches deleted from the database (the symptom).

use crate::common::{
    VLLM_PIECEWISE, analyzed_file, arg, assert_same_replays, f64_at, replay_coverage, stepscope,
    str_at, tempdir, trace,
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
    // testdata/SOURCES.md: 25 replays of 3 graphs (23 × 15 kernels, 12, 4).
    assert_eq!(from_rpd["replays"], 25);
    assert_eq!(from_rpd["recorded_nodes"], 23 * 15 + 12 + 4);
    assert_same_replays(&from_rpd, &replay_coverage(&trace(VLLM_PIECEWISE)));
}

/// One value of an SQL query over the database at `path`.
fn sql_i64(path: &Path, sql: &str) -> i64 {
    let conn = Connection::open(path).expect("open");
    conn.query_row(sql, [], |row| row.get(0)).expect(sql)
}

#[test]
fn graph_kernels_filed_as_task_ops_are_replay_nodes_and_gpu_time() {
    let dir = tempdir();
    let rpd = rpd_from_kineto(&trace(VLLM_PIECEWISE), &dir.path().join("run.rpd"));
    // SELECT s.string, count(*), sum(o.end - o.start) FROM rocpd_op o JOIN rocpd_string s
    //   ON s.id = o.opType_id GROUP BY 1 → KernelExecution 52 (6088751 ns), Task 361
    //   (149919755 ns): the graph kernels are Task ops, as ROCm's tracer files them.
    let tasks = "SELECT count(*) FROM rocpd_op o JOIN rocpd_string s ON s.id = o.opType_id WHERE s.string = 'Task'";
    assert_eq!(sql_i64(&rpd, tasks), 23 * 15 + 12 + 4);
    let file = analyzed_file(&rpd);
    assert_eq!(file["replay_coverage"]["recorded_nodes"], 23 * 15 + 12 + 4);
    assert_eq!(file["events"]["kernels"], 52 + 361);
    // Every op is read: the GPU time is the SQL sum over rocpd_op.
    let sum_ns = sql_i64(&rpd, "SELECT sum(end - start) FROM rocpd_op");
    let total_us = f64_at(&file, "/breakdown/total_gpu_time_us");
    assert!(
        (total_us * 1000.0 - sum_ns as f64).abs() < 1.0,
        "{total_us} µs vs {sum_ns} ns"
    );
    // The vLLM step annotation, stored as rpdTracer stores a ROCTx range (a UserMarker row,
    // the text in args), gives the step and its stage.
    assert_eq!(
        file["steps"]["counts"]["vllm:mixed"], 1,
        "{}",
        file["steps"]
    );
    assert_eq!(str_at(&file, "/breakdown/method"), "step_annotations");
}

#[test]
fn an_op_type_the_reader_does_not_know_is_counted_by_name_never_dropped() {
    let dir = tempdir();
    let rpd = rpd_from_kineto(&trace(VLLM_PIECEWISE), &dir.path().join("run.rpd"));
    let conn = Connection::open(&rpd).expect("open");
    conn.execute_batch(
        "INSERT INTO rocpd_string(string) VALUES ('FutureDispatch'), ('BarrierAnd'), ('my_future_kernel');
        INSERT INTO rocpd_op(gpuId, queueId, sequenceId, completionSignal, start, end, description_id, opType_id)
            SELECT 0, 0, 0, '', (SELECT max(end) FROM rocpd_op) + 1000, (SELECT max(end) FROM rocpd_op) + 3000, (SELECT id FROM rocpd_string WHERE string = 'my_future_kernel'),
                   (SELECT id FROM rocpd_string WHERE string = 'FutureDispatch');
        INSERT INTO rocpd_op(gpuId, queueId, sequenceId, completionSignal, start, end, description_id, opType_id)
            SELECT 0, 0, 0, '', (SELECT max(end) FROM rocpd_op) + 2000, (SELECT max(end) FROM rocpd_op) + 2500, (SELECT id FROM rocpd_string WHERE string = ''),
                   (SELECT id FROM rocpd_string WHERE string = 'FutureDispatch');
        INSERT INTO rocpd_op(gpuId, queueId, sequenceId, completionSignal, start, end, description_id, opType_id)
            SELECT 0, 0, 0, '', (SELECT max(end) FROM rocpd_op) + 3000, (SELECT max(end) FROM rocpd_op) + 7000, (SELECT id FROM rocpd_string WHERE string = ''),
                   (SELECT id FROM rocpd_string WHERE string = 'BarrierAnd');",
    )
    .expect("insert");
    drop(conn);
    let file = analyzed_file(&rpd);
    // Both FutureDispatch ops are counted under their type's name; the one with a name is
    // read as a kernel, the nameless one is not GPU work it could name.
    assert_eq!(
        file["import"]["unknown_categories"]["rpd opType FutureDispatch"], 2,
        "{}",
        file["import"]
    );
    assert_eq!(file["events"]["kernels"], 52 + 361 + 1);
    let counter = |name: &str| {
        file["import"]["counters"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == name))
            .and_then(|c| c["count"].as_u64())
    };
    assert_eq!(counter("rpd_unknown_op_types_read_as_kernels"), Some(1));
    assert_eq!(counter("rpd_unknown_op_types_not_read"), Some(1));
    assert_eq!(counter("rpd_barrier_ops"), Some(1));
    // GPU time: the SQL sum over the ops read as work (all but the barrier and the nameless
    // op of the unknown type).
    let read =
        "SELECT sum(o.end - o.start) FROM rocpd_op o JOIN rocpd_string t ON t.id = o.opType_id
        JOIN rocpd_string d ON d.id = o.description_id
        WHERE t.string NOT LIKE 'Barrier%' AND NOT (t.string = 'FutureDispatch' AND d.string = '')";
    let sum_ns = sql_i64(&rpd, read);
    let total_us = f64_at(&file, "/breakdown/total_gpu_time_us");
    assert!(
        (total_us * 1000.0 - sum_ns as f64).abs() < 1.0,
        "{total_us} µs vs {sum_ns} ns"
    );
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

#[test]
fn a_range_pushed_through_the_tracers_own_api_is_a_step_annotation() {
    // rpdTracer's `rangePush(domain, name, args)` stores the name as the row's apiName: the
    // step annotation written so (the UserMarker row renamed to its message, args emptied)
    // still gives the step.
    let dir = tempdir();
    let rpd = rpd_from_kineto(&trace(VLLM_PIECEWISE), &dir.path().join("run.rpd"));
    let conn = Connection::open(&rpd).expect("open");
    let changed = conn
        .execute(
            "UPDATE rocpd_api SET apiName_id = args_id, args_id = (SELECT id FROM rocpd_string WHERE string = '')
             WHERE apiName_id = (SELECT id FROM rocpd_string WHERE string = 'UserMarker')",
            [],
        )
        .expect("update");
    assert_eq!(changed, 1);
    drop(conn);
    let file = analyzed_file(&rpd);
    assert_eq!(
        file["steps"]["counts"]["vllm:mixed"], 1,
        "{}",
        file["steps"]
    );
    assert_eq!(file["events"]["runtime_calls"], 381);
}
