//! The numbers both generators report, read from their JSON into one shape.

use serde_json::Value;

/// Mean, median and 99th percentile of one latency, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    pub mean: f64,
    pub median: f64,
    pub p99: f64,
}

/// A benchmark's summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    pub completed: u64,
    pub failed: u64,
    pub duration_s: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub request_throughput: f64,
    pub output_throughput: f64,
    pub ttft: Latency,
    pub tpot: Latency,
    pub itl: Latency,
    pub e2e: Latency,
}

/// `object[key]` as a number, failing with the keys that are there.
#[track_caller]
pub fn number(object: &Value, key: &str) -> f64 {
    object.get(key).and_then(Value::as_f64).unwrap_or_else(|| {
        let present: Vec<&String> = object
            .as_object()
            .map(|map| map.keys().collect())
            .unwrap_or_default();
        panic!("no number at `{key}`; the keys there are {present:?}")
    })
}

/// `object[key]` as a count.
#[track_caller]
pub fn count(object: &Value, key: &str) -> u64 {
    object
        .get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("`{key}` is not a count: {:?}", object.get(key)))
}

impl Metrics {
    /// From `stepscope bench --json` (schema version 2, docs/bench.md):
    /// `summary.{requests_completed, requests_failed, duration_s, input_tokens,
    /// output_tokens}`, `summary.throughput.{requests_per_s, output_tokens_per_s}` and the
    /// `ttft_ms`, `tpot_ms`, `itl_ms`, `e2e_ms` objects of `mean`, `median`, `p99`.
    #[track_caller]
    pub fn from_stepscope(doc: &Value) -> Self {
        assert_eq!(
            doc["schema_version"], 2,
            "stepscope bench JSON schema version"
        );
        let summary = &doc["summary"];
        let latency = |key: &str| {
            let object = &summary[key];
            assert!(
                object.is_object(),
                "summary.{key} is not an object: {summary}"
            );
            Latency {
                mean: number(object, "mean"),
                median: number(object, "median"),
                p99: number(object, "p99"),
            }
        };
        let throughput = &summary["throughput"];
        Self {
            completed: count(summary, "requests_completed"),
            failed: count(summary, "requests_failed"),
            duration_s: number(summary, "duration_s"),
            input_tokens: count(summary, "input_tokens"),
            output_tokens: count(summary, "output_tokens"),
            request_throughput: number(throughput, "requests_per_s"),
            output_throughput: number(throughput, "output_tokens_per_s"),
            ttft: latency("ttft_ms"),
            tpot: latency("tpot_ms"),
            itl: latency("itl_ms"),
            e2e: latency("e2e_ms"),
        }
    }

    /// From `vllm bench serve --save-result`: flat `completed`, `duration`,
    /// `mean_ttft_ms`, `median_ttft_ms`, `p99_ttft_ms`, ... (`e2el` for E2E).
    #[track_caller]
    pub fn from_vllm(doc: &Value) -> Self {
        let latency = |metric: &str| Latency {
            mean: number(doc, &format!("mean_{metric}_ms")),
            median: number(doc, &format!("median_{metric}_ms")),
            p99: number(doc, &format!("p99_{metric}_ms")),
        };
        Self {
            completed: count(doc, "completed"),
            failed: count(doc, "failed"),
            duration_s: number(doc, "duration"),
            input_tokens: count(doc, "total_input_tokens"),
            output_tokens: count(doc, "total_output_tokens"),
            request_throughput: number(doc, "request_throughput"),
            output_throughput: number(doc, "output_throughput"),
            ttft: latency("ttft"),
            tpot: latency("tpot"),
            itl: latency("itl"),
            e2e: latency("e2el"),
        }
    }
}
