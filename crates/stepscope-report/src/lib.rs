//! Renderers for stepscope results: terminal tables, JSON, CSV, HTML, Chrome trace. All read the wire types of
//! [`schema`], built once from the analysis, so the outputs cannot disagree.
#![warn(missing_docs)]

pub mod csv;
pub mod html;
pub mod json;
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
}
