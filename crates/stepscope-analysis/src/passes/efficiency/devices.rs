//! Device peaks: dense matrix (tensor-core) TFLOP/s by precision, vector FP32/FP64 TFLOP/s and
//! HBM TB/s of the AMD Instinct and NVIDIA data-centre GPUs, each with its public source.
//!
//! All figures are vendor peaks (not measured "max achievable" rates), dense (NVIDIA's
//! datasheets print tensor rates with 2:4 sparsity; those are halved here), per device as
//! the profiler sees it (an MI250X is two devices, one per die). Where a vendor page gives
//! only a sparse figure, or a figure follows from compute units × clock × per-unit rate,
//! the note says so. TraceLens's own arch files hold measured max-achievable rates for
//! MI300X/MI325X (about 50–64 % of these peaks for BF16/FP16/FP8): a roofline on these
//! peaks reads lower than one on those.

use super::spec::{ComputeSpec, Precision, Unit};
use stepscope_model::DeviceProperties;

/// One device's peaks. Rates in TFLOP/s (dense), bandwidth in TB/s (10^12 bytes/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DevicePeaks {
    /// Short name (`MI300X`, `H100 SXM`), as `--device` takes it.
    pub name: &'static str,
    /// Substrings of the profiler's device name (`deviceProperties[].name`) that identify
    /// it, matched case-insensitively; the first device whose pattern matches wins.
    pub patterns: &'static [&'static str],
    /// Peak HBM bandwidth.
    pub hbm_tbps: f64,
    /// Dense matrix rates: FP64, FP32 (TF32 on NVIDIA, which has no FP32 tensor path),
    /// FP16, BF16, FP8, FP4 (`None`: no matrix path at that precision).
    pub matrix: [Option<f64>; 6],
    /// Vector (non-matrix) FP32 and FP64.
    pub vector: [f64; 2],
    /// Where the numbers come from.
    pub source: &'static str,
}

impl DevicePeaks {
    /// The compute roof for an op's spec, in TFLOP/s: the matrix rate at its precision, or
    /// the vector FP32 rate for vector work in FP32 or narrower (vector ALUs widen FP16/BF16
    /// to FP32 on these parts unless packed), FP64 for FP64.
    pub fn compute_tflops(&self, spec: ComputeSpec) -> Option<f64> {
        let precision = spec.precision?;
        match spec.unit {
            Unit::Matrix => self.matrix[matrix_index(precision)],
            Unit::Vector if precision == Precision::Fp64 => Some(self.vector[1]),
            Unit::Vector => Some(self.vector[0]),
        }
    }
}

fn matrix_index(precision: Precision) -> usize {
    match precision {
        Precision::Fp64 => 0,
        Precision::Fp32 => 1,
        Precision::Fp16 => 2,
        Precision::Bf16 => 3,
        Precision::Fp8 => 4,
        Precision::Fp4 => 5,
    }
}

const ROCM_SPECS: &str = "AMD ROCm docs, GPU hardware specifications \
    (https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html)";

/// MI300X and MI325X compute alike (the MI325X has more and faster memory).
const MI300_MATRIX: [Option<f64>; 6] = [
    Some(163.4),
    Some(163.4),
    Some(1307.4),
    Some(1307.4),
    Some(2614.9),
    None,
];
const MI300_VECTOR: [f64; 2] = [163.4, 81.7];
/// H100 SXM and H200 compute alike (the H200 has more and faster memory).
const H100_MATRIX: [Option<f64>; 6] = [
    Some(66.9),
    Some(494.7),
    Some(989.4),
    Some(989.4),
    Some(1978.9),
    None,
];
const H100_VECTOR: [f64; 2] = [66.9, 33.5];
/// The A100's 40 GB and 80 GB parts compute alike.
const A100_MATRIX: [Option<f64>; 6] = [
    Some(19.5),
    Some(156.0),
    Some(312.0),
    Some(312.0),
    None,
    None,
];
const A100_VECTOR: [f64; 2] = [19.5, 9.7];

