//! Matrix multiplies, as TraceLens (AMD-AGI/TraceLens, `PerfModel/perf_model.py` class
//! `GEMM` and its subclasses; `PerfModel/extensions/perf_model_extensions.py` for the aiter
//! and vLLM GEMMs) models them. For `C[M, N] = A[M, K] · B[K, N] (+ bias)`:
//!
//! ```text
//! FLOPs = 2·M·N·K + (M·N if bias)
//! bytes = M·K·bpe_A + K·N·bpe_B + M·N·bpe_out + (N if bias)·bpe_bias
//!         (None if a bpe is unknown)
//! ```
//!
//! `aten::bmm` and `aten::baddbmm` multiply both by the batch `B`. Which arguments give M,
//! N, K and which dtypes give the bpes depends on the op (TraceLens's table):
//!
//! - `aten::mm`: A = `dims[0]`, B = `dims[1]`; every bpe from `types[0]`. `aten::addmm`: A =
//!   `dims[1]`, B = `dims[2]`, bpe from `types[1]`, bias always (TraceLens quirk: the bias counts
//!   as N elements even when it is a full `[M, N]` tensor).
//! - `aten::_scaled_mm` (and `trtllm::cublas_scaled_mm`, `bitsandbytes::int8_linear_matmul`,
//!   mapped to the same TraceLens class): like mm, bias when there are exactly 3 arguments
//!   (TraceLens quirk: `_scaled_mm` always has more, so never), both dtypes must be known,
//!   and the output is 2 bytes for 1-byte inputs (FP8 → FP16/BF16), else the input size.
//! - `aiter::gemm_a16w16` and the others with the weight as `[N, K]`: M, K = `dims[0]`,
//!   N = `dims[1][0]`; `dtype_A_B` is (`types[0]`, `types[1]`, output dtype), the output dtype
//!   being `types[0]` (`gemm_a16w16`), `types[3]` or `c10::bfloat16` (`_atomic_`, flydsl),
//!   `types[2]` if known else `types[0]` (`_asm`), `types[2]` with a bias else `types[1]` (vLLM).
//!
//! `param: transpose` comes from the first launched kernel whose name TraceLens's
//! `kernel_name_parser.gemm_name_parser` parses: Tensile/hipBLASLt `C???_A???_B???` names
//! (`_Ailk_`/`_Alik_` → A not/transposed, `_Bljk_`/`_Bjlk_` → B not/transposed) and
//! `nvjet` names (the last `_` token's two letters, `T` = transposed). The precision is
//! that of `dtype_A_B[0]`.
//!
//! TraceLens has no model for `aten::linear` and `aten::matmul` (it models the `addmm`, `mm`
//! or `bmm` they call); these are this crate's own, with the same formulas:
//! `linear(x[..., K], W[N, K], bias[N]?)` is M = prod(`x[:-1]`) rows, bpe from `types[0]`;
//! `matmul(A[..., M, K], B[..., K, N])` broadcasts the leading dims into a batch `B` (a 1-D
//! operand is one row or column), FLOPs = 2·B·M·N·K and bytes = (elements of A + elements
//! of B + B·M·N)·bpe(`types[0]`), counting each operand once as stored.

use super::{Fit, Num, Py, bpe, broadcast, cells, dim, quant_gemm, spec};
use crate::passes::efficiency::args::ParsedArgs;
use crate::passes::efficiency::spec::{Family, OpCost, Unit};

