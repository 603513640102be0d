//! Nsight Systems SQLite exports through `analyze`. No public export holds graph launches
//! (the four samples have none), so the replay tests write the database `nsys export --type
//! sqlite` would (schema 3.x tables and column names, ns timestamps, `_vNNNN` names, global
//! ids with the pid in bits 24–47) from the real piecewise vLLM trace — its kernels, copies,
//! runtime calls (renamed to their CUDA counterparts, correlation ids kept) and its step
//! annotation as an NVTX range — and check that the database gives the replay numbers the
//! JSON gives; then with the kernels of two replays deleted (the symptom), and as a file
//! recorded with `--cuda-graph-trace=graph`, whose replays are whole-graph records.

use crate::common::{
    VLLM_PIECEWISE, analyzed_file, arg, assert_same_replays, incomplete_piecewise, stepscope,
    tempdir, trace,
};
use rusqlite::{Connection, params};
use serde_json::Value;
use std::path::{Path, PathBuf};

const H100: &str = "nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite";

/// A Kineto trace's events (gzip JSON).
fn kineto_events(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).expect("read");
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        use std::io::Read;
        let mut out = String::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_string(&mut out)
            .expect("gunzip");
        out
    } else {
        String::from_utf8(bytes).expect("UTF-8")
    };
    let mut doc: Value = serde_json::from_str(&text).expect("JSON");
    match doc["traceEvents"].take() {
        Value::Array(events) => events,
        _ => panic!("no traceEvents in {}", path.display()),
    }
}

/// Nanoseconds from Kineto's microseconds.
fn ns(us: &Value) -> i64 {
    (us.as_f64().unwrap_or(0.0) * 1000.0).round() as i64
}

fn int(value: &Value) -> i64 {
    value.as_i64().unwrap_or(0)
}

/// The CUDA name Nsight would write for a HIP call of the trace, and its event class
/// (0 runtime, 1 driver).
fn cuda_name(hip: &str) -> (String, i64) {
    let known = match hip {
        "hipGraphLaunch" => Some(("cudaGraphLaunch_v10000", 0)),
        "hipLaunchKernel" => Some(("cudaLaunchKernel_v7000", 0)),
        "hipModuleLaunchKernel" | "hipExtModuleLaunchKernel" => Some(("cuLaunchKernel", 1)),
        "hipPointerGetAttribute" => Some(("cuPointerGetAttribute", 1)),
        "hipStreamIsCapturing" => Some(("cudaStreamIsCapturing_v10000", 0)),
        "hipGetDevicePropertiesR0600" => Some(("cudaGetDeviceProperties_v12000", 0)),
        _ => None,
    };
    match known {
        Some((name, class)) => (name.to_owned(), class),
        None => (format!("cuda{}_v3020", hip.trim_start_matches("hip")), 0),
    }
}

/// Nsight's serialized global ids: host 1 in bits 48 and up, pid in 24–47, tid in 0–23.
fn global_pid(pid: i64) -> i64 {
    (1 << 48) | (pid << 24)
}

const SCHEMA: &str = r#"
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
    eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
    returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
    deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
    streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
    launchType INTEGER, graphNodeId INTEGER, graphId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
    deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
    correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, "end" INTEGER, eventType INTEGER NOT NULL,
    rangeId INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
    domainId INTEGER);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.25.0');
"#;

/// Writes the Nsight export of a Kineto trace to `path`, recorded with
/// `--cuda-graph-trace=node` (every replay's kernels under its launch's correlation id).
pub(crate) fn nsys_export(kineto: &Path, path: &Path) -> PathBuf {
    let mut db = Connection::open(path).expect("create");
    db.execute_batch(SCHEMA).expect("schema");
    let events = kineto_events(kineto);
    // One process: the one of the runtime calls (Kineto files GPU work under device lanes).
    let pid = events
        .iter()
        .find(|e| e["cat"] == "cuda_runtime")
        .map_or(0, |e| int(&e["pid"]));
    let tx = db.transaction().expect("transaction");
    let mut strings = Strings::default();
    for event in &events {
        let row = Row {
            start: ns(&event["ts"]),
            end: ns(&event["ts"]) + ns(&event["dur"]),
            correlation: int(&event["args"]["correlation"]),
            global_pid: global_pid(pid),
        };
        match event["cat"].as_str().unwrap_or_default() {
            "kernel" | "gpu_memcpy" => insert_gpu_row(&tx, &mut strings, event, &row),
            "cuda_runtime" | "cuda_driver" | "user_annotation" => {
                insert_host_row(&tx, &mut strings, event, &row);
            }
            _ => {}
        }
    }
    tx.execute(
        "INSERT INTO PROCESSES VALUES (?1, ?2, 'python3')",
        params![global_pid(pid), pid],
    )
    .expect("process");
    tx.execute(
        "INSERT INTO META_DATA_CAPTURE VALUES ('CUDA_GRAPH_TRACE_OPTIONS:MODE', 'Node')",
        [],
    )
    .expect("capture settings");
    tx.commit().expect("commit");
    path.to_owned()
}

