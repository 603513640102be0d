//! How replays go missing from profiles in the field, and what cures each, by platform: one
//! table, the single source for the advice reports give per pattern (each cure names
//! the public sources it rests on; the empty-replay switches live in [`crate::switches`]).
//!
//! Every cure says whether it was measured on a GPU by this project or only reported in the
//! public sources it names.

use crate::{HipVersion, Platform};

/// A way a profile loses or misplaces graph replays' kernels. With the `serde` feature it
/// serialises as its name ([`RecordingPattern::as_str`]: `empty_replays`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum RecordingPattern {
    /// Whole replays recorded no kernel while eager work around them did: HIP graph packet
    /// capture at instantiate keeps only the replay a host sync follows.
    EmptyReplays,
    /// The replays at one launch slot each keep a different part of their graph.
    PartialReplays,
    /// GPU events stop before the window ends while host launches go on.
    RecordingStopped,
    /// Launches exist, and not a single GPU event.
    NoGpuEvents,
    /// Replays' kernels recorded after their step ended, in a burst after the last step
    /// marker (sglang #31545).
    KernelsAfterStep,
    /// Kernels holding other kernels' durations (names and timings joined by position;
    /// ROCm/rocm-systems #10579).
    ImplausibleDurations,
}

impl RecordingPattern {
    /// Every pattern, in report order.
    pub const ALL: [RecordingPattern; 6] = [
        RecordingPattern::NoGpuEvents,
        RecordingPattern::RecordingStopped,
        RecordingPattern::PartialReplays,
        RecordingPattern::EmptyReplays,
        RecordingPattern::KernelsAfterStep,
        RecordingPattern::ImplausibleDurations,
    ];

    /// A short stable name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordingPattern::EmptyReplays => "empty_replays",
            RecordingPattern::PartialReplays => "partial_replays",
            RecordingPattern::RecordingStopped => "recording_stopped",
            RecordingPattern::NoGpuEvents => "no_gpu_events",
            RecordingPattern::KernelsAfterStep => "kernels_after_step",
            RecordingPattern::ImplausibleDurations => "implausible_durations",
        }
    }

    /// Whether eager (non-graph) work went unrecorded too, so the trace is incomplete
    /// whatever its replays show.
    pub fn loses_eager_work(self) -> bool {
        matches!(
            self,
            RecordingPattern::RecordingStopped | RecordingPattern::NoGpuEvents
        )
    }

    /// What it looks like, in one sentence.
    pub fn description(self) -> &'static str {
        match self {
            RecordingPattern::EmptyReplays => {
                "whole graph replays recorded no kernel while the eager work around them did"
            }
            RecordingPattern::PartialReplays => {
                "the replays at one launch slot each kept a different part of their graph"
            }
            RecordingPattern::RecordingStopped => {
                "GPU events stop before the window ends while host launches go on without GPU work"
            }
            RecordingPattern::NoGpuEvents => "the trace holds launches but not a single GPU event",
            RecordingPattern::KernelsAfterStep => {
                "replays' kernels were recorded after their step ended, later than their stream allows"
            }
            RecordingPattern::ImplausibleDurations => {
                "kernels hold durations ten times longer and shorter than the same kernels in other replays of their graph"
            }
        }
    }
}

impl std::fmt::Display for RecordingPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One cure for a pattern on a platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cure {
    /// What to do.
    pub action: &'static str,
    /// Whether this project measured it on a GPU.
    pub measured: bool,
    /// Where it is reported.
    pub sources: &'static str,
}

