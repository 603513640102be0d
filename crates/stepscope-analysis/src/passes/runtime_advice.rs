//! Runtime advice: what to change so the profiler records every replay, for the platform
//! this trace was recorded on.
//!
//! What it computes: the platform from the trace header — the HIP or CUDA runtime version,
//! else the device names — and, for HIP, the switches of that runtime line (`stepscope_model::switches`), with
//! whether they are measured. Why it matters: the fix for missing replays on HIP is a
//! per-runtime environment variable set before the server starts (the header cannot tell
//! 7.2.0 from 7.2.4, so both switches are advised there); on CUDA no runtime switch exists,
//! and advising HIP variables there sends users down a wrong path. The report gives this
//! advice only for the runtime symptom (short or empty replays), never for damaged data.
//! Example: `70253211` → HIP 7.2 → `DEBUG_CLR_GRAPH_PACKET_CAPTURE=0` and
//! `DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0`; `NVIDIA A100` without a version → CUDA.

use stepscope_model::switches::{AdviceBasis, SWITCHES, SwitchAdvice, advice_for_header};
use stepscope_model::{HipVersion, Platform, TraceMetadata};

/// What runtime recorded the trace, and what to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeAdvice {
    /// A HIP runtime named in the header.
    Hip {
        /// Version from the header.
        version: HipVersion,
        /// Switches for it.
        advice: SwitchAdvice,
    },
    /// AMD devices, no runtime version: every switch (a runtime ignores variables it does
    /// not define).
    AmdDevices {
        /// All three switches.
        advice: SwitchAdvice,
    },
    /// A CUDA runtime, by version or by NVIDIA device names: no switch.
    Cuda {
        /// `cuda_runtime_version` as written (e.g. 12040), when the header has one.
        version: Option<u64>,
    },
    /// Neither a runtime version nor device names tell the platform.
    Unknown,
}

/// Advice for the platform in `metadata`.
pub fn runtime_advice(metadata: &TraceMetadata) -> RuntimeAdvice {
    match metadata.platform() {
        Platform::Hip(version) => RuntimeAdvice::Hip {
            version,
            advice: advice_for_header(version),
        },
        Platform::AmdDevices => RuntimeAdvice::AmdDevices {
            advice: SwitchAdvice {
                switches: SWITCHES.to_vec(),
                reason: "the header names AMD devices but no HIP runtime version: set all three (a runtime ignores variables it does not define)".to_owned(),
                basis: AdviceBasis::Unknown,
            },
        },
        Platform::Cuda(version) => RuntimeAdvice::Cuda {
            version: Some(version),
        },
        Platform::NvidiaDevices => RuntimeAdvice::Cuda { version: None },
        Platform::Unknown => RuntimeAdvice::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_devices_without_a_version_are_cuda() {
        let metadata = TraceMetadata {
            device_names: vec!["NVIDIA A100-SXM4-80GB".to_owned()],
            ..TraceMetadata::default()
        };
        assert_eq!(
            runtime_advice(&metadata),
            RuntimeAdvice::Cuda { version: None }
        );
    }

    #[test]
    fn amd_devices_without_a_version_get_every_switch() {
        let metadata = TraceMetadata {
            device_names: vec!["AMD Instinct MI300X".to_owned()],
            ..TraceMetadata::default()
        };
        match runtime_advice(&metadata) {
            RuntimeAdvice::AmdDevices { advice } => assert_eq!(advice.switches.len(), 3),
            other => panic!("{other:?}"),
        }
    }
}
