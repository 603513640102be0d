//! The crate's error type.

use std::path::PathBuf;

/// Why a trace could not be read, tiled or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SynthError {
    /// Reading or writing a file or stream failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Reading a named file failed.
    #[error("cannot read {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The input is not valid JSON.
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON is not a Chrome-trace document (an object with `traceEvents`, or an array).
    #[error("not a Chrome trace: {0}")]
    NotATrace(String),
}