/// The GEMM models, one per TraceLens class (plus linear and matmul).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gemm {
    /// `aten_mm`.
    Mm,
    /// `aten_addmm`.
    Addmm,
    /// `aten_scaled_mm`.
    ScaledMm,
    /// `aten_bmm`.
    Bmm,
    /// `aten_baddbmm`.
    Baddbmm,
    /// `gemm_a16w16`.
    A16w16,
    /// `gemm_a16w16_atomic_`.
    A16w16Atomic,
    /// `gemm_a16w16_asm`.
    A16w16Asm,
    /// `vllm_rocm_unquantized_gemm`.
    RocmUnquantized,
    /// `aten::linear` (no TraceLens model).
    Linear,
    /// `aten::matmul` (no TraceLens model).
    Matmul,
    /// `gemm_a8w8_blockscale` ([`super::quant_gemm`]).
    A8w8Blockscale,
    /// `gemm_afp4wfp4` ([`super::quant_gemm`]).
    Afp4wfp4,
    /// `aiter_gemm_a4w4` ([`super::quant_gemm`]).
    A4w4,
    /// `batched_gemm_a16wfp4` ([`super::quant_gemm`]).
    BatchedA16wfp4,
    /// `batched_gemm_a8w8` ([`super::quant_gemm`]).
    BatchedA8w8,
}

/// Op names and their models.
pub(super) const NAMES: &[(&str, Gemm)] = &[
    ("aten::mm", Gemm::Mm),
    ("aten::addmm", Gemm::Addmm),
    ("aten::_scaled_mm", Gemm::ScaledMm),
    ("trtllm::cublas_scaled_mm", Gemm::ScaledMm),
    ("bitsandbytes::int8_linear_matmul", Gemm::ScaledMm),
    ("aten::bmm", Gemm::Bmm),
    ("aten::baddbmm", Gemm::Baddbmm),
    ("aiter::gemm_a16w16", Gemm::A16w16),
    ("aiter::gemm_a16w16_atomic_", Gemm::A16w16Atomic),
    (
        "sglang_profiler::gemm_kernels_flydsl_hgemm",
        Gemm::A16w16Atomic,
    ),
    ("aiter::_gemm_a16w16_asm", Gemm::A16w16Asm),
    ("vllm::rocm_unquantized_gemm", Gemm::RocmUnquantized),
    ("aten::linear", Gemm::Linear),
    ("aten::matmul", Gemm::Matmul),
];

/// What one GEMM call computes, before `transpose` is added.
pub(super) struct Parsed<'a> {
    /// FLOPs.
    pub flops: Num,
    /// Bytes moved, `None` when a dtype size is unknown.
    pub bytes: Option<Num>,
    /// The dtype whose precision is the call's (`dtype_A_B[0]` for most).
    pub dtype_a: &'a str,
    /// The `param:` values, in TraceLens's order.
    pub params: Vec<(&'static str, Py)>,
}

/// The cost of one GEMM call.
pub(super) fn cost(kind: Gemm, args: &ParsedArgs, kernel_names: &[&str]) -> Fit<OpCost> {
    let transpose = transpose(kernel_names)?;
    let parsed = match kind {
        Gemm::Mm => mm(args, 0, false),
        Gemm::Addmm => mm(args, 1, true),
        Gemm::ScaledMm => scaled_mm(args),
        Gemm::Bmm => bmm(args, 0, false),
        Gemm::Baddbmm => bmm(args, 1, true),
        Gemm::A16w16 | Gemm::A16w16Atomic | Gemm::A16w16Asm | Gemm::RocmUnquantized => {
            weight_nk(kind, args)
        }
        Gemm::Linear => linear(args),
        Gemm::Matmul => matmul(args),
        Gemm::A8w8Blockscale
        | Gemm::Afp4wfp4
        | Gemm::A4w4
        | Gemm::BatchedA16wfp4
        | Gemm::BatchedA8w8 => quant_gemm::parse(kind, args),
    }?;
    let mut params = parsed.params;
    params.extend(transpose.map(|t| ("transpose", t)));
    Ok(OpCost {
        family: Family::Gemm,
        flops: parsed.flops.to_f64(),
        bytes: parsed.bytes.map(Num::to_f64),
        spec: spec(Unit::Matrix, Some(parsed.dtype_a)),
        params: cells(params),
    })
}

/// `GEMM.flops_func`.
pub(super) fn gemm_flops(m: i64, n: i64, k: i64, bias: bool) -> Num {
    let (m, n, k) = (Num::from(m), Num::from(n), Num::from(k));
    let bias = if bias { m * n } else { Num::Int(0) };
    Num::Int(2) * m * n * k + bias
}

