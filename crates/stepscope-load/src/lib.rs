//! A load generator for OpenAI-compatible servers (vLLM, SGLang, ATOM), as exact as
//! `vllm bench serve` and much lighter on the client: random prompts of a set input length,
//! a fixed output length with `ignore_eos`, a fixed concurrency; TTFT, TPOT and ITL as
//! `sglang.bench_serving` and `vllm bench serve` define them.
//!
//! [`run_benchmark`] sends `num_prompts` streaming requests to `/v1/completions` (or
//! `/v1/chat/completions`) at a fixed concurrency — a request starts when one finishes — or
//! at a seeded Poisson arrival rate, with `ignore_eos` and `max_tokens = output_len`, so every
//! request generates exactly `output_len` tokens. Prompts are `input_len` random token ids
//! (no tokenizer needed) or words from a local `tokenizer.json` ([`prompts`]).
//!
//! Requests go over a small HTTP/1.1 client of its own (plain HTTP, keep-alive, chunked
//! decoding; see [`Endpoint`]) that hands each socket read to the SSE parser at once. Every
//! streamed chunk is timestamped when the read that carried it returned, by a [`Clock`]; the metrics
//! follow `vllm bench serve` ([`stats`]): TTFT, TPOT = (latency − TTFT)/(output tokens − 1),
//! ITL pooled over requests, E2E latency, and throughput over the wall time of the run after
//! warmup; mean, median, p90, p95 and p99, and goodput against a [`Slo`] as `--goodput` does.
//! Percentiles use numpy's default linear interpolation, so numbers agree with the Python
//! tools. Failed requests are counted by [`FailureKind`], with the first detail of each, and
//! never hang a run; a stop future (Ctrl-C, SIGTERM or SIGHUP in the binary) ends it early with a
//! report marked partial, the requests in flight keeping what they had streamed.
//!
//! Before anything is measured, as `vllm bench serve` does, one test request is sent: when it
//! fails, the run stops with [`LoadError::InitialTest`], quoting the server's answer. With no
//! model named, the run takes the first of `GET /v1/models`. Lengths above
//! [`MAX_REQUEST_TOKENS`], or beyond the model's `max_model_len` when that list reports it,
//! are refused before any prompt is built. Text the server sent is quoted in errors and
//! failure details with its control characters escaped. A base URL in the OpenAI form
//! (`http://host:8000/v1`) names the same server as `http://host:8000`.
//!
//! Its tests and benchmark run against `stepscope-test-server` (a dev-only crate): a real
//! HTTP/SSE server on 127.0.0.1 that answers instantly, or paced, or with injected faults.
//!
//! ```
//! use stepscope_test_server::{InstantServer, InstantServerOptions};
//! use stepscope_load::{BenchOptions, BenchProgress, MonotonicClock, run_benchmark};
//!
//! let server = InstantServer::start(InstantServerOptions::default()).unwrap();
//! let mut options = BenchOptions::default();
//! options.base_url = server.base_url();
//! options.model = "tiny".to_owned();
//! options.concurrency = 4;
//! options.num_prompts = 8;
//! options.input_len = 16;
//! options.output_len = 32;
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! let report = runtime
//!     .block_on(run_benchmark(
//!         &options,
//!         &MonotonicClock::new(),
//!         &BenchProgress::default(),
//!         std::future::pending::<()>(),
//!     ))
//!     .unwrap();
//! assert_eq!(report.summary.requests_completed, 8);
//! assert_eq!(report.summary.output_tokens, 8 * 32);
//! assert!(report.requests.iter().all(|request| request.itl.len() == 31));
//! ```

mod clock;
mod error;
mod http1;
mod limits;
mod models;
mod options;
mod probe;
pub mod prompts;
mod quote;
mod record;
mod report;
mod request;
mod runner;
pub mod schedule;
mod slo;
mod sse;
pub mod stats;
mod vocabulary;

pub use clock::{Clock, MonotonicClock};
pub use error::LoadError;
pub use http1::{Endpoint, has_credentials, redact_url};
pub use limits::{MAX_REQUEST_TOKENS, MAX_TOKENS_IN_FLIGHT};
pub use models::{ServedModel, list_model};
pub use options::{Api, BenchOptions, PromptSource};
pub use probe::{
    PROBE_KIND, PROBE_SCHEMA_VERSION, ProbeAnswer, ProbeSet, ProbeSettings, probe_outputs,
};
pub use record::{
    FailureKind, OutputTokenSource, RequestError, RequestRecord, USAGE_TOLERANCE_TOKENS, UsageCheck,
};
pub use report::{BenchReport, BenchSummary, Goodput, ReportSettings, SCHEMA_VERSION, Throughput};
pub use runner::{BenchProgress, run_benchmark};
pub use slo::Slo;
pub use stats::{LatencyStats, PERCENTILE_METHOD};
pub use vocabulary::WordVocabulary;
