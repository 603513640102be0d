//! Quantised serving GEMMs (aiter's FP8/INT8 block-scale and MXFP4 GEMMs, as ROCm builds of
//! vLLM, SGLang and ATOM call them), as TraceLens (AMD-AGI/TraceLens,
//! `PerfModel/extensions/perf_model_extensions.py` classes `gemm_a8w8_blockscale`,
//! `gemm_afp4wfp4`, `batched_gemm_a16wfp4`, `batched_gemm_a8w8`; `PerfModel/perf_model.py`
//! classes `aiter_gemm_a4w4` and `hipblaslt_gemm_fp4`) models them. Every one computes
//! `Y[M, N] = X[M, K] · W[N, K]ᵀ` with the weight stored `[N, K]`:
//!
//! ```text
//! FLOPs = 2·B·M·N·K            (per-block scale multiplies are K/block times fewer: ignored)
//! bytes = B·(M·K·bpe_X + N·K·bpe_W + M·N·bpe_out)
//! ```
//!
//! - **a8w8 block-scale** (`aiter::gemm_a8w8_blockscale_*`, `gemm_a8w8_ck`, the
//!   `bpreshuffle` variants, `flatmm`/`gfx950` assembly, vLLM's and SGLang's wrappers):
//!   X = `dims[0]` `[M, K]`, W = `dims[1]` `[N, K]`, bpes from `types[0]` and `types[1]`, the
//!   output BF16 (the profiler records inputs only); the scale tensors are not counted. The
//!   block sizes are read back from the scale shapes: `block_k = ⌈K / x_scale[-1]⌉`,
//!   `block_n = ⌈N / w_scale[0]⌉`. The precision is that of X (FP8 for the float8 types; an
//!   INT8 `signed char` has none, so no compute roof, as in TraceLens).
//! - **MXFP4** `aiter::gemm_afp4wfp4_`: X and W are packed two FP4 values to a byte, so
//!   K = 2·`dims[0][1]` and each operand element counts half a byte; output BF16; FP4 roof.
//! - **MXFP4** `aiter::gemm_a4w4` and its leaf `aiter::_gemm_a4w4_asm`: as above, but the
//!   packed operands count `K/2` bytes per row at their dtype's size, and the E8M0 scales
//!   (one per 32 elements of K, at their dtype's size or 1) are counted; output 2 bytes.
//!   Both operand dtypes must have known sizes (TraceLens asserts it).
//! - **Batched** `aiter::batched_gemm_a16wfp4_`: X `[B, M, K]` at its dtype, W `[B, N, K/2]`
//!   MXFP4 (half a byte per element), output BF16; FP4 roof. SGLang's
//!   `batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant`: W `[B, N, K]`
//!   at its dtype, X `[B, M, K]` or `[M, B, K]`; the precision is W's.

use super::gemm::{Gemm, Parsed, gemm_bytes, gemm_flops};
use super::{Fit, Num, Py, bpe, dim};
use crate::passes::efficiency::args::{Dims, ParsedArgs};

/// The output dtype these kernels write (the profiler records no output type).
const BF16: &str = "c10::bfloat16";

/// MXFP4's scale group: one E8M0 scale per 32 elements of K.
const MXFP4_BLOCK: i64 = 32;

