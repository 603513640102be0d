//! Convolution (`aten::convolution`), as TraceLens (AMD-AGI/TraceLens,
//! `PerfModel/perf_model.py` classes `CONV` and `aten_conv`, after PyTorch's
//! `torch/utils/flop_counter.py`) models it. With input x `[N, C_in, *in]`, weight w
//! `[C_out, C_in/groups, *k]` and output `[N, C_out, *out]`:
//!
//! ```text
//! out_i = int((in_i + 2·pad_i − dil_i·(k_i − 1) − 1) / stride_i + 1)
//!         transposed: (in_i − 1)·stride_i − 2·pad_i + dil_i·(k_i − 1) + out_pad_i + 1,
//!         and C_out = w[1]
//! FLOPs = prod(out)·2·prod(w[1:])            transposed: prod(x)·2·prod(w[1:])
//! bytes = (prod(x) + prod(w) + prod(out)) · bpe(types[0])
//! ```
//!
//! Arguments: x, w, bias, then `Concrete Inputs` 3-8: stride, padding, dilation
//! (`"[a, b]"`, `''` for 1s / 0s / 1s, one value broadcast to every spatial dim),
//! transposed (`True`/`False`), output padding and groups. Input and weight dtypes must be
//! equal; the input must be 1-, 2- or 3-D (3 to 5 dims).
//!
//! A negative output size (a kernel larger than the padded input), which TraceLens would
//! count as negative FLOPs, does not fit.
//!
//! TraceLens quirk kept: the bias counts only when the call has exactly 3 arguments
//! (`len(Input Dims) == 3`), and `aten::convolution` always has 9, so it never counts
//! (neither its `prod(out)` FLOPs nor its `C_out` elements).

use super::{Fit, Num, Py, bpe, cells, spec};
use crate::passes::efficiency::args::ParsedArgs;
use crate::passes::efficiency::spec::{Family, OpCost, Unit};

/// The stride, padding, dilation and output padding of a call.
struct Geometry {
    /// Per spatial dimension (or as given, when not one value).
    stride: Vec<i64>,
    /// Zero padding on each side.
    padding: Vec<i64>,
    /// Kernel dilation.
    dilation: Vec<i64>,
    /// Extra output size of a transposed convolution.
    output_padding: Vec<i64>,
}

impl Geometry {
    /// The geometry from `Concrete Inputs` 3-7, and whether the convolution is transposed.
    fn parse(args: &ParsedArgs, spatial: usize) -> Fit<(Geometry, bool)> {
        let geometry = Geometry {
            stride: int_tuple_or(args.concrete(3)?, 1, spatial)?,
            padding: int_tuple_or(args.concrete(4)?, 0, spatial)?,
            dilation: int_tuple_or(args.concrete(5)?, 1, spatial)?,
            output_padding: int_tuple_or(args.concrete(7)?, 0, spatial)?,
        };
        let transposed = match args.concrete(6)?.trim() {
            "True" => true,
            "False" => false,
            other => return Err(format!("transposed `{other}` is not a Python bool")),
        };
        Ok((geometry, transposed))
    }
}

