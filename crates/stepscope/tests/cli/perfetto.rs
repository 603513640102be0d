//! `analyze --perfetto`: the export reads back through stepscope's own reader with the same
//! counts and replays, shows empty replays as slices with no kernel (made here by removing
//! two replays' kernels from the real piecewise vLLM trace), and nests strictly on every
//! thread (Perfetto drops partially overlapping slices).

use crate::common::{
    VLLM_PIECEWISE, analyzed_file, incomplete_piecewise, replay_coverage, stepscope, tempdir, trace,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn export(input: &Path, out: &Path) {
    let run = stepscope([
        "analyze",
        input.to_str().expect("path"),
        "--perfetto",
        out.to_str().expect("path"),
        "--no-progress",
        "--json",
    ]);
    run.expect_code(0);
    assert!(run.stderr.contains("perfetto:"), "{}", run.stderr);
}

fn events(path: &Path) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON");
    doc["traceEvents"].as_array().expect("traceEvents").clone()
}

fn file_events(path: &Path) -> Value {
    analyzed_file(path)["events"].clone()
}

#[test]
fn the_export_reads_back_with_the_same_events_and_replays() {
    let dir = tempdir();
    let out = dir.path().join("piecewise.perfetto.json");
    export(&trace(VLLM_PIECEWISE), &out);
    let original = file_events(&trace(VLLM_PIECEWISE));
    let read_back = file_events(&out);
    for key in ["kernels", "memcpys", "memsets", "runtime_calls"] {
        assert_eq!(read_back[key], original[key], "{key}");
    }
    let (a, b) = (
        replay_coverage(&trace(VLLM_PIECEWISE)),
        replay_coverage(&out),
    );
    for key in [
        "verdict",
        "replays",
        "recorded_replays",
        "recorded_nodes",
        "orphan_kernels",
    ] {
        assert_eq!(a[key], b[key], "{key}");
    }
    let slices = events(&out)
        .iter()
        .filter(|e| e["cat"] == "stepscope_replay")
        .count();
    assert_eq!(slices, 25);
}

#[test]
fn empty_replays_are_slices_with_no_kernel_and_findings() {
    let dir = tempdir();
    let input = incomplete_piecewise(dir.path(), "incomplete.json");
    let out = dir.path().join("incomplete.perfetto.json");
    export(&input, &out);
    let all = events(&out);
    let empty: Vec<&Value> = all
        .iter()
        .filter(|e| e["cat"] == "stepscope_replay" && e["args"]["recorded_nodes"] == 0)
        .collect();
    assert_eq!(empty.len(), 2, "the two replays whose kernels were removed");
    for slice in &empty {
        let name = slice["name"].as_str().expect("name");
        assert!(name.contains("EMPTY 0 of 15"), "{name}");
        assert!(slice["dur"].as_f64() > Some(0.0), "{slice}");
    }
    let findings = all
        .iter()
        .filter(|e| e["cat"] == "stepscope_finding" && e["args"]["status"] == "empty")
        .count();
    assert_eq!(findings, 2);
    assert_eq!(replay_coverage(&out)["empty_replays"], 2);
    // Graphs are numbered as the JSON numbers them (from 1), in the slice's args and name.
    let json_findings = replay_coverage(&input)["findings"].clone();
    let findings: Vec<&Value> = json_findings
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == "ReplayWithoutKernels")
        .collect();
    assert_eq!(findings.len(), 2);
    for (slice, finding) in empty.iter().zip(findings) {
        assert_eq!(slice["args"]["graph"], finding["graph"], "{slice}");
        let graph = format!("graph {}:", finding["graph"]);
        assert!(
            slice["name"].as_str().expect("name").contains(&graph),
            "{slice}"
        );
    }
}

/// On every thread, each `X` slice ends before the next starts or holds it whole.
#[test]
fn slices_nest_strictly_on_every_thread() {
    let dir = tempdir();
    let input = incomplete_piecewise(dir.path(), "incomplete.json");
    let out = dir.path().join("out.json");
    export(&input, &out);
    let mut threads: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for e in events(&out).iter().filter(|e| e["ph"] == "X") {
        let key = format!("{}/{}", e["pid"], e["tid"]);
        let (ts, dur) = (
            e["ts"].as_f64().expect("ts"),
            e["dur"].as_f64().expect("dur"),
        );
        threads.entry(key).or_default().push((ts, ts + dur));
    }
    for (thread, mut slices) in threads {
        slices.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut open: Vec<f64> = Vec::new();
        for (start, end) in slices {
            while open.last().is_some_and(|e| *e <= start) {
                open.pop();
            }
            if let Some(parent) = open.last() {
                assert!(
                    end <= *parent + 1e-6,
                    "{thread}: [{start}, {end}] overlaps a slice ending at {parent}"
                );
            }
            open.push(end);
        }
    }
}

