//! Trace readers for stepscope: one module per profiler format, all writing the
//! [`stepscope_model`] event model through a [`TraceBuilder`].
//!
//! Today: Kineto (PyTorch profiler) Chrome-trace JSON, plain, gzip or zstd.
//!
//! ```no_run
//! use stepscope_ingest::{read_trace_file, ReadOptions};
//!
//! let trace = read_trace_file("trace.json.gz".as_ref(), &ReadOptions::default())?;
//! println!("{} GPU events", trace.gpu.len());
//! # Ok::<(), stepscope_ingest::IngestError>(())
//! ```
#![warn(missing_docs)]

mod error;
pub mod kineto_json;
mod source;
mod validate;

pub use error::IngestError;
pub use kineto_json::KinetoJsonOptions;
pub use source::Compression;

use std::path::Path;
use stepscope_model::{Severity, Trace, TraceBuilder};

/// The formats stepscope reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceFormat {
    /// PyTorch profiler (Kineto) Chrome-trace JSON.
    KinetoJson,
}

impl TraceFormat {
    /// Every format, in sniffing order.
    pub const ALL: [TraceFormat; 1] = [TraceFormat::KinetoJson];

    /// Whether `head` (decompressed) looks like this format; `None` when unsure.
    pub fn sniff(self, head: &[u8]) -> Option<bool> {
        match self {
            TraceFormat::KinetoJson => kineto_json::sniff(head),
        }
    }

    /// The first format whose sniffer accepts `head`.
    pub fn detect(head: &[u8]) -> Option<TraceFormat> {
        Self::ALL
            .into_iter()
            .find(|format| format.sniff(head) != Some(false))
    }
}

/// How to read a trace file.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Kineto JSON reader settings.
    pub kineto: KinetoJsonOptions,
}

impl ReadOptions {
    /// Options with the given Kineto settings.
    pub fn with_kineto(mut self, kineto: KinetoJsonOptions) -> Self {
        self.kineto = kineto;
        self
    }
}

/// Reads one trace file, detecting compression and format from its content.
pub fn read_trace_file(path: &Path, options: &ReadOptions) -> Result<Trace, IngestError> {
    let io_error = |source| IngestError::Io {
        path: path.to_owned(),
        source,
    };
    let file = fs_err::File::open(path).map_err(io_error)?;
    let mapped = source::map_file(file.file()).map_err(io_error)?;
    let compression = Compression::detect(&mapped);
    let mut partial_inflate = None;
    let bytes = if compression == Compression::None {
        mapped
    } else {
        let (inflated, failure) = source::inflate(&mapped, compression);
        if let Some(failure) = failure {
            if !options.kineto.allow_truncated {
                return Err(IngestError::Decompress {
                    path: path.to_owned(),
                    compressed_offset: failure.compressed_offset,
                    decompressed_bytes: inflated.len() as u64,
                    source: failure.source,
                });
            }
            partial_inflate = Some(failure.compressed_offset);
        }
        source::Bytes::Owned(inflated)
    };
    if let Some(offset) = partial_inflate.filter(|_| is_blank(&bytes)) {
        // The stream broke before any JSON came out: a cut file, not an empty one.
        let mut trace = Trace::default();
        trace.stats.truncated_at_byte = Some(0);
        mark_inflate_partial(&mut trace, offset);
        return Ok(trace);
    }
    read_trace_bytes(&bytes, options)
        .map(|mut trace| {
            if let Some(offset) = partial_inflate {
                mark_inflate_partial(&mut trace, offset);
            }
            trace
        })
        .map_err(|failure| failure.with_path(path))
}

fn mark_inflate_partial(trace: &mut Trace, compressed_offset: u64) {
    trace
        .stats
        .truncated_at_byte
        .get_or_insert(compressed_offset);
    trace.stats.add(
        "compressed_input_truncated",
        Severity::Error,
        "The compressed stream broke off or was corrupt; only the events before the break were read",
        1,
    );
}

/// Reads a whole trace from decompressed bytes.
///
/// Whatever the format, the events read then go through the same checks: events whose time
/// lies orders of magnitude outside the span of the rest of the trace are refused (kept in
/// [`Trace::damaged`]) and exact copies of a GPU event are dropped (counted).
pub fn read_trace_bytes(bytes: &[u8], options: &ReadOptions) -> Result<Trace, IngestError> {
    if is_blank(bytes) {
        return Err(IngestError::Empty { path: None });
    }
    if let Some(recognised) = recognise_other(bytes) {
        return Err(IngestError::UnknownFormat {
            path: None,
            recognised: Some(recognised),
        });
    }
    match TraceFormat::detect(bytes) {
        Some(TraceFormat::KinetoJson) => {
            let mut builder = TraceBuilder::new();
            kineto_json::read(bytes, &options.kineto, &mut builder)
                .map_err(IngestError::from_read_failure)?;
            validate::validate(&mut builder);
            Ok(builder.finish())
        }
        None => Err(IngestError::UnknownFormat {
            path: None,
            recognised: recognise_other(bytes),
        }),
    }
}

/// Whether `bytes` hold nothing but JSON whitespace, after an optional byte-order mark.
fn is_blank(bytes: &[u8]) -> bool {
    bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(bytes)
        .iter()
        .all(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
}

/// Names profiler formats that stepscope recognises but does not read yet (DESIGN.md §5),
/// so the error can say what the file is.
fn recognise_other(head: &[u8]) -> Option<&'static str> {
    let head = &head[..head.len().min(4096)];
    let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
    if head.starts_with(b"SQLite format 3\0") {
        Some("an SQLite database: rocpd, RPD or an Nsight Systems export")
    } else if has(b"\"rocprofiler-sdk-tool\"") {
        Some("rocprofv3 JSON")
    } else if !head.trim_ascii_start().starts_with(b"{")
        && !head.trim_ascii_start().starts_with(b"[")
        && (head.starts_with(b"\"Kind\",\"Agent_Id\"") || has(b"\"Correlation_Id\""))
    {
        Some("rocprofv3 CSV")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_profiler_formats_are_named_in_the_error() {
        let cases: [(&[u8], Option<&str>); 4] = [
            (
                b"SQLite format 3\0rest",
                Some("an SQLite database: rocpd, RPD or an Nsight Systems export"),
            ),
            (
                br#"{"rocprofiler-sdk-tool":[{"metadata":{}}]}"#,
                Some("rocprofv3 JSON"),
            ),
            (
                b"\"Kind\",\"Agent_Id\",\"Queue_Id\"\n",
                Some("rocprofv3 CSV"),
            ),
            (b"plain text", None),
        ];
        for (bytes, expected) in cases {
            match read_trace_bytes(bytes, &ReadOptions::default()) {
                Err(IngestError::UnknownFormat { recognised, .. }) => {
                    assert_eq!(recognised, expected)
                }
                Err(IngestError::Json { .. }) if expected.is_none() => {}
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bytes)),
            }
        }
    }
}
