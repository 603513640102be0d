//! An op call's argument lists, parsed from the JSON text the trace holds: one entry per
//! argument in each of `Input Dims`, `Input type`, `Input Strides` and `Concrete Inputs`.
//!
//! The models index these lists the way TraceLens (AMD-AGI/TraceLens,
//! `PerfModel/perf_model.py`) indexes the profiler's `args`; every access here is checked,
//! so a list that is short, or holds something other than a shape, makes the model answer
//! "does not fit" instead of panicking.

use serde_json::Value;
use stepscope_model::OpArgs;

/// One argument's entry in `Input Dims` or `Input Strides`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dims {
    /// A flat list of integers: a tensor's shape or strides, `[]` for a non-tensor argument.
    Shape(Vec<i64>),
    /// Anything else: a tensor list's nested lists, `null`, a number that is not an `i64`.
    Other,
}

impl Dims {
    /// A JSON entry: a list of `i64`s is a shape, anything else [`Dims::Other`].
    fn from_value(value: &Value) -> Dims {
        let Value::Array(items) = value else {
            return Dims::Other;
        };
        items
            .iter()
            .map(Value::as_i64)
            .collect::<Option<Vec<i64>>>()
            .map_or(Dims::Other, Dims::Shape)
    }

    /// Whether the entry is truthy as TraceLens tests it (`if dims[2]:`): a non-empty list.
    /// Nested lists are non-empty lists too, so [`Dims::Other`] counts as truthy.
    pub(crate) fn is_truthy(&self) -> bool {
        match self {
            Dims::Shape(values) => !values.is_empty(),
            Dims::Other => true,
        }
    }
}

/// The four argument lists of one op call. A list the trace did not record is empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ParsedArgs {
    /// `Input Dims`: each argument's shape.
    pub dims: Vec<Dims>,
    /// `Input type`: each argument's dtype name (`c10::BFloat16`, `Scalar`, `""` for `None`).
    pub types: Vec<String>,
    /// `Input Strides`: each tensor argument's strides.
    pub strides: Vec<Dims>,
    /// `Concrete Inputs`: each scalar argument's value as text (`"1"`, `"True"`, `""`).
    pub concrete: Vec<String>,
}

/// Parses an op call's argument lists. Fails when a present field is not a JSON list.
pub(crate) fn parse(args: OpArgs<'_>) -> Result<ParsedArgs, String> {
    Ok(ParsedArgs {
        dims: parse_list(args.input_dims, "Input Dims", Dims::from_value)?,
        types: parse_list(args.input_types, "Input type", text_of)?,
        strides: parse_list(args.input_strides, "Input Strides", Dims::from_value)?,
        concrete: parse_list(args.concrete_inputs, "Concrete Inputs", text_of)?,
    })
}

/// Parses a field's JSON text as a list, each item by `item`; an absent field is empty.
fn parse_list<T>(
    text: Option<&str>,
    field: &str,
    item: impl Fn(&Value) -> T,
) -> Result<Vec<T>, String> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|error| format!("`{field}` is not valid JSON: {error}"))?;
    match value {
        Value::Array(items) => Ok(items.iter().map(item).collect()),
        _ => Err(format!("`{field}` is not a JSON list")),
    }
}

