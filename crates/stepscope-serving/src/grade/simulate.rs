//! A stand-in server for measuring the grader: each phase's output throughput, latencies
//! and failed requests drawn from known laws, so that how often a grading decides wrongly
//! (same law on both sides) or finds a true change can be counted over many runs.
//!
//! Throughput is log-normal (positive, a long right tail: the shape of a server's throughput
//! from phase to phase) with coefficient of variation `cv`. Each latency a grading checks
//! (TTFT, TPOT, ITL, E2E; median and p99) is its own log-normal, centred on a fixed value
//! divided by the side's speed-up, with the same `cv` for medians and twice it for p99s (a
//! tail is noisier); they vary independently of the throughput, which is the harder case for
//! false alarms. Every request of a phase fails on its own with probability
//! `failure_rate`.

use super::Phase;
use rand::Rng;
use rand_distr::{Binomial, Distribution, StandardNormal};
use serde_json::json;

/// The laws of one side's phases.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StandIn {
    /// Coefficient of variation of throughput and median latencies.
    pub cv: f64,
    /// How much faster than the reference side (1: the same; 1.1: 10 % faster).
    pub speedup: f64,
    /// The chance that one request fails.
    pub failure_rate: f64,
    /// Requests a phase.
    pub requests: u64,
}

/// Median latencies (ms) of the reference side: TTFT, TPOT, ITL, E2E.
const LATENCIES: [(&str, f64); 4] = [
    ("ttft_ms", 120.0),
    ("tpot_ms", 12.0),
    ("itl_ms", 12.0),
    ("e2e_ms", 1650.0),
];

/// A draw of the log-normal law with median `center` and coefficient of variation `cv`.
fn log_normal<R: Rng + ?Sized>(rng: &mut R, center: f64, cv: f64) -> f64 {
    let sigma = (1.0 + cv * cv).ln().sqrt();
    let z: f64 = StandardNormal.sample(rng);
    (center.ln() + sigma * z).exp()
}

impl StandIn {
    /// One phase.
    pub fn phase<R: Rng + ?Sized>(&self, rng: &mut R) -> Phase {
        let mut phase = Phase::of_throughput(log_normal(rng, 100.0 * self.speedup, self.cv));
        let mut summary = json!({});
        for (name, median) in LATENCIES {
            let center = median / self.speedup;
            summary[name] = json!({
                "median": log_normal(rng, center, self.cv),
                "p99": log_normal(rng, center * 2.0, 2.0 * self.cv),
            });
        }
        phase.summary = summary;
        let failed =
            Binomial::new(self.requests, self.failure_rate).map_or(0, |law| law.sample(rng));
        phase.requests = stepscope_stats::rates::Counts {
            sent: self.requests,
            failed,
        };
        if failed > 0 {
            phase.failures.insert("http_status".to_owned(), failed);
        }
        phase
    }
}
