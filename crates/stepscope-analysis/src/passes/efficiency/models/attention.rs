//! Scaled-dot-product attention, as TraceLens (AMD-AGI/TraceLens, `PerfModel/perf_model.py`
//! class `SDPA`, its `extract_sdpa_cfg` and the `aten__scaled_dot_product_*` and
//! `flash_attention` subclasses) models it. With batch B, query and key/value lengths N_Q and
//! N_KV, head counts H_Q and H_KV, and head sizes d_qk and d_v:
//!
//! ```text
//! FLOPs = B·H_Q·(2·N_Q·N_KV·d_qk) + B·H_Q·(2·N_Q·d_v·N_KV)    (QKᵀ and PV, no softmax)
//!         halved when causal, which requires N_Q = N_KV
//! bytes = (B·N_Q·H_Q·d_qk + B·N_KV·H_KV·d_qk + B·N_KV·H_KV·d_v + B·N_Q·H_Q·d_v) · 2
//! ```
//!
//! TraceLens quirk kept: the bytes use 2 bytes per element whatever the dtype
//! (`SDPA.bytes(bytes_per_element=2)` is called without its argument).
//!
//! q, k, v are arguments 0-2, `[B, H, N, d]` for the aten ops and `[B, N, H, d]` for
//! `FlashAttnFunc` / `flash_attn::_flash_attn_forward`. Batch sizes must agree, K and V must
//! have the same heads and length, and Q and K the same head size. Dropout and causal come
//! from `Concrete Inputs` 3 and 4 (`_flash_attention`), 5 and 6 (`_efficient_attention`,
//! `_cudnn_attention`: `''`/`None`/unparsable dropout is 0.0, causal is `value.lower() ==
//! 'true'`), or 3 and 5 (flash-attn: `float(...)` and `eval(...)`, here `True`/`False` only).
//! The precision is that of `dtype_A_B[0]` (`types[0]`).

use super::{Fit, Num, Py, cells, spec};
use crate::passes::efficiency::args::ParsedArgs;
use crate::passes::efficiency::spec::{Family, OpCost, Unit};

/// The attention models, by argument layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attention {
    /// `aten::_scaled_dot_product_flash_attention`.
    AtenFlash,
    /// `aten::_scaled_dot_product_efficient_attention` and `_cudnn_attention`.
    AtenEfficient,
    /// Dao-AILab flash-attn's forward.
    FlashAttn,
}

/// Op names and their models.
pub(super) const NAMES: &[(&str, Attention)] = &[
    (
        "aten::_scaled_dot_product_flash_attention",
        Attention::AtenFlash,
    ),
    (
        "aten::_scaled_dot_product_efficient_attention",
        Attention::AtenEfficient,
    ),
    (
        "aten::_scaled_dot_product_cudnn_attention",
        Attention::AtenEfficient,
    ),
    ("FlashAttnFunc", Attention::FlashAttn),
    ("flash_attn::_flash_attn_forward", Attention::FlashAttn),
];

/// `extract_sdpa_cfg`'s result.
struct Config {
    /// Batch size.
    b: i64,
    /// Query length.
    n_q: i64,
    /// Query heads.
    h_q: i64,
    /// Key/value length.
    n_kv: i64,
    /// Key/value heads.
    h_kv: i64,
    /// Head size of Q and K.
    d_qk: i64,
    /// Head size of V.
    d_v: i64,
}

/// The cost of one attention call.
pub(super) fn cost(kind: Attention, args: &ParsedArgs) -> Fit<OpCost> {
    let layout = match kind {
        Attention::FlashAttn => [0, 2, 1, 3],
        _ => [0, 1, 2, 3],
    };
    let config = extract_config([args.shape(0)?, args.shape(1)?, args.shape(2)?], layout)?;
    let (dropout, causal) = match kind {
        Attention::AtenFlash => (
            optional_float(args.concrete(3)?),
            aten_bool(args.concrete(4)?),
        ),
        Attention::AtenEfficient => (
            optional_float(args.concrete(5)?),
            aten_bool(args.concrete(6)?),
        ),
        Attention::FlashAttn => (
            python_float(args.concrete(3)?)?,
            literal_bool(args.concrete(5)?)?,
        ),
    };
    let dtypes: Vec<Option<&str>> = args
        .types
        .iter()
        .take(2)
        .map(|t| Some(t.as_str()))
        .collect();
    let Some(&dtype_a) = dtypes.first() else {
        return Err("`Input type` is empty".to_owned());
    };
    let mut params = shape_params(&config);
    if kind == Attention::FlashAttn {
        params.push(("q_stride", Py::strides(args.stride(0)?)));
        params.push(("k_stride", Py::strides(args.stride(1)?)));
        params.push(("v_stride", Py::strides(args.stride(2)?)));
    }
    params.extend([
        ("dropout", Py::Num(Num::Float(dropout))),
        ("causal", Py::Bool(causal)),
        ("flash_impl", Py::Bool(kind != Attention::AtenEfficient)),
        ("dtype_A_B", Py::dtypes(&dtypes)),
    ]);
    Ok(OpCost {
        family: Family::Attention,
        flops: flops(&config, causal)?.to_f64(),
        bytes: Some(bytes(&config).to_f64()),
        spec: spec(Unit::Matrix, dtype_a),
        params: cells(params),
    })
}

