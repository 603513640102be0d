//! No output flag writes over an input, and no output is left half-written: an output path
//! that resolves to an input (as given, through `..`, a symbolic link or a hard link) or a
//! folder output that holds one is refused with exit 2 before any work, the input
//! byte-identical afterwards; a write that fails exits 2 whichever flag's file it was.

use crate::common::{
    SGLANG_CAPTURE, SGLANG_DECODE, TRITON, VLLM_PIECEWISE, arg, copy_trace, stepscope_in, tempdir,
};
use std::path::{Path, PathBuf};

/// Runs `args` in `dir` and checks the refusal: exit 2, both paths named, `input` unchanged.
#[track_caller]
fn refused(dir: &Path, args: &[&std::ffi::OsStr], input: &Path, words: &str) {
    let before = std::fs::read(input).unwrap();
    let run = stepscope_in(dir, args, &[]);
    run.expect_code(2);
    assert!(run.stderr.contains(words), "{}", run.stderr);
    let name = input.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        run.stderr.matches(&name).count() >= 1,
        "the input is named: {}",
        run.stderr
    );
    assert_eq!(std::fs::read(input).unwrap(), before, "the input is intact");
    assert!(run.stdout.is_empty(), "no report before the refusal");
}

#[test]
fn every_file_flag_equal_to_the_input_is_refused_and_the_input_kept() {
    let dir = tempdir();
    let trace = copy_trace(TRITON, dir.path(), "t.json.gz");
    for flag in ["--perfetto", "--html"] {
        refused(
            dir.path(),
            &["analyze".as_ref(), arg(&trace), flag.as_ref(), arg(&trace)],
            &trace,
            "is the input",
        );
    }
    // The same file reached other ways: `..`, a symbolic link, a hard link.
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let link = dir.path().join("link.json.gz");
    std::os::unix::fs::symlink(&trace, &link).unwrap();
    let hard = dir.path().join("hard.json.gz");
    std::fs::hard_link(&trace, &hard).unwrap();
    for other in [PathBuf::from("sub/../t.json.gz"), link, hard] {
        refused(
            dir.path(),
            &[
                "analyze".as_ref(),
                "t.json.gz".as_ref(),
                "--perfetto".as_ref(),
                other.as_os_str(),
            ],
            &trace,
            "is the input",
        );
    }
}

#[test]
fn folder_outputs_holding_an_input_are_refused() {
    let dir = tempdir();
    let trace = copy_trace(TRITON, dir.path(), "ranks/rank0.json.gz");
    for flag in ["--csv", "--parquet"] {
        refused(
            dir.path(),
            &[
                "analyze".as_ref(),
                "ranks".as_ref(),
                flag.as_ref(),
                ".".as_ref(),
            ],
            &trace,
            "holds the input",
        );
    }
    // A sibling folder is fine.
    let run = stepscope_in(
        dir.path(),
        ["analyze", "ranks", "--csv", "csv-out", "--no-progress"],
        &[],
    );
    run.expect_code(0);
    assert!(dir.path().join("csv-out/kernels.csv").is_file());
}

#[test]
fn a_capture_or_category_file_is_an_input_too() {
    let dir = tempdir();
    copy_trace(SGLANG_DECODE, dir.path(), "t.json.gz");
    let capture = copy_trace(SGLANG_CAPTURE, dir.path(), "cap.json.gz");
    refused(
        dir.path(),
        &[
            "analyze".as_ref(),
            "t.json.gz".as_ref(),
            "--capture".as_ref(),
            arg(&capture),
            "--html".as_ref(),
            "./cap.json.gz".as_ref(),
        ],
        &capture,
        "is the input",
    );
    let categories = dir.path().join("cats.toml");
    std::fs::copy(
        crate::common::repo().join("crates/stepscope-analysis/data/kernel_categories.toml"),
        &categories,
    )
    .unwrap();
    refused(
        dir.path(),
        &[
            "analyze".as_ref(),
            "t.json.gz".as_ref(),
            "--categories".as_ref(),
            arg(&categories),
            "--perfetto".as_ref(),
            "cats.toml".as_ref(),
        ],
        &categories,
        "is the input",
    );
}

