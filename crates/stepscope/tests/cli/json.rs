//! `--json`: valid JSON, schema version 2, the same bytes at 1 and 2 parse threads.

use crate::common::{
    MTIA, SGLANG_DECODE, arg, f64_at, incomplete_piecewise, stepscope, stepscope_in, tempdir,
};
use serde_json::Value;
use std::path::Path;

#[test]
fn json_parses_with_schema_version_4_and_the_documented_top_level() {
    let run = stepscope(["analyze", SGLANG_DECODE, "--json", "--no-capture-folder"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["schema_version"], 4);
    assert_eq!(doc["tool"]["name"], "stepscope");
    assert_eq!(doc["tool"]["version"], env!("CARGO_PKG_VERSION"));
    let keys: Vec<&str> = doc
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "schema_version",
        "tool",
        "verdict",
        "partial",
        "failed_files",
        "warnings",
        "files",
        "combined",
    ] {
        assert!(keys.contains(&key), "top-level `{key}` in {keys:?}");
    }
    let file = &doc["files"][0];
    for key in [
        "path",
        "rank",
        "world_size",
        "devices",
        "runtime",
        "platform",
        "events",
        "import",
        "damage",
        "replay_coverage",
        "advice",
        "steps",
        "breakdown",
    ] {
        assert!(file.get(key).is_some(), "files[0].{key}");
    }
    facts_of_the_sglang_decode_trace(file);
    // A trailing newline, pretty-printed.
    assert!(run.stdout.ends_with("}\n"));
    assert!(run.stdout.starts_with("{\n  \"schema_version\": 4,"));
}

fn facts_of_the_sglang_decode_trace(file: &Value) {
    // The manifest's facts for this file.
    assert_eq!(file["events"]["total"], 2058);
    assert_eq!(file["events"]["kernels"], 555);
    assert_eq!(file["replay_coverage"]["replays"], 1);
    assert_eq!(file["replay_coverage"]["recorded_nodes"], 544);
    // One replay and no capture: its size rests on itself.
    assert_eq!(file["replay_coverage"]["verdict"], "unverified");
    assert_eq!(file["replay_coverage"]["unverified_replays"], 1);
    assert_eq!(file["runtime"]["kind"], "hip");
    assert_eq!(file["platform"], "hip");
    assert_eq!(file["steps"]["counts"]["sglang:DECODE"], 1);
    // Shares are fractions.
    for stage in file["breakdown"]["stages"].as_array().expect("stages") {
        let share = stage["share_of_total"].as_f64().expect("share");
        assert!((0.0..=1.0).contains(&share), "share_of_total {share}");
        for row in stage["categories"].as_array().expect("categories") {
            let share = row["share"].as_f64().expect("share");
            assert!((0.0..=1.0).contains(&share), "category share {share}");
        }
    }
}

