//! rocprofv3's SQLite database (rocpd) through `analyze`. No public rocpd database holds
//! graph replays, so the tests write the database rocprofv3 would (its tables as the 3.0.x
//! and 4.1.0 schemas define them, UUID-suffixed with views, see
//! `stepscope_synth::rocpd`) from the real piecewise vLLM trace — its HIP calls, its kernels
//! and its step annotation as a ROCTx range — and check that every layout gives the numbers
//! the Kineto JSON gives, then the symptom and the damage the other formats' tests make.

use crate::common::{
    VLLM_PIECEWISE, analyzed_file, arg, assert_same_replays, f64_at, piecewise_replay_kernels,
    replay_coverage, stepscope, str_at, tempdir, trace,
};
use crate::damage_matrix::gated;
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};
use stepscope_synth::formats::Parts;
use stepscope_synth::rocpd::{RocpdOptions, RocpdSchema, write_rocpd};

const UUID: &str = "0199a2b4_6c1e_7f3a_9d2b_5e8c4f1a7b30";

/// The parts of the real piecewise trace.
fn piecewise() -> Parts {
    let doc: Value = serde_json::from_slice(&crate::common::gunzip(VLLM_PIECEWISE)).expect("JSON");
    Parts::of_kineto(&doc)
}

/// `parts` moved `ns` later.
fn shifted(parts: &Parts, ns: i64) -> Parts {
    let mut moved = parts.clone();
    for c in &mut moved.calls {
        (c.start, c.end) = (c.start + ns, c.end + ns);
    }
    for k in &mut moved.kernels {
        (k.start, k.end) = (k.start + ns, k.end + ns);
    }
    for m in &mut moved.markers {
        (m.start, m.end) = (m.start + ns, m.end + ns);
    }
    moved
}

fn write(parts: &Parts, path: PathBuf, options: &RocpdOptions) -> PathBuf {
    write_rocpd(parts, &path, options).expect("rocpd");
    path
}

/// One value of an SQL query over the database at `path`.
fn sql_i64(path: &Path, sql: &str) -> i64 {
    let conn = Connection::open(path).expect("open");
    conn.query_row(sql, [], |row| row.get(0)).expect(sql)
}

#[test]
fn every_layout_gives_the_replays_steps_and_time_of_the_json() {
    let dir = tempdir();
    let json = replay_coverage(&trace(VLLM_PIECEWISE));
    let layouts = [
        (RocpdSchema::V3, true),
        (RocpdSchema::V3, false),
        (RocpdSchema::V4, true),
        (RocpdSchema::V4, false),
    ];
    for (i, (schema, views)) in layouts.into_iter().enumerate() {
        let options = RocpdOptions {
            schema,
            views,
            ..RocpdOptions::default()
        };
        let db = write(
            &piecewise(),
            dir.path().join(format!("{i}_results.db")),
            &options,
        );
        let file = analyzed_file(&db);
        let label = format!("{schema:?}, views {views}");
        assert_eq!(file["format"], "rocpd", "{label}");
        let c = &file["replay_coverage"];
        // testdata/SOURCES.md: 25 replays of 3 graphs (23 × 15 kernels, 12, 4).
        assert_eq!(c["replays"], 25, "{label}");
        assert_eq!(c["recorded_nodes"], 23 * 15 + 12 + 4, "{label}");
        assert_same_replays(c, &json);
        // SELECT count(*), sum("end" - start) FROM rocpd_kernel_dispatch_<uuid>
        //   → 413 kernels, 156008506 ns; every one is read.
        let table = format!("rocpd_kernel_dispatch_{UUID}");
        assert_eq!(sql_i64(&db, &format!("SELECT count(*) FROM {table}")), 413);
        assert_eq!(file["events"]["kernels"], 413, "{label}");
        let sum_ns = sql_i64(&db, &format!("SELECT sum(\"end\" - start) FROM {table}"));
        assert_eq!(sum_ns, 156_008_506);
        let total_us = f64_at(&file, "/breakdown/total_gpu_time_us");
        assert!(
            (total_us * 1000.0 - sum_ns as f64).abs() < 1.0,
            "{label}: {total_us}"
        );
        // The vLLM step annotation, a ROCTx range (MARKER_CORE_RANGE_API, its message in
        // the event's extdata), is the step.
        assert_eq!(file["steps"]["counts"]["vllm:mixed"], 1, "{label}");
        assert_eq!(str_at(&file, "/breakdown/method"), "step_annotations");
        // The GPU agent's product name is the device.
        assert_eq!(
            file["devices"][0], "AMD Instinct MI300X",
            "{label}: {}",
            file["devices"]
        );
    }
}