/// `GEMM.bytes_func`; the bpes are A, B, bias, output.
pub(super) fn gemm_bytes(
    m: i64,
    n: i64,
    k: i64,
    bias: bool,
    bpes: [Option<Num>; 4],
) -> Option<Num> {
    let [a, b, bias_bpe, out] = bpes;
    let (m, n, k) = (Num::from(m), Num::from(n), Num::from(k));
    let bias_elems = if bias { n } else { Num::Int(0) };
    Some(m * k * a? + k * n * b? + m * n * out? + bias_elems * bias_bpe?)
}

/// The `M, N, K, bias, stride_A, stride_B, dtype_A_B` parameters of the aten GEMMs.
fn aten_params(
    args: &ParsedArgs,
    first: usize,
    mnk: [i64; 3],
    bias: bool,
) -> Fit<Vec<(&'static str, Py)>> {
    let dtypes = [Some(args.dtype(first)?), Some(args.dtype(first + 1)?)];
    Ok(vec![
        ("M", Py::int(mnk[0])),
        ("N", Py::int(mnk[1])),
        ("K", Py::int(mnk[2])),
        ("bias", Py::Bool(bias)),
        ("stride_A", Py::strides(args.stride(first)?)),
        ("stride_B", Py::strides(args.stride(first + 1)?)),
        ("dtype_A_B", Py::dtypes(&dtypes)),
    ])
}

/// `aten::mm` (`first` = 0) and `aten::addmm` (`first` = 1, with bias).
fn mm(args: &ParsedArgs, first: usize, bias: bool) -> Fit<Parsed<'_>> {
    let (a, b) = (args.shape(first)?, args.shape(first + 1)?);
    let (m, k, n) = (dim(a, 0)?, dim(a, 1)?, dim(b, 1)?);
    let mut params = aten_params(args, first, [m, n, k], bias)?;
    params.push(("B", Py::int(1)));
    let dtype_a = args.dtype(first)?;
    Ok(Parsed {
        flops: gemm_flops(m, n, k, bias),
        bytes: gemm_bytes(m, n, k, bias, [bpe(dtype_a); 4]),
        dtype_a,
        params,
    })
}

/// `aten::bmm` (`first` = 0) and `aten::baddbmm` (`first` = 1, with bias): A must be
/// `[B, M, K]` and B `[B, K, N]` (TraceLens unpacks them).
fn bmm(args: &ParsedArgs, first: usize, bias: bool) -> Fit<Parsed<'_>> {
    let (&[batch, m, k], &[_, _, n]) = (args.shape(first)?, args.shape(first + 1)?) else {
        return Err("batched matrices must have 3 dimensions".to_owned());
    };
    let mut params = vec![("B", Py::int(batch))];
    params.extend(aten_params(args, first, [m, n, k], bias)?);
    let dtype_a = args.dtype(first)?;
    let per_batch = gemm_bytes(m, n, k, bias, [bpe(dtype_a); 4]);
    Ok(Parsed {
        flops: Num::from(batch) * gemm_flops(m, n, k, bias),
        bytes: per_batch.map(|bytes| Num::from(batch) * bytes),
        dtype_a,
        params,
    })
}

/// `aten::_scaled_mm`.
fn scaled_mm(args: &ParsedArgs) -> Fit<Parsed<'_>> {
    let (a, b) = (args.shape(0)?, args.shape(1)?);
    let (m, k, n) = (dim(a, 0)?, dim(a, 1)?, dim(b, 1)?);
    let bias = args.dims.len() == 3;
    let mut params = aten_params(args, 0, [m, n, k], bias)?;
    params.push(("B", Py::int(1)));
    let dtype_a = args.dtype(0)?;
    let (Some(bpe_a), Some(_)) = (bpe(dtype_a), bpe(args.dtype(1)?)) else {
        return Err("the dtypes of A and B must have known sizes".to_owned());
    };
    let out = match bpe_a {
        Num::Int(1) => Some(Num::Int(2)),
        Num::Int(2 | 4) => Some(bpe_a),
        _ => None,
    };
    Ok(Parsed {
        flops: gemm_flops(m, n, k, bias),
        bytes: gemm_bytes(m, n, k, bias, [Some(bpe_a), Some(bpe_a), Some(bpe_a), out]),
        dtype_a,
        params,
    })
}

