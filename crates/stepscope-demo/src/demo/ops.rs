//! Recorded input shapes of the demo's `cpu_op` events (`record_shapes=True`).

/// `Concrete Inputs`, `Input type`, `Input Strides`, `Input Dims` of an op.
pub(crate) type Shapes = (
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static [u64]],
    &'static [&'static [u64]],
);

const BF16: &str = "c10::BFloat16";

/// The recorded inputs of the op called `name` (a generic one-tensor record for others).
pub(crate) fn shapes(name: &str) -> Shapes {
    match name {
        "aten::mm" => (
            &["", ""],
            &[BF16, BF16],
            &[&[4096, 1], &[1, 4096]],
            &[&[32, 4096], &[4096, 6144]],
        ),
        "aten::embedding" => (
            &["", "", "-1", "False", "False"],
            &[BF16, "long int", "Scalar", "Scalar", "Scalar"],
            &[&[4096, 1], &[1], &[], &[], &[]],
            &[&[151_936, 4096], &[32], &[], &[], &[]],
        ),
        "aten::copy_" => (
            &["", "", "False"],
            &["long int", "long int", "Scalar"],
            &[&[1], &[1], &[]],
            &[&[32], &[32], &[]],
        ),
        "aten::fill_" => (
            &["", "1"],
            &["long int", "Scalar"],
            &[&[1], &[]],
            &[&[32], &[]],
        ),
        "aten::_softmax" | "aten::argmax" | "aten::topk" => (
            &["", "-1", "False"],
            &["float", "Scalar", "Scalar"],
            &[&[151_936, 1], &[], &[]],
            &[&[32, 151_936], &[], &[]],
        ),
        "aten::to" => (
            &["", "6", "False", "False", ""],
            &[BF16, "Scalar", "Scalar", "Scalar", ""],
            &[&[151_936, 1], &[], &[], &[], &[]],
            &[&[32, 151_936], &[], &[], &[], &[]],
        ),
        _ => (&[""], &[BF16], &[&[4096, 1]], &[&[32, 4096]]),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn shapes_line_up() {
        for name in [
            "aten::mm",
            "aten::embedding",
            "aten::copy_",
            "aten::fill_",
            "aten::topk",
            "aten::to",
            "x",
        ] {
            let (a, b, c, d) = super::shapes(name);
            assert_eq!(a.len(), b.len());
            assert_eq!(b.len(), c.len());
            assert_eq!(c.len(), d.len());
        }
    }
}