#[test]
fn replays_that_lost_kernels_give_the_verdicts_of_the_json() {
    let dir = tempdir();
    // Whole replays lost (the 3rd and 10th launches), and 5 kernels of one replay lost.
    let (doc, rows) = piecewise_replay_kernels();
    let mut partial = doc.clone();
    let events = partial["traceEvents"].as_array_mut().expect("events");
    for &row in rows[20..25].iter().rev() {
        events.remove(row);
    }
    let cases = [
        (
            "two empty",
            Parts::of_kineto(&doc).without_replays(&[2, 9]),
            2,
            0,
        ),
        ("one short", Parts::of_kineto(&partial), 0, 1),
    ];
    for (label, parts, empty, short) in cases {
        for schema in [RocpdSchema::V3, RocpdSchema::V4] {
            let options = RocpdOptions {
                schema,
                ..RocpdOptions::default()
            };
            let db = write(
                &parts,
                dir.path().join(format!("{label} {schema:?}.db")),
                &options,
            );
            let (code, file) = gated(&db);
            assert_eq!(code, Some(3), "{label} {schema:?}");
            let c = &file["replay_coverage"];
            assert_eq!(c["verdict"], "incomplete", "{label} {schema:?}");
            assert_eq!(c["empty_replays"], empty, "{label} {schema:?}");
            assert_eq!(c["short_replays"], short, "{label} {schema:?}");
        }
    }
}

#[test]
fn a_database_recorded_without_hip_api_tracing_is_unavailable_with_the_flags() {
    let dir = tempdir();
    let options = RocpdOptions {
        hip_api: false,
        ..RocpdOptions::default()
    };
    let db = write(&piecewise(), dir.path().join("kernels_only.db"), &options);
    let c = replay_coverage(&db);
    assert_eq!(c["verdict"], "unavailable", "{c}");
    let why = c["unavailable_reason"].as_str().expect("reason");
    assert!(why.contains("--runtime-trace"), "{why}");
    assert!(why.contains("HIP API"), "{why}");
}

#[test]
fn one_database_per_process_in_a_folder_reads_as_ranks() {
    let dir = tempdir();
    let host = dir.path().join("node-7");
    std::fs::create_dir_all(&host).expect("folder");
    // Two processes' runs: the second one a second later on the same clock.
    for (rank, pid) in [4101_i64, 4102].into_iter().enumerate() {
        let options = RocpdOptions {
            pid: Some(pid),
            uuid: format!("0199a2b4_6c1e_7f3a_9d2b_5e8c4f1a{pid:04}"),
            ..RocpdOptions::default()
        };
        let parts = shifted(&piecewise(), rank as i64 * 1_000_000_000);
        write(&parts, host.join(format!("{pid}_results.db")), &options);
    }
    let run = stepscope([
        "analyze",
        dir.path().to_str().expect("path"),
        "--json",
        "--no-progress",
    ]);
    run.expect_code(0);
    let doc = run.json();
    let files = doc["files"].as_array().expect("files");
    assert_eq!(files.len(), 2, "{doc}");
    for file in files {
        assert_eq!(file["format"], "rocpd");
        assert_eq!(file["replay_coverage"]["replays"], 25);
        assert_eq!(file["replay_coverage"]["recorded_nodes"], 23 * 15 + 12 + 4);
    }
}

