//! `--strict` cannot be passed by refusal: a trace whose evidence was refused, or whose graph
//! work lost its launches, fails the gate (exit 3) and says what could not be checked.

use crate::common::{SGLANG_DECODE, arg, stepscope, tempdir};
use std::path::Path;

fn kernel(name: &str, ts: &str, dur: &str, args: &str) -> String {
    format!(
        r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, "args": {{{args}}}}}"#
    )
}

fn write(dir: &Path, name: &str, events: &[String]) -> std::path::PathBuf {
    let path = dir.join(name);
    let text = format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"));
    std::fs::write(&path, text).expect("write");
    path
}

/// `analyze PATH --strict --json`: the exit code and the file's `unchecked` reasons; the same
/// file without `--strict` passes (the gate, not the read, fails).
fn strict(path: &Path) -> (Option<i32>, Vec<String>) {
    let plain = stepscope(["analyze".as_ref(), arg(path), "--json".as_ref()]);
    assert_eq!(plain.code, Some(0), "{}", plain.stderr);
    let run = stepscope([
        "analyze".as_ref(),
        arg(path),
        "--json".as_ref(),
        "--strict".as_ref(),
    ]);
    let document = run.json();
    let reasons = document["files"][0]["damage"]["unchecked"]
        .as_array()
        .expect("unchecked is an array")
        .iter()
        .map(|r| r.as_str().expect("a sentence").to_owned())
        .collect();
    (run.code, reasons)
}

#[test]
fn every_event_refused_fails_strict() {
    let dir = tempdir();
    let events: Vec<_> = (0..5)
        .map(|i| {
            kernel(
                &format!("k{i}"),
                "null",
                "5",
                &format!(r#""correlation": {}"#, i + 1),
            )
        })
        .collect();
    let path = write(dir.path(), "all_refused.json", &events);
    let (code, reasons) = strict(&path);
    assert_eq!(code, Some(3), "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("5 events were refused")),
        "{reasons:?}"
    );
}

#[test]
fn refused_gpu_events_without_a_correlation_fail_strict() {
    let dir = tempdir();
    let mut events: Vec<_> = (0..4)
        .map(|i| {
            let ts = (1000 + 10 * i).to_string();
            kernel(
                &format!("k{i}"),
                &ts,
                "5",
                &format!(r#""correlation": {}"#, i + 1),
            )
        })
        .collect();
    events.extend((0..3).map(|i| kernel(&format!("bad{i}"), "1100", "-5", r#""stream": 7"#)));
    let path = write(dir.path(), "uncorrelated.json", &events);
    let (code, reasons) = strict(&path);
    assert_eq!(code, Some(3), "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("3 refused GPU events carry no correlation")),
        "{reasons:?}"
    );
}

#[test]
fn graph_kernels_without_any_launch_fail_strict() {
    let dir = tempdir();
    let events: Vec<_> = (0..6)
        .map(|i| {
            let ts = (1000 + 10 * i).to_string();
            let args = format!(r#""correlation": {}, "graph id": 3, "stream": 7"#, i + 1);
            kernel(&format!("k{i}"), &ts, "5", &args)
        })
        .collect();
    let path = write(dir.path(), "graph_no_launch.json", &events);
    let (code, reasons) = strict(&path);
    assert_eq!(code, Some(3), "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("6 GPU events name a graph")),
        "{reasons:?}"
    );
}

#[test]
fn a_complete_trace_leaves_nothing_unchecked() {
    let run = stepscope(["analyze", SGLANG_DECODE, "--json", "--strict"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let document = run.json();
    assert_eq!(
        document["files"][0]["damage"]["unchecked"],
        serde_json::json!([])
    );
}

/// The real SGLang decode trace with every kernel's duration negative: every kernel is
/// refused. The replays lost their kernels to bad data in the file, so the verdict is
/// DAMAGED, no recording pattern is diagnosed (the eager launches whose kernels were refused
/// are no witness of a stopped recording) and no cure — no runtime switch, no event cap — is
/// prescribed. Before, the launches read as "without GPU work": `recording_stopped` and the
/// `ROCTRACER_MAX_EVENTS` cure.
#[test]
fn every_kernel_refused_is_damage_not_a_stopped_recording() {
    use stepscope_synth::removal::{read_json, to_json_bytes};
    let dir = tempdir();
    let mut doc = read_json(&crate::common::trace(SGLANG_DECODE)).expect("the trace reads");
    let mut kernels = 0;
    for event in doc["traceEvents"].as_array_mut().expect("events") {
        if event["cat"] == "kernel" {
            event["dur"] = serde_json::json!(-5);
            kernels += 1;
        }
    }
    assert!(kernels > 500, "{kernels}");
    let path = dir.path().join("refused.json");
    std::fs::write(&path, to_json_bytes(&doc)).expect("write");
    let run = stepscope(["analyze".as_ref(), arg(&path), "--json".as_ref()]);
    let file = &run.json()["files"][0];
    assert_eq!(file["replay_coverage"]["verdict"], "damaged");
    assert_eq!(file["replay_coverage"]["patterns"], serde_json::json!([]));
    assert_eq!(file["advice"]["applies"], false);
    assert_eq!(file["advice"]["switches"], serde_json::json!([]));
    let terminal = stepscope(["analyze".as_ref(), arg(&path), "--no-progress".as_ref()]);
    assert!(
        !terminal.stdout.contains("ROCTRACER_MAX_EVENTS"),
        "{}",
        terminal.stdout
    );
    assert!(
        !terminal.stdout.contains("replays recorded"),
        "{}",
        terminal.stdout
    );
    let gate = stepscope(["analyze".as_ref(), arg(&path), "--strict".as_ref()]);
    gate.expect_code(3);
}