/// What every row of an event has.
struct Row {
    start: i64,
    end: i64,
    correlation: i64,
    /// The process's `globalPid`.
    global_pid: i64,
}

/// A kernel or a copy as a CUPTI table row.
fn insert_gpu_row(db: &Connection, strings: &mut Strings, event: &Value, row: &Row) {
    let args = &event["args"];
    let name = event["name"].as_str().unwrap_or_default();
    if event["cat"] == "kernel" {
        let name = strings.id(db, name);
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, \"end\", deviceId, contextId,
             streamId, correlationId, globalPid, demangledName, shortName, launchType)
             VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?7, 1)",
            params![
                row.start,
                row.end,
                int(&args["device"]),
                int(&args["stream"]),
                row.correlation,
                row.global_pid,
                name
            ],
        )
        .expect("kernel");
        return;
    }
    let kind = [("HtoD", 1), ("DtoH", 2), ("DtoD", 8)]
        .into_iter()
        .find(|(direction, _)| name.contains(direction))
        .map_or(0, |(_, kind)| kind);
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8)",
        params![
            row.start,
            row.end,
            int(&args["device"]),
            int(&args["stream"]),
            row.correlation,
            row.global_pid,
            int(&args["bytes"]),
            kind
        ],
    )
    .expect("memcpy");
}

/// A runtime call as a CUPTI runtime row, a user annotation as an NVTX push/pop range
/// (event type 59) with its text inline; both on the event's own thread.
fn insert_host_row(db: &Connection, strings: &mut Strings, event: &Value, row: &Row) {
    let tid = global_pid(int(&event["pid"])) | int(&event["tid"]);
    let name = event["name"].as_str().unwrap_or_default();
    if event["cat"] == "user_annotation" {
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId)
             VALUES (?1, ?2, 59, ?3, ?4, 0)",
            params![row.start, row.end, name, tid],
        )
        .expect("range");
        return;
    }
    let (name, class) = cuda_name(name);
    let name = strings.id(db, &name);
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, NULL)",
        params![row.start, row.end, class, tid, row.correlation, name],
    )
    .expect("runtime");
}

/// `StringIds`, filled as names come.
#[derive(Default)]
struct Strings(std::collections::HashMap<String, i64>);

impl Strings {
    fn id(&mut self, db: &Connection, value: &str) -> i64 {
        let next = self.0.len() as i64 + 1;
        *self.0.entry(value.to_owned()).or_insert_with(|| {
            db.execute(
                "INSERT INTO StringIds VALUES (?1, ?2)",
                params![next, value],
            )
            .expect("string");
            next
        })
    }
}

/// Correlation ids of the graph launches in the database, in launch order.
fn graph_launches(db: &Connection) -> Vec<i64> {
    let mut statement = db
        .prepare(
            "SELECT r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s
             ON s.id = r.nameId WHERE s.value = 'cudaGraphLaunch_v10000' ORDER BY r.start",
        )
        .expect("query");
    statement
        .query_map([], |row| row.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("ids")
}

/// Turns a node-mode export into what `--cuda-graph-trace=graph` records: one
/// `CUPTI_ACTIVITY_KIND_GRAPH_TRACE` row per replay (from its first kernel's start to its
/// last kernel's end), no kernel rows for the replays' nodes, and `MODE = Graph`.
fn as_graph_mode(db: &Connection) {
    db.execute_batch(
        r#"
        CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL,
            "end" INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
            greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,
            globalPid INTEGER, graphId INTEGER NOT NULL, graphExecId INTEGER NOT NULL);
        CREATE TEMP TABLE launches AS SELECT r.correlationId AS id
            FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
            WHERE s.value = 'cudaGraphLaunch_v10000';
        INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE
            SELECT MIN(start), MAX("end"), deviceId, contextId, NULL, streamId, correlationId,
                globalPid, 1, 1
            FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId IN (SELECT id FROM launches)
            GROUP BY correlationId;
        DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId IN (SELECT id FROM launches);
        UPDATE META_DATA_CAPTURE SET value = 'Graph' WHERE name = 'CUDA_GRAPH_TRACE_OPTIONS:MODE';
        "#,
    )
    .expect("graph mode");
}