/// The table. Order matters where one name contains another (`MI300X` before `MI300`,
/// `H100 NVL` and `H100 PCIe` before `H100`).
pub const DEVICES: &[DevicePeaks] = &[
    DevicePeaks {
        name: "MI355X",
        patterns: &["mi355x"],
        hbm_tbps: 8.0,
        // 256 CUs × 2.4 GHz × 4096 / 8192 / 16384 FLOP/clk/CU for BF16 / FP8 / FP4.
        matrix: [
            Some(78.6),
            Some(157.3),
            Some(2516.6),
            Some(2516.6),
            Some(5033.2),
            Some(10066.3),
        ],
        vector: [157.3, 78.6],
        source: "AMD Instinct MI355X (https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html; \
                 10 PF MXFP4 and 8 TB/s per GPU in AMD's InferenceMAX article); matrix rates = 256 CUs × 2.4 GHz × \
                 per-CU rate, FP64 unverified",
    },
    DevicePeaks {
        name: "MI325X",
        patterns: &["mi325"],
        hbm_tbps: 6.0,
        matrix: MI300_MATRIX,
        vector: MI300_VECTOR,
        source: ROCM_SPECS,
    },
    DevicePeaks {
        name: "MI300X",
        patterns: &["mi300x", "mi300"],
        hbm_tbps: 5.3,
        matrix: MI300_MATRIX,
        vector: MI300_VECTOR,
        source: ROCM_SPECS,
    },
    DevicePeaks {
        name: "MI250X",
        patterns: &["mi250"],
        // Per die (GCD), which is one device to the profiler: half the module's 3.2 TB/s and
        // 383 TFLOP/s FP16.
        hbm_tbps: 1.6,
        matrix: [Some(47.9), Some(47.9), Some(191.5), Some(191.5), None, None],
        vector: [24.0, 24.0],
        source: "AMD Instinct MI250X (https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html), \
                 module figures halved per die; ROCm docs give 1.6 TB/s per die",
    },
    DevicePeaks {
        name: "MI210",
        patterns: &["mi210"],
        hbm_tbps: 1.6,
        matrix: [Some(45.3), Some(45.3), Some(181.0), Some(181.0), None, None],
        vector: [22.6, 22.6],
        source: "AMD Instinct MI210 (https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html)",
    },
    DevicePeaks {
        name: "B200",
        patterns: &["b200"],
        // HGX B200 (1000 W) per GPU; the datasheet's tensor rates are sparse, halved here.
        hbm_tbps: 7.7,
        matrix: [
            Some(37.0),
            Some(1100.0),
            Some(2250.0),
            Some(2250.0),
            Some(4500.0),
            Some(9000.0),
        ],
        vector: [75.0, 37.0],
        source: "NVIDIA HGX B200 (https://www.nvidia.com/en-us/data-center/hgx/), per GPU, sparse tensor rates halved",
    },
    DevicePeaks {
        name: "H200",
        patterns: &["h200"],
        hbm_tbps: 4.8,
        matrix: H100_MATRIX,
        vector: H100_VECTOR,
        source: "NVIDIA H200 SXM (https://www.nvidia.com/en-us/data-center/h200/), sparse tensor rates halved",
    },
    DevicePeaks {
        name: "H100 PCIe",
        patterns: &["h100 pcie"],
        hbm_tbps: 2.0,
        matrix: [
            Some(51.0),
            Some(378.0),
            Some(756.0),
            Some(756.0),
            Some(1513.0),
            None,
        ],
        vector: [51.0, 26.0],
        source: "NVIDIA H100 PCIe (https://www.nvidia.com/en-us/data-center/h100/), sparse tensor rates halved",
    },
    DevicePeaks {
        name: "H100 SXM",
        patterns: &["h100"],
        hbm_tbps: 3.35,
        matrix: H100_MATRIX,
        vector: H100_VECTOR,
        source: "NVIDIA H100 SXM5 (https://www.nvidia.com/en-us/data-center/h100/), sparse tensor rates halved",
    },
    DevicePeaks {
        name: "A100 40GB",
        patterns: &["a100-sxm4-40gb", "a100-pg509", "a100-pcie-40gb"],
        hbm_tbps: 1.555,
        matrix: A100_MATRIX,
        vector: A100_VECTOR,
        source: "NVIDIA A100 datasheet \
                 (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)",
    },
    DevicePeaks {
        name: "A100 80GB",
        patterns: &["a100"],
        hbm_tbps: 2.039,
        matrix: A100_MATRIX,
        vector: A100_VECTOR,
        source: "NVIDIA A100 datasheet \
                 (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), SXM4 80GB",
    },
];

/// The device a profiler's device name names, if the table has it.
pub fn device_for_name(device_name: &str) -> Option<&'static DevicePeaks> {
    let name = device_name.to_ascii_lowercase();
    DEVICES
        .iter()
        .find(|device| device.patterns.iter().any(|p| name.contains(p)))
}

/// The device a runtime that left the name empty or generic describes by its properties
/// (`deviceProperties`: compute capability or gfx version, multiprocessors or compute
/// units, memory); `None` where parts share them (MI210 and an MI250 die: 9.0 and 104 CUs,
/// 64 GB each; MI350X and MI355X; H100 NVL and a 94 GB H100).
pub fn device_for_properties(properties: &DeviceProperties) -> Option<&'static DevicePeaks> {
    let gib = properties.memory_bytes? as f64 / f64::from(1u32 << 30);
    let version = (properties.compute_major?, properties.compute_minor?);
    let name = match (version, properties.multiprocessors?) {
        // gfx942 with 304 CUs: MI300X has 192 GB, MI325X 256 GB.
        ((9, 4), 304) if gib < 224.0 => "MI300X",
        ((9, 4), 304) => "MI325X",
        // gfx90a with 110 CUs: one MI250X die.
        ((9, 0), 110) => "MI250X",
        ((8, 0), 108) if gib < 60.0 => "A100 40GB",
        ((8, 0), 108) => "A100 80GB",
        // sm_90 with 132 SMs: H100 SXM has 80 GB, H200 141 GB (a 94/96 GB H100 is neither).
        ((9, 0), 132) if gib < 85.0 => "H100 SXM",
        ((9, 0), 132) if (130.0..145.0).contains(&gib) => "H200",
        ((9, 0), 114) => "H100 PCIe",
        ((10, 0), 148) => "B200",
        _ => return None,
    };
    DEVICES.iter().find(|device| device.name == name)
}

