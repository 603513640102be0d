//! Serving iterations' token counts from their step annotations: the sizes attention of
//! paged and ragged batches is costed by (its tensors' shapes do not say how long each
//! sequence is). vLLM's detailed annotation
//! `execute_<n>_context_<r>(sq<a>sk<b>sqsq<c>sqsk<d>)_generation_<r>(sq..sk..sqsq..sqsk..)`
//! and SGLang's `step[... c_sq=.. c_sk=.. c_sqsq=.. c_sqsk=.. g_sq=.. g_sk=.. g_sqsq=.. g_sqsk=..]`
//! give, for the context (prefill) and generation (decode) parts, the query tokens (`sq`),
//! key tokens (`sk`) and the sums of their products per sequence (`sqsq`, `sqsk`). ATOM's
//! detailed annotations (`ATOM_ENABLE_DETAILED_ANNOTATION=1`) state one part each:
//! `prefill[bs=2 tok=14721 ctx=[7803, 6918] sqsq=.. sqsk=.. sk=..]` is the context part and
//! `decode[bs=32 tok=128 d=32 spec=3 sqsq=.. sqsk=.. sk=..]` the generation part, `tok` being
//! the query tokens (TraceLens reads them so, `TraceUtils/annotation_utils.py`).
//! Native annotations without the sums (`step[DECODE bs=32]`, `decode[bs=64 tok=64 d=64]`)
//! give none.

use regex::Regex;
use std::sync::OnceLock;
use stepscope_model::Trace;

/// One iteration's token counts (`c_*`: context/prefill part, `g_*`: generation/decode).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct IterationStats {
    pub c_sq: f64,
    pub c_sk: f64,
    pub c_sqsq: f64,
    pub c_sqsk: f64,
    pub g_sq: f64,
    pub g_sk: f64,
    pub g_sqsq: f64,
    pub g_sqsk: f64,
}

fn vllm_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(
            r"^execute_\d+_context_\d+\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)_generation_\d+\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)",
        )
        .expect("a valid pattern")
    })
}

/// The token counts an annotation name states, if it states them.
pub(crate) fn parse(name: &str) -> Option<IterationStats> {
    if let Some(found) = vllm_pattern().captures(name) {
        let n = |i: usize| found.get(i).and_then(|m| m.as_str().parse::<f64>().ok());
        return Some(IterationStats {
            c_sq: n(1)?,
            c_sk: n(2)?,
            c_sqsq: n(3)?,
            c_sqsk: n(4)?,
            g_sq: n(5)?,
            g_sk: n(6)?,
            g_sqsq: n(7)?,
            g_sqsk: n(8)?,
        });
    }
    if let Some(stats) = atom(name) {
        return Some(stats);
    }
    let inner = name.strip_prefix("step[")?.strip_suffix(']')?;
    let value = |key: &str| key_value(inner, key);
    Some(IterationStats {
        c_sq: value("c_sq")?,
        c_sk: value("c_sk")?,
        c_sqsq: value("c_sqsq")?,
        c_sqsk: value("c_sqsk")?,
        g_sq: value("g_sq")?,
        g_sk: value("g_sk")?,
        g_sqsq: value("g_sqsq")?,
        g_sqsk: value("g_sqsk")?,
    })
}

