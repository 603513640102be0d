//! The run: the served model when none is named, one test request, the warmup, then the
//! measured requests, at fixed concurrency or Poisson arrivals, all multiplexed on the
//! caller's task (no task per request), until every request ended or the stop future fired.

use crate::clock::Clock;
use crate::error::{LoadError, initial_test_hint};
use crate::http1::Http1Client;
use crate::limits::check_context;
use crate::models::{context_of, served_model};
use crate::options::BenchOptions;
use crate::prompts::{PromptStream, request_body};
use crate::record::RequestRecord;
use crate::report::{BenchReport, RunFacts};
use crate::request::{Cancel, RequestContext, send_request};
use crate::schedule::{Next, Phase};
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Live counters of a run, for a progress display; the runner only stores into them.
#[derive(Debug, Default)]
pub struct BenchProgress {
    total: AtomicU64,
    started: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    output_tokens: AtomicU64,
    streamed_chunks: AtomicU64,
    warming_up: AtomicBool,
}

impl BenchProgress {
    /// Requests in the current phase.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
    /// Requests started in the current phase.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }
    /// Requests completed in the current phase.
    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }
    /// Requests failed in the current phase.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
    /// Output tokens of completed requests in the current phase.
    pub fn output_tokens(&self) -> u64 {
        self.output_tokens.load(Ordering::Relaxed)
    }
    /// Token chunks streamed by every request of the run so far, finished or not, the test
    /// request and warmup included (never reset). Under steady load at concurrency `c`, a
    /// server's engine steps grow by about this count's growth divided by `c`.
    pub fn streamed_chunks(&self) -> u64 {
        self.streamed_chunks.load(Ordering::Relaxed)
    }
    /// Whether the warmup is running.
    pub fn is_warming_up(&self) -> bool {
        self.warming_up.load(Ordering::Relaxed)
    }

    fn begin(&self, total: usize, warming_up: bool) {
        self.total.store(total as u64, Ordering::Relaxed);
        for counter in [
            &self.started,
            &self.completed,
            &self.failed,
            &self.output_tokens,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        self.warming_up.store(warming_up, Ordering::Relaxed);
    }

    fn ended(&self, record: &RequestRecord) {
        if record.is_ok() {
            self.completed.fetch_add(1, Ordering::Relaxed);
            self.output_tokens
                .fetch_add(record.output_tokens, Ordering::Relaxed);
        } else {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Runs a benchmark: one test request (unless `options.initial_test` is off), then
/// `options.warmup` requests, then `options.num_prompts` measured ones. With no
/// `options.model`, the model is the first the server lists on `GET /v1/models`.
///
/// Lengths over [`crate::MAX_REQUEST_TOKENS`] are refused before anything is sent, and a
/// prompt and output that together exceed the model's `max_model_len`, when the server
/// reports one on `GET /v1/models`, before any request.
///
/// The run stops with an error before the warmup when the test request fails (the error
/// quotes the server's answer). When `stop` completes (the binary passes Ctrl-C, SIGTERM and SIGHUP),
/// no request is started any more, those in flight end at once as cancelled with what they
/// had streamed, and the report is marked partial. Run it on a current-thread Tokio runtime
/// with time and I/O enabled (one core drives hundreds of thousands of tokens per second).
pub async fn run_benchmark<C: Clock>(
    options: &BenchOptions,
    clock: &C,
    progress: &BenchProgress,
    stop: impl Future<Output = ()>,
) -> Result<BenchReport, LoadError> {
    options.validate()?;
    let (model, served) = served_model(options).await?;
    let context = context_of(served.as_ref());
    let named;
    let options = if options.model.is_empty() {
        named = BenchOptions {
            model,
            ..options.clone()
        };
        &named
    } else {
        options
    };
    check_context(options, context)?;
    let endpoint = options.validate()?;
    let client = Http1Client::new(&endpoint, options.concurrency)
        .await
        .map_err(|source| LoadError::Resolve {
            host: endpoint.host.clone(),
            source,
        })?;
    let cancel = Cancel::default();
    let context = RequestContext {
        client: &client,
        clock,
        timeout: options.timeout,
        output_len: options.output_len,
        cancel: &cancel,
        streamed: &progress.streamed_chunks,
    };
    let mut stop = pin!(stop);
    let mut facts = RunFacts {
        served_model: served,
        ..RunFacts::default()
    };
    if options.initial_test && initial_test(&context, options, stop.as_mut()).await? {
        let now = clock.now();
        return Ok(BenchReport::new(
            options,
            Vec::new(),
            (now, now),
            true,
            facts,
        ));
    }
    Ok(run_phases(&context, options, stop, progress, &mut facts).await)
}

/// Sends one request, as `vllm bench serve` does before it starts: `Ok(true)` when `stop`
/// came first, an error quoting the failure when it failed.
async fn initial_test<C: Clock, S: Future<Output = ()>>(
    context: &RequestContext<'_, C>,
    options: &BenchOptions,
    stop: Pin<&mut S>,
) -> Result<bool, LoadError> {
    let prompt = PromptStream::initial_test(options).next_prompt();
    let body = request_body(options, &prompt);
    let request = send_request(context, 0, body, prompt.token_count(options.input_len));
    let record = tokio::select! {
        biased;
        () = stop => return Ok(true),
        record = request => record,
    };
    match record.error {
        None => Ok(false),
        Some(error) => Err(LoadError::InitialTest {
            url: context.client.endpoint().to_string(),
            hint: initial_test_hint(&error),
            error,
        }),
    }
}

/// The warmup, then the measured requests.
async fn run_phases<C: Clock, S: Future<Output = ()>>(
    context: &RequestContext<'_, C>,
    options: &BenchOptions,
    mut stop: Pin<&mut S>,
    progress: &BenchProgress,
    facts: &mut RunFacts,
) -> BenchReport {
    let clock = context.clock;
    progress.begin(options.warmup, true);
    let warmup = run_phase(
        context,
        Phase::warmup(options, clock.now()),
        stop.as_mut(),
        progress,
    )
    .await;
    let warmup_failed = warmup
        .records
        .iter()
        .filter(|record| !record.is_ok())
        .count();
    let start = clock.now();
    let measured = if warmup.stopped {
        warmup.nothing_measured()
    } else {
        progress.begin(options.num_prompts, false);
        run_phase(
            context,
            Phase::measured(options, start),
            stop.as_mut(),
            progress,
        )
        .await
    };
    let end = clock.now();
    facts.warmup = (warmup.records.len(), warmup_failed);
    facts.prompts_sha256 = measured.prompts_sha256;
    BenchReport::new(
        options,
        measured.records,
        (start, end),
        measured.stopped,
        std::mem::take(facts),
    )
}

/// The records of one phase, by index, whether it was stopped, and the digest of its
/// prompts (measured phases).
#[derive(Debug)]
struct PhaseOutcome {
    records: Vec<RequestRecord>,
    stopped: bool,
    prompts_sha256: Option<String>,
}

impl PhaseOutcome {
    fn nothing_measured(&self) -> Self {
        Self {
            records: Vec::new(),
            stopped: true,
            prompts_sha256: None,
        }
    }
}

async fn run_phase<C: Clock, S: Future<Output = ()>>(
    context: &RequestContext<'_, C>,
    mut phase: Phase<'_>,
    mut stop: Pin<&mut S>,
    progress: &BenchProgress,
) -> PhaseOutcome {
    let mut in_flight = FuturesUnordered::new();
    // Capped: a run until stopped asks for a huge count.
    let mut records = Vec::with_capacity(phase.count().min(1 << 16));
    let stopped = loop {
        let mut launched = false;
        let wait = loop {
            // A long prompt takes a while to build: between two, the runtime reads its
            // signals (a yield lets it) and a stop is heeded at once.
            if launched {
                tokio::task::yield_now().await;
                if stop.as_mut().now_or_never().is_some() {
                    break Err(());
                }
            }
            match phase.next(in_flight.len(), context.clock.now()) {
                Next::Launch {
                    index,
                    body,
                    prompt_tokens,
                } => {
                    progress.started.fetch_add(1, Ordering::Relaxed);
                    in_flight.push(send_request(context, index, body, prompt_tokens));
                    launched = true;
                }
                Next::Wait(wait) => break Ok(Some(wait)),
                Next::Idle => break Ok(None),
            }
        };
        let Ok(wait) = wait else {
            break true;
        };
        if in_flight.is_empty() && phase.is_exhausted() {
            break false;
        }
        tokio::select! {
            biased;
            () = stop.as_mut() => break true,
            Some(record) = in_flight.next(), if !in_flight.is_empty() => {
                progress.ended(&record);
                records.push(record);
            }
            () = tokio::time::sleep(wait.unwrap_or_default()), if wait.is_some() => {}
        }
    };
    if stopped {
        // Each ends at its next poll, as cancelled, with what it had streamed.
        context.cancel.cancel();
        while let Some(record) = in_flight.next().await {
            records.push(record);
        }
    }
    records.sort_unstable_by_key(|record| record.index);
    PhaseOutcome {
        records,
        stopped,
        prompts_sha256: phase.prompts_digest(),
    }
}
