//! What a trace says about where it was recorded.

/// Header facts of one trace file.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TraceMetadata {
    /// GPU names from `deviceProperties`, in device-id order.
    pub device_names: Vec<String>,
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
    use super::HipVersion;

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
