//! Runtime advice: which switches make the profiler record every replay on the runtime
//! this trace was recorded on.
//!
//! What it computes: the runtime from the trace header (`hip_runtime_version`,
//! `cuda_runtime_version`) and, for HIP, the switches of DESIGN.md §2 for that line, with
//! whether they are measured. Why it matters: the fix for missing replays is a per-runtime
//! environment variable set before the server starts; the header cannot tell 7.2.0 from
//! 7.2.4, so both switches are advised there.
//! Example: `70253211` → HIP 7.2 → `DEBUG_CLR_GRAPH_PACKET_CAPTURE=0` and
//! `DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0`.

use stepscope_model::switches::{SwitchAdvice, advice_for_header};
use stepscope_model::{HipVersion, TraceMetadata};

/// What runtime recorded the trace, and what to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeAdvice {
    /// A HIP runtime.
    Hip {
        /// Version from the header.
        version: HipVersion,
        /// Switches for it.
        advice: SwitchAdvice,
    },
    /// A CUDA runtime: CUPTI records every replay's kernels.
    Cuda {
        /// `cuda_runtime_version` as written (e.g. 12040).
        version: u64,
    },
    /// The header names no runtime.
    Unknown,
}

/// Advice for the runtime in `metadata`.
pub fn runtime_advice(metadata: &TraceMetadata) -> RuntimeAdvice {
    if let Some(version) = metadata
        .hip_runtime_version
        .and_then(HipVersion::from_header)
    {
        return RuntimeAdvice::Hip {
            version,
            advice: advice_for_header(version),
        };
    }
    match metadata.cuda_runtime_version {
        Some(version) => RuntimeAdvice::Cuda { version },
        None => RuntimeAdvice::Unknown,
    }
}
