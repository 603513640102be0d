//! Small helpers for reading Chrome-trace events held as `serde_json::Value`.

use serde_json::Value;

/// The event list of a document: `traceEvents` of an object, or the array itself.
pub(crate) fn events(doc: &Value) -> Option<&Vec<Value>> {
    match doc {
        Value::Array(events) => Some(events),
        Value::Object(map) => map.get("traceEvents").and_then(Value::as_array),
        _ => None,
    }
}

/// Mutable form of [`events`].
pub(crate) fn events_mut(doc: &mut Value) -> Option<&mut Vec<Value>> {
    match doc {
        Value::Array(events) => Some(events),
        Value::Object(map) => map.get_mut("traceEvents").and_then(Value::as_array_mut),
        _ => None,
    }
}

/// A non-negative integer held as a number or as a numeric string.
pub(crate) fn lenient_u64(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A number held as a number or as a numeric string.
pub(crate) fn lenient_f64(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The event's `args.correlation`, when it is an integer.
pub(crate) fn correlation(event: &Value) -> Option<u64> {
    event.get("args")?.get("correlation").and_then(lenient_u64)
}

/// The event's `cat`, or "" when absent.
pub(crate) fn category(event: &Value) -> &str {
    event.get("cat").and_then(Value::as_str).unwrap_or("")
}

/// True for GPU work: `kernel`, `gpu_memcpy` or `gpu_memset` (any case; legacy `Kernel`,
/// `Memcpy`, `Memset` too).
pub(crate) fn is_gpu_work(event: &Value) -> bool {
    let cat = category(event);
    ["kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"]
        .iter()
        .any(|c| cat.eq_ignore_ascii_case(c))
}

/// True for a host runtime call (`cuda_runtime`, legacy `Runtime`, `cuda_driver`).
pub(crate) fn is_runtime(event: &Value) -> bool {
    let cat = category(event);
    ["cuda_runtime", "runtime", "cuda_driver"]
        .iter()
        .any(|c| cat.eq_ignore_ascii_case(c))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lenient_numbers() {
        assert_eq!(lenient_u64(&json!(5)), Some(5));
        assert_eq!(lenient_u64(&json!("17")), Some(17));
        assert_eq!(lenient_u64(&json!(3.0)), Some(3));
        assert_eq!(lenient_u64(&json!(-3)), None);
        assert_eq!(lenient_f64(&json!("1.5")), Some(1.5));
        let k = json!({"cat": "Kernel", "args": {"correlation": "9"}});
        assert!(is_gpu_work(&k));
        assert_eq!(correlation(&k), Some(9));
        assert!(is_runtime(&json!({"cat": "Runtime"})));
        assert!(events(&json!([1, 2])).is_some());
        assert!(events(&json!({"traceEvents": []})).is_some());
        assert!(events(&json!(3)).is_none());
    }
}