/// The aiter and vLLM GEMMs: `X[M, K] · W[N, K]ᵀ`.
fn weight_nk(kind: Gemm, args: &ParsedArgs) -> Fit<Parsed<'_>> {
    let (x, w) = (args.shape(0)?, args.shape(1)?);
    let (m, k, n) = (dim(x, 0)?, dim(x, 1)?, dim(w, 0)?);
    let (t0, t1) = (args.dtype(0)?, args.dtype(1)?);
    let has_bias = args.has_tensor(2);
    let third = args.types.get(2).map(String::as_str);
    let (bias, out) = match kind {
        Gemm::A16w16 => (has_bias, t0),
        Gemm::A16w16Atomic => (
            false,
            args.types.get(3).map_or("c10::bfloat16", String::as_str),
        ),
        Gemm::A16w16Asm => (false, third.filter(|t| bpe(t).is_some()).unwrap_or(t0)),
        _ => (has_bias, third.unwrap_or("")),
    };
    let bpe_out = if kind == Gemm::RocmUnquantized && !bias {
        bpe(t1)
    } else {
        bpe(out)
    };
    let dtypes = Py::dtypes(&[Some(t0), Some(t1), Some(out)]);
    let shape = [
        ("M", Py::int(m)),
        ("N", Py::int(n)),
        ("K", Py::int(k)),
        ("bias", Py::Bool(bias)),
    ];
    let params = if kind == Gemm::RocmUnquantized {
        let mut params = Vec::from(shape);
        params.extend([("dtype_A_B", dtypes), ("B", Py::int(1))]);
        params
    } else {
        let mut params = vec![("B", Py::int(1))];
        params.extend(shape);
        params.push(("dtype_A_B", dtypes));
        params
    };
    Ok(Parsed {
        flops: gemm_flops(m, n, k, bias),
        bytes: gemm_bytes(m, n, k, bias, [bpe(t0), bpe(t1), bpe_out, bpe_out]),
        dtype_a: t0,
        params,
    })
}

/// `aten::linear(x[..., K], W[N, K], bias[N]?)`; TraceLens has no model for it.
fn linear(args: &ParsedArgs) -> Fit<Parsed<'_>> {
    let (x, w) = (args.shape(0)?, args.shape(1)?);
    let (Some((&k, rows)), &[n, k_w]) = (x.split_last(), w) else {
        return Err("linear needs an input and an [N, K] weight".to_owned());
    };
    if k != k_w {
        return Err(format!("input features {k} differ from the weight's {k_w}"));
    }
    let m = match Num::product(rows) {
        Num::Int(rows) => i64::try_from(rows).ok(),
        Num::Float(_) => None,
    }
    .ok_or_else(|| "the input has too many rows to count".to_owned())?;
    let bias = args.has_tensor(2);
    let mut params = aten_params(args, 0, [m, n, k], bias)?;
    params.push(("B", Py::int(1)));
    let dtype_a = args.dtype(0)?;
    Ok(Parsed {
        flops: gemm_flops(m, n, k, bias),
        bytes: gemm_bytes(m, n, k, bias, [bpe(dtype_a); 4]),
        dtype_a,
        params,
    })
}

