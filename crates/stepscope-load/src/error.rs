//! Errors of the load generator. A failed request is not an error of the run: it is counted
//! in the report ([`crate::FailureKind`]); these stop a run before it starts.

use crate::record::{FailureKind, RequestError};
use std::path::PathBuf;

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// An option is out of range.
    #[error("Option `{option}` {problem}")]
    InvalidOption {
        /// The field of [`crate::BenchOptions`].
        option: &'static str,
        /// What is wrong, e.g. "must be at least 1".
        problem: String,
    },
    /// The base URL does not parse or is not `http://`.
    #[error(
        "URL `{url}` {problem}\nhint: give the server's base URL, e.g. `http://127.0.0.1:8000`"
    )]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong.
        problem: String,
    },
    /// A tokenizer file could not be read.
    #[error("Failed to read tokenizer `{}`", path.display())]
    TokenizerRead {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A tokenizer file is not a usable `tokenizer.json`.
    #[error("Tokenizer `{}` {problem}", path.display())]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The URL's host does not resolve.
    #[error("Failed to resolve host `{host}`")]
    Resolve {
        /// The host.
        host: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The test request sent before the run failed: nothing would have completed.
    #[error(
        "The initial test request to `{url}` failed ({}): {}\nhint: {hint}",
        error.kind.as_str(),
        error.detail
    )]
    InitialTest {
        /// The endpoint.
        url: String,
        /// What went wrong, with the server's answer.
        error: RequestError,
        /// What to check.
        hint: &'static str,
    },
    /// `input_len` or `output_len` is above [`crate::MAX_REQUEST_TOKENS`].
    #[error(
        "`{flag} {value}` is more than {cap} tokens, stepscope's cap on one request (a server's `max_model_len` can only lower it)\nhint: give at most `{flag} {cap}`"
    )]
    LengthOverCap {
        /// The flag, `--input-len` or `--output-len`.
        flag: &'static str,
        /// Its value.
        value: usize,
        /// [`crate::MAX_REQUEST_TOKENS`].
        cap: usize,
    },
    /// The prompt and the output of one request do not fit in the model's context.
    #[error(
        "`--input-len {input_len}` and `--output-len {output_len}` make {total} tokens a request, more than the {max_model_len}-token context of model `{model}` (`max_model_len` on `GET {url}`)\nhint: {hint}"
    )]
    OverContext {
        /// The model, its control characters escaped.
        model: String,
        /// The model-list URL.
        url: String,
        /// Prompt tokens per request.
        input_len: usize,
        /// Output tokens per request.
        output_len: usize,
        /// Their sum.
        total: u64,
        /// The context the server reported.
        max_model_len: u64,
        /// What to lower, and to what.
        hint: String,
    },
    /// The prompts of the requests in flight at once would hold too much memory.
    #[error(
        "`--concurrency {concurrency}` requests of `--input-len {input_len}` tokens hold {in_flight} prompt tokens at once, more than {limit} (about 2 GB of requests in memory)\nhint: lower `--concurrency` to at most {fits}, or `--input-len`"
    )]
    TooManyTokensInFlight {
        /// Requests in flight at most.
        concurrency: usize,
        /// Prompt tokens per request.
        input_len: usize,
        /// Their product.
        in_flight: u64,
        /// [`crate::MAX_TOKENS_IN_FLIGHT`].
        limit: usize,
        /// The most requests of `input_len` tokens that fit in the limit.
        fits: usize,
    },
    /// No model was given and the server's model list could not be read.
    #[error("No model given, and `GET {url}` did not name one: {problem}\nhint: {hint}")]
    ModelDiscovery {
        /// The model-list URL.
        url: String,
        /// What went wrong.
        problem: String,
        /// What to check: the server (nothing answers), or the model and URL.
        hint: &'static str,
    },
}

/// What to check when the model list could not be read, by what went wrong.
pub(crate) fn model_list_hint(problem: &str) -> &'static str {
    if problem.starts_with("failed to connect") || problem.starts_with("failed to resolve") {
        "nothing answers at that address: start the server, or give its address with `--url`"
    } else {
        "give the model the server serves with `--model NAME`, and check that `--url` is the server's base URL"
    }
}

/// What to check when the initial test request failed this way.
pub(crate) fn initial_test_hint(error: &RequestError) -> &'static str {
    match (error.kind, error.status) {
        (FailureKind::Connect, _) => {
            "nothing answers at that address: start the server, or give its address with `--url`"
        }
        (FailureKind::HttpStatus, Some(404 | 405)) => {
            "the server has no such endpoint: give its base URL with `--url` (e.g. `http://127.0.0.1:8000` or `…/v1`) and check `--api`"
        }
        (FailureKind::HttpStatus, Some(400..=499)) => {
            "the server refused the request: check `--model` (`GET /v1/models` lists what it serves), `--input-len` against its context length, and its log"
        }
        (FailureKind::HttpStatus, _) | (FailureKind::ServerError, _) => {
            "the server failed on the request: see its log"
        }
        (FailureKind::Timeout, _) => {
            "no complete answer in time: the server may still be loading or be overloaded; raise `--timeout-s` or check its log"
        }
        _ => {
            "the answer is not an OpenAI-compatible stream (`data: {…}` events ending with `data: [DONE]`): check `--url` and `--api`"
        }
    }
}
