//! Elementwise ops, as TraceLens (AMD-AGI/TraceLens, `PerfModel/perf_model.py` classes
//! `UnaryElementwise`, `aten_unary_elementwise`, `aten_replication_pad`,
//! `aten_upsample_nearest`, `BinaryElementwise`, `aten_binary_elementwise`; and
//! `PerfModel/extensions/perf_model_extensions.py` for the activation-and-multiply ops)
//! models them: one FLOP per output element, every operand read once and the output
//! written once.
//!
//! ```text
//! unary:   FLOPs = n = prod(dims[0]);  bytes = n·bpe_in + n·bpe_out
//!          bpe_in from types[0]; bpe_out from types[1] when argument 1 is a tensor
//!          (`copy_(dst, src)`: so "in" is the destination), else bpe_in
//! pad / upsample: FLOPs = prod(out);  bytes = prod(in)·bpe + prod(out)·bpe
//!          out = in grown by the Concrete Inputs[1] pads, innermost dim first (pad), or
//!          in[:2] + the Concrete Inputs[1] size list (upsample)
//! act-and-mul (out, input): FLOPs = c·n, c = 5 (SiLU), 8 (GELU), 10 (tanh GELU), n = prod(out);
//!          bytes = 2·n·bpe(types[1]) + n·bpe(types[0])
//! binary:  out = broadcast(dims[0], dims[1]);  FLOPs = prod(out)
//!          bytes = prod(dims[0])·bpe1 + prod(dims[1])·bpe2 + prod(out)·bpe_out
//!          bpe_out from types[2] when argument 2 is a tensor (an `out=`), else the larger
//!          of bpe1 and bpe2 when both operands are tensors, else bpe1
//! ```
//!
//! Unknown dtype sizes give no bytes for the unary and binary ops; for pad, upsample and
//! act-and-mul TraceLens raises (`None * int`) and drops the call, so these do not fit.
//! A Python-number operand has shape `[]`, hence 1 element of its type (TraceLens quirk:
//! `Scalar` counts 4 bytes, a `double` 8). An upsample given by scale factor (`''` size)
//! does not fit, as TraceLens's `literal_eval('')` fails. The precision is that of `types[0]`
//! (the unary input, the first binary operand).

use super::{Fit, Num, Py, bpe, broadcast, cells, int_sequence_literal, spec};
use crate::passes::efficiency::args::ParsedArgs;
use crate::passes::efficiency::spec::{Family, OpCost, Unit};

/// The one-input elementwise models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unary {
    /// `aten_unary_elementwise`.
    Aten,
    /// `aten::replication_pad{1,2,3}d`.
    ReplicationPad,
    /// `aten::upsample_nearest{1,2,3}d`.
    UpsampleNearest,
    /// `act(input[..., :d]) * input[..., d:]` with this many FLOPs per output element.
    ActAndMul(i64),
}

/// One-input op names and their models.
pub(super) const UNARY_NAMES: &[(&str, Unary)] = &[
    ("aten::copy", Unary::Aten),
    ("aten::copy_", Unary::Aten),
    ("aten::clamp_min", Unary::Aten),
    ("aten::clamp_min_", Unary::Aten),
    ("aten::clamp_max", Unary::Aten),
    ("aten::clamp_max_", Unary::Aten),
    ("aten::sigmoid", Unary::Aten),
    ("aten::rsqrt", Unary::Aten),
    ("aten::silu", Unary::Aten),
    ("aten::neg", Unary::Aten),
    ("aten::pow", Unary::Aten),
    ("aten::replication_pad1d", Unary::ReplicationPad),
    ("aten::replication_pad2d", Unary::ReplicationPad),
    ("aten::replication_pad3d", Unary::ReplicationPad),
    ("aten::upsample_nearest1d", Unary::UpsampleNearest),
    ("aten::upsample_nearest2d", Unary::UpsampleNearest),
    ("aten::upsample_nearest3d", Unary::UpsampleNearest),
    ("aiter::silu_and_mul", Unary::ActAndMul(5)),
    ("_C::silu_and_mul", Unary::ActAndMul(5)),
    ("sgl_kernel::silu_and_mul", Unary::ActAndMul(5)),
    ("aiter::gelu_and_mul", Unary::ActAndMul(8)),
    ("aiter::gelu_tanh_and_mul", Unary::ActAndMul(10)),
];

/// Two-input op names (`aten_binary_elementwise`).
pub(super) const BINARY_NAMES: &[&str] = &[
    "aten::div",
    "aten::div_",
    "aten::mul",
    "aten::mul_",
    "aten::add",
    "aten::add_",
    "aten::sigmoid_backward",
    "aten::threshold_backward",
];