#[test]
fn diff_html_over_a_side_is_refused() {
    let dir = tempdir();
    let base = copy_trace(VLLM_PIECEWISE, dir.path(), "a.json.gz");
    let new = copy_trace(VLLM_PIECEWISE, dir.path(), "b.json.gz");
    refused(
        dir.path(),
        &[
            "diff".as_ref(),
            arg(&base),
            arg(&new),
            "--html".as_ref(),
            arg(&new),
        ],
        &new,
        "is the input",
    );
}

#[test]
fn two_outputs_on_one_path_are_refused() {
    let dir = tempdir();
    let trace = copy_trace(TRITON, dir.path(), "t.json.gz");
    let run = stepscope_in(
        dir.path(),
        [
            "analyze",
            "t.json.gz",
            "--html",
            "out.json",
            "--perfetto",
            "./out.json",
        ],
        &[],
    );
    run.expect_code(2);
    assert!(run.stderr.contains("name the same path"), "{}", run.stderr);
    assert!(trace.is_file());
}

#[test]
fn a_failed_write_exits_2_for_every_output_flag_and_leaves_no_partial_file() {
    let dir = tempdir();
    copy_trace(TRITON, dir.path(), "t.json.gz");
    for flag in ["--html", "--perfetto"] {
        let run = stepscope_in(
            dir.path(),
            ["analyze", "t.json.gz", flag, "/dev/full", "--no-progress"],
            &[],
        );
        run.expect_code(2);
        assert!(
            run.stderr.contains("Failed to write `/dev/full`"),
            "{flag}: {}",
            run.stderr
        );
    }
    // A CSV folder that cannot be made: a file stands where its parent should be.
    std::fs::write(dir.path().join("blocker"), b"").unwrap();
    let run = stepscope_in(
        dir.path(),
        [
            "analyze",
            "t.json.gz",
            "--csv",
            "blocker/csv",
            "--no-progress",
        ],
        &[],
    );
    run.expect_code(2);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.ends_with(".partial")),
        "no temporary file is left: {names:?}"
    );
}

#[test]
fn an_existing_report_is_replaced_whole_and_a_device_is_streamed_to() {
    let dir = tempdir();
    copy_trace(TRITON, dir.path(), "t.json.gz");
    std::fs::write(dir.path().join("r.html"), b"old report").unwrap();
    stepscope_in(
        dir.path(),
        ["analyze", "t.json.gz", "--html", "r.html", "--no-progress"],
        &[],
    )
    .expect_code(0);
    let page = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"));
    assert!(page.trim_end().ends_with("</html>"), "the page is whole");
    stepscope_in(
        dir.path(),
        [
            "analyze",
            "t.json.gz",
            "--perfetto",
            "/dev/null",
            "--no-progress",
        ],
        &[],
    )
    .expect_code(0);
}

