//! `stepscope bench` against a server that sends terminal control bytes (in its model id,
//! status line, error body and stream), reports a short context, or is never reached because
//! the lengths asked for are absurd; SIGHUP; and a `--json` that names an input.

use crate::bench::{send_signal, spawn, wait_at_most, write_config};
use crate::common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use stepscope_test_server::{InstantServer, InstantServerOptions};

/// What a hostile server puts in everything it sends: an OSC title, a colour, a NUL.
const EVIL: &str = "\u{1b}]0;pwn\u{7}\u{1b}[31m\u{0}";
/// The same, as it must be shown.
const EVIL_SHOWN: &str = "\\u{1b}]0;pwn\\u{7}\\u{1b}[31m\\u{0}";

/// A loopback HTTP/1.1 server on a thread, one response per connection: `GET /v1/models`
/// gets `models` (JSON), the `n`-th completion request (from 0) gets `answer(n)`.
struct TinyServer {
    url: String,
    completions: Arc<AtomicUsize>,
}

impl TinyServer {
    fn start(models: String, answer: fn(usize) -> Vec<u8>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let completions = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&completions);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                serve(stream, &models, answer, &counter);
            }
        });
        Self { url, completions }
    }
}

fn serve(mut stream: TcpStream, models: &str, answer: fn(usize) -> Vec<u8>, n: &AtomicUsize) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(read) => request.extend_from_slice(&buffer[..read]),
        }
    };
    let head = String::from_utf8_lossy(&request[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    while request.len() < head_end + length {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(read) => request.extend_from_slice(&buffer[..read]),
        }
    }
    let response = if head.starts_with("get /v1/models") {
        respond("200 OK", "application/json", models.as_bytes())
    } else {
        answer(n.fetch_add(1, Ordering::SeqCst))
    };
    let _ = stream.write_all(&response);
}

fn respond(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(body);
    response
}

/// A stream of two tokens.
fn good_stream() -> Vec<u8> {
    let chunk = r#"data: {"choices":[{"index":0,"text":" a"}]}"#;
    let body = format!("{chunk}\n\n{chunk}\n\ndata: [DONE]\n\n");
    respond("200 OK", "text/event-stream", body.as_bytes())
}

/// A 500 whose reason and body carry control bytes.
fn evil_status() -> Vec<u8> {
    let body = format!("boom{EVIL}");
    respond(&format!("500 Oops{EVIL}"), "text/plain", body.as_bytes())
}

/// A stream whose line carries control bytes.
fn evil_stream() -> Vec<u8> {
    let body = format!("data: {EVIL}\n\n");
    respond("200 OK", "text/event-stream", body.as_bytes())
}

/// A model list naming one model `id`, with `max_model_len` when given.
fn models(id: &str, max_model_len: Option<u64>) -> String {
    let mut entry = serde_json::json!({"id": id, "object": "model", "owned_by": "vllm"});
    if let Some(len) = max_model_len {
        entry["max_model_len"] = len.into();
    }
    serde_json::json!({"object": "list", "data": [entry]}).to_string()
}

#[track_caller]
fn assert_no_control_bytes(run: &Run) {
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            !text.contains(['\u{1b}', '\u{0}', '\u{7}', '\u{9b}']),
            "{name} holds a control byte:\n{text:?}"
        );
    }
}

fn bench(url: &str, extra: &[&str]) -> Run {
    let mut args = vec!["bench", "--url", url, "--no-progress"];
    args.extend_from_slice(extra);
    stepscope_in(std::path::Path::new("."), args, &[])
}

