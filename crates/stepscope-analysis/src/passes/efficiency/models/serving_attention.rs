//! Attention of serving frameworks over paged or ragged batches (vLLM's unified attention,
//! aiter's varlen and batch-prefill kernels, SGLang's paged ragged attention), and SGLang's
//! KV-cache store. Their tensors do not say how long each sequence is; the iteration's step
//! annotation does (`iterations`), and the cost follows TraceLens's `InferenceAttention`
//! (AMD-AGI/TraceLens, `PerfModel/extensions/attention_perf_model_extensions.py`):
//!
//! FLOPs = H_Q·(2·c_sqsk·d_qk + 2·c_sqsk·d_v − c_sqsq·d_qk − c_sqsq·d_v)
//!       + H_Q·(2·g_sqsk·d_qk + 2·g_sqsk·d_v)
//! (prefill causal within each chunk, decode against the whole cache), and
//! bytes = (c_sq + g_sq)·(H_Q·d_qk + H_Q·d_v + H_KV·d_qk + H_KV·d_v)·bpe_Q
//!       + ((c_sk − c_sq) + (g_sk − g_sq))·H_KV·(d_qk + d_v)·bpe_KV
//! (queries, outputs and new keys/values once, the cached keys and values read once), with
//! bpe_Q 2 when the dtype's size is unknown and bpe_KV that of the cache (else bpe_Q).
//! `sglang::store_cache` moves 4 elements per element of its key tensor and computes
//! nothing.

use super::super::args::ParsedArgs;
use super::super::dtype;
use super::super::iterations::IterationStats;
use super::super::spec::{ComputeSpec, Family, OpCost, Unit};

/// Which layout an op's arguments have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Serving {
    /// Q = arg 0 `[tokens, H_Q, d]`, K = last three dims of arg 1, d_v from K.
    QkFromFirstTwo,
    /// As above, d_v from arg 2 (V).
    QkvFromFirstThree,
    /// SGLang's paged ragged attention: Q = arg 2, H_KV = arg 3's second-to-last dim,
    /// d_v = arg 4's last dim.
    SglangRagged,
    /// `sglang::store_cache`.
    StoreCache,
}

/// The serving attention ops, by name (SGLang's profiler names carry a `_<n>` suffix).
pub(super) fn serving_model(name: &str) -> Option<Serving> {
    let name = normalized(name);
    match name {
        "vllm::unified_attention_with_output" | "aiter::mha_varlen_fwd" => {
            Some(Serving::QkFromFirstTwo)
        }
        "aiter::mha_batch_prefill" | "aiter::fmha_v3_varlen_fwd" => {
            Some(Serving::QkvFromFirstThree)
        }
        "sglang_profiler::attention_paged_attention_ragged" => Some(Serving::SglangRagged),
        "sglang::store_cache" => Some(Serving::StoreCache),
        _ => None,
    }
}

/// An op name with SGLang's profiler's `_<n>` suffix dropped (`…_ragged_100`).
pub(crate) fn normalized(name: &str) -> &str {
    if !name.starts_with("sglang_profiler::") {
        return name;
    }
    match name.rsplit_once('_') {
        Some((stem, digits))
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            stem
        }
        _ => name,
    }
}

fn last(shape: &[i64], back: usize) -> Result<f64, String> {
    shape
        .len()
        .checked_sub(back)
        .and_then(|i| shape.get(i))
        .filter(|&&v| v >= 0)
        .map(|&v| v as f64)
        .ok_or_else(|| {
            format!(
                "a shape of {} dimensions has no dimension −{back}",
                shape.len()
            )
        })
}

