//! Performance models: an op call's FLOPs and bytes moved from its name and argument lists,
//! one module per op family.
//!
//! The formulas, the argument positions they read and their quirks are TraceLens's
//! (AMD-AGI/TraceLens, `PerfModel/perf_model.py` and `PerfModel/extensions/`), so that the
//! numbers agree with its reports; each module cites the formulas it uses. Where TraceLens
//! raises (a short argument list, shapes that do not broadcast) and so drops the call, the
//! model answers [`Modelled::Unfit`] with the reason.
//!
//! Arithmetic follows Python's: integer products are exact (`i128`, falling back to `f64`
//! past its range), and a true division (`/`) makes a float, as in TraceLens's ints.

mod attention;
mod conv;
mod elementwise;
mod gemm;
mod norm;
mod quant_gemm;
mod reduce;
mod rope;
mod serving_attention;
mod softmax;
#[cfg(test)]
mod test_support;

pub(crate) use serving_attention::normalized;

use super::args::ParsedArgs;
use super::dtype;
use super::spec::{ComputeSpec, Modelled, Unit};
use std::fmt::Write as _;
use std::ops::{Add, Mul, Sub};

/// A model's answer before it becomes a [`Modelled`]: the cost, or why the call does not fit.
type Fit<T> = Result<T, String>;

/// Which model covers an op name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Model {
    /// [`gemm`].
    Gemm(gemm::Gemm),
    /// [`attention`].
    Attention(attention::Attention),
    /// [`conv`].
    Convolution,
    /// [`elementwise`], one input.
    Unary(elementwise::Unary),
    /// [`elementwise`], two inputs.
    Binary,
    /// [`reduce`].
    Reduce,
    /// [`rope`].
    Rope,
    /// [`norm`].
    Norm(norm::Norm),
    /// [`softmax`]: whether a backward.
    Softmax(bool),
}

/// The model for an op name, if one covers it.
fn model_for(name: &str) -> Option<Model> {
    if name == "aten::convolution" {
        return Some(Model::Convolution);
    }
    if elementwise::BINARY_NAMES.contains(&name) {
        return Some(Model::Binary);
    }
    if reduce::NAMES.contains(&name) {
        return Some(Model::Reduce);
    }
    if rope::NAMES.contains(&name) {
        return Some(Model::Rope);
    }
    lookup(gemm::NAMES, name)
        .or_else(|| lookup(quant_gemm::NAMES, name))
        .map(Model::Gemm)
        .or_else(|| lookup(attention::NAMES, name).map(Model::Attention))
        .or_else(|| lookup(elementwise::UNARY_NAMES, name).map(Model::Unary))
        .or_else(|| lookup(norm::NAMES, name).map(Model::Norm))
        .or_else(|| lookup(softmax::NAMES, name).map(Model::Softmax))
}

/// The kind a name has in a family's name table.
fn lookup<T: Copy>(table: &[(&str, T)], name: &str) -> Option<T> {
    table
        .iter()
        .find(|(known, _)| *known == name)
        .map(|&(_, kind)| kind)
}

/// Whether a model covers the op name.
pub(crate) fn has_model(name: &str) -> bool {
    model_for(name).is_some() || serving_attention::serving_model(name).is_some()
}

/// Whether an op's cost needs its iteration's token counts (serving frameworks' attention).
pub(crate) fn needs_iteration(name: &str) -> bool {
    serving_attention::serving_model(name)
        .is_some_and(|kind| kind != serving_attention::Serving::StoreCache)
}

/// [`cost`], with the token counts of the iteration the call ran in (from its step
/// annotation), which the serving frameworks' attention is costed by.
pub(crate) fn cost_in(
    name: &str,
    args: &ParsedArgs,
    kernel_names: &[&str],
    iteration: Option<&super::iterations::IterationStats>,
) -> Modelled {
    match serving_attention::serving_model(name) {
        Some(kind) => finished(serving_attention::cost(kind, args, iteration)),
        None => cost(name, args, kernel_names),
    }
}

/// The cost of one op call: `kernel_names` are the names of the GPU kernels it launched,
/// in time order (GEMMs read their `transpose` parameter from the first Tensile or nvjet
/// name among them).
pub(crate) fn cost(name: &str, args: &ParsedArgs, kernel_names: &[&str]) -> Modelled {
    let Some(model) = model_for(name) else {
        return Modelled::NoModel;
    };
    let result = match model {
        Model::Gemm(kind) => gemm::cost(kind, args, kernel_names),
        Model::Attention(kind) => attention::cost(kind, args),
        Model::Convolution => conv::cost(args),
        Model::Unary(kind) => elementwise::unary_cost(kind, args),
        Model::Binary => elementwise::binary_cost(args),
        Model::Reduce => reduce::cost(name, args),
        Model::Rope => rope::cost(args),
        Model::Norm(kind) => norm::cost(kind, args),
        Model::Softmax(backward) => softmax::cost(name, backward, args),
    };
    finished(result)
}

