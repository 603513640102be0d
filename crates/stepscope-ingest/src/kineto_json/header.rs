//! Top-level keys other than `traceEvents`: where the trace was recorded.

use serde_json::Value;
use stepscope_model::{DeviceProperties, TraceMetadata};

/// Header keys Kineto and its forks write that stepscope does not need.
const KNOWN_UNUSED_KEYS: [&str; 16] = [
    "roctracer_version",
    "hip_driver_version",
    "record_shapes",
    "with_stack",
    "with_flops",
    "with_modules",
    "profile_memory",
    "trace_id",
    "displayTimeUnit",
    "traceName",
    "nccl_version",
    "systemTraceEvents",
    "otherData",
    "stackFrames",
    "samples",
    "devices",
];

/// Applies one header key; returns `false` when the key is unknown.
pub(crate) fn apply_header_key(metadata: &mut TraceMetadata, key: &str, value: &Value) -> bool {
    match key {
        "schemaVersion" => metadata.schema_version = as_u64(value),
        "hip_runtime_version" => metadata.hip_runtime_version = as_u64(value),
        "cuda_runtime_version" => metadata.cuda_runtime_version = as_u64(value),
        "cuda_driver_version" => metadata.cuda_driver_version = as_u64(value),
        "baseTimeNanoseconds" => metadata.base_time_ns = as_u64(value),
        "deviceProperties" => {
            metadata.device_names = device_names(value);
            metadata.device_properties = device_properties(value);
        }
        "distributedInfo" => {
            metadata.rank = value
                .get("rank")
                .and_then(as_u64)
                .and_then(|v| u32::try_from(v).ok());
            metadata.world_size = value
                .get("world_size")
                .and_then(as_u64)
                .and_then(|v| u32::try_from(v).ok());
        }
        other => return KNOWN_UNUSED_KEYS.contains(&other),
    }
    true
}

fn as_u64(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn device_properties(value: &Value) -> Vec<DeviceProperties> {
    let Some(devices) = value.as_array() else {
        return Vec::new();
    };
    let small = |d: &Value, key: &str| {
        d.get(key)
            .and_then(as_u64)
            .and_then(|v| u32::try_from(v).ok())
    };
    devices
        .iter()
        .map(|d| DeviceProperties {
            compute_major: small(d, "computeMajor"),
            compute_minor: small(d, "computeMinor"),
            multiprocessors: small(d, "numSms"),
            memory_bytes: d.get("totalGlobalMem").and_then(as_u64),
        })
        .collect()
}

fn device_names(value: &Value) -> Vec<String> {
    let Some(devices) = value.as_array() else {
        return Vec::new();
    };
    devices
        .iter()
        .map(|d| {
            d.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}
