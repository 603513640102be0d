//! docs/json-schema.md cannot fall behind the JSON the binary writes: every key of a rich
//! real document (several files, a partial one, missing replays, findings) is mentioned.

use crate::common::{SGLANG_DECODE, arg, incomplete_piecewise, stepscope, tempdir, trace};
use serde_json::Value;
use std::collections::BTreeSet;
use stepscope_report::schema::OverallVerdict;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json-schema.md");

/// Objects whose keys are data (category names, field names, `framework:mode`, damage
/// kinds), not schema.
const DATA_MAPS: [&str; 4] = [
    "unknown_categories",
    "unknown_fields",
    "counts",
    "refused_events",
];

/// Every object key in `value`, as `parent.key` paths and bare keys.
fn keys(value: &Value, path: &str, out: &mut BTreeSet<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let child_path = format!("{path}.{key}");
                out.insert((key.clone(), child_path.clone()));
                if !DATA_MAPS.contains(&key.as_str()) {
                    keys(child, &child_path, out);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                keys(item, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// The SGLang decode trace with its one replay emptied (HIP 7.2: switch advice), and one
/// kernel of the piecewise trace given a negative duration (damage).
fn edited_traces(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    use stepscope_synth::removal::{keep_only, read_json, to_json_bytes};
    let mut sglang = read_json(&trace(SGLANG_DECODE)).expect("reads");
    keep_only(&mut sglang, |_| false);
    let emptied = dir.join("sglang_emptied.json");
    std::fs::write(&emptied, to_json_bytes(&sglang)).expect("write");
    let mut piecewise = read_json(&trace(crate::common::VLLM_PIECEWISE)).expect("reads");
    let events = piecewise["traceEvents"].as_array_mut().expect("events");
    let kernel = events
        .iter()
        .rposition(|e| e["cat"] == "kernel")
        .expect("a kernel");
    events[kernel]["dur"] = serde_json::json!(-1.0);
    let damaged = dir.join("piecewise_damaged.json");
    std::fs::write(&damaged, to_json_bytes(&piecewise)).expect("write");
    (emptied, damaged)
}

fn rich_document() -> Value {
    let dir = tempdir();
    let broken = incomplete_piecewise(dir.path(), "piecewise_missing_2.json");
    let bytes = std::fs::read(trace(SGLANG_DECODE)).expect("read");
    let half = dir.path().join("half.json.gz");
    std::fs::write(&half, &bytes[..bytes.len() / 2]).expect("write");
    let unreadable = dir.path().join("not_a_trace.json");
    std::fs::write(&unreadable, "{}").expect("write");
    let (emptied, damaged) = edited_traces(dir.path());
    let run = stepscope([
        "analyze".as_ref(),
        arg(&broken),
        arg(&emptied),
        arg(&half),
        arg(&damaged),
        SGLANG_DECODE.as_ref(),
        SGLANG_DECODE.as_ref(),
        arg(&unreadable),
        "--allow-truncated".as_ref(),
        "--range".as_ref(),
        "^(step|execute)".as_ref(),
        "--json".as_ref(),
    ]);
    run.expect_code(2);
    let doc = run.json();
    // The document exercises what the doc describes.
    assert!(doc["combined"].is_object());
    assert_eq!(doc["verdict"], "unreadable");
    assert_eq!(doc["failed_files"].as_array().map(Vec::len), Some(1));
    assert!(!doc["warnings"].as_array().expect("warnings").is_empty());
    let kinds: Vec<&str> = doc["files"][0]["replay_coverage"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["evidence"]["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"neighbours"), "{kinds:?}");
    assert!(
        !doc["files"][1]["advice"]["switches"]
            .as_array()
            .expect("switches")
            .is_empty()
    );
    assert!(
        !doc["files"][2]["import"]["counters"]
            .as_array()
            .expect("counters")
            .is_empty()
    );
    assert_eq!(
        doc["files"][3]["damage"]["refused_events"]["negative_duration"],
        1
    );
    doc
}

#[test]
fn every_key_of_the_real_json_is_documented() {
    let text = std::fs::read_to_string(DOC).expect("docs/json-schema.md exists");
    let doc = rich_document();
    let mut found = BTreeSet::new();
    keys(&doc, "", &mut found);
    let missing: Vec<String> = found
        .iter()
        .filter(|(key, _)| !text.contains(&format!("`{key}`")))
        .map(|(_, path)| path.clone())
        .collect();
    assert!(
        missing.is_empty(),
        "keys of the JSON output not mentioned (as `key`) in docs/json-schema.md: {missing:#?}"
    );
}

#[test]
fn the_doc_states_the_schema_version_the_binary_writes() {
    let text = std::fs::read_to_string(DOC).expect("docs/json-schema.md exists");
    let run = stepscope(["analyze", SGLANG_DECODE, "--json"]);
    let version = run.json()["schema_version"].as_u64().expect("version");
    assert!(
        text.contains(&format!("\"schema_version\": {version}")),
        "docs/json-schema.md shows schema_version {version}"
    );
    let verdicts = stepscope_analysis::Verdict::ALL
        .map(OverallVerdict::from)
        .into_iter()
        .chain([OverallVerdict::Unreadable, OverallVerdict::Partial]);
    for verdict in verdicts {
        assert!(text.contains(&format!("`{verdict}`")), "verdict {verdict}");
    }
    for pattern in stepscope_model::patterns::RecordingPattern::ALL {
        let name = pattern.as_str();
        assert!(text.contains(&format!("`{name}`")), "pattern {name}");
    }
    for kind in stepscope_analysis::FindingKind::ALL {
        assert!(text.contains(&format!("`{kind}`")), "finding kind {kind}");
    }
    for counter in stepscope_analysis::Counter::ALL {
        assert!(text.contains(&format!("`{counter}`")), "counter {counter}");
    }
    for evidence in [
        "capture",
        "step_slot",
        "partial_slot",
        "partial_run",
        "cycle_position",
        "graph_id",
        "neighbours",
        "idle_gap",
        "repeated",
    ] {
        assert!(
            text.contains(&format!("`{evidence}`")),
            "evidence {evidence}"
        );
    }
}

/// Keys of `diff --json` documents that between them hold every part: stages with appeared
/// and vanished kernels, a refusal, a forced stage, a folder side with a failed file.
fn diff_documents() -> Vec<Value> {
    let dir = tempdir();
    let incomplete = incomplete_piecewise(dir.path(), "incomplete.json");
    let ranks = dir.path().join("ranks");
    crate::common::copy_trace(crate::common::VLLM_FULL, &ranks, "rank0.json.gz");
    std::fs::write(ranks.join("rank1.json"), "{}").expect("write");
    let piecewise = trace(crate::common::VLLM_PIECEWISE);
    let runs = [
        (
            trace(crate::common::VLLM_FULL),
            trace(SGLANG_DECODE),
            None,
            0,
        ),
        (piecewise.clone(), incomplete.clone(), None, 3),
        (piecewise, incomplete, Some("--force"), 0),
        (trace(SGLANG_DECODE), ranks, None, 3),
    ];
    runs.into_iter()
        .map(|(base, new, flag, code)| {
            let mut args = vec![
                "diff".as_ref(),
                arg(&base),
                arg(&new),
                "--json".as_ref(),
                "--no-progress".as_ref(),
            ];
            args.extend(flag.map(std::ffi::OsStr::new));
            let run = stepscope(args);
            run.expect_code(code);
            run.json()
        })
        .collect()
}

#[test]
fn every_key_of_the_diff_json_is_documented_in_its_section() {
    let text = std::fs::read_to_string(DOC).expect("docs/json-schema.md exists");
    let section = text
        .split_once("# `stepscope diff --json`")
        .map(|(_, rest)| rest)
        .expect("docs/json-schema.md has a `stepscope diff --json` section");
    let docs = diff_documents();
    assert_eq!(docs[1]["refused"].as_array().map(Vec::len), Some(1));
    assert_eq!(docs[2]["forced"], true);
    assert!(section.contains(&format!(
        "\"schema_version\": {}",
        docs[0]["schema_version"]
    )));
    let mut found = BTreeSet::new();
    for doc in &docs {
        keys(doc, "", &mut found);
    }
    // Coverage numbers are `analyze`'s, documented once above the section.
    let missing: Vec<&String> = found
        .iter()
        .filter(|(key, path)| {
            let here = if path.contains(".replay_coverage.") {
                &text
            } else {
                section
            };
            !here.contains(&format!("`{key}`"))
        })
        .map(|(_, path)| path)
        .collect();
    assert!(
        missing.is_empty(),
        "keys of `diff --json` not mentioned (as `key`) in its section of docs/json-schema.md: {missing:#?}"
    );
}
