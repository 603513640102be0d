//! rocprofv3 JSON through `analyze`. The public sample was recorded without `--hip-trace`
//! (`unavailable`); the replay tests write the document rocprofv3 writes with it (the
//! `rocprofiler-sdk-tool` schema: kernel symbols, dispatches and HIP API records sharing
//! `correlation_id.internal`, names of HIP operations in `strings.buffer_records`) from the
//! real piecewise vLLM trace, and check it gives the JSON's replay numbers; then with the
//! dispatches of two launches removed (the symptom).

use crate::common::{VLLM_PIECEWISE, arg, kineto_events, ns, stepscope, tempdir, trace};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;

const SAMPLE: &str = "tracelens/tests/rocprof/908_results.json.gz";

fn category(event: &Value) -> String {
    event["cat"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// The rocprofv3 JSON document of a Kineto trace's kernels and HIP calls, leaving out the
/// dispatches of the `skip`-th graph launches (host order).
fn rocprof_json_from_kineto(kineto: &Path, skip: &[usize]) -> Value {
    let events = kineto_events(kineto);
    let mut operations: Vec<String> = Vec::new();
    let mut symbols: HashMap<String, u64> = HashMap::new();
    let mut launches: Vec<(i64, u64)> = Vec::new();
    let mut hip = Vec::new();
    for e in &events {
        if !matches!(category(e).as_str(), "cuda_runtime" | "cuda_driver") {
            continue;
        }
        let name = e["name"].as_str().unwrap_or_default().to_owned();
        let operation = operations
            .iter()
            .position(|o| *o == name)
            .unwrap_or_else(|| {
                operations.push(name.clone());
                operations.len() - 1
            });
        let correlation = e["args"]["correlation"].as_u64().unwrap_or(0);
        if name.contains("GraphLaunch") {
            launches.push((ns(&e["ts"]), correlation));
        }
        let start = ns(&e["ts"]);
        hip.push(
            json!({"kind": 5, "operation": operation, "thread_id": e["tid"],
            "correlation_id": {"internal": correlation, "external": 0},
            "start_timestamp": start, "end_timestamp": start + ns(&e["dur"])}),
        );
    }
    launches.sort_unstable();
    let skipped: Vec<u64> = skip.iter().map(|i| launches[*i].1).collect();
    let mut dispatches = Vec::new();
    for e in events.iter().filter(|e| category(e) == "kernel") {
        let correlation = e["args"]["correlation"].as_u64().unwrap_or(0);
        if skipped.contains(&correlation) {
            continue;
        }
        let name = e["name"].as_str().unwrap_or_default().to_owned();
        let next = symbols.len() as u64 + 1;
        let kernel_id = *symbols.entry(name).or_insert(next);
        let start = ns(&e["ts"]);
        dispatches.push(json!({"kind": 11, "operation": 2, "thread_id": 1,
            "correlation_id": {"internal": correlation, "external": 0},
            "start_timestamp": start, "end_timestamp": start + ns(&e["dur"]),
            "dispatch_info": {"agent_id": {"handle": 7}, "queue_id": {"handle": e["tid"]}, "kernel_id": kernel_id}}));
    }
    let mut kinds = vec![json!({"kind": "NONE", "operations": []}); 11];
    kinds[5] = json!({"kind": "HIP_RUNTIME_API", "operations": operations});
    json!({"rocprofiler-sdk-tool": [{
        "metadata": {"pid": 4242},
        "agents": [{"id": {"handle": 7}, "type": 2, "name": "gfx942", "product_name": "AMD Instinct MI300X", "gpu_index": 0}],
        "kernel_symbols": kernel_symbols(&symbols),
        "strings": {"buffer_records": kinds},
        "buffer_records": {"kernel_dispatch": dispatches, "hip_api": hip, "memory_copy": []}
    }]})
}

/// `kernel_symbols` as rocprofv3 writes them: index = id, a placeholder at 0, `kernel_name`
/// with `.kd`, `formatted_kernel_name` without.
fn kernel_symbols(ids: &HashMap<String, u64>) -> Vec<Value> {
    let mut symbols =
        vec![json!({"kernel_id": 0, "kernel_name": "", "formatted_kernel_name": "0"})];
    let mut by_id: Vec<(&String, &u64)> = ids.iter().collect();
    by_id.sort_by_key(|(_, id)| **id);
    for (name, id) in by_id {
        symbols.push(json!({"kernel_id": id, "kernel_name": format!("{name}.kd"), "formatted_kernel_name": name}));
    }
    symbols
}

fn coverage(path: &Path) -> Value {
    let run = stepscope([
        "analyze",
        path.to_str().expect("path"),
        "--json",
        "--no-progress",
    ]);
    run.expect_code(0);
    run.json()["files"][0]["replay_coverage"].clone()
}

#[test]
fn replays_read_from_rocprofv3_json_match_and_lost_dispatches_fail_the_gate() {
    let dir = tempdir();
    let whole = dir.path().join("run_results.json");
    let doc = rocprof_json_from_kineto(&trace(VLLM_PIECEWISE), &[]);
    std::fs::write(&whole, serde_json::to_vec(&doc).expect("json")).expect("write");
    let c = coverage(&whole);
    let from_kineto = coverage(&trace(VLLM_PIECEWISE));
    for key in [
        "verdict",
        "replays",
        "recorded_replays",
        "complete_replays",
        "recorded_nodes",
    ] {
        assert_eq!(c[key], from_kineto[key], "{key}");
    }
    assert_eq!(c["replays"], 25);
    let lost = dir.path().join("lost_results.json");
    let doc = rocprof_json_from_kineto(&trace(VLLM_PIECEWISE), &[0, 12]);
    std::fs::write(&lost, serde_json::to_vec(&doc).expect("json")).expect("write");
    let c = coverage(&lost);
    assert_eq!(c["verdict"], "incomplete");
    assert_eq!(c["empty_replays"], 2);
    let run = stepscope([
        arg(Path::new("analyze")),
        arg(&lost),
        arg(Path::new("--fail-on-incomplete")),
    ]);
    run.expect_code(3);
}

#[test]
fn the_sample_without_hip_records_is_unavailable_and_says_how_to_record() {
    let run = stepscope([
        "analyze",
        trace(SAMPLE).to_str().expect("path"),
        "--no-progress",
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains("UNAVAILABLE"), "{}", run.stdout);
    assert!(run.stdout.contains("--hip-trace"), "{}", run.stdout);
    let gated = stepscope([
        "analyze",
        trace(SAMPLE).to_str().expect("path"),
        "--no-progress",
        "--fail-on-incomplete",
    ]);
    gated.expect_code(3);
}