#[test]
fn csv_cells_that_read_as_formulas_are_written_as_text() {
    let dir = tempdir();
    let mut doc: serde_json::Value =
        serde_json::from_slice(&crate::common::gunzip(TRITON)).unwrap();
    let events = doc["traceEvents"].as_array_mut().unwrap();
    let names = [
        "=cmd|' /C calc'!A0",
        "@SUM(1+1)*cmd|' /C calc'!A0",
        "-2+3+cmd|' /C calc'!A0",
    ];
    let kernels = events
        .iter_mut()
        .filter(|e| e["cat"] == "kernel")
        .take(names.len());
    for (event, name) in kernels.zip(names) {
        event["name"] = name.into();
    }
    std::fs::write(dir.path().join("t.json"), doc.to_string()).unwrap();
    stepscope_in(
        dir.path(),
        [
            "analyze",
            "t.json",
            "--csv",
            "out",
            "--no-progress",
            "--top",
            "50",
        ],
        &[],
    )
    .expect_code(0);
    let mut reader = csv::Reader::from_path(dir.path().join("out/kernels.csv")).unwrap();
    let header = reader.headers().unwrap().clone();
    let kernel = header.iter().position(|h| h == "kernel").unwrap();
    let cells: Vec<String> = reader
        .records()
        .map(|r| r.unwrap()[kernel].to_owned())
        .collect();
    for name in names {
        assert!(
            cells.contains(&format!("'{name}")),
            "{name} is written as text: {cells:?}"
        );
    }
    assert!(
        cells.iter().all(|c| !c.starts_with(['=', '+', '-', '@'])),
        "{cells:?}"
    );
}

/// The report on standard output that cannot be written (a full disk behind `> out.json`) is
/// a failed write like a file flag's: exit 2, naming standard output, not the internal error's
/// 1; a closed pipe (`| head`) stays a quiet exit 0.
#[test]
fn a_report_that_stdout_cannot_take_exits_2() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args([
            "analyze".as_ref(),
            arg(&crate::common::trace(SGLANG_DECODE)),
            "--json".as_ref(),
        ])
        .stdout(full)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("Failed to write `standard output`"),
        "{stderr}"
    );
    assert!(stderr.contains("No space left on device"), "{stderr}");

    let mut closed = std::process::Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args([
            "analyze".as_ref(),
            arg(&crate::common::trace(SGLANG_DECODE)),
            "--json".as_ref(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    drop(closed.stdout.take());
    let output = closed.wait_with_output().expect("waits");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `profile --out` that is the config, or a folder holding it (or the baseline config), is
/// refused naming both, before any server starts; the config is untouched.
#[test]
fn a_profile_run_folder_over_its_config_is_refused() {
    let dir = tempdir();
    let config = dir.path().join("profile.yaml");
    std::fs::copy(
        crate::common::repo().join("configs/profile_vllm.yaml"),
        &config,
    )
    .unwrap();
    for (out, words) in [("profile.yaml", "is the input"), (".", "holds the input")] {
        refused(
            dir.path(),
            &[
                "profile".as_ref(),
                "profile.yaml".as_ref(),
                "--out".as_ref(),
                out.as_ref(),
                "--phases".as_ref(),
                "0".as_ref(),
            ],
            &config,
            words,
        );
    }
}

#[test]
fn every_output_file_gets_the_mode_the_users_umask_gives() {
    // Outputs are written to a temporary file and renamed; the temporary's owner-only mode
    // must not reach the report a colleague is meant to open.
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let trace = copy_trace(TRITON, dir.path(), "t.json.gz");
    let run = stepscope_in(
        dir.path(),
        [
            "analyze".as_ref(),
            arg(&trace),
            "--html".as_ref(),
            "r.html".as_ref(),
            "--perfetto".as_ref(),
            "p.json".as_ref(),
            "--csv".as_ref(),
            "csv".as_ref(),
            "--parquet".as_ref(),
            "pq".as_ref(),
            "--no-progress".as_ref(),
        ],
        &[],
    );
    run.expect_code(0);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let plain = dir.path().join("plain");
    std::fs::File::create(&plain).unwrap();
    let mut files = vec![dir.path().join("r.html"), dir.path().join("p.json")];
    for folder in ["csv", "pq"] {
        for entry in std::fs::read_dir(dir.path().join(folder)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                files.push(path);
            } else {
                for inner in std::fs::read_dir(&path).unwrap() {
                    files.push(inner.unwrap().path());
                }
            }
        }
    }
    assert!(files.len() > 4, "{files:?}");
    for file in files {
        assert_eq!(mode(&file), mode(&plain), "{}", file.display());
    }
}
