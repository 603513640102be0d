//! Counting a server's steps while a window is open, where the framework does not close the
//! window by itself.
//!
//! vLLM: the count of its `vllm:iteration_tokens_total` histogram on `/metrics` (one
//! observation per engine step). Elsewhere, or when `/metrics` lacks it: the token chunks
//! the load streamed, divided by its concurrency — an engine step streams at most one token
//! to each request in flight, so this is a lower bound, and a window closed on it holds at
//! least the steps asked for.

use crate::config::Framework;
use crate::windows::{WindowError, vllm_engine_steps};
use stepscope_load::BenchProgress;

/// How steps are counted, and from where.
#[derive(Debug, Clone)]
pub enum StepCounter {
    /// vLLM's `/metrics`, from this reading.
    Metrics {
        /// The server.
        base_url: String,
        /// The count when the window opened.
        from: u64,
    },
    /// The load's streamed chunks over its concurrency, from this many chunks.
    Streamed {
        /// Chunks when the window opened.
        from: u64,
        /// Requests in flight.
        concurrency: u64,
    },
}

impl StepCounter {
    /// Starts counting now.
    pub fn begin(
        framework: Framework,
        base_url: &str,
        load: &BenchProgress,
        concurrency: u32,
    ) -> Self {
        if framework == Framework::Vllm {
            if let Ok(from) = vllm_engine_steps(base_url) {
                return StepCounter::Metrics {
                    base_url: base_url.to_owned(),
                    from,
                };
            }
        }
        StepCounter::Streamed {
            from: load.streamed_chunks(),
            concurrency: u64::from(concurrency.max(1)),
        }
    }

    /// Steps since the start.
    pub fn counted(&self, load: &BenchProgress) -> Result<u64, WindowError> {
        match self {
            StepCounter::Metrics { base_url, from } => {
                Ok(vllm_engine_steps(base_url)?.saturating_sub(*from))
            }
            StepCounter::Streamed { from, concurrency } => {
                Ok(load.streamed_chunks().saturating_sub(*from) / concurrency)
            }
        }
    }

    /// How, in words, for the record.
    pub fn describe(&self) -> String {
        match self {
            StepCounter::Metrics { .. } => {
                "engine steps on /metrics (vllm:iteration_tokens_total_count)".to_owned()
            }
            StepCounter::Streamed { concurrency, .. } => format!(
                "token chunks the load streamed / {concurrency} in flight (a step streams at most one per request: a lower bound)"
            ),
        }
    }
}