#[test]
fn several_inputs_are_refused_with_a_hint() {
    let dir = tempdir();
    let out = dir.path().join("out.json");
    let run = stepscope([
        "analyze",
        trace(VLLM_PIECEWISE).to_str().expect("path"),
        trace(crate::common::VLLM_FULL).to_str().expect("path"),
        "--perfetto",
        out.to_str().expect("path"),
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("once per rank file"), "{}", run.stderr);
    assert!(!out.exists());
}

/// The real piecewise trace with one replay kernel's duration made negative: bad data that
/// the reader refuses, tied to its replay.
fn damaged_piecewise(dir: &Path) -> std::path::PathBuf {
    let (mut doc, rows) = crate::common::piecewise_replay_kernels();
    doc["traceEvents"][rows[0]]["dur"] = serde_json::json!(-3.5);
    let path = dir.join("damaged.json");
    std::fs::write(&path, serde_json::to_vec(&doc).expect("JSON")).expect("write");
    path
}

/// The export keeps the truth: re-read, it gives the verdict and the replay counts the
/// original gave, for a trace of every verdict — a damaged one included, whose refused event
/// the export keeps as a marked slice (`stepscope_damaged`, args saying why) tied to the same
/// replay, where it used to drop it and re-read as complete.
#[test]
fn every_verdict_survives_the_round_trip() {
    let dir = tempdir();
    let demo = stepscope(["demo".as_ref(), "--keep".as_ref(), dir.path().as_os_str()]);
    demo.expect_code(0);
    let cases = [
        ("complete", dir.path().join("demo_complete.trace.json.gz")),
        // A copy without the capture_traces folder, whose capture would make it complete.
        (
            "unverified",
            crate::common::copy_trace(crate::common::SGLANG_DECODE, dir.path(), "alone.json.gz"),
        ),
        (
            "incomplete",
            incomplete_piecewise(dir.path(), "incomplete.json"),
        ),
        ("damaged", damaged_piecewise(dir.path())),
        (
            "no-replays",
            trace(
                "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
            ),
        ),
    ];
    for (verdict, input) in cases {
        let out = dir.path().join(format!("{verdict}.perfetto.json"));
        export(&input, &out);
        let (a, b) = (replay_coverage(&input), replay_coverage(&out));
        assert_eq!(a["verdict"], verdict, "{verdict}: the input's verdict");
        for key in [
            "verdict",
            "replays",
            "recorded_replays",
            "damaged_replays",
            "empty_replays",
        ] {
            assert_eq!(a[key], b[key], "{verdict}: {key}");
        }
    }
    let marked: Vec<Value> = events(&dir.path().join("damaged.perfetto.json"))
        .into_iter()
        .filter(|e| e["cat"] == "stepscope_damaged")
        .collect();
    assert_eq!(marked.len(), 1, "{marked:?}");
    assert_eq!(marked[0]["args"]["stepscope_damage"], "negative_duration");
    assert!(
        marked[0]["args"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("negative"))
    );
}

#[test]
fn an_export_written_into_the_analysed_folder_is_left_out_of_the_next_scan() {
    // `analyze DIR --perfetto DIR/t.json`, then `analyze DIR`: read back, the export would
    // be a second rank with the same replays (GPU time doubled). It is marked, and a folder
    // scan leaves it out with a note; the export itself still opens in Perfetto as JSON.
    let dir = tempdir();
    let folder = dir.path().join("run");
    crate::common::copy_trace(VLLM_PIECEWISE, &folder, "rank0.json.gz");
    let out = folder.join("t.json");
    export(&folder, &out);
    let exported: Value =
        serde_json::from_slice(&std::fs::read(&out).expect("read")).expect("JSON");
    assert!(exported["traceEvents"].is_array());
    let run = stepscope([
        "analyze",
        folder.to_str().expect("path"),
        "--json",
        "--no-progress",
    ]);
    run.expect_code(0);
    let files = run.json()["files"].as_array().expect("files").len();
    assert_eq!(files, 1, "only the profile is read");
    let warnings = run.json()["warnings"].to_string();
    assert!(
        warnings.contains("t.json` is a Perfetto file stepscope wrote"),
        "{warnings}"
    );
    assert_eq!(
        run.json()["files"][0]["replay_coverage"]["replays"],
        replay_coverage(&trace(VLLM_PIECEWISE))["replays"]
    );
}