/// The cost, given the iteration's counts.
pub(super) fn cost(
    kind: Serving,
    args: &ParsedArgs,
    stats: Option<&IterationStats>,
) -> Result<OpCost, String> {
    if kind == Serving::StoreCache {
        return store_cache(args);
    }
    let stats = stats.ok_or(
        "no step annotation around it states the iteration's token counts (vLLM's \
         execute_…(sq…sk…) or SGLang's step[… c_sq=… g_sk=…])",
    )?;
    if stats.c_sq == 0.0 && stats.g_sq == 0.0 {
        return Err("the iteration has no query tokens".to_owned());
    }
    let (q_index, k_index) = match kind {
        Serving::SglangRagged => (2, 3),
        _ => (0, 1),
    };
    let q = args.shape(q_index)?;
    let k = args.shape(k_index)?;
    let (h_q, d_qk) = (last(q, 2)?, last(q, 1)?);
    let h_kv = last(k, 2)?;
    let d_v = match kind {
        Serving::QkFromFirstTwo => last(k, 1)?,
        Serving::QkvFromFirstThree => last(args.shape(2)?, 1)?,
        _ => last(args.shape(4)?, 1)?,
    };
    let dtype_q = args.dtype(q_index)?.to_owned();
    let dtype_kv = match kind {
        Serving::QkFromFirstTwo => args.dtype(1).ok().map(str::to_owned),
        _ => None,
    };
    let bpe_q = dtype::bytes_per_element(&dtype_q).map_or(2.0, f64::from);
    let bpe_kv = dtype_kv
        .as_deref()
        .and_then(dtype::bytes_per_element)
        .map_or(bpe_q, f64::from);
    let heads = Heads {
        n_q: last(q, 3).unwrap_or(0.0),
        h_q,
        h_kv,
        d_qk,
        d_v,
    };
    let (flops, bytes) = heads.cost(stats, (bpe_q, bpe_kv));
    Ok(OpCost {
        family: Family::Attention,
        flops,
        bytes: Some(bytes),
        spec: ComputeSpec {
            unit: Unit::Matrix,
            precision: dtype::precision(&dtype_q),
        },
        params: heads.params(stats, dtype_q),
    })
}

/// Query tokens of the batch's tensor, heads and head sizes.
struct Heads {
    n_q: f64,
    h_q: f64,
    h_kv: f64,
    d_qk: f64,
    d_v: f64,
}

impl Heads {
    /// FLOPs and bytes, with the query's and the cache's bytes per element.
    fn cost(&self, s: &IterationStats, (bpe_q, bpe_kv): (f64, f64)) -> (f64, f64) {
        let Heads {
            h_q,
            h_kv,
            d_qk,
            d_v,
            ..
        } = *self;
        let flops = h_q
            * (2.0 * s.c_sqsk * d_qk + 2.0 * s.c_sqsk * d_v - s.c_sqsq * d_qk - s.c_sqsq * d_v)
            + h_q * (2.0 * s.g_sqsk * d_qk + 2.0 * s.g_sqsk * d_v);
        let bytes = (s.c_sq + s.g_sq) * (h_q * d_qk + h_q * d_v + h_kv * d_qk + h_kv * d_v) * bpe_q
            + ((s.c_sk - s.c_sq) + (s.g_sk - s.g_sq)) * h_kv * (d_qk + d_v) * bpe_kv;
        (flops, bytes)
    }

    fn params(&self, s: &IterationStats, dtype_q: String) -> Vec<(&'static str, String)> {
        let number = |v: f64| format!("{v}");
        vec![
            ("N_Q", number(self.n_q)),
            ("H_Q", number(self.h_q)),
            ("N_KV", number(s.c_sk + s.g_sk)),
            ("H_KV", number(self.h_kv)),
            ("d_h_qk", number(self.d_qk)),
            ("d_h_v", number(self.d_v)),
            ("c_sq", number(s.c_sq)),
            ("c_sk", number(s.c_sk)),
            ("c_sqsq", number(s.c_sqsq)),
            ("c_sqsk", number(s.c_sqsk)),
            ("g_sq", number(s.g_sq)),
            ("g_sk", number(s.g_sk)),
            ("g_sqsq", number(s.g_sqsq)),
            ("g_sqsk", number(s.g_sqsk)),
            ("dtype_Q", dtype_q),
        ]
    }
}