// ROCm/ROCm #6102, ROCm/rocm-systems #4361: the roctracer race of 7.2.0–7.2.1 in the batched
// AQL dispatch path keeps 26–65% of each replay's kernels; fixed in 7.2.2. AMD-AGI/Hyperloom
// #1279 and sglang #35390: the copies in torch/lib are what the process loads.
const ROCM_722: Cure = Cure {
    action: "on ROCm 7.2.0–7.2.1 (a roctracer race keeps 26–65% of each replay's kernels): ROCm 7.2.2 or later for the libamdhip64 and libroctracer64 the server loads; PyTorch wheels load their own copies from torch/lib (RPATH $ORIGIN), which upgrading /opt/rocm does not replace: `stepscope env --detect` shows the copies a process loads",
    measured: false,
    sources: "ROCm/ROCm #6102, ROCm/rocm-systems #4361, sglang #35390, AMD-AGI/Hyperloom #1279",
};

// ROCm/rocm-systems #8735: the segmented graph executor (7.2.4, therock 7.11–7.14) keeps
// only the last segment's kernels of multi-stream graphs (~99% missing).
const SEGMENTED: Cure = Cure {
    action: "on ROCm 7.2.4 or therock 7.11–7.14 (the segmented graph executor keeps only the last segment's kernels of multi-stream graphs): DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING=0 in the server's environment at start",
    measured: false,
    sources: "ROCm/rocm-systems #8735",
};

const ROCTRACER_CAP: Cure = Cure {
    action: "the ROCm profiler stops at ROCTRACER_MAX_EVENTS events (1 M; raised to 5 M in newer PyTorch): raise it in the server's environment, or profile a shorter window",
    measured: false,
    sources: "pytorch/kineto #1081, #1114",
};

const CUPTI_BUFFERS: Cure = Cure {
    action: "CUPTI's activity buffers ran out and the rest was dropped: profile a shorter window (fewer steps) or with fewer activity kinds",
    measured: false,
    sources: "pytorch/kineto #1362",
};

// The trace cannot tell a buffer that filled from a recording that was told to stop: the
// same tail of launches without GPU work follows both.
const PROFILER_WINDOW: Cure = Cure {
    action: "the profiler's own limits or the process's end stopped the GPU recording before the host: a capture range or duration (torch.profiler's schedule and `stop()`, nsys `--duration` or `--capture-range`, rocprofv3 `--collection-period`), or the process exiting or being stopped before the GPU activity was flushed: check how the window was ended, and end it after the last step's GPU work",
    measured: false,
    sources: "",
};

const PROFILER_DEAD: Cure = Cure {
    action: "the profiler recorded no GPU activity for this process: seen for every trace after `_init_for_cuda_graphs()` on ROCm and with CUDA 13 / torch 2.13; restart the server's profiler (or the server) and check a short window first",
    measured: false,
    sources: "lightseekorg/tokenspeed #1287, #1348",
};

const CUDA_WHOLE_REPLAYS: Cure = Cure {
    action: "no runtime switch restores replays on CUDA (CUPTI records every kernel of a replay): suspect the profiler's activity buffers, or the torch 2.13 / CUDA 13 profiler bug",
    measured: false,
    sources: "pytorch/kineto #1362, lightseekorg/tokenspeed #1348",
};

const DEFERRED_BURST: Cure = Cure {
    action: "no cure is known (the report, on ROCm MI355X with SGLang v0.5.14, names none): the profiler deferred the replays' kernels into one burst after the step markers; per-stage shares here follow each kernel's launching step, but per-step timing and step windows cannot be recovered from this trace",
    measured: false,
    sources: "sgl-project/sglang #31545",
};

const MISPAIRED_DURATIONS: Cure = Cure {
    action: "no switch cures it: the profiler joined kernel names to other kernels' timings; do not read per-op times from these replays; re-record with another profiler (rocprofv3 --kernel-trace) and compare",
    measured: false,
    sources: "ROCm/rocm-systems #10579",
};

const UNKNOWN: Cure = Cure {
    action: "no cure is known for this pattern on this runtime: profile a shorter window and compare; report it with the trace",
    measured: false,
    sources: "",
};

