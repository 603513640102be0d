//! Several files are ranks of one run: one report each and a `combined` section of sums.

use crate::common::{
    SGLANG_CAPTURE, SGLANG_DECODE, VLLM_FULL, VLLM_PIECEWISE, arg, copy_trace, f64_at, gunzip,
    incomplete_piecewise, stepscope, str_at, tempdir, trace,
};
use serde_json::Value;
use std::path::PathBuf;
use stepscope_analysis::Counter;

fn assert_combined_sums(doc: &Value, files: usize) {
    let list = doc["files"].as_array().expect("files");
    assert_eq!(list.len(), files);
    let combined = &doc["combined"];
    assert_eq!(combined["files"].as_u64(), Some(files as u64));
    for key in Counter::ALL.map(Counter::name) {
        let sum: u64 = list
            .iter()
            .map(|f| f["replay_coverage"][key].as_u64().expect(key))
            .sum();
        assert_eq!(
            combined["replay_coverage"][key].as_u64(),
            Some(sum),
            "combined {key}"
        );
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0);
    for (combined_key, file_key) in [
        (
            "/replay_coverage/missing_gpu_time_low_us",
            "/replay_coverage/missing_gpu_time_low_us",
        ),
        (
            "/breakdown/total_gpu_time_us",
            "/breakdown/total_gpu_time_us",
        ),
    ] {
        let sum: f64 = list.iter().map(|f| f64_at(f, file_key)).sum();
        let got = f64_at(combined, combined_key);
        assert!(close(got, sum), "combined {combined_key}: {got} vs {sum}");
    }
    // Ratios follow from the sums.
    let n = &combined["replay_coverage"];
    let (replays, recorded) = (n["replays"].as_u64(), n["recorded_replays"].as_u64());
    if let (Some(replays), Some(recorded)) = (replays, recorded) {
        if replays > 0 {
            let coverage = n["coverage"].as_f64().expect("coverage");
            assert!(close(coverage, recorded as f64 / replays as f64));
        }
    }
}

