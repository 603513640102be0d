//! Normalizations, as TraceLens (AMD-AGI/TraceLens, `PerfModel/perf_model.py` classes
//! `Normalization`, `LayerNorm`, `GroupNorm`, `BatchNorm`, `InstanceNorm`, `RMSNorm`; and
//! `PerfModel/extensions/rmsnorm_perf_model_extensions.py` for the aiter RMSNorms, which
//! TraceLens reports in a sheet of their own, `RMSNorm`, and which here are normalizations
//! too) models them. With N = prod(op_shape) elements and C channels (the normalized size):
//!
//! ```text
//! layer / group / batch / instance norm:
//!   FLOPs = 3·C + (3·N if training) + 3·C + 2·N
//!   bytes = N·bpe + N·bpe + W·C·bpe
//!   W = 2 + (1 if affine) + (1 if affine and bias) + (2 if training)
//! RMS norm (affine, no bias, not training):
//!   FLOPs = (N / C)·(2·C + 2) + N·(2 if affine else 1)     (a float: true division)
//!   bytes = N·bpe + N·bpe + (C·bpe if affine)
//! add + RMS norm:           FLOPs = N + RMS;  bytes = 2·N·bpe + C·bpe + 2·N·bpe
//! RMS norm + dynamic quant: FLOPs = RMS + 2·N;  bytes = N·bpe + C·bpe + N·1 + (N // C)·4
//! ```
//!
//! `op_shape` is `dims[0]` and bpe comes from `types[0]`, except for the aiter ops with an
//! output argument first, which read the input at 1. C is prod of `Concrete Inputs[1]`
//! (layer norm, `aten::_fused_rms_norm`), `dims[0][1]` (group, batch, instance norm), or the
//! weight's length (aiter: `dims[1]`, `dims[2]`, `dims[4]` or `dims[3]`). An unknown dtype
//! size does not fit (TraceLens's `None * int` raises). The precision is that of the input
//! dtype.
//!
//! TraceLens quirks kept: `is_affine` and layer norm's `has_bias` test `dims[i] is not
//! None`, and an absent tensor is `[]`, so both are always true (given the argument
//! exists); layer and group norm always count as training; batch and instance norm take
//! training from `bool(Concrete Inputs[5])`, true for any non-empty text, `'False'` included.

use super::{Fit, Num, Py, bpe, cells, dim, int_sequence_literal, spec};
use crate::passes::efficiency::args::ParsedArgs;
use crate::passes::efficiency::spec::{Family, OpCost, Unit};

/// The normalization models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Norm {
    /// `LayerNorm`.
    Layer,
    /// `GroupNorm`.
    Group,
    /// `BatchNorm`.
    Batch,
    /// `InstanceNorm`.
    Instance,
    /// `aten::_fused_rms_norm`.
    FusedRms,
    /// An aiter RMSNorm reading its input at `input` and its weight at `weight`.
    AiterRms {
        /// The input's argument position.
        input: usize,
        /// The weight's argument position.
        weight: usize,
    },
    /// `aiter::rmsnorm2d_fwd_with_add_ck` and `aiter::add_rmsnorm`.
    AddRms,
    /// `aiter::rmsnorm2d_fwd_with_dynamicquant_ck`.
    DynamicQuantRms,
}

/// Op names and their models.
pub(super) const NAMES: &[(&str, Norm)] = &[
    ("aten::layer_norm", Norm::Layer),
    ("aten::native_layer_norm", Norm::Layer),
    ("aten::miopen_layer_norm", Norm::Layer),
    ("aten::cudnn_layer_norm", Norm::Layer),
    ("aten::group_norm", Norm::Group),
    ("aten::native_group_norm", Norm::Group),
    ("aten::miopen_group_norm", Norm::Group),
    ("aten::cudnn_group_norm", Norm::Group),
    ("aiter::_groupnorm_run", Norm::Group),
    ("aten::batch_norm", Norm::Batch),
    ("aten::native_batch_norm", Norm::Batch),
    ("aten::miopen_batch_norm", Norm::Batch),
    ("aten::cudnn_batch_norm", Norm::Batch),
    ("aten::instance_norm", Norm::Instance),
    ("aten::native_instance_norm", Norm::Instance),
    ("aten::miopen_instance_norm", Norm::Instance),
    ("aten::cudnn_instance_norm", Norm::Instance),
    ("aten::_fused_rms_norm", Norm::FusedRms),
    (
        "aiter::rms_norm",
        Norm::AiterRms {
            input: 0,
            weight: 1,
        },
    ),
    (
        "aiter::rmsnorm2d_fwd_ck",
        Norm::AiterRms {
            input: 0,
            weight: 1,
        },
    ),
    (
        "aiter::rmsnorm",
        Norm::AiterRms {
            input: 1,
            weight: 2,
        },
    ),
    ("aiter::rmsnorm2d_fwd_with_add_ck", Norm::AddRms),
    ("aiter::add_rmsnorm", Norm::AddRms),
    (
        "aiter::rmsnorm2d_fwd_with_dynamicquant_ck",
        Norm::DynamicQuantRms,
    ),
];

