//! Reading trace files, plain or gzip-compressed.

use std::io::Read;
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::SynthError;

/// True when `bytes` start with the gzip magic number (`1f 8b`).
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Reads a trace file into memory, decompressing it when it is gzip (detected by magic bytes,
/// not by the file name).
///
/// # Errors
/// [`SynthError::ReadFile`] when the file cannot be read or the gzip stream is corrupt.
pub fn read_trace_bytes(path: &Path) -> Result<Vec<u8>, SynthError> {
    let wrap = |source| SynthError::ReadFile {
        path: path.to_path_buf(),
        source,
    };
    let raw = std::fs::read(path).map_err(wrap)?;
    if !is_gzip(&raw) {
        return Ok(raw);
    }
    let mut out = Vec::with_capacity(raw.len().saturating_mul(8));
    MultiGzDecoder::new(raw.as_slice())
        .read_to_end(&mut out)
        .map_err(wrap)?;
    Ok(out)
}
