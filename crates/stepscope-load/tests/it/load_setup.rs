//! What happens before the measurement, against the real loopback server: the initial test
//! request that stops a run bound to fail, the OpenAI base-URL form ending in `/v1`, and the
//! model taken from `GET /v1/models` when none is named.

use crate::load::{run, small_options, try_run_with_stop};
use stepscope_load::{BenchOptions, FailureKind, LoadError};
use stepscope_test_server::{Fault, InstantServer, InstantServerOptions};

fn start(options: InstantServerOptions) -> InstantServer {
    InstantServer::start(options).expect("the instant server starts")
}

/// Runs `options`, which must fail to start; the error and its text.
fn refused(options: &BenchOptions) -> (LoadError, String) {
    let error = try_run_with_stop(options, std::future::pending()).expect_err("the run stops");
    let text = error.to_string();
    (error, text)
}

/// The paths of the requests the server read, in order.
fn paths(server: &InstantServer) -> Vec<String> {
    server
        .seen_requests()
        .into_iter()
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}

#[test]
fn the_test_request_goes_first_and_a_good_run_goes_on() {
    let server = start(InstantServerOptions::default());
    let mut options = small_options(&server);
    options.num_prompts = 3;
    options.warmup = 1;
    let report = run(&options);
    assert_eq!(report.summary.requests_completed, 3);
    // The test request, the warmup and 3 measured; none of the first two is reported.
    assert_eq!(server.stats().requests(), 5);
    assert_eq!(report.requests.len(), 3);
    options.initial_test = false;
    run(&options);
    assert_eq!(server.stats().requests(), 5 + 4);
}

#[test]
fn an_http_error_on_the_test_request_stops_the_run_with_the_servers_answer() {
    let server = start(InstantServerOptions::default().with_fault(Fault::Status(500), 1));
    let mut options = small_options(&server);
    options.warmup = 2;
    let (error, text) = refused(&options);
    let LoadError::InitialTest { error, url, .. } = error else {
        panic!("{text}");
    };
    assert_eq!(
        (error.kind, error.status),
        (FailureKind::HttpStatus, Some(500))
    );
    assert_eq!(url, format!("{}/v1/completions", server.base_url()));
    for expected in [
        "initial test request",
        "HTTP 500 Injected Failure",
        r#""message":"injected failure""#,
        "hint: the server failed on the request",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    // Only the test request was sent: no warmup, nothing measured.
    assert_eq!(server.stats().requests(), 1);
}

#[test]
fn a_wrong_path_is_a_404_with_a_hint_about_the_url() {
    let server = start(InstantServerOptions::default());
    let mut options = small_options(&server);
    options.base_url = format!("{}/api", server.base_url());
    let (_, text) = refused(&options);
    assert!(text.contains("HTTP 404 Not Found"), "{text}");
    assert!(text.contains("`--url`"), "{text}");
    // The model list is asked for the named model's context length first.
    assert_eq!(
        paths(&server),
        ["GET /api/v1/models", "POST /api/v1/completions"]
    );
}

#[test]
fn nothing_listening_stops_the_run_with_the_connection_error() {
    let address = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let server = start(InstantServerOptions::default());
    let mut options = small_options(&server);
    drop(server);
    options.base_url = format!("http://{address}");
    let (error, text) = refused(&options);
    assert!(
        matches!(&error, LoadError::InitialTest { error, .. } if error.kind == FailureKind::Connect),
        "{text}"
    );
    assert!(text.contains("failed to connect to"), "{text}");
    assert!(text.contains("hint: nothing answers"), "{text}");
}

#[test]
fn a_broken_test_stream_stops_the_run() {
    for (fault, says) in [
        (Fault::NoDone, "without `data: [DONE]`"),
        (Fault::BadLineAfter(0), "this is not a server-sent event"),
    ] {
        let server = start(InstantServerOptions::default().with_fault(fault, 1));
        let (_, text) = refused(&small_options(&server));
        assert!(text.contains(says), "{text}");
        assert!(text.contains("not an OpenAI-compatible stream"), "{text}");
        assert_eq!(server.stats().requests(), 1);
    }
}

#[test]
fn an_openai_base_url_ending_in_v1_reaches_v1_completions() {
    for suffix in ["/v1", "/v1/"] {
        let server = start(InstantServerOptions::default());
        let mut options = small_options(&server);
        options.base_url = format!("{}{suffix}", server.base_url());
        options.num_prompts = 4;
        let report = run(&options);
        assert_eq!(report.summary.requests_completed, 4, "{suffix}");
        assert_eq!(
            report.settings.url,
            format!("{}/v1/completions", server.base_url())
        );
        let mut expected = vec!["GET /v1/models"];
        expected.extend(["POST /v1/completions"; 5]);
        assert_eq!(paths(&server), expected, "{suffix}");
    }
}

#[test]
fn without_a_model_the_first_listed_one_is_used() {
    let server = start(InstantServerOptions::default().with_models(&["first-model", "second"]));
    let mut options = small_options(&server);
    options.model = String::new();
    options.base_url = format!("{}/v1", server.base_url());
    options.num_prompts = 2;
    let report = run(&options);
    assert_eq!(report.settings.model, "first-model");
    assert_eq!(report.summary.requests_completed, 2);
    let seen = server.seen_requests();
    assert_eq!(
        paths(&server),
        [
            "GET /v1/models",
            "POST /v1/completions",
            "POST /v1/completions",
            "POST /v1/completions"
        ]
    );
    assert!(
        seen[1..]
            .iter()
            .all(|request| request.model.as_deref() == Some("first-model"))
    );
}

#[test]
fn without_a_model_an_unusable_list_asks_for_one() {
    let empty = start(InstantServerOptions::default().with_models(&[]));
    let mut options = small_options(&empty);
    options.model = String::new();
    let (error, text) = refused(&options);
    assert!(matches!(error, LoadError::ModelDiscovery { .. }), "{text}");
    assert!(text.contains("the list is empty"), "{text}");
    assert!(text.contains("hint: give the model"), "{text}");
    assert!(text.contains("`--model NAME`"), "{text}");
    assert_eq!(
        empty.stats().requests(),
        0,
        "no completion request was sent"
    );
    // Where nothing answers, the hint is about the server, not the model.
    drop(empty);
    let (_, text) = refused(&options);
    assert!(text.contains("failed to connect"), "{text}");
    assert!(
        text.contains("hint: nothing answers at that address"),
        "{text}"
    );
    assert!(!text.contains("--model"), "{text}");
}
