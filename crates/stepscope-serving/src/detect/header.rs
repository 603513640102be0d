//! The runtime a trace header names, decided by platform ([`TraceMetadata::platform`]), and
//! the switches for one or several traces.
//!
//! A HIP version gets the switches of its runtime lines; AMD devices without a version, or a
//! header that names neither runtime nor device, get all three (a runtime ignores variables
//! it does not define); a CUDA trace, by version or by NVIDIA devices, gets none: no HIP
//! switch applies there (CUPTI records every node of a replay; the ROCm symptom is HIP's).

use super::detection_from_header;
use stepscope_model::switches::{AdviceBasis, SWITCHES, SwitchAdvice};
use stepscope_model::{Platform, TraceMetadata};

/// What one trace header says about the runtime that recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeaderRuntime {
    /// The platform, from the runtime versions first, then the device names.
    pub platform: Platform,
    /// The runtime in words, the same for every header of that runtime: `HIP 7.2`,
    /// `CUDA 12.4`, `HIP, version not in the header`, `CUDA, version not in the header`,
    /// `unknown runtime`.
    pub runtime: String,
    /// The header field that said so: `hip_runtime_version 70253211`,
    /// `device NVIDIA A100-SXM4-80GB`.
    pub evidence: String,
    /// What the header cannot tell (7.2.0 from 7.2.4), when it matters.
    pub note: Option<String>,
    /// The switches; `None` on CUDA, where no HIP switch applies.
    pub advice: Option<SwitchAdvice>,
}

impl HeaderRuntime {
    /// The platform in one word: `ROCm`, `CUDA` or `unknown`.
    pub fn platform_name(&self) -> &'static str {
        if self.platform.is_hip() {
            "ROCm"
        } else if self.platform.is_cuda() {
            "CUDA"
        } else {
            "unknown"
        }
    }
}

/// The runtime of one trace header and the switches it needs.
///
/// ```
/// use stepscope_model::TraceMetadata;
/// use stepscope_serving::detect::runtime_from_header;
///
/// let nvidia = TraceMetadata {
///     device_names: vec!["NVIDIA A100-SXM4-80GB".to_owned()],
///     ..TraceMetadata::default()
/// };
/// assert!(runtime_from_header(&nvidia).advice.is_none(), "never a HIP switch on CUDA");
/// let amd = TraceMetadata {
///     device_names: vec!["AMD Instinct MI300X".to_owned()],
///     ..TraceMetadata::default()
/// };
/// assert_eq!(runtime_from_header(&amd).advice.unwrap().switches.len(), 3);
/// ```
pub fn runtime_from_header(metadata: &TraceMetadata) -> HeaderRuntime {
    let platform = metadata.platform();
    // `Platform::Hip` and a detection decode the same `hip_runtime_version`.
    if let Some(detection) = metadata.hip_runtime_version.and_then(detection_from_header) {
        return HeaderRuntime {
            platform,
            runtime: format!("HIP {}", detection.version),
            evidence: detection.evidence.clone(),
            note: detection.note.clone(),
            advice: Some(detection.advice()),
        };
    }
    let device = metadata
        .device_names
        .first()
        .map_or_else(String::new, |name| format!("device {name}"));
    let (runtime, evidence, advice) = match platform {
        Platform::AmdDevices => (
            "HIP, version not in the header".to_owned(),
            device,
            Some(all_three(
                "the header names AMD devices but no HIP runtime version",
            )),
        ),
        Platform::Cuda(version) => (
            format!("CUDA {}.{}", version / 1000, (version % 1000) / 10),
            format!("cuda_runtime_version {version}"),
            None,
        ),
        Platform::NvidiaDevices => ("CUDA, version not in the header".to_owned(), device, None),
        Platform::Hip(_) | Platform::Unknown => (
            "unknown runtime".to_owned(),
            "no runtime version and no known device in the header".to_owned(),
            Some(all_three("the trace header names no runtime")),
        ),
    };
    HeaderRuntime {
        platform,
        runtime,
        evidence,
        note: None,
        advice,
    }
}

fn all_three(reason: &str) -> SwitchAdvice {
    SwitchAdvice {
        switches: SWITCHES.to_vec(),
        reason: format!("{reason}: set all three (a runtime ignores variables it does not define)"),
        basis: AdviceBasis::Unknown,
    }
}

