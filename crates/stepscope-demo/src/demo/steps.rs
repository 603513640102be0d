//! One SGLang scheduler iteration each: a decode step (graph replay) or a prefill step (eager).

use super::builder::{Builder, Stage};
use super::kernels::{self, Kernel};

macro_rules! py {
    ($path:literal) => {
        concat!("/sgl-workspace/sglang/python/sglang/srt", $path)
    };
}

const RUN_BATCH: &str = py!("/managers/scheduler.py(2919): _run_batch_inner");
const TP_FORWARD: &str = py!("/managers/tp_worker.py(412): forward_batch_generation");
const MR_FORWARD: &str = py!("/model_executor/model_runner.py(2187): forward");
const MR_DECODE: &str = py!("/model_executor/model_runner.py(2067): forward_decode");
const MR_EXTEND: &str = py!("/model_executor/model_runner.py(2091): forward_extend");
const GRAPH_PREPARE: &str = py!("/model_executor/cuda_graph_runner.py(781): replay_prepare");
const GRAPH_REPLAY: &str = py!("/model_executor/cuda_graph_runner.py(842): replay");
const MODEL_FORWARD: &str = py!("/models/qwen3.py(312): forward");
const SAMPLER: &str = py!("/layers/sampler.py(96): forward");
const RESULT_DECODE: &str =
    py!("/managers/scheduler_output_processor_mixin.py(312): process_batch_result_decode");
const RESULT_PREFILL: &str =
    py!("/managers/scheduler_output_processor_mixin.py(96): process_batch_result_prefill");
const NEXT_BATCH: &str = py!("/managers/scheduler.py(2190): get_next_batch_to_run");
const TOLIST: &str = "<built-in method tolist of Tensor object at 0x7f1b8c2d5f30>";
const SYNCHRONIZE: &str = "torch/cuda/__init__.py(1070): synchronize";
const PROFILER_STOP: &str = "torch/profiler/profiler.py(884): stop";

/// Tokens and requests of the demo's prefill steps.
pub(crate) const EXTEND_BS: u32 = 4;
/// Prompt tokens of one prefill step.
pub(crate) const EXTEND_TOKENS: u32 = 2048;

/// The sampling kernels that follow every forward pass.
fn sample(b: &mut Builder, stage: Stage) {
    b.py_begin(SAMPLER);
    for kernel in [&kernels::SOFTMAX, &kernels::TOPK, &kernels::ARGMAX] {
        b.eager_kernel(kernel, stage);
        b.idle(2.0, 6.0);
    }
    b.py_end();
}

/// Scheduler work between two steps.
fn between_steps(b: &mut Builder, result: &'static str) {
    b.py_begin(result);
    b.idle(25.0, 70.0);
    b.py_end();
    b.py_begin(NEXT_BATCH);
    b.idle(40.0, 140.0);
    b.py_end();
}

/// A decode step replaying the captured graph `nodes`; `record` false drops the replay's
/// kernels from the output (they still take GPU time). Returns the launch's correlation id.
pub(crate) fn decode(b: &mut Builder, bs: u32, nodes: &[&'static Kernel], record: bool) -> u64 {
    b.py_begin(RUN_BATCH);
    b.idle(2.0, 6.0);
    let step = b.op_begin("user_annotation", format!("step[DECODE bs={bs}]").into());
    b.py_begin(TP_FORWARD);
    b.py_begin(MR_FORWARD);
    b.py_begin(MR_DECODE);
    b.py_begin(GRAPH_PREPARE);
    for kernel in [&kernels::FILL, &kernels::POSITIONS, &kernels::KV_INDICES] {
        b.eager_kernel(kernel, Stage::Decode);
        b.idle(3.0, 12.0);
    }
    b.py_end();
    b.py_begin(GRAPH_REPLAY);
    b.runtime("hipStreamIsCapturing", 290, None, (0.2, 0.6));
    let correlation = b.graph_launch(nodes, record);
    b.runtime("hipDriverGetVersion", 341, None, (0.1, 0.3));
    b.py_end();
    b.py_end();
    b.py_end();
    sample(b, Stage::Decode);
    b.py_end();
    b.py_begin(TOLIST);
    b.memcpy(true, u64::from(bs) * 8);
    b.py_end();
    b.op_end(step);
    b.py_end();
    between_steps(b, RESULT_DECODE);
    correlation
}

/// A prefill (`EXTEND`) step: a device sync, then every kernel launched eagerly.
pub(crate) fn extend(b: &mut Builder, layers: usize) {
    b.py_begin(RUN_BATCH);
    b.idle(2.0, 6.0);
    let name = format!("step[EXTEND bs={EXTEND_BS} toks={EXTEND_TOKENS}]");
    let step = b.op_begin("user_annotation", name.into());
    b.py_begin(SYNCHRONIZE);
    b.device_sync();
    b.py_end();
    b.memcpy(false, u64::from(EXTEND_TOKENS) * 8);
    b.py_begin(TP_FORWARD);
    b.py_begin(MR_FORWARD);
    b.py_begin(MR_EXTEND);
    b.eager_kernel(&kernels::KV_INDICES, Stage::Prefill);
    b.py_begin(MODEL_FORWARD);
    for kernel in kernels::forward(layers, true) {
        b.eager_kernel(kernel, Stage::Prefill);
        b.idle(2.0, 9.0);
    }
    b.py_end();
    b.py_end();
    b.py_end();
    sample(b, Stage::Prefill);
    b.py_end();
    b.py_begin(TOLIST);
    b.memcpy(true, u64::from(EXTEND_BS) * 8);
    b.py_end();
    b.op_end(step);
    b.py_end();
    between_steps(b, RESULT_PREFILL);
}

/// `profiler.stop()`: the profiler synchronises the device before it stops recording.
pub(crate) fn profiler_stop(b: &mut Builder) {
    b.py_begin(PROFILER_STOP);
    b.device_sync();
    b.py_end();
}

#[cfg(test)]
mod tests {
    #[test]
    fn python_paths_are_sglang() {
        assert!(super::RUN_BATCH.starts_with("/sgl-workspace/sglang/python/sglang/srt/"));
    }
}
