//! Real traces of the trace corpus loaded as JSON values, edited in a test, and read
//! back: how the tests make damage that no public trace has.

use crate::common::read;
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use stepscope_model::Trace;

/// A real ROCm SGLang decode trace: 555 kernels, 29 runtime calls, 3 memcpys, 2 annotations.
pub const SGLANG_DECODE: &str =
    "tracelens/tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz";

/// A real trace as a JSON document, to edit.
#[derive(Debug, Clone)]
pub struct RealTrace(pub Value);

impl RealTrace {
    /// Loads a `.json` or `.json.gz` file.
    pub fn load(path: &Path) -> Self {
        let bytes = std::fs::read(path).expect("read a shared trace");
        let text = if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut text = Vec::new();
            flate2::read::MultiGzDecoder::new(&bytes[..])
                .read_to_end(&mut text)
                .expect("gunzip a shared trace");
            text
        } else {
            bytes
        };
        RealTrace(serde_json::from_slice(&text).expect("a shared trace is JSON"))
    }

    /// Its events.
    pub fn events_mut(&mut self) -> &mut Vec<Value> {
        self.0["traceEvents"]
            .as_array_mut()
            .expect("a `traceEvents` array")
    }

    /// The first complete event of `category`.
    pub fn first_mut(&mut self, category: &str) -> &mut Value {
        self.events_mut()
            .iter_mut()
            .find(|e| e["cat"] == category && e["ph"] == "X")
            .unwrap_or_else(|| panic!("no `{category}` event"))
    }

    /// The document as JSON text.
    pub fn render(&self) -> Vec<u8> {
        serde_json::to_vec(&self.0).expect("serialize")
    }

    /// The document read by `read_trace_bytes`, strictly, at one thread.
    pub fn read(&self) -> Trace {
        read(&self.render(), 1, false).expect("an edited real trace reads")
    }
}