/// A call's `param_details`.
struct Details<'a> {
    /// `op_shape`: the input's shape.
    shape: &'a [i64],
    /// The input's dtype.
    dtype: &'a str,
    /// The input's strides.
    stride: Option<&'a [i64]>,
    /// `num_channels`: the size of the weight and the statistics.
    channels: Num,
    /// Whether a bias is read.
    has_bias: bool,
    /// Whether a weight is applied.
    is_affine: bool,
    /// Whether statistics are computed and the running ones written.
    is_training: bool,
}

/// The cost of one normalization call.
pub(super) fn cost(kind: Norm, args: &ParsedArgs) -> Fit<OpCost> {
    let details = details(kind, args)?;
    let dtype = details.dtype;
    let bpe = bpe(dtype).ok_or_else(|| format!("the size of dtype `{dtype}` is unknown"))?;
    let (n, c) = (Num::product(details.shape), details.channels);
    let (flops, bytes) = match kind {
        Norm::Layer | Norm::Group | Norm::Batch | Norm::Instance => (
            normalization_flops(&details, n),
            normalization_bytes(&details, n, bpe),
        ),
        Norm::FusedRms | Norm::AiterRms { .. } => {
            (rms_flops(&details, n)?, rms_bytes(&details, n, bpe))
        }
        Norm::AddRms => {
            let four = Num::Int(2) * n * bpe + c * bpe + Num::Int(2) * n * bpe;
            (n + rms_flops(&details, n)?, four)
        }
        Norm::DynamicQuantRms => {
            let scales = n.floor_div(c)? * Num::Int(4);
            (
                rms_flops(&details, n)? + Num::Int(2) * n,
                n * bpe + c * bpe + n + scales,
            )
        }
    };
    let params = vec![
        ("op_shape", Py::ints(details.shape)),
        ("dtype_in_out", Py::dtypes(&[Some(dtype), None])),
        ("stride_input", Py::strides(details.stride)),
        ("stride_output", Py::None),
        ("num_channels", Py::Num(c)),
        ("has_bias", Py::Bool(details.has_bias)),
        ("is_affine", Py::Bool(details.is_affine)),
        ("is_training", Py::Bool(details.is_training)),
    ];
    Ok(OpCost {
        family: Family::Normalization,
        flops: flops.to_f64(),
        bytes: Some(bytes.to_f64()),
        spec: spec(Unit::Vector, Some(dtype)),
        params: cells(params),
    })
}

/// The `param_details` each TraceLens class reads.
fn details(kind: Norm, args: &ParsedArgs) -> Fit<Details<'_>> {
    let input = match kind {
        Norm::AiterRms { input, .. } => input,
        Norm::AddRms | Norm::DynamicQuantRms => 1,
        _ => 0,
    };
    let shape = args.shape(input)?;
    // `dims[i] is not None`: true whenever argument i exists.
    let exists = |index: usize| {
        (index < args.dims.len())
            .then_some(true)
            .ok_or_else(|| format!("`Input Dims` has no argument {index}"))
    };
    let training_flag = || args.concrete(5).map(|text| !text.is_empty());
    let (channels, has_bias, is_affine, is_training) = match kind {
        Norm::Layer => (normalized_size(args)?, exists(3)?, exists(2)?, true),
        Norm::Group => (Num::from(dim(shape, 1)?), true, exists(2)?, true),
        Norm::Batch | Norm::Instance => (
            Num::from(dim(shape, 1)?),
            true,
            exists(2)?,
            training_flag()?,
        ),
        Norm::FusedRms => (normalized_size(args)?, false, exists(2)?, false),
        Norm::AiterRms { weight, .. } => (weight_length(args, weight)?, false, true, false),
        Norm::AddRms => (weight_length(args, 4)?, false, true, false),
        Norm::DynamicQuantRms => (weight_length(args, 3)?, false, true, false),
    };
    Ok(Details {
        shape,
        dtype: args.dtype(input)?,
        stride: args.stride(input)?,
        channels,
        has_bias,
        is_affine,
        is_training,
    })
}