/// The cost of one convolution call.
pub(super) fn cost(args: &ParsedArgs) -> Fit<OpCost> {
    let (x, w) = (args.shape(0)?, args.shape(1)?);
    let spatial = x.len().saturating_sub(2);
    let bias = args.dims.len() == 3;
    let (geometry, transposed) = Geometry::parse(args, spatial)?;
    let groups: i64 = args
        .concrete(8)?
        .trim()
        .parse()
        .map_err(|_| "groups is not an int")?;
    let (dtype_x, dtype_w) = (args.dtype(0)?, args.dtype(1)?);
    if dtype_x != dtype_w {
        return Err(format!(
            "input dtype `{dtype_x}` differs from weight dtype `{dtype_w}`"
        ));
    }
    let conv_nd = match x.len() {
        3..=5 => format!("conv{spatial}d"),
        rank => {
            return Err(format!(
                "a {rank}-dimensional input is not a 1-3D convolution"
            ));
        }
    };
    let out = output_shape(x, w, &geometry, transposed)?;
    let params = vec![
        ("convNd", Py::Str(conv_nd)),
        ("input_shape", Py::ints(x)),
        ("filter_shape", Py::ints(w)),
        (
            "dtype_input_weight",
            Py::dtypes(&[Some(dtype_x), Some(dtype_w)]),
        ),
        ("input_stride", Py::strides(args.stride(0)?)),
        ("weight_stride", Py::strides(args.stride(1)?)),
        ("bias", Py::Bool(bias)),
        ("stride", Py::ints(&geometry.stride)),
        ("padding", Py::ints(&geometry.padding)),
        ("dilation", Py::ints(&geometry.dilation)),
        ("transposed_conv", Py::Bool(transposed)),
        ("output_padding", Py::ints(&geometry.output_padding)),
        ("groups", Py::int(groups)),
    ];
    let per_element = Num::Int(2) * Num::product(w.get(1..).unwrap_or_default());
    let outputs = Num::product(&out);
    let convolved = if transposed { Num::product(x) } else { outputs };
    let bias_flops = if bias { outputs } else { Num::Int(0) };
    let bias_elems = if bias { Num::from(out[1]) } else { Num::Int(0) };
    let elements = Num::product(x) + Num::product(w) + bias_elems + outputs;
    Ok(OpCost {
        family: Family::Convolution,
        flops: (convolved * per_element + bias_flops).to_f64(),
        bytes: bpe(dtype_x).map(|bpe| (elements * bpe).to_f64()),
        spec: spec(Unit::Matrix, Some(dtype_x)),
        params: cells(params),
    })
}

/// `aten_conv.str_to_tuple` (`"[1, 1]"` → `(1, 1)`), `default` repeated for `''`, and a
/// single value repeated for every spatial dimension.
fn int_tuple_or(text: &str, default: i64, spatial: usize) -> Fit<Vec<i64>> {
    if text.is_empty() {
        return Ok(vec![default; spatial]);
    }
    // `s[1:-1]`: drops the first and last characters, whatever they are.
    let mut chars = text.chars();
    chars.next();
    chars.next_back();
    let values = chars
        .as_str()
        .split(',')
        .map(|item| item.trim().parse::<i64>())
        .collect::<Result<Vec<i64>, _>>()
        .map_err(|_| format!("`{text}` is not a list of ints"))?;
    Ok(match values[..] {
        [single] => vec![single; spatial],
        _ => values,
    })
}