/// Op names and their models.
pub(super) const NAMES: &[(&str, Gemm)] = &[
    (
        "sglang_profiler::fp8_utils_gemm_a8w8_blockscale",
        Gemm::A8w8Blockscale,
    ),
    (
        "sglang_profiler::gemm_a8w8_blockscale_gemm_a8w8_blockscale",
        Gemm::A8w8Blockscale,
    ),
    (
        "vllm::rocm_aiter_triton_gemm_a8w8_blockscale",
        Gemm::A8w8Blockscale,
    ),
    ("aiter::gemm_a8w8_blockscale_ck", Gemm::A8w8Blockscale),
    ("aiter::gemm_a8w8_blockscale_cktile", Gemm::A8w8Blockscale),
    (
        "aiter::gemm_a8w8_blockscale_bpreshuffle_ck",
        Gemm::A8w8Blockscale,
    ),
    (
        "aiter::gemm_a8w8_blockscale_bpreshuffle_cktile",
        Gemm::A8w8Blockscale,
    ),
    ("aiter::flatmm_a8w8_blockscale_asm", Gemm::A8w8Blockscale),
    ("aiter::gfx950_a8w8_blockscale_asm", Gemm::A8w8Blockscale),
    ("aiter::gemm_a8w8_ck", Gemm::A8w8Blockscale),
    ("aiter::gemm_a8w8_bpreshuffle_ck", Gemm::A8w8Blockscale),
    ("aiter::gemm_a8w8_bpreshuffle", Gemm::A8w8Blockscale),
    (
        "vllm::_rocm_aiter_preshuffled_per_token_w8a8_gemm",
        Gemm::A8w8Blockscale,
    ),
    (
        "aiter::_gemm_a8w8_blockscale_bpreshuffle_asm",
        Gemm::A8w8Blockscale,
    ),
    ("aiter::gemm_afp4wfp4_", Gemm::Afp4wfp4),
    ("aiter::gemm_a4w4", Gemm::A4w4),
    ("aiter::_gemm_a4w4_asm", Gemm::A4w4),
    ("aiter::batched_gemm_a16wfp4_", Gemm::BatchedA16wfp4),
    (
        "sglang_profiler::batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant_batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
        Gemm::BatchedA8w8,
    ),
];

/// What one quantised GEMM call computes, for the kinds in [`NAMES`].
pub(super) fn parse(kind: Gemm, args: &ParsedArgs) -> Fit<Parsed<'_>> {
    match kind {
        Gemm::A8w8Blockscale => a8w8_blockscale(args),
        Gemm::Afp4wfp4 => afp4wfp4(args),
        Gemm::A4w4 => a4w4(args),
        Gemm::BatchedA16wfp4 => batched_a16wfp4(args),
        _ => batched_a8w8(args),
    }
}

/// Half a byte: one packed FP4 element.
fn half_byte() -> Num {
    Num::Float(0.5)
}

/// `X[M, K]` and `W[N, K]`: `(M, K, N)`.
fn x_w(args: &ParsedArgs) -> Fit<(i64, i64, i64)> {
    let (x, w) = (args.shape(0)?, args.shape(1)?);
    Ok((dim(x, 0)?, dim(x, 1)?, dim(w, 0)?))
}

/// A shape in `Input Dims` at `index`, empty when it is missing or not a shape.
fn shape_or_empty(args: &ParsedArgs, index: usize) -> &[i64] {
    match args.dims.get(index) {
        Some(Dims::Shape(shape)) => shape,
        _ => &[],
    }
}

/// Python's `-(-a // b)`: `⌈a / b⌉`; `None` when `b` is missing or 0.
fn ceil_div(a: i64, b: Option<&i64>) -> Fit<Py> {
    match b {
        Some(&b) if b != 0 => {
            let floor = Num::Int(0) - Num::from(a);
            Ok(Py::Num(Num::Int(0) - floor.floor_div(Num::from(b))?))
        }
        _ => Ok(Py::None),
    }
}

/// `gemm_a8w8_blockscale`.
fn a8w8_blockscale(args: &ParsedArgs) -> Fit<Parsed<'_>> {
    let (m, k, n) = x_w(args)?;
    let t0 = args.types.first().map_or("", String::as_str);
    let t1 = args.types.get(1).map_or("", String::as_str);
    let mut params = vec![
        ("B", Py::int(1)),
        ("M", Py::int(m)),
        ("N", Py::int(n)),
        ("K", Py::int(k)),
        ("bias", Py::Bool(false)),
        ("dtype_A_B", Py::dtypes(&[Some(t0), Some(t1), Some(BF16)])),
    ];
    if args.dims.len() > 3 {
        let (x_scale, w_scale) = (shape_or_empty(args, 2), shape_or_empty(args, 3));
        let scale_dtype = args.types.get(2).map_or("float32", String::as_str);
        params.extend([
            ("quant_scheme", Py::Str("a8w8_blockscale".to_owned())),
            ("quant_granularity", Py::Str("per_block".to_owned())),
            ("block_k", ceil_div(k, x_scale.last())?),
            ("block_n", ceil_div(n, w_scale.first())?),
            ("scale_dtype", Py::Str(scale_dtype.to_owned())),
        ]);
    }
    params.extend([
        ("output_shape", Py::ints(&[m, n])),
        ("output_dtype", Py::Str(BF16.to_owned())),
    ]);
    let bpes = [bpe(t0), bpe(t1), bpe(BF16), bpe(BF16)];
    Ok(Parsed {
        flops: gemm_flops(m, n, k, false),
        bytes: gemm_bytes(m, n, k, false, bpes),
        dtype_a: t0,
        params,
    })
}