#[test]
fn two_copies_are_counted_once_and_said() {
    let dir = tempdir();
    let a = copy_trace(SGLANG_DECODE, dir.path(), "copy_a/trace.json.gz");
    let b = copy_trace(SGLANG_DECODE, dir.path(), "copy_b/trace.json.gz");
    let c = incomplete_piecewise(dir.path(), "piecewise_missing_2.json");
    let run = stepscope([
        "analyze".as_ref(),
        arg(&a),
        arg(&b),
        arg(&c),
        arg(&a),
        "--json".as_ref(),
    ]);
    run.expect_code(0);
    let doc = run.json();
    assert_combined_sums(&doc, 2);
    let paths: Vec<&str> = (0..2)
        .map(|i| str_at(&doc, &format!("/files/{i}/path")))
        .collect();
    assert_eq!(paths, [a.display().to_string(), c.display().to_string()]);
    let warnings: Vec<&str> = doc["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let said = |needle: &str| warnings.iter().any(|w| w.contains(needle));
    assert!(
        said(&format!(
            "`{}` holds the same trace as `{}`",
            b.display(),
            a.display()
        )),
        "{warnings:?}"
    );
    assert!(
        said(&format!(
            "`{}` is the same file as `{}`",
            a.display(),
            a.display()
        )),
        "{warnings:?}"
    );
    assert!(said("both claim rank 0"), "{warnings:?}");
    // Known facts: 1 + 25 replays, 2 of them empty; the worst verdict wins.
    assert_eq!(doc["combined"]["replay_coverage"]["replays"], 26);
    assert_eq!(doc["combined"]["replay_coverage"]["empty_replays"], 2);
    assert_eq!(doc["combined"]["verdict"], "incomplete");
    assert_eq!(doc["verdict"], "incomplete");
    let text = stepscope([
        "analyze".as_ref(),
        arg(&a),
        arg(&b),
        "--color".as_ref(),
        "never".as_ref(),
    ]);
    assert!(text.stdout.starts_with("warning: "), "{}", text.stdout);
}

#[test]
fn a_single_file_has_no_combined_section() {
    let run = stepscope(["analyze", SGLANG_DECODE, "--json"]);
    run.expect_code(0);
    assert_eq!(run.json()["combined"], Value::Null);
}

#[test]
fn terminal_report_has_the_all_files_section() {
    let run = stepscope(["analyze", SGLANG_DECODE, VLLM_FULL, "--color", "never"]);
    run.expect_code(0);
    assert!(run.stdout.contains("══ all 2 files ══"), "{}", run.stdout);
}

fn write_zst(path: &std::path::Path, bytes: &[u8]) {
    let compressed = zstd::encode_all(bytes, 3).expect("zstd");
    std::fs::write(path, compressed).expect("write");
}

#[test]
fn a_folder_is_searched_recursively_in_sorted_order() {
    let dir = tempdir();
    let root = dir.path();
    // root/
    //   a/b/rank2.json.zst   (piecewise vLLM, zstd)
    //   a/notes.txt          (ignored)
    //   rank0.json.gz        (SGLang decode)
    //   rank1.json           (vLLM full decode, plain)
    //   rank3.json.gz.bak    (ignored)
    //   z/                   (empty folder)
    std::fs::create_dir_all(root.join("a/b")).expect("mkdir");
    std::fs::create_dir_all(root.join("z")).expect("mkdir");
    write_zst(&root.join("a/b/rank2.json.zst"), &gunzip(VLLM_PIECEWISE));
    std::fs::write(root.join("a/notes.txt"), "not a trace").expect("write");
    copy_trace(SGLANG_DECODE, root, "rank0.json.gz");
    std::fs::write(root.join("rank1.json"), gunzip(VLLM_FULL)).expect("write");
    std::fs::copy(trace(SGLANG_DECODE), root.join("rank3.json.gz.bak")).expect("copy");

    let run = stepscope(["analyze".as_ref(), arg(root), "--json".as_ref()]);
    run.expect_code(0);
    let doc = run.json();
    let expected: Vec<PathBuf> = ["a/b/rank2.json.zst", "rank0.json.gz", "rank1.json"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    let paths: Vec<String> = doc["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().expect("path").to_owned())
        .collect();
    let expected: Vec<String> = expected.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(paths, expected);
    assert_combined_sums(&doc, 3);
    // Each format was read in full: the manifest's facts.
    assert_eq!(doc["files"][0]["events"]["total"], 19289);
    assert_eq!(doc["files"][0]["replay_coverage"]["replays"], 25);
    assert_eq!(doc["files"][1]["events"]["total"], 2058);
    assert_eq!(doc["files"][2]["events"]["total"], 1993);
    assert_eq!(doc["files"][2]["replay_coverage"]["recorded_nodes"], 421);
    // Each holds sizes that rest on one replay (DESIGN §3, issue 7: said, not hidden).
    assert_eq!(doc["verdict"], "unverified");
}

#[test]
fn a_folder_and_a_file_mix() {
    let dir = tempdir();
    copy_trace(SGLANG_DECODE, dir.path(), "ranks/rank0.json.gz");
    copy_trace(VLLM_PIECEWISE, dir.path(), "ranks/rank1.json.gz");
    let run = stepscope([
        "analyze".as_ref(),
        arg(&dir.path().join("ranks")),
        VLLM_FULL.as_ref(),
        "--json".as_ref(),
    ]);
    run.expect_code(0);
    let doc = run.json();
    assert_combined_sums(&doc, 3);
    assert_eq!(str_at(&doc, "/files/2/path"), VLLM_FULL);
}

/// A folder with a symbolic link to itself (or to a parent): the walk follows it until the
/// OS refuses (ELOOP, ~40 levels) and the same trace is analysed once per level — 41 times
/// here — and `combined` sums them all, with exit 0.
#[cfg(unix)]
#[test]
fn a_symlink_loop_in_a_folder_counts_each_trace_once() {
    let dir = tempdir();
    copy_trace(SGLANG_DECODE, dir.path(), "rank0.json.gz");
    std::os::unix::fs::symlink(".", dir.path().join("loop")).expect("symlink");
    let run = stepscope(["analyze".as_ref(), arg(dir.path()), "--json".as_ref()]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["files"].as_array().expect("files").len(), 1);
}

/// The real inference folder of the shared traces, as a folder argument: every file found in
/// sorted order, none short, empty or damaged (no public trace shows the symptom). The
/// `capture_traces/` files beside a run's profile are that run's captures, not ranks: they
/// settle the sizes of the SGLang and vLLM replays (complete), while xdit's capture folder is
/// all of its run, read as its trace (`unverified`: its capture holds one launch more). The
/// combined replays are 1 + 1 + 25 + 1, and the six files claiming rank 0 are one warning.
#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn the_real_inference_folder_is_all_complete() {
    const FOLDER: &str = "tracelens/tests/traces/inference";
    let run = stepscope(["analyze", FOLDER, "--json", "--fail-on-incomplete"]);
    run.expect_code(0);
    let doc = run.json();
    let files = doc["files"].as_array().expect("files");
    let paths: Vec<&str> = files
        .iter()
        .map(|f| f["path"].as_str().expect("path"))
        .collect();
    let decode = "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";
    let full = "tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz";
    let piecewise =
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz";
    let xdit =
        "tracelens/tests/traces/inference/xdit_flux.1/capture_traces/capture_trace_rank_0.json.gz";
    assert_eq!(
        paths,
        [
            decode,
            "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
            full,
            piecewise,
            xdit,
            "tracelens/tests/traces/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz",
        ]
    );
    let captures = [
        (decode, "sglang_decode/capture_traces/bs_32_rank0.json.gz"),
        (
            full,
            "vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
        ),
        (
            piecewise,
            "vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz",
        ),
    ];
    for file in files {
        assert_capture_use(file, &captures);
    }
    assert_inference_sums(&doc);
}

/// A file sized by its run's capture is complete and names it; the others use none.
fn assert_capture_use(file: &Value, captures: &[(&str, &str)]) {
    let path = file["path"].as_str().expect("path");
    let verdict = file["replay_coverage"]["verdict"]
        .as_str()
        .expect("verdict");
    let used: Vec<&str> = file["capture_traces"]
        .as_array()
        .expect("capture_traces")
        .iter()
        .map(|c| c.as_str().expect("path"))
        .collect();
    match captures.iter().find(|(p, _)| *p == path) {
        Some((_, capture)) => {
            assert_eq!(verdict, "complete", "{path}: settled by its capture");
            assert_eq!(
                used,
                [format!("tracelens/tests/traces/inference/{capture}")]
            );
        }
        None => {
            assert!(
                ["unverified", "no-replays"].contains(&verdict),
                "{path}: {verdict}"
            );
            assert!(used.is_empty(), "{path}: {used:?}");
        }
    }
}

/// The inference folder's combined numbers and warnings.
fn assert_inference_sums(doc: &Value) {
    assert_combined_sums(doc, 6);
    assert_eq!(doc["combined"]["replay_coverage"]["replays"], 28);
    assert_eq!(
        doc["combined"]["replay_coverage"]["recorded_nodes"],
        544 + 421 + 361 + 993
    );
    assert_eq!(doc["verdict"], "unverified");
    assert_eq!(doc["combined"]["replay_coverage"]["unverified_replays"], 1);
    let warnings: Vec<&str> = doc["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| w.as_str().expect("text"))
        .collect();
    let claims: Vec<&&str> = warnings.iter().filter(|w| w.contains("claim")).collect();
    assert_eq!(claims.len(), 1, "{warnings:?}");
    assert!(claims[0].starts_with("6 files claim ("), "{claims:?}");
}

/// A run folder as SGLang writes it: the capture trace in `capture_traces/` is the capture of
/// the decode profile beside it (its replay's size is settled: COMPLETE, even under
/// `--strict`), never a second rank 0; the terminal names the capture it used.
#[test]
fn a_run_folder_uses_its_capture_traces_as_captures() {
    let dir = tempdir();
    let run = dir.path().join("sglang_decode");
    copy_trace(SGLANG_DECODE, &run, "sglang_Qwen3-8B_decode.json.gz");
    copy_trace(
        SGLANG_CAPTURE,
        &run.join("capture_traces"),
        "bs_32_rank0.json.gz",
    );
    let text = stepscope(["analyze".as_ref(), arg(&run), "--strict".as_ref()]);
    text.expect_code(0);
    assert!(
        text.stdout.contains("replay coverage: COMPLETE"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("capture trace: "), "{}", text.stdout);
    assert!(!text.stdout.contains("claim rank"), "{}", text.stdout);
    let doc = stepscope(["analyze".as_ref(), arg(&run), "--json".as_ref()]).json();
    assert_eq!(doc["files"].as_array().expect("files").len(), 1);
    assert!(doc["combined"].is_null());
    assert_eq!(str_at(&doc, "/verdict"), "complete");
}

/// A rank that recorded nothing, a file that could not be read and a file read only up to
/// a break each keep the combined verdict from `complete`, in the JSON and the terminal,
/// with no gate flag.
#[test]
fn every_input_counts_in_the_combined_verdict() {
    let dir = tempdir();
    let good = copy_trace(VLLM_PIECEWISE, dir.path(), "rank0.json.gz");
    let empty = dir.path().join("rank1.json");
    std::fs::write(&empty, r#"{"traceEvents": []}"#).unwrap();
    let broken = dir.path().join("rank2.json");
    std::fs::write(&broken, "{\"traceEvents\": [{\"ph\": ").unwrap();
    let bytes = gunzip(VLLM_FULL);
    let cut = dir.path().join("rank3.json");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();

    let cases: [(&[&PathBuf], &[&str], &str, &str); 3] = [
        (
            &[&good, &empty],
            &[],
            "no-events",
            "1 of 2 files hold no events",
        ),
        (
            &[&good, &broken],
            &[],
            "unreadable",
            "1 of 2 input files could not be read",
        ),
        (
            &[&good, &cut],
            &["--allow-truncated"],
            "partial",
            "1 of 2 files read only up to a break",
        ),
    ];
    for (files, flags, verdict, words) in cases {
        let mut args: Vec<&std::ffi::OsStr> = vec!["analyze".as_ref(), "--no-progress".as_ref()];
        args.extend(files.iter().map(|p| arg(p)));
        args.extend(flags.iter().map(std::ffi::OsStr::new));
        let text = stepscope(args.clone());
        assert!(
            text.stdout
                .contains(&format!("{} ({words})", verdict.to_uppercase()))
                || text.stdout.contains(&format!("({words})")),
            "{verdict}: {}",
            text.stdout
        );
        assert!(
            !text.stdout.contains("replay coverage: COMPLETE ("),
            "{}",
            text.stdout
        );
        args.push("--json".as_ref());
        let doc = stepscope(args).json();
        assert_eq!(str_at(&doc, "/verdict"), verdict, "top level");
        assert_eq!(str_at(&doc, "/combined/verdict"), verdict, "combined");
        assert_eq!(doc["combined"]["files"].as_u64(), Some(2));
    }
}

/// A capture trace saved beside the profile (not in a `capture_traces/` folder) is known by
/// what it holds — graph captures and no replay, beside a file that replays graphs — and is
/// used as that file's capture, not counted as a second rank 0.
#[test]
fn a_capture_file_beside_the_profile_is_known_by_its_content() {
    let dir = tempdir();
    copy_trace(SGLANG_DECODE, dir.path(), "decode.json.gz");
    copy_trace(SGLANG_CAPTURE, dir.path(), "graphs.json.gz");
    let run = stepscope([
        "analyze".as_ref(),
        arg(dir.path()),
        "--json".as_ref(),
        "--strict".as_ref(),
    ]);
    run.expect_code(0);
    let doc = run.json();
    let files = doc["files"].as_array().expect("files");
    assert_eq!(files.len(), 1, "the capture is not a rank");
    assert_eq!(str_at(&files[0], "/replay_coverage/verdict"), "complete");
    let warnings = doc["warnings"].to_string();
    assert!(
        warnings.contains(
            "graphs.json.gz` records graph captures and replays none: read as the capture of"
        ),
        "{warnings}"
    );
    assert!(!warnings.contains("claim rank"), "{warnings}");
}
