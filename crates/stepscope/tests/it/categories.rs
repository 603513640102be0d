//! Kernel categories on the real LLM inference traces: the built-in table leaves under
//! 10% of GPU time (kernels, memcpys and memsets, by duration) in `other`.

use crate::common;
use stepscope_analysis::{KernelCategories, categorize_names};
use stepscope_model::{GpuEventKind, NameId, Trace};

/// GPU time per category of one trace.
struct Shares {
    table: KernelCategories,
    nanos: Vec<i64>,
    total: i64,
    /// `other` kernels with their time, longest first.
    others: Vec<(String, i64)>,
}

impl Shares {
    fn of(relative: &str) -> Self {
        let trace = common::read(relative);
        let table = KernelCategories::embedded();
        Self::compute(&trace, table)
    }

    fn compute(trace: &Trace, table: KernelCategories) -> Self {
        let categorized = categorize_names(trace, &table);
        assert_eq!(categorized.by_name.len(), trace.names.len());
        let mut nanos = vec![0_i64; table.names().len()];
        let mut other_by_name = vec![0_i64; trace.names.len()];
        for (name, duration) in trace.gpu.name.iter().zip(&trace.gpu.duration) {
            let category = categorized.get(*name);
            nanos[category.index()] += duration.as_nanos();
            if category == table.other() {
                other_by_name[name.index()] += duration.as_nanos();
            }
        }
        let mut others: Vec<(String, i64)> = other_by_name
            .iter()
            .enumerate()
            .filter(|&(_, &ns)| ns > 0)
            .map(|(i, &ns)| (trace.name(NameId::from_index(i)).to_owned(), ns))
            .collect();
        others.sort_by_key(|&(_, ns)| std::cmp::Reverse(ns));
        let total = nanos.iter().sum();
        Self {
            table,
            nanos,
            total,
            others,
        }
    }

    fn share(&self, category: &str) -> f64 {
        let id = self
            .table
            .id(category)
            .unwrap_or_else(|| panic!("no category {category}"));
        self.nanos[id.index()] as f64 / self.total as f64
    }

    fn largest(&self) -> &str {
        let (index, _) = self
            .nanos
            .iter()
            .enumerate()
            .max_by_key(|&(_, ns)| *ns)
            .unwrap();
        &self.table.names()[index]
    }

    /// Asserts `other` stays under 10% of GPU time, listing its top kernels if not.
    #[track_caller]
    fn assert_other_below_ten_percent(&self, relative: &str) {
        assert!(self.total > 0, "{relative}: no GPU time");
        let other = self.share("other");
        let top: Vec<String> = self
            .others
            .iter()
            .take(10)
            .map(|(name, ns)| format!("{:.2}% {name}", 100.0 * *ns as f64 / self.total as f64))
            .collect();
        assert!(
            other < 0.10,
            "{relative}: `other` is {:.2}% of GPU time; top `other` kernels:\n{}",
            100.0 * other,
            top.join("\n")
        );
    }
}

const SGLANG_DECODE: &str =
    "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";
const SGLANG_PREFILL_DECODE: &str =
    "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz";
const VLLM_DECODE_FULL: &str =
    "tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz";
const VLLM_PIECEWISE: &str =
    "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz";
const XDIT_FLUX: &str =
    "tracelens/tests/traces/inference/xdit_flux.1/capture_traces/capture_trace_rank_0.json.gz";
const XDIT_SD35: &str = "tracelens/tests/traces/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz";
const QWEN_H100: &str = "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";
const QWEN_MI300: &str = "tracelens/tests/traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz";

#[test]
fn sglang_qwen3_decode() {
    let shares = Shares::of(SGLANG_DECODE);
    shares.assert_other_below_ten_percent(SGLANG_DECODE);
    // hipBLASLt GEMMs, then ll4mi paged attention; aiter fused add+RMSNorm+quant.
    assert_eq!(shares.largest(), "gemm");
    assert!(shares.share("attention") > 0.15);
    assert!(shares.share("normalization") > 0.03);
    assert!(shares.share("activation") > 0.01);
    assert!(shares.share("rope") > 0.01);
    assert!(shares.share("sampling") > 0.0, "greedy argmax");
}

#[test]
fn sglang_qwen3_prefill_decode() {
    let shares = Shares::of(SGLANG_PREFILL_DECODE);
    shares.assert_other_below_ten_percent(SGLANG_PREFILL_DECODE);
    assert_eq!(shares.largest(), "gemm");
    assert!(shares.share("attention") > 0.02, "CK batch-prefill FMHA");
}

#[test]
fn vllm_gpt_oss_decode_full_graph() {
    let shares = Shares::of(VLLM_DECODE_FULL);
    shares.assert_other_below_ten_percent(VLLM_DECODE_FULL);
    // gpt-oss: triton_kernels matmul_ogs expert GEMMs and routing dominate.
    assert_eq!(shares.largest(), "moe");
    assert!(shares.share("moe") > 0.5);
    assert!(shares.share("attention") > 0.03, "unified attention");
    assert!(shares.share("gemm") > 0.05);
}