fn json_at_threads(cwd: &Path, file: &str, threads: &str) -> String {
    let run = stepscope_in(cwd, ["analyze", file, "--json", "--threads", threads], &[]);
    run.expect_code(0);
    let _: Value = run.json();
    run.stdout
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn one_and_two_threads_give_the_same_bytes_on_the_large_mtia_trace() {
    let cwd = crate::common::traces_dir();
    let one = json_at_threads(&cwd, MTIA, "1");
    let two = json_at_threads(&cwd, MTIA, "2");
    assert!(one == two, "--threads 1 and --threads 2 differ on {MTIA}");
    // It was really read: the manifest's event count.
    let doc: Value = serde_json::from_str(&one).expect("json");
    assert_eq!(doc["files"][0]["events"]["total"], 455_739);
}

#[test]
fn one_and_two_threads_give_the_same_bytes_on_the_demo_traces() {
    let dir = tempdir();
    stepscope([
        "demo".as_ref(),
        "--keep".as_ref(),
        arg(dir.path()),
        "--color".as_ref(),
        "never".as_ref(),
    ])
    .expect_code(0);
    for name in [
        "demo_complete.trace.json.gz",
        "demo_rocm_symptom.trace.json.gz",
    ] {
        let one = json_at_threads(dir.path(), name, "1");
        let two = json_at_threads(dir.path(), name, "2");
        assert!(one == two, "--threads 1 and --threads 2 differ on {name}");
        let terminal = |threads: &str| {
            let run = stepscope_in(
                dir.path(),
                ["analyze", name, "--color", "never", "--threads", threads],
                &[],
            );
            run.expect_code(0);
            run.stdout
        };
        assert!(terminal("1") == terminal("2"), "terminal output of {name}");
    }
}

/// Where the scanner of [`duplicate_key`] is: an object (its keys so far) or an array.
enum Frame {
    Object {
        path: String,
        seen: std::collections::BTreeSet<String>,
        key: Option<String>,
    },
    Array {
        path: String,
        index: usize,
    },
}

/// Path of the value about to start inside the innermost container.
fn child_path(stack: &[Frame]) -> String {
    match stack.last() {
        Some(Frame::Object { path, key, .. }) => {
            format!("{path}.{}", key.as_deref().unwrap_or("?"))
        }
        Some(Frame::Array { path, index }) => format!("{path}[{index}]"),
        None => String::new(),
    }
}

/// The rest of a JSON string after its opening quote, escapes kept as written.
fn read_string(chars: &mut std::str::Chars<'_>) -> String {
    let mut string = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                string.push(c);
                string.extend(chars.next());
            }
            '"' => break,
            _ => string.push(c),
        }
    }
    string
}