#[test]
fn a_copy_is_linked_to_its_call_and_counted_as_a_transfer() {
    let dir = tempdir();
    let db = write(
        &piecewise(),
        dir.path().join("copy.db"),
        &RocpdOptions::default(),
    );
    let conn = Connection::open(&db).expect("open");
    let t = |name: &str| format!("{name}_{UUID}");
    // A hipMemcpyAsync region and the copy it launched, sharing stack_id 9000001, inside
    // the trace's time span.
    conn.execute_batch(&format!(
        "INSERT OR IGNORE INTO {s}(string) VALUES ('hipMemcpyAsync'), ('MEMORY_COPY_DEVICE_TO_HOST'), ('MEMORY_COPY');
        INSERT INTO {e}(category_id, stack_id, correlation_id) SELECT id, 9000001, 0 FROM {s} WHERE string = 'HIP_RUNTIME_API';
        INSERT INTO {r}(nid, pid, tid, start, end, name_id, event_id)
            SELECT 1, (SELECT pid FROM {r} LIMIT 1), 1, m - 5000, m - 1000, (SELECT id FROM {s} WHERE string = 'hipMemcpyAsync'), last_insert_rowid()
            FROM (SELECT max(\"end\") AS m FROM {k});
        INSERT INTO {e}(category_id, stack_id, correlation_id) SELECT id, 9000001, 0 FROM {s} WHERE string = 'MEMORY_COPY';
        INSERT INTO {c}(nid, pid, start, end, name_id, dst_agent_id, src_agent_id, size, stream_id, event_id)
            SELECT 1, (SELECT pid FROM {r} LIMIT 1), m + 1000, m + 4000, (SELECT id FROM {s} WHERE string = 'MEMORY_COPY_DEVICE_TO_HOST'), 0, 1, 4096, 7, last_insert_rowid()
            FROM (SELECT max(\"end\") AS m FROM {k});",
        s = t("rocpd_string"),
        e = t("rocpd_event"),
        r = t("rocpd_region"),
        k = t("rocpd_kernel_dispatch"),
        c = t("rocpd_memory_copy"),
    ))
    .expect("insert");
    drop(conn);
    let file = analyzed_file(&db);
    assert_eq!(file["events"]["memcpys"], 1, "{}", file["events"]);
    assert_eq!(file["replay_coverage"]["orphan_transfers"], 0);
    assert_eq!(file["replay_coverage"]["replays"], 25);
}

#[test]
fn a_dispatch_whose_kernel_symbol_is_gone_is_damage() {
    let dir = tempdir();
    let db = write(
        &piecewise(),
        dir.path().join("dangling.db"),
        &RocpdOptions::default(),
    );
    let conn = Connection::open(&db).expect("open");
    // The symbol of a kernel that only replays run: its 24 dispatches all share the
    // stack_id of a hipGraphLaunch region (SELECT count(*) FROM rocpd_kernel_dispatch k
    // JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id JOIN rocpd_event e ON e.id =
    // k.event_id WHERE s.display_name = '_topk_forward' AND e.stack_id IN (SELECT e2.stack_id
    // FROM rocpd_region r JOIN rocpd_event e2 ON e2.id = r.event_id JOIN rocpd_string n ON
    // n.id = r.name_id WHERE n.string = 'hipGraphLaunch') → 24).
    let deleted = conn
        .execute(
            &format!(
                "DELETE FROM rocpd_info_kernel_symbol_{UUID} WHERE display_name = '_topk_forward'"
            ),
            [],
        )
        .expect("delete");
    assert_eq!(deleted, 1);
    drop(conn);
    let (code, file) = gated(&db);
    assert_eq!(code, Some(3));
    assert_eq!(
        file["replay_coverage"]["verdict"], "damaged",
        "{}",
        file["damage"]
    );
    assert_eq!(file["damage"]["refused_events"]["dangling_reference"], 24);
    assert_eq!(file["damage"]["damaged_replays"], 24);
}

#[test]
fn a_database_merged_from_two_processes_reads_both_runs() {
    // `rocpd merge` keeps each run's tables under its own UUID in one file: two runs of the
    // piecewise trace (pids 4101 and 4102, the second a second later) in one database.
    let dir = tempdir();
    let db = dir.path().join("merged.db");
    for (rank, pid) in [4101_i64, 4102].into_iter().enumerate() {
        let options = RocpdOptions {
            pid: Some(pid),
            uuid: format!("0199a2b4_6c1e_7f3a_9d2b_5e8c4f1a{pid:04}"),
            views: rank == 0,
            ..RocpdOptions::default()
        };
        write(
            &shifted(&piecewise(), rank as i64 * 1_000_000_000),
            db.clone(),
            &options,
        );
    }
    let file = analyzed_file(&db);
    let c = &file["replay_coverage"];
    assert_eq!(c["replays"], 50, "{c}");
    assert_eq!(c["recorded_nodes"], 2 * (23 * 15 + 12 + 4));
    assert_eq!(file["events"]["kernels"], 2 * 413);
    assert_eq!(
        file["steps"]["counts"]["vllm:mixed"], 2,
        "{}",
        file["steps"]
    );
}

#[test]
fn a_database_missing_optional_columns_and_tables_still_reads() {
    // An older or trimmed database: dispatches without stream, graph and region columns,
    // no agent table, no kernel display names (kernel_name only).
    let dir = tempdir();
    let options = RocpdOptions {
        views: false,
        ..RocpdOptions::default()
    };
    let db = write(&piecewise(), dir.path().join("trimmed.db"), &options);
    let conn = Connection::open(&db).expect("open");
    let k = format!("rocpd_kernel_dispatch_{UUID}");
    for column in [
        "stream_id",
        "graph_exec_id",
        "graph_node_id",
        "region_name_id",
    ] {
        conn.execute_batch(&format!("ALTER TABLE {k} DROP COLUMN {column}"))
            .expect(column);
    }
    conn.execute_batch(&format!(
        "DROP TABLE rocpd_info_agent_{UUID};
        ALTER TABLE rocpd_info_kernel_symbol_{UUID} DROP COLUMN display_name;"
    ))
    .expect("trim");
    drop(conn);
    let file = analyzed_file(&db);
    let c = &file["replay_coverage"];
    assert_eq!(c["replays"], 25, "{c}");
    assert_eq!(c["recorded_nodes"], 23 * 15 + 12 + 4);
    assert_eq!(file["devices"][0], "AMD GPU (rocpd)");
}

#[test]
fn forcing_rocpd_on_another_database_is_an_error_naming_it() {
    let rpd = trace("rocmprofiledata/examples/rocm-profile-data/results/matmul_result.rpd");
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&rpd),
        arg(Path::new("--format")),
        arg(Path::new("rocpd")),
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("matmul_result.rpd"), "{}", run.stderr);
    assert!(
        run.stderr.contains("no rocpd_kernel_dispatch"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_database_in_wal_mode_is_read_with_its_log() {
    // rocprofv3 may leave its database in write-ahead-log mode: rows written (or deleted)
    // since the last checkpoint live in `<file>-wal`. Read without the log, the file below
    // holds all 413 kernels and is COMPLETE; `sqlite3` sees 30 of them deleted (two replays
    // of the 15-kernel graph empty), and so must the reader.
    let dir = tempdir();
    let path = write(
        &piecewise(),
        dir.path().join("wal_results.db"),
        &RocpdOptions::default(),
    );
    let table = format!("rocpd_kernel_dispatch_{UUID}");
    let writer = Connection::open(&path).expect("open");
    writer
        .execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;")
        .expect("wal");
    let launches: Vec<i64> = {
        let mut s = writer
            .prepare(&format!(
                "SELECT e.stack_id FROM {table} k JOIN rocpd_event_{UUID} e ON e.id = k.event_id \
                 GROUP BY e.stack_id HAVING count(*) = 15 ORDER BY min(k.start) LIMIT 2"
            ))
            .expect("prepare");
        s.query_map([], |row| row.get(0))
            .expect("query")
            .map(|r| r.expect("row"))
            .collect()
    };
    assert_eq!(launches.len(), 2);
    let deleted = writer
        .execute(
            &format!(
                "DELETE FROM {table} WHERE event_id IN \
                 (SELECT id FROM rocpd_event_{UUID} WHERE stack_id IN (?1, ?2))"
            ),
            [launches[0], launches[1]],
        )
        .expect("delete");
    assert_eq!(deleted, 30);
    let wal = dir.path().join("wal_results.db-wal");
    assert!(std::fs::metadata(&wal).expect("wal").len() > 0);
    // Read while the writer holds the log open, and from a copy of the pair (the database
    // and its log, no -shm) as a file copied off the machine would be.
    let copied = dir.path().join("copy");
    std::fs::create_dir(&copied).expect("mkdir");
    std::fs::copy(&path, copied.join("wal_results.db")).expect("copy");
    std::fs::copy(&wal, copied.join("wal_results.db-wal")).expect("copy");
    for db in [path.clone(), copied.join("wal_results.db")] {
        let (code, file) = gated(&db);
        assert_eq!(file["events"]["kernels"], 413 - 30, "{}", db.display());
        let c = &file["replay_coverage"];
        assert_eq!(c["verdict"], "incomplete", "{}", db.display());
        assert_eq!(c["empty_replays"], 2, "{}", db.display());
        assert_eq!(code, Some(3));
    }
    drop(writer);
}

#[test]
fn a_missing_link_table_is_named_and_no_runtime_switch_is_prescribed() {
    // Cut-down databases: kernels and HIP calls are there, what links them is not. All 25
    // replays would read as empty and the runtime's symptom (and its DEBUG_CLR_* switches)
    // be diagnosed; the file's damage is named instead, and the gate fails on it.
    let dir = tempdir();
    let options = RocpdOptions {
        views: false,
        ..RocpdOptions::default()
    };
    let cases = [
        (
            "no_event",
            format!("DROP TABLE rocpd_event_{UUID}"),
            "rocpd_event",
        ),
        (
            "null_stack",
            format!("UPDATE rocpd_event_{UUID} SET stack_id = NULL"),
            "stack_id",
        ),
        (
            "no_string",
            format!("DROP TABLE rocpd_string_{UUID}"),
            "rocpd_string",
        ),
    ];
    for (name, sql, says) in cases {
        let path = write(
            &piecewise(),
            dir.path().join(format!("{name}.db")),
            &options,
        );
        Connection::open(&path)
            .expect("open")
            .execute_batch(&sql)
            .expect(&sql);
        let (code, file) = gated(&path);
        let c = &file["replay_coverage"];
        assert_eq!(c["verdict"], "unavailable", "{name}: {c}");
        let why = c["unavailable_reason"].as_str().expect("reason");
        assert!(why.contains(says), "{name}: {why}");
        assert!(!why.contains("HIP API tracing"), "{name}: {why}");
        let advice = file["advice"].to_string();
        assert!(!advice.contains("DEBUG_CLR"), "{name}: {advice}");
        assert_eq!(code, Some(3), "{name}");
    }
}