/// A model's result as [`Modelled`]: counts that overflowed make the call unfit.
fn finished(result: Fit<super::spec::OpCost>) -> Modelled {
    match result {
        Ok(cost) if !cost.flops.is_finite() || cost.bytes.is_some_and(|b| !b.is_finite()) => {
            Modelled::Unfit("the shapes are too large to count".to_owned())
        }
        Ok(cost) => Modelled::Cost(cost),
        Err(reason) => Modelled::Unfit(reason),
    }
}

/// A number as Python's `int` (exact) or `float`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    /// An exact integer.
    Int(i128),
    /// A float (a true division's result, or an integer past `i128`).
    Float(f64),
}

impl Num {
    /// The value as an `f64` (Python's `float(value)`).
    fn to_f64(self) -> f64 {
        match self {
            Num::Int(value) => value as f64,
            Num::Float(value) => value,
        }
    }

    /// `math.prod`: 1 for an empty shape.
    fn product(values: &[i64]) -> Num {
        values
            .iter()
            .fold(Num::Int(1), |acc, &v| acc * Num::from(v))
    }

    /// Python's `/`: always a float; `ZeroDivisionError` becomes an error.
    fn true_div(self, divisor: Num) -> Fit<Num> {
        if divisor.to_f64() == 0.0 {
            return Err("division by zero".to_owned());
        }
        Ok(Num::Float(self.to_f64() / divisor.to_f64()))
    }

    /// Python's `//` on ints (rounds toward negative infinity).
    fn floor_div(self, divisor: Num) -> Fit<Num> {
        match (self, divisor) {
            (_, divisor) if divisor.to_f64() == 0.0 => Err("division by zero".to_owned()),
            (Num::Int(a), Num::Int(b)) => {
                let quotient = a.checked_div(b).unwrap_or(i128::MAX);
                let inexact = a.checked_rem(b).is_some_and(|r| r != 0);
                Ok(Num::Int(
                    quotient - i128::from(inexact && (a < 0) != (b < 0)),
                ))
            }
            (a, b) => Ok(Num::Float((a.to_f64() / b.to_f64()).floor())),
        }
    }
}

impl From<i64> for Num {
    fn from(value: i64) -> Num {
        Num::Int(i128::from(value))
    }
}

/// Implements an operator: exact on two ints (a float past `i128`), a float otherwise.
macro_rules! num_op {
    ($trait:ident, $method:ident, $checked:ident, $op:tt) => {
        impl $trait for Num {
            type Output = Num;
            fn $method(self, other: Num) -> Num {
                match (self, other) {
                    (Num::Int(a), Num::Int(b)) => a
                        .$checked(b)
                        .map_or(Num::Float(a as f64 $op b as f64), Num::Int),
                    (a, b) => Num::Float(a.to_f64() $op b.to_f64()),
                }
            }
        }
    };
}
num_op!(Add, add, checked_add, +);
num_op!(Sub, sub, checked_sub, -);
num_op!(Mul, mul, checked_mul, *);

/// Bytes per element of a dtype, as a number (`None` when TraceLens's table lacks it).
fn bpe(dtype: &str) -> Option<Num> {
    dtype::bytes_per_element(dtype).map(|bytes| Num::Int(i128::from(bytes)))
}

/// The compute roof: the unit and the precision of the dtype that sets it.
fn spec(unit: Unit, dtype: Option<&str>) -> ComputeSpec {
    ComputeSpec {
        unit,
        precision: dtype.and_then(dtype::precision),
    }
}

/// Dimension `index` of a shape.
fn dim(shape: &[i64], index: usize) -> Fit<i64> {
    shape.get(index).copied().ok_or_else(|| {
        format!(
            "a shape of {} dimensions has no dimension {index}",
            shape.len()
        )
    })
}

/// The broadcast shape of two shapes (TraceLens `BinaryElementwise.get_broadcast_shape`):
/// right-aligned, padded with 1s, the larger size where one is 1. TraceLens quirk kept: a
/// size of 0 against 1 gives 1 (the max), where PyTorch gives 0.
fn broadcast(a: &[i64], b: &[i64]) -> Fit<Vec<i64>> {
    let rank = a.len().max(b.len());
    let padded = |shape: &[i64], i: usize| {
        let lead = rank - shape.len();
        if i < lead { 1 } else { shape[i - lead] }
    };
    (0..rank)
        .map(|i| match (padded(a, i), padded(b, i)) {
            (x, y) if x != y && x != 1 && y != 1 => {
                Err(format!("shapes {a:?} and {b:?} do not broadcast"))
            }
            (x, y) => Ok(x.max(y)),
        })
        .collect()
}

