//! Renderers for stepscope results: terminal tables, JSON, CSV, HTML, Chrome trace, Parquet. All read the wire types of
//! [`schema`], built once from the analysis, so the outputs cannot disagree.
#![warn(missing_docs)]

pub mod atomic;
pub mod csv;
pub mod html;
pub mod json;
pub mod kernel_id;
pub mod parquet;
pub mod perfetto;
pub mod schema;
pub mod terminal;

use std::path::PathBuf;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A file or folder could not be written.
    #[error("Failed to write `{}`", path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A Parquet table could not be written.
    #[error("Failed to write the Parquet table `{}`", path.display())]
    Parquet {
        /// The table's file.
        path: PathBuf,
        /// Why.
        #[source]
        source: ::parquet::errors::ParquetError,
    },
    /// A run of this id is already in the dataset.
    #[error(
        "Run `{run_id}` is already in the Parquet dataset: `{}` exists\nhint: pass another --run-id, or none (a new id is made), or write to another folder",
        path.display()
    )]
    RunExists {
        /// The run id.
        run_id: String,
        /// A file of that run.
        path: PathBuf,
    },
    /// A run id that cannot be a file name in every engine.
    #[error(
        "`{run_id}` is not a valid run id: {reason}\nhint: e.g. --run-id 2025-05-14-node3, or leave --run-id out (a new id is made)"
    )]
    InvalidRunId {
        /// The id given.
        run_id: String,
        /// What is wrong.
        reason: &'static str,
    },
}
