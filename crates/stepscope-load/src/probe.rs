//! Output probes: a few fixed prompts sent one at a time at temperature 0, each answer's text
//! and token ids kept, so that two servers' answers can be compared token by token.
//!
//! A change that makes a server faster may also change what it says (another dtype, a broken
//! kernel, a sampling default); greedy decoding makes the answer a function of the prompt
//! and the model, so two servers that should be the same must answer the same. Prompts come
//! from the run's seed in a stream of their own (the benchmark's prompts are not reused),
//! one request at a time so that neither side's answers depend on how requests were batched,
//! and without `ignore_eos`, so an end-of-sequence token ends an answer as it would in
//! service. The token ids are asked for with `return_token_ids` (vLLM); a server that does
//! not list them is compared on its text.

use crate::clock::MonotonicClock;
use crate::error::LoadError;
use crate::http1::Http1Client;
use crate::models::{ServedModel, served_model};
use crate::options::BenchOptions;
use crate::prompts::{PromptStream, TEMPERATURE, request_body};
use crate::request::{Cancel, RequestContext, send_capturing};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::AtomicU64;

/// The version of the saved probe document.
pub const PROBE_SCHEMA_VERSION: u32 = 1;
/// The `kind` of a saved probe document.
pub const PROBE_KIND: &str = "stepscope-output-probe";

/// How many prompts, and how many tokens an answer may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeSettings {
    /// Prompts (answers) in the probe.
    pub prompts: usize,
    /// `max_tokens` of each.
    pub max_tokens: usize,
}

impl Default for ProbeSettings {
    fn default() -> Self {
        Self {
            prompts: 8,
            max_tokens: 32,
        }
    }
}

/// One answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeAnswer {
    /// The prompt's position.
    pub index: usize,
    /// The text, as streamed.
    pub text: String,
    /// The token ids, when every chunk with text listed them.
    pub token_ids: Option<Vec<u32>>,
    /// Why it ended (`length`, `stop`), when the server said.
    pub finish_reason: Option<String>,
    /// Why the request failed, when it did.
    pub error: Option<String>,
}

/// A server's answers to one probe, as saved (`*.outputs.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSet {
    /// [`PROBE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// [`PROBE_KIND`].
    pub kind: String,
    /// The endpoint.
    pub url: String,
    /// The `model` sent.
    pub model: String,
    /// The model's entry in `GET /v1/models`.
    pub served_model: Option<ServedModel>,
    /// Prompt tokens of each prompt.
    pub input_len: usize,
    /// `max_tokens` of each.
    pub max_tokens: usize,
    /// The temperature sent.
    pub temperature: f64,
    /// `sha256:<hex>` of the prompts.
    pub prompts_sha256: Option<String>,
    /// Every answer, by prompt.
    pub answers: Vec<ProbeAnswer>,
}

/// Sends `settings.prompts` probe prompts of `options.input_len` tokens to the server of
/// `options` (its model, or the first it lists), one at a time, each with its own
/// `options.timeout`; stops early, returning what was answered, when `stop` completes.
///
/// # Errors
///
/// The options are invalid, or no model is named and the server lists none.
pub async fn probe_outputs(
    options: &BenchOptions,
    settings: ProbeSettings,
    stop: impl Future<Output = ()>,
) -> Result<ProbeSet, LoadError> {
    let mut options = options.clone();
    options.output_len = settings.max_tokens.max(1);
    options.ignore_eos = false;
    options.validate()?;
    let (model, served) = served_model(&options).await?;
    options.model = model;
    let endpoint = options.validate()?;
    let client = Http1Client::new(&endpoint, 1)
        .await
        .map_err(|source| LoadError::Resolve {
            host: endpoint.host.clone(),
            source,
        })?;
    let (clock, cancel, streamed) = (MonotonicClock::new(), Cancel::default(), AtomicU64::new(0));
    let context = RequestContext {
        client: &client,
        clock: &clock,
        timeout: options.timeout,
        output_len: options.output_len,
        cancel: &cancel,
        streamed: &streamed,
    };
    let mut prompts = PromptStream::seeded(&options, b"output-probe").with_digest();
    let answers = answer_all(&context, &options, &mut prompts, settings.prompts, stop).await;
    Ok(ProbeSet {
        schema_version: PROBE_SCHEMA_VERSION,
        kind: PROBE_KIND.to_owned(),
        url: endpoint.to_string(),
        model: options.model.clone(),
        served_model: served,
        input_len: options.input_len,
        max_tokens: options.output_len,
        temperature: TEMPERATURE,
        prompts_sha256: prompts.digest(),
        answers,
    })
}

/// Sends `count` prompts of `prompts` one at a time, until `stop`.
async fn answer_all(
    context: &RequestContext<'_, MonotonicClock>,
    options: &BenchOptions,
    prompts: &mut PromptStream<'_>,
    count: usize,
    stop: impl Future<Output = ()>,
) -> Vec<ProbeAnswer> {
    let mut stop = pin!(stop);
    let mut answers = Vec::with_capacity(count);
    for index in 0..count {
        let prompt = prompts.next_prompt();
        let body = request_body(options, &prompt);
        let sent = send_capturing(context, index, &body, prompt.token_count(options.input_len));
        let (record, captured) = tokio::select! {
            biased;
            () = stop.as_mut() => break,
            answered = sent => answered,
        };
        let captured = captured.unwrap_or_default();
        answers.push(ProbeAnswer {
            index,
            token_ids: captured.ids_complete.then_some(captured.token_ids),
            text: captured.text,
            finish_reason: captured.finish_reason,
            error: record
                .error
                .map(|error| format!("{}: {}", error.kind.as_str(), error.detail)),
        });
    }
    answers
}
