//! Byte-exact snapshots of whole documents: `analyze --json` (and `diff --json`) as the binary
//! prints them, key order, number formatting and trailing newline included, on real traces and
//! on the damaged and incomplete traces derived from them; and the terminal report of the
//! verdicts the golden tests do not cover (incomplete, damaged, a refused diff stage). The
//! golden tests compare parsed JSON, which sorts keys; these pin the text itself, so a change
//! in how verdicts, counters, findings or patterns are carried to the renderers cannot move a
//! byte unnoticed.
//!
//! Only `tool.version` is redacted. Derived traces are written to a temp folder and analysed
//! there under a relative name, so no path varies between runs.

use crate::common::{
    SGLANG_CAPTURE, SGLANG_DECODE, VLLM_FULL, VLLM_PIECEWISE, copy_trace, incomplete_piecewise,
    stepscope_in, tempdir, traces_dir,
};
use std::path::Path;

/// `text` with the one `"version": "<this build>"` of `tool` replaced by `[version]`; the
/// document ends with one newline (snapshots do not keep it).
fn redact_version(text: &str) -> String {
    assert!(
        text.ends_with("}\n") && !text.ends_with("\n\n"),
        "one trailing newline"
    );
    let version = format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION"));
    assert_eq!(text.matches(&version).count(), 1, "one tool version");
    text.replacen(&version, "\"version\": \"[version]\"", 1)
}

/// Runs the binary in `dir` and returns its stdout after checking the exit code and that
/// nothing was printed on stderr.
fn stdout_in(dir: &Path, args: &[&str], code: i32) -> String {
    let run = stepscope_in(dir, args, &[]);
    run.expect_code(code);
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
    run.stdout
}

/// `analyze ARGS --json` in the curated traces folder, exit 0.
fn analyze_json(args: &[&str]) -> String {
    let mut all = vec!["analyze"];
    all.extend_from_slice(args);
    all.extend(["--json", "--no-progress"]);
    redact_version(&stdout_in(&traces_dir(), &all, 0))
}

/// A temp folder holding the piecewise trace with replays 5 and 6 emptied
/// (`incomplete.json`), with one replay kernel of negative duration (`damaged.json`), and
/// the untouched trace (`piecewise.json.gz`).
fn derived() -> tempfile::TempDir {
    let dir = tempdir();
    incomplete_piecewise(dir.path(), "incomplete.json");
    let damaged = serde_json::to_vec(&crate::damage_matrix::damaged_doc()).expect("JSON");
    std::fs::write(dir.path().join("damaged.json"), damaged).expect("write");
    copy_trace(VLLM_PIECEWISE, dir.path(), "piecewise.json.gz");
    dir
}

/// The corpus holds `capture_traces/` folders beside the vLLM traces that the curated set
/// does not carry: these snapshots pin what the traces alone say, the same in both.
const NO_FOLDER: &str = "--no-capture-folder";

#[test]
fn sglang_decode_with_its_capture_json() {
    insta::assert_snapshot!(analyze_json(&[SGLANG_DECODE, "--capture", SGLANG_CAPTURE]));
}

#[test]
fn vllm_piecewise_json() {
    insta::assert_snapshot!(analyze_json(&[VLLM_PIECEWISE, NO_FOLDER]));
}

#[test]
fn two_files_combined_json() {
    insta::assert_snapshot!(analyze_json(&[VLLM_PIECEWISE, VLLM_FULL, NO_FOLDER]));
}

/// `analyze FILE --json` and the terminal report of a derived trace, pinned as
/// `NAME_json` and `NAME_terminal`.
fn assert_json_and_terminal(file: &str, name: &str) {
    let dir = derived();
    let json = stdout_in(dir.path(), &["analyze", file, "--json", "--no-progress"], 0);
    insta::assert_snapshot!(format!("{name}_json"), redact_version(&json));
    let terminal = stdout_in(
        dir.path(),
        &["analyze", file, "--color", "never", "--no-progress"],
        0,
    );
    insta::assert_snapshot!(format!("{name}_terminal"), terminal);
}

#[test]
fn incomplete_piecewise_json_and_terminal() {
    assert_json_and_terminal("incomplete.json", "incomplete_piecewise");
}

#[test]
fn damaged_piecewise_json_and_terminal() {
    assert_json_and_terminal("damaged.json", "damaged_piecewise");
}

#[test]
fn diff_refusing_the_incomplete_side_json_and_terminal() {
    let dir = derived();
    let json = stdout_in(
        dir.path(),
        &[
            "diff",
            "piecewise.json.gz",
            "incomplete.json",
            "--json",
            "--no-progress",
        ],
        3,
    );
    insta::assert_snapshot!("diff_refused_json", redact_version(&json));
    let terminal = stdout_in(
        dir.path(),
        &[
            "diff",
            "incomplete.json",
            "piecewise.json.gz",
            "--color",
            "never",
            "--no-progress",
        ],
        3,
    );
    insta::assert_snapshot!("diff_refused_terminal", terminal);
}