/// `tuple(ast.literal_eval(text))` for a list or tuple of ints (`'[1024, 1024]'`).
fn int_sequence_literal(text: &str) -> Fit<Vec<i64>> {
    let not_a_list = || format!("`{text}` is not a list of ints");
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .or_else(|| {
            let inner = trimmed.strip_prefix('(')?.strip_suffix(')')?;
            // `(5)` is the int 5, not a tuple.
            (inner.trim().is_empty() || inner.contains(',')).then_some(inner)
        })
        .ok_or_else(not_a_list)?;
    let inner = inner.trim();
    let inner = inner.strip_suffix(',').unwrap_or(inner);
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    inner
        .split(',')
        .map(|item| item.trim().parse::<i64>().map_err(|_| not_a_list()))
        .collect()
}

/// A Python value of a TraceLens `param:` column, rendered as pandas renders it.
#[derive(Debug, Clone, PartialEq)]
enum Py {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An `int` or a `float`.
    Num(Num),
    /// A `str`.
    Str(String),
    /// A `tuple`.
    Tuple(Vec<Py>),
    /// A `list`.
    List(Vec<Py>),
}

impl Py {
    /// An `int`.
    fn int(value: i64) -> Py {
        Py::Num(Num::from(value))
    }

    /// `tuple(shape)`.
    fn ints(values: &[i64]) -> Py {
        Py::Tuple(values.iter().map(|&v| Py::int(v)).collect())
    }

    /// `tuple(strides[i])`, or `None` where the trace has no strides.
    fn strides(values: Option<&[i64]>) -> Py {
        values.map_or(Py::None, Py::ints)
    }

    /// A dtype name, or `None`.
    fn optional_str(name: Option<&str>) -> Py {
        name.map_or(Py::None, |n| Py::Str(n.to_owned()))
    }

    /// A tuple of dtype names, `None` for a missing one.
    fn dtypes(names: &[Option<&str>]) -> Py {
        Py::Tuple(names.iter().map(|&name| Py::optional_str(name)).collect())
    }

    /// The cell text: pandas `astype(str)` is `str(value)`, except that `None` stays
    /// missing (pandas 3, which made TraceLens's reference CSVs), written as an empty cell.
    fn cell(&self) -> String {
        match self {
            Py::None => String::new(),
            Py::Str(text) => text.clone(),
            other => {
                let mut out = String::new();
                other.repr(&mut out);
                out
            }
        }
    }

    /// Python's `repr`.
    fn repr(&self, out: &mut String) {
        match self {
            Py::None => out.push_str("None"),
            Py::Bool(true) => out.push_str("True"),
            Py::Bool(false) => out.push_str("False"),
            Py::Num(Num::Int(value)) => {
                let _ = write!(out, "{value}");
            }
            Py::Num(Num::Float(value)) => out.push_str(&float_repr(*value)),
            Py::Str(text) => str_repr(text, out),
            Py::Tuple(items) => sequence_repr(items, ('(', ')'), items.len() == 1, out),
            Py::List(items) => sequence_repr(items, ('[', ']'), false, out),
        }
    }
}

/// `repr` of a tuple or list: items joined by `, `; a 1-tuple gets a trailing comma.
fn sequence_repr(items: &[Py], brackets: (char, char), trailing_comma: bool, out: &mut String) {
    out.push(brackets.0);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        item.repr(out);
    }
    if trailing_comma {
        out.push(',');
    }
    out.push(brackets.1);
}

