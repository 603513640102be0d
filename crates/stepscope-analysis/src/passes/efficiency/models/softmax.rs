//! Softmax and log-softmax, forward and backward: stepscope's own model (TraceLens has none;
//! it counts softmax inside its attention models only). Softmax over a dimension reads each
//! element once and writes each once, and is bound by memory bandwidth, so the bytes are
//! what matter; the FLOPs count the per-element arithmetic of the usual fused kernel:
//!
//! ```text
//! forward  (_softmax, _log_softmax, _safe_softmax, softmax, log_softmax):
//!   FLOPs = 5·N      running max, subtract, exp, running sum, divide (log-softmax subtracts
//!                    the log-sum instead of dividing; the per-row log is not counted)
//!   bytes = N·bpe_in + N·bpe_out
//! backward (_softmax_backward_data(grad, output, dim, input_dtype), and the log form):
//!   FLOPs = 4·N      grad·output (exp(output) for log), row sum, subtract, multiply
//!   bytes = N·bpe_grad + N·bpe_output + N·bpe_grad      (two reads, one write)
//! ```
//!
//! N = prod(`dims[0]`). The output dtype is the input's, except `_softmax(x, dim,
//! half_to_float=True)`, which writes FP32. A dtype of unknown size leaves the bytes unknown.
//! The precision is that of `types[0]`, on the vector unit.

use super::{Fit, Num, Py, bpe, cells, spec};
use crate::passes::efficiency::args::ParsedArgs;
use crate::passes::efficiency::spec::{Family, OpCost, Unit};

/// The softmax ops: name and whether it is a backward.
pub(super) const NAMES: &[(&str, bool)] = &[
    ("aten::_softmax", false),
    ("aten::softmax", false),
    ("aten::_safe_softmax", false),
    ("aten::_log_softmax", false),
    ("aten::log_softmax", false),
    ("aten::_softmax_backward_data", true),
    ("aten::_log_softmax_backward_data", true),
];

/// The cost of one softmax call.
pub(super) fn cost(name: &str, backward: bool, args: &ParsedArgs) -> Fit<OpCost> {
    let elements = Num::product(args.shape(0)?);
    let dtype_in = args.dtype(0)?;
    let (flops_per_element, dtype_out, bytes) = if backward {
        let dtype_output = args.dtype(1)?;
        let bytes = bpe(dtype_in)
            .zip(bpe(dtype_output))
            .map(|(grad, output)| elements * (grad + output + grad));
        (4, dtype_in, bytes)
    } else {
        let half_to_float =
            name == "aten::_softmax" && args.concrete(2).is_ok_and(|c| c.trim() == "True");
        let dtype_out = if half_to_float { "float" } else { dtype_in };
        let bytes = bpe(dtype_in)
            .zip(bpe(dtype_out))
            .map(|(input, output)| elements * (input + output));
        (5, dtype_out, bytes)
    };
    let params = vec![
        ("shape", Py::ints(args.shape(0)?)),
        (
            "dim",
            Py::Str(args.concrete(1).unwrap_or_default().trim().to_owned()),
        ),
        (
            "dtype_in_out",
            Py::dtypes(&[Some(dtype_in), Some(dtype_out)]),
        ),
    ];
    Ok(OpCost {
        family: Family::Softmax,
        flops: (Num::Int(flops_per_element) * elements).to_f64(),
        bytes: bytes.map(Num::to_f64),
        spec: spec(Unit::Vector, Some(dtype_in)),
        params: cells(params),
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{args, cost};
    use crate::passes::efficiency::spec::{Family, Modelled, Precision};

    /// OWLv2's `aten::_softmax` on MI300X: 12 heads of a 5×5 score matrix in BF16.
    #[test]
    fn forward_reads_and_writes_each_element_once() {
        let a = args(
            &[&[12, 5, 5], &[], &[]],
            &["c10::BFloat16", "Scalar", "Scalar"],
            &["", "-1", "False"],
        );
        let c = cost("aten::_softmax", &a);
        assert_eq!(c.family, Family::Softmax);
        assert_eq!(c.flops, 5.0 * 300.0);
        assert_eq!(c.bytes, Some(300.0 * 4.0));
        assert_eq!(c.spec.precision, Some(Precision::Bf16));
        let rendered: Vec<String> = c.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            rendered.join(" "),
            "shape=(12, 5, 5) dim=-1 dtype_in_out=('c10::BFloat16', 'c10::BFloat16')"
        );
    }

    #[test]
    fn half_to_float_writes_fp32() {
        let a = args(
            &[&[2, 8], &[], &[]],
            &["c10::Half", "Scalar", "Scalar"],
            &["", "1", "True"],
        );
        let c = cost("aten::_softmax", &a);
        assert_eq!(c.bytes, Some(16.0 * (2.0 + 4.0)));
        assert_eq!(c.params[2].1, "('c10::Half', 'float')");
        let log = cost("aten::_log_softmax", &a);
        assert_eq!(
            log.bytes,
            Some(16.0 * 4.0),
            "only _softmax has half_to_float"
        );
    }

    #[test]
    fn backward_reads_grad_and_output_and_writes_grad() {
        let a = args(
            &[&[4, 1024], &[4, 1024], &[], &[]],
            &["float", "float", "Scalar", "Scalar"],
            &["", "", "-1", "6"],
        );
        let c = cost("aten::_softmax_backward_data", &a);
        assert_eq!(c.flops, 4.0 * 4096.0);
        assert_eq!(c.bytes, Some(4096.0 * 12.0));
    }

    #[test]
    fn unknown_sizes_and_short_lists() {
        let a = args(&[&[3, 3]], &["bool"], &[""]);
        assert_eq!(cost("aten::softmax", &a).bytes, None);
        let empty = super::super::cost("aten::_softmax", &args(&[], &[], &[]), &[]);
        assert!(matches!(empty, Modelled::Unfit(_)));
        let backward = super::super::cost("aten::_softmax_backward_data", &a, &[]);
        assert!(matches!(backward, Modelled::Unfit(_)));
    }
}