/// `extract_sdpa_cfg`: B, H, N, d of q, k, v at the `layout` positions, checked to agree.
fn extract_config(qkv: [&[i64]; 3], layout: [usize; 4]) -> Fit<Config> {
    let pick = |shape: &[i64]| -> Fit<[i64; 4]> {
        let mut out = [0; 4];
        for (slot, &index) in out.iter_mut().zip(&layout) {
            *slot = super::dim(shape, index)?;
        }
        Ok(out)
    };
    let ([b, h_q, n_q, d_qk], [b_k, h_k, n_k, d_k], [b_v, h_v, n_v, d_v]) =
        (pick(qkv[0])?, pick(qkv[1])?, pick(qkv[2])?);
    if b != b_k || b != b_v {
        return Err(format!("batch sizes differ: {b}, {b_k}, {b_v}"));
    }
    if h_k != h_v || n_k != n_v {
        return Err(format!(
            "K is {h_k} heads × {n_k} and V {h_v} heads × {n_v}"
        ));
    }
    if d_qk != d_k {
        return Err(format!("head sizes of Q and K differ: {d_qk} and {d_k}"));
    }
    Ok(Config {
        b,
        n_q,
        h_q,
        n_kv: n_k,
        h_kv: h_k,
        d_qk,
        d_v,
    })
}

/// The `B` .. `d_h_v` parameters.
fn shape_params(config: &Config) -> Vec<(&'static str, Py)> {
    vec![
        ("B", Py::int(config.b)),
        ("N_Q", Py::int(config.n_q)),
        ("H_Q", Py::int(config.h_q)),
        ("N_KV", Py::int(config.n_kv)),
        ("H_KV", Py::int(config.h_kv)),
        ("d_h_qk", Py::int(config.d_qk)),
        ("d_h_v", Py::int(config.d_v)),
    ]
}

/// `SDPA.flops_func`.
fn flops(config: &Config, causal: bool) -> Fit<Num> {
    let [b, n_q, h_q, n_kv, d_qk, d_v] = [
        config.b,
        config.n_q,
        config.h_q,
        config.n_kv,
        config.d_qk,
        config.d_v,
    ]
    .map(Num::from);
    let two = Num::Int(2);
    let total = b * h_q * (two * n_q * n_kv * d_qk) + b * h_q * (two * n_q * d_v * n_kv);
    match causal {
        false => Ok(total),
        true if config.n_q == config.n_kv => total.true_div(two),
        true => Err(format!(
            "causal but N_Q {} != N_KV {}",
            config.n_q, config.n_kv
        )),
    }
}

/// `SDPA.bytes_func` at TraceLens's fixed 2 bytes per element.
fn bytes(config: &Config) -> Num {
    let [b, n_q, h_q, n_kv, h_kv, d_qk, d_v] = [
        config.b,
        config.n_q,
        config.h_q,
        config.n_kv,
        config.h_kv,
        config.d_qk,
        config.d_v,
    ]
    .map(Num::from);
    (b * n_q * h_q * d_qk + b * n_kv * h_kv * d_qk + b * n_kv * h_kv * d_v + b * n_q * h_q * d_v)
        * Num::Int(2)
}

/// TraceLens `optional_float`: `''`, `'None'` or an unparsable value give 0.0.
fn optional_float(text: &str) -> f64 {
    match text {
        "" | "None" => 0.0,
        text => python_float(text).unwrap_or(0.0),
    }
}

/// Python's `float(text)`: surrounding whitespace allowed, `inf` and `nan` too.
fn python_float(text: &str) -> Fit<f64> {
    text.trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a float"))
}

/// The aten ops' causal flag: `text.lower() == 'true'`, false for `''` and `'None'`.
fn aten_bool(text: &str) -> bool {
    text.to_lowercase() == "true"
}

