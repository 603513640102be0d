//! `stepscope profile` end to end on the real vLLM CPU server: it boots its own vLLM from a
//! profile config (the venv and tiny model `scripts/vllm-cpu.sh setup` made, the torch
//! profiler on), loads it, records two windows, collects vLLM's real trace files, analyses
//! them (vLLM steps found; a CPU trace has no replays and gets no advice) and measures
//! throughput with the profiler off and on; then a second run attaches to the server the
//! first left running (`--keep-server`, found by its run directory), and a config that boots
//! another server is refused. Nothing of either server may be left behind.

use crate::server;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The profile config `scripts/vllm-cpu.sh profile-config` writes (what docs/profile-loop.md
/// tells a user to run): this venv's vLLM on `port`, pinned where the e2e harness pins servers
/// (`STEPSCOPE_VLLM_SERVER_CPUS`), traces and results under `dir`; `extra_env` adds a line
/// under `envs:` (another server, another fingerprint).
fn config(dir: &Path, script: &Path, port: u16, extra_env: &str) -> PathBuf {
    let written = Command::new("bash")
        .arg(script)
        .args(["profile-config", &port.to_string()])
        .arg(dir)
        .output()
        .expect("bash runs the script");
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let path = PathBuf::from(String::from_utf8_lossy(&written.stdout).trim());
    if extra_env.is_empty() {
        return path;
    }
    let text = std::fs::read_to_string(&path).expect("the config");
    let other = dir.join("other.yaml");
    std::fs::write(
        &other,
        text.replace("envs:\n", &format!("envs:\n{extra_env}")),
    )
    .expect("write");
    other
}

fn stepscope(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args(args)
        .output()
        .expect("stepscope runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

fn results(run: &Path) -> Value {
    let text = std::fs::read_to_string(run.join("results.json")).expect("results.json");
    serde_json::from_str(&text).expect("JSON")
}

/// Live processes of a process group (the library's own /proc reading).
fn group_members(group: i64) -> Vec<i32> {
    let group = i32::try_from(group).expect("a process group id");
    stepscope_serving::server::group_members(group).unwrap_or_default()
}

#[track_caller]
fn assert_group_gone(group: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !group_members(group).is_empty() {
        assert!(
            Instant::now() < deadline,
            "left behind: {:?}",
            group_members(group)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn profile_boots_vllm_records_windows_and_measures_throughput_then_attaches() {
    let Some(server) = server::from_env(
        "profile_boots_vllm_records_windows_and_measures_throughput_then_attaches",
    ) else {
        return;
    };
    let _lock = server::lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let port = server::free_port();
    let config = config(dir.path(), &server.script, port, "");
    let first = dir.path().join("results/first");
    let started = Instant::now();
    let (code, stdout, stderr) = stepscope(&[
        "profile",
        &config.display().to_string(),
        "--out",
        &first.display().to_string(),
        "--keep-server",
        "--no-progress",
        "--color",
        "never",
        "--ready-timeout",
        "600",
    ]);
    eprintln!(
        "profile (boot) took {:.1} s\n{stdout}",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let doc = results(&first);
    assert_eq!(doc["status"], "complete", "{doc}");
    assert_eq!(doc["server"]["mode"], "booted");
    assert_eq!(doc["server"]["stop"], "kept");
    let group = doc["server"]["process_group"]
        .as_i64()
        .expect("process group");
    let windows = doc["windows"].as_array().expect("windows");
    assert_eq!(windows.len(), 2);
    for window in windows {
        assert!(window["error"].is_null(), "{window}");
        let roles: Vec<&str> = window["traces"]
            .as_array()
            .expect("traces")
            .iter()
            .map(|t| t["role"].as_str().unwrap_or_default())
            .collect();
        assert!(
            roles.contains(&"rank") && roles.contains(&"frontend"),
            "vLLM's rank and front-end files: {window}"
        );
        let analysis = &window["analysis"];
        assert_eq!(
            analysis["verdict"], "no-replays",
            "a CPU server replays no graphs"
        );
        let file = &analysis["files"][0];
        // vLLM's own step annotations (a one-step window may hold a prefill or a decode).
        let vllm_steps: u64 = file["steps"]
            .as_object()
            .map(|counts| {
                counts
                    .iter()
                    .filter(|(name, _)| name.starts_with("vllm:"))
                    .filter_map(|(_, n)| n.as_u64())
                    .sum()
            })
            .unwrap_or(0);
        assert!(vllm_steps >= 1, "{file}");
        let steps = analysis["steps_in_trace"].as_u64().expect("steps");
        let asked = window["requested_steps"].as_u64().expect("asked");
        eprintln!(
            "window {}: asked {asked}, counted {}, the trace holds {steps}",
            window["spec"], window["counted_steps"]
        );
        // vLLM 0.32 honours max_iterations: the trace holds about the steps asked (the
        // profiler stops at the step after the limit), not every step until /stop_profile.
        // Its count can take in iterations the trace does not show as steps (one that
        // scheduled nothing is annotated `execute_context_0(0)_generation_0(0)`, which is not
        // a step): one CI run here traced 6 steps of 8 asked, with one such iteration in its
        // profile table; the two runs after it traced 8 of 8.
        assert!(
            steps + 2 >= asked && steps >= 1 && steps <= asked + 2,
            "asked {asked}, traced {steps}"
        );
        let report: Value = serde_json::from_str(
            &std::fs::read_to_string(first.join(analysis["document"].as_str().expect("doc")))
                .expect("analysis.json"),
        )
        .expect("JSON");
        assert!(
            report["files"][0]["advice"]["applies"] != true,
            "no switch advice for a CPU trace"
        );
    }
    let comparisons = doc["throughput"]["comparisons"]
        .as_array()
        .expect("comparisons");
    assert_eq!(comparisons[0]["phases"], 3);
    assert!(comparisons[0]["reference_median"].as_f64().unwrap_or(0.0) > 0.0);

    // The kept server, attached to by URL: its run directory says how it was booted.
    let second = dir.path().join("results/second");
    let url = format!("http://127.0.0.1:{port}");
    let (code, stdout, stderr) = stepscope(&[
        "profile",
        &config.display().to_string(),
        "--out",
        &second.display().to_string(),
        "--url",
        &url,
        "--phases",
        "0",
        "--window",
        "single-step",
        "--no-progress",
    ]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let attached = results(&second);
    assert_eq!(attached["server"]["mode"], "attached");
    assert_eq!(attached["windows"][0]["analysis"]["verdict"], "no-replays");

    // A config that boots another server (one more variable) is refused.
    let other = self::config(
        dir.path(),
        &server.script,
        port,
        "  STEPSCOPE_OTHER: \"1\"\n",
    );
    let (code, _, stderr) = stepscope(&[
        "profile",
        &other.display().to_string(),
        "--out",
        &dir.path().join("third").display().to_string(),
        "--url",
        &url,
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot be reused"), "{stderr}");

    Command::new("kill")
        .args(["-TERM", "--", &format!("-{group}")])
        .status()
        .expect("kill");
    assert_group_gone(group);
}
