//! Exit codes: 0 done, 2 bad input or usage, 3 `--fail-on-incomplete` with replays missing.

use crate::common::{
    SGLANG_DECODE, VLLM_PIECEWISE, arg, copy_trace, incomplete_piecewise, stepscope, str_at,
    tempdir, u64_at,
};

#[test]
fn complete_trace_exits_0() {
    let run = stepscope(["analyze", SGLANG_DECODE, "--color", "never"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("replay coverage: COMPLETE"),
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