/// A string entry as it is; `null` as `""` (what the profiler writes for `None`); any other
/// value as its JSON text.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl ParsedArgs {
    /// The shape of argument `index`. Fails when the argument is missing, is not a flat
    /// list of integers, or has a negative dimension (TraceLens would compute negative
    /// FLOPs from it; no real tensor has one).
    pub(crate) fn shape(&self, index: usize) -> Result<&[i64], String> {
        match self.dims.get(index) {
            None => Err(format!("`Input Dims` has no argument {index}")),
            Some(Dims::Other) => Err(format!("argument {index} is not a tensor shape")),
            Some(Dims::Shape(shape)) if shape.iter().any(|&d| d < 0) => {
                Err(format!("argument {index} has a negative dimension"))
            }
            Some(Dims::Shape(shape)) => Ok(shape),
        }
    }

    /// Whether `Input Dims` has an argument `index` that is truthy (TraceLens's
    /// `len(dims) > i and dims[i]`): a tensor, or a non-empty list.
    pub(crate) fn has_tensor(&self, index: usize) -> bool {
        self.dims.get(index).is_some_and(Dims::is_truthy)
    }

    /// The dtype name of argument `index`.
    pub(crate) fn dtype(&self, index: usize) -> Result<&str, String> {
        self.types
            .get(index)
            .map(String::as_str)
            .ok_or_else(|| format!("`Input type` has no argument {index}"))
    }

    /// The concrete value of argument `index`, as text.
    pub(crate) fn concrete(&self, index: usize) -> Result<&str, String> {
        self.concrete
            .get(index)
            .map(String::as_str)
            .ok_or_else(|| format!("`Concrete Inputs` has no argument {index}"))
    }

    /// The strides of argument `index`; `None` when the trace recorded no `Input Strides`
    /// at all. TraceLens reads strides only for its `param:` columns: a trace without them
    /// gives `None` there for GEMMs (it catches the `KeyError`) and drops the call for the
    /// other families; here every family models such a call, with `None` strides.
    pub(crate) fn stride(&self, index: usize) -> Result<Option<&[i64]>, String> {
        if self.strides.is_empty() {
            return Ok(None);
        }
        match self.strides.get(index) {
            None => Err(format!("`Input Strides` has no argument {index}")),
            Some(Dims::Other) => Err(format!("the strides of argument {index} are not a list")),
            Some(Dims::Shape(strides)) => Ok(Some(strides)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args<'a>(dims: &'a str, types: &'a str, concrete: &'a str) -> OpArgs<'a> {
        OpArgs {
            input_dims: Some(dims),
            input_types: Some(types),
            input_strides: None,
            concrete_inputs: Some(concrete),
        }
    }

    #[test]
    fn parses_pretty_printed_lists() {
        let parsed = parse(args(
            "[\n  [8944, 1024],\n  [1024, 2816], []\n]",
            "[\"c10::BFloat16\", \"Scalar\", \"\"]",
            "[\"\", \"1\", \"True\"]",
        ))
        .unwrap();
        assert_eq!(
            parsed.dims,
            vec![
                Dims::Shape(vec![8944, 1024]),
                Dims::Shape(vec![1024, 2816]),
                Dims::Shape(vec![])
            ]
        );
        assert_eq!(parsed.types, ["c10::BFloat16", "Scalar", ""]);
        assert_eq!(parsed.concrete, ["", "1", "True"]);
        assert!(parsed.strides.is_empty());
        assert_eq!(parsed.stride(5), Ok(None));
    }

    #[test]
    fn tensor_lists_and_odd_values_are_other() {
        let parsed = parse(args(
            "[[[1, 2], [3]], [1.5], null, [-1]]",
            "[null, 3]",
            "[]",
        ))
        .unwrap();
        assert_eq!(parsed.dims[..3], [Dims::Other, Dims::Other, Dims::Other]);
        assert_eq!(parsed.types, ["", "3"]);
        assert!(parsed.shape(0).is_err());
        assert!(parsed.shape(3).is_err(), "negative dimension");
        assert!(parsed.shape(9).is_err());
        assert!(parsed.has_tensor(0));
        assert!(!parsed.has_tensor(9));
    }

    #[test]
    fn missing_fields_are_empty_and_bad_json_fails() {
        assert_eq!(parse(OpArgs::default()), Ok(ParsedArgs::default()));
        assert!(parse(args("[[1, 2]", "[]", "[]")).is_err());
        assert!(parse(args("{\"a\": 1}", "[]", "[]")).is_err());
    }
}