/// `gemm_afp4wfp4`: X `[M, K/2]` and W `[N, K/2]`, two FP4 values per byte.
fn afp4wfp4(args: &ParsedArgs) -> Fit<Parsed<'_>> {
    let (m, k_packed, n) = x_w(args)?;
    let k = packed_k(k_packed)?;
    let dtypes = [Some(args.dtype(0)?), Some(args.dtype(1)?), Some(BF16)];
    let params = vec![
        ("B", Py::int(1)),
        ("M", Py::int(m)),
        ("N", Py::int(n)),
        ("K", Py::int(k)),
        ("bias", Py::Bool(false)),
        ("dtype_A_B", Py::dtypes(&dtypes)),
    ];
    let bpes = [Some(half_byte()), Some(half_byte()), bpe(BF16), bpe(BF16)];
    Ok(Parsed {
        flops: gemm_flops(m, n, k, false),
        bytes: gemm_bytes(m, n, k, false, bpes),
        dtype_a: "mxfp4",
        params,
    })
}

/// The logical K of an operand packed two to a byte.
fn packed_k(k_packed: i64) -> Fit<i64> {
    k_packed
        .checked_mul(2)
        .ok_or_else(|| "the shapes are too large to count".to_owned())
}

/// `aiter_gemm_a4w4`, with `hipblaslt_gemm_fp4`'s bytes (the E8M0 scales counted).
fn a4w4(args: &ParsedArgs) -> Fit<Parsed<'_>> {
    let (m, k_packed, n) = x_w(args)?;
    let k = packed_k(k_packed)?;
    let (t0, t1) = (args.dtype(0)?, args.dtype(1)?);
    let (Some(bpe_a), Some(bpe_b)) = (bpe(t0), bpe(t1)) else {
        return Err("the dtypes of A and B must have known sizes".to_owned());
    };
    let scale_a = args.types.get(2).map(String::as_str);
    let scale_b = args.types.get(3).map(String::as_str);
    let params = vec![
        ("M", Py::int(m)),
        ("N", Py::int(n)),
        ("K", Py::int(k)),
        ("bias", Py::Bool(false)),
        ("stride_A", Py::strides(args.stride(0).ok().flatten())),
        ("stride_B", Py::strides(args.stride(1).ok().flatten())),
        ("dtype_A_B", Py::dtypes(&[Some(t0), Some(t1)])),
        ("dtype_scaleA", Py::optional_str(scale_a)),
        ("dtype_scaleB", Py::optional_str(scale_b)),
        ("B", Py::int(1)),
    ];
    let (m, n, k) = (Num::from(m), Num::from(n), Num::from(k));
    let half_k = k.floor_div(Num::Int(2))?;
    let scales_per_row = (k + Num::from(MXFP4_BLOCK - 1)).floor_div(Num::from(MXFP4_BLOCK))?;
    let scale_bpe = |dtype: Option<&str>| dtype.and_then(bpe).unwrap_or(Num::Int(1));
    let bytes = m * half_k * bpe_a
        + n * half_k * bpe_b
        + m * scales_per_row * scale_bpe(scale_a)
        + n * scales_per_row * scale_bpe(scale_b)
        + m * n * Num::Int(2);
    Ok(Parsed {
        flops: Num::Int(2) * m * n * k,
        bytes: Some(bytes),
        dtype_a: t0,
        params,
    })
}

