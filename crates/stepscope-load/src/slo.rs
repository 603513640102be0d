//! Service-level objectives and goodput as `vllm bench serve --goodput` defines them: a
//! completed request is *good* when each metric given is at most its objective — TTFT, TPOT
//! (counted as 0 for a request with one output token) and E2E latency — and goodput is good
//! requests per second of the measured run.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Objectives in milliseconds; a metric without one is not checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Slo {
    /// Time to first token at most this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Time per output token (after the first) at most this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// End-to-end latency at most this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<f64>,
}

/// The keys [`Slo::from_str`] accepts.
const KEYS: &str = "`ttft_ms`, `tpot_ms`, `e2el_ms`";

impl Slo {
    /// No objective: goodput is not computed.
    pub fn is_empty(&self) -> bool {
        self.ttft_ms.is_none() && self.tpot_ms.is_none() && self.e2el_ms.is_none()
    }

    /// Whether a request with these metrics (ms) meets every objective given.
    pub fn is_met(&self, ttft_ms: f64, tpot_ms: f64, e2el_ms: f64) -> bool {
        [
            (self.ttft_ms, ttft_ms),
            (self.tpot_ms, tpot_ms),
            (self.e2el_ms, e2el_ms),
        ]
        .into_iter()
        .all(|(objective, value)| objective.is_none_or(|objective| value <= objective))
    }
}

/// `ttft_ms=500,tpot_ms=50,e2el_ms=10000`: any of the three keys, each once, values in
/// milliseconds (non-negative numbers).
impl FromStr for Slo {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut slo = Self::default();
        for item in text.split(',').map(str::trim) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(format!(
                    "`{item}` is not `metric=ms`; give e.g. `ttft_ms=500,tpot_ms=50` (metrics: {KEYS})"
                ));
            };
            let slot = match key.trim() {
                "ttft_ms" => &mut slo.ttft_ms,
                "tpot_ms" => &mut slo.tpot_ms,
                "e2el_ms" => &mut slo.e2el_ms,
                other => return Err(format!("unknown metric `{other}` (metrics: {KEYS})")),
            };
            let value = value.trim();
            let parsed = value
                .parse::<f64>()
                .ok()
                .filter(|ms| ms.is_finite() && *ms >= 0.0)
                .ok_or_else(|| {
                    format!("`{value}` is not a number of milliseconds (≥ 0) for `{key}`")
                })?;
            if slot.replace(parsed).is_some() {
                return Err(format!("`{key}` is given twice"));
            }
        }
        Ok(slo)
    }
}

impl fmt::Display for Slo {
    /// `ttft ≤ 500 ms, tpot ≤ 50 ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [
            ("ttft", self.ttft_ms),
            ("tpot", self.tpot_ms),
            ("e2el", self.e2el_ms),
        ]
        .into_iter()
        .filter_map(|(name, ms)| ms.map(|ms| format!("{name} ≤ {ms} ms")))
        .collect();
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_objectives() {
        let slo: Slo = "ttft_ms=500, tpot_ms=50,e2el_ms=2000.5".parse().unwrap();
        assert_eq!(
            slo,
            Slo {
                ttft_ms: Some(500.0),
                tpot_ms: Some(50.0),
                e2el_ms: Some(2000.5)
            }
        );
        assert_eq!(
            slo.to_string(),
            "ttft ≤ 500 ms, tpot ≤ 50 ms, e2el ≤ 2000.5 ms"
        );
        let only: Slo = "tpot_ms=20".parse().unwrap();
        assert_eq!((only.ttft_ms, only.tpot_ms), (None, Some(20.0)));
        assert!(!only.is_empty() && Slo::default().is_empty());
    }

    #[test]
    fn refuses_bad_text_and_says_why() {
        for (text, says) in [
            ("ttft=500", "unknown metric `ttft`"),
            ("ttft_ms:500", "is not `metric=ms`"),
            ("ttft_ms=fast", "`fast` is not a number"),
            ("ttft_ms=-1", "`-1` is not a number"),
            ("ttft_ms=1,ttft_ms=2", "given twice"),
            ("", "is not `metric=ms`"),
        ] {
            let error = text.parse::<Slo>().unwrap_err();
            assert!(error.contains(says), "{text:?}: {error}");
        }
    }

    #[test]
    fn a_request_is_good_when_every_given_metric_is_within() {
        let slo: Slo = "ttft_ms=100,tpot_ms=10".parse().unwrap();
        assert!(
            slo.is_met(100.0, 10.0, 1e9),
            "at the objective is good; e2el unchecked"
        );
        assert!(!slo.is_met(100.1, 1.0, 0.0));
        assert!(!slo.is_met(1.0, 10.1, 0.0));
        assert!(Slo::default().is_met(f64::MAX, f64::MAX, f64::MAX));
    }
}