/// The cures for `pattern` on `platform`, besides the runtime switches that
/// [`crate::switches`] gives for empty replays on HIP.
pub fn cures(pattern: RecordingPattern, platform: Platform) -> Vec<Cure> {
    match pattern {
        RecordingPattern::EmptyReplays if platform.is_cuda() => vec![CUDA_WHOLE_REPLAYS],
        RecordingPattern::EmptyReplays => Vec::new(),
        RecordingPattern::PartialReplays => partial_cures(platform),
        RecordingPattern::RecordingStopped if platform.is_cuda() => {
            vec![CUPTI_BUFFERS, PROFILER_WINDOW]
        }
        RecordingPattern::RecordingStopped if platform.is_hip() => {
            vec![ROCTRACER_CAP, PROFILER_WINDOW]
        }
        RecordingPattern::RecordingStopped => vec![ROCTRACER_CAP, CUPTI_BUFFERS, PROFILER_WINDOW],
        RecordingPattern::NoGpuEvents => vec![PROFILER_DEAD],
        RecordingPattern::KernelsAfterStep => vec![DEFERRED_BURST],
        RecordingPattern::ImplausibleDurations => vec![MISPAIRED_DURATIONS],
    }
}

/// Largest kept share at which partial replays read as the segmented executor's (it keeps
/// only the last segment, ~1 % of a multi-stream graph's kernels) rather than the roctracer
/// race's (26–65 %).
pub const SEGMENTED_KEEPS_AT_MOST: f64 = 0.2;

/// [`cures`] ordered by what was seen: for partial replays that kept at most
/// [`SEGMENTED_KEEPS_AT_MOST`] of their graphs (`kept_high`), the segmented executor's cure
/// comes first.
pub fn cures_seen(
    pattern: RecordingPattern,
    platform: Platform,
    kept_high: Option<f64>,
) -> Vec<Cure> {
    let mut found = cures(pattern, platform);
    if kept_high.is_some_and(|k| k <= SEGMENTED_KEEPS_AT_MOST) {
        found.sort_by_key(|cure| *cure != SEGMENTED);
    }
    found
}

fn partial_cures(platform: Platform) -> Vec<Cure> {
    match platform {
        // A 7.2 header cannot tell 7.2.0–7.2.1 (the race) from 7.2.4 (segmented executor).
        Platform::Hip(HipVersion {
            major: 7, minor: 2, ..
        }) => vec![ROCM_722, SEGMENTED],
        Platform::Hip(HipVersion {
            major: 7,
            minor: 11..=14,
            ..
        }) => vec![SEGMENTED],
        Platform::AmdDevices | Platform::Unknown => vec![ROCM_722, SEGMENTED],
        _ => vec![UNKNOWN],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cures_follow_the_platform() {
        let hip72 = Platform::Hip(HipVersion::from_header(70253211).unwrap());
        assert!(
            cures(RecordingPattern::PartialReplays, hip72)[0]
                .action
                .contains("7.2.2")
        );
        let therock = Platform::Hip(HipVersion::from_header(71460850).unwrap());
        assert!(
            cures(RecordingPattern::PartialReplays, therock)[0]
                .action
                .contains("SEGMENT")
        );
        let cuda = Platform::Cuda(12040);
        for pattern in RecordingPattern::ALL {
            for cure in cures(pattern, cuda) {
                assert!(
                    !cure.action.contains("DEBUG_"),
                    "{pattern:?}: {}",
                    cure.action
                );
                assert!(!cure.measured);
            }
        }
        assert!(
            cures(RecordingPattern::RecordingStopped, hip72)[0]
                .action
                .contains("ROCTRACER_MAX_EVENTS")
        );
        assert!(
            cures(RecordingPattern::EmptyReplays, hip72).is_empty(),
            "the switch table covers it"
        );
        let race = cures_seen(RecordingPattern::PartialReplays, hip72, Some(0.6));
        assert!(race[0].action.contains("7.2.2"));
        let segmented = cures_seen(RecordingPattern::PartialReplays, hip72, Some(0.02));
        assert!(segmented[0].action.contains("SEGMENT"));
        assert_eq!(segmented.len(), race.len());
    }
}
