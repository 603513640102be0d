//! The load generator against the instant server over real loopback HTTP: token counts,
//! fixed concurrency as the server counts it, Poisson arrivals, the JSON document, a stop.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration as StdDuration;
use stepscope_load::schedule::arrival_offsets;
use stepscope_load::{
    Api, BenchOptions, BenchProgress, BenchReport, FailureKind, LoadError, MonotonicClock,
    OutputTokenSource, PromptSource, Slo, UsageCheck, WordVocabulary, run_benchmark,
};
use stepscope_test_server::{InstantServer, InstantServerOptions};

/// Runs a benchmark on a current-thread runtime, failing the test past 60 s.
pub fn try_run_with_stop(
    options: &BenchOptions,
    stop: impl Future<Output = ()>,
) -> Result<BenchReport, LoadError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (clock, progress) = (MonotonicClock::new(), BenchProgress::default());
    runtime.block_on(async {
        let run = run_benchmark(options, &clock, &progress, stop);
        tokio::time::timeout(StdDuration::from_secs(60), run)
            .await
            .expect("the run ends within 60 s")
    })
}

/// Runs a benchmark that must start, failing the test past 60 s.
pub fn run_with_stop(options: &BenchOptions, stop: impl Future<Output = ()>) -> BenchReport {
    try_run_with_stop(options, stop).expect("the run starts")
}

/// Runs a benchmark to its end.
pub fn run(options: &BenchOptions) -> BenchReport {
    run_with_stop(options, std::future::pending())
}

/// Small options aimed at `server`.
pub fn small_options(server: &InstantServer) -> BenchOptions {
    let mut options = BenchOptions::default();
    options.base_url = server.base_url();
    options.model = "tiny".to_owned();
    options.concurrency = 4;
    options.num_prompts = 16;
    options.input_len = 32;
    options.output_len = 48;
    options.timeout = StdDuration::from_secs(20);
    options
}

fn start(options: InstantServerOptions) -> InstantServer {
    InstantServer::start(options).expect("the instant server starts")
}

#[test]
fn token_counts_equal_what_was_asked() {
    let server = start(InstantServerOptions::default());
    let mut options = small_options(&server);
    options.warmup = 3;
    let report = run(&options);
    let summary = &report.summary;
    assert!(!report.partial);
    assert_eq!(
        (summary.requests_started, summary.requests_completed),
        (16, 16)
    );
    assert_eq!((summary.warmup_requests, summary.warmup_failed), (3, 0));
    assert_eq!(summary.output_tokens, 16 * 48);
    assert_eq!(summary.input_tokens, 16 * 32);
    assert_eq!(summary.output_tokens_from_token_ids, 16);
    assert_eq!(summary.usage_output_tokens, Some(16 * 48));
    assert_eq!(
        (summary.usage_over_max_tokens, summary.usage_disagreeing),
        (0, 0)
    );
    for request in &report.requests {
        assert_eq!(request.output_tokens, 48, "request {}", request.index);
        assert_eq!(request.output_tokens_source, OutputTokenSource::TokenIds);
        assert_eq!(request.usage_check(48), UsageCheck::Agrees);
        assert_eq!(request.input_tokens, 32);
        assert_eq!(request.itl.len(), 47);
        assert!(request.ttft.is_some() && request.latency >= request.ttft);
    }
    // The server saw the test request, the warmup and the measured requests, each asking
    // for 48 tokens.
    assert_eq!(server.stats().requests(), 20);
    assert_eq!(server.stats().token_chunks(), 20 * 48);
    assert!(report.settings.initial_test);
    assert!(summary.throughput.output_tokens_per_s > 0.0);
    assert!(summary.itl_ms.is_some() && summary.tpot_ms.is_some());
}

#[test]
fn without_usage_the_streamed_tokens_are_counted_alike() {
    let server = start(InstantServerOptions::default().without_usage());
    let report = run(&small_options(&server));
    assert_eq!(report.summary.output_tokens, 16 * 48);
    assert_eq!(report.summary.output_tokens_from_token_ids, 16);
    assert_eq!(report.summary.usage_output_tokens, None);
    assert!(
        report
            .requests
            .iter()
            .all(|request| request.usage_check(48) == UsageCheck::Absent)
    );
}