/// `batched_gemm_a16wfp4`: X `[B, M, K]`, W `[B, N, K/2]` in MXFP4.
fn batched_a16wfp4(args: &ParsedArgs) -> Fit<Parsed<'_>> {
    let (x, w) = (args.shape(0)?, args.shape(1)?);
    let (batch, m, k, n) = (dim(x, 0)?, dim(x, 1)?, dim(x, 2)?, dim(w, 1)?);
    let t0 = args.dtype(0)?;
    let dtypes = [Some(t0), Some(args.dtype(1)?), Some(BF16)];
    let bpes = [bpe(t0), Some(half_byte()), bpe(BF16), bpe(BF16)];
    Ok(batched(batch, [m, n, k], bpes, "mxfp4", &dtypes))
}

/// `batched_gemm_a8w8`: W `[B, N, K]`, X `[B, M, K]` or `[M, B, K]`.
fn batched_a8w8(args: &ParsedArgs) -> Fit<Parsed<'_>> {
    let (x, w) = (args.shape(0)?, args.shape(1)?);
    let (batch, n, k) = (dim(w, 0)?, dim(w, 1)?, dim(x, 2)?);
    let m = if dim(x, 0)? == batch {
        dim(x, 1)?
    } else {
        dim(x, 0)?
    };
    let (t0, t1) = (args.dtype(0)?, args.dtype(1)?);
    let bpes = [bpe(t0), bpe(t1), bpe(BF16), bpe(BF16)];
    Ok(batched(
        batch,
        [m, n, k],
        bpes,
        t1,
        &[Some(t0), Some(t1), Some(BF16)],
    ))
}

