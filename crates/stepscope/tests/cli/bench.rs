//! `stepscope bench`: the real binary against the in-process instant server of
//! `stepscope-test-server` on loopback — the table, the JSON file, JSON on stdout, usage
//! errors, the initial test request, the `/v1` base URL, the model from `GET /v1/models`,
//! goodput, and a real SIGINT or SIGTERM that leaves a partial report behind.

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
        "output tokens             1280  (streamed token ids)",
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
    assert_eq!(json["schema_version"], 2);
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
    // The initial test request, the warmup and the measured requests.
    assert_eq!(server.stats().requests(), 43);
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
    assert!(
        run.stdout
            .contains("http_status: 3  e.g. HTTP 503 Injected Failure: {"),
        "{}",
        run.stdout
    );
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
    let mut child = spawn(&args);
    // Let a few requests (about 20 per second) complete, then interrupt.
    let began = Instant::now();
    while server.stats().requests() < 10 && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    send_signal(&child, "-INT");
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

#[test]
fn sigterm_saves_a_partial_report_with_what_had_streamed() {
    // A chunk every 10 ms, 100 per request: the test request takes 1 s, then 4 stay in flight.
    let server =
        server(InstantServerOptions::default().with_chunk_interval(Duration::from_millis(10)));
    let dir = tempdir();
    let json_path = dir.path().join("terminated.json");
    let args = bench_args(
        &server,
        &[
            "--num-prompts",
            "8",
            "--concurrency",
            "4",
            "--output-len",
            "100",
            "--input-len",
            "8",
            "--json",
            json_path.to_str().unwrap(),
        ],
    );
    let mut child = spawn(&args);
    // The test request and the 4 first measured ones, which then stream for a while.
    let began = Instant::now();
    while server.stats().requests() < 5 && began.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    send_signal(&child, "-TERM");
    wait_at_most(&mut child, Duration::from_secs(10));
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    // 128 + 15, as a shell reports SIGTERM (Ctrl-C gives 130).
    assert_eq!(
        output.status.code(),
        Some(143),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("PARTIAL: stopped after"), "{stdout}");
    let json: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(json["partial"], true);
    assert_eq!(json["summary"]["requests_cancelled"], 4);
    let requests = json["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 4);
    for request in requests {
        assert_eq!(request["unfinished"], true, "{request}");
        assert_eq!(request["error"]["kind"], "cancelled", "{request}");
        // About 20 of 100 chunks had arrived: their TTFT and gaps are kept.
        let streamed = request["output_tokens"].as_u64().unwrap();
        assert!((1..100).contains(&streamed), "{request}");
        assert!(request["ttft_ms"].is_f64(), "{request}");
        assert_eq!(
            request["itl_ms"].as_array().unwrap().len() as u64,
            streamed - 1
        );
    }
}

#[test]
fn a_failing_test_request_exits_2_before_the_run_with_the_servers_answer() {
    use stepscope_test_server::Fault;
    let server = server(InstantServerOptions::default().with_fault(Fault::Status(500), 1));
    let dir = tempdir();
    let json_path = dir.path().join("never.json");
    let args = bench_args(
        &server,
        &[
            "--num-prompts",
            "50",
            "--warmup",
            "3",
            "--json",
            json_path.to_str().unwrap(),
        ],
    );
    let run = stepscope_in(dir.path(), &args, &[]);
    run.expect_code(2);
    for expected in [
        "error: The initial test request to `",
        "failed (http_status): HTTP 500 Injected Failure: {",
        "injected failure",
        "hint: ",
    ] {
        assert!(
            run.stderr.contains(expected),
            "{expected:?} in {}",
            run.stderr
        );
    }
    assert_eq!(server.stats().requests(), 1, "no warmup, nothing measured");
    assert!(!json_path.exists());
    // Nothing listening: the connection error.
    let address = server.address();
    drop(server);
    let run = stepscope_in(
        dir.path(),
        [
            "bench",
            "--model",
            "m",
            "--url",
            &format!("http://{address}"),
        ],
        &[],
    );
    run.expect_code(2);
    assert!(
        run.stderr.contains("failed to connect to"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: nothing answers"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_run_in_which_no_measured_request_completes_exits_2() {
    use stepscope_test_server::Fault;
    // Every second request fails: the test request passes, the one measured request fails.
    let server = server(InstantServerOptions::default().with_fault(Fault::Status(503), 2));
    let dir = tempdir();
    let json_path = dir.path().join("failed.json");
    let args = bench_args(
        &server,
        &[
            "--num-prompts",
            "1",
            "--output-len",
            "4",
            "--input-len",
            "4",
            "--json",
            json_path.to_str().unwrap(),
        ],
    );
    let run = stepscope_in(dir.path(), &args, &[]);
    run.expect_code(2);
    assert!(
        run.stdout.contains("requests ok / failed      0 / 1"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("e.g. HTTP 503"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("No measured request completed (1 failed)"),
        "{}",
        run.stderr
    );
    let json: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let example = json["summary"]["failure_examples"]["http_status"]
        .as_str()
        .unwrap();
    assert!(example.starts_with("HTTP 503"), "{example}");
}

#[test]
fn an_openai_base_url_ending_in_v1_reaches_v1_completions() {
    for suffix in ["/v1", "/v1/"] {
        let server = server(InstantServerOptions::default());
        let url = format!("{}{suffix}", server.base_url());
        let run = stepscope_in(
            &std::env::temp_dir(),
            [
                "bench",
                "--url",
                &url,
                "--model",
                "tiny",
                "--num-prompts",
                "3",
                "--output-len",
                "4",
                "--input-len",
                "4",
                "--json",
                "-",
            ],
            &[],
        );
        run.expect_code(0);
        assert_eq!(run.json()["summary"]["requests_completed"], 3);
        let paths: Vec<String> = server
            .seen_requests()
            .into_iter()
            .map(|request| format!("{} {}", request.method, request.path))
            .collect();
        // The model list first, for the named model's context length, then the requests.
        let mut expected = vec!["GET /v1/models"];
        expected.extend(["POST /v1/completions"; 4]);
        assert_eq!(paths, expected, "{suffix}");
    }
}

#[test]
fn the_json_path_is_checked_before_any_request() {
    let server = server(InstantServerOptions::default());
    let dir = tempdir();
    let missing = dir.path().join("no-such-folder").join("out.json");
    let folder = dir.path().to_str().unwrap().to_owned();
    for path in [missing.to_str().unwrap(), folder.as_str()] {
        let run = stepscope_in(
            dir.path(),
            ["bench", "--url", &server.base_url(), "--json", path],
            &[],
        );
        run.expect_code(2);
        assert!(
            run.stderr
                .contains(&format!("Cannot write the JSON to `{path}`")),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("hint: "), "{}", run.stderr);
    }
    assert_eq!(
        server.seen_requests(),
        [],
        "not even the model list was asked for"
    );
    // A file that exists is not truncated by the check, and one the check made is removed.
    let kept = dir.path().join("kept.json");
    std::fs::write(&kept, "old").unwrap();
    let run = stepscope_in(
        dir.path(),
        [
            "bench",
            "--url",
            "https://x.invalid",
            "--json",
            kept.to_str().unwrap(),
        ],
        &[],
    );
    run.expect_code(2);
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "old");
    let fresh = dir.path().join("fresh.json");
    let run = stepscope_in(
        dir.path(),
        [
            "bench",
            "--url",
            "https://x.invalid",
            "--json",
            fresh.to_str().unwrap(),
        ],
        &[],
    );
    run.expect_code(2);
    assert!(!fresh.exists());
}

#[test]
fn percentiles_and_goodput_in_the_table_and_the_json() {
    let server = server(InstantServerOptions::default());
    let args = bench_args(
        &server,
        &[
            "--num-prompts",
            "5",
            "--output-len",
            "4",
            "--input-len",
            "4",
            "--slo",
            "ttft_ms=60000,tpot_ms=60000,e2el_ms=60000",
            "--json",
            "-",
        ],
    );
    let run = stepscope_in(&std::env::temp_dir(), &args, &[]);
    run.expect_code(0);
    let header = run
        .stderr
        .lines()
        .find(|line| line.starts_with("latency (ms)"))
        .unwrap_or_else(|| panic!("{}", run.stderr));
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        ["latency", "(ms)", "mean", "median", "p90", "p95", "p99"]
    );
    assert!(
        run.stderr.contains("request goodput           ")
            && run
                .stderr
                .contains("(5 of 5 within ttft ≤ 60000 ms, tpot ≤ 60000 ms, e2el ≤ 60000 ms)"),
        "{}",
        run.stderr
    );
    let json = run.json();
    let summary = &json["summary"];
    for key in ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"] {
        let stats = &summary[key];
        let (p90, p95, p99) = (
            stats["p90"].as_f64().unwrap(),
            stats["p95"].as_f64().unwrap(),
            stats["p99"].as_f64().unwrap(),
        );
        assert!(p90 <= p95 && p95 <= p99, "{key}: {stats}");
    }
    assert_eq!(summary["goodput"]["good_requests"], 5);
    assert_eq!(summary["goodput"]["slo"]["tpot_ms"], 60000.0);
    assert!(summary["goodput"]["requests_per_s"].as_f64().unwrap() > 0.0);
    // Without --slo there is no goodput.
    let args = bench_args(&server, &["--num-prompts", "2", "--json", "-"]);
    let run = stepscope_in(&std::env::temp_dir(), &args, &[]);
    run.expect_code(0);
    assert_eq!(run.json()["summary"]["goodput"], Value::Null);
    assert!(!run.stderr.contains("goodput"), "{}", run.stderr);
}

#[test]
fn bad_slo_text_is_a_usage_error() {
    let dir = tempdir();
    for (slo, says) in [
        ("ttft=500", "unknown metric `ttft`"),
        ("ttft_ms", "is not `metric=ms`"),
        ("tpot_ms=fast", "`fast` is not a number"),
    ] {
        let run = stepscope_in(dir.path(), ["bench", "--model", "m", "--slo", slo], &[]);
        run.expect_code(2);
        assert!(run.stderr.contains("--slo"), "{}", run.stderr);
        assert!(run.stderr.contains(says), "{says:?} in {}", run.stderr);
    }
}

#[test]
fn without_model_the_servers_first_model_is_used() {
    let server = server(InstantServerOptions::default().with_models(&["served-model", "other"]));
    let run = stepscope_in(
        &std::env::temp_dir(),
        [
            "bench",
            "--url",
            &server.base_url(),
            "--num-prompts",
            "2",
            "--json",
            "-",
        ],
        &[],
    );
    run.expect_code(0);
    assert_eq!(run.json()["settings"]["model"], "served-model");
    assert!(
        run.stderr.contains("(model served-model)"),
        "{}",
        run.stderr
    );
    let seen = server.seen_requests();
    assert_eq!(seen[0].path, "/v1/models");
    assert!(
        seen[1..]
            .iter()
            .all(|request| request.model.as_deref() == Some("served-model"))
    );
    // No model listed: an error asking for --model.
    let empty = self::server(InstantServerOptions::default().with_models(&[]));
    let run = stepscope_in(
        &std::env::temp_dir(),
        ["bench", "--url", &empty.base_url()],
        &[],
    );
    run.expect_code(2);
    assert!(run.stderr.contains("the list is empty"), "{}", run.stderr);
    assert!(run.stderr.contains("`--model NAME`"), "{}", run.stderr);
    assert_eq!(empty.stats().requests(), 0);
}

/// Starts `stepscope` with `args`, its output piped.
pub(crate) fn spawn(args: &[String]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_stepscope"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// `kill -SIGNAL` the child.
pub(crate) fn send_signal(child: &std::process::Child, signal: &str) {
    let kill = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success());
}

/// Waits for `child`, killing it and failing past `limit`.
pub(crate) fn wait_at_most(child: &mut std::process::Child, limit: Duration) {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("stepscope bench did not end within {limit:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A baseline config for the instant server, written to `dir`.
pub(crate) fn write_config(dir: &std::path::Path, port: u16) -> std::path::PathBuf {
    let config = dir.join("baseline_test.yaml");
    std::fs::write(
        &config,
        format!(
            "kind: baseline\nframework: vllm\nmodel: cfg-model\nserver: {{port: {port}}}\n\
             load: {{concurrency: 3, input_len: 8, output_len: 4, num_prompts: 6}}\n\
             output_dir: results/test\n"
        ),
    )
    .expect("write");
    config
}

#[test]
fn a_config_gives_the_load_the_model_and_the_server() {
    let server = server(InstantServerOptions::default());
    let dir = tempdir();
    let port = server.address().port();
    let config = write_config(dir.path(), port);
    let json_path = dir.path().join("out.json");
    let run = stepscope_in(
        dir.path(),
        [
            "bench",
            "--config",
            config.to_str().unwrap(),
            "--json",
            json_path.to_str().unwrap(),
            "--no-progress",
        ],
        &[],
    );
    run.expect_code(0);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("json")).expect("JSON");
    let settings = &doc["settings"];
    assert_eq!(settings["model"], "cfg-model");
    assert_eq!(settings["concurrency"], 3);
    assert_eq!(settings["input_len"], 8);
    assert_eq!(settings["output_len"], 4);
    assert_eq!(settings["num_prompts"], 6);
    assert_eq!(doc["summary"]["requests_completed"], 6);
    let url = settings["url"].as_str().expect("url");
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{port}/")),
        "{url}"
    );
}

#[test]
fn flags_win_over_a_config_and_a_missing_config_is_named() {
    let server = server(InstantServerOptions::default());
    let dir = tempdir();
    let config = write_config(dir.path(), server.address().port());
    let run = stepscope_in(
        dir.path(),
        [
            "bench",
            "--config",
            config.to_str().unwrap(),
            "--num-prompts",
            "2",
            "--model",
            "flag-model",
            "--json",
            "-",
            "--no-progress",
        ],
        &[],
    );
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["settings"]["num_prompts"], 2, "the flag wins");
    assert_eq!(
        doc["settings"]["concurrency"], 3,
        "the config fills the rest"
    );
    assert_eq!(doc["settings"]["model"], "flag-model");
    let missing = stepscope_in(dir.path(), ["bench", "--config", "no/such.yaml"], &[]);
    missing.expect_code(2);
    assert!(
        missing.stderr.contains("no/such.yaml"),
        "{}",
        missing.stderr
    );
}
