//! What a performance model says about one op call: its family, FLOPs, bytes moved, and
//! which roof (matrix or vector unit, at which precision) bounds it.

use std::fmt;

/// The op families with a performance model. Each maps to one module of `models`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// Matrix multiplies: `aten::mm`, `addmm`, `bmm`, `baddbmm`, `_scaled_mm`, serving GEMMs.
    Gemm,
    /// Scaled-dot-product and flash attention.
    Attention,
    /// Convolution.
    Convolution,
    /// One-input elementwise ops (`copy_`, `silu`, `rsqrt`, activation-and-multiply).
    UnaryElementwise,
    /// Two-input elementwise ops with broadcasting (`add`, `mul`, `div`).
    BinaryElementwise,
    /// Reductions (`sum`, `mean`, `max`, ...).
    Reduce,
    /// Layer, group, batch and RMS normalisations.
    Normalization,
    /// Softmax and log-softmax, forward and backward.
    Softmax,
    /// Rotary position embeddings.
    Rope,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 9] = [
        Family::Gemm,
        Family::Attention,
        Family::Convolution,
        Family::UnaryElementwise,
        Family::BinaryElementwise,
        Family::Reduce,
        Family::Normalization,
        Family::Softmax,
        Family::Rope,
    ];

    /// The name in reports (`gemm`, `attention`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Gemm => "gemm",
            Family::Attention => "attention",
            Family::Convolution => "convolution",
            Family::UnaryElementwise => "unary_elementwise",
            Family::BinaryElementwise => "binary_elementwise",
            Family::Reduce => "reduce",
            Family::Normalization => "normalization",
            Family::Softmax => "softmax",
            Family::Rope => "rope",
        }
    }
}

/// The unit whose peak bounds an op's compute: matrix (tensor) cores or vector ALUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unit {
    /// Matrix / tensor cores.
    Matrix,
    /// Vector (SIMD) ALUs.
    Vector,
}

/// The precision an op computes in, from its dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Precision {
    /// 64-bit float.
    Fp64,
    /// 32-bit float.
    Fp32,
    /// 16-bit IEEE float.
    Fp16,
    /// bfloat16.
    Bf16,
    /// 8-bit floats (e4m3, e5m2 and their fnuz forms).
    Fp8,
    /// 4-bit floats (e2m1, MXFP4).
    Fp4,
}

impl Precision {
    /// The name in reports (`bf16`, `fp32`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp64 => "fp64",
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
            Precision::Fp4 => "fp4",
        }
    }
}

/// Which compute roof applies: a unit at a precision (`matrix_bf16`), as TraceLens names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComputeSpec {
    /// Matrix or vector unit.
    pub unit: Unit,
    /// Precision; `None` when the dtype has no float precision (integers, bool).
    pub precision: Option<Precision>,
}

impl fmt::Display for ComputeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.unit {
            Unit::Matrix => "matrix",
            Unit::Vector => "vector",
        };
        match self.precision {
            Some(precision) => write!(f, "{unit}_{}", precision.as_str()),
            None => Ok(()),
        }
    }
}

/// What a model computes for one op call.
#[derive(Debug, Clone, PartialEq)]
pub struct OpCost {
    /// The model's family.
    pub family: Family,
    /// Floating-point operations.
    pub flops: f64,
    /// Bytes moved to and from memory; `None` when a dtype's size is unknown.
    pub bytes: Option<f64>,
    /// The compute roof.
    pub spec: ComputeSpec,
    /// The parameters the model read (`M`, `N`, `K`, `bias`, shapes, dtypes), named as in
    /// TraceLens's `param:` columns and rendered as its values are (`(4096, 1)`, `True`);
    /// calls with equal parameters are one row of the efficiency table.
    pub params: Vec<(&'static str, String)>,
}

/// A model's answer for one op call.
#[derive(Debug, Clone, PartialEq)]
pub enum Modelled {
    /// No model covers this op name.
    NoModel,
    /// A model covers the name but the arguments do not fit it (the reason).
    Unfit(String),
    /// The cost.
    Cost(OpCost),
}
