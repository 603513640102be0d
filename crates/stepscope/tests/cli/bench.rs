//! `stepscope bench`: the real binary against the in-process instant server of
//! `stepscope-serving` on loopback — the table, the JSON file, JSON on stdout, usage errors,
//! and a real SIGINT that leaves a partial report behind.

use crate::common::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use stepscope_test_server::{InstantServer, InstantServerOptions};

fn server(options: InstantServerOptions) -> InstantServer {
    InstantServer::start(options).expect("the instant server starts")
}

fn bench_args(server: &InstantServer, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["bench", "--url", &server.base_url(), "--model", "tiny"]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    args
}

#[test]
fn prints_the_table_and_writes_the_json() {
    let server = server(InstantServerOptions::default());
    let dir = tempdir();
    let json_path = dir.path().join("out.json");
    let json_arg = json_path.to_str().unwrap();
    let args = bench_args(
        &server,
        &[
            "--concurrency",
            "8",
            "--input-len",
            "64",
            "--output-len",
            "32",
            "--num-prompts",
            "40",
            "--warmup",
            "2",
            "--json",
            json_arg,
        ],
    );
    let run = stepscope_in(dir.path(), &args, &[]);
    run.expect_code(0);
    for expected in [
        "requests ok / failed      40 / 0",
        "output tokens             1280  (server usage)",
        "input tokens              2560",
        "warmup requests           2 (0 failed)",
        "output token throughput",
        "TTFT",
        "TPOT",
        "ITL",
        "E2E",
        "percentiles: linear interpolation",
    ] {
        assert!(
            run.stdout.contains(expected),
            "{expected:?} in\n{}",
            run.stdout
        );
    }
    assert!(run.stderr.contains("wrote "), "{}", run.stderr);
    let json: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["partial"], false);
    assert_eq!(json["settings"]["model"], "tiny");
    assert_eq!(
        json["settings"]["url"],
        format!("{}/v1/completions", server.base_url())
    );
    assert_eq!(json["summary"]["requests_completed"], 40);
    assert_eq!(json["summary"]["output_tokens"], 40 * 32);
    let requests = json["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 40);
    assert!(
        requests
            .iter()
            .all(|r| r["itl_ms"].as_array().unwrap().len() == 31)
    );
    assert_eq!(server.stats().requests(), 42);
}

#[test]
fn json_dash_goes_to_stdout_with_the_table_on_stderr() {
    let server = server(InstantServerOptions::default());
    let args = bench_args(
        &server,
        &[
            "--num-prompts",
            "3",
            "--output-len",
            "4",
            "--input-len",
            "4",
            "--json",
            "-",
        ],
    );
    let run = stepscope_in(&std::env::temp_dir(), &args, &[]);
    run.expect_code(0);
    assert_eq!(run.json()["summary"]["output_tokens"], 12);
    assert!(
        run.stderr.contains("requests ok / failed"),
        "{}",
        run.stderr
    );
}

#[test]
fn failures_are_counted_in_the_table() {
    use stepscope_test_server::Fault;
    let server = server(InstantServerOptions::default().with_fault(Fault::Status(503), 2));
    let args = bench_args(
        &server,
        &[
            "--num-prompts",
            "6",
            "--output-len",
            "4",
            "--input-len",
            "4",
            "--concurrency",
            "1",
        ],
    );
    let run = stepscope_in(&std::env::temp_dir(), &args, &[]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("requests ok / failed      3 / 3"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("http_status: 3"), "{}", run.stdout);
}

#[test]
fn usage_errors_exit_2_with_a_hint() {
    let dir = tempdir();
    let run = stepscope_in(dir.path(), ["bench", "--model", "m", "--api", "chat"], &[]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("hint: add `--tokenizer"),
        "{}",
        run.stderr
    );
    let run = stepscope_in(
        dir.path(),
        ["bench", "--model", "m", "--url", "https://x.invalid"],
        &[],
    );
    run.expect_code(2);
    assert!(run.stderr.contains("only `http`"), "{}", run.stderr);
    let run = stepscope_in(
        dir.path(),
        ["bench", "--model", "m", "--concurrency", "0"],
        &[],
    );
    run.expect_code(2);
    let missing = dir.path().join("missing.json");
    let run = stepscope_in(
        dir.path(),
        [
            "bench",
            "--model",
            "m",
            "--tokenizer",
            missing.to_str().unwrap(),
        ],
        &[],
    );
    run.expect_code(2);
    assert!(run.stderr.contains("missing.json"), "{}", run.stderr);
}

#[test]
fn sigint_prints_and_saves_a_partial_report() {
    let server = server(InstantServerOptions::default());
    let dir = tempdir();
    let json_path = dir.path().join("partial.json");
    let args = bench_args(
        &server,
        &[
            "--request-rate",
            "20",
            "--num-prompts",
            "1000",
            "--concurrency",
            "4",
            "--output-len",
            "8",
            "--input-len",
            "8",
            "--json",
            json_path.to_str().unwrap(),
        ],
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    // Let a few requests (about 20 per second) complete, then interrupt.
    let began = Instant::now();
    while server.stats().requests() < 10 && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success());
    wait_at_most(&mut child, Duration::from_secs(10));
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        output.status.code(),
        Some(130),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("PARTIAL: stopped after"), "{stdout}");
    assert!(stdout.contains("TTFT"), "{stdout}");
    let json: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(json["partial"], true);
    let completed = json["summary"]["requests_completed"].as_u64().unwrap();
    assert!((5..1000).contains(&completed), "{completed}");
    assert_eq!(
        json["requests"].as_array().unwrap().len() as u64,
        json["summary"]["requests_started"].as_u64().unwrap()
    );
}

/// Waits for `child`, killing it and failing past `limit`.
fn wait_at_most(child: &mut std::process::Child, limit: Duration) {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("stepscope bench did not end within {limit:?} of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