/// A server whose usage claims ten times what it streamed (and ten times `max_tokens`)
/// gets no credit for it: the count is what streamed, and every request is flagged.
#[test]
fn usage_that_claims_more_than_streamed_is_flagged_and_not_counted() {
    let server = start(InstantServerOptions::default().with_usage_scale(10));
    let report = run(&small_options(&server));
    let summary = &report.summary;
    assert_eq!(summary.output_tokens, 16 * 48);
    assert_eq!(summary.usage_output_tokens, Some(16 * 480));
    assert_eq!(summary.usage_over_max_tokens, 16);
    let example = summary.usage_example.as_deref().unwrap();
    assert!(
        example.contains("usage says 480 output tokens, 48 streamed (token ids), max_tokens 48"),
        "{example}"
    );
    let mut json = Vec::new();
    report.write_json(&mut json).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["requests"][0]["usage_check"], "over_max_tokens");
    assert_eq!(doc["requests"][0]["usage_output_tokens"], 480);
    assert_eq!(doc["requests"][0]["output_tokens"], 48);
}

/// A tokenizer.json with 26 whole-word tokens and 40 ids.
pub fn tiny_tokenizer_json() -> String {
    let mut vocab = serde_json::Map::new();
    for (i, letter) in ('a'..='z').enumerate() {
        vocab.insert(format!("Ġ{letter}{letter}x"), (i as u64).into());
    }
    vocab.insert("<unk>".to_owned(), 39.into());
    serde_json::json!({"model": {"type": "BPE", "vocab": vocab, "merges": []}}).to_string()
}

#[test]
fn chat_with_text_prompts_counts_the_same() {
    let server = start(InstantServerOptions::default());
    let words = WordVocabulary::from_tokenizer_json(tiny_tokenizer_json().as_bytes()).unwrap();
    assert_eq!(words.vocab_size(), 40);
    let mut options = small_options(&server);
    options.api = Api::Chat;
    options.prompts = PromptSource::Text(Arc::new(words));
    let report = run(&options);
    assert_eq!(report.summary.requests_completed, 16);
    assert_eq!(report.summary.output_tokens, 16 * 48);
    // The server counts the prompt's words: exactly `input_len` here.
    assert_eq!(report.summary.input_tokens, 16 * 32);
    // vLLM's role chunk comes first and is timed like a token chunk, as vllm bench serve does.
    assert!(
        report
            .requests
            .iter()
            .all(|request| request.itl.len() == 48)
    );
}

#[test]
fn fixed_concurrency_never_exceeds_n_in_flight() {
    let server =
        start(InstantServerOptions::default().with_chunk_interval(StdDuration::from_millis(2)));
    let mut options = small_options(&server);
    options.concurrency = 3;
    options.num_prompts = 15;
    options.output_len = 10;
    let report = run(&options);
    assert_eq!(report.summary.requests_completed, 15);
    assert_eq!(
        server.stats().max_in_flight(),
        3,
        "the server saw exactly 3 at once"
    );
    // 5 waves of ~18 ms each: far longer than one wave, far shorter than 15 in a row.
    assert!(
        report.summary.duration_s > 0.07,
        "{}",
        report.summary.duration_s
    );
}

#[test]
fn poisson_arrivals_follow_the_seeded_schedule() {
    let server = start(InstantServerOptions::default());
    let mut options = small_options(&server);
    options.concurrency = 64;
    options.num_prompts = 200;
    options.output_len = 4;
    options.input_len = 4;
    options.request_rate = Some(200.0);
    options.seed = 11;
    let report = run(&options);
    assert_eq!(report.summary.requests_completed, 200);
    let offsets = arrival_offsets(11, 200, 200.0);
    let scheduled_mean_s = offsets[199].as_nanos() as f64 / 1e9 / 199.0;
    // The seeded schedule itself: 199 exponential gaps, mean 5 ms ± 0.35 ms (1σ).
    assert!(
        (scheduled_mean_s - 0.005).abs() < 0.001,
        "{scheduled_mean_s}"
    );
    let starts: Vec<i64> = report
        .requests
        .iter()
        .map(|request| (request.start - report.start).as_nanos())
        .collect();
    for (index, (start, due)) in starts.iter().zip(&offsets).enumerate() {
        assert!(*start >= due.as_nanos(), "request {index} started early");
        assert!(
            *start <= due.as_nanos() + 100_000_000,
            "request {index} started 100 ms late"
        );
    }
    let measured_mean_s = (starts[199] - starts[0]) as f64 / 1e9 / 199.0;
    assert!(
        (measured_mean_s - scheduled_mean_s).abs() < 0.1 * scheduled_mean_s,
        "measured {measured_mean_s} s, scheduled {scheduled_mean_s} s"
    );
}

