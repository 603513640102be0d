//! The result of a run: settings, summary and every request, and its JSON form
//! (schema version 2, documented in docs/bench.md).

use crate::models::ServedModel;
use crate::options::{Api, BenchOptions};
use crate::record::{FailureKind, OutputTokenSource, RequestError, RequestRecord, UsageCheck};
use crate::slo::Slo;
use crate::stats::{LatencyStats, PERCENTILE_METHOD};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use stepscope_model::{Duration, Timestamp};

/// Version of the JSON document; raised when a field changes meaning or is removed (2:
/// output tokens are counted from the stream, no longer taken from `usage`).
pub const SCHEMA_VERSION: u32 = 2;

/// What a run learned beside its requests: the model's list entry, the prompts' digest,
/// the warmup's requests and failures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RunFacts {
    pub(crate) served_model: Option<ServedModel>,
    pub(crate) prompts_sha256: Option<String>,
    pub(crate) warmup: (usize, usize),
}

/// What a run was asked to do, as the report states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportSettings {
    /// The endpoint requests went to.
    pub url: String,
    /// The `model` field.
    pub model: String,
    /// `completions` or `chat`.
    pub api: Api,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Measured requests asked for.
    pub num_prompts: usize,
    /// Prompt tokens per request.
    pub input_len: usize,
    /// Output tokens per request.
    pub output_len: usize,
    /// Poisson arrival rate per second; `null`: as fast as the concurrency allows.
    pub request_rate: Option<f64>,
    /// Warmup requests.
    pub warmup: usize,
    /// Seed of prompts and arrivals.
    pub seed: u64,
    /// `token_ids` or `text`.
    pub prompt_format: &'static str,
    /// Token ids are drawn below this.
    pub vocab_size: u32,
    /// Per-request timeout.
    pub timeout_s: f64,
    /// `ignore_eos` as sent.
    pub ignore_eos: bool,
    /// The sampling temperature sent (0: greedy).
    pub temperature: f64,
    /// Whether one test request was sent (and completed) before the run.
    pub initial_test: bool,
    /// The model's entry in the server's `GET /v1/models` (`null`: not listed).
    pub served_model: Option<ServedModel>,
    /// `sha256:<hex>` of the measured prompts as sent, in order: two runs with equal
    /// digests sent the same prompts.
    pub prompts_sha256: Option<String>,
}

/// Totals, throughput and latency statistics over the completed measured requests, with
/// the definitions of `vllm bench serve`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchSummary {
    /// Measured requests started.
    pub requests_started: u64,
    /// Completed: `[DONE]` after at least one token chunk.
    pub requests_completed: u64,
    /// Failed, cancelled ones not included.
    pub requests_failed: u64,
    /// In flight when the run was stopped.
    pub requests_cancelled: u64,
    /// Warmup requests run before the measurement.
    pub warmup_requests: u64,
    /// Of which failed.
    pub warmup_failed: u64,
    /// Wall time from the first measured request to the end of the last (or the stop).
    pub duration_s: f64,
    /// Prompt tokens of completed requests.
    pub input_tokens: u64,
    /// Output tokens of completed requests, counted from what streamed.
    pub output_tokens: u64,
    /// Completed requests counted by the token ids their chunks carried (exact).
    pub output_tokens_from_token_ids: u64,
    /// Completed requests counted by their chunks with text.
    pub output_tokens_from_chunks: u64,
    /// The server's own `usage.completion_tokens` summed over the completed requests that
    /// sent it (`null`: none did); reported, never used as the count.
    pub usage_output_tokens: Option<u64>,
    /// Completed requests whose usage claims more than `max_tokens`.
    pub usage_over_max_tokens: u64,
    /// Completed requests whose usage differs from the streamed count by more than one
    /// token or 1 %.
    pub usage_disagreeing: u64,
    /// The first such request, in words.
    pub usage_example: Option<String>,
    /// Per second of `duration_s`.
    pub throughput: Throughput,
    /// Time to first token chunk.
    pub ttft_ms: Option<LatencyStats>,
    /// Time per output token after the first, per request with more than one.
    pub tpot_ms: Option<LatencyStats>,
    /// Gaps between token chunks, pooled over requests.
    pub itl_ms: Option<LatencyStats>,
    /// Request latency to the last token chunk.
    pub e2e_ms: Option<LatencyStats>,
    /// Failed requests by reason.
    pub failures: BTreeMap<FailureKind, u64>,
    /// For each reason in `failures`, the detail of its first failed request (by index).
    pub failure_examples: BTreeMap<FailureKind, String>,
    /// Requests per second that met every objective of `--slo`; `None` without objectives.
    pub goodput: Option<Goodput>,
    /// How percentiles are computed.
    pub percentile_method: &'static str,
}

