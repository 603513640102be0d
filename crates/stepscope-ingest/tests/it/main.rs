//! Integration tests of the trace readers: generated documents read back exactly and the
//! same at any thread count (property tests), truncated and corrupted input, compressed
//!
//! `cargo test -p stepscope-ingest --test it`; the fuzz targets live in `fuzz/`.

mod alloc;
mod bugs;
mod common;
mod compressed;
mod corruption;
mod generate;
mod truncation;
mod valid_docs;
