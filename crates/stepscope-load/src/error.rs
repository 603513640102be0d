//! Errors of the load generator. A failed request is not an error of the run: it is counted
//! in the report ([`crate::FailureKind`]); these stop a run before it starts.

use std::path::PathBuf;

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// An option is out of range.
    #[error("Option `{option}` {problem}")]
    InvalidOption {
        /// The field of [`crate::BenchOptions`].
        option: &'static str,
        /// What is wrong, e.g. "must be at least 1".
        problem: String,
    },
    /// The base URL does not parse or is not `http://`.
    #[error(
        "URL `{url}` {problem}\nhint: give the server's base URL, e.g. `http://127.0.0.1:8000`"
    )]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong.
        problem: String,
    },
    /// A tokenizer file could not be read.
    #[error("Failed to read tokenizer `{}`", path.display())]
    TokenizerRead {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A tokenizer file is not a usable `tokenizer.json`.
    #[error("Tokenizer `{}` {problem}", path.display())]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The URL's host does not resolve.
    #[error("Failed to resolve host `{host}`")]
    Resolve {
        /// The host.
        host: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}
