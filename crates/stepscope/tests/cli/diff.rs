//! `stepscope diff BASE NEW`: every number is checked against `analyze --json` of each side,
//! read independently here; a side that lost replays (the real piecewise vLLM trace with two
//! replays' kernels removed) refuses the stage holding them unless `--force`.

use crate::common::{
    Run, SGLANG_CAPTURE, SGLANG_DECODE, VLLM_FULL, VLLM_PIECEWISE, arg, copy_trace, f64_at,
    incomplete_piecewise, stepscope, str_at, tempdir, trace, u64_at,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::Path;

fn diff(base: &Path, new: &Path, extra: &[&str]) -> Run {
    let mut args: Vec<&OsStr> = vec![
        "diff".as_ref(),
        arg(base),
        arg(new),
        "--no-progress".as_ref(),
        "--color".as_ref(),
        "never".as_ref(),
    ];
    args.extend(extra.iter().map(OsStr::new));
    stepscope(args)
}

/// `analyze --json --top 100000` of one input: its `files[0]` (or `combined`, for several
/// files) breakdown stages by name, with every kernel.
fn analysed_stages(input: &Path) -> BTreeMap<String, Value> {
    let run = stepscope([
        "analyze".as_ref(),
        arg(input),
        "--json".as_ref(),
        "--top".as_ref(),
        "100000".as_ref(),
        "--no-progress".as_ref(),
    ]);
    run.expect_code(0);
    let doc = run.json();
    let breakdown = if doc["combined"].is_object() {
        doc["combined"]["breakdown"].clone()
    } else {
        doc["files"][0]["breakdown"].clone()
    };
    breakdown["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| (str_at(s, "/stage").to_owned(), s.clone()))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 2e-3
}

/// Rows of an `analyze` stage (`categories` or `kernels`) by (name, category): (time, events).
fn rows(stage: Option<&Value>, key: &str) -> BTreeMap<(String, String), (f64, u64)> {
    let Some(stage) = stage else {
        return BTreeMap::new();
    };
    stage[key]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                (
                    str_at(r, "/name").to_owned(),
                    str_at(r, "/category").to_owned(),
                ),
                (f64_at(r, "/time_us"), u64_at(r, "/events")),
            )
        })
        .collect()
}

fn row_ids(rows: &Value) -> BTreeSet<(String, String)> {
    rows.as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                str_at(r, "/name").to_owned(),
                str_at(r, "/category").to_owned(),
            )
        })
        .collect()
}

/// Every row of a diff stage (`categories` or `kernels`) equals the two analyses' rows.
#[track_caller]
fn assert_rows(diff_stage: &Value, key: &str, base: Option<&Value>, new: Option<&Value>) {
    let (base, new) = (rows(base, key), rows(new, key));
    let listed = diff_stage[key].as_array().expect("rows");
    let all: BTreeSet<&(String, String)> = base.keys().chain(new.keys()).collect();
    assert_eq!(
        listed.len(),
        all.len(),
        "{key}: one row per name and category"
    );
    for row in listed {
        let id = (
            str_at(row, "/name").to_owned(),
            str_at(row, "/category").to_owned(),
        );
        let (b, n) = (
            base.get(&id).copied().unwrap_or((0.0, 0)),
            new.get(&id).copied().unwrap_or((0.0, 0)),
        );
        assert!(
            close(f64_at(row, "/base/time_us"), b.0),
            "{key} {id:?} base"
        );
        assert!(close(f64_at(row, "/new/time_us"), n.0), "{key} {id:?} new");
        assert_eq!(u64_at(row, "/base/events"), b.1, "{key} {id:?}");
        assert_eq!(u64_at(row, "/new/events"), n.1, "{key} {id:?}");
        assert!(
            close(f64_at(row, "/delta_us"), n.0 - b.0),
            "{key} {id:?} delta"
        );
    }
    let deltas: Vec<f64> = listed
        .iter()
        .map(|r| f64_at(r, "/delta_us").abs())
        .collect();
    assert!(
        deltas.windows(2).all(|w| w[0] >= w[1]),
        "{key} by |delta| descending: {deltas:?}"
    );
}

