//! How many tokens a run may ask for. A prompt is built in memory before it is sent, so an
//! absurd `input_len` (four billion tokens) must be refused before anything is built, not
//! found out by running out of memory. Two bounds apply to one request: stepscope's own cap,
//! [`MAX_REQUEST_TOKENS`], always; and the model's context, `max_model_len`, when the server
//! reports it on `GET /v1/models` (vLLM and SGLang do), for the prompt and the output
//! together. A third bounds the prompts of the requests in flight at once.

use crate::error::LoadError;
use crate::models::ModelContext;
use crate::options::BenchOptions;

/// The most prompt tokens, and the most output tokens, one request may ask for: 1,048,576
/// (2^20), above the longest context common servers are run with.
pub const MAX_REQUEST_TOKENS: usize = 1 << 20;

/// The most prompt tokens of the requests in flight at once: 2^28, about 2 GB of request
/// bodies held in memory.
pub const MAX_TOKENS_IN_FLIGHT: usize = 1 << 28;

/// Refuses lengths over [`MAX_REQUEST_TOKENS`] and prompts in flight over
/// [`MAX_TOKENS_IN_FLIGHT`]; the server is not asked.
pub(crate) fn check_caps(options: &BenchOptions) -> Result<(), LoadError> {
    for (flag, value) in [
        ("--input-len", options.input_len),
        ("--output-len", options.output_len),
    ] {
        if value > MAX_REQUEST_TOKENS {
            return Err(LoadError::LengthOverCap {
                flag,
                value,
                cap: MAX_REQUEST_TOKENS,
            });
        }
    }
    let concurrency = options
        .concurrency
        .min(options.num_prompts.max(options.warmup));
    let in_flight = concurrency as u64 * options.input_len as u64;
    if in_flight > MAX_TOKENS_IN_FLIGHT as u64 {
        return Err(LoadError::TooManyTokensInFlight {
            concurrency,
            input_len: options.input_len,
            in_flight,
            limit: MAX_TOKENS_IN_FLIGHT,
            fits: (MAX_TOKENS_IN_FLIGHT / options.input_len.max(1)).max(1),
        });
    }
    Ok(())
}

/// Refuses a request whose prompt and output together do not fit in the context the server
/// reported for `model`.
pub(crate) fn check_context(
    options: &BenchOptions,
    context: Option<ModelContext>,
) -> Result<(), LoadError> {
    let Some(ModelContext { max_model_len }) = context else {
        return Ok(());
    };
    let total = options.input_len as u64 + options.output_len as u64;
    if total <= max_model_len {
        return Ok(());
    }
    let hint = if options.input_len as u64 >= max_model_len {
        format!(
            "give `--input-len` below {max_model_len}, leaving room for `--output-len`, or serve the model with a longer context"
        )
    } else {
        format!(
            "lower `--output-len` to at most {}, or `--input-len`, or serve the model with a longer context",
            max_model_len - options.input_len as u64
        )
    };
    Err(LoadError::OverContext {
        model: stepscope_model::text::escape_controls(&options.model).into_owned(),
        url: options
            .models_url()
            .map_or_else(|_| "/v1/models".to_owned(), |url| url.to_string()),
        input_len: options.input_len,
        output_len: options.output_len,
        total,
        max_model_len,
        hint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(input_len: usize, output_len: usize, concurrency: usize) -> BenchOptions {
        BenchOptions {
            input_len,
            output_len,
            concurrency,
            ..BenchOptions::default()
        }
    }

    #[test]
    fn lengths_over_the_cap_are_refused_naming_the_flag_and_the_cap() {
        let error = check_caps(&options(4_000_000_000, 8, 1)).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("`--input-len 4000000000`"), "{text}");
        assert!(text.contains("1048576"), "{text}");
        let error = check_caps(&options(8, MAX_REQUEST_TOKENS + 1, 1)).unwrap_err();
        assert!(error.to_string().contains("`--output-len"), "{error}");
        check_caps(&options(MAX_REQUEST_TOKENS, MAX_REQUEST_TOKENS, 1)).unwrap();
    }

    #[test]
    fn prompts_in_flight_are_bounded_by_the_requests_that_can_be_in_flight() {
        let error = check_caps(&options(MAX_REQUEST_TOKENS, 8, 512)).unwrap_err();
        assert!(error.to_string().contains("at most 256"), "{error}");
        let few = BenchOptions {
            num_prompts: 4,
            ..options(MAX_REQUEST_TOKENS, 8, 512)
        };
        check_caps(&few).unwrap();
    }

    #[test]
    fn the_context_bounds_prompt_and_output_together() {
        let context = Some(ModelContext {
            max_model_len: 2048,
        });
        let mut over = options(4096, 16, 1);
        over.model = "m\u{1b}[31m".to_owned();
        let text = check_context(&over, context).unwrap_err().to_string();
        assert!(text.contains("2048-token context"), "{text}");
        assert!(text.contains("`--input-len` below 2048"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        let text = check_context(&options(2000, 100, 1), context)
            .unwrap_err()
            .to_string();
        assert!(text.contains("`--output-len` to at most 48"), "{text}");
        check_context(&options(2000, 48, 1), context).unwrap();
        check_context(&options(4096, 16, 1), None).unwrap();
    }
}
