//! The efficiency pass's contract on hostile op arguments.

use serde_json::{Value, json};
use stepscope_analysis::KernelCategories;
use stepscope_analysis::{AnalysisOptions, analyze};
use stepscope_ingest::{ReadOptions, read_trace_bytes};

/// One op per model family and argument layout (the first input byte picks one).
const OPS: &[&str] = &[
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::_scaled_mm",
    "aten::linear",
    "aten::matmul",
    "aiter::gemm_a16w16",
    "aiter::gemm_a16w16_atomic_",
    "aiter::_gemm_a16w16_asm",
    "vllm::rocm_unquantized_gemm",
    "aiter::gemm_a8w8_blockscale_ck",
    "aiter::gemm_afp4wfp4_",
    "aiter::gemm_a4w4",
    "aiter::batched_gemm_a16wfp4_",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "flash_attn::_flash_attn_forward",
    "aten::convolution",
    "aten::copy_",
    "aten::silu",
    "aten::add",
    "aten::mul",
    "aten::sum",
    "aten::cumsum",
    "aten::native_layer_norm",
    "aten::native_group_norm",
    "aten::_fused_rms_norm",
    "aten::_softmax",
    "aten::_softmax_backward_data",
    "vllm::unified_attention_with_output",
    "aiter::mha_batch_prefill",
    "sglang_profiler::attention_paged_attention_ragged_3",
    "sglang::store_cache",
];

/// Builds a one-op trace from `data`, analyses it, and checks the efficiency rows.
pub fn check(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let name = OPS[usize::from(pick) % OPS.len()];
    let mut fields = rest.splitn(4, |&b| b == b'\n').map(field);
    let args = json!({
        "Input Dims": fields.next().unwrap_or(Value::Null),
        "Input type": fields.next().unwrap_or(Value::Null),
        "Input Strides": fields.next().unwrap_or(Value::Null),
        "Concrete Inputs": fields.next().unwrap_or(Value::Null),
        "External id": 1,
    });
    let doc = json!({
        "deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X"}],
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 0, "dur": 100,
             "name": "execute_context_1(16)_generation_2(4)|sq16sk16sqsq256sqsk256|sq1sk20sqsq1sqsk20"},
            {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10, "dur": 50,
             "args": args},
            {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1,
             "ts": 20, "dur": 5, "args": {"correlation": 7}},
            {"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk_BBS_BH_MT64x16x64", "pid": 0,
             "tid": 7, "ts": 30, "dur": 10, "args": {"correlation": 7, "device": 0, "stream": 7}}
        ]
    });
    let bytes = serde_json::to_vec(&doc).expect("a JSON value serialises");
    let trace = read_trace_bytes(&bytes, &ReadOptions::default()).expect("a valid trace reads");
    let categories = KernelCategories::default();
    let analysis = analyze(&trace, &AnalysisOptions::new(&categories));
    for row in &analysis.efficiency.rows {
        let finite = |v: f64| v.is_finite() && v >= 0.0;
        assert!(finite(row.gflops), "{name}: {row:?}");
        assert!(row.data_moved_mib.is_none_or(finite), "{name}: {row:?}");
        assert!(
            row.count >= 1 && finite(row.kernel_us_sum),
            "{name}: {row:?}"
        );
        for stats in [&row.tflops, &row.tbps].into_iter().flatten() {
            assert!(finite(stats.mean) && finite(stats.max), "{name}: {row:?}");
        }
    }
}

/// A field as JSON where it parses, else as a string of its (lossy) text.
fn field(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}
