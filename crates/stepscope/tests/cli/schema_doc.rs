//! docs/json-schema.md cannot fall behind the JSON the binary writes: every key of a rich
//! real document (several files, a partial one, missing replays, findings) is mentioned.

use crate::common::{SGLANG_DECODE, arg, incomplete_piecewise, stepscope, tempdir, trace};
use serde_json::Value;
use std::collections::BTreeSet;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json-schema.md");

/// Objects whose keys are data (category names, field names, `framework:mode`), not schema.
const DATA_MAPS: [&str; 3] = ["unknown_categories", "unknown_fields", "counts"];

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

fn rich_document() -> Value {
    let dir = tempdir();
    let broken = incomplete_piecewise(dir.path(), "piecewise_missing_2.json");
    let bytes = std::fs::read(trace(SGLANG_DECODE)).expect("read");
    let half = dir.path().join("half.json.gz");
    std::fs::write(&half, &bytes[..bytes.len() / 2]).expect("write");
    let run = stepscope([
        "analyze".as_ref(),
        arg(&broken),
        SGLANG_DECODE.as_ref(),
        arg(&half),
        "--allow-truncated".as_ref(),
        "--json".as_ref(),
    ]);
    run.expect_code(0);
    let doc = run.json();
    // The document exercises what the doc describes.
    assert!(doc["combined"].is_object());
    assert!(
        !doc["files"][0]["replay_coverage"]["findings"]
            .as_array()
            .expect("findings")
            .is_empty()
    );
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
    for verdict in ["complete", "incomplete", "no-replays"] {
        assert!(text.contains(&format!("`{verdict}`")), "verdict {verdict}");
    }
    for kind in [
        "ReplayWithoutKernels",
        "ShortReplay",
        "ReplayOrderMismatch",
        "DeferredKernelBurst",
    ] {
        assert!(text.contains(&format!("`{kind}`")), "finding kind {kind}");
    }
}
