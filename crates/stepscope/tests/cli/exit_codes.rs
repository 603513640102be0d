//! Exit codes: 0 done, 2 bad input or usage, 3 `--fail-on-incomplete` with replays missing.

use crate::common::{
    SGLANG_DECODE, VLLM_PIECEWISE, arg, copy_trace, incomplete_piecewise, stepscope, str_at,
    tempdir, u64_at,
};

/// Leaves out the `capture_traces/` folder beside the SGLang trace, whose capture would
/// corroborate its one replay's size.
const NO_FOLDER: &str = "--no-capture-folder";

/// Complete as far as the trace shows (its one replay's size rests on itself) passes without
/// a gate flag.
#[test]
fn an_unverified_trace_exits_0() {
    let run = stepscope(["analyze", SGLANG_DECODE, "--color", "never", NO_FOLDER]);
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("replay coverage: UNVERIFIED (complete as far as the trace shows)"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
}

#[test]
fn complete_trace_with_fail_on_incomplete_exits_0() {
    stepscope(["analyze", VLLM_PIECEWISE, "--fail-on-incomplete"]).expect_code(0);
}

#[test]
fn missing_replays_with_fail_on_incomplete_exit_3() {
    let dir = tempdir();
    let broken = incomplete_piecewise(dir.path(), "piecewise_missing_2.json");
    let run = stepscope([
        "analyze".as_ref(),
        arg(&broken),
        "--fail-on-incomplete".as_ref(),
    ]);
    run.expect_code(3);
    assert!(
        run.stdout.contains("replay coverage: INCOMPLETE"),
        "{}",
        run.stdout
    );
    // The JSON says why, and still exits 3.
    let json = stepscope([
        "analyze".as_ref(),
        arg(&broken),
        "--fail-on-incomplete".as_ref(),
        "--json".as_ref(),
    ]);
    json.expect_code(3);
    let doc = json.json();
    assert_eq!(str_at(&doc, "/verdict"), "incomplete");
    assert_eq!(u64_at(&doc, "/files/0/replay_coverage/empty_replays"), 2);
}

#[test]
fn missing_replays_without_the_flag_exit_0() {
    let dir = tempdir();
    let broken = incomplete_piecewise(dir.path(), "piecewise_missing_2.json");
    let run = stepscope(["analyze".as_ref(), arg(&broken)]);
    run.expect_code(0);
    assert!(run.stdout.contains("INCOMPLETE"), "{}", run.stdout);
}

#[test]
fn missing_file_exits_2_naming_it() {
    let run = stepscope(["analyze", "no/such/trace.json.gz"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("no/such/trace.json.gz"),
        "stderr: {}",
        run.stderr
    );
    assert!(run.stderr.starts_with("error: "), "stderr: {}", run.stderr);
    assert!(run.stdout.is_empty(), "stdout: {}", run.stdout);
}

#[test]
fn missing_file_among_good_ones_exits_2_before_any_report() {
    let run = stepscope(["analyze", SGLANG_DECODE, "missing.json"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("missing.json"),
        "stderr: {}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "stdout: {}", run.stdout);
}

#[test]
fn folder_without_traces_exits_2() {
    let dir = tempdir();
    std::fs::write(dir.path().join("notes.txt"), "not a trace").expect("write");
    std::fs::write(dir.path().join("trace.json.gz.bak"), "not a trace").expect("write");
    std::fs::create_dir(dir.path().join("empty")).expect("mkdir");
    let run = stepscope(["analyze".as_ref(), arg(dir.path())]);
    run.expect_code(2);
    assert!(
        run.stderr.contains(&dir.path().display().to_string()),
        "stderr: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("no trace files"),
        "stderr: {}",
        run.stderr
    );
}

#[test]
fn unreadable_file_among_good_ones_still_reports_the_good_ones_and_exits_2() {
    let dir = tempdir();
    let good = copy_trace(SGLANG_DECODE, dir.path(), "rank0.json.gz");
    let bad = dir.path().join("rank1.json.gz");
    std::fs::write(&bad, b"this is not gzip").expect("write");
    let run = stepscope(["analyze".as_ref(), arg(&good), arg(&bad), "--json".as_ref()]);
    run.expect_code(2);
    assert!(
        run.stderr.contains(&bad.display().to_string()),
        "stderr: {}",
        run.stderr
    );
    let doc = run.json();
    let files = doc["files"].as_array().expect("files");
    assert_eq!(files.len(), 1);
    assert_eq!(str_at(&doc, "/files/0/path"), good.display().to_string());
}

#[test]
fn usage_errors_exit_2() {
    // clap's own usage errors: no input, an unknown flag.
    let run = stepscope(["analyze"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("TRACE_OR_DIR"),
        "stderr: {}",
        run.stderr
    );
    stepscope(["analyze", SGLANG_DECODE, "--no-such-flag"]).expect_code(2);
}

#[test]
fn csv_folder_that_is_a_file_fails_naming_it() {
    let dir = tempdir();
    let blocker = dir.path().join("out");
    std::fs::write(&blocker, "a file where the CSV folder should go").expect("write");
    let run = stepscope([
        "analyze".as_ref(),
        SGLANG_DECODE.as_ref(),
        "--csv".as_ref(),
        arg(&blocker),
    ]);
    assert_ne!(run.code, Some(0), "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains(&blocker.display().to_string()),
        "stderr: {}",
        run.stderr
    );
}

#[test]
fn fail_on_incomplete_looks_at_every_file() {
    let dir = tempdir();
    let broken = incomplete_piecewise(dir.path(), "piecewise_missing_2.json");
    let run = stepscope([
        "analyze".as_ref(),
        SGLANG_DECODE.as_ref(),
        arg(&broken),
        NO_FOLDER.as_ref(),
        "--fail-on-incomplete".as_ref(),
        "--json".as_ref(),
    ]);
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(
        str_at(&doc, "/files/0/replay_coverage/verdict"),
        "unverified"
    );
    assert_eq!(
        str_at(&doc, "/files/1/replay_coverage/verdict"),
        "incomplete"
    );
}

/// Writes `text` as a trace file.
fn write(dir: &std::path::Path, name: &str, text: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

/// The gate cannot be passed with bad input: `{}`, an empty file and a trace with no events
/// are input errors (2) even with `--allow-truncated`; a trace cut before its first kernel
/// is partial (3).
#[test]
fn the_gate_cannot_be_passed_with_bad_input() {
    let dir = tempdir();
    for (name, text, code) in [
        ("object.json", &b"{}"[..], 2),
        ("empty.json", &b""[..], 2),
        ("no_events.json", &br#"{"traceEvents": []}"#[..], 2),
        ("bare_array.json", &b"[]"[..], 2),
    ] {
        let path = write(dir.path(), name, text);
        let run = stepscope([
            "analyze".as_ref(),
            arg(&path),
            "--allow-truncated".as_ref(),
            "--fail-on-incomplete".as_ref(),
        ]);
        run.expect_code(code);
        assert!(
            !run.stderr.contains("--allow-truncated analyses"),
            "{name}: a hint that does not fit: {}",
            run.stderr
        );
    }
    // Cut before the first kernel: the events before the break hold no replay.
    let text = crate::common::gunzip(SGLANG_DECODE);
    let first_kernel = String::from_utf8_lossy(&text)
        .find("\"cat\": \"kernel\"")
        .or_else(|| String::from_utf8_lossy(&text).find("\"cat\":\"kernel\""))
        .expect("a kernel");
    let cut = write(dir.path(), "cut.json", &text[..first_kernel - 200]);
    let args = |gate: &'static str| {
        stepscope([
            "analyze".as_ref(),
            arg(&cut),
            "--allow-truncated".as_ref(),
            gate.as_ref(),
            "--json".as_ref(),
        ])
    };
    let run = args("--fail-on-incomplete");
    run.expect_code(3);
    assert_eq!(run.json()["partial"], true);
    args("--no-progress").expect_code(0);
}

#[test]
fn a_trace_with_no_events_says_so_and_exits_0_without_the_gate() {
    let dir = tempdir();
    let path = write(dir.path(), "no_events.json", br#"{"traceEvents": []}"#);
    let run = stepscope([
        "analyze".as_ref(),
        arg(&path),
        "--color".as_ref(),
        "never".as_ref(),
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains("NO-EVENTS"), "{}", run.stdout);
}

/// A folder with one unreadable rank: the JSON lists it, its verdict is `unreadable`, and the
/// exit code is 2 with or without the gate.
#[test]
fn one_unreadable_rank_in_a_folder_is_listed_and_fails() {
    let dir = tempdir();
    copy_trace(VLLM_PIECEWISE, dir.path(), "ranks/rank0.json.gz");
    write(
        &dir.path().join("ranks"),
        "rank1.json",
        b"{\"traceEvents\": [{\"ph\": \"X\",",
    );
    for gate in ["--fail-on-incomplete", "--no-progress"] {
        let run = stepscope([
            "analyze".as_ref(),
            arg(&dir.path().join("ranks")),
            gate.as_ref(),
            "--json".as_ref(),
        ]);
        run.expect_code(2);
        let doc = run.json();
        assert_eq!(str_at(&doc, "/verdict"), "unreadable");
        let failed = doc["failed_files"].as_array().expect("failed_files");
        assert_eq!(failed.len(), 1);
        assert!(str_at(&failed[0], "/path").ends_with("rank1.json"));
        assert!(str_at(&failed[0], "/error").contains("rank1.json"));
        // The message and its fix apart; `error` is both, as the command prints them.
        let (message, hint) = (str_at(&failed[0], "/message"), str_at(&failed[0], "/hint"));
        assert!(
            message.contains("rank1.json` is not valid trace JSON"),
            "{message}"
        );
        assert!(!message.contains("hint"), "{message}");
        assert!(hint.starts_with("the file is truncated"), "{hint}");
        assert_eq!(
            str_at(&failed[0], "/error"),
            format!("{message}\nhint: {hint}")
        );
        assert_eq!(doc["files"].as_array().map(Vec::len), Some(1));
    }
}

/// Sizes that rest on one replay pass `--fail-on-incomplete` and fail `--strict`.
#[test]
fn unverified_sizes_pass_the_gate_and_fail_strict() {
    let run = stepscope([
        "analyze",
        SGLANG_DECODE,
        "--fail-on-incomplete",
        "--json",
        NO_FOLDER,
    ]);
    run.expect_code(0);
    assert_eq!(str_at(&run.json(), "/verdict"), "unverified");
    stepscope(["analyze", SGLANG_DECODE, "--strict", NO_FOLDER]).expect_code(3);
    // The capture_traces folder beside the trace corroborates it without --capture.
    stepscope(["analyze", SGLANG_DECODE, "--strict"]).expect_code(0);
    // A capture corroborates the size: complete, and --strict passes.
    stepscope([
        "analyze",
        SGLANG_DECODE,
        "--strict",
        "--capture",
        crate::common::SGLANG_CAPTURE,
    ])
    .expect_code(0);
}

#[test]
fn damaged_data_fails_the_gate_without_switch_advice() {
    use stepscope_synth::removal::{read_json, to_json_bytes};
    let dir = tempdir();
    let mut doc = read_json(&crate::common::trace(SGLANG_DECODE)).expect("reads");
    let events = doc["traceEvents"].as_array_mut().expect("events");
    let replay = events
        .iter()
        .find(|e| e["name"] == "hipGraphLaunch")
        .map(|e| e["args"]["correlation"].clone())
        .expect("the replay");
    let kernel = events
        .iter()
        .position(|e| e["cat"] == "kernel" && e["args"]["correlation"] == replay)
        .expect("a kernel of the replay");
    events[kernel]["ts"] = serde_json::json!("NaN");
    let path = write(dir.path(), "nan.json", &to_json_bytes(&doc));
    let run = stepscope([
        "analyze".as_ref(),
        arg(&path),
        "--fail-on-incomplete".as_ref(),
        "--color".as_ref(),
        "never".as_ref(),
    ]);
    run.expect_code(3);
    assert!(
        run.stdout.contains("replay coverage: DAMAGED"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("DEBUG_"), "{}", run.stdout);
    assert!(run.stdout.contains("1 invalid_time"), "{}", run.stdout);
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn a_capture_that_matches_no_graph_is_said() {
    let run = stepscope([
        "analyze",
        SGLANG_DECODE,
        "--capture",
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz",
        "--json",
    ]);
    run.expect_code(0);
    let doc = run.json();
    let warnings = doc["warnings"].as_array().expect("warnings");
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("matches none of the traces' graphs"))),
        "{warnings:?}"
    );
}

/// The sglang trace with its replay's kernels moved, in order, after everything else: the
/// burst after the last step marker (sglang #31545).
fn burst_after_the_end(dir: &std::path::Path) -> std::path::PathBuf {
    use stepscope_synth::removal::{graph_launches, read_json, to_json_bytes};
    let mut doc = read_json(&crate::common::trace(SGLANG_DECODE)).expect("reads");
    let correlation = graph_launches(&doc)[0].correlation;
    let events = doc["traceEvents"].as_array_mut().expect("object form");
    let end = events
        .iter()
        .filter_map(|e| Some(e["ts"].as_f64()? + e["dur"].as_f64().unwrap_or(0.0)))
        .fold(f64::MIN, f64::max);
    let mut at = end + 50.0;
    for event in events.iter_mut() {
        let kernel = event["cat"] == "kernel" || event["cat"] == "gpu_memcpy";
        if kernel && event["args"]["correlation"].as_u64() == Some(correlation) {
            event["ts"] = at.into();
            at += event["dur"].as_f64().unwrap_or(0.0) + 1.0;
        }
    }
    let path = dir.join("burst.json");
    std::fs::write(&path, to_json_bytes(&doc)).expect("write the derived trace");
    path
}

#[test]
fn mistimed_replays_with_fail_on_incomplete_exit_3_naming_the_pattern() {
    let dir = tempdir();
    let burst = burst_after_the_end(dir.path());
    let run = stepscope([
        "analyze".as_ref(),
        arg(&burst),
        "--fail-on-incomplete".as_ref(),
        "--color".as_ref(),
        "never".as_ref(),
    ]);
    run.expect_code(3);
    assert!(
        run.stdout.contains("replay coverage: MISTIMED"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("pattern kernels_after_step"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("sgl-project/sglang #31545"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("DEBUG_CLR"),
        "no switch: {}",
        run.stdout
    );
    let json = stepscope(["analyze".as_ref(), arg(&burst), "--json".as_ref()]);
    json.expect_code(0);
    let doc = json.json();
    assert_eq!(str_at(&doc, "/verdict"), "mistimed");
    assert_eq!(
        str_at(&doc, "/files/0/replay_coverage/patterns/0/pattern"),
        "kernels_after_step"
    );
    assert_eq!(u64_at(&doc, "/files/0/replay_coverage/deferred_replays"), 1);
}
