//! Against the real server, `stepscope bench` sends what it was asked to: every request
//! completes and generates exactly `output_len` tokens (`ignore_eos`, counted from the
//! server's `usage`), token-id prompts are exactly `input_len` tokens, warmup requests are
//! left out, and nothing fails.

use crate::metrics::{Metrics, count};
use crate::runner::{Load, stepscope_bench, stepscope_bench_with};
use crate::server;
use serde_json::Value;

/// Input tokens per request: exact for token-id prompts; for text, what the server's
/// tokenizer made of `input_len` whole-word tokens (plus BOS), within 10 %.
#[derive(Debug, Clone, Copy)]
enum Prompts {
    TokenIds,
    Text,
}

/// Checks the counts of a run of `load`, summary and per request.
#[track_caller]
fn assert_exact_counts(doc: &Value, load: &Load, prompts: Prompts) {
    let summary = &doc["summary"];
    let metrics = Metrics::from_stepscope(doc);
    let n = load.num_prompts as u64;
    assert_eq!(doc["partial"], Value::Bool(false), "partial: {summary}");
    assert_eq!(
        (
            metrics.completed,
            metrics.failed,
            count(summary, "requests_cancelled")
        ),
        (n, 0, 0),
        "completed, failed, cancelled: {summary}"
    );
    assert_eq!(
        summary["failures"].as_object().map(serde_json::Map::len),
        Some(0),
        "failures: {summary}"
    );
    assert_eq!(
        count(summary, "warmup_requests"),
        load.warmup as u64,
        "{summary}"
    );
    assert_eq!(count(summary, "warmup_failed"), 0, "{summary}");
    assert_eq!(
        metrics.output_tokens,
        n * load.output_len as u64,
        "output tokens = num_prompts × output_len: {summary}"
    );
    assert_eq!(
        count(summary, "output_tokens_from_token_ids"),
        n,
        "vLLM lists each chunk's token ids (`return_token_ids`): {summary}"
    );
    assert_eq!(
        count(summary, "usage_output_tokens"),
        n * load.output_len as u64,
        "vLLM's usage agrees with the streamed count: {summary}"
    );
    assert_eq!(count(summary, "usage_disagreeing"), 0, "{summary}");
    let asked = n * load.input_len as u64;
    match prompts {
        Prompts::TokenIds => assert_eq!(
            metrics.input_tokens, asked,
            "token-id prompts are exactly input_len tokens: {summary}"
        ),
        Prompts::Text => assert!(
            metrics.input_tokens.abs_diff(asked) * 10 <= asked,
            "text prompts re-tokenized: {} tokens for {asked} asked",
            metrics.input_tokens
        ),
    }
    assert_requests(doc, load, prompts);
    assert_consistent(&metrics);
}

/// One record per measured request (warmup left out), each complete with `output_len`
/// tokens counted from its streamed token ids, as its `usage` says too.
#[track_caller]
fn assert_requests(doc: &Value, load: &Load, prompts: Prompts) {
    let requests = doc["requests"].as_array().expect("`requests` is an array");
    assert_eq!(
        requests.len(),
        load.num_prompts,
        "one record per measured request"
    );
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(count(request, "index"), i as u64, "{request}");
        assert!(request["error"].is_null(), "{request}");
        assert_eq!(request["output_tokens_source"], "token_ids", "{request}");
        assert_eq!(request["usage_check"], "agrees", "{request}");
        assert_eq!(
            count(request, "output_tokens"),
            load.output_len as u64,
            "{request}"
        );
        if let Prompts::TokenIds = prompts {
            assert_eq!(
                count(request, "input_tokens"),
                load.input_len as u64,
                "{request}"
            );
        }
        // One gap between consecutive token chunks; vLLM may put several tokens in a chunk
        // when the client reads late, never fewer than one.
        let gaps = request["itl_ms"].as_array().expect("itl_ms").len();
        assert!(
            gaps < load.output_len,
            "{gaps} gaps for {} tokens",
            load.output_len
        );
    }
}

/// Throughput from the counts and the duration; latencies positive and ordered.
#[track_caller]
fn assert_consistent(metrics: &Metrics) {
    assert!(metrics.duration_s > 0.0, "{metrics:?}");
    let expected = metrics.output_tokens as f64 / metrics.duration_s;
    assert!(
        (metrics.output_throughput - expected).abs() <= 1e-6 * expected,
        "output throughput = output tokens / duration: {} vs {expected}",
        metrics.output_throughput
    );
    for (name, latency) in [
        ("ttft", metrics.ttft),
        ("tpot", metrics.tpot),
        ("e2e", metrics.e2e),
    ] {
        assert!(
            latency.mean > 0.0 && latency.median > 0.0 && latency.p99 >= latency.median,
            "{name}: {latency:?}"
        );
    }
    assert!(
        metrics.e2e.median > metrics.ttft.median,
        "E2E includes TTFT: {metrics:?}"
    );
}

#[test]
fn closed_loop_counts_are_exact() {
    let Some(server) = server::from_env("closed_loop_counts_are_exact") else {
        return;
    };
    let _lock = server::lock();
    let dir = tempfile::tempdir().expect("a temp folder");
    // Odd sizes, so an off-by-one in the token count, the prompt length or the number of
    // requests shows; a few warmup requests that must not be counted.
    let load = Load {
        concurrency: 5,
        input_len: 100,
        output_len: 17,
        num_prompts: 23,
        request_rate: None,
        warmup: 3,
        seed: 7,
    };
    let doc = stepscope_bench(&server, &load, dir.path(), "closed_loop");
    assert_exact_counts(&doc, &load, Prompts::TokenIds);
}

#[test]
fn poisson_arrivals_counts_are_exact() {
    let Some(server) = server::from_env("poisson_arrivals_counts_are_exact") else {
        return;
    };
    let _lock = server::lock();
    let dir = tempfile::tempdir().expect("a temp folder");
    let load = Load {
        concurrency: 16,
        input_len: 32,
        output_len: 9,
        num_prompts: 16,
        request_rate: Some(20.0),
        warmup: 0,
        seed: 3,
    };
    let doc = stepscope_bench(&server, &load, dir.path(), "poisson");
    assert_exact_counts(&doc, &load, Prompts::TokenIds);
    // 16 arrivals at 20/s span 15 gaps of 50 ms on average (0.75 s, standard deviation
    // 0.19 s): a run that ends well before that did not pace its arrivals.
    let duration = Metrics::from_stepscope(&doc).duration_s;
    assert!(
        duration > 0.25,
        "16 requests at 20/s took only {duration} s"
    );
}

#[test]
fn text_prompts_from_the_servers_tokenizer() {
    let Some(server) = server::from_env("text_prompts_from_the_servers_tokenizer") else {
        return;
    };
    let _lock = server::lock();
    let dir = tempfile::tempdir().expect("a temp folder");
    let tokenizer = server.model_dir().join("tokenizer.json");
    let tokenizer = tokenizer.to_str().expect("a UTF-8 path");
    let load = Load {
        concurrency: 4,
        input_len: 50,
        output_len: 11,
        num_prompts: 12,
        request_rate: None,
        warmup: 0,
        seed: 5,
    };
    let extra = ["--prompt-format", "text", "--tokenizer", tokenizer];
    let doc = stepscope_bench_with(&server, &load, &extra, dir.path(), "text");
    assert_eq!(doc["settings"]["prompt_format"], "text");
    assert_exact_counts(&doc, &load, Prompts::Text);
}
