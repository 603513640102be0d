//! Errors of the readers.

use crate::kineto_json::ReadFailure;
use std::path::{Path, PathBuf};
use stepscope_model::Hint;

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The file could not be opened or read.
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file was cut or rewritten while it was read (a profiler still writing it, a
    /// script rotating it): what was read is not the file as it is now, or as it was.
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// The compressed stream is truncated or corrupt.
    Decompress {
        /// The file.
        path: PathBuf,
        /// Compressed bytes consumed when it broke.
        compressed_offset: u64,
        /// Bytes that came out before the break.
        decompressed_bytes: u64,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },
    /// The JSON is malformed or ends early.
    Json {
        /// The file, when reading from one.
        path: Option<PathBuf>,
        /// Byte offset in the decompressed JSON.
        offset: u64,
        /// What is wrong there.
        message: String,
        /// Whether the text simply ended early.
        truncated: bool,
    },
    /// The input holds nothing but whitespace: there is no trace to read, not even a cut one.
    Empty {
        /// The file, when reading from one.
        path: Option<PathBuf>,
    },
    /// Complete, well-formed JSON that is not a PyTorch profiler trace (e.g. `{}`).
    NotATrace {
        /// The file, when reading from one.
        path: Option<PathBuf>,
        /// What is missing or wrong, as a clause.
        reason: String,
    },
    /// A CSV table that cannot be read: its header names no table, or lacks a column.
    Csv {
        /// The file (or `input`).
        path: String,
        /// 1-based line.
        line: u64,
        /// What is wrong.
        message: String,
        /// How to fix it.
        hint: &'static str,
    },
    /// An SQLite database that cannot be read: cut short, corrupt, or without a table its
    /// format needs.
    Sqlite {
        /// The file (or `input`).
        path: String,
        /// Where: the table and row, or what was being done.
        place: String,
        /// What SQLite said.
        message: String,
        /// How to fix it.
        hint: &'static str,
    },
    /// The content matches no known format.
    UnknownFormat {
        /// The file, when reading from one.
        path: Option<PathBuf>,
        /// What the content looks like, when it is a known profiler format not yet read.
        recognised: Option<&'static str>,
    },
}

/// Every format stepscope reads, for hints.
const READS: &str = "stepscope reads PyTorch profiler (Kineto) Chrome-trace JSON (`.json`, `.json.gz`, `.json.zst`), rocprofv3's SQLite database (`<pid>_results.db`), CSV tables (`*kernel_trace.csv` with the run's `*hip_api_trace.csv` beside it) and JSON (`<pid>_results.json`), rocmProfileData databases (`.rpd`) and their rpd2tracing JSON, and Nsight Systems SQLite exports (`nsys export --type sqlite`)";

/// `` `path` `` or, without a file, `input`.
fn file_label(path: Option<&Path>) -> String {
    path.map_or_else(|| "input".to_owned(), |p| format!("`{}`", p.display()))
}

fn json_hint(offset: u64, truncated: bool) -> String {
    if offset <= 1 && !truncated {
        // Broken at its first byte: nothing before the break, so no trace to salvage.
        format!("the file does not begin as a trace; is it one? {READS}")
    } else if truncated {
        "the file is truncated (was the profiler stopped while writing?); reading with allow-truncated (`--allow-truncated`; in Python `allow_truncated=True`) analyses the events before the break".to_owned()
    } else {
        "the file is corrupt at that point; reading with allow-truncated (`--allow-truncated`; in Python `allow_truncated=True`) analyses the events before it".to_owned()
    }
}

impl Hint for IngestError {
    fn message(&self) -> String {
        match self {
            IngestError::Io { path, .. } => format!("Failed to read `{}`", path.display()),
            IngestError::Changed { path } => format!(
                "`{}` changed while it was read (it was cut short or rewritten)",
                path.display()
            ),
            IngestError::Decompress {
                path,
                compressed_offset,
                decompressed_bytes,
                ..
            } => format!(
                "Failed to decompress `{}`: the compressed stream breaks near byte {compressed_offset} (after {decompressed_bytes} bytes of JSON)",
                path.display()
            ),
            IngestError::Json {
                path,
                offset,
                message,
                ..
            } => format!(
                "{} is not valid trace JSON at byte {offset}: {message}",
                file_label(path.as_deref())
            ),
            IngestError::Empty { path } => format!("{} is empty", file_label(path.as_deref())),
            IngestError::NotATrace { path, reason } => format!(
                "{} is not a PyTorch profiler trace: {reason}",
                file_label(path.as_deref())
            ),
            IngestError::Csv {
                path,
                line,
                message,
                ..
            } => format!("`{path}` line {line}: {message}"),
            IngestError::Sqlite {
                path,
                place,
                message,
                ..
            } => format!("`{path}` ({place}): {message}"),
            IngestError::UnknownFormat { path, recognised } => format!(
                "`{}` is not a format stepscope reads{}",
                path.as_deref()
                    .map_or_else(|| "input".into(), |p| p.display().to_string()),
                recognised
                    .map(|what| format!(" yet (it looks like {what})"))
                    .unwrap_or_default()
            ),
        }
    }

    fn hint(&self) -> Option<String> {
        let hint = match self {
            IngestError::Io { .. } => return None,
            IngestError::Changed { .. } => "read it again once whatever writes it has finished; copy it aside first if it is still being written".to_owned(),
            IngestError::Decompress { .. } => "the file is truncated or corrupt; reading with allow-truncated (`--allow-truncated`; in Python `allow_truncated=True`) analyses the events before the break".to_owned(),
            IngestError::Json {
                offset, truncated, ..
            } => json_hint(*offset, *truncated),
            IngestError::Empty { .. } => "the profiler wrote nothing; was the profiling window closed before the trace was written?".to_owned(),
            IngestError::NotATrace { .. } => "a Kineto trace is a JSON object with a `traceEvents` array of events (`{\"traceEvents\": [{\"ph\": \"X\", ...}]}`), or a bare array of events".to_owned(),
            IngestError::Csv { hint, .. } | IngestError::Sqlite { hint, .. } => (*hint).to_owned(),
            IngestError::UnknownFormat { .. } => READS.to_owned(),
        };
        Some(hint)
    }
}

/// The message, then the hint on a line of its own, as the command line prints them.
impl std::fmt::Display for IngestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())?;
        match self.hint() {
            Some(hint) => write!(f, "\nhint: {hint}"),
            None => Ok(()),
        }
    }
}

impl IngestError {
    pub(crate) fn from_read_failure(failure: ReadFailure) -> Self {
        match failure {
            ReadFailure::Parse(failure) => IngestError::Json {
                path: None,
                offset: failure.offset,
                message: failure.message,
                truncated: failure.at_end_of_input,
            },
            ReadFailure::Empty => IngestError::Empty { path: None },
            ReadFailure::NotATrace { reason } => IngestError::NotATrace { path: None, reason },
        }
    }

    pub(crate) fn with_path(self, file: &Path) -> Self {
        match self {
            IngestError::Json {
                offset,
                message,
                truncated,
                ..
            } => IngestError::Json {
                path: Some(file.to_owned()),
                offset,
                message,
                truncated,
            },
            IngestError::UnknownFormat { recognised, .. } => IngestError::UnknownFormat {
                path: Some(file.to_owned()),
                recognised,
            },
            IngestError::Empty { .. } => IngestError::Empty {
                path: Some(file.to_owned()),
            },
            IngestError::NotATrace { reason, .. } => IngestError::NotATrace {
                path: Some(file.to_owned()),
                reason,
            },
            other => other,
        }
    }
}