/// Rates over the run's wall time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Throughput {
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// Output tokens per second.
    pub output_tokens_per_s: f64,
    /// Input and output tokens per second.
    pub total_tokens_per_s: f64,
}

/// Goodput as `vllm bench serve --goodput` computes it: completed requests whose TTFT, TPOT
/// (0 for one output token) and E2E latency are each at most its objective, where given,
/// per second of the measured run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Goodput {
    /// The objectives.
    pub slo: Slo,
    /// Completed requests that met them.
    pub good_requests: u64,
    /// `good_requests` per second of `duration_s`.
    pub requests_per_s: f64,
}

/// A finished (or stopped) run.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    /// Stopped before every request ended.
    pub partial: bool,
    /// What was asked.
    pub settings: ReportSettings,
    /// The numbers.
    pub summary: BenchSummary,
    /// Every measured request that started, by index.
    pub requests: Vec<RequestRecord>,
    /// Clock time of the start of the measurement; request starts are reported relative to it.
    pub start: Timestamp,
}

impl BenchReport {
    /// Summarizes `requests` measured over `span` (clock start and end), with what else
    /// the run learned (`facts`).
    pub(crate) fn new(
        options: &BenchOptions,
        requests: Vec<RequestRecord>,
        span: (Timestamp, Timestamp),
        partial: bool,
        facts: RunFacts,
    ) -> Self {
        let max_tokens = options.output_len as u64;
        let mut summary = summarize(&requests, span.1 - span.0, &options.slo, max_tokens);
        summary.warmup_requests = facts.warmup.0 as u64;
        summary.warmup_failed = facts.warmup.1 as u64;
        Self {
            partial,
            settings: settings(options, facts),
            summary,
            requests,
            start: span.0,
        }
    }

    /// Writes the JSON document (one line).
    pub fn write_json<W: Write>(&self, writer: W) -> serde_json::Result<()> {
        let document = WireReport {
            schema_version: SCHEMA_VERSION,
            partial: self.partial,
            settings: &self.settings,
            summary: &self.summary,
            requests: self
                .requests
                .iter()
                .map(|record| self.wire(record))
                .collect(),
        };
        serde_json::to_writer(writer, &document)
    }

    fn wire<'a>(&self, record: &'a RequestRecord) -> WireRequest<'a> {
        WireRequest {
            index: record.index,
            start_s: (record.start - self.start).as_nanos() as f64 / 1e9,
            ttft_ms: record.ttft.map(Duration::as_millis_f64),
            latency_ms: record.latency.map(Duration::as_millis_f64),
            input_tokens: record.input_tokens,
            output_tokens: record.output_tokens,
            output_tokens_source: record.output_tokens_source,
            usage_output_tokens: record.usage_output_tokens,
            usage_check: record.usage_check(self.settings.output_len as u64),
            itl_ms: record.itl.iter().map(|gap| gap.as_millis_f64()).collect(),
            unfinished: record
                .error
                .as_ref()
                .is_some_and(|error| error.kind == FailureKind::Cancelled),
            error: record.error.as_ref(),
        }
    }
}

#[derive(Serialize)]
struct WireReport<'a> {
    schema_version: u32,
    partial: bool,
    settings: &'a ReportSettings,
    summary: &'a BenchSummary,
    requests: Vec<WireRequest<'a>>,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    index: usize,
    start_s: f64,
    ttft_ms: Option<f64>,
    latency_ms: Option<f64>,
    input_tokens: u64,
    output_tokens: u64,
    output_tokens_source: OutputTokenSource,
    usage_output_tokens: Option<u64>,
    usage_check: UsageCheck,
    itl_ms: Vec<f64>,
    unfinished: bool,
    error: Option<&'a RequestError>,
}

