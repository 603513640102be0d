//! What one request measured, and why it failed when it did.

use serde::Serialize;
use stepscope_model::text::escape_controls;
use stepscope_model::{Duration, Timestamp};

/// Why a request failed. Each is counted apart in the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The server answered with a status other than 2xx.
    HttpStatus,
    /// The connection could not be made (refused, unreachable).
    Connect,
    /// The connection or the stream ended before `data: [DONE]`.
    ClosedStream,
    /// The request took longer than the timeout.
    Timeout,
    /// A line that is neither `data: <JSON>`, `data: [DONE]`, blank nor an SSE comment.
    BadSse,
    /// The server sent an error object in the stream.
    ServerError,
    /// The stream ended properly without a single token chunk.
    NoTokens,
    /// The response is not HTTP/1.1 (bad status line, header or chunk framing).
    BadResponse,
    /// In flight when the run was stopped (Ctrl-C, SIGTERM, SIGHUP); not a failure of the server.
    Cancelled,
}

impl FailureKind {
    /// The name used in the JSON and the table.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HttpStatus => "http_status",
            Self::Connect => "connect",
            Self::ClosedStream => "closed_stream",
            Self::Timeout => "timeout",
            Self::BadSse => "bad_sse",
            Self::ServerError => "server_error",
            Self::NoTokens => "no_tokens",
            Self::BadResponse => "bad_response",
            Self::Cancelled => "cancelled",
        }
    }
}

/// A failure with its detail: for `http_status` the status and the first 200 bytes of the
/// body; otherwise what was seen and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestError {
    /// The reason.
    pub kind: FailureKind,
    /// One sentence.
    pub detail: String,
    /// The HTTP status of an `http_status` failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl RequestError {
    /// A failure of `kind`; control characters left in `detail` are escaped here too, so no
    /// detail can carry one, whatever text it quotes.
    pub(crate) fn new(kind: FailureKind, detail: impl Into<String>) -> Self {
        let detail: String = detail.into();
        let detail = match escape_controls(&detail) {
            std::borrow::Cow::Borrowed(_) => detail,
            std::borrow::Cow::Owned(escaped) => escaped,
        };
        Self {
            kind,
            detail,
            status: None,
        }
    }
}

/// How a request's output tokens were counted from its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputTokenSource {
    /// The token ids the chunks carried (vLLM's `return_token_ids`): exact.
    TokenIds,
    /// The chunks with non-empty text: exact when the server sends one token a chunk, a
    /// floor when it sends several.
    Chunks,
}

/// How the server's own `usage.completion_tokens` compares with the count of what streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageCheck {
    /// Within the tolerance of the count.
    Agrees,
    /// The server sent no usage.
    Absent,
    /// More than `max_tokens` asked: no server can have generated that.
    OverMaxTokens,
    /// Further from the count than the tolerance.
    Disagrees,
}

/// Usage within this many tokens of the count agrees with it (or 1 %, when larger).
pub const USAGE_TOLERANCE_TOKENS: u64 = 1;

/// One request, timed. Times are integer nanoseconds of the run's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// Position in the run (0-based), which is also the prompt's position.
    pub index: usize,
    /// When the request was sent.
    pub start: Timestamp,
    /// Start to the first token chunk (a chunk with a choice, as `vllm bench serve`).
    pub ttft: Option<Duration>,
    /// Start to the last token chunk (E2E, as `vllm bench serve`); for a failed request,
    /// start to the failure.
    pub latency: Option<Duration>,
    /// Gaps between consecutive token chunks.
    pub itl: Vec<Duration>,
    /// Prompt tokens: `usage.prompt_tokens` when sent, else the prompt as sent.
    pub input_tokens: u64,
    /// Generated tokens, counted from the stream ([`OutputTokenSource`]).
    pub output_tokens: u64,
    /// How `output_tokens` was counted.
    pub output_tokens_source: OutputTokenSource,
    /// The server's `usage.completion_tokens`, when it sent one: checked against the
    /// count ([`Self::usage_check`]), never used in its place.
    pub usage_output_tokens: Option<u64>,
    /// Why it failed; `None` when it completed.
    pub error: Option<RequestError>,
}

impl RequestRecord {
    /// Completed: the stream ended with `[DONE]` after at least one token chunk.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// The server's usage against the streamed count, for a request that asked for
    /// `max_tokens`: over `max_tokens` is never possible; otherwise it must be within
    /// [`USAGE_TOLERANCE_TOKENS`] or 1 % of the count.
    pub fn usage_check(&self, max_tokens: u64) -> UsageCheck {
        let Some(usage) = self.usage_output_tokens else {
            return UsageCheck::Absent;
        };
        if usage > max_tokens {
            return UsageCheck::OverMaxTokens;
        }
        let tolerance = USAGE_TOLERANCE_TOKENS.max(self.output_tokens / 100);
        if usage.abs_diff(self.output_tokens) > tolerance {
            UsageCheck::Disagrees
        } else {
            UsageCheck::Agrees
        }
    }

    /// A request stopped by the run's stop signal before any byte of it arrived.
    #[cfg(test)]
    pub(crate) fn cancelled(
        index: usize,
        start: Timestamp,
        now: Timestamp,
        input_tokens: u64,
    ) -> Self {
        Self {
            index,
            start,
            ttft: None,
            latency: Some(now - start),
            itl: Vec::new(),
            input_tokens,
            output_tokens: 0,
            output_tokens_source: OutputTokenSource::Chunks,
            usage_output_tokens: None,
            error: Some(RequestError::new(
                FailureKind::Cancelled,
                "in flight when the run was stopped",
            )),
        }
    }
}
