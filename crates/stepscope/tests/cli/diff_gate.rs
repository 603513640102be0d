//! `stepscope diff --fail-on-regression PCT`: each stage's GPU time per step compared beyond
//! its step-to-step noise, on a real trace of five training steps (HTA's A100 trace) and a
//! copy whose kernels all run 30 % longer.

use crate::common::{Run, arg, f64_at, stepscope, tempdir, trace};
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Five `ProfilerStep`s with GPU work.
const STEPS: &str = "hta/tests/data/negative_queue_length_values_check/rank0.json.gz";

fn diff(base: &Path, new: &Path, extra: &[&str]) -> Run {
    let mut args: Vec<&OsStr> = vec![
        "diff".as_ref(),
        arg(base),
        arg(new),
        "--no-progress".as_ref(),
    ];
    args.extend(extra.iter().map(OsStr::new));
    stepscope(args)
}

/// The trace with every kernel's duration times `factor` (memcpy and memset unchanged).
fn stretched(dir: &Path, factor: f64) -> PathBuf {
    let mut doc: Value = serde_json::from_slice(&crate::common::gunzip(STEPS)).expect("JSON");
    for event in doc["traceEvents"].as_array_mut().expect("events") {
        if event["cat"] == "kernel" {
            let dur = event["dur"].as_f64().expect("a duration");
            event["dur"] = json!(dur * factor);
        }
    }
    let path = dir.join(format!("stretched_{factor}.json.gz"));
    crate::common::write_gz(&path, &serde_json::to_vec(&doc).expect("JSON"));
    path
}

fn step_stage(doc: &Value) -> &Value {
    let stages = doc["stages"].as_array().expect("stages");
    stages
        .iter()
        .find(|s| s["stage"] == "step")
        .expect("the step stage")
}

#[test]
fn kernels_thirty_percent_slower_fail_the_gate_beyond_noise() {
    let dir = tempdir();
    let base = trace(STEPS);
    let slow = stretched(dir.path(), 1.3);
    let run = diff(&base, &slow, &["--fail-on-regression", "5", "--json"]);
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(
        doc["regression_gate"]["slower"],
        json!(["step"]),
        "{}",
        doc["regression_gate"]
    );
    assert_eq!(f64_at(&doc, "/regression_gate/threshold_pct"), 5.0);
    let per_step = &step_stage(&doc)["per_step"];
    assert_eq!(
        (
            per_step["base_steps"].as_u64(),
            per_step["new_steps"].as_u64()
        ),
        (Some(5), Some(5))
    );
    let (low, mid, high) = (
        f64_at(per_step, "/relative_low"),
        f64_at(per_step, "/relative"),
        f64_at(per_step, "/relative_high"),
    );
    // Kernels are most of each step's GPU time, so the median step grows by nearly 30 %.
    assert!(
        0.2 < mid && mid <= 0.3 && low > 0.05 && low <= mid && mid <= high,
        "{per_step}"
    );
    let median = f64_at(per_step, "/new_median_us") / f64_at(per_step, "/base_median_us");
    assert!((median - 1.0 - mid).abs() < 1e-9);

    let terminal = diff(
        &base,
        &slow,
        &["--fail-on-regression", "5", "--color", "never"],
    );
    terminal.expect_code(3);
    assert!(
        terminal
            .stdout
            .contains("REGRESSION: step GPU time per step grew by more than 5 %"),
        "{}",
        terminal.stdout
    );
    assert!(
        terminal.stdout.contains("beyond step-to-step noise"),
        "{}",
        terminal.stdout
    );
    // A threshold beyond the interval's low end passes; without the flag, nothing is gated.
    diff(&base, &slow, &["--fail-on-regression", "60"]).expect_code(0);
    let ungated = diff(&base, &slow, &["--json"]);
    ungated.expect_code(0);
    assert!(ungated.json()["regression_gate"].is_null());
}

#[test]
fn the_same_run_twice_is_within_noise_and_faster_kernels_pass() {
    let dir = tempdir();
    let base = trace(STEPS);
    let same = diff(&base, &base, &["--fail-on-regression", "0", "--json"]);
    same.expect_code(0);
    let doc = same.json();
    assert_eq!(doc["regression_gate"]["slower"], json!([]));
    let per_step = &step_stage(&doc)["per_step"];
    assert_eq!(f64_at(per_step, "/relative"), 0.0);
    assert!(f64_at(per_step, "/relative_low") <= 0.0 && f64_at(per_step, "/relative_high") >= 0.0);
    let faster = stretched(dir.path(), 0.7);
    diff(&base, &faster, &["--fail-on-regression", "0"]).expect_code(0);
}

#[test]
fn a_bad_percentage_is_refused() {
    let base = trace(STEPS);
    for bad in ["-5", "five", "nan"] {
        let flag = format!("--fail-on-regression={bad}");
        let run = diff(&base, &base, &[&flag]);
        run.expect_code(2);
        assert!(
            run.stderr.contains("is not a percentage"),
            "{bad}: {}",
            run.stderr
        );
    }
}