fn settings(options: &BenchOptions, facts: RunFacts) -> ReportSettings {
    ReportSettings {
        url: options
            .endpoint_url()
            .map_or_else(|_| options.base_url.clone(), |url| url.to_string()),
        model: options.model.clone(),
        api: options.api,
        concurrency: options.concurrency,
        num_prompts: options.num_prompts,
        input_len: options.input_len,
        output_len: options.output_len,
        request_rate: options.request_rate,
        warmup: options.warmup,
        seed: options.seed,
        prompt_format: options.prompts.format_name(),
        vocab_size: options.prompts.vocab_size(),
        timeout_s: options.timeout.as_secs_f64(),
        ignore_eos: options.ignore_eos,
        temperature: crate::prompts::TEMPERATURE,
        initial_test: options.initial_test,
        served_model: facts.served_model,
        prompts_sha256: facts.prompts_sha256,
    }
}

/// The summary over `requests` measured for `duration`, with goodput against `slo`; each
/// asked for `max_tokens`.
pub(crate) fn summarize(
    requests: &[RequestRecord],
    duration: Duration,
    slo: &Slo,
    max_tokens: u64,
) -> BenchSummary {
    let completed: Vec<&RequestRecord> = requests.iter().filter(|r| r.is_ok()).collect();
    let failed = Failures::of(requests);
    let usage = UsageTally::of(&completed, max_tokens);
    let input_tokens: u64 = completed.iter().map(|r| r.input_tokens).sum();
    let output_tokens: u64 = completed.iter().map(|r| r.output_tokens).sum();
    let from_ids = completed
        .iter()
        .filter(|r| r.output_tokens_source == OutputTokenSource::TokenIds)
        .count() as u64;
    let duration_s = duration.as_nanos() as f64 / 1e9;
    let per_second = |count: u64| {
        if duration_s > 0.0 {
            count as f64 / duration_s
        } else {
            0.0
        }
    };
    let latency = latency_stats(&completed);
    let goodput = (!slo.is_empty()).then(|| {
        let good_requests = completed.iter().filter(|r| meets(r, slo)).count() as u64;
        Goodput {
            slo: *slo,
            good_requests,
            requests_per_s: per_second(good_requests),
        }
    });
    BenchSummary {
        requests_started: requests.len() as u64,
        requests_completed: completed.len() as u64,
        requests_failed: failed.counts.values().sum(),
        requests_cancelled: failed.cancelled,
        warmup_requests: 0,
        warmup_failed: 0,
        duration_s,
        input_tokens,
        output_tokens,
        output_tokens_from_token_ids: from_ids,
        output_tokens_from_chunks: completed.len() as u64 - from_ids,
        usage_output_tokens: usage.total,
        usage_over_max_tokens: usage.over_max_tokens,
        usage_disagreeing: usage.disagreeing,
        usage_example: usage.example,
        throughput: Throughput {
            requests_per_s: per_second(completed.len() as u64),
            output_tokens_per_s: per_second(output_tokens),
            total_tokens_per_s: per_second(input_tokens + output_tokens),
        },
        ttft_ms: latency.ttft,
        tpot_ms: latency.tpot,
        itl_ms: latency.itl,
        e2e_ms: latency.e2e,
        failures: failed.counts,
        failure_examples: failed.examples,
        goodput,
        percentile_method: PERCENTILE_METHOD,
    }
}

/// The server's usage over completed requests, against their streamed counts.
struct UsageTally {
    total: Option<u64>,
    over_max_tokens: u64,
    disagreeing: u64,
    example: Option<String>,
}