#[test]
fn vllm_gpt_oss_prefill_decode_piecewise() {
    let shares = Shares::of(VLLM_PIECEWISE);
    shares.assert_other_below_ten_percent(VLLM_PIECEWISE);
    assert_eq!(shares.largest(), "moe");
    assert!(shares.share("moe") > 0.5);
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn xdit_flux_capture_and_replay() {
    let shares = Shares::of(XDIT_FLUX);
    shares.assert_other_below_ten_percent(XDIT_FLUX);
    assert_eq!(shares.largest(), "gemm");
    assert!(shares.share("attention") > 0.0, "aiter FMHA");
    assert!(shares.share("convolution") > 0.0, "VAE convolutions");
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn xdit_stable_diffusion_3_5() {
    let shares = Shares::of(XDIT_SD35);
    shares.assert_other_below_ten_percent(XDIT_SD35);
    assert_eq!(shares.largest(), "gemm");
    assert!(shares.share("attention") > 0.2, "Triton attn_fwd");
}

#[test]
fn qwen_eager_h100() {
    let shares = Shares::of(QWEN_H100);
    shares.assert_other_below_ten_percent(QWEN_H100);
    // Eager PyTorch: the unfused RMSNorm/rotary math runs as elementwise kernels.
    assert_eq!(shares.largest(), "elementwise");
    assert!(shares.share("gemm") > 0.2, "nvjet/xmma cuBLAS GEMMs");
    assert!(shares.share("attention") > 0.05, "pytorch_flash");
    assert!(shares.share("memcpy_memset") > 0.0, "cuBLAS memsets");
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn qwen_eager_mi300() {
    let shares = Shares::of(QWEN_MI300);
    shares.assert_other_below_ten_percent(QWEN_MI300);
    assert!(shares.share("gemm") > 0.3, "hipBLASLt GEMMs");
    assert!(shares.share("attention") > 0.1, "Triton attn_fwd");
}

#[test]
fn memcpy_and_memset_events_are_memory_whatever_their_name() {
    let trace = common::read(QWEN_H100);
    let table = KernelCategories::embedded();
    let categorized = categorize_names(&trace, &table);
    let mut copies = 0;
    for (kind, name) in trace.gpu.kind.iter().zip(&trace.gpu.name) {
        if *kind != GpuEventKind::Kernel {
            copies += 1;
            assert_eq!(
                categorized.get(*name),
                table.memory(),
                "{}",
                trace.name(*name)
            );
        }
    }
    assert!(copies > 0, "the H100 Qwen trace has memsets and a memcpy");
}

#[test]
fn user_table_replaces_the_built_in_one() {
    let trace = common::read(SGLANG_DECODE);
    let table = KernelCategories::from_toml(
        r#"
        [[category]]
        name = "tensile"
        patterns = ["^Cijk_"]
        "#,
    )
    .unwrap();
    let shares = Shares::compute(&trace, table);
    assert_eq!(shares.table.names(), ["tensile", "memcpy_memset", "other"]);
    assert!(shares.share("tensile") > 0.5);
    assert!(
        shares.share("other") > 0.2,
        "attention and the rest are unmatched"
    );
}

/// Every shared Kineto JSON trace with GPU events.
fn every_shared_trace_with_gpu_events() -> Vec<String> {
    let root = common::shared_traces();
    let mut found = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("shared traces folder") {
            let path = entry.expect("entry").path();
            let name = path.to_string_lossy().to_string();
            if path.is_dir() {
                stack.push(path);
            } else if (name.ends_with(".json") || name.ends_with(".json.gz"))
                && !name.contains("rocprof/")
            {
                found.push(
                    path.strip_prefix(&root)
                        .expect("under root")
                        .to_string_lossy()
                        .to_string(),
                );
            }
        }
    }
    found.sort();
    found
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn other_stays_under_ten_percent_on_every_shared_trace() {
    let traces = every_shared_trace_with_gpu_events();
    assert!(traces.len() >= 20, "{traces:?}");
    for relative in traces {
        let shares = Shares::of(&relative);
        if shares.total == 0 || shares.nanos.iter().filter(|&&n| n > 0).count() < 2 {
            continue; // no GPU time, or a single kernel (kineto's before_fix_trace)
        }
        shares.assert_other_below_ten_percent(&relative);
    }
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn softmax_is_its_own_category_not_token_sampling() {
    // OWLv2 (a vision model): 46% of its GPU time is softmax kernels, no token sampling.
    let owl = "tracelens/tests/traces/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz";
    let shares = Shares::of(owl);
    assert!(shares.share("softmax") > 0.3, "{}", shares.share("softmax"));
    assert!(
        shares.share("sampling") < 0.01,
        "{}",
        shares.share("sampling")
    );
}

/// FBGEMM's table-batched embeddings (a recommendation model's training step on an NVIDIA GPU,
/// HolisticTraceAnalysis's test trace) are table lookups, not rotary embeddings: every
/// `split_embedding_*` kernel, forward and backward, is `embedding`, and `rope` takes only
/// rotary kernels.
#[test]
fn fbgemm_table_batched_embeddings_are_embedding_not_rope() {
    let relative = "hta/tests/data/negative_queue_length_values_check/rank0.json.gz";
    let trace = common::read(relative);
    let table = KernelCategories::embedded();
    let categorized = categorize_names(&trace, &table);
    let (embedding, rope) = (table.id("embedding"), table.id("rope"));
    let mut split_embedding = Vec::new();
    let mut kernels: Vec<NameId> = trace.gpu.name.clone();
    kernels.sort_unstable_by_key(|n| n.index());
    kernels.dedup();
    for id in kernels {
        let name = trace.name(id);
        let category = Some(categorized.get(id));
        if name.contains("split_embedding") {
            assert_eq!(category, embedding, "{name}");
            split_embedding.push(name.to_owned());
        }
        if category == rope {
            let lower = name.to_ascii_lowercase();
            assert!(lower.contains("rotary") || lower.contains("rope"), "{name}");
        }
    }
    assert!(
        split_embedding.iter().any(|n| n.contains("backward")),
        "the trace holds FBGEMM's embedding backward: {split_embedding:?}"
    );
}