/// Python's `repr` of a `str`: single quotes unless the text has one and no double quote.
fn str_repr(text: &str, out: &mut String) {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c == '\x7f' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Python's `repr` of a `float`: the shortest round-trip digits, with an exponent below
/// 1e-4 and from 1e16 on (`1e-07`, `1e+16`), else a decimal point (`0.0`, `0.125`).
fn float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // Rust's `Debug` uses the same digits and the same thresholds; only the exponent differs.
    let text = format!("{value:?}");
    match text.split_once('e') {
        None => text,
        Some((mantissa, exponent)) => {
            let (sign, digits) = match exponent.strip_prefix('-') {
                Some(digits) => ('-', digits),
                None => ('+', exponent),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
    }
}

/// Renders a model's parameters as `param:` cells, in TraceLens's order.
fn cells(params: Vec<(&'static str, Py)>) -> Vec<(&'static str, String)> {
    params
        .into_iter()
        .map(|(name, value)| (name, value.cell()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::efficiency::args::Dims;

    #[test]
    fn unknown_ops_have_no_model_and_short_args_do_not_fit() {
        let args = ParsedArgs::default();
        assert_eq!(cost("aten::unknown", &args, &[]), Modelled::NoModel);
        assert!(!has_model("aten::unknown"));
        assert!(
            !has_model("aten::_flash_attention_forward"),
            "only its parent is modelled"
        );
        let one = ParsedArgs {
            dims: vec![Dims::Shape(vec![4, 4])],
            types: vec!["float".into()],
            ..ParsedArgs::default()
        };
        assert!(matches!(cost("aten::mm", &one, &[]), Modelled::Unfit(_)));
    }

    /// Every modelled name, with argument lists a model cannot use, answers without
    /// panicking.
    #[test]
    fn hostile_arguments_never_panic() {
        let names = gemm::NAMES
            .iter()
            .map(|(n, _)| *n)
            .chain(attention::NAMES.iter().map(|(n, _)| *n))
            .chain(elementwise::UNARY_NAMES.iter().map(|(n, _)| *n))
            .chain(norm::NAMES.iter().map(|(n, _)| *n))
            .chain(elementwise::BINARY_NAMES.iter().copied())
            .chain(reduce::NAMES.iter().copied())
            .chain(["aten::convolution"]);
        let shapes = [
            vec![],
            vec![Dims::Other, Dims::Other, Dims::Other],
            vec![Dims::Shape(vec![-1, 2, 3, 4]); 9],
            vec![Dims::Shape(vec![i64::MAX; 5]); 9],
            vec![Dims::Shape(vec![0; 4]); 9],
            vec![Dims::Shape(vec![]); 9],
        ];
        let texts = [
            vec![],
            vec!["garbage".to_owned(); 9],
            vec![String::new(); 9],
        ];
        let kernels = ["nvjet_", "Cijk_Alik_Bljk_x", "nvjet_tst_NT"];
        for name in names {
            assert!(has_model(name), "{name}");
            for dims in &shapes {
                for text in &texts {
                    let args = ParsedArgs {
                        dims: dims.clone(),
                        types: text.clone(),
                        strides: dims.clone(),
                        concrete: text.clone(),
                    };
                    let _ = cost(name, &args, &kernels);
                }
            }
        }
    }

    #[test]
    fn numbers_follow_python() {
        assert_eq!(Num::product(&[]), Num::Int(1));
        assert_eq!(Num::from(7).true_div(Num::from(2)), Ok(Num::Float(3.5)));
        assert_eq!(Num::from(-7).floor_div(Num::from(2)), Ok(Num::Int(-4)));
        assert!(Num::from(1).true_div(Num::from(0)).is_err());
        let huge = Num::product(&[i64::MAX, i64::MAX, i64::MAX]);
        assert!(matches!(huge, Num::Float(v) if v > 1e56));
    }

    #[test]
    fn values_render_as_pandas_does() {
        assert_eq!(Py::ints(&[4096, 1]).cell(), "(4096, 1)");
        assert_eq!(Py::ints(&[1024]).cell(), "(1024,)");
        assert_eq!(Py::ints(&[]).cell(), "()");
        assert_eq!(Py::Bool(true).cell(), "True");
        assert_eq!(Py::None.cell(), "");
        assert_eq!(Py::Str("conv2d".into()).cell(), "conv2d");
        let dtypes = Py::dtypes(&[Some("c10::BFloat16"), Some("float"), None]);
        assert_eq!(dtypes.cell(), "('c10::BFloat16', 'float', None)");
        assert_eq!(Py::List(vec![Py::int(1), Py::int(-2)]).cell(), "[1, -2]");
        assert_eq!(Py::Str("it's".into()).cell(), "it's");
        let mut quoted = String::new();
        str_repr("it's", &mut quoted);
        assert_eq!(quoted, "\"it's\"");
    }

    #[test]
    fn floats_render_as_python_repr() {
        let cases = [
            (0.0, "0.0"),
            (0.125, "0.125"),
            (1e-7, "1e-07"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789.5, "123456789.5"),
            (f64::NAN, "nan"),
        ];
        for (value, text) in cases {
            assert_eq!(float_repr(value), text);
        }
    }

    #[test]
    fn broadcasting_pads_and_rejects() {
        assert_eq!(
            broadcast(&[16, 16, 559, 64], &[1, 1, 559, 64]),
            Ok(vec![16, 16, 559, 64])
        );
        assert_eq!(
            broadcast(&[1024], &[16, 559, 1024]),
            Ok(vec![16, 559, 1024])
        );
        assert_eq!(broadcast(&[], &[3]), Ok(vec![3]));
        assert!(broadcast(&[2, 3], &[4, 3]).is_err());
    }
}