impl UsageTally {
    fn of(completed: &[&RequestRecord], max_tokens: u64) -> Self {
        let mut tally = UsageTally {
            total: None,
            over_max_tokens: 0,
            disagreeing: 0,
            example: None,
        };
        for record in completed {
            let Some(usage) = record.usage_output_tokens else {
                continue;
            };
            tally.total = Some(tally.total.unwrap_or(0) + usage);
            let check = record.usage_check(max_tokens);
            match check {
                UsageCheck::OverMaxTokens => tally.over_max_tokens += 1,
                UsageCheck::Disagrees => tally.disagreeing += 1,
                UsageCheck::Agrees | UsageCheck::Absent => continue,
            }
            tally.example.get_or_insert_with(|| {
                format!(
                    "request {}: usage says {usage} output tokens, {} streamed ({}), max_tokens {max_tokens}",
                    record.index,
                    record.output_tokens,
                    match record.output_tokens_source {
                        OutputTokenSource::TokenIds => "token ids",
                        OutputTokenSource::Chunks => "chunks with text",
                    }
                )
            });
        }
        tally
    }
}

/// Failed requests by reason, with the first detail of each; cancelled ones apart.
struct Failures {
    counts: BTreeMap<FailureKind, u64>,
    examples: BTreeMap<FailureKind, String>,
    cancelled: u64,
}

impl Failures {
    fn of(requests: &[RequestRecord]) -> Self {
        let mut failures = Self {
            counts: BTreeMap::new(),
            examples: BTreeMap::new(),
            cancelled: 0,
        };
        for error in requests.iter().filter_map(|record| record.error.as_ref()) {
            if error.kind == FailureKind::Cancelled {
                failures.cancelled += 1;
                continue;
            }
            *failures.counts.entry(error.kind).or_insert(0) += 1;
            failures
                .examples
                .entry(error.kind)
                .or_insert_with(|| error.detail.clone());
        }
        failures
    }
}

/// Whether a completed request meets `slo`, with the metrics as `vllm bench serve` compares
/// them: TPOT is 0 for a request with one output token.
fn meets(record: &RequestRecord, slo: &Slo) -> bool {
    let ms = Duration::as_millis_f64;
    let (Some(ttft), Some(latency)) = (record.ttft, record.latency) else {
        return false;
    };
    let tpot = if record.output_tokens > 1 {
        ms(latency - ttft) / (record.output_tokens - 1) as f64
    } else {
        0.0
    };
    slo.is_met(ms(ttft), tpot, ms(latency))
}

struct Latencies {
    ttft: Option<LatencyStats>,
    tpot: Option<LatencyStats>,
    itl: Option<LatencyStats>,
    e2e: Option<LatencyStats>,
}