/// The switches for several traces: each runtime's together, once each, in table order.
/// `None` when every trace is CUDA (no HIP switch applies); one runtime's own advice when
/// all traces name the same runtime.
pub fn advice_for_runtimes(runtimes: &[HeaderRuntime]) -> Option<SwitchAdvice> {
    let advices: Vec<&SwitchAdvice> = runtimes.iter().filter_map(|r| r.advice.as_ref()).collect();
    let first = *advices.first()?;
    let mut names: Vec<&str> = Vec::new();
    for runtime in runtimes {
        if !names.contains(&runtime.runtime.as_str()) {
            names.push(&runtime.runtime);
        }
    }
    if names.len() == 1 {
        return Some(first.clone());
    }
    let switches: Vec<_> = SWITCHES
        .iter()
        .filter(|switch| advices.iter().any(|a| a.switches.contains(switch)))
        .copied()
        .collect();
    let same_set = advices.iter().all(|a| a.switches == first.switches);
    let basis = if advices.iter().any(|a| a.basis == AdviceBasis::Unknown) {
        AdviceBasis::Unknown
    } else if switches.is_empty() {
        AdviceBasis::Predates
    } else if same_set && advices.iter().all(|a| a.basis == AdviceBasis::Line) {
        AdviceBasis::Line
    } else {
        AdviceBasis::Ambiguous
    };
    let mut reason = format!(
        "the traces name different runtimes ({}): the switches of each, together",
        names.join(", ")
    );
    if advices.len() < runtimes.len() {
        reason.push_str("; a CUDA runtime does not read them");
    }
    Some(SwitchAdvice {
        switches,
        reason,
        basis,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(hip: Option<u64>, cuda: Option<u64>, device: &str) -> HeaderRuntime {
        runtime_from_header(&TraceMetadata {
            hip_runtime_version: hip,
            cuda_runtime_version: cuda,
            device_names: vec![device.to_owned()],
            ..TraceMetadata::default()
        })
    }

    fn variables(advice: &SwitchAdvice) -> Vec<&'static str> {
        advice.switches.iter().map(|s| s.variable).collect()
    }

    #[test]
    fn each_platform_decides_its_advice() {
        let hip = header(Some(70253211), None, "AMD Instinct MI300X");
        assert_eq!(hip.runtime, "HIP 7.2");
        assert_eq!(hip.evidence, "hip_runtime_version 70253211");
        assert!(hip.note.as_deref().unwrap().contains("7.2.0 and 7.2.4"));
        assert_eq!(hip.advice.unwrap().switches.len(), 2);
        let cuda = header(None, Some(12040), "NVIDIA H100 80GB HBM3");
        assert_eq!(
            (cuda.runtime.as_str(), cuda.platform_name()),
            ("CUDA 12.4", "CUDA")
        );
        assert!(cuda.advice.is_none());
        let nvidia = header(None, None, "NVIDIA A100-SXM4-80GB");
        assert_eq!(nvidia.evidence, "device NVIDIA A100-SXM4-80GB");
        assert!(nvidia.advice.is_none());
        let amd = header(None, None, "AMD Instinct MI300X");
        let advice = amd.advice.unwrap();
        assert_eq!(advice.basis, AdviceBasis::Unknown);
        assert!(advice.reason.contains("no HIP runtime version"));
        let unknown = header(None, None, "Some Accelerator");
        assert_eq!(unknown.platform_name(), "unknown");
        assert_eq!(unknown.advice.unwrap().switches.len(), 3);
    }

    #[test]
    fn several_runtimes_get_the_union_once_in_table_order() {
        let hip72 = header(Some(70253211), None, "AMD Instinct MI300X");
        let hip70 = header(Some(70051831), None, "AMD Instinct MI300X");
        let hip714 = header(Some(71460850), None, "AMD Instinct MI300X");
        let cuda = header(None, Some(12040), "NVIDIA H100 80GB HBM3");
        let same = advice_for_runtimes(&[hip72.clone(), hip72.clone()]).unwrap();
        assert_eq!(Some(&same), hip72.advice.as_ref());
        let union = advice_for_runtimes(&[hip714.clone(), hip70.clone(), hip72.clone()]).unwrap();
        assert_eq!(
            variables(&union),
            [
                "DEBUG_CLR_GRAPH_PACKET_CAPTURE",
                "DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING"
            ]
        );
        assert_eq!(union.basis, AdviceBasis::Ambiguous);
        assert!(
            union.reason.contains("HIP 7.14, HIP 7.0, HIP 7.2"),
            "{}",
            union.reason
        );
        let predates = advice_for_runtimes(&[hip70.clone(), header(Some(60443483), None, "")]);
        assert_eq!(predates.unwrap().basis, AdviceBasis::Predates);
        assert!(advice_for_runtimes(&[cuda.clone(), cuda.clone()]).is_none());
        let mixed = advice_for_runtimes(&[cuda, hip714]).unwrap();
        assert_eq!(variables(&mixed), ["DEBUG_HIP_GRAPH_SEGMENT_SCHEDULING"]);
        assert!(mixed.reason.ends_with("a CUDA runtime does not read them"));
    }
}