/// A batched call: `batch` times one `[M, N, K]` GEMM's FLOPs and bytes.
fn batched<'a>(
    batch: i64,
    [m, n, k]: [i64; 3],
    bpes: [Option<Num>; 4],
    precision_dtype: &'a str,
    dtypes: &[Option<&str>],
) -> Parsed<'a> {
    let per_batch = gemm_bytes(m, n, k, false, bpes);
    Parsed {
        flops: Num::from(batch) * gemm_flops(m, n, k, false),
        bytes: per_batch.map(|bytes| Num::from(batch) * bytes),
        dtype_a: precision_dtype,
        params: vec![
            ("B", Py::int(batch)),
            ("M", Py::int(m)),
            ("N", Py::int(n)),
            ("K", Py::int(k)),
            ("bias", Py::Bool(false)),
            ("dtype_A_B", Py::dtypes(dtypes)),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{args, cost};
    use crate::passes::efficiency::spec::{Modelled, Precision};

    fn param<'a>(cost: &'a crate::passes::efficiency::spec::OpCost, name: &str) -> &'a str {
        let found = cost.params.iter().find(|(key, _)| *key == name);
        found.map(|(_, value)| value.as_str()).unwrap()
    }

    /// DeepSeek-style FP8 block-scale projection: 128×128 blocks read from the scales.
    #[test]
    fn a8w8_blockscale_counts_int8_operands_and_a_bf16_output() {
        let fp8 = "c10::Float8_e4m3fnuz";
        let a = args(
            &[
                &[32, 7168],
                &[1536, 7168],
                &[32, 56],
                &[12, 56],
                &[32, 1536],
            ],
            &[fp8, fp8, "float", "float", "c10::BFloat16"],
            &[],
        );
        let c = cost("aiter::gemm_a8w8_blockscale_ck", &a);
        assert_eq!(c.flops, 704_643_072.0);
        assert_eq!(c.bytes, Some(229_376.0 + 11_010_048.0 + 98_304.0));
        assert_eq!(c.spec.precision, Some(Precision::Fp8));
        assert_eq!(param(&c, "block_k"), "128");
        assert_eq!(param(&c, "block_n"), "128");
        assert_eq!(param(&c, "output_shape"), "(32, 1536)");
        let wrapped = cost("vllm::rocm_aiter_triton_gemm_a8w8_blockscale", &a);
        assert_eq!(wrapped.bytes, c.bytes);
    }

    #[test]
    fn a8w8_without_scales_has_no_block_sizes_and_int8_has_no_roof() {
        let a = args(
            &[&[8, 256], &[512, 256]],
            &["signed char", "signed char"],
            &[],
        );
        let c = cost("aiter::gemm_a8w8_bpreshuffle", &a);
        assert_eq!(c.bytes, Some((8 * 256 + 512 * 256 + 8 * 512 * 2) as f64));
        assert_eq!(c.spec.precision, None);
        assert!(c.params.iter().all(|(key, _)| *key != "block_k"));
    }

    #[test]
    fn afp4wfp4_unpacks_k_and_counts_half_a_byte_per_operand_element() {
        let a = args(
            &[&[16, 3584], &[2048, 3584], &[16, 224], &[2048, 224]],
            &[
                "unsigned char",
                "unsigned char",
                "unsigned char",
                "unsigned char",
            ],
            &[],
        );
        let c = cost("aiter::gemm_afp4wfp4_", &a);
        assert_eq!(param(&c, "K"), "7168");
        assert_eq!(c.flops, 469_762_048.0);
        assert_eq!(c.bytes, Some(57_344.0 + 7_340_032.0 + 65_536.0));
        assert_eq!(c.spec.precision, Some(Precision::Fp4));
    }

    #[test]
    fn a4w4_counts_the_e8m0_scales() {
        let fp4 = "c10::Float4_e2m1fn_x2";
        let e8m0 = "c10::Float8_e8m0fnu";
        let a = args(
            &[
                &[64, 2048],
                &[4096, 2048],
                &[64, 128],
                &[4096, 128],
                &[64, 4096],
            ],
            &[fp4, fp4, e8m0, e8m0, "c10::BFloat16"],
            &[],
        );
        let c = cost("aiter::gemm_a4w4", &a);
        assert_eq!(c.flops, 2_147_483_648.0);
        let bytes = 131_072.0 + 8_388_608.0 + 8_192.0 + 524_288.0 + 524_288.0;
        assert_eq!(c.bytes, Some(bytes));
        assert_eq!(c.spec.precision, Some(Precision::Fp4));
        assert_eq!(cost("aiter::_gemm_a4w4_asm", &a).bytes, Some(bytes));
        let unknown = args(&[&[64, 2048], &[4096, 2048]], &["bool", fp4], &[]);
        let modelled = super::super::cost("aiter::gemm_a4w4", &unknown, &[]);
        assert!(matches!(modelled, Modelled::Unfit(ref why) if why.contains("known sizes")));
    }

    #[test]
    fn batched_gemms_multiply_by_the_batch() {
        let bf16 = "c10::BFloat16";
        let fp4 = args(
            &[&[16, 4, 512], &[16, 128, 256], &[16, 128, 16]],
            &[bf16, "unsigned char", "unsigned char"],
            &[],
        );
        let c = cost("aiter::batched_gemm_a16wfp4_", &fp4);
        assert_eq!(c.flops, 8_388_608.0);
        assert_eq!(c.bytes, Some(16.0 * (4096.0 + 32_768.0 + 1_024.0)));
        assert_eq!(c.spec.precision, Some(Precision::Fp4));

        let name = super::NAMES.last().unwrap().0;
        let int8 = args(
            &[&[4, 16, 512], &[16, 128, 512]],
            &[bf16, "signed char"],
            &[],
        );
        let c = cost(name, &int8);
        assert_eq!(param(&c, "M"), "4");
        assert_eq!(c.bytes, Some(16.0 * (4_096.0 + 65_536.0 + 1_024.0)));
        assert_eq!(c.spec.precision, None);
    }

    #[test]
    fn short_or_odd_argument_lists_are_unfit_not_guessed() {
        for dims in [
            &[][..],
            &[&[8, 256][..]][..],
            &[&[8][..], &[512, 256][..]][..],
        ] {
            let a = args(dims, &["c10::BFloat16"; 2], &[]);
            for (name, _) in super::NAMES {
                let modelled = super::super::cost(name, &a, &[]);
                assert!(matches!(modelled, Modelled::Unfit(_)), "{name} {dims:?}");
            }
        }
    }
}