/// The number after `key=` among the space- or comma-separated tokens of `inner`.
fn key_value(inner: &str, key: &str) -> Option<f64> {
    inner
        .split([' ', ','])
        .find_map(|token| token.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// ATOM's detailed `prefill[…]` (the context part) or `decode[…]` (the generation part).
fn atom(name: &str) -> Option<IterationStats> {
    let (phase, rest) = name.split_once('[')?;
    let inner = rest.strip_suffix(']')?;
    let value = |key: &str| key_value(inner, key);
    let part = (value("tok")?, value("sk")?, value("sqsq")?, value("sqsk")?);
    let (sq, sk, sqsq, sqsk) = part;
    match phase {
        "prefill" => Some(IterationStats {
            c_sq: sq,
            c_sk: sk,
            c_sqsq: sqsq,
            c_sqsk: sqsk,
            ..IterationStats::default()
        }),
        "decode" => Some(IterationStats {
            g_sq: sq,
            g_sk: sk,
            g_sqsq: sqsq,
            g_sqsk: sqsk,
            ..IterationStats::default()
        }),
        _ => None,
    }
}

/// The host annotations that state token counts, by start.
pub(crate) struct Iterations {
    spans: Vec<(i64, i64, IterationStats)>,
}

impl Iterations {
    pub(crate) fn new(trace: &Trace) -> Self {
        let spans_of = &trace.annotations;
        let mut spans: Vec<(i64, i64, IterationStats)> = (0..spans_of.len())
            .filter_map(|row| {
                let stats = parse(trace.name(spans_of.name[row]))?;
                Some((
                    spans_of.start[row].as_nanos(),
                    spans_of.end(row).as_nanos(),
                    stats,
                ))
            })
            .collect();
        spans.sort_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
        Iterations { spans }
    }

    /// The counts of annotation `index` (as [`Self::around`] numbers them).
    pub(crate) fn stats(&self, index: u32) -> Option<&IterationStats> {
        self.spans.get(index as usize).map(|span| &span.2)
    }

    /// The first (by start) annotation that holds `[start, end]`: its index and counts.
    pub(crate) fn around(&self, start: i64, end: i64) -> Option<(u32, &IterationStats)> {
        self.spans
            .iter()
            .enumerate()
            .take_while(|(_, span)| span.0 <= start)
            .find(|(_, span)| end < span.1)
            .map(|(index, span)| (index as u32, &span.2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_and_sglang_detailed_annotations_give_their_counts() {
        let vllm = parse("execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)").unwrap();
        assert_eq!(
            (vllm.c_sq, vllm.c_sk, vllm.c_sqsq, vllm.c_sqsk),
            (8155.0, 8430.0, 7475785.0, 7671310.0)
        );
        assert_eq!(
            (vllm.g_sq, vllm.g_sk, vllm.g_sqsq, vllm.g_sqsk),
            (37.0, 34489.0, 37.0, 34489.0)
        );
        let sglang = parse("step[DECODE bs=32 c_sq=0 c_sk=0 c_sqsq=0 c_sqsk=0 g_sq=32 g_sk=100 g_sqsq=32 g_sqsk=100]").unwrap();
        assert_eq!((sglang.g_sq, sglang.g_sk), (32.0, 100.0));
        assert_eq!(parse("step[DECODE bs=32]"), None);
        let prefill = parse(
            "prefill[bs=2 tok=14721 ctx=[7803, 6918] sqsq=108745533 sqsk=108745533 sk=14721]",
        )
        .unwrap();
        assert_eq!(
            (prefill.c_sq, prefill.c_sk, prefill.c_sqsq, prefill.c_sqsk),
            (14721.0, 14721.0, 108745533.0, 108745533.0)
        );
        assert_eq!((prefill.g_sq, prefill.g_sk), (0.0, 0.0));
        let decode =
            parse("decode[bs=128 tok=384 p=2 d=126 sqsq=132612 sqsk=1114112 sk=258048 tbo=1]")
                .unwrap();
        assert_eq!(
            (decode.g_sq, decode.g_sk, decode.g_sqsq, decode.g_sqsk),
            (384.0, 258048.0, 132612.0, 1114112.0)
        );
        assert_eq!(decode.c_sq, 0.0);
        // Native ATOM annotations state no sums; other bracketed names are not ATOM's.
        assert_eq!(parse("decode[bs=64 tok=64 d=64]"), None);
        assert_eq!(parse("decode[bs=117/128 tok=117 d=117]"), None);
        assert_eq!(parse("eager_decode[tok=1 sk=2 sqsq=1 sqsk=2]"), None);
        assert_eq!(parse("ProfilerStep#3"), None);
    }
}