/// `analyze --json` of one file (exit 0): its replay coverage and its steps.
fn analyze(path: &Path) -> (Value, Value) {
    let file = analyzed_file(path);
    (file["replay_coverage"].clone(), file["steps"].clone())
}

#[test]
fn replays_read_from_an_nsight_export_match_the_same_run_read_from_json() {
    let dir = tempdir();
    let db = nsys_export(&trace(VLLM_PIECEWISE), &dir.path().join("run.sqlite"));
    let (nsys, nsys_steps) = analyze(&db);
    let (json, json_steps) = analyze(&trace(VLLM_PIECEWISE));
    // testdata/SOURCES.md: 25 replays of 3 graphs (4 + 23 × 15 + 12 kernels), none short.
    assert_eq!(nsys["replays"], 25);
    assert_eq!(nsys["recorded_nodes"], 4 + 23 * 15 + 12);
    assert_same_replays(&nsys, &json);
    assert!(nsys["unavailable_reason"].is_null());
    // The vLLM step annotation, an NVTX range in the export, is the step.
    assert_eq!(nsys_steps, json_steps);
    assert_eq!(nsys_steps["framework"], "vllm");
    // `--format nsys-sqlite` reads the same; `--format kineto-json` refuses the database.
    let forced = stepscope([
        "analyze",
        db.to_str().expect("path"),
        "--format",
        "nsys-sqlite",
        "--json",
        "--no-progress",
    ]);
    forced.expect_code(0);
    assert_same_replays(&forced.json()["files"][0]["replay_coverage"], &nsys);
}

#[test]
fn replays_whose_kernels_were_deleted_from_an_nsight_export_fail_the_gate() {
    let dir = tempdir();
    let path = nsys_export(&trace(VLLM_PIECEWISE), &dir.path().join("run.sqlite"));
    let db = Connection::open(&path).expect("open");
    let launches = graph_launches(&db);
    assert_eq!(launches.len(), 25);
    // The 6th and 7th launches, both of the 15-kernel graph, as `incomplete_piecewise`
    // removes from the JSON.
    let deleted = db
        .execute(
            "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId IN (?1, ?2)",
            params![launches[5], launches[6]],
        )
        .expect("delete");
    assert_eq!(deleted, 30);
    drop(db);
    let (nsys, _) = analyze(&path);
    assert_eq!(nsys["verdict"], "incomplete");
    assert_eq!(
        nsys["empty_replays"], 2,
        "the two replays whose kernels were deleted"
    );
    let json = incomplete_piecewise(dir.path(), "incomplete.json");
    assert_same_replays(&nsys, &analyze(&json).0);
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&path),
        arg(Path::new("--fail-on-incomplete")),
    ]);
    run.expect_code(3);
}

#[test]
fn an_export_of_whole_graph_records_cannot_show_replays() {
    // `--cuda-graph-trace=graph` (Nsight's default): each replay one record, its kernels not
    // recorded. "incomplete" (25 empty replays) would be the wrong answer: the verdict is
    // `unavailable`, with how to record a file that can show them.
    let dir = tempdir();
    let path = nsys_export(&trace(VLLM_PIECEWISE), &dir.path().join("graph.sqlite"));
    let db = Connection::open(&path).expect("open");
    as_graph_mode(&db);
    let records: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
            [],
            |row| row.get(0),
        )
        .expect("count");
    assert_eq!(records, 25);
    drop(db);
    let (nsys, _) = analyze(&path);
    assert_eq!(nsys["verdict"], "unavailable");
    let reason = nsys["unavailable_reason"].as_str().expect("reason");
    assert!(reason.contains("--cuda-graph-trace=node"), "{reason}");
    assert!(reason.contains("25 graph replays"), "{reason}");
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&path),
        arg(Path::new("--fail-on-incomplete")),
    ]);
    run.expect_code(3);
    assert!(run.stdout.contains("UNAVAILABLE"), "{}", run.stdout);
}

