//! Renderers for stepscope results: terminal tables, JSON, CSV, HTML, Chrome trace, Parquet. All read the wire types of
//! [`schema`], built once from the analysis, so the outputs cannot disagree.
//!
//! ```
//! use stepscope_analysis::{AnalysisOptions, KernelCategories, analyze};
//! use stepscope_model::TraceBuilder;
//! use stepscope_report::schema::{Document, FileReport, SCHEMA_VERSION, Tool, overall_verdict};
//! use stepscope_report::terminal::{TerminalOptions, render};
//!
//! let trace = TraceBuilder::new().finish();
//! let table = KernelCategories::embedded();
//! let analysis = analyze(&trace, &AnalysisOptions::new(&table));
//! let file = FileReport::new("empty.json", &trace, &analysis, 10);
//! let document = Document {
//!     schema_version: SCHEMA_VERSION,
//!     tool: Tool::current(),
//!     verdict: overall_verdict(&[analysis.coverage.verdict], 0, 0),
//!     partial: false,
//!     failed_files: Vec::new(),
//!     warnings: Vec::new(),
//!     files: vec![file],
//!     combined: None,
//! };
//! let json = stepscope_report::json::render(&document);
//! assert!(json.contains(r#""verdict": "no-events""#));
//! assert!(render(&document, &TerminalOptions::default()).contains("empty.json"));
//! ```
#![warn(missing_docs)]

pub mod atomic;
pub mod csv;
pub mod grade_page;
pub mod html;
pub mod json;
pub mod kernel_id;
pub mod parquet;
pub mod perfetto;
pub mod schema;
pub mod tables;
pub mod terminal;

use std::path::PathBuf;

const RUN_EXISTS_HINT: &str = "pass another run id (`--run-id`; in Python `run_id=`), or none (a new id is made), or write to another folder";
const INVALID_RUN_ID_HINT: &str =
    "e.g. 2025-05-14-node3 (`--run-id`; in Python `run_id=`), or none (a new id is made)";

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
        "Run `{run_id}` is already in the Parquet dataset: `{}` exists\nhint: {RUN_EXISTS_HINT}",
        path.display()
    )]
    RunExists {
        /// The run id.
        run_id: String,
        /// A file of that run.
        path: PathBuf,
    },
    /// A run id that cannot be a file name in every engine.
    #[error("`{run_id}` is not a valid run id: {reason}\nhint: {INVALID_RUN_ID_HINT}")]
    InvalidRunId {
        /// The id given.
        run_id: String,
        /// What is wrong.
        reason: &'static str,
    },
}

impl stepscope_model::Hint for ReportError {
    fn hint(&self) -> Option<String> {
        match self {
            ReportError::RunExists { .. } => Some(RUN_EXISTS_HINT.to_owned()),
            ReportError::InvalidRunId { .. } => Some(INVALID_RUN_ID_HINT.to_owned()),
            _ => None,
        }
    }
}