#[test]
fn a_trace_against_itself_changes_nothing() {
    let input = trace(SGLANG_DECODE);
    let run = diff(&input, &input, &["--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["refused"], json!([]));
    assert_eq!(doc["forced"], false);
    let stages = doc["stages"].as_array().expect("stages");
    assert_eq!(stages.len(), analysed_stages(&input).len());
    for stage in stages {
        assert_eq!(f64_at(stage, "/delta_us"), 0.0, "{}", stage["stage"]);
        assert!(f64_at(stage, "/base/time_us") > 0.0);
        assert_eq!(stage["relative"], 0.0);
        for key in ["categories", "kernels"] {
            let listed = stage[key].as_array().expect("rows");
            assert!(!listed.is_empty());
            assert!(listed.iter().all(|r| r["delta_us"] == 0.0), "{key}");
        }
        assert_eq!(stage["appeared"], json!([]));
        assert_eq!(stage["vanished"], json!([]));
        assert_eq!(
            (
                u64_at(stage, "/appeared_left_out"),
                u64_at(stage, "/vanished_left_out")
            ),
            (0, 0)
        );
    }
    let run = diff(&input, &input, &[]);
    run.expect_code(0);
    assert!(!run.stdout.contains("appeared in NEW"), "{}", run.stdout);
    assert!(!run.stdout.contains("REFUSED"), "{}", run.stdout);
}

/// The stages of `analyze --json` of `input` that hold unrecorded replays.
fn stages_with_unrecorded_replays(input: &Path) -> BTreeSet<String> {
    analysed_stages(input)
        .into_iter()
        .filter(|(_, s)| u64_at(s, "/unrecorded_replays") > 0)
        .map(|(name, _)| name)
        .collect()
}

/// The real piecewise trace (BASE) and it with two replays' kernels removed (NEW).
struct LostReplays {
    _dir: tempfile::TempDir,
    complete: std::path::PathBuf,
    incomplete: std::path::PathBuf,
    /// The stages `analyze` counts the removed replays in.
    lost: BTreeSet<String>,
    /// `analyze`'s coverage numbers of NEW, as the refusal must quote them.
    counts: String,
}

fn lost_replays() -> LostReplays {
    let dir = tempdir();
    let incomplete = incomplete_piecewise(dir.path(), "incomplete.json");
    let lost = stages_with_unrecorded_replays(&incomplete);
    assert!(
        !lost.is_empty(),
        "the removed replays are counted in a stage"
    );
    let coverage = crate::common::replay_coverage(&incomplete);
    assert_eq!(coverage["verdict"], "incomplete");
    let counts = format!(
        "{} of {} graph replays recorded ({} empty)",
        u64_at(&coverage, "/recorded_replays"),
        u64_at(&coverage, "/replays"),
        u64_at(&coverage, "/empty_replays"),
    );
    LostReplays {
        _dir: dir,
        complete: trace(VLLM_PIECEWISE),
        incomplete,
        lost,
        counts,
    }
}

#[test]
fn a_side_that_lost_replays_refuses_their_stage_naming_the_side() {
    let case = lost_replays();
    let run = diff(&case.complete, &case.incomplete, &["--json"]);
    run.expect_code(3);
    let doc = run.json();
    let refused = doc["refused"].as_array().expect("refused");
    let stages: BTreeSet<String> = refused
        .iter()
        .map(|r| str_at(r, "/stage").to_owned())
        .collect();
    assert_eq!(
        stages, case.lost,
        "the stage of the lost replays is refused"
    );
    for entry in refused {
        assert_eq!(entry["sides"].as_array().map(Vec::len), Some(1));
        let side = &entry["sides"][0];
        assert_eq!(
            (side["side"].as_str(), side["verdict"].as_str()),
            (Some("new"), Some("incomplete"))
        );
        let reason = str_at(entry, "/reason");
        assert!(reason.starts_with("NEW (INCOMPLETE): "), "{reason}");
        assert!(
            reason.contains(&case.counts) && reason.contains("speedup"),
            "{reason}"
        );
        assert!(str_at(entry, "/fix").contains("--force"));
    }
    let compared: BTreeSet<&str> = doc["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| str_at(s, "/stage"))
        .collect();
    let both: BTreeSet<String> = analysed_stages(&case.complete)
        .into_keys()
        .chain(analysed_stages(&case.incomplete).into_keys())
        .collect();
    let expected: BTreeSet<&str> = both
        .iter()
        .filter(|s| !case.lost.contains(*s))
        .map(String::as_str)
        .collect();
    assert_eq!(compared, expected, "every other stage is compared");
    assert_eq!(doc["forced"], false);

    let reversed = diff(&case.incomplete, &case.complete, &["--json"]);
    reversed.expect_code(3);
    let reason = str_at(&reversed.json(), "/refused/0/reason").to_owned();
    assert!(
        reason.starts_with("BASE (INCOMPLETE)") && reason.contains("slowdown"),
        "{reason}"
    );
}

/// SGLang prefill steps (no graph replays).
const SGLANG_PREFILL: &str =
    "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz";

#[test]
fn stages_without_lost_replays_are_still_compared() {
    let case = lost_replays();
    let dir = tempdir();
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    copy_trace(VLLM_PIECEWISE, &base, "rank0.json.gz");
    copy_trace(SGLANG_PREFILL, &base, "rank1.json.gz");
    std::fs::create_dir_all(&new).expect("mkdir");
    std::fs::copy(&case.incomplete, new.join("rank0.json")).expect("copy");
    copy_trace(SGLANG_PREFILL, &new, "rank1.json.gz");
    let run = diff(&base, &new, &["--json"]);
    run.expect_code(3);
    let doc = run.json();
    let refused: BTreeSet<String> = doc["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .map(|r| str_at(r, "/stage").to_owned())
        .collect();
    assert_eq!(refused, case.lost);
    let stages = doc["stages"].as_array().expect("stages");
    let prefill = stages
        .iter()
        .find(|s| s["stage"] == "prefill")
        .expect("prefill is compared");
    assert_stage(
        prefill,
        analysed_stages(&base).get("prefill"),
        analysed_stages(&new).get("prefill"),
    );
    assert_eq!(
        f64_at(prefill, "/delta_us"),
        0.0,
        "the same prefill steps on both sides"
    );
    assert!(f64_at(prefill, "/base/time_us") > 0.0);
}

#[test]
fn the_terminal_prints_no_number_of_a_refused_stage() {
    let case = lost_replays();
    let run = diff(&case.complete, &case.incomplete, &[]);
    run.expect_code(3);
    for stage in &case.lost {
        let upper = stage.to_uppercase();
        let out = &run.stdout;
        assert!(
            out.contains(&format!("REFUSED: {upper} not compared")),
            "{out}"
        );
        assert!(
            !out.contains(&format!("{upper} — ")),
            "no numbers for {stage}"
        );
        assert!(!out.contains(&format!("│ {stage} ")), "no row for {stage}");
    }
    assert!(run.stdout.contains(&case.counts), "{}", run.stdout);
    assert!(run.stdout.contains("fix: "));
}

#[test]
fn force_compares_a_refused_stage_and_marks_it() {
    let case = lost_replays();
    let run = diff(&case.complete, &case.incomplete, &["--json", "--force"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["refused"], json!([]));
    assert_eq!(doc["forced"], true);
    let stages = doc["stages"].as_array().expect("stages");
    let forced: BTreeSet<String> = stages
        .iter()
        .filter(|s| s["forced"] == true)
        .map(|s| str_at(s, "/stage").to_owned())
        .collect();
    assert_eq!(forced, case.lost);
    for stage in stages.iter().filter(|s| s["forced"] == true) {
        assert!(str_at(stage, "/forced_reason").starts_with("NEW (INCOMPLETE)"));
        assert!(
            f64_at(stage, "/delta_us") < 0.0,
            "the lost kernels read as a speedup"
        );
    }
    let run = diff(&case.complete, &case.incomplete, &["--force"]);
    run.expect_code(0);
    let out = &run.stdout;
    assert!(
        out.contains("(forced)") && out.contains("FORCED: "),
        "{out}"
    );
}

#[test]
fn stage_category_and_kernel_deltas_equal_the_two_analyses() {
    let (base, new) = (trace(VLLM_FULL), trace(SGLANG_DECODE));
    let run = diff(&base, &new, &["--json", "--top", "100000"]);
    run.expect_code(0);
    let doc = run.json();
    let (base_stages, new_stages) = (analysed_stages(&base), analysed_stages(&new));
    let stages = doc["stages"].as_array().expect("stages");
    let names: BTreeSet<&str> = stages.iter().map(|s| str_at(s, "/stage")).collect();
    let expected: BTreeSet<&str> = base_stages
        .keys()
        .chain(new_stages.keys())
        .map(String::as_str)
        .collect();
    assert_eq!(names, expected);
    assert!(
        base_stages.keys().any(|s| new_stages.contains_key(s)),
        "the two traces share a stage, so a subtraction is tested"
    );
    for stage in stages {
        let name = str_at(stage, "/stage");
        assert_stage(stage, base_stages.get(name), new_stages.get(name));
    }
    let one_sided = |stage: &Value| {
        stage["appeared"].as_array().map_or(0, Vec::len)
            + stage["vanished"].as_array().map_or(0, Vec::len)
    };
    assert!(
        stages.iter().all(|s| one_sided(s) > 0),
        "two different runs: kernels appear and vanish in every stage"
    );
}

/// A diff stage's numbers equal the two analyses' stages (`None`: absent on that side).
#[track_caller]
fn assert_stage(stage: &Value, b: Option<&Value>, n: Option<&Value>) {
    let name = str_at(stage, "/stage");
    let time = |s: Option<&Value>| s.map_or(0.0, |s| f64_at(s, "/gpu_time_us"));
    let events = |s: Option<&Value>| s.map_or(0, |s| u64_at(s, "/events"));
    let share = |s: Option<&Value>| s.map_or(0.0, |s| f64_at(s, "/share_of_total"));
    assert!(close(f64_at(stage, "/base/time_us"), time(b)), "{name}");
    assert!(close(f64_at(stage, "/new/time_us"), time(n)), "{name}");
    assert!(
        close(f64_at(stage, "/delta_us"), time(n) - time(b)),
        "{name}"
    );
    assert_eq!(
        (u64_at(stage, "/base/events"), u64_at(stage, "/new/events")),
        (events(b), events(n))
    );
    assert!(
        (f64_at(stage, "/base/share") - share(b)).abs() < 1e-9,
        "{name}"
    );
    assert!(
        (f64_at(stage, "/new/share") - share(n)).abs() < 1e-9,
        "{name}"
    );
    match stage["relative"].as_f64() {
        Some(r) => assert!((r - (time(n) - time(b)) / time(b)).abs() < 1e-6, "{name}"),
        None => assert_eq!(
            time(b),
            0.0,
            "{name}: relative is null only for a zero base"
        ),
    }
    assert_rows(stage, "categories", b, n);
    assert_rows(stage, "kernels", b, n);
    let (base_kernels, new_kernels) = (
        rows(b, "kernels").into_keys().collect::<BTreeSet<_>>(),
        rows(n, "kernels").into_keys().collect::<BTreeSet<_>>(),
    );
    let appeared: BTreeSet<_> = new_kernels.difference(&base_kernels).cloned().collect();
    let vanished: BTreeSet<_> = base_kernels.difference(&new_kernels).cloned().collect();
    assert_eq!(row_ids(&stage["appeared"]), appeared, "{name} appeared");
    assert_eq!(row_ids(&stage["vanished"]), vanished, "{name} vanished");
    assert_eq!(u64_at(stage, "/kernels_left_out"), 0);
}

/// Two real traces (MI300 training steps) with more than 50 kernels in a stage.
const RESNET: &str = "tracelens/tests/traces/mi300/resnet_act_checkpoint.json.gz";
const OWLV2: &str =
    "tracelens/tests/traces/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz";

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn the_json_keeps_at_least_fifty_kernels_and_counts_the_rest() {
    let (base, new) = (trace(RESNET), trace(OWLV2));
    let run = diff(&base, &new, &["--json", "--top", "3"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["kernel_limit"], 50);
    let (base_stages, new_stages) = (analysed_stages(&base), analysed_stages(&new));
    let mut cut = 0;
    for stage in doc["stages"].as_array().expect("stages") {
        let name = str_at(stage, "/stage");
        let ids = |s: Option<&Value>| rows(s, "kernels").into_keys().collect::<BTreeSet<_>>();
        let (b, n) = (ids(base_stages.get(name)), ids(new_stages.get(name)));
        let all = b.union(&n).count();
        let listed = stage["kernels"].as_array().map_or(0, Vec::len);
        assert_eq!(listed, all.min(50), "{name}");
        let left_out = u64_at(stage, "/kernels_left_out") as usize;
        assert_eq!(left_out, all - listed, "{name}");
        cut += left_out;
        let one_sided = |key: &str| {
            stage[key].as_array().map_or(0, Vec::len)
                + u64_at(stage, &format!("/{key}_left_out")) as usize
        };
        assert_eq!(one_sided("appeared"), n.difference(&b).count(), "{name}");
        assert_eq!(one_sided("vanished"), b.difference(&n).count(), "{name}");
    }
    assert!(
        cut > 0,
        "some stage has more than 50 kernels, so the cut is tested"
    );
    let run = diff(&base, &new, &["--top", "3"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("more kernels changed less"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_folder_of_rank_files_is_one_side() {
    let dir = tempdir();
    let ranks = dir.path().join("ranks");
    copy_trace(VLLM_FULL, &ranks, "rank0.json.gz");
    copy_trace(SGLANG_DECODE, &ranks, "rank1.json.gz");
    let run = diff(&ranks, &trace(VLLM_FULL), &["--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["base"]["kind"], "folder");
    assert_eq!(doc["base"]["files"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["new"]["kind"], "file");
    let combined = analysed_stages(&ranks);
    for stage in doc["stages"].as_array().expect("stages") {
        let name = str_at(stage, "/stage");
        let expected = combined
            .get(name)
            .map_or(0.0, |s| f64_at(s, "/gpu_time_us"));
        assert!(
            close(f64_at(stage, "/base/time_us"), expected),
            "{name}: the combined ranks"
        );
    }
    assert!(
        u64_at(&doc, "/base/replay_coverage/replays")
            > u64_at(&doc, "/new/replay_coverage/replays"),
        "replays summed over the ranks"
    );
}

/// A `stepscope profile` run directory as docs/profile-results.md lays it out: two windows
/// with a rank trace each, a front-end trace and an analysis.json that are not traces.
fn fake_run(dir: &Path) -> std::path::PathBuf {
    let run = dir.join("run");
    copy_trace(VLLM_FULL, &run, "windows/1-steps:16/rank0.pt.trace.json.gz");
    copy_trace(
        VLLM_PIECEWISE,
        &run,
        "windows/2-steps:16/rank0.pt.trace.json.gz",
    );
    copy_trace(
        SGLANG_DECODE,
        &run,
        "windows/1-steps:16/x.async_llm.pt.trace.json.gz",
    );
    std::fs::write(run.join("windows/1-steps:16/analysis.json"), "{}").expect("write");
    let window = |index: u32, spec: &str| {
        let dir = format!("windows/{index}-{spec}");
        json!({
            "index": index, "spec": spec, "dir": dir,
            "traces": [
                {"path": format!("{dir}/rank0.pt.trace.json.gz"), "role": "rank", "source": "", "bytes": 1},
                {"path": "windows/1-steps:16/x.async_llm.pt.trace.json.gz", "role": "frontend", "source": "", "bytes": 1}
            ]
        })
    };
    let results = json!({
        "schema_version": 1, "status": "complete",
        "windows": [window(1, "steps:16"), window(2, "steps:16"), {"index": 3, "spec": "steps:16", "dir": "windows/3-steps:16", "traces": []}]
    });
    std::fs::write(run.join("results.json"), results.to_string()).expect("write");
    run
}

#[test]
fn a_profile_run_directory_is_its_windows_rank_traces() {
    let dir = tempdir();
    let run_dir = fake_run(dir.path());
    let run = diff(&run_dir, &trace(VLLM_FULL), &["--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["base"]["kind"], "profile_run");
    assert_eq!(doc["base"]["windows"], json!(["1-steps:16", "2-steps:16"]));
    let files: Vec<&str> = doc["base"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f.as_str().expect("path"))
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files.iter().all(|f| f.ends_with("rank0.pt.trace.json.gz")),
        "{files:?}"
    );
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("2 windows") && notes.contains("combined"),
        "{notes}"
    );
    let replays = |path: &Path| u64_at(&crate::common::replay_coverage(path), "/replays");
    assert_eq!(
        u64_at(&doc, "/base/replay_coverage/replays"),
        replays(&trace(VLLM_FULL)) + replays(&trace(VLLM_PIECEWISE))
    );

    let empty = dir.path().join("empty_run");
    std::fs::create_dir_all(&empty).expect("mkdir");
    std::fs::write(empty.join("results.json"), r#"{"windows": []}"#).expect("write");
    let run = diff(&empty, &trace(VLLM_FULL), &[]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("lists no window trace files"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_missing_or_unreadable_side_is_bad_input() {
    let dir = tempdir();
    let missing = dir.path().join("nope.json.gz");
    let run = diff(&trace(VLLM_FULL), &missing, &[]);
    run.expect_code(2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("NEW") && run.stderr.contains(&format!("`{}`", missing.display())),
        "{}",
        run.stderr
    );

    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{}").expect("write");
    let run = diff(&broken, &trace(VLLM_FULL), &["--json"]);
    run.expect_code(2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("BASE") && run.stderr.contains("broken.json"),
        "{}",
        run.stderr
    );

    // One unreadable rank of a folder: the side cannot be compared (its rank's work is
    // missing), exit 3 with the reason; --force compares the rest, with a note.
    let ranks = dir.path().join("ranks");
    copy_trace(VLLM_FULL, &ranks, "rank0.json.gz");
    std::fs::write(ranks.join("rank1.json"), "{}").expect("write");
    let run = diff(&trace(VLLM_FULL), &ranks, &["--json"]);
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(doc["new"]["verdict"], "unreadable");
    assert_eq!(doc["new"]["failed_files"].as_array().map(Vec::len), Some(1));
    assert_eq!(str_at(&doc, "/unusable_sides/0/side"), "new");
    assert!(
        str_at(&doc, "/unusable_sides/0/reason")
            .contains("1 of its 2 input files could not be read")
    );
    assert_eq!(
        doc["stages"].as_array().map(Vec::len),
        Some(0),
        "nothing compared"
    );
    let forced = diff(&trace(VLLM_FULL), &ranks, &["--json", "--force"]);
    let doc = forced.expect_code(0).json();
    assert_eq!(doc["forced"], true);
    let stages = doc["stages"].as_array().unwrap();
    assert!(
        stages
            .iter()
            .any(|s| s["stage"] == "decode" && s["forced"] == true),
        "{stages:?}"
    );
    assert!(
        doc["notes"]
            .to_string()
            .contains("NEW compared because of --force")
    );
}

#[test]
fn an_empty_or_cut_side_is_refused_unless_forced() {
    let dir = tempdir();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, r#"{"traceEvents": []}"#).expect("write");
    let run = diff(&trace(VLLM_FULL), &empty, &[]);
    run.expect_code(3);
    assert!(
        run.stdout
            .contains("REFUSED: NEW cannot be compared: it holds no GPU event"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("no stage left to compare"),
        "no −100 % rows: {}",
        run.stdout
    );
    diff(&trace(VLLM_FULL), &empty, &["--force"]).expect_code(0);

    // A side read only up to a break.
    let bytes = crate::common::gunzip(VLLM_FULL);
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).expect("write");
    let run = diff(&cut, &trace(VLLM_FULL), &["--json", "--allow-truncated"]);
    let doc = run.expect_code(3).json();
    assert_eq!(str_at(&doc, "/unusable_sides/0/side"), "base");
    assert!(str_at(&doc, "/unusable_sides/0/reason").contains("read only up to a break"));
}

#[test]
fn the_same_trace_on_both_sides_gets_a_note() {
    let dir = tempdir();
    let copy = copy_trace(VLLM_PIECEWISE, dir.path(), "copy.json.gz");
    for other in [trace(VLLM_PIECEWISE), copy] {
        let run = diff(&trace(VLLM_PIECEWISE), &other, &["--json"]);
        let doc = run.expect_code(0).json();
        assert!(
            doc["notes"]
                .to_string()
                .contains("BASE and NEW hold the same trace files"),
            "{}",
            doc["notes"]
        );
    }
    let run = diff(&trace(VLLM_PIECEWISE), &trace(VLLM_FULL), &["--json"]);
    assert!(!run.json()["notes"].to_string().contains("same trace files"));
}

/// The issue's "done when": `diff` of the demo's complete and symptomatic traces refuses the
/// decode comparison, says why (the symptom's side, its verdict and counts from the
/// generator), compares prefill, and exits 3.
#[test]
fn the_demo_traces_refuse_the_decode_comparison() {
    let dir = tempdir();
    let demo = stepscope([
        "demo".as_ref(),
        "--color".as_ref(),
        "never".as_ref(),
        "--keep".as_ref(),
        arg(dir.path()),
    ]);
    demo.expect_code(0);
    let complete = dir.path().join("demo_complete.trace.json.gz");
    let broken = dir.path().join("demo_rocm_symptom.trace.json.gz");
    let truth = stepscope_synth::demo::facts(&stepscope_synth::demo::DemoSpec::default());
    let run = diff(&complete, &broken, &[]);
    run.expect_code(3);
    assert!(
        run.stdout.contains("REFUSED: DECODE not compared"),
        "{}",
        run.stdout
    );
    let why = format!(
        "NEW (INCOMPLETE): {} of {} graph replays recorded ({} empty): its decode time lacks the unrecorded replays' kernels",
        truth.replays_kept_with_symptom,
        truth.replays,
        truth.replays - truth.replays_kept_with_symptom
    );
    assert!(run.stdout.contains(&why), "{}", run.stdout);
    let json = diff(&complete, &broken, &["--json"]);
    let doc = json.expect_code(3).json();
    let stages: Vec<&str> = doc["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["stage"].as_str().expect("a stage"))
        .collect();
    assert_eq!(stages, ["prefill"]);
    assert_eq!(doc["refused"][0]["stage"], "decode");
}

/// A side that is a run folder with its `capture_traces/` reads the capture as the capture of
/// the profile beside it, not as a second rank: one file per side, its replay settled.
#[test]
fn a_run_folder_side_uses_its_capture_traces() {
    let dir = tempdir();
    for side in ["base", "new"] {
        let run = dir.path().join(side);
        copy_trace(SGLANG_DECODE, &run, "decode.json.gz");
        copy_trace(
            SGLANG_CAPTURE,
            &run.join("capture_traces"),
            "bs_32_rank0.json.gz",
        );
    }
    let run = diff(
        &dir.path().join("base"),
        &dir.path().join("new"),
        &["--json"],
    );
    run.expect_code(0);
    let doc = run.json();
    for side in ["base", "new"] {
        let files = doc[side]["files"].as_array().expect("files");
        assert_eq!(files.len(), 1, "{side}: {files:?}");
        assert_eq!(str_at(&doc, &format!("/{side}/verdict")), "complete");
    }
}
