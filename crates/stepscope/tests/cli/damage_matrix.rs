//! Damage is damage in every reader. The same real trace (the piecewise vLLM one) is written
//! in each format stepscope reads, as the format tests write them — Kineto JSON, rocprofv3
//! CSV, JSON and SQLite (rocpd), RPD (SQLite) and its JSON, the Nsight Systems export — with
//! the same bad data in it, and every format must give the verdict the Kineto reader gives:
//! `damaged` (exit 3 under a gate), never a runtime symptom with switch advice, never
//! complete.

use crate::common::{VLLM_PIECEWISE, arg, gunzip, stepscope, tempdir};
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};
use stepscope_synth::formats::{Parts, rocprof_json, rpd_json, write_rocprof_csv, write_rpd};

/// The piecewise trace with one replay kernel ending before it starts (`dur` −3.5 µs).
pub fn damaged_doc() -> Value {
    let (mut doc, rows) = crate::common::piecewise_replay_kernels();
    doc["traceEvents"][rows[40]]["dur"] = serde_json::json!(-3.5);
    doc
}

/// `doc` written in every format: (format, file).
pub fn every_format(doc: &Value, dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let kineto = dir.join("kineto.json");
    std::fs::write(&kineto, serde_json::to_vec(doc).expect("JSON")).expect("write");
    let parts = Parts::of_kineto(doc);
    std::fs::create_dir_all(dir.join("csv")).expect("folder");
    let csv = write_rocprof_csv(&parts, &dir.join("csv"), "4242_").expect("csv");
    let rocprof = dir.join("rocprof.json");
    std::fs::write(&rocprof, rocprof_json(&parts).to_string()).expect("write");
    let rpd = dir.join("run.rpd");
    write_rpd(&parts, &rpd).expect("rpd");
    let rpd_text = dir.join("rpd.json");
    std::fs::write(&rpd_text, rpd_json(&parts).to_string()).expect("write");
    let nsys = crate::nsys_sqlite::nsys_export(&kineto, &dir.join("run.sqlite"));
    let rocpd = dir.join("4242_results.db");
    let options = stepscope_synth::rocpd::RocpdOptions::default();
    stepscope_synth::rocpd::write_rocpd(&parts, &rocpd, &options).expect("rocpd");
    vec![
        ("kineto-json", kineto),
        ("rocprof-csv", csv),
        ("rocprof-json", rocprof),
        ("rpd", rpd),
        ("rpd-json", rpd_text),
        ("nsys-sqlite", nsys),
        ("rocpd", rocpd),
    ]
}

/// `analyze FILE --json --fail-on-incomplete`: exit code and the file's report.
pub fn gated(file: &Path) -> (Option<i32>, Value) {
    let run = stepscope([
        "analyze".as_ref(),
        arg(file),
        "--json".as_ref(),
        "--fail-on-incomplete".as_ref(),
    ]);
    (run.code, run.json()["files"][0].clone())
}

#[test]
fn a_kernel_ending_before_it_starts_is_damage_in_every_format() {
    let dir = tempdir();
    let mut verdicts = Vec::new();
    for (format, file) in every_format(&damaged_doc(), dir.path()) {
        let (code, report) = gated(&file);
        let verdict = report["replay_coverage"]["verdict"]
            .as_str()
            .unwrap_or("?")
            .to_owned();
        verdicts.push((format, verdict.clone(), code));
        if verdict == "unavailable" {
            continue;
        }
        assert_eq!(
            report["advice"]["applies"], false,
            "{format}: no switch for bad data"
        );
        assert_eq!(
            report["damage"]["damaged_replays"], 1,
            "{format}: {}",
            report["damage"]
        );
    }
    let expected: Vec<_> = verdicts
        .iter()
        .map(|(format, _, _)| (*format, "damaged".to_owned(), Some(3)))
        .collect();
    assert_eq!(verdicts, expected);
}

/// A string table that lost its `hipGraphLaunch` entry (a damaged or cut database): every
/// launch's name dangles. That is damage, not "no replays" and not a pass.
#[test]
fn a_dangling_string_id_in_an_rpd_is_damage_not_no_replays() {
    let dir = tempdir();
    let doc: Value = serde_json::from_slice(&gunzip(VLLM_PIECEWISE)).expect("JSON");
    let rpd = dir.path().join("run.rpd");
    write_rpd(&Parts::of_kineto(&doc), &rpd).expect("rpd");
    let conn = Connection::open(&rpd).expect("open");
    let deleted = conn
        .execute(
            "DELETE FROM rocpd_string WHERE string = 'hipGraphLaunch'",
            [],
        )
        .expect("delete");
    assert_eq!(deleted, 1);
    drop(conn);
    let (code, report) = gated(&rpd);
    assert_eq!(report["replay_coverage"]["verdict"], "damaged", "{report}");
    assert_eq!(code, Some(3));
    assert_eq!(report["damage"]["refused_events"]["dangling_reference"], 25);
}

/// The same in an Nsight Systems export: `StringIds` lost the launch call's name.
#[test]
fn a_dangling_string_id_in_an_nsys_export_is_damage_not_no_replays() {
    let dir = tempdir();
    let (doc, _) = crate::common::piecewise_replay_kernels();
    let kineto = dir.path().join("kineto.json");
    std::fs::write(&kineto, serde_json::to_vec(&doc).expect("JSON")).expect("write");
    let nsys = crate::nsys_sqlite::nsys_export(&kineto, &dir.path().join("run.sqlite"));
    let conn = Connection::open(&nsys).expect("open");
    let deleted = conn
        .execute(
            "DELETE FROM StringIds WHERE value = 'cudaGraphLaunch_v10000'",
            [],
        )
        .expect("delete");
    assert_eq!(deleted, 1);
    drop(conn);
    let (code, report) = gated(&nsys);
    assert_eq!(
        report["replay_coverage"]["verdict"], "damaged",
        "{}",
        report["damage"]
    );
    assert_eq!(code, Some(3));
    assert_eq!(report["damage"]["refused_events"]["dangling_reference"], 25);
}