/// TTFT, TPOT, ITL and E2E in milliseconds, as `vllm bench serve` computes them.
fn latency_stats(completed: &[&RequestRecord]) -> Latencies {
    let ms = Duration::as_millis_f64;
    let mut ttft: Vec<f64> = completed.iter().filter_map(|r| r.ttft.map(ms)).collect();
    let mut e2e: Vec<f64> = completed.iter().filter_map(|r| r.latency.map(ms)).collect();
    let mut itl: Vec<f64> = completed
        .iter()
        .flat_map(|r| r.itl.iter().map(|gap| ms(*gap)))
        .collect();
    let mut tpot: Vec<f64> = completed
        .iter()
        .filter(|r| r.output_tokens > 1)
        .filter_map(|r| {
            let decode = ms(r.latency? - r.ttft?);
            Some(decode / (r.output_tokens - 1) as f64)
        })
        .collect();
    Latencies {
        ttft: LatencyStats::of(&mut ttft),
        tpot: LatencyStats::of(&mut tpot),
        itl: LatencyStats::of(&mut itl),
        e2e: LatencyStats::of(&mut e2e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RequestError;

    fn nanos(ms: i64) -> Duration {
        Duration::from_nanos(ms * 1_000_000)
    }

    fn completed(index: usize, ttft: i64, gaps: &[i64], output_tokens: u64) -> RequestRecord {
        RequestRecord {
            index,
            start: Timestamp::from_nanos(index as i64 * 1_000_000),
            ttft: Some(nanos(ttft)),
            latency: Some(nanos(ttft + gaps.iter().sum::<i64>())),
            itl: gaps.iter().map(|&gap| nanos(gap)).collect(),
            input_tokens: 10,
            output_tokens,
            output_tokens_source: OutputTokenSource::Chunks,
            usage_output_tokens: Some(output_tokens),
            error: None,
        }
    }

    #[test]
    fn summary_uses_the_vllm_definitions() {
        let mut failed = completed(2, 5, &[], 0);
        failed.error = Some(RequestError::new(FailureKind::Timeout, "late"));
        let requests = vec![
            completed(0, 10, &[2, 4], 3),
            completed(1, 20, &[6, 8, 10], 4),
            failed,
            RequestRecord::cancelled(3, Timestamp::from_nanos(0), Timestamp::from_nanos(5), 10),
        ];
        let slo: Slo = "ttft_ms=15,tpot_ms=5".parse().unwrap();
        let summary = summarize(&requests, nanos(2000), &slo, 100);
        assert_eq!(
            (summary.requests_started, summary.requests_completed),
            (4, 2)
        );
        assert_eq!(
            (summary.requests_failed, summary.requests_cancelled),
            (1, 1)
        );
        assert_eq!(
            summary.failures,
            BTreeMap::from([(FailureKind::Timeout, 1)])
        );
        assert_eq!(
            summary.failure_examples,
            BTreeMap::from([(FailureKind::Timeout, "late".to_owned())])
        );
        // Request 0 (TTFT 10, TPOT 3) is good; request 1 (TTFT 20, TPOT 8) is not.
        let goodput = summary.goodput.unwrap();
        assert_eq!((goodput.good_requests, goodput.requests_per_s), (1, 0.5));
        assert_eq!((summary.input_tokens, summary.output_tokens), (20, 7));
        assert_eq!(summary.throughput.output_tokens_per_s, 3.5);
        assert_eq!(summary.throughput.requests_per_s, 1.0);
        // TPOT: (16 − 10)/2 = 3 and (44 − 20)/3 = 8.
        let tpot = summary.tpot_ms.unwrap();
        assert_eq!((tpot.mean, tpot.median), (5.5, 5.5));
        // ITL pooled: 2 4 6 8 10.
        let itl = summary.itl_ms.unwrap();
        assert_eq!((itl.mean, itl.median), (6.0, 6.0));
        assert!((itl.p99 - 9.92).abs() < 1e-12);
        let e2e = summary.e2e_ms.unwrap();
        assert_eq!(e2e.mean, 30.0);
    }

    #[test]
    fn goodput_counts_requests_within_every_objective_as_vllm() {
        // TTFT, gaps, output tokens → TPOT and E2E:
        let requests = vec![
            completed(0, 10, &[2, 4], 3),  // TPOT 3, E2E 16
            completed(1, 20, &[6, 8], 3),  // TPOT 7, E2E 34
            completed(2, 30, &[], 1),      // one token: TPOT counts as 0, E2E 30
            completed(3, 5, &[50, 50], 3), // TPOT 50, E2E 105
        ];
        let good = |slo: &str| {
            let slo: Slo = slo.parse().unwrap();
            let summary = summarize(&requests, nanos(4000), &slo, 100);
            let goodput = summary.goodput.unwrap();
            assert_eq!(goodput.slo, slo);
            assert_eq!(goodput.requests_per_s, goodput.good_requests as f64 / 4.0);
            goodput.good_requests
        };
        assert_eq!(good("ttft_ms=20"), 3, "at the objective is good");
        assert_eq!(good("tpot_ms=7"), 3, "the one-token request has TPOT 0");
        assert_eq!(good("e2el_ms=30"), 2);
        assert_eq!(
            good("ttft_ms=20,tpot_ms=7,e2el_ms=30"),
            1,
            "only request 0 meets all"
        );
        assert_eq!(good("ttft_ms=9,tpot_ms=2"), 0);
    }

    #[test]
    fn nothing_completed_gives_no_statistics() {
        let summary = summarize(&[], Duration::ZERO, &Slo::default(), 100);
        assert_eq!(summary.ttft_ms, None);
        assert_eq!(summary.goodput, None);
        assert_eq!(summary.throughput.output_tokens_per_s, 0.0);
    }
}
