//! Helpers the family modules' tests share: argument lists from shapes, and a model's cost
//! that must be there.

use super::super::args::{Dims, ParsedArgs};
use super::super::spec::{Modelled, OpCost};

/// Bytes in a MiB, TraceLens's "MB".
pub(super) const MIB: f64 = 1024.0 * 1024.0;

/// Argument lists of tensors with `dims`, dtypes `types` and concrete inputs `concrete`.
pub(super) fn args(dims: &[&[i64]], types: &[&str], concrete: &[&str]) -> ParsedArgs {
    ParsedArgs {
        dims: dims.iter().map(|d| Dims::Shape(d.to_vec())).collect(),
        types: types.iter().map(|t| t.to_string()).collect(),
        strides: Vec::new(),
        concrete: concrete.iter().map(|c| c.to_string()).collect(),
    }
}

/// The cost of a call that launched `kernels`; panics when the model gives none.
pub(super) fn cost_with(name: &str, args: &ParsedArgs, kernels: &[&str]) -> OpCost {
    match super::cost(name, args, kernels) {
        Modelled::Cost(cost) => cost,
        other => panic!("{name}: {other:?}"),
    }
}

/// The cost of a call whose kernels the model does not read.
pub(super) fn cost(name: &str, args: &ParsedArgs) -> OpCost {
    cost_with(name, args, &[])
}
