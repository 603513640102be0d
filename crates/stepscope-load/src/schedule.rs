//! When each request of a phase may start: at once when a slot is free (fixed concurrency),
//! or at seeded Poisson arrival times and then as soon as a slot is free — the order
//! `vllm bench serve` uses with `--request-rate` and `--max-concurrency`.

use crate::options::BenchOptions;
use crate::prompts::{PromptStream, domain_seed, request_body};
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use stepscope_model::{Duration, Timestamp};

/// Offsets from the start of the run at which `count` requests arrive at `rate` per second:
/// the first at 0, then exponential gaps of mean `1/rate` (a Poisson process), from `seed`.
pub fn arrival_offsets(seed: u64, count: usize, rate: f64) -> Vec<Duration> {
    let mut arrivals = Arrivals::new(seed, rate);
    (0..count).map(|_| arrivals.advance()).collect()
}

/// Seeded Poisson arrivals, one offset at a time.
#[derive(Debug)]
struct Arrivals {
    rng: ChaCha8Rng,
    gaps: Option<Exp<f64>>,
    next: Duration,
}

impl Arrivals {
    fn new(seed: u64, rate: f64) -> Self {
        Self {
            rng: ChaCha8Rng::from_seed(domain_seed(seed, b"arrivals")),
            gaps: Exp::new(rate).ok(),
            next: Duration::ZERO,
        }
    }

    /// The offset of the next arrival, and draws the one after.
    fn advance(&mut self) -> Duration {
        let this = self.next;
        if let Some(gaps) = &self.gaps {
            let gap_s: f64 = gaps.sample(&mut self.rng);
            self.next = self.next + Duration::from_nanos((gap_s * 1e9).round() as i64);
        }
        this
    }
}

/// What the runner does next.
#[derive(Debug)]
pub(crate) enum Next {
    /// Start request `index` with this body and prompt length.
    Launch {
        index: usize,
        body: Vec<u8>,
        prompt_tokens: u64,
    },
    /// The next request arrives in this long.
    Wait(std::time::Duration),
    /// Nothing to start until a request ends (or none is left).
    Idle,
}

/// The requests of one phase (warmup or measured), handed out in order.
#[derive(Debug)]
pub(crate) struct Phase<'a> {
    options: &'a BenchOptions,
    prompts: PromptStream<'a>,
    arrivals: Option<Arrivals>,
    count: usize,
    launched: usize,
    start: Timestamp,
}

impl<'a> Phase<'a> {
    /// The measured requests, arriving at `options.request_rate` if set, from `start`.
    pub(crate) fn measured(options: &'a BenchOptions, start: Timestamp) -> Self {
        Self {
            options,
            prompts: PromptStream::measured(options),
            arrivals: options
                .request_rate
                .map(|rate| Arrivals::new(options.seed, rate)),
            count: options.num_prompts,
            launched: 0,
            start,
        }
    }

    /// The warmup requests: as fast as the concurrency allows.
    pub(crate) fn warmup(options: &'a BenchOptions, start: Timestamp) -> Self {
        Self {
            options,
            prompts: PromptStream::warmup(options),
            arrivals: None,
            count: options.warmup,
            launched: 0,
            start,
        }
    }

    /// `sha256:<hex>` of the measured prompts handed out so far (`None` for warmup).
    pub(crate) fn prompts_digest(&self) -> Option<String> {
        self.prompts.digest()
    }

    /// Requests in the phase.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Whether every request was handed out.
    pub(crate) fn is_exhausted(&self) -> bool {
        self.launched >= self.count
    }

    /// The next step with `in_flight` requests running at `now`.
    pub(crate) fn next(&mut self, in_flight: usize, now: Timestamp) -> Next {
        if self.is_exhausted() || in_flight >= self.options.concurrency {
            return Next::Idle;
        }
        if let Some(arrivals) = &mut self.arrivals {
            let due = self.start + arrivals.next;
            if now < due {
                let wait = (due - now).as_nanos().unsigned_abs();
                return Next::Wait(std::time::Duration::from_nanos(wait));
            }
            arrivals.advance();
        }
        let prompt = self.prompts.next_prompt();
        let index = self.launched;
        self.launched += 1;
        Next::Launch {
            index,
            body: request_body(self.options, &prompt),
            prompt_tokens: prompt.token_count(self.options.input_len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn poisson_gaps_have_the_asked_mean() {
        let offsets = arrival_offsets(0, 4001, 50.0);
        assert_eq!(offsets[0], Duration::ZERO);
        assert!(offsets.windows(2).all(|pair| pair[0] <= pair[1]));
        let mean_gap_s = offsets[4000].as_nanos() as f64 / 1e9 / 4000.0;
        // Standard error of the mean of 4000 exponential gaps: 1.6 % of 20 ms.
        assert!(
            (mean_gap_s - 0.02).abs() < 0.02 * 0.05,
            "mean gap {mean_gap_s}"
        );
        assert_eq!(offsets, arrival_offsets(0, 4001, 50.0));
        assert_ne!(offsets, arrival_offsets(1, 4001, 50.0));
    }

    #[test]
    fn fixed_concurrency_launches_only_into_free_slots() {
        let options = BenchOptions {
            concurrency: 2,
            num_prompts: 3,
            input_len: 4,
            ..BenchOptions::default()
        };
        let mut phase = Phase::measured(&options, at(0));
        assert!(matches!(
            phase.next(0, at(0)),
            Next::Launch { index: 0, .. }
        ));
        assert!(matches!(
            phase.next(1, at(0)),
            Next::Launch { index: 1, .. }
        ));
        assert!(matches!(phase.next(2, at(0)), Next::Idle));
        let Next::Launch { prompt_tokens, .. } = phase.next(1, at(5)) else {
            panic!("a slot is free");
        };
        assert_eq!(prompt_tokens, 4);
        assert!(phase.is_exhausted());
        assert!(matches!(phase.next(0, at(6)), Next::Idle));
    }

    #[test]
    fn a_rate_waits_for_each_arrival() {
        let options = BenchOptions {
            concurrency: 8,
            num_prompts: 3,
            request_rate: Some(10.0),
            ..BenchOptions::default()
        };
        let offsets = arrival_offsets(options.seed, 3, 10.0);
        let mut phase = Phase::measured(&options, at(1000));
        assert!(matches!(
            phase.next(0, at(1000)),
            Next::Launch { index: 0, .. }
        ));
        let Next::Wait(wait) = phase.next(1, at(1000)) else {
            panic!("the second request is not due yet");
        };
        assert_eq!(wait.as_nanos() as i64, offsets[1].as_nanos());
        let due = at(1000) + offsets[1];
        assert!(matches!(phase.next(1, due), Next::Launch { index: 1, .. }));
    }
}