/// Finds an object with the same key twice (serde_json's `Value` silently keeps the last);
/// returns the key's path. A small scanner over JSON text that `serde_json` accepts.
fn duplicate_key(text: &str) -> Option<String> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut chars = text.chars();
    // After `{` or `,` inside an object, the next string is a key.
    let mut expect_key = false;
    while let Some(c) = chars.next() {
        match c {
            '{' => {
                let path = child_path(&stack);
                let seen = std::collections::BTreeSet::new();
                stack.push(Frame::Object {
                    path,
                    seen,
                    key: None,
                });
                expect_key = true;
            }
            '[' => {
                let path = child_path(&stack);
                stack.push(Frame::Array { path, index: 0 });
            }
            '}' | ']' => {
                stack.pop();
            }
            ',' => match stack.last_mut() {
                Some(Frame::Object { .. }) => expect_key = true,
                Some(Frame::Array { index, .. }) => *index += 1,
                None => {}
            },
            '"' => {
                let string = read_string(&mut chars);
                if std::mem::take(&mut expect_key) {
                    if let Some(Frame::Object { path, seen, key }) = stack.last_mut() {
                        if !seen.insert(string.clone()) {
                            return Some(format!("{path}.{string}"));
                        }
                        *key = Some(string);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

#[test]
fn the_duplicate_key_checker_works() {
    assert_eq!(
        duplicate_key(r#"{"a": [{"b": 1, "c": {"b": "x,\"b\":\\"}}, {"b": 2}]}"#),
        None
    );
    assert_eq!(
        duplicate_key(r#"{"a": [{"b": 1}, {"b": 1, "c": [], "b": 2}]}"#).as_deref(),
        Some(".a[1].b")
    );
}

/// `graphs[]` flattens the per-graph counts (whose `expected_nodes` is the total over the
/// graph's replays) next to the per-replay count: a repeated key would make readers
/// (serde_json, Python's json) silently keep only the last one.
#[test]
fn no_object_has_duplicate_keys() {
    let run = stepscope(["analyze", crate::common::VLLM_PIECEWISE, "--json"]);
    run.expect_code(0);
    assert_eq!(
        duplicate_key(&run.stdout),
        None,
        "a key appears twice in one object"
    );
    // What a reader sees for graph 2 (23 replays of 15 kernels) must be the per-replay count.
    assert_eq!(
        run.json()["files"][0]["replay_coverage"]["graphs"][1]["expected_nodes_per_replay"],
        15
    );
}

#[test]
fn missing_replays_are_found_and_costed() {
    let dir = tempdir();
    let broken = incomplete_piecewise(dir.path(), "piecewise_missing_2.json");
    let run = stepscope(["analyze".as_ref(), arg(&broken), "--json".as_ref()]);
    run.expect_code(0);
    let doc = run.json();
    let coverage = &doc["files"][0]["replay_coverage"];
    assert_eq!(coverage["verdict"], "incomplete");
    assert_eq!(coverage["replays"], 25);
    assert_eq!(coverage["recorded_replays"], 23);
    assert_eq!(coverage["empty_replays"], 2);
    assert_eq!(coverage["short_replays"], 0);
    assert_eq!(coverage["recorded_nodes"], 4 + 21 * 15 + 12);
    assert_eq!(coverage["expected_nodes_low"], 4 + 23 * 15 + 12);
    // The first piece's size and the last layer's piece's rest on themselves (the last
    // piece's window has no idle time for the 15-kernel graph's missing nodes, so it is its
    // own graph): completeness is a range, not a number.
    assert_eq!(coverage["unbounded_replays"], 2);
    assert!(coverage["completeness"].is_null());
    let (low, high) = (
        f64_at(coverage, "/completeness_low"),
        f64_at(coverage, "/completeness_high"),
    );
    let truth = (4.0 + 21.0 * 15.0 + 12.0) / (4.0 + 23.0 * 15.0 + 12.0);
    assert!(low <= truth && truth <= high, "{low} ≤ {truth} ≤ {high}");
    assert!((high - truth).abs() < 1e-12);
    let graph = &coverage["graphs"][1];
    assert_eq!(
        (graph["replays"].as_u64(), graph["empty_replays"].as_u64()),
        (Some(23), Some(2))
    );
    assert_eq!(graph["expected_source"], "repeated");
    // Two replays of graph 2 missing: about twice its replays' time, inside the range.
    let missing = f64_at(coverage, "/missing_gpu_time_us");
    let reference = f64_at(graph, "/reference_time_us");
    assert!(
        (missing / (2.0 * reference) - 1.0).abs() < 0.05,
        "{missing} vs 2 × {reference}"
    );
    let (low, high) = (
        f64_at(coverage, "/missing_gpu_time_low_us"),
        f64_at(coverage, "/missing_gpu_time_high_us"),
    );
    assert!(
        low <= missing && missing <= high,
        "{low} ≤ {missing} ≤ {high}"
    );
    let recorded = f64_at(coverage, "/recorded_gpu_time_us");
    let share = f64_at(coverage, "/missing_share");
    assert!((share - missing / (recorded + missing)).abs() < 1e-6);
    findings_of_the_two_empty_replays(coverage);
}

fn findings_of_the_two_empty_replays(coverage: &Value) {
    let findings = coverage["findings"].as_array().expect("findings");
    let empty: Vec<&Value> = findings
        .iter()
        .filter(|f| f["kind"] == "ReplayWithoutKernels")
        .collect();
    let found: Vec<(u64, u64)> = empty
        .iter()
        .map(|f| {
            (
                f["replay"].as_u64().expect("replay"),
                f["expected_nodes"].as_u64().expect("expected"),
            )
        })
        .collect();
    assert_eq!(found, [(5, 15), (6, 15)]);
    for finding in empty {
        assert_eq!(finding["graph"], 2);
        assert_eq!(finding["recorded_nodes"], 0);
        // Between two replays of graph 2 on the one launching thread, in one step.
        assert_eq!(finding["evidence"]["kind"], "neighbours");
        assert!(
            finding["step"]
                .as_str()
                .expect("step")
                .starts_with("execute_")
        );
    }
    let unverified: Vec<u64> = findings
        .iter()
        .filter(|f| f["kind"] == "UnverifiedReplay")
        .map(|f| f["replay"].as_u64().expect("replay"))
        .collect();
    assert_eq!(unverified, [0, 24]);
}