/// `aten::matmul(A, B)` with broadcast batch dims; TraceLens has no model for it.
fn matmul(args: &ParsedArgs) -> Fit<Parsed<'_>> {
    let (a, b) = (args.shape(0)?, args.shape(1)?);
    let (a_batch, m, k) = match a {
        [] => return Err("matmul of a 0-d tensor".to_owned()),
        [k] => (&[][..], 1, *k),
        [batch @ .., m, k] => (batch, *m, *k),
    };
    let (b_batch, k_b, n) = match b {
        [] => return Err("matmul of a 0-d tensor".to_owned()),
        [k] => (&[][..], *k, 1),
        [batch @ .., k, n] => (batch, *k, *n),
    };
    if k != k_b {
        return Err(format!("inner dimensions {k} and {k_b} differ"));
    }
    let batch = Num::product(&broadcast(a_batch, b_batch)?);
    let batch_param = match batch {
        Num::Int(value) => Py::Num(Num::Int(value)),
        Num::Float(_) => return Err("the batch is too large to count".to_owned()),
    };
    let mut params = vec![("B", batch_param)];
    params.extend(aten_params(args, 0, [m, n, k], false)?);
    let dtype_a = args.dtype(0)?;
    let out = batch * Num::from(m) * Num::from(n);
    let elements = Num::product(a) + Num::product(b) + out;
    Ok(Parsed {
        flops: batch * gemm_flops(m, n, k, false),
        bytes: bpe(dtype_a).map(|bpe| elements * bpe),
        dtype_a,
        params,
    })
}

/// `param: transpose` from the first kernel name TraceLens's GEMM name parser reads.
fn transpose(kernel_names: &[&str]) -> Fit<Option<Py>> {
    for name in kernel_names {
        if is_tensile(name) {
            let flag = |no: &str, yes: &str| match (name.contains(no), name.contains(yes)) {
                (true, _) => Py::Bool(false),
                (false, true) => Py::Bool(true),
                _ => Py::None,
            };
            let flags = vec![flag("_Ailk_", "_Alik_"), flag("_Bljk_", "_Bjlk_")];
            return Ok(Some(Py::Tuple(flags)));
        }
        if name.starts_with("nvjet") {
            let last = name.rsplit('_').next().unwrap_or_default();
            let mut letters = last.chars().map(|c| Py::Bool(c == 'T'));
            let (Some(a), Some(b)) = (letters.next(), letters.next()) else {
                return Err(format!("nvjet kernel `{name}` has no transpose letters"));
            };
            return Ok(Some(Py::Tuple(vec![a, b])));
        }
    }
    Ok(None)
}

/// Whether a kernel name matches TraceLens's `^.*C[a-z]{3}_A[a-z]{3}_B[a-z]{3}.*$`
/// (`.` stops at a newline; `$` also matches before a final one).
fn is_tensile(name: &str) -> bool {
    let line = name.strip_suffix('\n').unwrap_or(name);
    let lower = |letters: &[u8]| letters.iter().all(u8::is_ascii_lowercase);
    !line.contains('\n')
        && line.as_bytes().windows(14).any(|w| {
            w[0] == b'C'
                && lower(&w[1..4])
                && w[4..6] == *b"_A"
                && lower(&w[6..9])
                && w[9..11] == *b"_B"
                && lower(&w[11..14])
        })
}

#[cfg(test)]
mod tests {
    use super::super::cost as model_cost;
    use super::super::test_support::{MIB, cost_with as cost};
    use crate::passes::efficiency::args::{Dims, ParsedArgs};
    use crate::passes::efficiency::spec::{Modelled, OpCost, Precision};

    const TENSILE: &str = "Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT64x16x64_MI16x16x1";

    fn args(dims: &[&[i64]], types: &[&str], strides: &[&[i64]]) -> ParsedArgs {
        ParsedArgs {
            dims: dims.iter().map(|d| Dims::Shape(d.to_vec())).collect(),
            types: types.iter().map(|t| t.to_string()).collect(),
            strides: strides.iter().map(|s| Dims::Shape(s.to_vec())).collect(),
            concrete: Vec::new(),
        }
    }

