//! Golden tests: real traces, a command, an `insta` snapshot. Traces are passed relative to
//! the shared traces folder (the working directory of every run), so paths do not vary;
//! `tool.version` is redacted so a release does not churn the snapshots.

use crate::common::{SGLANG_DECODE, VLLM_PIECEWISE, stepscope, stepscope_in, tempdir};
use std::ffi::OsStr;

fn terminal(file: &str) -> String {
    let run = stepscope(["analyze", file, "--color", "never", "--no-capture-folder"]);
    run.expect_code(0);
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
    run.stdout
}

fn json(file: &str) -> serde_json::Value {
    let run = stepscope(["analyze", file, "--json", "--no-capture-folder"]);
    run.expect_code(0);
    run.json()
}

#[test]
fn sglang_decode_terminal() {
    insta::assert_snapshot!(terminal(SGLANG_DECODE));
}

#[test]
fn sglang_decode_json() {
    insta::assert_json_snapshot!(json(SGLANG_DECODE), {
        ".tool.version" => "[version]",
        ".files[].path" => "[path]",
    });
}

#[test]
fn vllm_piecewise_terminal() {
    insta::assert_snapshot!(terminal(VLLM_PIECEWISE));
}

#[test]
fn vllm_piecewise_json() {
    insta::assert_json_snapshot!(json(VLLM_PIECEWISE), {
        ".tool.version" => "[version]",
        ".files[].path" => "[path]",
    });
}

#[test]
fn demo_terminal() {
    // The demo writes its traces under the temp folder and names them in the report: point
    // TMPDIR at a folder of our own and redact it.
    let tmp = tempdir();
    let run = stepscope_in(
        tmp.path(),
        ["demo", "--color", "never"],
        &[("TMPDIR", tmp.path().as_os_str() as &OsStr)],
    );
    run.expect_code(0);
    let prefix = format!("{}/stepscope-demo-", tmp.path().display());
    let redacted = redact_demo_dir(&run.stdout, &prefix);
    assert!(
        !redacted.contains(&tmp.path().display().to_string()),
        "every temp path is redacted"
    );
    insta::assert_snapshot!(redacted);
    // It cleans up after itself.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert!(left.is_empty(), "the demo left {left:?} behind");
}

/// Replaces `PREFIX<digits>` (the demo's `stepscope-demo-<pid>` folder) with `[DEMO_DIR]`.
fn redact_demo_dir(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        out.push_str("[DEMO_DIR]");
        rest = rest[at + prefix.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}