fn store_cache(args: &ParsedArgs) -> Result<OpCost, String> {
    let shape = args.shape(0)?;
    if shape.iter().any(|&d| d < 0) {
        return Err("a negative dimension".to_owned());
    }
    let elements: f64 = shape.iter().map(|&d| d as f64).product();
    let dtype = args.dtype(0)?.to_owned();
    let bpe = dtype::bytes_per_element(&dtype).map_or(2.0, f64::from);
    Ok(OpCost {
        family: Family::Attention,
        flops: 0.0,
        bytes: Some(4.0 * elements * bpe),
        spec: ComputeSpec {
            unit: Unit::Vector,
            precision: dtype::precision(&dtype),
        },
        params: vec![
            ("op_shape", format!("{shape:?}")),
            ("nelems", format!("{elements}")),
            ("dtype", dtype),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::efficiency::args;
    use stepscope_model::OpArgs;

    fn parsed(dims: &str, types: &str) -> ParsedArgs {
        args::parse(OpArgs {
            input_dims: Some(dims),
            input_types: Some(types),
            ..OpArgs::default()
        })
        .expect("parses")
    }

    /// SGLang decode, 36 layers of Qwen3-8B at batch 32: TraceLens's row has 0.53714944
    /// GFLOPS and 128.56640625 MB (its capture trace's shapes, the replay's annotation).
    #[test]
    fn sglang_paged_decode_attention_is_costed_by_its_iteration() {
        let args = parsed(
            "[[32, 32, 128], [10905190400], [32, 32, 128], [835874, 1, 8, 128], [835874, 1, 8, 128], [33], [20971520], [4096], [], [1], [1], []]",
            r#"["c10::BFloat16", "unsigned char", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "int", "int", "int", "", "float", "float", ""]"#,
        );
        let stats = IterationStats {
            g_sq: 32.0,
            g_sk: 32785.0,
            g_sqsq: 32.0,
            g_sqsk: 32785.0,
            ..IterationStats::default()
        };
        let kind = serving_model("sglang_profiler::attention_paged_attention_ragged_100").unwrap();
        let cost = cost(kind, &args, Some(&stats)).unwrap();
        assert_eq!(cost.flops, 537_149_440.0);
        assert_eq!(cost.bytes, Some(134_811_648.0));
        assert_eq!(cost.spec.to_string(), "matrix_bf16");
        let unfit = super::cost(kind, &args, None).unwrap_err();
        assert!(unfit.contains("no step annotation"), "{unfit}");
    }

    /// SGLang prefill through aiter's batch prefill: c_sq = c_sk = 15360 tokens of 15
    /// sequences of 1024: 128.84901888 GFLOPS and 300 MB, as TraceLens's row.
    #[test]
    fn prefill_is_causal_within_each_chunk() {
        let args = parsed(
            "[[15360, 32, 128], [15360, 8, 128], [15360, 8, 128]]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]"#,
        );
        let stats = IterationStats {
            c_sq: 15360.0,
            c_sk: 15360.0,
            c_sqsq: 15_728_640.0,
            c_sqsk: 15_728_640.0,
            ..IterationStats::default()
        };
        let kind = serving_model("aiter::mha_batch_prefill").unwrap();
        let cost = cost(kind, &args, Some(&stats)).unwrap();
        assert_eq!(cost.flops, 128_849_018_880.0);
        assert_eq!(cost.bytes, Some(300.0 * 1024.0 * 1024.0));
    }

    #[test]
    fn the_kv_store_moves_four_elements_per_key_element() {
        let args = parsed(
            "[[32, 1024], [32, 1024]]",
            r#"["c10::BFloat16", "c10::BFloat16"]"#,
        );
        let cost = cost(Serving::StoreCache, &args, None).unwrap();
        assert_eq!(cost.flops, 0.0);
        assert_eq!(cost.bytes, Some(262_144.0));
    }

    #[test]
    fn only_sglang_profiler_names_lose_their_number() {
        assert_eq!(
            normalized("sglang_profiler::attention_paged_attention_ragged_100"),
            "sglang_profiler::attention_paged_attention_ragged"
        );
        assert_eq!(normalized("aten::_foo_2"), "aten::_foo_2");
        assert_eq!(normalized("sglang_profiler::x_"), "sglang_profiler::x_");
    }
}
