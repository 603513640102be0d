//! Dtype names as the PyTorch profiler writes them (`c10::BFloat16`, `float`, `long int`,
//! `Scalar`): their size in bytes and the precision they compute in.
//!
//! Both tables are TraceLens's (AMD-AGI/TraceLens, `PerfModel/utils.py`: `name2bpe` and
//! `torch_dtype_map`), looked up on the lower-cased name as there.

use super::spec::Precision;

/// Bytes per element of a dtype (TraceLens `name2bpe`); `None` for a name it does not list
/// (`bool`, `ScalarList`, `""`, `unsigned int`, `long`, complex types, ...).
///
/// TraceLens quirks kept: `Scalar` (a Python number argument) counts 4 bytes, and the
/// packed FP4 pair `c10::Float4_e2m1fn_x2` counts 1.
pub(crate) fn bytes_per_element(name: &str) -> Option<u32> {
    let bytes = match name.to_lowercase().as_str() {
        "double" | "long int" => 8,
        "float" | "scalar" | "int" => 4,
        "c10::half" | "c10::bfloat16" => 2,
        "c10::float8_e4m3fnuz"
        | "c10::float8_e4m3fn"
        | "c10::float8_e5m2"
        | "c10::float8_e8m0fnu"
        | "unsigned char"
        | "signed char"
        | "fp8"
        | "c10::float4_e2m1fn_x2"
        | "fp4" => 1,
        _ => return None,
    };
    Some(bytes)
}

/// The precision a dtype computes in (TraceLens `torch_dtype_map`); `None` for integer,
/// bool and unlisted dtypes, which gives an empty compute spec.
///
/// TraceLens quirks kept: `unsigned char` maps to FP8, and `c10::Float8_e5m2` (listed in
/// `name2bpe`) maps to none.
pub(crate) fn precision(name: &str) -> Option<Precision> {
    let precision = match name.to_lowercase().as_str() {
        "float" => Precision::Fp32,
        "double" => Precision::Fp64,
        "c10::half" => Precision::Fp16,
        "c10::bfloat16" => Precision::Bf16,
        "c10::float8_e4m3fnuz" | "c10::float8_e4m3fn" | "unsigned char" | "fp8" => Precision::Fp8,
        "fp4" | "mxfp4" | "c10::float4_e2m1fn_x2" => Precision::Fp4,
        _ => return None,
    };
    Some(precision)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_name2bpe_case_insensitively() {
        assert_eq!(bytes_per_element("c10::BFloat16"), Some(2));
        assert_eq!(bytes_per_element("Scalar"), Some(4));
        assert_eq!(bytes_per_element("long int"), Some(8));
        assert_eq!(bytes_per_element("c10::Float8_e4m3fnuz"), Some(1));
        assert_eq!(bytes_per_element("unsigned char"), Some(1));
        for unknown in [
            "bool",
            "ScalarList",
            "",
            "unsigned int",
            "long",
            "c10::Float8_e5m2fnuz",
        ] {
            assert_eq!(bytes_per_element(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn precisions_follow_torch_dtype_map() {
        assert_eq!(precision("c10::BFloat16"), Some(Precision::Bf16));
        assert_eq!(precision("float"), Some(Precision::Fp32));
        assert_eq!(precision("double"), Some(Precision::Fp64));
        assert_eq!(precision("c10::Half"), Some(Precision::Fp16));
        assert_eq!(precision("unsigned char"), Some(Precision::Fp8));
        assert_eq!(precision("c10::Float4_e2m1fn_x2"), Some(Precision::Fp4));
        for none in ["int", "long int", "bool", "Scalar", "c10::Float8_e5m2", ""] {
            assert_eq!(precision(none), None, "{none}");
        }
    }
}
