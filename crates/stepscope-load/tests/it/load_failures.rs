//! Every failure kind produced for real by a misbehaving loopback server: counted with its
//! reason, never hanging the run.

use crate::load::{run, small_options};
use std::time::{Duration as StdDuration, Instant};
use stepscope_load::{BenchReport, FailureKind};
use stepscope_test_server::{Fault, InstantServer, InstantServerOptions};

/// Runs 9 requests against a server whose every third answer has `fault`.
fn faulty_run(fault: Fault, timeout: StdDuration) -> (BenchReport, InstantServer) {
    let server =
        InstantServer::start(InstantServerOptions::default().with_fault(fault, 3)).unwrap();
    let mut options = small_options(&server);
    options.num_prompts = 9;
    options.concurrency = 3;
    options.output_len = 8;
    options.timeout = timeout;
    (run(&options), server)
}

#[track_caller]
fn expect_failures(report: &BenchReport, kind: FailureKind, detail: &str) {
    let summary = &report.summary;
    assert!(!report.partial);
    assert_eq!(summary.requests_started, 9);
    assert_eq!(summary.requests_completed, 6, "{summary:?}");
    assert_eq!(summary.requests_failed, 3);
    assert_eq!(
        summary.failures.get(&kind),
        Some(&3),
        "{:?}",
        summary.failures
    );
    let errors: Vec<_> = report
        .requests
        .iter()
        .filter_map(|r| r.error.as_ref())
        .collect();
    assert_eq!(errors.len(), 3);
    for error in &errors {
        assert_eq!(error.kind, kind);
        assert!(
            error.detail.contains(detail),
            "{:?} lacks {detail:?}",
            error.detail
        );
    }
    // One example per reason: the first failure's detail.
    assert_eq!(
        summary.failure_examples.get(&kind),
        Some(&errors[0].detail),
        "{:?}",
        summary.failure_examples
    );
    assert_eq!(summary.failure_examples.len(), 1);
    // Completed requests are unaffected and the failed ones are not in the statistics.
    assert_eq!(summary.output_tokens, 6 * 8);
}

const SECOND: StdDuration = StdDuration::from_secs(10);

#[test]
fn status_500_is_counted_with_status_and_body() {
    let (report, server) = faulty_run(Fault::Status(500), SECOND);
    expect_failures(&report, FailureKind::HttpStatus, "injected failure");
    let error = report
        .requests
        .iter()
        .find_map(|r| r.error.as_ref())
        .unwrap();
    assert_eq!(error.status, Some(500));
    assert!(error.detail.starts_with("HTTP 500"), "{}", error.detail);
    assert_eq!(server.stats().faults(), 3);
}

#[test]
fn a_connection_closed_mid_stream_is_counted() {
    let (report, _server) = faulty_run(Fault::CloseAfter(3), SECOND);
    expect_failures(&report, FailureKind::ClosedStream, "after 3 token chunks");
}

#[test]
fn a_stream_without_done_is_counted_as_closed() {
    let (report, _server) = faulty_run(Fault::NoDone, SECOND);
    expect_failures(&report, FailureKind::ClosedStream, "without `data: [DONE]`");
}

#[test]
fn a_stall_past_the_timeout_is_counted_and_the_run_ends() {
    let began = Instant::now();
    let (report, _server) = faulty_run(Fault::StallAfter(2), StdDuration::from_millis(400));
    expect_failures(&report, FailureKind::Timeout, "after 2 token chunks");
    // Three stalled requests in parallel, each cut at 0.4 s.
    assert!(
        began.elapsed() < StdDuration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    let stalled = report.requests.iter().find(|r| r.error.is_some()).unwrap();
    let latency_ms = stalled.latency.unwrap().as_millis_f64();
    assert!((400.0..2000.0).contains(&latency_ms), "{latency_ms}");
}

#[test]
fn a_bad_sse_line_is_counted() {
    let (report, _server) = faulty_run(Fault::BadLineAfter(4), SECOND);
    expect_failures(
        &report,
        FailureKind::BadSse,
        "this is not a server-sent event",
    );
}

#[test]
fn an_error_event_is_counted() {
    let (report, _server) = faulty_run(Fault::ErrorEventAfter(1), SECOND);
    expect_failures(&report, FailureKind::ServerError, "injected error event");
}

#[test]
fn a_refused_connection_is_counted_and_the_run_ends() {
    let address = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let server = InstantServer::start(InstantServerOptions::default()).unwrap();
    let mut options = small_options(&server);
    drop(server);
    options.base_url = format!("http://{address}");
    options.num_prompts = 5;
    // Without the initial test request (which would stop the run: see `load_setup`).
    options.initial_test = false;
    let report = run(&options);
    assert_eq!(report.summary.requests_completed, 0);
    assert_eq!(report.summary.failures.get(&FailureKind::Connect), Some(&5));
    assert_eq!(report.summary.ttft_ms, None);
    let example = &report.summary.failure_examples[&FailureKind::Connect];
    assert!(example.contains("failed to connect"), "{example}");
}
