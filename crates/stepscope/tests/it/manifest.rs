//! Every Kineto file of the trace corpus (`testdata/corpus.tsv`): the counts in its row in testdata/SOURCES.md come out of
//! stepscope (events, kernels, graph launches, kernels per launch, orphan kernels, steps).
//! `matmul_result.json` is not here: its manifest row counts Kineto categories, which
//! rpd2tracing does not write (its GPU ops have no `cat`); it is read by the RPD JSON reader
//! and pinned in `tests/cli/rpd.rs`.

use crate::common;
use std::collections::BTreeMap;
use stepscope_analysis::find_steps;
use stepscope_analysis::link_launches;
use stepscope_model::{GpuEventKind, RuntimeCallKind, Trace};

struct Row {
    path: &'static str,
    events: u64,
    kernels: usize,
    graph_launches: usize,
    kernels_per_launch: &'static [(usize, usize)],
    /// `None` where its testdata/SOURCES.md row states no orphan count (then none are expected).
    orphan_kernels: Option<u64>,
    steps: &'static [(&'static str, usize)],
}

#[rustfmt::skip]
const ROWS: &[Row] = &[
    Row { path: "hta/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", events: 220, kernels: 14, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "hta/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", events: 30, kernels: 0, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "hta/tests/data/df_index_resolver/df_index_resolver.json.gz", events: 216092, kernels: 19370, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "hta/tests/data/mtia_trace_single_rank/mtia_rank_0.json.gz", events: 455739, kernels: 0, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "hta/tests/data/negative_queue_length_values_check/rank0.json.gz", events: 108936, kernels: 6080, graph_launches: 70, kernels_per_launch: &[(1, 35), (2, 30), (8, 5)], orphan_kernels: Some(705), steps: &[] },
    Row { path: "hta/tests/data/trace_diff/control/control.json.gz", events: 109123, kernels: 8568, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "hta/tests/data/triton_example/triton_example.json.gz", events: 71, kernels: 1, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "kineto/docs/traces/before_fix_trace.json", events: 75, kernels: 1, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz", events: 75718, kernels: 8772, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", events: 18221, kernels: 1465, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: Some(436), steps: &[] },
    Row { path: "tracelens/tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz", events: 61713, kernels: 2, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz", events: 2058, kernels: 555, graph_launches: 1, kernels_per_launch: &[(544, 1)], orphan_kernels: None, steps: &[("sglang:DECODE", 1)] },
    Row { path: "tracelens/tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz", events: 60315, kernels: 527, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[("sglang:EXTEND", 1)] },
    Row { path: "tracelens/tests/traces/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz", events: 131243, kernels: 7, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz", events: 1993, kernels: 425, graph_launches: 1, kernels_per_launch: &[(421, 1)], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz", events: 122257, kernels: 99, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz", events: 19289, kernels: 413, graph_launches: 25, kernels_per_launch: &[(4, 1), (12, 1), (15, 23)], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/inference/xdit_flux.1/capture_traces/capture_trace_rank_0.json.gz", events: 193255, kernels: 2540, graph_launches: 1, kernels_per_launch: &[(993, 1)], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz", events: 239093, kernels: 8042, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/mi210/gpu_only_trace/gpu_only_trace.json.gz", events: 2443, kernels: 562, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", events: 18090, kernels: 1516, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: Some(463), steps: &[] },
    Row { path: "tracelens/tests/traces/mi300/ddp_resnet18_no_pool/train_resnet18.json.gz", events: 29746, kernels: 2360, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz", events: 130780, kernels: 4255, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "tracelens/tests/traces/mi300/resnet_act_checkpoint.json.gz", events: 56451, kernels: 2995, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: Some(757), steps: &[] },
    Row { path: "tracelens/tests/traces/torch_compile_triton/trace.json.gz", events: 246, kernels: 12, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
    Row { path: "stepscope/vllm-cpu/rank0.1796509274149173928.pt.trace.json.gz", events: 4005, kernels: 0, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[("vllm:decode", 16), ("vllm:prefill", 2)] },
    Row { path: "stepscope/vllm-cpu/vm_12286.async_llm.1796509274142359275.pt.trace.json.gz", events: 7, kernels: 0, graph_launches: 0, kernels_per_launch: &[], orphan_kernels: None, steps: &[] },
];

/// The facts of one trace as stepscope sees them.
#[derive(Debug, PartialEq)]
struct Facts {
    events: u64,
    kernels: usize,
    graph_launches: usize,
    kernels_per_launch: Vec<(usize, usize)>,
    orphan_kernels: u64,
}

fn facts(trace: &Trace) -> Facts {
    let links = link_launches(trace);
    let kernels_of = |call: usize| {
        links
            .launched(call)
            .iter()
            .filter(|&&r| trace.gpu.kind[r as usize] == GpuEventKind::Kernel)
            .count()
    };
    let launches: Vec<usize> = (0..trace.runtime.len())
        .filter(|&r| trace.runtime.kind[r] == RuntimeCallKind::GraphLaunch)
        .collect();
    let mut histogram: BTreeMap<usize, usize> = BTreeMap::new();
    for &launch in &launches {
        *histogram.entry(kernels_of(launch)).or_default() += 1;
    }
    Facts {
        events: trace.counts.events,
        kernels: trace
            .gpu
            .kind
            .iter()
            .filter(|k| **k == GpuEventKind::Kernel)
            .count(),
        graph_launches: launches.len(),
        kernels_per_launch: histogram.into_iter().collect(),
        orphan_kernels: links.orphans.kernels,
    }
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn every_manifest_row_matches() {
    let mut mismatches = Vec::new();
    for row in ROWS {
        let trace = common::read(row.path);
        let got = facts(&trace);
        let want = Facts {
            events: row.events,
            kernels: row.kernels,
            graph_launches: row.graph_launches,
            kernels_per_launch: row.kernels_per_launch.to_vec(),
            orphan_kernels: row.orphan_kernels.unwrap_or(0),
        };
        if got != want {
            mismatches.push(format!("{}:\n  got  {got:?}\n  want {want:?}", row.path));
        }
        if !row.steps.is_empty() {
            let steps = find_steps(&trace).counts_by_key();
            let want: Vec<(String, usize)> = row
                .steps
                .iter()
                .map(|(k, n)| ((*k).to_owned(), *n))
                .collect();
            if steps != want {
                mismatches.push(format!("{} steps: got {steps:?}, want {want:?}", row.path));
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn newer_vllm_step_annotations_are_steps_too() {
    // testdata/SOURCES.md counts only the `execute_context_N(T)_generation_M(T)` form; vLLM on ROCm
    // writes `execute_T_context_N(...)_generation_M(...)`, which stepscope reads as well.
    let trace =
        common::read("tracelens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz");
    assert_eq!(
        find_steps(&trace).counts_by_key(),
        [("vllm:decode".to_owned(), 1)]
    );
    let trace = common::read(
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    );
    assert_eq!(
        find_steps(&trace).counts_by_key(),
        [("vllm:mixed".to_owned(), 1)]
    );
}

#[test]
fn header_metadata_is_kept() {
    let trace = common::read(
        "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    );
    let metadata = &trace.metadata;
    assert_eq!(metadata.hip_runtime_version, Some(70253211));
    assert_eq!(
        metadata.device_names.first().map(String::as_str),
        Some("AMD Instinct MI300X")
    );
    assert_eq!((metadata.rank, metadata.world_size), (Some(0), Some(1)));
    let trace = common::read("tracelens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    assert_eq!(trace.metadata.cuda_runtime_version, Some(12040));
}

#[cfg_attr(
    not(feature = "corpus"),
    ignore = "corpus group: bash scripts/fetch-traces.sh && cargo test --workspace --features corpus"
)]
#[test]
fn same_result_at_one_and_two_threads() {
    for path in [
        "hta/tests/data/mtia_trace_single_rank/mtia_rank_0.json.gz",
        "tracelens/tests/traces/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz",
        "hta/tests/data/negative_queue_length_values_check/rank0.json.gz",
    ] {
        let one = common::read_with_threads(path, 1);
        let two = common::read_with_threads(path, 2);
        assert_eq!(facts(&one), facts(&two), "{path}");
        assert_eq!(one.gpu.start, two.gpu.start, "{path}");
        assert_eq!(one.gpu.name, two.gpu.name, "{path}");
        assert_eq!(one.runtime.correlation, two.runtime.correlation, "{path}");
        assert_eq!(one.names.len(), two.names.len(), "{path}");
        assert_eq!(one.stats, two.stats, "{path}");
    }
}