/// The device `--device NAME` names: a table name (`MI300X`, `H100 SXM`, case and spaces
/// ignored) or any name the patterns match.
pub fn device_by_flag(flag: &str) -> Option<&'static DevicePeaks> {
    let squash = |s: &str| s.to_ascii_lowercase().replace([' ', '-', '_'], "");
    let wanted = squash(flag);
    DEVICES
        .iter()
        .find(|device| squash(device.name) == wanted)
        .or_else(|| device_for_name(flag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiler_names_find_their_device() {
        let found = |n: &str| device_for_name(n).map(|d| d.name);
        assert_eq!(found("AMD Instinct MI300X"), Some("MI300X"));
        assert_eq!(found("AMD Instinct MI300X VF"), Some("MI300X"));
        assert_eq!(found("AMD Instinct MI325X"), Some("MI325X"));
        assert_eq!(found("AMD Instinct MI210"), Some("MI210"));
        assert_eq!(found("AMD Instinct MI250X / MI250"), Some("MI250X"));
        assert_eq!(found("NVIDIA H100 80GB HBM3"), Some("H100 SXM"));
        assert_eq!(found("NVIDIA H100 PCIe"), Some("H100 PCIe"));
        assert_eq!(found("NVIDIA H200"), Some("H200"));
        assert_eq!(found("NVIDIA A100-SXM4-80GB"), Some("A100 80GB"));
        assert_eq!(found("NVIDIA A100-PG509-200"), Some("A100 40GB"));
        assert_eq!(found("NVIDIA B200"), Some("B200"));
        assert_eq!(found("AMD Radeon Graphics"), None);
        assert_eq!(found("Tesla V100-SXM2-32GB"), None);
    }

    #[test]
    fn properties_find_a_device_whose_name_is_empty() {
        let of = |major, minor, units, memory_bytes| {
            let properties = DeviceProperties {
                compute_major: Some(major),
                compute_minor: Some(minor),
                multiprocessors: Some(units),
                memory_bytes: Some(memory_bytes),
            };
            device_for_properties(&properties).map(|d| d.name)
        };
        // As TraceLens's vLLM MI300X traces write them (name "").
        assert_eq!(of(9, 4, 304, 206_141_652_992), Some("MI300X"));
        assert_eq!(of(9, 4, 304, 274_877_906_944), Some("MI325X"));
        assert_eq!(of(8, 0, 108, 84_990_623_744), Some("A100 80GB"));
        assert_eq!(of(9, 0, 132, 85_019_590_656), Some("H100 SXM"));
        assert_eq!(of(9, 0, 132, 150_754_820_096), Some("H200"));
        // HTA's MI250 trace ("AMD Radeon Graphics"): 104 CUs, as an MI210 has.
        assert_eq!(of(9, 0, 104, 68_702_699_520), None);
        // The kineto docs' "NVIDIA H100" with 95 GiB.
        assert_eq!(of(9, 0, 132, 102_085_492_736), None);
        assert_eq!(device_for_properties(&DeviceProperties::default()), None);
    }

    #[test]
    fn the_flag_takes_table_names() {
        assert_eq!(device_by_flag("mi300x").map(|d| d.name), Some("MI300X"));
        assert_eq!(device_by_flag("h100-sxm").map(|d| d.name), Some("H100 SXM"));
        assert_eq!(device_by_flag("nope"), None);
    }

    #[test]
    fn roofs_follow_the_spec() {
        let mi300x = device_by_flag("MI300X").unwrap();
        let spec = |unit, precision| ComputeSpec { unit, precision };
        assert_eq!(
            mi300x.compute_tflops(spec(Unit::Matrix, Some(Precision::Bf16))),
            Some(1307.4)
        );
        assert_eq!(
            mi300x.compute_tflops(spec(Unit::Matrix, Some(Precision::Fp4))),
            None
        );
        assert_eq!(
            mi300x.compute_tflops(spec(Unit::Vector, Some(Precision::Bf16))),
            Some(163.4)
        );
        assert_eq!(mi300x.compute_tflops(spec(Unit::Vector, None)), None);
    }
}