/// `eval(text)` of a Python bool literal.
fn literal_bool(text: &str) -> Fit<bool> {
    match text.trim() {
        "True" => Ok(true),
        "False" => Ok(false),
        _ => Err(format!("`{text}` is not a Python bool")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::cost as model_cost;
    use super::super::test_support::{MIB, cost};
    use crate::passes::efficiency::args::{Dims, ParsedArgs};
    use crate::passes::efficiency::spec::{Modelled, Precision};

    fn args(shapes: [&[i64]; 3], dtype: &str, concrete: &[&str]) -> ParsedArgs {
        let mut dims: Vec<Dims> = shapes.iter().map(|s| Dims::Shape(s.to_vec())).collect();
        let mut types = vec![dtype.to_owned(); 3];
        while dims.len() < concrete.len() {
            dims.push(Dims::Shape(Vec::new()));
            types.push("Scalar".to_owned());
        }
        ParsedArgs {
            dims,
            types,
            strides: Vec::new(),
            concrete: concrete.iter().map(|c| c.to_string()).collect(),
        }
    }

    /// h100 Qwen `SDPA_fwd.csv`, the worked row of the notes' section 8.
    #[test]
    fn causal_flash_attention_halves_the_flops() {
        let qkv: &[i64] = &[16, 16, 559, 64];
        let concrete = ["", "", "", "0.", "True", "False", "0.125"];
        let a = args([qkv; 3], "c10::BFloat16", &concrete);
        let c = cost("aten::_scaled_dot_product_flash_attention", &a);
        assert_eq!(c.flops / 1e9, 10.239377408);
        assert_eq!(c.bytes.unwrap() / MIB, 69.875);
        assert_eq!(c.spec.precision, Some(Precision::Bf16));
        let rendered: Vec<String> = c.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            rendered.join(" "),
            "B=16 N_Q=559 H_Q=16 N_KV=559 H_KV=16 d_h_qk=64 d_h_v=64 dropout=0.0 causal=True \
             flash_impl=True dtype_A_B=('c10::BFloat16', 'c10::BFloat16')"
        );
    }

    /// xdit `SDPA_fwd.csv`, not causal.
    #[test]
    fn non_causal_attention_counts_the_full_square() {
        let qkv: &[i64] = &[2, 38, 4429, 64];
        let concrete = ["", "", "", "0.", "False", "False", "0.125"];
        let c = cost(
            "aten::_scaled_dot_product_flash_attention",
            &args([qkv; 3], "c10::BFloat16", &concrete),
        );
        assert_eq!(c.flops / 1e9, 381.649693696);
        assert_eq!(c.bytes.unwrap() / MIB, 164.357421875);
    }

    /// Hand-computed: bytes stay at 2 per element for float, causal needs N_Q = N_KV.
    #[test]
    fn efficient_attention_reads_later_flags_and_fixed_bytes() {
        let (q, kv): (&[i64], &[i64]) = (&[1, 4, 8, 32], &[1, 2, 16, 32]);
        let concrete = ["", "", "", "", "False", "0.1", "False"];
        let c = cost(
            "aten::_scaled_dot_product_efficient_attention",
            &args([q, kv, kv], "float", &concrete),
        );
        assert_eq!(c.flops, (4 * 2 * 8 * 16 * 32 * 2) as f64);
        assert_eq!(
            c.bytes,
            Some(((8 * 4 * 32 + 16 * 2 * 32 * 2 + 8 * 4 * 32) * 2) as f64)
        );
        assert_eq!(c.params[7], ("dropout", "0.1".to_owned()));
        assert_eq!(c.params[9], ("flash_impl", "False".to_owned()));
        let causal = ["", "", "", "", "False", "", "true"];
        let a = args([q, kv, kv], "float", &causal);
        assert!(matches!(
            model_cost("aten::_scaled_dot_product_cudnn_attention", &a, &[]),
            Modelled::Unfit(_)
        ));
    }

    /// Hand-computed: flash-attn's `[B, N, H, d]` layout and its stride parameters.
    #[test]
    fn flash_attn_uses_bnhd_layout() {
        let qkv: &[i64] = &[2, 128, 8, 64];
        let mut a = args([qkv; 3], "c10::Half", &["", "", "", "0.0", "0.125", "True"]);
        a.strides = vec![Dims::Shape(vec![65536, 512, 64, 1]); 3];
        let c = cost("FlashAttnFunc", &a);
        assert_eq!(c.flops, (2 * 8 * 2 * 128 * 128 * 64 * 2 / 2) as f64);
        assert_eq!(c.params[7], ("q_stride", "(65536, 512, 64, 1)".to_owned()));
        assert_eq!(c.params[11].1, "True");
        a.concrete[5] = "maybe".to_owned();
        assert!(matches!(
            model_cost("FlashAttnFunc", &a, &[]),
            Modelled::Unfit(_)
        ));
    }
}