/// `prod(parse_list(Concrete Inputs[1], int))`: the normalized shape's size.
fn normalized_size(args: &ParsedArgs) -> Fit<Num> {
    let shape = int_sequence_literal(args.concrete(1)?)?;
    Ok(Num::product(&shape))
}

/// The weight's length, `dims[index][0]`.
fn weight_length(args: &ParsedArgs, index: usize) -> Fit<Num> {
    Ok(Num::from(dim(args.shape(index)?, 0)?))
}

/// `Normalization.flops_func`.
fn normalization_flops(details: &Details<'_>, n: Num) -> Num {
    let three_c = Num::Int(3) * details.channels;
    let stats = if details.is_training {
        Num::Int(3) * n
    } else {
        Num::Int(0)
    };
    three_c + stats + three_c + Num::Int(2) * n
}

/// `Normalization.bytes_func`.
fn normalization_bytes(details: &Details<'_>, n: Num, bpe: Num) -> Num {
    let weights = 2
        + i64::from(details.is_affine)
        + i64::from(details.is_affine && details.has_bias)
        + 2 * i64::from(details.is_training);
    n * bpe + n * bpe + Num::from(weights) * details.channels * bpe
}

/// `RMSNorm.flops`.
fn rms_flops(details: &Details<'_>, n: Num) -> Fit<Num> {
    let c = details.channels;
    let rows = n.true_div(c)?;
    let scale = Num::Int(if details.is_affine { 2 } else { 1 });
    Ok(rows * (Num::Int(2) * c + Num::Int(2)) + n * scale)
}

/// `RMSNorm.bytes`.
fn rms_bytes(details: &Details<'_>, n: Num, bpe: Num) -> Num {
    let weight = if details.is_affine {
        details.channels * bpe
    } else {
        Num::Int(0)
    };
    n * bpe + n * bpe + weight
}

#[cfg(test)]
mod tests {
    use super::super::cost as model_cost;
    use super::super::test_support::{MIB, args, cost};

    use crate::passes::efficiency::spec::{Family, Modelled, Precision};

    const BF16: &str = "c10::BFloat16";