/// `CONV.get_output_shape`: `(N, C_out, *spatial)`.
fn output_shape(x: &[i64], w: &[i64], geometry: &Geometry, transposed: bool) -> Fit<Vec<i64>> {
    let filters = super::dim(w, if transposed { 1 } else { 0 })?;
    let mut out = vec![super::dim(x, 0)?, filters];
    for i in 0..x.len().saturating_sub(2) {
        let at = |values: &[i64], what: &str| {
            values
                .get(i)
                .copied()
                .ok_or_else(|| format!("{what} has no value for spatial dimension {i}"))
        };
        let (input, kernel) = (super::dim(x, i + 2)?, super::dim(w, i + 2)?);
        let (stride, padding) = (
            at(&geometry.stride, "stride")?,
            at(&geometry.padding, "padding")?,
        );
        let dilation = at(&geometry.dilation, "dilation")?;
        let size = if transposed {
            let output_padding = at(&geometry.output_padding, "output padding")?;
            let grown = Num::from(input - 1) * Num::from(stride) - Num::Int(2) * Num::from(padding);
            grown
                + Num::from(dilation) * Num::from(kernel - 1)
                + Num::from(output_padding)
                + Num::Int(1)
        } else {
            let span = Num::from(input) + Num::Int(2) * Num::from(padding)
                - Num::from(dilation) * Num::from(kernel - 1)
                - Num::Int(1);
            // `int(span / stride + 1)`: a true division, truncated toward zero.
            Num::Float((span.true_div(Num::from(stride))?.to_f64() + 1.0).trunc())
        };
        match size.to_f64() {
            size if size >= 0.0 && size <= i64::MAX as f64 => out.push(size as i64),
            _ => {
                return Err(format!(
                    "spatial dimension {i} of the output is out of range"
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::passes::efficiency::args::{Dims, ParsedArgs};
    use crate::passes::efficiency::spec::{Modelled, OpCost, Precision};

    use super::super::cost as model_cost;
    use super::super::test_support::MIB;

    fn args(x: &[i64], w: &[i64], concrete: [&str; 6]) -> ParsedArgs {
        let mut dims = vec![Dims::Shape(x.to_vec()), Dims::Shape(w.to_vec())];
        dims.resize(9, Dims::Shape(Vec::new()));
        let types = [
            "c10::BFloat16",
            "c10::BFloat16",
            "",
            "ScalarList",
            "ScalarList",
            "ScalarList",
            "Scalar",
            "ScalarList",
            "Scalar",
        ];
        let mut all = vec![String::new(); 3];
        all.extend(concrete.iter().map(|c| c.to_string()));
        ParsedArgs {
            dims,
            types: types.iter().map(|t| t.to_string()).collect(),
            strides: Vec::new(),
            concrete: all,
        }
    }

    fn cost(args: &ParsedArgs) -> OpCost {
        super::super::test_support::cost("aten::convolution", args)
    }

    /// xdit `CONV_fwd.csv`: 3×3 with padding 1 (the bias argument is ignored).
    #[test]
    fn conv2d_with_padding_keeps_the_size() {
        let same = ["[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"];
        let c = cost(&args(&[1, 128, 1024, 1024], &[128, 128, 3, 3], same));
        assert_eq!(c.flops / 1e9, 309.237645312);
        assert_eq!(c.bytes.unwrap() / MIB, 512.28125);
        assert_eq!(c.spec.precision, Some(Precision::Bf16));
        assert_eq!(c.params[0], ("convNd", "conv2d".to_owned()));
        assert_eq!(c.params[6], ("bias", "False".to_owned()));
        assert_eq!(c.params[11], ("output_padding", "(0, 0)".to_owned()));
    }

    /// mi300 owlv2 `CONV_fwd.csv`: the 14×14 patch embedding, stride 14.
    #[test]
    fn strided_conv_shrinks_the_output() {
        let patch = ["[14, 14]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"];
        let c = cost(&args(&[1, 3, 1008, 1008], &[1024, 3, 14, 14], patch));
        assert_eq!(c.flops / 1e9, 6.242697216);
        assert_eq!(c.bytes.unwrap() / MIB, 17.08740234375);
    }

    /// Hand-computed: a transposed 1-D conv and broadcast single values.
    #[test]
    fn transposed_conv_counts_input_elements() {
        let up = ["[2]", "", "", "True", "[1]", "1"];
        let c = cost(&args(&[2, 4, 10], &[4, 3, 3], up));
        // out = (10 - 1)·2 - 0 + 1·2 + 1 + 1 = 22, 3 channels.
        assert_eq!(c.flops, (2 * 4 * 10 * 2 * 3 * 3) as f64);
        assert_eq!(
            c.bytes,
            Some(((2 * 4 * 10 + 4 * 3 * 3 + 2 * 3 * 22) * 2) as f64)
        );
        assert_eq!(c.params[7], ("stride", "(2,)".to_owned()));
    }

    #[test]
    fn bad_geometry_does_not_fit() {
        let zero_stride = ["[0, 0]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"];
        let a = args(&[1, 3, 8, 8], &[4, 3, 3, 3], zero_stride);
        assert!(matches!(
            model_cost("aten::convolution", &a, &[]),
            Modelled::Unfit(_)
        ));
        let too_big = ["[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"];
        let a = args(&[1, 3, 2, 2], &[4, 3, 5, 5], too_big);
        assert!(matches!(
            model_cost("aten::convolution", &a, &[]),
            Modelled::Unfit(_)
        ));
        let mut mixed = args(&[1, 3, 8, 8], &[4, 3, 3, 3], too_big);
        mixed.types[1] = "float".to_owned();
        assert!(matches!(
            model_cost("aten::convolution", &mixed, &[]),
            Modelled::Unfit(_)
        ));
    }
}
