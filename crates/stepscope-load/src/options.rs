//! What a benchmark sends, how fast, and for how long a request may take.

use crate::error::LoadError;
use crate::http1::Endpoint;
use crate::slo::Slo;
use crate::vocabulary::WordVocabulary;
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
    /// Base URL of the server, e.g. `http://127.0.0.1:8000` (default). The OpenAI client's
    /// form, ending in `/v1`, means the same server; a URL that already ends in the API path
    /// is used as it is.
    pub base_url: String,
    /// The `model` field of each request; empty (default): the first model the server lists
    /// on `GET /v1/models`.
    pub model: String,
    /// Completions (default) or chat.
    pub api: Api,
    /// Requests in flight at most (default 64).
    pub concurrency: usize,
    /// Measured requests (default 512).
    pub num_prompts: usize,
    /// Prompt tokens per request (default 1024), at most [`crate::MAX_REQUEST_TOKENS`].
    pub input_len: usize,
    /// Output tokens per request: `max_tokens` with `ignore_eos` (default 1024), at most
    /// [`crate::MAX_REQUEST_TOKENS`].
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
    /// Send one test request before anything else, as `vllm bench serve` does, and stop with
    /// [`LoadError::InitialTest`] when it fails (default true).
    pub initial_test: bool,
    /// Objectives for goodput (default none: no goodput).
    pub slo: Slo,
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
            initial_test: true,
            slo: Slo::default(),
        }
    }
}

impl BenchOptions {
    /// Checks ranges (lengths against [`crate::MAX_REQUEST_TOKENS`] too) and the URL; returns
    /// the full endpoint URL.
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
        crate::limits::check_caps(self)?;
        if self.api == Api::Chat && matches!(self.prompts, PromptSource::TokenIds { .. }) {
            return Err(invalid(
                "prompts",
                "must be text for the chat API (a message holds text, not token ids)",
            ));
        }
        self.endpoint_url()
    }

    /// Where requests go: the server's root ([`Self::server_root`]) and the API path; a base
    /// URL that ends with the API path is used as it is.
    pub fn endpoint_url(&self) -> Result<Endpoint, LoadError> {
        let trimmed = self.base_url.trim_end_matches('/');
        if trimmed.ends_with(self.api.path()) {
            return self.parse(trimmed.to_owned());
        }
        self.parse(format!("{}{}", self.server_root(), self.api.path()))
    }

    /// Where the server lists its models: `GET <root>/v1/models`.
    pub fn models_url(&self) -> Result<Endpoint, LoadError> {
        self.parse(format!("{}/v1/models", self.server_root()))
    }

    /// The base URL without a trailing `/`, the API path or `/v1`: `http://h:8000/v1/`,
    /// `http://h:8000/v1/completions` and `http://h:8000` all name `http://h:8000`.
    pub fn server_root(&self) -> &str {
        let trimmed = self.base_url.trim_end_matches('/');
        [Api::Completions.path(), Api::Chat.path(), "/v1"]
            .into_iter()
            .find_map(|suffix| trimmed.strip_suffix(suffix))
            .unwrap_or(trimmed)
    }

    fn parse(&self, url: String) -> Result<Endpoint, LoadError> {
        Endpoint::parse(&url).map_err(|problem| LoadError::InvalidUrl {
            url: crate::http1::redact_url(&self.base_url),
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
    fn an_openai_base_url_ending_in_v1_names_the_same_server() {
        for base_url in [
            "http://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000/v1/",
            "http://127.0.0.1:8000//",
        ] {
            let mut options = BenchOptions {
                base_url: base_url.to_owned(),
                ..BenchOptions::default()
            };
            assert_eq!(options.server_root(), "http://127.0.0.1:8000", "{base_url}");
            assert_eq!(
                options.endpoint_url().unwrap().to_string(),
                "http://127.0.0.1:8000/v1/completions",
                "{base_url}"
            );
            assert_eq!(
                options.models_url().unwrap().to_string(),
                "http://127.0.0.1:8000/v1/models"
            );
            options.api = Api::Chat;
            assert_eq!(
                options.endpoint_url().unwrap().to_string(),
                "http://127.0.0.1:8000/v1/chat/completions"
            );
        }
        let proxied = BenchOptions {
            base_url: "http://gateway/llm/v1".to_owned(),
            ..BenchOptions::default()
        };
        assert_eq!(
            proxied.endpoint_url().unwrap().to_string(),
            "http://gateway:80/llm/v1/completions"
        );
        let chat_url = BenchOptions {
            base_url: "http://h:1/v1/chat/completions".to_owned(),
            ..BenchOptions::default()
        };
        assert_eq!(chat_url.server_root(), "http://h:1");
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
