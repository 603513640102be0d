//! Rotary position embeddings applied in place to the queries and keys, as TraceLens
//! (AMD-AGI/TraceLens, `PerfModel/extensions/perf_model_extensions.py` class
//! `sgl_kernel_rotary_embedding`, base `FusedRoPE` in `PerfModel/perf_model.py`) models
//! SGLang's `sgl_kernel::rotary_embedding(positions, query, key, head_size, cos_sin_cache,
//! is_neox)`. Only the first `rot_dim` elements of each head rotate:
//!
//! ```text
//! n     = tokens · (q_heads + k_heads) · rot_dim
//!         tokens = q[0], q_heads = q[1] // head_size, k_heads = k[1] // head_size
//!         head_size = Concrete Inputs[3] when given, else q[-1]
//!         rot_dim   = cos_sin_cache[1] (dims[4]) when it has 2 dimensions, else head_size
//! FLOPs = 3·n                 (two multiplies and an add per rotated element)
//! bytes = 2·n·bpe(types[1])   (q and k read and written; 2 bytes when the size is unknown)
//! ```
//!
//! The precision is that of `types[1]` (the queries), on the vector unit.

use super::{Fit, Num, Py, bpe, cells, dim, spec};
use crate::passes::efficiency::args::ParsedArgs;
use crate::passes::efficiency::spec::{Family, OpCost, Unit};

/// Op names.
pub(super) const NAMES: &[&str] = &["sgl_kernel::rotary_embedding"];

/// The cost of one call.
pub(super) fn cost(args: &ParsedArgs) -> Fit<OpCost> {
    let (q, k) = (args.shape(1)?, args.shape(2)?);
    let last = q
        .last()
        .copied()
        .ok_or_else(|| "the query has no dimensions".to_owned())?;
    let head_size = match args.concrete.get(3).map(|c| c.trim()) {
        Some(text) if !text.is_empty() => text
            .parse::<i64>()
            .map_err(|_| format!("head_size `{text}` is not an int"))?,
        _ => last,
    };
    let rot_dim = match args.shape(4) {
        Ok(cache) if cache.len() > 1 => cache[1],
        _ => head_size,
    };
    let heads = |shape: &[i64]| Num::from(dim(shape, 1)?).floor_div(Num::from(head_size));
    let n = Num::from(dim(q, 0)?) * (heads(q)? + heads(k)?) * Num::from(rot_dim);
    let dtype = args.dtype(1)?;
    let element = bpe(dtype).unwrap_or(Num::Int(2));
    Ok(OpCost {
        family: Family::Rope,
        flops: (Num::Int(3) * n).to_f64(),
        bytes: Some((Num::Int(2) * n * element).to_f64()),
        spec: spec(Unit::Vector, Some(dtype)),
        params: cells(vec![("num_elements", Py::Num(n))]),
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{MIB, args, cost};
    use crate::passes::efficiency::spec::{Family, Modelled, Precision};

    /// sglang_decode `RoPE_fwd.csv`: Qwen3-8B at batch 32, 32 query and 8 key heads of 128.
    #[test]
    fn rotates_rot_dim_of_every_query_and_key_head() {
        let bf16 = "c10::BFloat16";
        let a = args(
            &[&[32], &[32, 4096], &[32, 1024], &[], &[40960, 128], &[]],
            &["long int", bf16, bf16, "Scalar", bf16, "Scalar"],
            &["", "", "", "128", "", "True"],
        );
        let c = cost("sgl_kernel::rotary_embedding", &a);
        assert_eq!(c.family, Family::Rope);
        assert_eq!(c.params, [("num_elements", "163840".to_owned())]);
        assert_eq!(c.flops / 1e9, 0.00049152);
        assert_eq!(c.bytes.unwrap() / MIB, 0.625);
        assert_eq!(c.spec.precision, Some(Precision::Bf16));
    }

    #[test]
    fn a_partial_rotation_and_missing_head_size() {
        // No head_size: q[-1] is taken as one head (TraceLens's fallback), so 1 query head
        // and 0 key heads; 64 of it rotate. An unknown dtype counts 2 bytes.
        let a = args(
            &[&[4], &[4, 256], &[4, 128], &[], &[100, 64]],
            &["long int", "bool", "bool"],
            &["", "", "", ""],
        );
        let c = cost("sgl_kernel::rotary_embedding", &a);
        assert_eq!(c.params[0].1, (4 * 64).to_string());
        assert_eq!(c.bytes, Some(2.0 * 256.0 * 2.0));
        for concrete in ["0", "x"] {
            let bad = args(
                &[&[4], &[4, 256], &[4, 128]],
                &["", "float", "float"],
                &["", "", "", concrete],
            );
            let modelled = super::super::cost("sgl_kernel::rotary_embedding", &bad, &[]);
            assert!(matches!(modelled, Modelled::Unfit(_)), "{concrete}");
        }
    }
}
