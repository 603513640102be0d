//! Synthetic and derived Kineto (PyTorch profiler) Chrome-trace documents.
//!
//! - [`demo`] (re-exported from `stepscope-demo`, the crate the binary depends on) writes the
//!   built-in example: an SGLang-style trace of an LLM server on ROCm, complete or with the
//!   ROCm replay-loss symptom, together with the facts it was built from.
//! - [`tile`] repeats a real trace N times in time (for the GB-scale parse benchmark).
//! - [`removal`] deletes a graph replay's kernels from a real trace, to make the symptom
//!   from real files inside tests (no public trace shows it).
//! - [`formats`] writes a real Kineto trace's calls and kernels as rocprofv3 CSV/JSON, RPD and
//!   rpd2tracing JSON (no public file of those formats holds graph replays); [`rocpd`]
//!   writes them as rocprofv3's SQLite database.
//!
//! Nothing here prints; the `tile-trace` binary (in the `stepscope-dev` crate) writes to the terminal.

#![warn(missing_docs)]

mod error;
pub mod formats;
mod io;
/// The built-in example, from `stepscope-demo`, for the tests that build on it.
pub use stepscope_demo::demo;
mod json_util;
pub mod removal;
pub mod rocpd;
pub mod tile;

pub use error::SynthError;
pub use io::{is_gzip, read_trace_bytes};
