//! rocmProfileData (RPD) through `analyze`. The public RPD sample has no graph launches, so
//! the replay tests write the database rpdTracer would (its tables and columns, ns
//! timestamps, `rocpd_api_ops` linking each call to its ops) from the real piecewise vLLM
//! trace — its kernels and its HIP runtime calls, a `hipGraphLaunch` linked to every kernel
//! of its replay — and check that the RPD run gives the replay numbers the JSON gives; then
//! with the ops of two launches deleted from the database (the symptom).

use crate::common::{VLLM_PIECEWISE, arg, kineto_events, ns, stepscope, tempdir, trace};
use rusqlite::{Connection, params};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const SAMPLE: &str = "rocmprofiledata/examples/rocm-profile-data/results/matmul_result.rpd";

const SCHEMA: &str = "
CREATE TABLE rocpd_string(id integer NOT NULL PRIMARY KEY AUTOINCREMENT, string varchar(4096) NOT NULL);
CREATE TABLE rocpd_api(id integer NOT NULL PRIMARY KEY AUTOINCREMENT, pid integer NOT NULL, tid integer NOT NULL,
    start integer NOT NULL, end integer NOT NULL, apiName_id integer NOT NULL, args_id integer NOT NULL);
CREATE TABLE rocpd_op(id integer NOT NULL PRIMARY KEY AUTOINCREMENT, gpuId integer NOT NULL, queueId integer NOT NULL,
    sequenceId integer NOT NULL, completionSignal varchar(18) NOT NULL, start integer NOT NULL,
    end integer NOT NULL, description_id integer NOT NULL, opType_id integer NOT NULL);
CREATE TABLE rocpd_api_ops(id integer NOT NULL PRIMARY KEY AUTOINCREMENT, api_id integer NOT NULL, op_id integer NOT NULL);
CREATE TABLE rocpd_metadata(id integer NOT NULL PRIMARY KEY AUTOINCREMENT, tag varchar(4096) NOT NULL, value varchar(4096) NOT NULL);
INSERT INTO rocpd_metadata(tag, value) VALUES ('schema_version', '2');
";

/// Interns strings as rpdTracer does (`rocpd_string`).
struct Strings<'c> {
    conn: &'c Connection,
    ids: HashMap<String, i64>,
}

impl Strings<'_> {
    fn id(&mut self, text: &str) -> i64 {
        if let Some(id) = self.ids.get(text) {
            return *id;
        }
        self.conn
            .execute("INSERT INTO rocpd_string(string) VALUES (?1)", [text])
            .expect("string");
        let id = self.conn.last_insert_rowid();
        self.ids.insert(text.to_owned(), id);
        id
    }
}