#[test]
fn the_json_has_every_request_and_the_summary() {
    let server = start(InstantServerOptions::default());
    let mut options = small_options(&server);
    options.num_prompts = 7;
    options.output_len = 5;
    let report = run(&options);
    let mut bytes = Vec::new();
    report.write_json(&mut bytes).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(json["schema_version"], 2);
    assert_eq!(json["partial"], false);
    assert_eq!(json["settings"]["concurrency"], 4);
    assert_eq!(json["settings"]["prompt_format"], "token_ids");
    assert_eq!(json["settings"]["request_rate"], serde_json::Value::Null);
    assert_eq!(json["summary"]["requests_completed"], 7);
    assert_eq!(json["summary"]["output_tokens"], 35);
    for key in ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"] {
        for stat in ["mean", "median", "p90", "p95", "p99"] {
            assert!(json["summary"][key][stat].is_f64(), "{key}.{stat}");
        }
    }
    assert!(
        json["summary"]["percentile_method"]
            .as_str()
            .unwrap()
            .contains("numpy")
    );
    let requests = json["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 7);
    for (index, request) in requests.iter().enumerate() {
        assert_eq!(request["index"], index);
        assert_eq!(request["itl_ms"].as_array().unwrap().len(), 4);
        assert_eq!(request["output_tokens"], 5);
        assert_eq!(request["output_tokens_source"], "token_ids");
        assert_eq!(request["usage_check"], "agrees");
        assert_eq!(request["error"], serde_json::Value::Null);
        assert_eq!(request["unfinished"], false);
        assert!(request["start_s"].as_f64().unwrap() >= 0.0);
        let ttft = request["ttft_ms"].as_f64().unwrap();
        assert!(request["latency_ms"].as_f64().unwrap() >= ttft);
    }
}

