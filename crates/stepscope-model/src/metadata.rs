//! What a trace says about where it was recorded.

/// Header facts of one trace file.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TraceMetadata {
    /// GPU names from `deviceProperties`, in device-id order.
    pub device_names: Vec<String>,
    /// What `deviceProperties` says of each device besides its name, in the same order:
    /// it identifies a device whose name the runtime left empty or generic.
    pub device_properties: Vec<DeviceProperties>,
    /// `hip_runtime_version` as written (e.g. `70253211` = HIP 7.2, build 53211).
    pub hip_runtime_version: Option<u64>,
    /// `cuda_runtime_version` as written (e.g. `12040` = CUDA 12.4).
    pub cuda_runtime_version: Option<u64>,
    /// `cuda_driver_version` as written.
    pub cuda_driver_version: Option<u64>,
    /// `distributedInfo.rank`.
    pub rank: Option<u32>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<u32>,
    /// `schemaVersion`.
    pub schema_version: Option<u64>,
    /// `baseTimeNanoseconds`: the epoch the trace's timestamps count from, when written.
    pub base_time_ns: Option<u64>,
    /// Why this file cannot link GPU work to the host calls that launched it, and how to
    /// record a file that can (set by readers of formats where that part is optional: a
    /// rocprofv3 run without `--hip-trace`, Nsight Systems' whole-graph records). Replay
    /// coverage is then `unavailable`, never `complete`.
    pub linkage_unavailable: Option<String>,
    /// The format the file was read as, by the name `--format` takes (`kineto-json`, `rpd`,
    /// …); set by the reader.
    pub format: Option<&'static str>,
}

/// A device's properties from `deviceProperties` (each `None` when not written).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DeviceProperties {
    /// `computeMajor`: CUDA compute capability, or the gfx major on ROCm (9 for gfx9xx).
    pub compute_major: Option<u32>,
    /// `computeMinor` (4 for gfx942).
    pub compute_minor: Option<u32>,
    /// `numSms`: streaming multiprocessors, or compute units on ROCm.
    pub multiprocessors: Option<u32>,
    /// `totalGlobalMem`, bytes.
    pub memory_bytes: Option<u64>,
}

/// The GPU platform a trace was recorded on, from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// A HIP runtime version in the header (`hip_runtime_version`).
    Hip(HipVersion),
    /// No HIP version, and AMD devices in `deviceProperties` (`AMD`, `Instinct`, `Radeon`,
    /// `gfx…`): a ROCm trace whose runtime version is unknown.
    AmdDevices,
    /// A CUDA runtime version in the header (`cuda_runtime_version`, e.g. `12040`).
    Cuda(u64),
    /// No CUDA version, and NVIDIA devices in `deviceProperties` (`NVIDIA …`, `Tesla …`).
    NvidiaDevices,
    /// Neither a runtime version nor a device name says which.
    Unknown,
}

impl Platform {
    /// Whether the trace comes from a HIP (ROCm) runtime, by version or by devices.
    pub fn is_hip(self) -> bool {
        matches!(self, Platform::Hip(_) | Platform::AmdDevices)
    }

    /// Whether the trace comes from a CUDA runtime, by version or by devices.
    pub fn is_cuda(self) -> bool {
        matches!(self, Platform::Cuda(_) | Platform::NvidiaDevices)
    }
}

impl TraceMetadata {
    /// The platform, from the runtime versions first, then the device names. A header with
    /// both a HIP and a CUDA version (PyTorch's HIP builds write `cuda_runtime_version` too
    /// in some releases) is HIP.
    pub fn platform(&self) -> Platform {
        if let Some(version) = self.hip_runtime_version.and_then(HipVersion::from_header) {
            return Platform::Hip(version);
        }
        let amd = self.device_names.iter().any(|n| is_amd_device(n));
        let nvidia = self.device_names.iter().any(|n| is_nvidia_device(n));
        match (self.cuda_runtime_version.filter(|v| *v > 0), amd, nvidia) {
            (_, true, false) => Platform::AmdDevices,
            (Some(version), false, _) => Platform::Cuda(version),
            (None, false, true) => Platform::NvidiaDevices,
            _ => Platform::Unknown,
        }
    }
}

fn is_amd_device(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [
        "amd", "instinct", "radeon", "gfx9", "gfx1", "mi300", "mi250", "mi325", "mi355",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

fn is_nvidia_device(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["nvidia", "tesla", "geforce", "quadro"]
        .iter()
        .any(|w| lower.contains(w))
}

/// A HIP runtime version decoded from a Kineto header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HipVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Build number; the patch release cannot be recovered from it.
    pub build: u32,
}

impl HipVersion {
    /// Decodes `major * 10_000_000 + minor * 100_000 + build`, as HIP writes
    /// `HIP_VERSION` (`70253211` → 7.2, build 53211).
    pub fn from_header(value: u64) -> Option<Self> {
        let major = u32::try_from(value / 10_000_000).ok()?;
        let minor = u32::try_from((value / 100_000) % 100).ok()?;
        let build = u32::try_from(value % 100_000).ok()?;
        (major > 0).then_some(Self {
            major,
            minor,
            build,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{HipVersion, Platform, TraceMetadata};

    #[test]
    fn platform_from_versions_then_devices() {
        let mut m = TraceMetadata::default();
        assert_eq!(m.platform(), Platform::Unknown);
        m.device_names = vec!["NVIDIA A100-SXM4-80GB".to_owned()];
        assert_eq!(m.platform(), Platform::NvidiaDevices);
        m.cuda_runtime_version = Some(12040);
        assert_eq!(m.platform(), Platform::Cuda(12040));
        m.device_names = vec!["AMD Instinct MI300X".to_owned()];
        assert_eq!(m.platform(), Platform::AmdDevices);
        m.hip_runtime_version = Some(70253211);
        assert!(matches!(m.platform(), Platform::Hip(v) if (v.major, v.minor) == (7, 2)));
        assert!(m.platform().is_hip() && !m.platform().is_cuda());
    }

    #[test]
    fn decodes_hip_header_versions() {
        let v = HipVersion::from_header(70253211).unwrap();
        assert_eq!((v.major, v.minor, v.build), (7, 2, 53211));
        let v = HipVersion::from_header(60443483).unwrap();
        assert_eq!((v.major, v.minor), (6, 4));
        let v = HipVersion::from_header(71460850).unwrap();
        assert_eq!((v.major, v.minor), (7, 14));
        assert!(HipVersion::from_header(0).is_none());
    }
}