fn category(event: &Value) -> String {
    event["cat"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// An RPD database of the Kineto trace's HIP calls and kernels: each call's id is its
/// correlation id, each kernel linked to the call of its correlation.
fn rpd_from_kineto(kineto: &Path, path: &Path) -> PathBuf {
    let conn = Connection::open(path).expect("create");
    conn.execute_batch(SCHEMA).expect("schema");
    conn.execute_batch("BEGIN").expect("begin");
    let mut strings = Strings {
        conn: &conn,
        ids: HashMap::new(),
    };
    let empty = strings.id("");
    for event in kineto_events(kineto) {
        let start = ns(&event["ts"]);
        let end = start + ns(&event["dur"]);
        let correlation = event["args"]["correlation"].as_i64().unwrap_or(0);
        match category(&event).as_str() {
            "cuda_runtime" | "cuda_driver" => {
                let name = strings.id(event["name"].as_str().unwrap_or_default());
                let (pid, tid) = (event["pid"].as_i64(), event["tid"].as_i64());
                conn.execute(
                    "INSERT INTO rocpd_api(id, pid, tid, start, end, apiName_id, args_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![correlation, pid.unwrap_or(1), tid.unwrap_or(1), start, end, name, empty],
                )
                .expect("api");
            }
            "kernel" => {
                let name = strings.id(event["name"].as_str().unwrap_or_default());
                let kind = strings.id("KernelExecution");
                conn.execute(
                    "INSERT INTO rocpd_op(gpuId, queueId, sequenceId, completionSignal, start, end, description_id, opType_id) VALUES (?1, ?2, 0, '', ?3, ?4, ?5, ?6)",
                    params![event["args"]["device"].as_i64().unwrap_or(0), event["tid"].as_i64().unwrap_or(0), start, end, name, kind],
                )
                .expect("op");
                let op = conn.last_insert_rowid();
                conn.execute(
                    "INSERT INTO rocpd_api_ops(api_id, op_id) VALUES (?1, ?2)",
                    params![correlation, op],
                )
                .expect("api_ops");
            }
            _ => {}
        }
    }
    conn.execute_batch("COMMIT").expect("commit");
    path.to_owned()
}

fn coverage(path: &Path) -> Value {
    let run = stepscope([
        "analyze",
        path.to_str().expect("path"),
        "--json",
        "--no-progress",
    ]);
    run.expect_code(0);
    run.json()["files"][0]["replay_coverage"].clone()
}

#[track_caller]
fn assert_same(rpd: &Value, json: &Value) {
    for key in [
        "verdict",
        "replays",
        "recorded_replays",
        "complete_replays",
        "empty_replays",
        "short_replays",
        "recorded_nodes",
    ] {
        assert_eq!(rpd[key], json[key], "{key}");
    }
}

#[test]
fn replays_read_from_rpd_match_the_same_run_read_from_json() {
    let dir = tempdir();
    let rpd = rpd_from_kineto(&trace(VLLM_PIECEWISE), &dir.path().join("run.rpd"));
    let from_rpd = coverage(&rpd);
    // MANIFEST.md: 25 replays of 3 graphs (23 × 15 kernels, 12, 4).
    assert_eq!(from_rpd["replays"], 25);
    assert_eq!(from_rpd["recorded_nodes"], 23 * 15 + 12 + 4);
    assert_same(&from_rpd, &coverage(&trace(VLLM_PIECEWISE)));
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
    let c = coverage(&rpd);
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

/// rpd2tracing's array for a Kineto trace: the GPU on process "GPU0", its queue a thread;
/// HIP calls on their threads; one `api_op` flow per call–kernel pair (`s` 2 µs before an
/// asynchronous call's end, `f` at the kernel's start), ids counting from 1. Times in whole
/// µs as strings, as rpd2tracing writes them. Kernels of `skip` launches (by host order
/// among graph launches) are left out.
fn rpd_json_from_kineto(kineto: &Path, skip: &[usize]) -> Vec<Value> {
    let events = kineto_events(kineto);
    let whole = |us: &Value| (ns(us) / 1000).to_string();
    let mut calls: HashMap<i64, (String, String, String, String)> = HashMap::new();
    let mut graph_launches: Vec<(i64, i64)> = Vec::new();
    let mut out = vec![
        serde_json::json!({}),
        serde_json::json!({"name": "process_name", "ph": "M", "pid": "900", "args": {"name": "GPU0"}}),
    ];
    for e in &events {
        if matches!(category(e).as_str(), "cuda_runtime" | "cuda_driver") {
            let (pid, tid) = (e["pid"].to_string(), e["tid"].to_string());
            let correlation = e["args"]["correlation"].as_i64().unwrap_or(0);
            let end_us = (ns(&e["ts"]) + ns(&e["dur"])) / 1000;
            calls.insert(
                correlation,
                (
                    pid.clone(),
                    tid.clone(),
                    (end_us - 2).to_string(),
                    whole(&e["ts"]),
                ),
            );
            if e["name"]
                .as_str()
                .is_some_and(|n| n.contains("GraphLaunch"))
            {
                graph_launches.push((ns(&e["ts"]), correlation));
            }
            out.push(serde_json::json!({"pid": pid, "tid": tid, "name": e["name"], "ts": whole(&e["ts"]), "dur": whole(&e["dur"]), "ph": "X", "args": {"desc": ""}}));
        }
    }
    graph_launches.sort_unstable();
    let skipped: Vec<i64> = skip.iter().map(|i| graph_launches[*i].1).collect();
    let mut flow = 0;
    for e in &events {
        if category(e) != "kernel" {
            continue;
        }
        let correlation = e["args"]["correlation"].as_i64().unwrap_or(0);
        if skipped.contains(&correlation) {
            continue;
        }
        let queue = e["tid"].to_string();
        out.push(serde_json::json!({"pid": "900", "tid": queue, "name": e["name"], "ts": whole(&e["ts"]), "dur": whole(&e["dur"]), "ph": "X", "args": {"desc": "KernelExecution"}}));
        if let Some((pid, tid, s_ts, start)) = calls.get(&correlation) {
            flow += 1;
            let at = s_ts
                .parse::<i64>()
                .unwrap_or(0)
                .min(whole(&e["ts"]).parse().unwrap_or(0))
                .max(start.parse().unwrap_or(0));
            out.push(serde_json::json!({"pid": pid, "tid": tid, "ts": at.to_string(), "cat": "api_op", "name": "api_op", "ph": "s", "id": flow.to_string()}));
            out.push(serde_json::json!({"pid": "900", "tid": queue, "ts": whole(&e["ts"]), "cat": "api_op", "name": "api_op", "ph": "f", "id": flow.to_string(), "bp": "e"}));
        }
    }
    out
}

#[test]
fn replays_read_from_rpd2tracing_json_match_and_lost_kernels_fail_the_gate() {
    let dir = tempdir();
    let whole = dir.path().join("whole.json");
    let doc = rpd_json_from_kineto(&trace(VLLM_PIECEWISE), &[]);
    std::fs::write(&whole, serde_json::to_vec(&doc).expect("json")).expect("write");
    let c = coverage(&whole);
    assert_eq!(c["replays"], 25);
    assert_eq!(c["recorded_replays"], 25);
    assert_eq!(c["recorded_nodes"], 23 * 15 + 12 + 4);
    assert_eq!(c["orphan_kernels"], 0);
    let cut = dir.path().join("lost.json");
    let doc = rpd_json_from_kineto(&trace(VLLM_PIECEWISE), &[4, 17]);
    std::fs::write(&cut, serde_json::to_vec(&doc).expect("json")).expect("write");
    let c = coverage(&cut);
    assert_eq!(c["verdict"], "incomplete");
    assert_eq!(c["empty_replays"], 2);
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&cut),
        arg(Path::new("--fail-on-incomplete")),
    ]);
    run.expect_code(3);
}
