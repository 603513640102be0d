//! A profile window on the real vLLM server: opened and closed through its HTTP API while
//! `stepscope bench` loads it, its trace files collected by vLLM's names, and the rank's
//! trace analysed. The server runs with `--profiler-config` (torch, no stacks) writing to
//! `STEPSCOPE_E2E_TRACE_DIR` (`scripts/vllm-cpu.sh start` sets it under its run folder).

use crate::runner::{Load, stepscope_bench};
use crate::server;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use stepscope_serving::collect::{CollectOptions, TraceSnapshot, collect_traces};
use stepscope_serving::windows::{
    ProfileEndpoint, WindowEnd, start_window, stop_window, vllm_engine_steps,
};
use stepscope_serving::{Framework, ProfileWindow};

#[test]
fn a_window_under_load_is_collected_and_analysed() {
    let Some(server) = server::from_env("a_window_under_load_is_collected_and_analysed") else {
        return;
    };
    let _lock = server::lock();
    let trace_dir = std::env::var("STEPSCOPE_E2E_TRACE_DIR")
        .map(PathBuf::from)
        .expect(
            "STEPSCOPE_E2E_TRACE_DIR: the server's torch_profiler_dir (bash .ci/e2e.sh sets it)",
        );
    let endpoint = ProfileEndpoint {
        framework: Framework::Vllm,
        base_url: server.url.clone(),
        trace_dir: trace_dir.clone(),
    };
    let before = TraceSnapshot::take(&trace_dir);
    let steps_before = vllm_engine_steps(&server.url).expect("/metrics counts engine steps");
    assert_eq!(
        start_window(&endpoint, ProfileWindow::Steps(16)).expect("the window opens"),
        WindowEnd::ByStop
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let load = Load {
        concurrency: 2,
        input_len: 32,
        output_len: 8,
        num_prompts: 4,
        request_rate: None,
        warmup: 0,
        seed: 7,
    };
    let bench = stepscope_bench(&server, &load, dir.path(), "window_load");
    assert_eq!(bench["summary"]["requests_completed"], 4);
    stop_window(&endpoint, Duration::from_secs(600)).expect("the window closes");
    let engine_steps = vllm_engine_steps(&server.url).expect("/metrics") - steps_before;
    // 4 requests of 8 output tokens, 2 at a time, and the initial test request: at least
    // 16 decode steps.
    assert!(
        engine_steps >= 16,
        "engine steps in the window: {engine_steps}"
    );
    let run = dir.path().join("run/window_1");
    let options = CollectOptions {
        timeout: Duration::from_secs(300),
        ..CollectOptions::default()
    };
    let collected = collect_traces(
        Framework::Vllm,
        &trace_dir,
        &before,
        &run,
        options,
        &mut |_| {},
    )
    .expect("vLLM wrote the window's traces");
    assert!(
        collected.incomplete.is_empty(),
        "{:?}",
        collected.incomplete
    );
    let rank = collected
        .traces
        .iter()
        .find(|t| t.path.to_string_lossy().contains("rank0"))
        .unwrap_or_else(|| panic!("a rank-0 trace among {:?}", collected.traces));
    let output = Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .arg("analyze")
        .arg(&rank.path)
        .args(["--json", "--no-progress"])
        .output()
        .expect("stepscope analyze runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let file = &doc["files"][0];
    assert_eq!(
        doc["verdict"], "no-replays",
        "a CPU server replays no graphs"
    );
    assert_eq!(file["steps"]["framework"], "vllm");
    let counts = file["steps"]["counts"].as_object().expect("step counts");
    let traced: u64 = counts.values().filter_map(serde_json::Value::as_u64).sum();
    let decode = counts
        .get("vllm:decode")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    eprintln!(
        "window: {engine_steps} engine steps by /metrics, {traced} steps in the trace {counts:?}"
    );
    assert!(decode >= 1, "decode steps in the window: {}", file["steps"]);
    // `start_window` gives vLLM the window's steps as `max_iterations`, and vLLM 0.32 stops
    // its profiler there by itself: the trace holds the 16 steps asked for, while /metrics
    // goes on counting until `/stop_profile` (measured: 16 traced, 26 counted).
    assert!(
        (16..=17).contains(&traced),
        "{traced} steps in the trace for a 16-step window"
    );
    assert!(
        file["advice"]["applies"] != true,
        "no switch advice for a CPU trace"
    );
}
