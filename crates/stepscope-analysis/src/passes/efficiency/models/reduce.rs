//! Reductions, as TraceLens (AMD-AGI/TraceLens, `PerfModel/perf_model.py` classes `Reduce`
//! and `aten_reduce`) models them: one FLOP per input element, the input read once and the
//! output written once.
//!
//! ```text
//! FLOPs = n_in = prod(dims[0])
//! bytes = n_in·bpe + n_out·bpe          bpe from types[0]; None when unknown
//! n_out = n_in for cumsum / cumprod, else 1
//! ```
//!
//! TraceLens quirk kept: the output is always 1 element (except cumulative ops). TraceLens
//! would shrink the shape by the `dim` argument, but it skips string values, and the
//! profiler records every concrete input as a string (`'[-1]'`), so it never reads one.
//! Its optional `Output type` (never recorded by PyTorch's profiler) is not read here either:
//! the output has the input's dtype. A call without `Input Dims` gives 0 FLOPs and no bytes
//! (and no `reduce_type`), as in TraceLens. `reduce_type` is `mean`, `max`, `min` or `norm`
//! by substring of the name (`amax` is `max`), else `sum`. The precision is that of `types[0]`.

use super::{Fit, Num, Py, bpe, cells, spec};
use crate::passes::efficiency::args::ParsedArgs;
use crate::passes::efficiency::spec::{Family, OpCost, Unit};

/// Op names (`aten_reduce`).
pub(super) const NAMES: &[&str] = &[
    "aten::sum",
    "aten::mean",
    "aten::max",
    "aten::min",
    "aten::norm",
    "aten::linalg_norm",
    "aten::std",
    "aten::var",
    "aten::logsumexp",
    "aten::cumsum",
    "aten::cumprod",
    "aten::amin",
    "aten::amax",
];

/// The cost of one reduction call.
pub(super) fn cost(name: &str, args: &ParsedArgs) -> Fit<OpCost> {
    if args.dims.is_empty() {
        let params = vec![
            ("num_input_elems", Py::int(0)),
            ("num_output_elems", Py::int(0)),
            ("dtype_in_out", Py::dtypes(&[None, None])),
        ];
        return Ok(reduce_op(Num::Int(0), None, None, params));
    }
    let inputs = Num::product(args.shape(0)?);
    let dtype = args.types.first().map(String::as_str);
    let outputs = match name.contains("cumsum") || name.contains("cumprod") {
        true => inputs,
        false => Num::Int(1),
    };
    let bytes = dtype.and_then(bpe).map(|bpe| inputs * bpe + outputs * bpe);
    let reduce_type = ["mean", "max", "min", "norm"]
        .into_iter()
        .find(|kind| name.contains(kind))
        .unwrap_or("sum");
    let params = vec![
        ("num_input_elems", Py::Num(inputs)),
        ("num_output_elems", Py::Num(outputs)),
        ("dtype_in_out", Py::dtypes(&[dtype, None])),
        ("reduce_type", Py::Str(reduce_type.to_owned())),
    ];
    Ok(reduce_op(inputs, bytes, dtype, params))
}

/// A reduction's cost; the precision is that of `dtype`.
fn reduce_op(
    flops: Num,
    bytes: Option<Num>,
    dtype: Option<&str>,
    params: Vec<(&'static str, Py)>,
) -> OpCost {
    OpCost {
        family: Family::Reduce,
        flops: flops.to_f64(),
        bytes: bytes.map(Num::to_f64),
        spec: spec(Unit::Vector, dtype),
        params: cells(params),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{args, cost};
    use crate::passes::efficiency::args::ParsedArgs;
    use crate::passes::efficiency::spec::Precision;

    /// h100 Qwen `Reduce_fwd.csv`: a mean over the last dim still writes 1 element.
    #[test]
    fn mean_writes_one_element() {
        let a = args(
            &[&[16, 559, 1024], &[], &[], &[]],
            &["float", "ScalarList", "Scalar", ""],
            &["", "[-1]", "True", ""],
        );
        let c = cost("aten::mean", &a);
        assert_eq!(c.bytes, Some(36_634_628.0));
        assert_eq!(c.flops / 1e9, 0.009158656);
        assert_eq!(c.spec.precision, Some(Precision::Fp32));
        let rendered: Vec<String> = c.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            rendered.join(" "),
            "num_input_elems=9158656 num_output_elems=1 dtype_in_out=('float', None) \
             reduce_type=mean"
        );
    }

    /// sglang_decode `Reduce_fwd.csv`: cumsum writes every element; int has no precision.
    #[test]
    fn cumsum_writes_every_element() {
        let c = cost(
            "aten::cumsum",
            &args(&[&[32], &[], &[]], &["int", "Scalar", ""], &["", "0", ""]),
        );
        assert_eq!(c.bytes, Some(256.0));
        assert_eq!(c.params[3].1, "sum");
        assert_eq!(c.spec.precision, None);
        let amax = cost("aten::amax", &args(&[&[4, 4]], &["c10::BFloat16"], &[""]));
        assert_eq!(amax.params[3].1, "max");
    }

    #[test]
    fn missing_dims_count_nothing() {
        let c = cost("aten::sum", &ParsedArgs::default());
        assert_eq!((c.flops, c.bytes), (0.0, None));
        assert_eq!(c.params.len(), 3);
        let unknown = cost("aten::sum", &args(&[&[8]], &["bool"], &[""]));
        assert_eq!(unknown.bytes, None);
    }
}