    fn param<'a>(cost: &'a OpCost, name: &str) -> &'a str {
        let found = cost.params.iter().find(|(key, _)| *key == name);
        found.map(|(_, value)| value.as_str()).unwrap()
    }

    /// h100 Qwen `GEMM.csv`, the worked row of the notes' section 8.
    #[test]
    fn addmm_counts_an_n_element_bias() {
        let bf16 = "c10::BFloat16";
        let a = args(
            &[&[1024], &[8944, 1024], &[1024, 1024], &[], &[]],
            &[bf16, bf16, bf16, "Scalar", "Scalar"],
            &[&[1], &[1024, 1], &[1, 1024], &[], &[]],
        );
        let c = cost("aten::addmm", &a, &[]);
        assert_eq!(c.flops / 1e9, 18.766086144);
        assert_eq!(c.bytes.unwrap() / MIB, 36.939453125);
        assert_eq!(c.spec.precision, Some(Precision::Bf16));
        let keys: Vec<_> = c.params.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            keys,
            [
                "M",
                "N",
                "K",
                "bias",
                "stride_A",
                "stride_B",
                "dtype_A_B",
                "B"
            ]
        );
        assert_eq!(param(&c, "stride_B"), "(1, 1024)");
        assert_eq!(param(&c, "dtype_A_B"), "('c10::BFloat16', 'c10::BFloat16')");
        assert_eq!(param(&c, "bias"), "True");
    }

    /// mi300 Qwen `GEMM.csv`: the same shapes with a Tensile kernel give `transpose`.
    #[test]
    fn mm_reads_transpose_from_the_first_parsable_kernel() {
        let bf16 = "c10::BFloat16";
        let a = args(
            &[&[8944, 1024], &[1024, 2816]],
            &[bf16, bf16],
            &[&[1024, 1], &[1, 1024]],
        );
        let c = cost(
            "aten::mm",
            &a,
            &["Memset (Device)", TENSILE, "nvjet_tst_NN"],
        );
        assert_eq!(c.flops / 1e9, 51.581550592);
        assert_eq!(c.bytes.unwrap() / MIB, 71.0078125);
        assert_eq!(param(&c, "transpose"), "(True, False)");
        let cuda = cost("aten::mm", &a, &["nvjet_tst_64x8_64x16_4x1_v_bz_TNT"]);
        assert_eq!(param(&cuda, "transpose"), "(True, False)");
        assert!(
            cost("aten::mm", &a, &["sm90_xmma_gemm"])
                .params
                .iter()
                .all(|(k, _)| *k != "transpose")
        );
        assert!(matches!(
            model_cost("aten::mm", &a, &["nvjet_x"]),
            Modelled::Unfit(_)
        ));
    }

    /// mi300 owlv2 `GEMM.csv`: `aten::bmm` 16 × (5185×64 · 64×5185).
    #[test]
    fn bmm_scales_by_the_batch() {
        let bf16 = "c10::BFloat16";
        let a = args(&[&[16, 5185, 64], &[16, 64, 5185]], &[bf16, bf16], &[]);
        let c = cost("aten::bmm", &a, &[]);
        assert_eq!(c.flops / 1e9, 55.0588928);
        assert_eq!(c.bytes.unwrap() / MIB, 840.6953430175781);
        assert_eq!(c.params[0], ("B", "16".to_owned()));
        assert_eq!(param(&c, "stride_A"), "", "no strides recorded: None");
        let flat = args(&[&[5185, 64], &[64, 5185]], &[bf16, bf16], &[]);
        assert!(matches!(
            model_cost("aten::bmm", &flat, &[]),
            Modelled::Unfit(_)
        ));
    }

    /// Hand-computed: 2 × (3×4 · 4×5) + bias, float.
    #[test]
    fn baddbmm_adds_the_bias_per_batch() {
        let f = "float";
        let a = args(
            &[&[2, 3, 5], &[2, 3, 4], &[2, 4, 5], &[], &[]],
            &[f, f, f, "Scalar", "Scalar"],
            &[],
        );
        let c = cost("aten::baddbmm", &a, &[]);
        assert_eq!(c.flops, (2 * (2 * 3 * 5 * 4 + 3 * 5)) as f64);
        assert_eq!(c.bytes, Some((2 * (3 * 4 + 4 * 5 + 3 * 5 + 5) * 4) as f64));
        assert_eq!(c.spec.precision, Some(Precision::Fp32));
    }

    /// sglang_decode `GEMM.csv`.
    #[test]
    fn gemm_a16w16_reads_the_weight_as_n_by_k() {
        let bf16 = "c10::BFloat16";
        let a = args(
            &[&[32, 4096], &[24576, 4096], &[], &[], &[], &[], &[]],
            &[bf16, bf16, "", "Scalar", "", "", ""],
            &[],
        );
        let c = cost("aiter::gemm_a16w16", &a, &[TENSILE]);
        assert_eq!(c.flops / 1e9, 6.442450944);
        assert_eq!(c.bytes.unwrap() / MIB, 193.75);
        let keys: Vec<_> = c.params.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["B", "M", "N", "K", "bias", "dtype_A_B", "transpose"]);
        assert_eq!(
            param(&c, "dtype_A_B"),
            "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16')"
        );
    }

    /// vllm_decode_full `GEMM.csv`: with and without bias.
    #[test]
    fn rocm_unquantized_gemm_takes_the_output_dtype_from_the_bias() {
        let bf16 = "c10::BFloat16";
        let biased = args(
            &[&[32, 2880], &[5120, 2880], &[5120]],
            &[bf16, bf16, bf16],
            &[],
        );
        let c = cost("vllm::rocm_unquantized_gemm", &biased, &[]);
        assert_eq!(c.flops / 1e9, 0.94388224);
        assert_eq!(c.bytes.unwrap() / MIB, 28.623046875);
        let plain = args(&[&[32, 2880], &[201088, 2880], &[]], &[bf16, bf16, ""], &[]);
        let c = cost("vllm::rocm_unquantized_gemm", &plain, &[]);
        assert_eq!(c.flops / 1e9, 37.06454016);
        assert_eq!(c.bytes.unwrap() / MIB, 1117.05859375);
        assert_eq!(
            param(&c, "dtype_A_B"),
            "('c10::BFloat16', 'c10::BFloat16', '')"
        );
        assert_eq!(c.params[5].0, "B");
    }

    #[test]
    fn scaled_mm_writes_fp8_results_as_two_bytes() {
        let fp8 = "c10::Float8_e4m3fnuz";
        let a = args(
            &[&[64, 128], &[128, 32], &[], &[]],
            &[fp8, fp8, "float", "float"],
            &[],
        );
        let c = cost("aten::_scaled_mm", &a, &[]);
        assert_eq!(c.bytes, Some((64 * 128 + 128 * 32 + 64 * 32 * 2) as f64));
        assert_eq!(c.spec.precision, Some(Precision::Fp8));
        let unknown = args(&[&[64, 128], &[128, 32]], &["bool", "bool"], &[]);
        assert!(matches!(
            model_cost("aten::_scaled_mm", &unknown, &[]),
            Modelled::Unfit(_)
        ));
    }

    #[test]
    fn linear_and_matmul_flatten_and_broadcast() {
        let bf16 = "c10::BFloat16";
        let a = args(&[&[4, 8, 16], &[32, 16], &[32]], &[bf16, bf16, bf16], &[]);
        let c = cost("aten::linear", &a, &[]);
        assert_eq!(c.flops, (2 * 32 * 32 * 16 + 32 * 32) as f64);
        assert_eq!(
            c.bytes,
            Some(((32 * 16 + 16 * 32 + 32 * 32 + 32) * 2) as f64)
        );
        let b = args(&[&[4, 8, 16], &[16, 32]], &[bf16, bf16], &[]);
        let c = cost("aten::matmul", &b, &[]);
        assert_eq!(c.flops, (4 * 2 * 8 * 32 * 16) as f64);
        assert_eq!(
            c.bytes,
            Some(((4 * 8 * 16 + 16 * 32 + 4 * 8 * 32) * 2) as f64)
        );
        let bad = args(&[&[4, 8, 16], &[15, 32]], &[bf16, bf16], &[]);
        assert!(matches!(
            model_cost("aten::matmul", &bad, &[]),
            Modelled::Unfit(_)
        ));
    }
}