/// What a grading compares runs by: the model's list entry, the sampling and the digest of
/// the prompts sent (the same seed, the same prompts; another seed, others).
#[test]
fn the_json_names_the_workload() {
    let server = start(InstantServerOptions::default().with_model_root("/models/instant"));
    let mut options = small_options(&server);
    options.model = String::new(); // the first the server lists
    let json = |report: &BenchReport| -> serde_json::Value {
        let mut bytes = Vec::new();
        report.write_json(&mut bytes).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    let first = json(&run(&options));
    let settings = &first["settings"];
    assert_eq!(settings["temperature"], 0.0);
    assert_eq!(settings["served_model"]["id"], "instant");
    assert_eq!(settings["served_model"]["root"], "/models/instant");
    let digest = settings["prompts_sha256"].as_str().unwrap();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    let again = run(&options);
    assert_eq!(again.settings.prompts_sha256.as_deref(), Some(digest));
    options.seed += 1;
    assert_ne!(
        run(&options).settings.prompts_sha256.as_deref(),
        Some(digest)
    );
}

#[test]
fn a_stop_ends_the_run_with_a_partial_report() {
    let server =
        start(InstantServerOptions::default().with_chunk_interval(StdDuration::from_millis(20)));
    let mut options = small_options(&server);
    options.concurrency = 2;
    options.num_prompts = 100;
    options.output_len = 10;
    let began = std::time::Instant::now();
    let stop = async { tokio::time::sleep(StdDuration::from_millis(500)).await };
    let report = run_with_stop(&options, stop);
    assert!(began.elapsed() < StdDuration::from_secs(3));
    assert!(report.partial);
    let summary = &report.summary;
    assert_eq!(
        summary.requests_cancelled, 2,
        "both in flight were cancelled"
    );
    assert!(summary.requests_completed >= 2, "{summary:?}");
    assert_eq!(
        summary.requests_started,
        summary.requests_completed + summary.requests_cancelled
    );
    assert!(summary.failures.is_empty());
    let cancelled: Vec<_> = report
        .requests
        .iter()
        .filter_map(|r| r.error.as_ref())
        .collect();
    assert!(
        cancelled
            .iter()
            .all(|error| error.kind == FailureKind::Cancelled)
    );
    assert!(summary.duration_s < 1.0);
    // The two in flight keep what had streamed: a TTFT, some tokens and their gaps (a chunk
    // every 20 ms, the first at once); they are left out of every statistic.
    for request in report.requests.iter().filter(|r| !r.is_ok()) {
        let streamed = request.output_tokens;
        assert!((1..10).contains(&streamed), "{request:?}");
        assert!(request.ttft.is_some(), "{request:?}");
        assert_eq!(request.itl.len() as u64, streamed - 1, "{request:?}");
        assert!(request.latency >= request.ttft);
    }
    assert_eq!(summary.output_tokens, summary.requests_completed * 10);
    let mut bytes = Vec::new();
    report.write_json(&mut bytes).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let unfinished: Vec<_> = json["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["unfinished"] == true)
        .collect();
    assert_eq!(unfinished.len(), 2);
    for request in unfinished {
        assert_eq!(request["error"]["kind"], "cancelled");
        assert!(request["ttft_ms"].is_f64(), "{request}");
        assert!(request["output_tokens"].as_u64().unwrap() >= 1, "{request}");
    }
}

#[test]
fn connections_the_server_closed_while_idle_are_replaced() {
    let server =
        start(InstantServerOptions::default().with_idle_close(StdDuration::from_millis(30)));
    let mut options = small_options(&server);
    options.concurrency = 2;
    options.num_prompts = 8;
    options.output_len = 4;
    // Gaps of 100 ms on average: most kept-alive connections are closed before their reuse.
    options.request_rate = Some(10.0);
    let report = run(&options);
    assert_eq!(
        report.summary.requests_completed, 8,
        "{:?}",
        report.summary.failures
    );
    assert!(
        server.stats().connections() >= 3,
        "{}",
        server.stats().connections()
    );
    assert_eq!(
        server.stats().requests(),
        9,
        "the test request and 8 measured"
    );
}

#[test]
fn percentiles_and_goodput_over_a_paced_run() {
    // One chunk every 5 ms: TPOT about 5 ms, TTFT about 0.
    let server =
        start(InstantServerOptions::default().with_chunk_interval(StdDuration::from_millis(5)));
    let mut options = small_options(&server);
    options.num_prompts = 8;
    options.output_len = 6;
    let mut goodput = |slo: &str| {
        options.slo = slo.parse::<Slo>().unwrap();
        let summary = run(&options).summary;
        assert_eq!(summary.requests_completed, 8);
        for stats in [
            summary.ttft_ms,
            summary.tpot_ms,
            summary.itl_ms,
            summary.e2e_ms,
        ] {
            let stats = stats.unwrap();
            assert!(stats.median <= stats.p90 && stats.p90 <= stats.p95 && stats.p95 <= stats.p99);
        }
        let goodput = summary.goodput.expect("an SLO gives goodput");
        let expected = goodput.good_requests as f64 / summary.duration_s;
        assert!((goodput.requests_per_s - expected).abs() < 1e-9 * expected.max(1.0));
        goodput.good_requests
    };
    assert_eq!(goodput("ttft_ms=1000,tpot_ms=1000"), 8);
    assert_eq!(goodput("ttft_ms=1000,tpot_ms=1"), 0, "TPOT is about 5 ms");
    assert_eq!(goodput("e2el_ms=5"), 0, "E2E is about 25 ms");
    options.slo = Slo::default();
    assert_eq!(run(&options).summary.goodput, None);
}
