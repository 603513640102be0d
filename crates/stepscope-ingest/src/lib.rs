//! Trace readers for stepscope: one module per profiler format, all writing the
//! [`stepscope_model`] event model through a [`TraceBuilder`](stepscope_model::TraceBuilder).
//!
//! Formats ([`TraceFormat`], one module each, detected from the content): Kineto (PyTorch
//! profiler) Chrome-trace JSON, rocprofv3 CSV tables, JSON and SQLite database (rocpd),
//! rocmProfileData SQLite and its
//! Chrome-trace export, and Nsight Systems SQLite exports; plain, gzip or zstd.
//!
//! ```no_run
//! use stepscope_ingest::{read_trace_file, ReadOptions};
//!
//! let trace = read_trace_file("trace.json.gz".as_ref(), &ReadOptions::default())?;
//! println!("{} GPU events", trace.gpu.len());
//!
//! // A file cut short: the events before the break, the trace marked partial.
//! let options = ReadOptions::default().with_allow_truncated(true).with_threads(2);
//! let partial = read_trace_file("cut.json.gz".as_ref(), &options)?;
//! if let Some(byte) = partial.stats.truncated_at_byte {
//!     println!("read up to byte {byte}");
//! }
//! # Ok::<(), stepscope_ingest::IngestError>(())
//! ```
//!
//! The crate in parts:
//!
//! - the format modules, one per format ([`kineto_json`], [`rocprof_csv`], [`rocprof_json`],
//!   `rocpd_sqlite`, `rpd_sqlite`, [`rpd_json`], [`nsys_sqlite`]; [`sqlite`] holds what
//!   the SQLite readers share);
//! - `registry`: the [`TraceFormat`] enum, sniffing a format from the content, and the
//!   reader behind each format;
//! - `pipeline`: getting a file's bytes (mapped when plain, inflated in pieces on a thread of
//!   its own when gzip or zstd) and reading them: [`read_trace_file`], [`read_trace_bytes`],
//!   [`read_kineto_stream`];
//! - `options`: [`ReadOptions`], the settings of a read;
//! - `common`: helpers the readers share; `validate`: the checks every trace read goes
//!   through; `source`, `gzip`, `priority`: decompression and its threads;
//! - `probes`, with the `bench-probes` feature only (stepscope-dev turns it on): parts of a
//!   read the benchmarks time on their own (`inflate_only`).
#![warn(missing_docs)]

mod common;
mod error;
mod gzip;
pub mod kineto_json;
mod mapped;
pub mod nsys_sqlite;
mod options;
mod pipeline;
mod priority;
#[cfg(feature = "bench-probes")]
mod probes;
mod registry;
mod rocpd_sqlite;
pub mod rocprof_csv;
pub mod rocprof_json;
pub mod rpd_json;
mod rpd_ops;
mod rpd_sqlite;
mod source;
pub mod sqlite;
mod validate;

pub use error::IngestError;
pub use kineto_json::KinetoJsonOptions;
pub use options::ReadOptions;
pub use pipeline::{read_kineto_stream, read_trace_bytes, read_trace_file};
#[cfg(feature = "bench-probes")]
pub use probes::inflate_only;
pub use registry::{Input, TraceFormat};
pub(crate) use source::Compression;