#[test]
fn server_text_is_shown_escaped_in_the_table_stderr_and_the_json() {
    let server = TinyServer::start(models(&format!("model{EVIL}"), None), |n| match n % 3 {
        0 => good_stream(),
        1 => evil_status(),
        _ => evil_stream(),
    });
    let dir = tempdir();
    let json = dir.path().join("bench.json");
    let args = [
        "--num-prompts",
        "6",
        "--concurrency",
        "1",
        "--input-len",
        "4",
    ];
    let run = bench(
        &server.url,
        &[
            &args[..],
            &["--output-len", "2", "--json", json.to_str().unwrap()],
        ]
        .concat(),
    );
    run.expect_code(0);
    assert_no_control_bytes(&run);
    assert!(
        run.stdout.contains(&format!("model{EVIL_SHOWN}")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Oops\\u{1b}]0;pwn"), "{}", run.stdout);
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let examples = doc["summary"]["failure_examples"].as_object().unwrap();
    assert_eq!(examples.len(), 2, "{examples:?}");
    for detail in examples.values() {
        let detail = detail.as_str().unwrap();
        assert!(!detail.chars().any(char::is_control), "{detail:?}");
        assert!(detail.contains(EVIL_SHOWN), "{detail}");
    }
}

#[test]
fn a_failing_test_request_quotes_the_server_escaped() {
    let server = TinyServer::start(models("m", None), |_| evil_status());
    let run = bench(&server.url, &["--input-len", "4", "--output-len", "2"]);
    run.expect_code(2);
    assert_no_control_bytes(&run);
    assert!(
        run.stderr.contains(&format!("boom{EVIL_SHOWN}")),
        "{}",
        run.stderr
    );
    let listing = TinyServer::start("{\"data\": 5, \"x\": \"\u{1b}[2J\"}".to_owned(), |_| {
        good_stream()
    });
    let run = bench(&listing.url, &["--input-len", "4"]);
    run.expect_code(2);
    assert_no_control_bytes(&run);
    assert!(run.stderr.contains("\\u{1b}[2J"), "{}", run.stderr);
}

#[test]
fn a_prompt_and_output_beyond_the_reported_context_are_refused_before_any_request() {
    let server = TinyServer::start(models("ctx", Some(2048)), |_| good_stream());
    for named in [&["--model", "ctx"][..], &[]] {
        let run = bench(&server.url, &[named, &["--input-len", "4096"]].concat());
        run.expect_code(2);
        assert!(run.stderr.contains("2048-token context"), "{}", run.stderr);
        assert!(run.stderr.contains("`max_model_len`"), "{}", run.stderr);
        assert!(run.stderr.contains("`--input-len 4096`"), "{}", run.stderr);
    }
    let run = bench(&server.url, &["--input-len", "2000", "--output-len", "100"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("`--output-len` to at most 48"),
        "{}",
        run.stderr
    );
    assert_eq!(server.completions.load(Ordering::SeqCst), 0);
    let fits = [
        "--input-len",
        "2000",
        "--output-len",
        "2",
        "--num-prompts",
        "2",
    ];
    bench(&server.url, &fits).expect_code(0);
}

#[test]
fn an_absurd_input_len_exits_2_at_once_without_building_the_prompt() {
    let server = TinyServer::start(models("m", None), |_| good_stream());
    let began = Instant::now();
    // 2 GiB of address space: a prompt of four billion token ids could not be built in it.
    let script = format!(
        "ulimit -v 2097152; exec \"$0\" bench --url {} --input-len 4000000000 --no-progress",
        server.url
    );
    let output = std::process::Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_stepscope")])
        .output()
        .expect("sh runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    assert!(stderr.contains("`--input-len 4000000000`"), "{stderr}");
    assert!(stderr.contains("1048576"), "{stderr}");
    assert_eq!(server.completions.load(Ordering::SeqCst), 0);
}

#[test]
fn sighup_saves_a_partial_report_like_sigterm() {
    let server = InstantServer::start(
        InstantServerOptions::default().with_chunk_interval(Duration::from_millis(10)),
    )
    .expect("the instant server starts");
    let dir = tempdir();
    let json_path = dir.path().join("hangup.json");
    let url = server.base_url();
    let args: Vec<String> = [
        "bench",
        "--url",
        &url,
        "--model",
        "tiny",
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
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect();
    let mut child = spawn(&args);
    let began = Instant::now();
    while server.stats().requests() < 5 && began.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    send_signal(&child, "-HUP");
    wait_at_most(&mut child, Duration::from_secs(10));
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8(output.stdout).unwrap();
    // 128 + 1, as a shell reports SIGHUP.
    assert_eq!(output.status.code(), Some(129), "{stdout}");
    assert!(stdout.contains("PARTIAL: stopped after"), "{stdout}");
    let json: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(json["partial"], true);
    assert_eq!(json["summary"]["requests_cancelled"], 4);
}

#[test]
fn a_json_path_that_is_an_input_is_refused_before_any_request() {
    let server = InstantServer::start(InstantServerOptions::default()).expect("starts");
    let dir = tempdir();
    let config = write_config(dir.path(), server.address().port());
    let before = std::fs::read(&config).unwrap();
    let link = dir.path().join("link.yaml");
    std::os::unix::fs::symlink(&config, &link).unwrap();
    for json in [&config, &link] {
        let run = stepscope_in(
            dir.path(),
            [
                "bench",
                "--config",
                config.to_str().unwrap(),
                "--json",
                json.to_str().unwrap(),
            ],
            &[],
        );
        run.expect_code(2);
        assert!(run.stderr.contains("--json"), "{}", run.stderr);
        assert!(run.stderr.contains("is the input"), "{}", run.stderr);
    }
    assert_eq!(std::fs::read(&config).unwrap(), before);
    assert_eq!(server.stats().requests(), 0);
}

#[test]
fn sigterm_stops_prompt_building_at_once() {
    let server = InstantServer::start(InstantServerOptions::default()).expect("starts");
    let dir = tempdir();
    let json_path = dir.path().join("stopped.json");
    let url = server.base_url();
    // 64 prompts of a million token ids each take many seconds to build; the stop is
    // heeded between two of them.
    let args: Vec<String> = [
        "bench",
        "--url",
        &url,
        "--model",
        "tiny",
        "--num-prompts",
        "64",
        "--concurrency",
        "64",
        "--output-len",
        "1",
        "--input-len",
        "1000000",
        "--json",
        json_path.to_str().unwrap(),
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect();
    let mut child = spawn(&args);
    let began = Instant::now();
    while server.stats().requests() < 1 && began.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    send_signal(&child, "-TERM");
    let signalled = Instant::now();
    wait_at_most(&mut child, Duration::from_secs(30));
    let took = signalled.elapsed();
    let output = child.wait_with_output().expect("output");
    assert_eq!(output.status.code(), Some(143));
    assert!(took < Duration::from_secs(3), "{took:?} after SIGTERM");
    let json: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(json["partial"], true);
}