/// The cost of one call of a one-input op.
pub(super) fn unary_cost(kind: Unary, args: &ParsedArgs) -> Fit<OpCost> {
    match kind {
        Unary::Aten => aten_unary(args),
        Unary::ReplicationPad | Unary::UpsampleNearest => resize(kind, args),
        Unary::ActAndMul(flops_per_element) => act_and_mul(flops_per_element, args),
    }
}

/// A one-input op's cost; the precision is that of `dtype_in`.
fn unary_op(
    flops: Num,
    bytes: Option<Num>,
    dtype_in: &str,
    params: Vec<(&'static str, Py)>,
) -> OpCost {
    OpCost {
        family: Family::UnaryElementwise,
        flops: flops.to_f64(),
        bytes: bytes.map(Num::to_f64),
        spec: spec(Unit::Vector, Some(dtype_in)),
        params: cells(params),
    }
}

/// `aten_unary_elementwise`: `op(input)` or `copy_(dst, src)`.
fn aten_unary(args: &ParsedArgs) -> Fit<OpCost> {
    let (shape, dtype_in, stride_in) = (args.shape(0)?, args.dtype(0)?, args.stride(0)?);
    let (dtype_out, stride_out) = match args.has_tensor(1) {
        true => (Some(args.dtype(1)?), args.stride(1)?),
        false => (None, None),
    };
    let n = Num::product(shape);
    let bpe_in = bpe(dtype_in);
    let bpe_out = dtype_out.map_or(bpe_in, bpe);
    let bytes = bpe_in.zip(bpe_out).map(|(i, o)| n * i + n * o);
    let params = vec![
        ("op_shape", Py::ints(shape)),
        ("dtype_in_out", Py::dtypes(&[Some(dtype_in), dtype_out])),
        ("stride_input", Py::strides(stride_in)),
        ("stride_output", Py::strides(stride_out)),
    ];
    Ok(unary_op(n, bytes, dtype_in, params))
}

/// Replication padding and nearest upsampling: read the input, write the larger output.
fn resize(kind: Unary, args: &ParsedArgs) -> Fit<OpCost> {
    let (input, dtype, stride_in) = (args.shape(0)?, args.dtype(0)?, args.stride(0)?);
    let mut params = vec![("input_shape", Py::ints(input))];
    let output = if kind == Unary::ReplicationPad {
        let padding = pad_list(args.concrete(1)?)?;
        let output = padded(input, &padding)?;
        params.push(("output_shape", Py::ints(&output)));
        params.push((
            "padding",
            Py::List(padding.iter().map(|&p| Py::int(p)).collect()),
        ));
        output
    } else {
        let mut output = input[..input.len().min(2)].to_vec();
        output.extend(int_sequence_literal(args.concrete(1)?)?);
        params.push(("output_shape", Py::ints(&output)));
        output
    };
    if output.iter().any(|&d| d < 0) {
        return Err(format!("the output shape {output:?} is negative"));
    }
    params.extend([
        ("op_shape", Py::ints(&output)),
        ("dtype_in_out", Py::dtypes(&[Some(dtype), Some(dtype)])),
        ("stride_input", Py::strides(stride_in)),
        ("stride_output", Py::None),
    ]);
    let bpe = bpe(dtype).ok_or_else(|| format!("the size of dtype `{dtype}` is unknown"))?;
    let bytes = Num::product(input) * bpe + Num::product(&output) * bpe;
    Ok(unary_op(Num::product(&output), Some(bytes), dtype, params))
}

/// `[int(x) for x in text.strip("[]").replace(" ", "").split(",")]`.
fn pad_list(text: &str) -> Fit<Vec<i64>> {
    text.trim_matches(['[', ']'])
        .replace(' ', "")
        .split(',')
        .map(|item| item.trim().parse::<i64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("padding `{text}` is not a list of ints"))
}

/// The input shape grown by each (before, after) pad pair, innermost dimension first
/// (TraceLens indexes from the end, so pairs beyond the rank wrap around as Python does).
fn padded(input: &[i64], padding: &[i64]) -> Fit<Vec<i64>> {
    let mut output = input.to_vec();
    let rank = output.len() as i64;
    for (i, pair) in padding.chunks_exact(2).enumerate() {
        let from_end = rank - 1 - i as i64;
        let index = if from_end < 0 {
            from_end + rank
        } else {
            from_end
        };
        let slot = usize::try_from(index)
            .ok()
            .and_then(|index| output.get_mut(index))
            .ok_or_else(|| format!("{} pads for a {rank}-dimensional input", padding.len()))?;
        *slot = slot.saturating_add(pair[0].saturating_add(pair[1]));
    }
    Ok(output)
}

/// `aiter::silu_and_mul(out, input)` and its kin: the input is `[..., 2·d]`, the output
/// `[..., d]`.
fn act_and_mul(flops_per_element: i64, args: &ParsedArgs) -> Fit<OpCost> {
    let shape = args.shape(0)?;
    let (dtype_in, dtype_out) = (args.dtype(1)?, args.dtype(0)?);
    let (stride_in, stride_out) = (args.stride(1)?, args.stride(0)?);
    let n = Num::product(shape);
    let (Some(bpe_in), Some(bpe_out)) = (bpe(dtype_in), bpe(dtype_out)) else {
        return Err(format!(
            "the size of dtype `{dtype_in}` or `{dtype_out}` is unknown"
        ));
    };
    let params = vec![
        ("op_shape", Py::ints(shape)),
        (
            "dtype_in_out",
            Py::dtypes(&[Some(dtype_in), Some(dtype_out)]),
        ),
        ("stride_input", Py::strides(stride_in)),
        ("stride_output", Py::strides(stride_out)),
    ];
    let bytes = Num::Int(2) * n * bpe_in + n * bpe_out;
    Ok(unary_op(
        Num::from(flops_per_element) * n,
        Some(bytes),
        dtype_in,
        params,
    ))
}

/// The cost of one call of a two-input op.
pub(super) fn binary_cost(args: &ParsedArgs) -> Fit<OpCost> {
    let (shape_1, shape_2) = (args.shape(0)?, args.shape(1)?);
    let (dtype_1, dtype_2) = (args.dtype(0)?, args.dtype(1)?);
    let (stride_1, stride_2) = (args.stride(0)?, args.stride(1)?);
    let (dtype_out, stride_out) = match args.has_tensor(2) {
        true => (Some(args.dtype(2)?), args.stride(2)?),
        false => (None, None),
    };
    let out = broadcast(shape_1, shape_2)?;
    let (bpe_1, bpe_2) = (bpe(dtype_1), bpe(dtype_2));
    let bpe_out = match (dtype_out, bpe_1, bpe_2) {
        (Some(dtype), _, _) => bpe(dtype),
        (None, Some(b1), Some(b2)) if !shape_1.is_empty() && !shape_2.is_empty() => {
            Some(if b2.to_f64() > b1.to_f64() { b2 } else { b1 })
        }
        (None, Some(b1), Some(_)) => Some(b1),
        _ => None,
    };
    let bytes = match (bpe_1, bpe_2, bpe_out) {
        (Some(b1), Some(b2), Some(bo)) => {
            Some(Num::product(shape_1) * b1 + Num::product(shape_2) * b2 + Num::product(&out) * bo)
        }
        _ => None,
    };
    let params = vec![
        ("shape_in1", Py::ints(shape_1)),
        ("shape_in2", Py::ints(shape_2)),
        (
            "dtype_in1_in2_out",
            Py::dtypes(&[Some(dtype_1), Some(dtype_2), dtype_out]),
        ),
        ("stride_input1", Py::strides(stride_1)),
        ("stride_input2", Py::strides(stride_2)),
        ("stride_output", Py::strides(stride_out)),
    ];
    Ok(OpCost {
        family: Family::BinaryElementwise,
        flops: Num::product(&out).to_f64(),
        bytes: bytes.map(Num::to_f64),
        spec: spec(Unit::Vector, Some(dtype_1)),
        params: cells(params),
    })
}

#[cfg(test)]
mod tests {
    use super::super::cost as model_cost;
    use super::super::test_support::{MIB, args, cost};
    use crate::passes::efficiency::args::Dims;
    use crate::passes::efficiency::spec::{Family, Modelled, Precision};

    /// h100 Qwen `BinaryElementwise.csv`: the worked broadcast row.
    #[test]
    fn broadcast_mul_reads_the_small_operand_once() {
        let bf16 = "c10::BFloat16";
        let mut a = args(
            &[&[16, 16, 559, 64], &[1, 1, 559, 64]],
            &[bf16, bf16],
            &["", ""],
        );
        a.strides = vec![
            Dims::Shape(vec![572416, 64, 1024, 1]),
            Dims::Shape(vec![35776, 35776, 64, 1]),
        ];
        let c = cost("aten::mul", &a);
        assert_eq!(c.family, Family::BinaryElementwise);
        assert_eq!(c.flops / 1e9, 0.009158656);
        assert_eq!(c.bytes.unwrap() / MIB, 35.0057373046875);
        assert_eq!(c.params[2].1, "('c10::BFloat16', 'c10::BFloat16', None)");
        assert_eq!(c.params[4].1, "(35776, 35776, 64, 1)");
        assert_eq!(c.params[5].1, "", "no output tensor: None");
    }

    /// h100 Qwen `BinaryElementwise.csv`: a tensor plus a Python float plus alpha.
    #[test]
    fn scalar_operand_counts_one_element() {
        let a = args(
            &[&[16, 559, 1], &[], &[]],
            &["float", "double", "Scalar"],
            &["", "", "1"],
        );
        let c = cost("aten::add", &a);
        assert_eq!(c.bytes, Some(71_560.0));
        assert_eq!(c.flops, 8944.0);
        assert_eq!(c.params[1].1, "()");
        assert_eq!(c.spec.precision, Some(Precision::Fp32));
        let bad = args(&[&[2, 3], &[4, 3]], &["float", "float"], &[]);
        assert!(matches!(
            model_cost("aten::mul", &bad, &[]),
            Modelled::Unfit(_)
        ));
    }

    /// mi300 Qwen `UnaryElementwise.csv`: `copy_` into float from long int.
    #[test]
    fn copy_reads_destination_and_source_dtypes() {
        let a = args(
            &[&[1, 1, 559], &[1, 1, 559], &[]],
            &["float", "long int", "Scalar"],
            &["", "", "False"],
        );
        let c = cost("aten::copy_", &a);
        assert_eq!(c.bytes, Some(6708.0));
        assert_eq!(c.flops / 1e9, 5.59e-7);
        assert_eq!(c.params[1].1, "('float', 'long int')");
        let bools = args(
            &[&[32], &[32], &[]],
            &["bool", "bool", "Scalar"],
            &["", "", "True"],
        );
        assert_eq!(cost("aten::copy_", &bools).bytes, None);
        assert_eq!(cost("aten::copy_", &bools).spec.precision, None);
    }

    /// h100 Qwen `UnaryElementwise.csv`.
    #[test]
    fn silu_reads_and_writes_its_shape() {
        let c = cost(
            "aten::silu",
            &args(&[&[16, 559, 2816]], &["c10::BFloat16"], &[""]),
        );
        assert_eq!(c.flops / 1e9, 0.025186304);
        assert_eq!(c.bytes.unwrap() / MIB, 96.078125);
        assert_eq!(c.params[1].1, "('c10::BFloat16', None)");
    }

    /// sglang_decode `UnaryElementwise.csv`.
    #[test]
    fn silu_and_mul_reads_twice_the_output() {
        let bf16 = "c10::BFloat16";
        let c = cost(
            "sgl_kernel::silu_and_mul",
            &args(&[&[32, 12288], &[32, 24576]], &[bf16, bf16], &["", ""]),
        );
        assert_eq!(c.flops / 1e9, 0.00196608);
        assert_eq!(c.bytes.unwrap() / MIB, 2.25);
        let gelu = cost(
            "aiter::gelu_tanh_and_mul",
            &args(&[&[2, 4], &[2, 8]], &[bf16, bf16], &[]),
        );
        assert_eq!(gelu.flops, 80.0);
        let unknown = args(&[&[2, 4], &[2, 8]], &[bf16, "bool"], &[]);
        assert!(matches!(
            model_cost("aiter::silu_and_mul", &unknown, &[]),
            Modelled::Unfit(_)
        ));
    }

    /// xdit `UnaryElementwise.csv`; hand-computed padding.
    #[test]
    fn upsample_and_pad_grow_the_output() {
        let bf16 = "c10::BFloat16";
        let up = args(
            &[&[1, 256, 512, 512], &[], &[], &[]],
            &[bf16, "ScalarList", "Scalar", "Scalar"],
            &["", "[1024, 1024]", "2.", "2."],
        );
        let c = cost("aten::upsample_nearest2d", &up);
        assert_eq!(c.flops / 1e9, 0.268435456);
        assert_eq!(c.bytes.unwrap() / MIB, 640.0);
        assert_eq!(
            c.params[1],
            ("output_shape", "(1, 256, 1024, 1024)".to_owned())
        );
        let by_scale = args(
            &[&[1, 2, 4, 4], &[], &[]],
            &[bf16, "", "ScalarList"],
            &["", "", "[2., 2.]"],
        );
        assert!(matches!(
            model_cost("aten::upsample_nearest2d", &by_scale, &[]),
            Modelled::Unfit(_)
        ));
        let pad = args(
            &[&[1, 3, 4, 5], &[]],
            &["float", "ScalarList"],
            &["", "[1, 1, 2, 0]"],
        );
        let c = cost("aten::replication_pad2d", &pad);
        assert_eq!(c.params[1], ("output_shape", "(1, 3, 6, 7)".to_owned()));
        assert_eq!(c.params[2], ("padding", "[1, 1, 2, 0]".to_owned()));
        assert_eq!(c.bytes, Some(((60 + 126) * 4) as f64));
    }
}
