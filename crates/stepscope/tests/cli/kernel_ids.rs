//! Kernel ids: one short id per kernel name, the same in `analyze` and `diff`, in the
//! terminal, JSON, CSV and the HTML page; names cut so that ROCm's Tensile GEMMs (which share
//! 60-character prefixes and suffixes) stay apart; `--wide` prints whole names.

use crate::browser::render;
use crate::common::{VLLM_PIECEWISE, arg, stepscope, tempdir};
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use stepscope_report::kernel_id::kernel_id;

/// SGLang prefill on ROCm: its top kernels are Tensile GEMMs whose names differ only inside.
const SGLANG_EXTEND: &str =
    "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz";

/// Every kernel row's name → id in a list of stages (an `analyze --json` file's
/// `breakdown.stages`); category rows have none.
fn ids(stages: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stage in stages.as_array().expect("stages") {
        for row in stage["kernels"].as_array().expect("kernels") {
            let name = row["name"].as_str().expect("name").to_owned();
            let id = row["kernel_id"]
                .as_str()
                .expect("every kernel row has an id")
                .to_owned();
            out.insert(name, id);
        }
        for row in stage["categories"].as_array().expect("categories") {
            assert!(
                row.get("kernel_id").is_none(),
                "category rows have no id: {row}"
            );
        }
    }
    out
}

#[test]
fn the_id_is_the_sha256_of_the_name_as_the_shell_computes_it() {
    let run = stepscope(["analyze", SGLANG_EXTEND, "--json"]);
    let doc = run.expect_code(0).json();
    let found = ids(&doc["files"][0]["breakdown"]["stages"]);
    assert!(found.len() >= 10, "{found:?}");
    // Three names checked against coreutils' sha256sum, not only against our own function.
    for (name, id) in found.iter().take(3) {
        let shell = Command::new("sh")
            .args(["-c", "printf %s \"$1\" | sha256sum | cut -c1-6", "sh", name])
            .output()
            .expect("sh runs");
        assert_eq!(String::from_utf8_lossy(&shell.stdout).trim(), id, "{name}");
    }
    for (name, id) in &found {
        assert_eq!(*id, kernel_id(name));
    }
}

#[test]
fn the_terminal_shows_the_ids_tells_tensile_gemms_apart_and_explains_them() {
    let run = stepscope(["analyze", SGLANG_EXTEND, "--color", "never"]);
    let out = &run.expect_code(0).stdout;
    let json = stepscope(["analyze", SGLANG_EXTEND, "--json"])
        .expect_code(0)
        .json();
    let found = ids(&json["files"][0]["breakdown"]["stages"]);
    let gemms: Vec<(&String, &String)> = found
        .iter()
        .filter(|(n, _)| n.starts_with("Cijk_"))
        .collect();
    assert!(gemms.len() >= 3, "{gemms:?}");
    let mut labels = Vec::new();
    let mut shown = Vec::new();
    for line in out.lines().filter(|l| l.contains("┆ Cijk_")) {
        let cells: Vec<&str> = line.split('┆').map(str::trim).collect();
        let id = cells[0].trim_start_matches('│').trim();
        let name = found
            .iter()
            .find(|(_, i)| i.as_str() == id)
            .unwrap_or_else(|| panic!("{id} is a JSON id"))
            .0;
        assert!(cells[1].chars().count() <= 64, "{}", cells[1]);
        labels.push(cells[1].to_owned());
        shown.push(name.clone());
        // The shown label's tile size (`MT…x…x…`) is the one in the full name.
        let tile = cells[1].split('_').find(|p| p.starts_with("MT"));
        if let Some(tile) = tile {
            assert!(name.contains(tile), "{} in {name}", cells[1]);
        }
    }
    assert!(labels.len() >= 3, "{out}");
    let distinct: std::collections::BTreeSet<&String> = labels.iter().collect();
    assert_eq!(
        distinct.len(),
        labels.len(),
        "no two GEMM labels read alike: {labels:?}"
    );
    assert!(
        out.contains("id: the first 6 hex digits of the SHA-256"),
        "the footer"
    );
    assert!(!out.contains("[#"), "no row numbers as names");

    let wide = stepscope(["analyze", SGLANG_EXTEND, "--color", "never", "--wide"]);
    let wide = &wide.expect_code(0).stdout;
    for name in &shown {
        assert!(name.chars().count() > 64, "{name}");
        assert!(wide.contains(name.as_str()), "--wide prints {name} whole");
    }
}

/// `diff BASE NEW` with a second file of other kernels: every kernel row's name → id (rows on
/// both sides, appeared and vanished).
fn diff_ids() -> BTreeMap<String, String> {
    let diff = stepscope(["diff", VLLM_PIECEWISE, SGLANG_EXTEND, "--json", "--force"]);
    let diff = diff.json();
    let mut by_diff = BTreeMap::new();
    for stage in diff["stages"].as_array().expect("stages") {
        for key in ["kernels", "appeared", "vanished"] {
            for row in stage[key].as_array().expect(key) {
                let name = row["name"].as_str().expect("name").to_owned();
                by_diff.insert(name, row["kernel_id"].as_str().expect("id").to_owned());
            }
        }
    }
    by_diff
}

#[test]
fn analyze_diff_csv_and_the_page_give_a_kernel_the_same_id() {
    let dir = tempdir();
    let analyzed = stepscope(["analyze", VLLM_PIECEWISE, "--json"])
        .expect_code(0)
        .json();
    let by_analyze = ids(&analyzed["files"][0]["breakdown"]["stages"]);
    let by_diff = diff_ids();
    let shared: Vec<&String> = by_analyze
        .keys()
        .filter(|n| by_diff.contains_key(*n))
        .collect();
    assert!(shared.len() >= 5, "{shared:?}");
    for name in shared {
        assert_eq!(by_analyze[name], by_diff[name], "{name}");
    }
    let diff_text = stepscope([
        "diff",
        VLLM_PIECEWISE,
        SGLANG_EXTEND,
        "--force",
        "--color",
        "never",
    ]);
    let first = by_analyze.values().next().expect("an id");
    assert!(
        diff_text.stdout.contains("id: the first 6 hex digits"),
        "{}",
        diff_text.stdout
    );
    assert!(
        by_diff
            .values()
            .any(|id| diff_text.stdout.contains(id.as_str())),
        "the diff's terminal shows the ids"
    );

    let page = dir.path().join("page.html");
    let csv = dir.path().join("csv");
    let run = stepscope([
        "analyze".as_ref(),
        VLLM_PIECEWISE.as_ref(),
        "--html".as_ref(),
        arg(&page),
        "--csv".as_ref(),
        arg(&csv),
    ]);
    run.expect_code(0);
    let table = std::fs::read_to_string(csv.join("kernels.csv")).expect("kernels.csv");
    assert!(
        table.contains(&format!(",{first},")),
        "{first} in kernels.csv"
    );
    let rendered = render(&page);
    rendered.assert_clean();
    let cells = rendered.texts("table[data-table=kernels] td");
    for id in by_analyze.values() {
        assert!(cells.iter().any(|c| c == id), "{id} on the page");
    }
}
