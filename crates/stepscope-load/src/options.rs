//! What a benchmark sends, how fast, and for how long a request may take.

use crate::error::LoadError;
use crate::http1::Endpoint;
use crate::prompts::WordVocabulary;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration as StdDuration;

/// The OpenAI-compatible API a benchmark talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `POST /v1/completions` with `prompt` (token ids or text).
    Completions,
    /// `POST /v1/chat/completions` with one user message (text).
    Chat,
}

impl Api {
    /// The path below the base URL.
    pub fn path(self) -> &'static str {
        match self {
            Self::Completions => "/v1/completions",
            Self::Chat => "/v1/chat/completions",
        }
    }
}

/// Where prompts come from.
#[derive(Debug, Clone)]
pub enum PromptSource {
    /// `input_len` random token ids in `[0, vocab_size)`, sent as a token-id array (vLLM and
    /// SGLang accept them on `/v1/completions`): exactly `input_len` prompt tokens, no tokenizer.
    TokenIds {
        /// Ids are drawn below this.
        vocab_size: u32,
    },
    /// Text made of `input_len` whole-word tokens of a tokenizer's vocabulary. The server
    /// tokenizes it again, so its count may differ slightly; the report uses the server's
    /// `usage.prompt_tokens` when it sends one.
    Text(Arc<WordVocabulary>),
}

impl PromptSource {
    /// `"token_ids"` or `"text"`, as the report names it.
    pub fn format_name(&self) -> &'static str {
        match self {
            Self::TokenIds { .. } => "token_ids",
            Self::Text(_) => "text",
        }
    }

    /// The vocabulary size ids are drawn below (for text, the tokenizer's).
    pub fn vocab_size(&self) -> u32 {
        match self {
            Self::TokenIds { vocab_size } => *vocab_size,
            Self::Text(words) => words.vocab_size(),
        }
    }
}

/// Everything a benchmark run needs. Build with `BenchOptions::default()` and set fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BenchOptions {
    /// Base URL of the server, e.g. `http://127.0.0.1:8000` (default). A URL that already
    /// ends in the API path is used as it is.
    pub base_url: String,
    /// The `model` field of each request (default empty: set it).
    pub model: String,
    /// Completions (default) or chat.
    pub api: Api,
    /// Requests in flight at most (default 64).
    pub concurrency: usize,
    /// Measured requests (default 512).
    pub num_prompts: usize,
    /// Prompt tokens per request (default 1024).
    pub input_len: usize,
    /// Output tokens per request: `max_tokens` with `ignore_eos` (default 1024).
    pub output_len: usize,
    /// Poisson arrivals at this many requests per second; `None` (default): a request starts
    /// whenever fewer than `concurrency` are in flight.
    pub request_rate: Option<f64>,
    /// Requests run before the measurement, with their own prompts, and not reported
    /// (default 0).
    pub warmup: usize,
    /// Seed of prompts and arrivals (default 0): the same seed sends the same prompts.
    pub seed: u64,
    /// Prompts (default: token ids below 2048).
    pub prompts: PromptSource,
    /// Longest time one request may take, headers to end of stream (default 600 s).
    pub timeout: StdDuration,
    /// Send `ignore_eos: true` so every request generates `output_len` tokens (default true).
    pub ignore_eos: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8000".to_owned(),
            model: String::new(),
            api: Api::Completions,
            concurrency: 64,
            num_prompts: 512,
            input_len: 1024,
            output_len: 1024,
            request_rate: None,
            warmup: 0,
            seed: 0,
            prompts: PromptSource::TokenIds { vocab_size: 2048 },
            timeout: StdDuration::from_secs(600),
            ignore_eos: true,
        }
    }
}

impl BenchOptions {
    /// Checks ranges and the URL; returns the full endpoint URL.
    pub fn validate(&self) -> Result<Endpoint, LoadError> {
        let at_least_one = [
            ("concurrency", self.concurrency),
            ("num_prompts", self.num_prompts),
            ("input_len", self.input_len),
            ("output_len", self.output_len),
            ("prompts.vocab_size", self.prompts.vocab_size() as usize),
        ];
        for (option, value) in at_least_one {
            if value == 0 {
                return Err(invalid(option, "must be at least 1"));
            }
        }
        if let Some(rate) = self.request_rate {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(invalid("request_rate", "must be a positive number"));
            }
        }
        if self.timeout.is_zero() {
            return Err(invalid("timeout", "must be longer than zero"));
        }
        if self.api == Api::Chat && matches!(self.prompts, PromptSource::TokenIds { .. }) {
            return Err(invalid(
                "prompts",
                "must be text for the chat API (a message holds text, not token ids)",
            ));
        }
        self.endpoint_url()
    }

    /// Where requests go: the base URL with the API path appended (unless it ends with it).
    pub fn endpoint_url(&self) -> Result<Endpoint, LoadError> {
        let trimmed = self.base_url.trim_end_matches('/');
        let full = if trimmed.ends_with(self.api.path()) {
            trimmed.to_owned()
        } else {
            format!("{trimmed}{}", self.api.path())
        };
        Endpoint::parse(&full).map_err(|problem| LoadError::InvalidUrl {
            url: self.base_url.clone(),
            problem,
        })
    }
}

fn invalid(option: &'static str, problem: &str) -> LoadError {
    LoadError::InvalidOption {
        option,
        problem: problem.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_the_api_path_once() {
        let mut options = BenchOptions {
            base_url: "http://127.0.0.1:8000/".to_owned(),
            ..BenchOptions::default()
        };
        assert_eq!(
            options.validate().unwrap().to_string(),
            "http://127.0.0.1:8000/v1/completions"
        );
        options.base_url = "http://127.0.0.1:8000/v1/completions".to_owned();
        assert_eq!(
            options.validate().unwrap().to_string(),
            "http://127.0.0.1:8000/v1/completions"
        );
    }

    #[test]
    fn refuses_what_cannot_run() {
        let zero = BenchOptions {
            concurrency: 0,
            ..BenchOptions::default()
        };
        assert!(
            zero.validate()
                .unwrap_err()
                .to_string()
                .contains("`concurrency`")
        );
        let tls = BenchOptions {
            base_url: "https://example.invalid".to_owned(),
            ..BenchOptions::default()
        };
        assert!(
            tls.validate()
                .unwrap_err()
                .to_string()
                .contains("only `http`")
        );
        let chat_ids = BenchOptions {
            api: Api::Chat,
            ..BenchOptions::default()
        };
        assert!(chat_ids.validate().is_err());
        let rate = BenchOptions {
            request_rate: Some(f64::NAN),
            ..BenchOptions::default()
        };
        assert!(rate.validate().is_err());
    }
}