#[test]
fn the_graph_setting_alone_does_not_make_replays_unavailable() {
    // MODE = Graph, yet every replay's kernels are in the file (recorded by node): the
    // replays are judged as usual.
    let dir = tempdir();
    let path = nsys_export(&trace(VLLM_PIECEWISE), &dir.path().join("run.sqlite"));
    let db = Connection::open(&path).expect("open");
    db.execute(
        "UPDATE META_DATA_CAPTURE SET value = 'Graph' WHERE name = 'CUDA_GRAPH_TRACE_OPTIONS:MODE'",
        [],
    )
    .expect("update");
    drop(db);
    let (nsys, _) = analyze(&path);
    assert!(nsys["unavailable_reason"].is_null());
    assert_same_replays(&nsys, &analyze(&trace(VLLM_PIECEWISE)).0);
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn kernels_of_two_processes_link_only_to_their_own_process_calls() {
    // The real h100 sample: two python3 processes (pids 111, 112), MODE = Graph and no graph
    // launch. Per process (sqlite3):
    //   SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (SELECT 1 FROM
    //   CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId AND
    //   ((r.globalTid >> 24) & 16777215) = ((k.globalPid >> 24) & 16777215)) → 1810
    // (on correlationId alone: 1799, 11 kernels matching the other process's calls), and
    // the same on CUPTI_ACTIVITY_KIND_MEMCPY → 466 (memsets: 0).
    let path = trace(H100);
    let run = stepscope([
        "analyze",
        path.to_str().expect("path"),
        "--json",
        "--no-progress",
    ]);
    run.expect_code(0);
    let file = &run.json()["files"][0];
    let coverage = &file["replay_coverage"];
    assert_eq!(coverage["orphan_kernels"], 1810);
    assert_eq!(coverage["orphan_transfers"], 466);
    // No graph launch: the setting alone does not make the file unavailable; the normal
    // verdict applies. The file is a 1 s slice of a longer run (nsys-ai's
    // derive_test_fixture.py keeps rows with start and end inside the window), and the GPU
    // runs ~420 ms behind the host, so the launches of the last part have no GPU work:
    //   WITH g AS (SELECT correlationId c, (globalPid>>24)&16777215 p FROM
    //   CUPTI_ACTIVITY_KIND_KERNEL UNION ALL (the same from MEMCPY and MEMSET))
    //   SELECT s.value, COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON
    //   s.id = r.nameId WHERE (s.value LIKE 'cudaLaunch%' OR s.value LIKE 'cudaMemcpy%' OR
    //   s.value LIKE 'cudaMemset%') AND NOT EXISTS (SELECT 1 FROM g WHERE
    //   g.c = r.correlationId AND g.p = ((r.globalTid>>24)&16777215)) GROUP BY s.value
    //   → cudaLaunchKernel_v7000 1452, cudaLaunchKernelExC_v11060 262,
    //     cudaMemcpyAsync_v3020 476, cudaMemsetAsync_v3020 90: 2280 in all
    // — which the analysis reports as GPU recording that stopped.
    assert!(coverage["unavailable_reason"].is_null());
    assert_eq!(coverage["replays"], 0);
    assert_eq!(coverage["verdict"], "incomplete");
    let pattern = &coverage["patterns"][0];
    assert_eq!(pattern["pattern"], "recording_stopped");
    assert_eq!(pattern["eager_after"], 2280);
    assert_eq!(file["platform"], "cuda");
}

#[test]
fn rows_with_negative_times_are_refused_as_the_other_readers_refuse_them() {
    // Three kernels outside any replay with a negative start (one also with a negative end):
    // read as times they were, the file's GPU time grows by seconds. Every reader refuses a
    // span that starts before 0 or ends before it starts and names it as damage; the kernels
    // are outside every replay, so the verdict stands.
    let dir = tempdir();
    let path = nsys_export(&trace(VLLM_PIECEWISE), &dir.path().join("run.sqlite"));
    let (before, _) = analyze(&path);
    let gpu_time = |file: &Value| file["recorded_gpu_time_us"].as_f64().expect("gpu time");
    let db = Connection::open(&path).expect("open");
    let changed = db
        .execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -7000000000, \
             \"end\" = CASE WHEN rowid % 2 = 0 THEN -1 ELSE \"end\" END \
             WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL \
             WHERE graphId IS NULL OR graphId = 0 ORDER BY start LIMIT 3)",
            [],
        )
        .expect("update");
    assert_eq!(changed, 3);
    drop(db);
    let run = stepscope([
        "analyze",
        path.to_str().expect("path"),
        "--json",
        "--no-progress",
    ]);
    run.expect_code(0);
    let file = &run.json()["files"][0];
    let refused = &file["damage"]["refused_events"];
    let count = |kind: &str| refused[kind].as_u64().unwrap_or(0);
    assert_eq!(
        count("invalid_time") + count("negative_duration"),
        3,
        "{refused}"
    );
    let after = &file["replay_coverage"];
    assert!(
        gpu_time(after) < gpu_time(&before),
        "the refused kernels are not counted: {} µs before, {} µs after",
        gpu_time(&before),
        gpu_time(after)
    );
}