    /// mi300 owlv2 `Normalization.csv`: 6C + 5N FLOPs, 2N + 6C elements.
    #[test]
    fn layer_norm_counts_affine_training_statistics() {
        let types = [BF16, "ScalarList", BF16, BF16, "Scalar", "Scalar"];
        let concrete = ["", "[1024]", "", "", "1.0000000000000001e-05", "True"];
        let a = args(
            &[&[1, 5185, 1024], &[], &[1024], &[1024], &[], &[]],
            &types,
            &concrete,
        );
        let c = cost("aten::layer_norm", &a);
        assert_eq!(c.family, Family::Normalization);
        assert_eq!(c.flops / 1e9, 0.026553344);
        assert_eq!(c.bytes.unwrap() / MIB, 20.265625);
        assert_eq!(c.spec.precision, Some(Precision::Bf16));
        let rendered: Vec<String> = c.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            rendered.join(" "),
            "op_shape=(1, 5185, 1024) dtype_in_out=('c10::BFloat16', None) stride_input= \
             stride_output= num_channels=1024 has_bias=True is_affine=True is_training=True"
        );
    }

    /// xdit `Normalization_fwd.csv`: channels from `dims[0][1]`.
    #[test]
    fn group_norm_uses_the_channel_dim() {
        let types = [BF16, "Scalar", BF16, BF16, "Scalar"];
        let a = args(
            &[&[1, 128, 1024, 1024], &[], &[128], &[128], &[]],
            &types,
            &["", "32", "", "", ""],
        );
        let c = cost("aiter::_groupnorm_run", &a);
        assert_eq!(c.flops / 1e9, 0.671089408);
        assert_eq!(c.bytes.unwrap() / MIB, 512.00146484375);
    }

    /// Hand-computed: `bool('False')` is true, so batch norm counts as training.
    #[test]
    fn batch_norm_training_flag_is_any_text() {
        let dims: &[&[i64]] = &[&[2, 4, 3, 3], &[4], &[4], &[4], &[4], &[], &[], &[], &[]];
        let types = [
            "float", "float", "float", "float", "float", "Scalar", "Scalar", "Scalar", "Scalar",
        ];
        let concrete = ["", "", "", "", "", "False", "0.1", "1e-05", "True"];
        let c = cost("aten::batch_norm", &args(dims, &types, &concrete));
        assert_eq!(c.flops, (3 * 4 + 3 * 72 + 3 * 4 + 2 * 72) as f64);
        assert_eq!(c.bytes, Some((72 * 4 * 2 + 6 * 4 * 4) as f64));
        assert_eq!(c.params[7].1, "True");
    }

    /// sglang_decode and vllm_decode_full `RMSNorm_fwd.csv`.
    #[test]
    fn aiter_rms_norms_read_their_own_argument_layouts() {
        let rmsnorm = args(
            &[&[256, 128], &[256, 128], &[128], &[]],
            &[BF16, BF16, BF16, "Scalar"],
            &[],
        );
        let c = cost("aiter::rmsnorm", &rmsnorm);
        assert_eq!(c.flops / 1e9, 0.000131584);
        assert_eq!(c.bytes.unwrap() / MIB, 0.125244140625);
        let rms_norm = args(
            &[&[32, 2880], &[2880], &[], &[]],
            &[BF16, BF16, "Scalar", "Scalar"],
            &[],
        );
        let c = cost("aiter::rms_norm", &rms_norm);
        assert_eq!(c.flops / 1e9, 0.000368704);
        assert_eq!(c.bytes.unwrap() / MIB, 0.3570556640625);
        assert_eq!(c.params[5].1, "False", "has_bias");
    }

    /// sglang_decode `RMSNorm_fwd.csv`: the residual add reads and writes twice more.
    #[test]
    fn add_rmsnorm_adds_the_residual() {
        let dims: &[&[i64]] = &[
            &[32, 4096],
            &[32, 4096],
            &[32, 4096],
            &[32, 4096],
            &[4096],
            &[],
        ];
        let c = cost(
            "aiter::add_rmsnorm",
            &args(dims, &[BF16, BF16, BF16, BF16, BF16, "Scalar"], &[]),
        );
        assert_eq!(c.flops / 1e9, 0.000655424);
        assert_eq!(c.bytes.unwrap() / MIB, 1.0078125);
        assert_eq!(c.params[0].1, "(32, 4096)");
    }

    /// Hand-computed: an FP8 output and per-row FP32 scales; `_fused_rms_norm`.
    #[test]
    fn quantizing_and_fused_rms_norms() {
        let dims: &[&[i64]] = &[&[4, 7168], &[4, 7168], &[4, 1], &[7168], &[], &[]];
        let types = [
            "c10::Float8_e4m3fnuz",
            BF16,
            "float",
            BF16,
            "Scalar",
            "Scalar",
        ];
        let c = cost(
            "aiter::rmsnorm2d_fwd_with_dynamicquant_ck",
            &args(dims, &types, &[]),
        );
        assert_eq!(c.flops, (4 * (2 * 7168 + 2) + 2 * 28672 + 2 * 28672) as f64);
        assert_eq!(c.bytes, Some((28672 * 2 + 7168 * 2 + 28672 + 4 * 4) as f64));
        let fused = args(
            &[&[2, 8], &[], &[8], &[]],
            &[BF16, "ScalarList", BF16, "Scalar"],
            &["", "[8]", "", ""],
        );
        let c = cost("aten::_fused_rms_norm", &fused);
        assert_eq!((c.flops, c.bytes), (68.0, Some(80.0)));
        let no_weight = args(&[&[2, 8], &[8]], &["bool", "bool"], &[]);
        assert!(matches!(
            model_cost("aiter::rms_norm", &no_weight, &[]),
            Modelled::Unfit(_)
        ));
        let zero = args(&[&[2, 0], &[0]], &[BF16, BF16], &[]);
        assert!(matches!(
            model_cost("aiter::rms_norm", &zero, &[]),
            Modelled::Unfit(_)
        ));
    }
}
